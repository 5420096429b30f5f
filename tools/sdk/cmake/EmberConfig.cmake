# Ember's CMake package (from an SDK bundle, tools/sdk). With the bundle's root on CMAKE_PREFIX_PATH:
#
#   find_package(Ember 0.3 REQUIRED)
#   add_executable(app main.cc)
#   ember_register_kernels(app MANIFEST ${CMAKE_CURRENT_SOURCE_DIR}/selected_operators.yaml)
#   target_link_libraries(app PRIVATE Ember::runtime Ember::platform_posix)
#
# Imported targets: Ember::runtime (executor, loaders, core; <ember/version.h>), one Ember::kernels_<library> per
# kernel library, Ember::kernels (all of them, in registration priority), a PAL (Ember::platform_posix on
# Linux/Android/iOS, Ember::board_support on bare metal), and whatever else the bundle lists in EmberTargets.cmake.
# target_link_options needs 3.13. (No cmake_minimum_required here: it would reset the caller's policies.)
if(CMAKE_VERSION VERSION_LESS 3.13)
  message(FATAL_ERROR "Ember's CMake package needs CMake 3.13 or newer; this is ${CMAKE_VERSION}")
endif()

get_filename_component(_EMBER_PREFIX "${CMAKE_CURRENT_LIST_DIR}/../../.." ABSOLUTE)
include("${CMAKE_CURRENT_LIST_DIR}/EmberTargets.cmake")
include("${CMAKE_CURRENT_LIST_DIR}/EmberKernelChain.cmake")

if(NOT TARGET Ember::kernels)
  add_library(Ember::kernels INTERFACE IMPORTED)
  set(_ember_kernel_targets "")
  foreach(_component IN LISTS EMBER_KERNEL_COMPONENTS)
    list(APPEND _ember_kernel_targets "Ember::${_component}")
  endforeach()
  set_target_properties(Ember::kernels PROPERTIES INTERFACE_LINK_LIBRARIES "${_ember_kernel_targets}")
endif()

set(EMBER_PREFIX "${_EMBER_PREFIX}")
set(EMBER_REGISTER_KERNELS_SCRIPT "${_EMBER_PREFIX}/share/ember/register_kernels.py")

# ember_register_kernels(<target> [MANIFEST <selected_operators.yaml> | PROGRAM <model.pte>...]
#                        [SKIP <kernel component>...])
#
# PROGRAM: the selection is read from the programs at build time (python -m selective_build.select, which needs
# Ember's Python package, the wheel, in EMBER_PYTHON); MANIFEST: a selection written beforehand.
#
# Generates the kernel registration table for the operators and dtypes the selection names (codegen, run at build
# time by EMBER_PYTHON: a python3 with PyYAML and torch, whose torchgen parses the kernels' operator schemas; by
# default the Python3 interpreter CMake finds), compiles it into <target> and links the kernel libraries and the runtime. Without
# MANIFEST, every operator the bundle has is registered. The kernels are prebuilt for every dtype; only the
# operators the table names are linked (-Wl,--gc-sections, or -dead_strip on Apple's ld, added here, drops the
# rest).
# SKIP kernels_optimized registers the portable kernels where the optimized ones would come first.
function(ember_register_kernels target)
  cmake_parse_arguments(PARSE_ARGV 1 ARG "" "MANIFEST" "SKIP;PROGRAM")
  if(ARG_UNPARSED_ARGUMENTS)
    message(FATAL_ERROR "ember_register_kernels(${target}): unknown arguments ${ARG_UNPARSED_ARGUMENTS}")
  endif()
  if(ARG_MANIFEST AND ARG_PROGRAM)
    message(FATAL_ERROR "ember_register_kernels(${target}): MANIFEST or PROGRAM, not both")
  endif()
  if(NOT EMBER_PYTHON)
    find_package(Python3 REQUIRED COMPONENTS Interpreter)
    set(EMBER_PYTHON "${Python3_EXECUTABLE}")
  endif()
  set(_dir "${CMAKE_CURRENT_BINARY_DIR}/ember_${target}")
  set(_out "${_dir}/kernel_registry.cc")
  set(_args --output "${_out}")
  set(_depends "${EMBER_REGISTER_KERNELS_SCRIPT}")
  if(ARG_PROGRAM)
    set(_programs "")
    foreach(_program IN LISTS ARG_PROGRAM)
      get_filename_component(_program "${_program}" ABSOLUTE)
      list(APPEND _programs "${_program}")
    endforeach()
    set(ARG_MANIFEST "${_dir}/selected_operators.yaml")
    add_custom_command(
      OUTPUT "${ARG_MANIFEST}"
      COMMAND "${CMAKE_COMMAND}" -E make_directory "${_dir}"
      COMMAND "${EMBER_PYTHON}" -m selective_build.select ${_programs} -o "${ARG_MANIFEST}"
      DEPENDS ${_programs}
      COMMENT "Ember: the operators ${target}'s programs use"
      VERBATIM)
  endif()
  if(ARG_MANIFEST)
    get_filename_component(_manifest "${ARG_MANIFEST}" ABSOLUTE)
    list(APPEND _args --selection "${_manifest}")
    list(APPEND _depends "${_manifest}")
  endif()
  set(_links "")
  foreach(_component IN LISTS EMBER_KERNEL_COMPONENTS)
    list(FIND ARG_SKIP "${_component}" _skipped)
    if(_skipped GREATER -1)
      list(APPEND _args --skip "${_component}")
    else()
      list(APPEND _links "Ember::${_component}")
    endif()
  endforeach()
  add_custom_command(
    OUTPUT "${_out}"
    COMMAND "${EMBER_PYTHON}" "${EMBER_REGISTER_KERNELS_SCRIPT}" ${_args}
    DEPENDS ${_depends}
    COMMENT "Ember: kernel registration for ${target}"
    VERBATIM)
  target_sources(${target} PRIVATE "${_out}")
  target_link_libraries(${target} PRIVATE ${_links} Ember::runtime)
  if(APPLE)
    target_link_options(${target} PRIVATE "LINKER:-dead_strip")
  else()
    target_link_options(${target} PRIVATE "LINKER:--gc-sections")
  endif()
endfunction()

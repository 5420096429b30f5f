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
cmake_minimum_required(VERSION 3.13)

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

# ember_register_kernels(<target> MANIFEST <selected_operators.yaml> [SKIP <kernel component>...])
#
# Generates the kernel registration table for the operators and dtypes the selection names (codegen, run at build
# time by EMBER_PYTHON: a python3 with PyYAML and torch, whose torchgen parses the kernels' operator schemas; by
# default the Python3 interpreter CMake finds), compiles it into <target> and links the kernel libraries and the runtime. Without
# MANIFEST, every operator the bundle has is registered. The kernels are prebuilt for every dtype; only the
# operators the table names are linked (-Wl,--gc-sections, or -dead_strip on Apple's ld, added here, drops the
# rest).
# SKIP kernels_optimized registers the portable kernels where the optimized ones would come first.
function(ember_register_kernels target)
  cmake_parse_arguments(PARSE_ARGV 1 ARG "" "MANIFEST" "SKIP")
  if(ARG_UNPARSED_ARGUMENTS)
    message(FATAL_ERROR "ember_register_kernels(${target}): unknown arguments ${ARG_UNPARSED_ARGUMENTS}")
  endif()
  if(NOT EMBER_PYTHON)
    find_package(Python3 REQUIRED COMPONENTS Interpreter)
    set(EMBER_PYTHON "${Python3_EXECUTABLE}")
  endif()
  set(_out "${CMAKE_CURRENT_BINARY_DIR}/ember_${target}/kernel_registry.cc")
  set(_args --output "${_out}")
  set(_depends "${EMBER_REGISTER_KERNELS_SCRIPT}")
  if(ARG_MANIFEST)
    get_filename_component(_manifest "${ARG_MANIFEST}" ABSOLUTE)
    list(APPEND _args --selection "${_manifest}")
    list(APPEND _depends "${_manifest}")
  endif()
  set(_links "")
  foreach(_component IN LISTS EMBER_KERNEL_COMPONENTS)
    if(_component IN_LIST ARG_SKIP)
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

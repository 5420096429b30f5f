# Debian's mingw-w64 (posix thread model), for the windows_x86_64 SDK bundle:
#   cmake -S . -B build -DCMAKE_TOOLCHAIN_FILE=toolchains/x86_64-w64-mingw32.cmake -DCMAKE_PREFIX_PATH=<bundle>
# The .exe links libgcc, libstdc++ and winpthreads statically, as the bundle's own runner does (docs/windows.md),
# and runs on Windows, or here under wine64 (platforms/windows/run_under_wine.sh).
set(CMAKE_SYSTEM_NAME Windows)
set(CMAKE_SYSTEM_PROCESSOR x86_64)
set(CMAKE_C_COMPILER x86_64-w64-mingw32-gcc-posix)
set(CMAKE_CXX_COMPILER x86_64-w64-mingw32-g++-posix)
set(CMAKE_EXE_LINKER_FLAGS_INIT "-static")
# C99 printf formats (%zu), as the bundle's libraries were built.
add_compile_definitions(__USE_MINGW_ANSI_STDIO=1)
set(CMAKE_FIND_ROOT_PATH /usr/x86_64-w64-mingw32)
set(CMAKE_FIND_ROOT_PATH_MODE_PROGRAM NEVER)
set(CMAKE_FIND_ROOT_PATH_MODE_LIBRARY ONLY)
set(CMAKE_FIND_ROOT_PATH_MODE_INCLUDE ONLY)
set(CMAKE_FIND_ROOT_PATH_MODE_PACKAGE BOTH)

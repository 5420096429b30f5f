/* Stand-in for the NDK's <android/api-level.h>, which flatbuffers' base.h includes on Android. Only used where
 * no NDK is installed (platforms/toolchains/BUILD.bazel); with the NDK, its own header is found instead. */
#pragma once
#ifndef __ANDROID_API__
#define __ANDROID_API__ 24
#endif

// Error codes: named, stable numbers (ExecuTorch's, so logs and tools mean the same on both runtimes), grouped
// with gaps so a group can grow without renumbering.
//
// The type is [[nodiscard]]: every function returning an Error must have its result checked (or propagated with
// EMBER_TRY); dropping one is a compile error under -Werror. An ignored Error on a microcontroller is a silent
// wrong answer, so there is no opt-out short of an explicit (void) cast at the call site.
#pragma once

#include <stdint.h>

namespace ember {

enum class [[nodiscard]] Error : uint32_t {
  // System
  Ok = 0x00,
  Internal = 0x01,
  InvalidState = 0x02,
  EndOfMethod = 0x03,
  AlreadyLoaded = 0x04,
  // Logical
  NotSupported = 0x10,
  NotImplemented = 0x11,
  InvalidArgument = 0x12,
  InvalidType = 0x13,
  OperatorMissing = 0x14,
  RegistrationExceedingMaxKernels = 0x15,
  RegistrationAlreadyRegistered = 0x16,
  // Resource
  NotFound = 0x20,
  MemoryAllocationFailed = 0x21,
  AccessFailed = 0x22,
  InvalidProgram = 0x23,
  InvalidExternalData = 0x24,
  OutOfResources = 0x25,
  // Delegate
  DelegateInvalidCompatibility = 0x30,
  DelegateMemoryAllocationFailed = 0x31,
  DelegateInvalidHandle = 0x32,
};

// "MemoryAllocationFailed" for Error::MemoryAllocationFailed; "UnknownError" for a number outside the enum.
const char* error_name(Error error);

}  // namespace ember

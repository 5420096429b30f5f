// Byte copies and fills for the short rows the convolutions gather and place (a 5-byte row of a 25x5 plane is
// common): a tail-predicated low-overhead loop, 16 bytes per pass and the remainder under the loop's own
// predicate, so a row of up to 16 bytes costs four instructions. In assembly: gcc 12 neither emits DLSTP/LETP
// nor keeps a predicate without moving it through a core register twice per store.
#pragma once

#include <arm_mve.h>
#include <stdint.h>

namespace ember {
namespace helium {

inline void copy_bytes(int8_t* dst, const int8_t* src, int32_t n) {
  if (n <= 0) return;
  __asm__ volatile(
      "   dlstp.8 lr, %[n]\n"
      "1: vldrb.8 q0, [%[src]], #16\n"
      "   vstrb.8 q0, [%[dst]], #16\n"
      "   letp lr, 1b\n"
      : [dst] "+r"(dst), [src] "+r"(src)
      : [n] "r"(n)
      : "q0", "lr", "memory");
}

inline void fill_bytes(int8_t* dst, int8_t value, int32_t n) {
  if (n <= 0) return;
  const int8x16_t v = vdupq_n_s8(value);
  __asm__ volatile(
      "   dlstp.8 lr, %[n]\n"
      "1: vstrb.8 %q[v], [%[dst]], #16\n"
      "   letp lr, 1b\n"
      : [dst] "+r"(dst)
      : [n] "r"(n), [v] "w"(v)
      : "lr", "memory");
}

}  // namespace helium
}  // namespace ember

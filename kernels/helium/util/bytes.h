// Byte copies and fills in 16-byte predicated vectors, for the short rows the convolutions gather.
#pragma once

#include <arm_mve.h>
#include <stdint.h>

namespace ember {
namespace helium {

inline void copy_bytes(int8_t* dst, const int8_t* src, int32_t n) {
  for (; n > 0; n -= 16, dst += 16, src += 16) {
    const mve_pred16_t p = vctp8q(static_cast<uint32_t>(n));
    vstrbq_p_s8(dst, vldrbq_z_s8(src, p), p);
  }
}

inline void fill_bytes(int8_t* dst, int8_t value, int32_t n) {
  const int8x16_t v = vdupq_n_s8(value);
  for (; n > 0; n -= 16, dst += 16) vstrbq_p_s8(dst, v, vctp8q(static_cast<uint32_t>(n)));
}

}  // namespace helium
}  // namespace ember

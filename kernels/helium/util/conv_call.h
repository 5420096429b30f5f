// One batch item of an int8 convolution as the Helium paths see it (util/conv_planar.h, util/conv_patches.h).
#pragma once

#include <stdint.h>

#include "kernels/helium/util/conv_plan.h"
#include "kernels/helium/util/requant_state.h"

namespace ember {
namespace helium {

struct ConvCall {
  const int8_t* x;        // this batch item's input, NCHW
  const int8_t* w;        // OIHW
  const int32_t* bias;    // for channels whose correction needs 64 bits (RequantState::corrections_fit)
  int8_t* o;              // this batch item's output, NCHW
  const RequantState* q;
  ConvShape s;
  uint8_t* scratch;       // plan_conv(s).scratch bytes, 16-byte aligned
};

void run_planar(const ConvCall& k, const ConvPlan& plan);
void run_patches(const ConvCall& k, const ConvPlan& plan);

}  // namespace helium
}  // namespace ember

// A static transpose, run outside XNNPACK (Debian's 2022 XNNPACK has no transpose, neither in its subgraph API nor
// as an operator; the other kinds run here are in cpu_nodes.h). ExecuTorch's XNNPACK graphs transpose at their edges, NCHW -> NHWC
// after an image input and back before a 4-dim output; on MobileNetV2's 1x3x224x224 input that is 150,528 floats
// moved once per run.
#pragma once

#include <stddef.h>
#include <stdint.h>

namespace ember {
namespace xnnpack {

// dst[i] = src[j] where output index i's dim k is input index j's dim perm[k]; `dims` are the input's, `rank` at
// most 6, `element_size` 1, 2 or 4 (checked at load). src and dst do not overlap.
void transpose(const void* src, void* dst, const uint32_t* dims, const uint32_t* perm, uint32_t rank,
               size_t element_size);

}  // namespace xnnpack
}  // namespace ember

/* SPDX-License-Identifier: Apache-2.0 */
// The one kernel the shim's GEMM fallbacks need besides cuBLASLt (gemm.cpp): a strided,
// broadcasting, scaling element copy, used to materialise addmm's `self` into `out` before a
// GEMM that accumulates onto it (beta * self), to make a copy of an operand whose layout
// cuBLASLt cannot read, and to write beta * self (or zeros) when K is 0.
#pragma once

#include <cuda_runtime_api.h>

#include <cstdint>

namespace wharf_aoti {

// dst[b][i][j] = scale * src[b][i][j] over the box sizes[0] x sizes[1] x sizes[2], both
// addressed with element strides (src strides may be 0: broadcast); src == nullptr writes
// zeros. With scale == 1 the elements are copied bit for bit; otherwise the product is
// computed in float. dtype: PyTorch's code of float32, float16 or bfloat16 (anything else
// returns cudaErrorInvalidValue). Launched on `stream`; returns the launch's error.
cudaError_t launch_strided_copy(int32_t dtype, void* dst, const int64_t dst_strides[3], const void* src,
                                const int64_t src_strides[3], const int64_t sizes[3], float scale, cudaStream_t stream);

}  // namespace wharf_aoti

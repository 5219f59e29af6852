// SPDX-License-Identifier: Apache-2.0
#include <cuda_bf16.h>
#include <cuda_fp16.h>

#include "models/aoti/gemm_kernels.h"
#include "models/aoti/shim_internal.h"

namespace wharf_aoti {
namespace {

struct Box {
  int64_t n1, n2;      // sizes of the inner two dimensions
  int64_t d0, d1, d2;  // dst strides
  int64_t s0, s1, s2;  // src strides
};

__device__ inline float to_float(float v) { return v; }
__device__ inline float to_float(__half v) { return __half2float(v); }
__device__ inline float to_float(__nv_bfloat16 v) { return __bfloat162float(v); }
template <class T>
__device__ inline T from_float(float v);
template <>
__device__ inline float from_float<float>(float v) {
  return v;
}
template <>
__device__ inline __half from_float<__half>(float v) {
  return __float2half_rn(v);
}
template <>
__device__ inline __nv_bfloat16 from_float<__nv_bfloat16>(float v) {
  return __float2bfloat16_rn(v);
}

template <class T>
__global__ void strided_copy(T* dst, const T* src, Box box, int64_t total, float scale, bool exact) {
  for (int64_t e = blockIdx.x * int64_t(blockDim.x) + threadIdx.x; e < total; e += int64_t(gridDim.x) * blockDim.x) {
    const int64_t j = e % box.n2;
    const int64_t rest = e / box.n2;
    const int64_t i = rest % box.n1;
    const int64_t b = rest / box.n1;
    T* out = dst + b * box.d0 + i * box.d1 + j * box.d2;
    if (!src) {
      *out = from_float<T>(0.0f);
      continue;
    }
    const T v = src[b * box.s0 + i * box.s1 + j * box.s2];
    *out = exact ? v : from_float<T>(scale * to_float(v));
  }
}

template <class T>
cudaError_t launch(void* dst, const void* src, const Box& box, int64_t total, float scale, cudaStream_t stream) {
  const int threads = 256;
  int64_t blocks = (total + threads - 1) / threads;
  if (blocks > 4096) blocks = 4096;  // grid-stride beyond that
  strided_copy<T><<<unsigned(blocks), threads, 0, stream>>>(static_cast<T*>(dst), static_cast<const T*>(src), box,
                                                            total, scale, scale == 1.0f);
  return cudaGetLastError();
}

}  // namespace

cudaError_t launch_strided_copy(int32_t dtype, void* dst, const int64_t dst_strides[3], const void* src,
                                const int64_t src_strides[3], const int64_t sizes[3], float scale,
                                cudaStream_t stream) {
  const int64_t total = sizes[0] * sizes[1] * sizes[2];
  if (total == 0) return cudaSuccess;
  Box box{sizes[1], sizes[2], dst_strides[0], dst_strides[1], dst_strides[2], 0, 0, 0};
  if (src) {
    box.s0 = src_strides[0];
    box.s1 = src_strides[1];
    box.s2 = src_strides[2];
  }
  switch (dtype) {
    case kF32:
      return launch<float>(dst, src, box, total, scale, stream);
    case kF16:
      return launch<__half>(dst, src, box, total, scale, stream);
    case kBF16:
      return launch<__nv_bfloat16>(dst, src, box, total, scale, stream);
    default:
      return cudaErrorInvalidValue;
  }
}

}  // namespace wharf_aoti

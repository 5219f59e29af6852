// SPDX-License-Identifier: Apache-2.0
// The synthetic layer of offload_bench: every element of the activation is updated from the
// same element of the layer's weight by a chain of `work` dependent FMAs, so the kernel reads
// the whole weight once and its compute time scales with `work` (calibrated by the bench to
// match a layer's H2D copy time).
#include "offload_bench_kernels.h"

namespace {

__global__ void layer_kernel(float* h, const float* w, int64_t n, int work) {
  for (int64_t i = blockIdx.x * int64_t(blockDim.x) + threadIdx.x; i < n; i += int64_t(gridDim.x) * blockDim.x) {
    float a = h[i];
    const float x = w[i];
    for (int r = 0; r < work; ++r) a = fmaf(a, x, 1e-7f);
    h[i] = a;
  }
}

}  // namespace

namespace offload_bench {

cudaError_t launch_layer(cudaStream_t stream, float* h, const float* w, int64_t n, int work) {
  static int sms = 0;  // one device per bench process
  if (sms == 0) {
    int dev = 0;
    cudaError_t e = cudaGetDevice(&dev);
    if (e == cudaSuccess) e = cudaDeviceGetAttribute(&sms, cudaDevAttrMultiProcessorCount, dev);
    if (e != cudaSuccess) return e;
  }
  layer_kernel<<<sms * 8, 256, 0, stream>>>(h, w, n, work);
  return cudaGetLastError();
}

}  // namespace offload_bench

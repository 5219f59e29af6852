/* SPDX-License-Identifier: Apache-2.0 */
// The layer kernel of offload_bench (bench/offload_bench_kernels.cu).
#pragma once

#include <cuda_runtime_api.h>

#include <cstdint>

namespace offload_bench {

// h[i] = work dependent FMAs of h[i] with w[i], for i < n, on `stream`.
cudaError_t launch_layer(cudaStream_t stream, float* h, const float* w, int64_t n, int work);

}  // namespace offload_bench

// SPDX-License-Identifier: Apache-2.0
#include "test_kernels.h"

namespace wharf_test {
namespace {

__device__ __forceinline__ uint64_t global_ns() {
  uint64_t t;
  asm volatile("mov.u64 %0, %%globaltimer;" : "=l"(t));
  return t;
}

__global__ void spin_kernel(uint64_t ns) {
  const uint64_t start = global_ns();
  while (global_ns() - start < ns) {
  }
}

__global__ void fill_kernel(uint32_t* p, uint64_t n, uint32_t seed) {
  for (uint64_t i = blockIdx.x * uint64_t(blockDim.x) + threadIdx.x; i < n; i += uint64_t(gridDim.x) * blockDim.x)
    p[i] = pattern(seed, i);
}

}  // namespace

cudaError_t launch_spin(cudaStream_t stream, uint64_t ns) {
  spin_kernel<<<1, 1, 0, stream>>>(ns);
  return cudaGetLastError();  // launch-configuration errors; faults show at synchronization
}

cudaError_t launch_fill(cudaStream_t stream, uint32_t* p, uint64_t n, uint32_t seed) {
  if (n == 0) return cudaSuccess;
  const unsigned threads = 256;
  const uint64_t want = (n + threads - 1) / threads;
  const unsigned blocks = unsigned(want < 1024 ? want : 1024);  // grid-stride covers the rest
  fill_kernel<<<blocks, threads, 0, stream>>>(p, n, seed);
  return cudaGetLastError();
}

}  // namespace wharf_test

namespace wharf_test {
namespace {

__global__ void check_kernel(const uint32_t* p, uint64_t n, uint32_t seed, unsigned long long* bad) {
  unsigned long long local = 0;
  for (uint64_t i = blockIdx.x * uint64_t(blockDim.x) + threadIdx.x; i < n; i += uint64_t(gridDim.x) * blockDim.x)
    local += p[i] != pattern(seed, i);
  if (local) atomicAdd(bad, local);
}

__global__ void check_value_kernel(const uint32_t* p, uint64_t n, uint32_t value, unsigned long long* bad) {
  unsigned long long local = 0;
  for (uint64_t i = blockIdx.x * uint64_t(blockDim.x) + threadIdx.x; i < n; i += uint64_t(gridDim.x) * blockDim.x)
    local += p[i] != value;
  if (local) atomicAdd(bad, local);
}

unsigned check_blocks(uint64_t n) {
  const uint64_t want = (n + 255) / 256;
  return unsigned(want < 1024 ? want : 1024);
}

}  // namespace

cudaError_t launch_check(cudaStream_t stream, const uint32_t* p, uint64_t n, uint32_t seed, unsigned long long* bad) {
  if (n == 0) return cudaSuccess;
  check_kernel<<<check_blocks(n), 256, 0, stream>>>(p, n, seed, bad);
  return cudaGetLastError();
}

cudaError_t launch_check_value(cudaStream_t stream, const uint32_t* p, uint64_t n, uint32_t value,
                               unsigned long long* bad) {
  if (n == 0) return cudaSuccess;
  check_value_kernel<<<check_blocks(n), 256, 0, stream>>>(p, n, value, bad);
  return cudaGetLastError();
}

}  // namespace wharf_test

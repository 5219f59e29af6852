/* SPDX-License-Identifier: Apache-2.0 */
// Test kernels for the CUDA backend tests: a kernel that keeps a stream busy for a set time
// (to make ordering observable) and a kernel that fills a buffer with a known pattern.
// The library itself has no kernels; these exist only in the test binary.
#pragma once

#include <cuda_runtime_api.h>

#include <cstdint>

#ifdef __CUDACC__
#define WHARF_TEST_HD __host__ __device__
#else
#define WHARF_TEST_HD
#endif

namespace wharf_test {

// The value fill writes at index i: a hash, so a shifted, partial or stale buffer never
// passes for a correct one.
WHARF_TEST_HD inline uint32_t pattern(uint32_t seed, uint64_t i) {
  uint64_t x = (uint64_t(seed) << 32) ^ i ^ 0x9E3779B97F4A7C15ull;
  x ^= x >> 33;
  x *= 0xFF51AFD7ED558CCDull;
  x ^= x >> 33;
  x *= 0xC4CEB9FE1A85EC53ull;
  x ^= x >> 33;
  return uint32_t(x);
}

// One thread that spins on the GPU's global nanosecond timer for `ns`. Time-based rather
// than iteration-based, so it lasts as long on any GPU and under compute-sanitizer.
cudaError_t launch_spin(cudaStream_t stream, uint64_t ns);

// p[i] = pattern(seed, i) for i < n.
cudaError_t launch_fill(cudaStream_t stream, uint32_t* p, uint64_t n, uint32_t seed);

}  // namespace wharf_test

namespace wharf_test {

// Adds to *bad the number of i < n with p[i] != pattern(seed, i) (device-side check, so a
// kernel reading storage through a lease proves what the device sees at that point of the
// stream). `bad` is device memory.
cudaError_t launch_check(cudaStream_t stream, const uint32_t* p, uint64_t n, uint32_t seed, unsigned long long* bad);

// Adds to *bad the number of i < n with p[i] != value.
cudaError_t launch_check_value(cudaStream_t stream, const uint32_t* p, uint64_t n, uint32_t value,
                               unsigned long long* bad);

}  // namespace wharf_test

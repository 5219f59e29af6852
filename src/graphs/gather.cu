// SPDX-License-Identifier: Apache-2.0
#include <cuda_runtime_api.h>

#include <algorithm>

#include "graphs/gather.h"

namespace wharf {
namespace {

struct alignas(16) U16 {
  uint64_t a, b;
};

template <typename T>
__device__ void copy_units(const GatherInput& g, uint64_t start, uint64_t stride) {
  const T* src = static_cast<const T*>(g.src);
  T* dst = static_cast<T*>(g.dst);
  const uint64_t n = gather_dst_units(g);
  for (uint64_t i = start; i < n; i += stride) dst[i] = src[gather_src_unit(g, i)];
}

// blockIdx.y: the input; x: units of it, grid-strided.
__global__ void wharf_graph_gather(GatherParams p) {
  if (blockIdx.y >= p.count) return;
  const GatherInput& g = p.in[blockIdx.y];
  const uint64_t start = uint64_t(blockIdx.x) * blockDim.x + threadIdx.x;
  const uint64_t stride = uint64_t(gridDim.x) * blockDim.x;
  switch (g.unit) {
    case 16:
      copy_units<U16>(g, start, stride);
      break;
    case 8:
      copy_units<uint64_t>(g, start, stride);
      break;
    case 4:
      copy_units<uint32_t>(g, start, stride);
      break;
    case 2:
      copy_units<uint16_t>(g, start, stride);
      break;
    default:
      copy_units<uint8_t>(g, start, stride);
      break;
  }
}

}  // namespace

const void* gather_kernel() { return reinterpret_cast<const void*>(&wharf_graph_gather); }

unsigned gather_blocks(const GatherParams& p) {
  uint64_t most = 1;
  for (uint32_t i = 0; i < p.count; ++i) most = std::max(most, gather_dst_units(p.in[i]));
  return unsigned(std::min<uint64_t>((most + kGatherThreads - 1) / kGatherThreads, 1024));
}

int gather_launch(const GatherParams& p, void* stream) {
  if (p.count == 0) return int(cudaSuccess);
  wharf_graph_gather<<<dim3(gather_blocks(p), p.count), kGatherThreads, 0, static_cast<cudaStream_t>(stream)>>>(p);
  return int(cudaGetLastError());
}

}  // namespace wharf

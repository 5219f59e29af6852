/* SPDX-License-Identifier: Apache-2.0 */
// The graph's input gather: one kernel node at the head of every captured graph copies each
// run's inputs into the graph's static input buffers and pads a bucketed dimension by
// repeating the last row (graphs/bucket_plan.h says why that is sound). Its parameters are
// the inputs' source addresses and row counts: a replay whose inputs come from the same
// addresses with the same sizes as the previous one sets nothing and enqueues no copy.
//
// Plain C++ here (host code and the unit tests include it); the kernel is in gather.cu.
#pragma once

#include <cstdint>

#if defined(__CUDACC__)
#define WHARF_GATHER_HD __host__ __device__
#else
#define WHARF_GATHER_HD
#endif

namespace wharf {

// One input: `outer` blocks (the product of the dimensions before the bucketed one), each of
// `rows` source rows of `row_units` units of `unit` bytes (the product of the dimensions
// after it), written as `bucket_rows` rows: row r >= rows repeats row rows - 1. An input
// without the dimension has rows == bucket_rows == 1 (a plain copy).
struct GatherInput {
  const void* src = nullptr;
  void* dst = nullptr;
  uint64_t outer = 1;
  uint64_t row_units = 0;
  uint32_t rows = 1;
  uint32_t bucket_rows = 1;
  uint32_t unit = 1;  // 1, 2, 4, 8 or 16: the widest both addresses and the row bytes allow
  uint32_t reserved = 0;
};

constexpr uint32_t kMaxGatherInputs = 16;

// The kernel's one parameter (passed by value: 8 + 16 * 48 bytes).
struct GatherParams {
  uint32_t count = 0;
  uint32_t reserved = 0;
  GatherInput in[kMaxGatherInputs];
};

// Units of the destination (the padded tensor).
WHARF_GATHER_HD inline uint64_t gather_dst_units(const GatherInput& g) {
  return g.outer * uint64_t(g.bucket_rows) * g.row_units;
}

// The source unit that destination unit `i` copies.
WHARF_GATHER_HD inline uint64_t gather_src_unit(const GatherInput& g, uint64_t i) {
  const uint64_t per_outer = uint64_t(g.bucket_rows) * g.row_units;
  const uint64_t o = i / per_outer, rem = i % per_outer;
  const uint64_t r = rem / g.row_units, c = rem % g.row_units;
  const uint64_t rs = r < g.rows ? r : uint64_t(g.rows) - 1;
  return (o * g.rows + rs) * g.row_units + c;
}

// The widest unit (<= 16 bytes) dividing the row's bytes and both addresses.
inline uint32_t gather_unit(uint64_t row_bytes, const void* src, const void* dst) {
  const uint64_t a = row_bytes | reinterpret_cast<uintptr_t>(src) | reinterpret_cast<uintptr_t>(dst);
  for (uint32_t u = 16; u > 1; u /= 2)
    if (a % u == 0) return u;
  return 1;
}

// Sets g.unit to the widest unit its row bytes (g.row_units with g.unit 1) and addresses allow,
// dividing row_units by it.
inline void gather_narrow(GatherInput* g) {
  g->unit = gather_unit(g->row_units, g->src, g->dst);
  g->row_units /= g->unit;
}

// gather.cu (CUDA builds only): the kernel's entry (for a graph kernel node), its grid for
// `p`'s largest input, and an eager launch on `stream` (a cudaStream_t) returning the
// cudaError_t as an int.
const void* gather_kernel();
unsigned gather_blocks(const GatherParams& p);
constexpr unsigned kGatherThreads = 256;
int gather_launch(const GatherParams& p, void* stream);

}  // namespace wharf

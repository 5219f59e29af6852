/* SPDX-License-Identifier: Apache-2.0 */
// The bytes of a group update spanning processes (RankGroup, rank_group.h), as rank 0 sends
// them. Other programs speak it too: tools/sender/wharf_sender.py (a PyTorch trainer as rank
// 0) mirrors every constant here, and tests/unit/rank_protocol_test.cpp pins the encoding
// against tests/data/rank_plan.golden, which the Python sender's test checks as well.
//
// One update, on every rank, in this order (integers little-endian):
// 1. broadcast from rank 0: the header, kRankHeaderBytes (RankHeader below). code 0: the
//    update goes ahead; otherwise rank 0's status code (wharf_code) and its message, and
//    nothing else follows (no vote).
// 2. broadcast: the plan, header.plan_bytes bytes (only when header.count > 0): count entries,
//    each u64 nbytes, u32 dtype (wharf_dtype), u32 ndim, i64 shape[ndim], u32 name bytes, the
//    FQN (UTF-8, no terminator), zero bytes to a multiple of 8. Receivers find each weight by
//    its FQN, so rank 0 need not declare a container (a trainer does not).
// 3. broadcast: each plan entry's bytes (row-major, contiguous), in plan order.
// 4. the vote: an all-reduce (minimum) of one u64 per rank (encode_vote); every rank commits
//    when the minimum says every rank staged, and drops its fresh storage otherwise.
// Each broadcast above travels as consecutive pieces of at most kRankChunkBytes (on NCCL: one
// ncclBroadcast of ncclInt8 from root 0 per piece), so every rank issues the same calls
// whatever it does with the bytes (a rank that failed receives into scratch memory).
// On NCCL the pieces of step 3 (all entries' pieces, counted across entries in plan order)
// are issued in groups (ncclGroupStart ... ncclGroupEnd) of kRankGroupPieces consecutive
// pieces, the last group holding the rest; steps 1, 2 and 4 are not grouped. Every rank
// groups alike because NCCL schedules a group's operations together (channels, fusion), so
// ranks grouping differently could disagree on how a broadcast moves. Why groups: a
// non-blocking communicator launches every ungrouped call from a new thread and answers
// ncclInProgress until it is launched, which cost ~0.3 ms per 4 MiB piece (8 GiB between two
// processes took 4.4x a single GPU's update, measured on 4 x H100).
// Forming the group on NCCL (after ncclCommInitRank): two all-reduces (minimum) of a u64, the
// declarations' fingerprint f and then ~f; the ranks agree when min f == f and min ~f == ~f on
// every rank. A rank without declarations (a sender) gives UINT64_MAX to both.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "core/dtype.h"
#include "core/status.h"

namespace wharf {

constexpr uint64_t kRankChunkBytes = 4ull << 20;
constexpr uint32_t kRankGroupPieces = 16;  // pieces of step 3 per NCCL group (64 MiB)
constexpr size_t kRankHeaderBytes = 1024;

struct RankHeader {
  uint32_t code = 0;                      // rank 0's status code (0: the update goes ahead)
  uint32_t count = 0;                     // plan entries
  uint64_t total_bytes = 0;               // the entries' bytes
  uint64_t plan_bytes = 0;                // the encoded plan's size
  char text[kRankHeaderBytes - 24] = {};  // rank 0's error message (truncated, NUL-terminated)
};
static_assert(sizeof(RankHeader) == kRankHeaderBytes, "the header is a fixed 1 KiB on every rank");

struct RankPlanEntry {
  std::string fqn;
  DType dtype = DType::kF32;
  std::vector<int64_t> shape;
  uint64_t nbytes = 0;
};

std::vector<unsigned char> encode_rank_plan(const std::vector<RankPlanEntry>& entries);
// DATA_CORRUPT when `bytes` is not `count` well-formed entries (ranks out of step, or not Wharf).
Status decode_rank_plan(const unsigned char* bytes, uint64_t size, uint32_t count, std::vector<RankPlanEntry>* out);

// The vote: size << 32 for "staged", rank << 32 | code for a failure, so the minimum over the
// ranks names the lowest failing rank and its code.
inline uint64_t encode_vote(uint32_t rank, uint32_t size, const Status& st) {
  return st.ok() ? uint64_t(size) << 32 : (uint64_t(rank) << 32) | uint32_t(st.code());
}

}  // namespace wharf

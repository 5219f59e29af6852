/* SPDX-License-Identifier: Apache-2.0 */
// The batches a group update reads its sources in (ReplicaGroup::fill, RankGroup::send): the
// source GPU reads batch k+1 (host to device, the update's critical path) while batch k is
// broadcast, so the update takes about one GPU's read plus whatever broadcast the reads
// cannot hide: the last batch's, which nothing overlaps. Full batches of `batch_bytes`
// (each batch boundary drains the copy engine and costs a host wait, so fewer is better),
// shrinking toward the end: a batch is closed once it holds
//   min(batch_bytes, max(batch_bytes / 16, remaining / 4))
// bytes (`remaining`: the bytes from its first entry to the plan's end). Each batch is then
// at least 3/4 of the one before, so its read still hides the previous batch's broadcast
// while the broadcast runs at 4/3 of the read's rate or faster (NVLink: ~3x), and the last
// batch is about batch_bytes / 16 (64 MiB of 1 GiB) instead of up to batch_bytes: for 8 GiB
// in 128 MiB tensors, 8 batches of 1 GiB became 14 (1 GiB x 5, 768, 640, 512, 384, 256 and
// 4 x 128 MiB). An entry is never split (a constant larger than the limit is a batch of its
// own), and a batch takes at least one entry.
#pragma once

#include <cstddef>
#include <cstdint>
#include <vector>

namespace wharf {

// `bytes`: the plan's entries' sizes, in plan order. Returns each batch's end (one past its
// last entry), in order; the last is bytes.size() (none for an empty plan).
inline std::vector<size_t> update_batches(const std::vector<uint64_t>& bytes, uint64_t batch_bytes) {
  uint64_t remaining = 0;
  for (uint64_t b : bytes) remaining += b;
  const uint64_t floor = batch_bytes / 16;
  std::vector<size_t> ends;
  for (size_t i = 0; i < bytes.size();) {
    const uint64_t quarter = remaining / 4;
    const uint64_t limit = batch_bytes < quarter ? batch_bytes : (quarter > floor ? quarter : floor);
    uint64_t got = 0;
    const size_t first = i;
    for (; i < bytes.size() && (i == first || got < limit); ++i) got += bytes[i];
    remaining -= got;
    ends.push_back(i);
  }
  return ends;
}

}  // namespace wharf

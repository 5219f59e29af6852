// SPDX-License-Identifier: Apache-2.0
#include "graphs/patch_plan.h"

#include <algorithm>
#include <cstdio>
#include <cstdint>
#include <cstring>

namespace wharf {
namespace {
std::string to_hex(uint64_t v) {
  char buf[24];
  std::snprintf(buf, sizeof buf, "%llx", static_cast<unsigned long long>(v));
  return buf;
}
}  // namespace

Status PatchPlan::build(std::vector<NodeImage> nodes, std::vector<GraphRange> ranges, PatchPlan* out) {
  // Ranges sorted by base (their indices kept) for a binary search per word.
  std::vector<uint32_t> order;
  for (uint32_t r = 0; r < ranges.size(); ++r)
    if (ranges[r].bytes > 0) order.push_back(r);
  std::sort(order.begin(), order.end(), [&](uint32_t a, uint32_t b) { return ranges[a].base < ranges[b].base; });
  for (size_t i = 1; i < order.size(); ++i) {
    const GraphRange& a = ranges[order[i - 1]];
    const GraphRange& b = ranges[order[i]];
    if (b.base - a.base < a.bytes)
      return InvalidArgument(a.what + " and " + b.what + " share memory at capture (" + std::to_string(a.bytes) +
                             " bytes at 0x" + to_hex(a.base) + ", " + std::to_string(b.bytes) + " bytes at 0x" +
                             to_hex(b.base) + "): a graph parameter inside both could not be re-pointed");
  }
  std::vector<Patch> found;
  for (uint32_t n = 0; n < nodes.size(); ++n) {
    const NodeImage& img = nodes[n];
    for (const NodeImage::Param& p : img.params) {
      if (p.size < 8 || uint64_t(p.offset) + p.size > img.bytes.size()) continue;
      for (uint32_t at = p.offset; at + 8 <= p.offset + p.size; at += 8) {
        uint64_t v;
        std::memcpy(&v, img.bytes.data() + at, 8);
        // The last range starting at or below v.
        auto it = std::upper_bound(order.begin(), order.end(), v,
                                   [&](uint64_t value, uint32_t r) { return value < ranges[r].base; });
        if (it == order.begin()) continue;
        const uint32_t r = *(it - 1);
        if (v - ranges[r].base >= ranges[r].bytes) continue;
        found.push_back({n, at, r, v - ranges[r].base});
      }
    }
  }
  std::stable_sort(found.begin(), found.end(), [](const Patch& a, const Patch& b) { return a.range < b.range; });
  PatchPlan plan;
  plan.by_range_.assign(ranges.size(), {0, 0});
  for (size_t i = 0; i < found.size();) {
    size_t j = i;
    while (j < found.size() && found[j].range == found[i].range) ++j;
    plan.by_range_[found[i].range] = {uint32_t(i), uint32_t(j)};
    i = j;
  }
  plan.current_.resize(ranges.size());
  for (size_t r = 0; r < ranges.size(); ++r) plan.current_[r] = ranges[r].base;
  plan.patches_ = std::move(found);
  plan.stamp_.assign(nodes.size(), 0);
  plan.nodes_ = std::move(nodes);
  plan.ranges_ = std::move(ranges);
  *out = std::move(plan);
  return Status::Ok();
}

size_t PatchPlan::num_patched_nodes() const {
  std::vector<bool> seen(nodes_.size(), false);
  size_t n = 0;
  for (const Patch& p : patches_)
    if (!seen[p.node]) {
      seen[p.node] = true;
      ++n;
    }
  return n;
}

Status PatchPlan::repoint(const std::vector<uint64_t>& bases,
                          const std::function<Status(uint32_t, const NodeImage&)>& apply, size_t* nodes_applied) {
  if (nodes_applied) *nodes_applied = 0;
  if (bases.size() != ranges_.size())
    return InvalidArgument("re-pointing a graph: " + std::to_string(ranges_.size()) + " range bases expected, got " +
                           std::to_string(bases.size()));
  if (++clock_ == 0) {  // wrapped: no stale stamp may equal the new clock
    std::fill(stamp_.begin(), stamp_.end(), 0);
    clock_ = 1;
  }
  touched_.clear();
  for (size_t r = 0; r < ranges_.size(); ++r) {
    if (known_ && bases[r] == current_[r]) continue;
    const auto [first, end] = by_range_[r];
    for (uint32_t i = first; i < end; ++i) {
      const Patch& p = patches_[i];
      const uint64_t v = bases[r] + p.delta;
      std::memcpy(nodes_[p.node].bytes.data() + p.at, &v, 8);
      if (stamp_[p.node] != clock_) {
        stamp_[p.node] = clock_;
        touched_.push_back(p.node);
      }
    }
  }
  // From here the images hold the new binding: whatever apply does, current_ follows them
  // only if every node was applied.
  current_ = bases;
  std::sort(touched_.begin(), touched_.end());  // node order: deterministic, cache-friendly
  for (uint32_t n : touched_) {
    Status st = apply(n, nodes_[n]);
    if (!st.ok()) {
      known_ = false;
      return st;
    }
    if (nodes_applied) ++*nodes_applied;
  }
  known_ = true;
  return Status::Ok();
}

size_t PatchPlan::cost(const std::vector<uint64_t>& bases) const {
  if (bases.size() != ranges_.size()) return SIZE_MAX;
  if (!known_) return patches_.size();
  size_t n = 0;
  for (size_t r = 0; r < ranges_.size(); ++r)
    if (bases[r] != current_[r]) n += by_range_[r].second - by_range_[r].first;
  return n;
}

int choose_exec(const std::vector<ExecCandidate>& execs, const std::vector<uint64_t>& bases, size_t* cost) {
  int best = -1;
  size_t best_cost = SIZE_MAX;
  for (size_t i = 0; i < execs.size(); ++i) {
    const ExecCandidate& e = execs[i];
    if (!e.plan || e.busy) continue;
    const size_t c = e.plan->cost(bases);
    if (c == SIZE_MAX) continue;
    if (best < 0 || c < best_cost || (c == best_cost && e.last_used > execs[size_t(best)].last_used)) {
      best = int(i);
      best_cost = c;
    }
  }
  if (cost) *cost = best_cost;
  return best;
}

int choose_spare(const std::vector<ExecCandidate>& execs) {
  int newest = -1;
  for (size_t i = 0; i < execs.size(); ++i)
    if (execs[i].plan && (newest < 0 || execs[i].last_used > execs[size_t(newest)].last_used)) newest = int(i);
  int best = -1;
  for (size_t i = 0; i < execs.size(); ++i) {
    const ExecCandidate& e = execs[i];
    if (e.busy || int(i) == newest) continue;
    const uint64_t used = e.plan ? e.last_used : 0;
    const uint64_t best_used = best < 0 ? 0 : (execs[size_t(best)].plan ? execs[size_t(best)].last_used : 0);
    if (best < 0 || used < best_used) best = int(i);
  }
  return best;
}

}  // namespace wharf

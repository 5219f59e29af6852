/* SPDX-License-Identifier: Apache-2.0 */
// PatchPlan: which parameters of a captured CUDA graph's nodes hold addresses of memory that
// changes between replays (a generation's constants, a session's state, a generation's
// folded constants), and how to rewrite them for another binding without recapturing.
//
// At capture the graph was bound to one address per *range* (each constant's and state's
// [base, base + bytes)). build() scans every node's parameter values, as bytes: each 8-byte
// word of a parameter of 8 bytes or more (a pointer, or a struct holding pointers) whose
// value lies inside a range becomes a patch (node, byte offset, range, offset in the range).
// repoint() is given the bases of the next replay's binding and rewrites only the patches
// of ranges whose base changed, then hands each touched node's new parameter image to the
// caller (which sets it on the executable graph: cudaGraphExecKernelNodeSetParams etc.).
//
// No CUDA here: the CUDA side (graphs/model_graphs.cpp) reads the nodes into NodeImages and
// applies them; the unit tests drive the plan with fake nodes.
//
// Threads: a plan is used by one thread at a time (the caller locks).
#pragma once

#include <cstdint>
#include <functional>
#include <string>
#include <vector>

#include "core/status.h"

namespace wharf {

struct GraphRange {
  uint64_t base = 0;   // the address at capture
  uint64_t bytes = 0;  // empty ranges never match
  std::string what;    // for messages ("constant 'layers.0.wq.weight'")
};

// One node's parameter values as bytes. Kernel nodes: the parameters at the offsets and sizes
// the function declares; memcpy/memset nodes: their pointers as 8-byte parameters.
struct NodeImage {
  struct Param {
    uint32_t offset = 0;  // in `bytes`
    uint32_t size = 0;
  };
  std::vector<uint8_t> bytes;
  std::vector<Param> params;
};

class PatchPlan {
 public:
  struct Patch {
    uint32_t node = 0;
    uint32_t at = 0;  // byte offset of the 8-byte word in the node's image
    uint32_t range = 0;
    uint64_t delta = 0;  // value - range base at capture
  };

  // Takes the nodes' images and the ranges. INVALID_ARGUMENT (naming both) when two
  // non-empty ranges overlap: a value inside both could not be re-pointed unambiguously.
  static Status build(std::vector<NodeImage> nodes, std::vector<GraphRange> ranges, PatchPlan* out);

  // Re-points the plan to `bases` (one per range, in build()'s order): for every range whose
  // base differs from the current one, its patches get base + delta; then `apply(node,
  // image)` is called once per node whose image changed. If apply fails the plan forgets
  // what the graph holds (the next repoint rewrites every patched node) and the error is
  // returned. *nodes_applied (optional) counts the nodes applied.
  Status repoint(const std::vector<uint64_t>& bases, const std::function<Status(uint32_t, const NodeImage&)>& apply,
                 size_t* nodes_applied = nullptr);
  // The graph's nodes hold unknown values: the next repoint applies every patched node.
  void invalidate() { known_ = false; }
  // The patches repoint(bases) would rewrite (every one while the values are unknown; 0: the
  // graph points at `bases` already). SIZE_MAX when `bases` has another number of ranges.
  size_t cost(const std::vector<uint64_t>& bases) const;

  size_t num_nodes() const { return nodes_.size(); }
  size_t num_ranges() const { return ranges_.size(); }
  const std::vector<Patch>& patches() const { return patches_; }
  const std::vector<uint64_t>& current() const { return current_; }
  const NodeImage& node(size_t i) const { return nodes_[i]; }
  const GraphRange& range(size_t i) const { return ranges_[i]; }
  // The number of nodes that hold at least one patch.
  size_t num_patched_nodes() const;

 private:
  std::vector<NodeImage> nodes_;
  std::vector<GraphRange> ranges_;
  std::vector<Patch> patches_;                           // grouped by range
  std::vector<std::pair<uint32_t, uint32_t>> by_range_;  // [first, end) of each range's patches
  std::vector<uint64_t> current_;                        // the base each range has in the graph now
  bool known_ = true;
  std::vector<uint32_t> stamp_;  // per node: the repoint that last touched it
  uint32_t clock_ = 0;
  std::vector<uint32_t> touched_;
};

// Several executable graphs instantiated from one captured graph, each with its own plan (what
// its nodes point at): a replay takes the one that needs the fewest patches for its bases,
// so a graph a prepare pointed at a new generation serves that generation's runs and the
// other keeps serving runs that began before the swap (ModelGraphs, docs/decisions.md).
struct ExecCandidate {
  const PatchPlan* plan = nullptr;  // null: not instantiated
  bool busy = false;                // being set by a prepare (not usable now)
  uint64_t last_used = 0;           // a replay clock: the larger, the more recent
};
// The candidate a replay bound to `bases` uses: the usable one of least cost, the most
// recently used among equals; -1 when none is usable. *cost: its cost.
int choose_exec(const std::vector<ExecCandidate>& execs, const std::vector<uint64_t>& bases, size_t* cost);
// The candidate a prepare points at a new binding: the least recently used one not busy
// (one not instantiated counts as never used), never the most recently used one of several
// while others exist, so the graph serving now stays as it is; -1 when none.
int choose_spare(const std::vector<ExecCandidate>& execs);

}  // namespace wharf

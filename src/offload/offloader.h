/* SPDX-License-Identifier: Apache-2.0 */
// Offloader: chosen layers' constants live in pinned host memory (the container declares them
// host-placed, so every generation's storage for them is pinned host memory) and a small ring
// of static device slots holds the layers about to be computed. Within a run, layer i + k is
// copied on a dedicated copy stream while layer i computes; events order everything, never a
// host synchronisation, so the schedule also works while the run's stream is being captured
// into a CUDA graph (the copy stream forks from and joins back into the capture).
//
// Layers. A layer pattern such as "layers.{layer}." names the layer of a constant: the
// constant's FQN contains the pattern with {layer} replaced by a decimal number. The model's
// layers are 0 .. num_layers-1 (the largest number any constant of the container carries,
// plus one). Offloaded layers are those holding at least one offloaded constant; they are
// numbered j = 0 .. n-1 in layer order ("offloaded index"), and offloaded index j uses slot
// j % slot_capacity.
//
// Per run (one run of the container at a time holds an offloader; another gets BUSY):
//   begin(run)      fork: the copy stream waits for the run's stream (and, outside a capture,
//                   for the previous run's end); copies offloaded indices 0 .. k-1.
//   wait(run, L)    the run's stream waits for layer L's copy; returns its slot pointers.
//   issued(run, L)  records an event on the run's stream after layer L's work; the copy of
//                   offloaded index j + k (into slot (j + k) % capacity, last read by index
//                   j + k - capacity <= j) waits for that slot's last reader's event.
//   end(run)        join: the run's stream waits for the copy stream's last copy; records the
//                   run's end for the next run (not for a captured run: the next run then
//                   waits for the run before it). Called by the run's end if the caller did not.
// Layers are waited and issued in increasing order (each offloaded layer: wait, then
// issued); non-offloaded layers may be skipped or passed to wait/issued (no-ops).
//
// Generations. Copies read the host storage of the generation the run pinned, so a run never
// mixes generations and a swap changes what later runs prefetch. A run captured into a CUDA
// graph by its caller bakes its generation's host addresses into the graph: the offloader
// keeps every generation it captured alive until it is freed, and holds the offloaded
// constants' storage as another owner would, so an in-place update gives those constants
// fresh storage instead of overwriting what the graph copies from.
//
// Compiled models' graphs (graphs/model_graphs.h) capture through begin() with an
// OffloadTarget: their capture stream and a ring of their own (each set of graphs has one),
// with the copies' sources re-pointed to every replay's own run's generation; a replay is a
// graph launch that uses no state of the offloader at all (docs/decisions.md, "Graphs of
// offloaded models").
//
// Threads: an Offloader is safe to use from many threads; its per-run calls are those of
// the one run that holds it (serialised by `mu_`).
#pragma once

#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "constants/container.h"
#include "core/sync.h"
#include "runs/run.h"

namespace wharf {

struct OffloaderConfig {
  // Explicit list of offloaded constants (each must carry a layer per `layer_pattern`).
  // Empty: every constant matching the pattern in a layer the group rule selects.
  std::vector<std::string> fqns;
  std::string layer_pattern = "layers.{layer}.";
  // vLLM's selection: layer L is offloaded when L % group_size >= group_size - num_in_group.
  // group_size 0: every matching layer. Ignored with an explicit list.
  uint32_t group_size = 0;
  uint32_t num_in_group = 1;
  uint32_t prefetch_step = 1;  // k: layers copied ahead; 0 = each copy is issued at its wait
  uint32_t slot_capacity = 0;  // device slots; 0 = max(prefetch_step, 1); clamped to the offloaded layers
  // Budget check (see OffloadBudget): the caller's measured step compute time (0: unknown, no
  // check), the H2D bandwidth (0: measured at creation on CUDA, kHostAssumedH2D on the host
  // backend), and whether an exposed copy time refuses creation (else it is logged at WARN).
  uint64_t step_compute_us = 0;
  uint64_t h2d_bytes_per_second = 0;
  bool refuse_if_exposed = false;
};

// Where the H2D bandwidth of a budget comes from (values of the C API's h2d_source).
enum class H2DSource : int { kGiven = 0, kMeasured = 1, kAssumed = 2 };

// The host backend has no PCIe link to measure: its budgets assume what a PCIe 3.0 x16 link
// gives pinned copies (~12 GB/s), the low end of what an offloading GPU server has, so that a
// budget planned on a laptop errs towards warning (docs/decisions.md, "Offloader budget").
constexpr uint64_t kHostAssumedH2D = 12'000'000'000ull;

// The copy time a step of the offloader adds against its compute time. Every offloaded layer
// is copied once per step (a run that waits for every layer); prefetch overlaps the copies
// with compute, so at best a step takes max(compute, copy): `exposed_us` = copy - compute
// (0 when the copies fit) is the time prefetch cannot hide, a lower bound of the slowdown.
struct OffloadBudget {
  uint32_t offloaded_layers = 0;
  uint64_t bytes_per_step = 0;
  uint64_t h2d_bytes_per_second = 0;
  H2DSource h2d_source = H2DSource::kGiven;
  double copy_us = 0;
  double compute_us = 0;  // 0: unknown (no check)
  double exposed_us = 0;

  static OffloadBudget estimate(uint32_t layers, uint64_t bytes, uint64_t h2d_bytes_per_second, H2DSource source,
                                uint64_t step_compute_us);
  bool checked() const { return compute_us > 0; }
  bool exposed() const { return exposed_us > 0; }
  // One line: what a step moves, at what bandwidth, against which compute time, and by how
  // much prefetch cannot hide it ("offloading 6 layers moves 1.5 GiB per step: ...").
  std::string describe() const;
};

// One offloaded constant of a layer: where it sits in the slot.
struct OffloadedConstant {
  int index = -1;       // in the container's declarations
  uint64_t offset = 0;  // bytes from the slot's base
};

// Where a run's offloading happens when it is not the run's stream and the offloader's pool.
struct OffloadTarget {
  // The stream the run's layers are enqueued on (a graph capture's private stream); null:
  // the run's own.
  Stream* stream = nullptr;
  // slot_capacity() * slot_bytes() of device memory the copies go to, laid out as the pool
  // (layer L at slot_offset(L)); null: the pool. Its owner orders its other users itself.
  char* ring = nullptr;
  // The caller re-points a capture's copies to the host storage of each launch's own run's
  // generation before every launch (ModelGraphs): the capture keeps no generation.
  bool repointed = false;
};

class Offloader : public std::enable_shared_from_this<Offloader> {
 public:
  static Status create(std::shared_ptr<Container> container, const OffloaderConfig& config,
                       std::shared_ptr<Offloader>* out);
  // The constants `config` offloads among `decls` (indices, in declaration order), checked as
  // create checks them except for their placement; `where` prefixes messages. A model loader
  // uses it to place the chosen constants in host memory before creating its container.
  // `layers` (optional) receives each declaration's layer number (-1: none).
  static Status select(const std::vector<ConstantDecl>& decls, const OffloaderConfig& config, const std::string& where,
                       std::vector<int>* chosen, std::vector<int64_t>* layers = nullptr);
  ~Offloader();

  Status begin(Run& run, const OffloadTarget& target = OffloadTarget()) WHARF_EXCLUDES(mu_);
  // Sets *slot to the base of the slot holding layer `layer` (its constants sit at their
  // layer_constants() offsets; in the target's ring when begin was given one), or nullptr for
  // a layer that is not offloaded. No allocation.
  Status wait(Run& run, uint32_t layer, char** slot) WHARF_EXCLUDES(mu_);
  Status issued(Run& run, uint32_t layer) WHARF_EXCLUDES(mu_);
  Status end(Run& run) WHARF_EXCLUDES(mu_);

  uint32_t num_layers() const { return num_layers_; }
  uint32_t num_offloaded_layers() const { return uint32_t(offloaded_.size()); }
  uint32_t prefetch_step() const { return k_; }
  uint32_t slot_capacity() const { return capacity_; }
  uint64_t slot_bytes() const { return slot_bytes_; }
  // The offloaded constants of `layer` (empty for a layer that is not offloaded or out of range).
  const std::vector<OffloadedConstant>& layer_constants(uint32_t layer) const;
  bool is_offloaded_layer(uint32_t layer) const { return layer < num_layers_ && pos_[layer] >= 0; }
  const std::shared_ptr<Container>& container() const { return container_; }
  // The slot pool's base (device memory, tag kOffload; fixed for the offloader's life).
  void* pool_base() const { return pool_.data(); }
  // Whether a run holds the offloader now.
  bool held() const WHARF_EXCLUDES(mu_);
  // How many offloaded layers `run` (the holder) has marked issued so far; 0 for another run.
  uint32_t issued_count(const Run& run) const WHARF_EXCLUDES(mu_);
  // The budget estimated at creation (fixed for the offloader's life).
  const OffloadBudget& budget() const { return budget_; }
  // The slot of the offloaded layer `layer` (its constants sit at slot_base + offset).
  char* slot_base(uint32_t layer) const;
  // Where that slot starts in a ring (the pool or an OffloadTarget's): the same offset in both.
  uint64_t slot_offset(uint32_t layer) const;
  // The bytes of a ring: slot_capacity() * slot_bytes().
  uint64_t ring_bytes() const { return uint64_t(capacity_) * slot_bytes_; }
  // Storage the offloader holds for graphs its callers captured (tests).
  size_t captured_storage() const WHARF_EXCLUDES(mu_);

 private:
  struct Retired {
    std::unique_ptr<Event> event;  // recorded on the copy stream after the run's last copy
    std::shared_ptr<Generation> gen;
  };

  Offloader() = default;
  Status check_holder_locked(const Run& run, const char* what) const WHARF_REQUIRES(mu_);
  // Issues the copies of offloaded index j into its slot on the copy stream.
  Status issue_copy_locked(uint32_t j) WHARF_REQUIRES(mu_);
  // Join and release (end and the run's end hook).
  Status finish_locked(bool from_run_end) WHARF_REQUIRES(mu_);
  void reap_locked() WHARF_REQUIRES(mu_);
  std::string layer_name(uint32_t layer) const;
  // The pinned H2D bandwidth: a short timed copy into the (not yet used) pool on the copy stream.
  Status measure_h2d(uint64_t* bytes_per_second);
  // Fills budget_, logs it, and refuses an exposed budget when the config asks to.
  Status check_budget(const OffloaderConfig& config, const std::string& where);

  std::shared_ptr<Container> container_;
  std::string pattern_;
  uint32_t num_layers_ = 0;
  uint32_t k_ = 1;
  uint32_t capacity_ = 1;
  uint64_t slot_bytes_ = 0;
  std::vector<int> pos_;                                // layer -> offloaded index, or -1
  std::vector<uint32_t> offloaded_;                     // offloaded index -> layer
  std::vector<std::vector<OffloadedConstant>> layers_;  // by layer
  Buffer pool_;                                         // capacity_ * slot_bytes_, tag kOffload
  std::unique_ptr<Stream> copy_stream_;
  std::vector<std::unique_ptr<Event>> copy_done_;  // by offloaded index (copy stream)
  std::vector<std::unique_ptr<Event>> released_;   // by offloaded index (run stream, at issued)
  std::unique_ptr<Event> fork_, join_, prev_end_;
  OffloadBudget budget_;

  mutable Mutex mu_;
  const Run* holder_ WHARF_GUARDED_BY(mu_) = nullptr;
  Stream* stream_ WHARF_GUARDED_BY(mu_) = nullptr;         // the holder's stream
  char* ring_ WHARF_GUARDED_BY(mu_) = nullptr;             // the holder's ring (the pool or its target's)
  std::shared_ptr<Generation> gen_ WHARF_GUARDED_BY(mu_);  // the holder's generation
  bool capturing_ WHARF_GUARDED_BY(mu_) = false;
  uint32_t copied_ WHARF_GUARDED_BY(mu_) = 0;          // offloaded indices whose copies are issued
  uint32_t waited_ WHARF_GUARDED_BY(mu_) = 0;          // ... whose copies the run's stream waited for
  uint32_t issued_ WHARF_GUARDED_BY(mu_) = 0;          // ... marked issued
  bool prev_end_valid_ WHARF_GUARDED_BY(mu_) = false;  // prev_end_ recorded outside a capture
  std::vector<Retired> retired_ WHARF_GUARDED_BY(mu_);
  std::vector<std::shared_ptr<Generation>> captured_gens_ WHARF_GUARDED_BY(mu_);
  // The offloaded constants' storage of those generations: a reference beside the container's
  // own makes an in-place update write fresh storage rather than what a graph copies from.
  std::vector<std::shared_ptr<Slot>> captured_slots_ WHARF_GUARDED_BY(mu_);
};

// Whether `stream` is being captured into a CUDA graph (false on the host backend).
Status stream_is_capturing(Stream& stream, bool* capturing);

}  // namespace wharf

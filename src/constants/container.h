/* SPDX-License-Identifier: Apache-2.0 */
// Container: one model's constant table and its active/inactive generations.
//
// The state machine, the locks and the invariants are written down in docs/concurrency.md;
// in short:
// - `mu_` guards the generation pointers, the open-run bookkeeping and the retire list. It is
//   held only for pointer operations (never around allocation, copies, callbacks or device
//   waits), so a run never waits for an update's copies.
// - `update_mu_` admits one writer (update, in-place update, bind, or a weight store update
//   that reaches this container) at a time; a second gets BUSY (try-lock, never a wait).
// - An update builds its generation outside `mu_` from a base it remembers with `version_`;
//   at staging it rebases onto the current base when a swap or free_inactive intervened
//   (or fails with BUSY when derived constants were computed from the old base), so every
//   outcome equals some serial order of the calls.
// - An in-place update overwrites only storage that no other generation, container or
//   store entry references and that no open run pinned; it waits (bounded) for such runs
//   and gives fresh storage to what is still pinned. New runs wait only while the copy into
//   reused storage is in flight (`writing_`), never for other runs.
#pragma once

#include <atomic>
#include <condition_variable>
#include <cstdint>
#include <deque>
#include <functional>
#include <memory>
#include <mutex>
#include <thread>
#include <string>
#include <unordered_map>
#include <vector>

#include "constants/constant_map.h"
#include "constants/generation.h"
#include "core/progress.h"
#include "core/sync.h"
#include "core/tensor.h"
#include "device/runtime.h"

namespace wharf {

enum class Placement : int { kDevice = 0, kHost = 1 };
constexpr uint32_t kConstantDerived = 0x1;

struct ConstantDecl {
  std::string fqn;
  DType dtype = DType::kF32;
  std::vector<int64_t> shape;
  Placement placement = Placement::kDevice;
  uint32_t flags = 0;
  uint64_t nbytes = 0;  // filled by Container::create
  bool derived() const { return flags & kConstantDerived; }
};

class Container;

// Told when a container is about to serve a generation it has not served before, so work for
// that generation can be done on the writer's thread instead of at its first run (src/graphs
// folds the generation's constants and points a spare graph at it: docs/decisions.md, "CUDA
// graphs", "Preparing for a swap"). Containers hold listeners weakly (add_listener); the
// interface keeps src/constants free of what listens.
class GenerationListener {
 public:
  virtual ~GenerationListener() = default;
  // `gen` was staged (the next swap makes it active), or is about to be published by an
  // in-place update. Called on the writer's thread, with no container lock held but the
  // write's admission (a second write of the container answers BUSY meanwhile); nothing it
  // does can fail the write. It must not write or swap the container.
  virtual void generation_staged(const std::shared_ptr<Generation>& gen) = 0;
};

// Computes derived constants of `target` (a generation of `c`) with work on `stream`.
using FoldFn = std::function<Status(const std::shared_ptr<Container>& c, const std::shared_ptr<Generation>& target,
                                    Stream& stream)>;

struct UpdateOptions {
  bool in_place = false;
  bool require_full = false;
  FoldFn fold;  // empty = none
  // A native stream (cudaStream_t) whose work so far the update's reads wait for, on the
  // device; nullptr = none. The CUDA backend only.
  void* wait_stream = nullptr;
  // In place: how long to wait for open runs that pinned a written constant before giving
  // that constant fresh storage instead (0 = do not wait).
  uint32_t in_place_max_wait_ms = 1000;
  // Progress and cancellation (wharf_progress_fn); empty = none. Not with in_place.
  ProgressFn progress;
};

// A per-session mutable tensor. `initial` holds the captured initial value (device memory,
// tag STATE); empty means zeros.
struct StateDecl {
  std::string fqn;
  DType dtype = DType::kF32;
  std::vector<int64_t> shape;
  uint64_t nbytes = 0;
  Buffer initial;
};

// A state's initial value as the caller gave it (borrowed for Container::create).
struct StateInit {
  std::string fqn;
  DType dtype = DType::kF32;
  std::vector<int64_t> shape;
  bool has_initial = false;
  TensorMeta meta;  // of the initial value
  const void* data = nullptr;
};

class WeightStore;
class StateArena;

struct ContainerConfig {
  std::string name;
  std::vector<ConstantDecl> constants;
  std::vector<StateInit> states;
  std::shared_ptr<WeightStore> store;  // null = no sharing
  uint64_t max_session_bytes = 0;      // 0 = no budget
  // A state arena (src/sessions/state_arena.h): > 0 keeps the state of up to this many
  // sessions in one allocation per state; 0 = per-session buffers. Or join `arena` (another
  // container's, its states a superset of these); not both.
  uint32_t session_capacity = 0;
  std::shared_ptr<StateArena> arena;
  // The creator loads the container right after creating it (Container::load): until that
  // load returns, weight store updates answer BUSY instead of admitting it, so a container
  // created from a map never fails because a store update ran at the same time.
  bool loading = false;
};

// Checks a source tensor against a declaration (dtype, shape, contiguity, device).
Status validate_constant_source(Runtime& runtime, const ConstantDecl& d, const TensorMeta& src, const void* data);
// An event recorded on `wait_stream` (a native stream; null: none, *out stays null) that an
// update's copies wait for; `what` names the caller in messages ("container 'm'").
Status record_wait_stream(Runtime& runtime, void* wait_stream, const std::string& what, std::unique_ptr<Event>* out);
// Fresh storage for one constant: pinned host memory for host placement, device memory
// otherwise, accounted under the constants tag.
// The memory a constant's slots live in: pinned host memory for host-placed constants.
inline MemKind slot_kind(const ConstantDecl& d) {
  return d.placement == Placement::kHost ? MemKind::kPinnedHost : MemKind::kDevice;
}
Status allocate_constant_slot(Runtime& runtime, const ConstantDecl& d, std::shared_ptr<Slot>* out);

// Slabs (Container::allocate_and_copy, docs/decisions.md): device constants of at most
// kSlabMaxConstantBytes whose size is a multiple of kSlabAlign (so they pack without padding
// and accounting stays the constants' bytes), copied by one update from pageable memory or a
// file, share allocations of at most kSlabBytes.
constexpr uint64_t kSlabMaxConstantBytes = 4ull << 20;
constexpr uint64_t kSlabBytes = 16ull << 20;
constexpr uint64_t kSlabAlign = 256;

struct UserConstant {
  void* data = nullptr;
  TensorMeta meta;
  std::function<void()> release;
};

class Container : public std::enable_shared_from_this<Container> {
 public:
  static Status create(std::shared_ptr<Runtime> runtime, ContainerConfig config, std::shared_ptr<Container>* out);
  ~Container();

  Status update(const ConstantMap& map, const UpdateOptions& opts) WHARF_EXCLUDES(mu_);
  // Loads a complete first set of weights from `map` and publishes it, as one write: the
  // update and the swap run under one writer admission, so no weight store update can stage
  // between them (a store member created from a map is never left with its own swap refused).
  Status load(const ConstantMap& map, const ProgressFn& progress = nullptr) WHARF_EXCLUDES(mu_);
  // The first constant a write of `written` (by constant index; derived ones count as
  // written when `folds`) would leave without storage in the next generation, or -1.
  int first_missing(const std::vector<bool>& written, bool folds) const WHARF_EXCLUDES(mu_);
  // The same over a given base generation (null: none; nothing is locked).
  int first_missing_in(const Generation* base, const std::vector<bool>& written, bool folds) const;
  // Whether the creator's first load is still running (ContainerConfig::loading).
  bool being_loaded() const { return loading_.load(std::memory_order_acquire); }
  Status bind_user_constant(const std::string& fqn, UserConstant uc) WHARF_EXCLUDES(mu_);
  Status swap() WHARF_EXCLUDES(mu_);
  Status free_inactive() WHARF_EXCLUDES(mu_);
  // The inactive generation (staged by an update, or the one a swap rolls back to), or null.
  // A snapshot: it may be freed or replaced as soon as the lock is released (the pointer
  // keeps it alive). The graphs fold it when they capture (graphs/model_graphs.h).
  std::shared_ptr<Generation> inactive_generation() const WHARF_EXCLUDES(mu_) {
    MutexLock lock(mu_);
    return inactive_;
  }
  uint64_t generation() const WHARF_EXCLUDES(mu_);
  // Whether updates were staged since the last swap (a swap would publish them).
  bool staged() const WHARF_EXCLUDES(mu_);

  // Leases: acquire pins the active generation (FAILED_PRECONDITION if none) and returns its
  // id as of the pin; retire records completion on `stream` and keeps the generation until
  // the event fires. With `recorded`, the event is shared (*recorded; null when the record
  // failed): a run's end is recorded once for its generation, its sessions and whatever
  // else orders after it (Run::end_event). A pooled event is recorded again only once
  // nobody else holds it.
  Status acquire(std::shared_ptr<Generation>* out, uint64_t* id) WHARF_EXCLUDES(mu_);
  Status retire(std::shared_ptr<Generation> gen, Stream& stream, std::shared_ptr<Event>* recorded = nullptr)
      WHARF_EXCLUDES(mu_);

  const std::string& name() const { return name_; }
  const std::vector<StateDecl>& states() const { return states_; }
  // The state arena its sessions take slots of (null: per-session buffers). Fixed at create.
  const std::shared_ptr<StateArena>& arena() const { return arena_; }
  int find_state(const std::string& fqn) const;  // -1 if unknown
  // Session budget (max_session_bytes): reserve fails with RESOURCE_EXHAUSTED past it.
  Status reserve_session_bytes(uint64_t bytes);
  void release_session_bytes(uint64_t bytes);
  const std::shared_ptr<WeightStore>& store() const { return store_; }
  const std::vector<ConstantDecl>& decls() const { return decls_; }
  int find(const std::string& fqn) const;  // -1 if unknown
  Runtime& runtime() { return *runtime_; }
  const std::shared_ptr<Runtime>& runtime_ptr() const { return runtime_; }
  // Whether a tensor in `placement` is seen by kernels as device memory.
  DeviceType device_type_of(Placement placement) const;
  bool has_derived() const { return has_derived_; }

  // Listeners told of each generation staged (GenerationListener); held weakly: one that is
  // gone is dropped. Thread-safe.
  void add_listener(std::weak_ptr<GenerationListener> listener) WHARF_EXCLUDES(listeners_mu_);
  // Tells the listeners that `gen` was staged (the writers of this class and MemberSet call
  // it once the generation is staged, outside every container lock).
  void notify_staged(const std::shared_ptr<Generation>& gen) WHARF_EXCLUDES(listeners_mu_);

  // The storage of constant `index` in the active generation (null if none); the answer
  // may be stale once another thread swaps.
  std::shared_ptr<Slot> active_slot(int index) const WHARF_EXCLUDES(mu_);

  // Building blocks of a write, shared with the multi-container writers (weight store,
  // replica group). They touch only a generation under construction (nothing published),
  // so they take no lock; staging and publishing go through MemberSet.
  struct Planned {
    int index;
    const MapEntry* entry;
  };
  // Checks `map` against the declarations (names, dtypes, shapes, sources, require_full,
  // the fold rule); the plan lists (constant index, map entry) in map order.
  Status validate_map(const ConstantMap& map, const UpdateOptions& opts, std::vector<Planned>* plan) const;
  // Fresh storage for constant `index`.
  Status allocate_slot(int index, std::shared_ptr<Slot>* out);
  // Gives each planned constant a fresh slot in `gen` and copies into it, allocating while
  // earlier constants' copies run (TransferEngine's AllocateFn). With `pack`, small constants
  // copied from pageable memory or files share slabs (kSlab*): one allocation per slab, and
  // the transfer engine carries each slab's bytes in as few DMAs as its staging blocks allow
  // instead of one per constant. `progress` (optional) is told base + the bytes done so far.
  Status allocate_and_copy(const std::shared_ptr<Generation>& gen, const std::vector<Planned>& plan,
                           const std::vector<Event*>& wait_for, Progress* progress = nullptr, uint64_t base = 0,
                           bool pack = false);
  // Allocates derived slots of `gen` and runs the fold (no-op without a fold). `written`:
  // the constants this update gave fresh storage (the fold may write them).
  Status fold_into(const std::shared_ptr<Generation>& gen, const UpdateOptions& opts,
                   const std::vector<int>& written = {});

 private:
  // Stages and publishes several containers as one (src/constants/member_set.h): the only
  // code outside this class that takes `mu_` and calls the *_locked functions below.
  friend class MemberSet;
  struct Retired {
    std::shared_ptr<Event> event;
    std::shared_ptr<Generation> gen;
  };
  // Why there is no inactive generation, for the swap's message.
  enum class NoInactive { kNeverStaged, kFirstSwap, kFreed };

  Container() = default;
  Status validate_source(const ConstantDecl& d, const TensorMeta& src, const void* data) const;
  // Takes the writer admission (`update_mu_`, try-lock: BUSY) of an update or load (`what`,
  // for the replica refusal's message) into *out.
  Status admit_writer(const char* what, std::unique_lock<std::mutex>* out) WHARF_EXCLUDES(mu_);
  Status copy_into(const std::shared_ptr<Generation>& gen, const std::vector<Planned>& plan,
                   const std::vector<Event*>& wait_for);
  Status run_fold(const UpdateOptions& opts, const std::shared_ptr<Generation>& gen);
  Status update_inactive(const std::vector<Planned>& plan, const UpdateOptions& opts, Event* source_ready)
      WHARF_EXCLUDES(mu_);
  Status update_in_place(const std::vector<Planned>& plan, const UpdateOptions& opts, Event* source_ready)
      WHARF_EXCLUDES(mu_);
  // The generation an update builds on: the staged one, else a copy of the active one.
  std::shared_ptr<Generation> next_generation_locked() const WHARF_REQUIRES(mu_);
  // Makes `gen` the staged inactive generation; the old one goes to *dead.
  void stage_locked(std::shared_ptr<Generation> gen, std::vector<std::shared_ptr<Generation>>* dead)
      WHARF_REQUIRES(mu_);
  // Checks a swap could happen now (nothing changes). `by_store`: a weight store swap.
  Status check_swap_locked(bool by_store) const WHARF_REQUIRES(mu_);
  void swap_locked(std::vector<std::shared_ptr<Generation>>* dead) WHARF_REQUIRES(mu_);
  // Moves finished runs' generations into *dead, to be destroyed after mu_ is released
  // (freeing storage may call into the driver, which must not happen under mu_).
  void reap_locked(bool all, std::vector<std::shared_ptr<Generation>>* dead) WHARF_REQUIRES(mu_);
  Status take_event_locked(std::shared_ptr<Event>* out) WHARF_REQUIRES(mu_);
  // Whether `slot` (constant `index` of the active generation) is referenced by anything
  // but this container's own generations: another container, a store entry, a builder.
  bool shared_elsewhere_locked(int index, std::shared_ptr<Slot> slot) const WHARF_REQUIRES(mu_);
  // Whether a generation other than the active one (rollback, staged) holds `slot` at `index`.
  bool in_other_generation_locked(int index, const std::shared_ptr<Slot>& slot) const WHARF_REQUIRES(mu_);
  // Whether an open run pinned a generation holding `slot` at `index`.
  bool pinned_locked(int index, const std::shared_ptr<Slot>& slot) const WHARF_REQUIRES(mu_);
  void check_invariants_locked() const WHARF_REQUIRES(mu_);
  // FAILED_PRECONDITION when this container is a replica of a replica group, whose members
  // are written and swapped only through the group (`what` names the refused call).
  Status check_not_replica_locked(const char* what) const WHARF_REQUIRES(mu_);
  // Drops the inactive generation (free_inactive's effect, checks left to the caller).
  void drop_inactive_locked(std::vector<std::shared_ptr<Generation>>* dead) WHARF_REQUIRES(mu_);

  std::shared_ptr<Runtime> runtime_;
  std::string name_;
  std::vector<ConstantDecl> decls_;
  std::unordered_map<std::string, int> index_;
  bool has_derived_ = false;
  std::vector<StateDecl> states_;
  std::unordered_map<std::string, int> state_index_;
  std::shared_ptr<StateArena> arena_;
  uint64_t max_session_bytes_ = 0;
  std::atomic<uint64_t> session_bytes_{0};
  std::atomic<bool> loading_{false};  // ContainerConfig::loading, until the first load returns
  std::shared_ptr<WeightStore> store_;

  mutable Mutex mu_;
  std::condition_variable cv_;  // writing_ cleared; a generation's open runs dropped to zero
  std::shared_ptr<Generation> active_ WHARF_GUARDED_BY(mu_);
  std::shared_ptr<Generation> inactive_ WHARF_GUARDED_BY(mu_);
  NoInactive no_inactive_ WHARF_GUARDED_BY(mu_) = NoInactive::kNeverStaged;
  bool staged_ WHARF_GUARDED_BY(mu_) = false;         // inactive_ was written by updates since the last swap
  bool store_pending_ WHARF_GUARDED_BY(mu_) = false;  // inactive_ holds a store update not yet store-swapped
  bool in_place_ WHARF_GUARDED_BY(mu_) = false;       // an in-place update is running (swaps: BUSY)
  bool writing_ WHARF_GUARDED_BY(mu_) = false;        // it is writing reused storage (new runs wait)
  std::thread::id writer_ WHARF_GUARDED_BY(mu_);      // the thread doing that write
  uint64_t version_ WHARF_GUARDED_BY(mu_) = 0;        // bumped whenever active_ or inactive_ changes
  uint64_t last_id_ WHARF_GUARDED_BY(mu_) = 0;
  // Generations with open runs (Generation::open_runs > 0), each once.
  std::vector<std::shared_ptr<Generation>> open_gens_ WHARF_GUARDED_BY(mu_);
  std::deque<Retired> retired_ WHARF_GUARDED_BY(mu_);
  // Completed retire events; one still held elsewhere (retire's `recorded`) is not reused.
  std::vector<std::shared_ptr<Event>> event_pool_ WHARF_GUARDED_BY(mu_);
  // The replica group this container belongs to (null: none) and its index there.
  const void* replica_group_ WHARF_GUARDED_BY(mu_) = nullptr;
  size_t replica_index_ WHARF_GUARDED_BY(mu_) = 0;

  std::mutex update_mu_;  // one writer at a time (try-lock: BUSY)

  // Not under mu_: listeners are called with no container lock held.
  Mutex listeners_mu_;
  std::vector<std::weak_ptr<GenerationListener>> listeners_ WHARF_GUARDED_BY(listeners_mu_);
};

using DeadList = std::vector<std::shared_ptr<Generation>>;

}  // namespace wharf

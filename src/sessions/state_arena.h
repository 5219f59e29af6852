/* SPDX-License-Identifier: Apache-2.0 */
// StateArena: the state of up to `capacity` sessions in one allocation per state tensor
// (issue 26). State i lives in an [S, ...shape] buffer, slot-major: session slot k's copy of
// state i starts at storage(i) + k * nbytes(i). Addresses are fixed for the arena's life, so
// a batched kernel can take the arena base and a list of slot indices.
//
// A slot is a session's for the session's life. Taking and returning one is O(1) host work
// (a free list) and never waits for the device: a slot carries the event its last user
// recorded after its last operation, and the next session that takes the slot inherits that
// event as its own "previous operation" (Session::last_), so its first initialisation is
// ordered after the old session's last run on the device, not on the host.
//
// One arena may serve several containers (the methods of a model package share their state
// by FQN): it is created by one container and joined by others whose states are a subset of
// its own (ContainerConfig::arena_from). It never references a container, so containers and
// sessions keep it alive without a cycle.
//
// Batched runs need the sessions' slot indices on the device: an index buffer (capacity
// int64 values, device memory, plus a pinned host copy to write from; tag WORKSPACE) is taken from a small
// pool per batched run and returned at the run's end with an event; a buffer is reused only
// once its event has completed (queried, never waited for), otherwise a new one is
// allocated, so the pool grows to the number of batched runs in flight.
//
// Locking: `mu_` is a leaf lock (free list, pool, counters); never held across device work
// except an event query.
#pragma once

#include <cstdint>
#include <deque>
#include <memory>
#include <string>
#include <unordered_map>
#include <vector>

#include "core/dtype.h"
#include "core/status.h"
#include "core/sync.h"
#include "device/runtime.h"

namespace wharf {

struct StateDecl;

class StateArena {
 public:
  struct State {
    std::string fqn;
    DType dtype = DType::kF32;
    std::vector<int64_t> shape;        // one session's shape
    std::vector<int64_t> arena_shape;  // [capacity, ...shape]
    uint64_t nbytes = 0;               // one session's bytes
    Buffer storage;                    // capacity * nbytes
  };
  // What a session takes: a slot and the slot's ordering event.
  struct Lease {
    uint32_t slot = 0;
    std::unique_ptr<Event> last;         // the slot's own event (never null)
    std::shared_ptr<Event> shared_last;  // set: the previous user's last operation was a batched run's
    bool has_last = false;               // `last` (or shared_last) was recorded
  };
  // A pooled device copy of a batched run's slot indices.
  struct IndexBuffer {
    Buffer device;                // capacity int64 (host memory on the host backend)
    Buffer staging;               // pinned host, capacity int64 (CUDA backend only)
    std::shared_ptr<Event> done;  // the end event of the run that used it (Run::end_event)
    bool has_done = false;
  };

  // `owner` names the creating container in messages. Allocates every state's storage
  // (tag STATE) now; `capacity` >= 1.
  static Status create(std::shared_ptr<Runtime> runtime, const std::string& owner, uint32_t capacity,
                       const std::vector<StateDecl>& decls, std::shared_ptr<StateArena>* out);
  ~StateArena();
  StateArena(const StateArena&) = delete;
  StateArena& operator=(const StateArena&) = delete;

  // Checks that `decls` (of container `who`) are states of this arena with equal dtype and shape.
  Status check_subset(const std::string& who, const std::vector<StateDecl>& decls) const;

  // Takes a free slot (RESOURCE_EXHAUSTED naming the capacity when none is free).
  Status acquire(Lease* out) WHARF_EXCLUDES(mu_);
  // Returns a slot with its event (which must be recorded after the session's last use).
  void release(Lease lease) WHARF_EXCLUDES(mu_);

  Status take_index_buffer(std::unique_ptr<IndexBuffer>* out) WHARF_EXCLUDES(mu_);
  void give_back_index_buffer(std::unique_ptr<IndexBuffer> buf) WHARF_EXCLUDES(mu_);

  uint32_t capacity() const { return capacity_; }
  const std::string& owner() const { return owner_; }
  uint32_t slots_used() const WHARF_EXCLUDES(mu_);
  uint64_t bytes() const { return bytes_; }  // storage of all slots, all states
  int find(const std::string& fqn) const;    // -1 if unknown
  const State& state(size_t i) const { return states_[i]; }
  size_t num_states() const { return states_.size(); }
  void* slot_data(size_t state, uint32_t slot) const {
    return static_cast<char*>(states_[state].storage.data()) + uint64_t(slot) * states_[state].nbytes;
  }
  Runtime& runtime() const { return *runtime_; }

 private:
  StateArena() = default;
  std::shared_ptr<Runtime> runtime_;
  std::string owner_;
  uint32_t capacity_ = 0;
  uint64_t bytes_ = 0;
  std::vector<State> states_;  // fixed after create
  std::unordered_map<std::string, size_t> index_;

  mutable Mutex mu_;
  std::vector<uint32_t> free_ WHARF_GUARDED_BY(mu_);  // a stack: the most recently freed slot first
  // Per slot, while it is free: the event of its last user (null: never used).
  std::vector<std::unique_ptr<Event>> events_ WHARF_GUARDED_BY(mu_);
  std::vector<std::shared_ptr<Event>> shared_ WHARF_GUARDED_BY(mu_);
  std::vector<bool> recorded_ WHARF_GUARDED_BY(mu_);
  std::deque<std::unique_ptr<IndexBuffer>> index_pool_ WHARF_GUARDED_BY(mu_);
};

}  // namespace wharf

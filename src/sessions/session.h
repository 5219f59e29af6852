/* SPDX-License-Identifier: Apache-2.0 */
// Session: one conversation's mutable state (KV caches, recurrent state) over the shared
// weights of one or more containers.
//
// The session is named explicitly by every run (no thread-local "active" session). It owns
// one device buffer per state FQN of its containers; a run resolves state FQNs to them.
// One run at a time (BUSY otherwise). Ordering across streams: every operation that
// touches the state (a run, reset, fork) makes its stream wait for `last_`, the event
// recorded after the previous such operation, and records it again when done; so a
// session can move between streams, and nothing frees the buffers before `last_` fires.
// On the host backend the caller's own thread is the "kernel" (no stream runs the run), so
// begin_run instead waits on the host for `last_` (and for the first initialisation): the
// state is ready to touch when it returns (issue 11, defect 11).
//
// Arena sessions (a container created with a session capacity, src/sessions/state_arena.h):
// the states live in one slot of the container's arena instead of buffers of their own.
// create() takes the slot and inherits its event as `last_` (so everything the session does
// is ordered after the slot's previous user, on the device); the destructor gives the slot
// and `last_` back without waiting. Everything else (lazy initialisation, reset, fork,
// budgets, BUSY) is as for buffers.
//
// A run records one event at its end for its generation and all its sessions (not one per
// session; Run::end_event) and hands it to each as `shared_last_`, which then stands for
// `last_` until the session records its own again (reset, fork); a batched run's begin waits
// once per distinct event, so a decode loop over the same N sessions costs one wait and one
// record per step, not N of each.
//
// Locking: `mu_` is per session and guards the flags, the states (their buffers) and
// `last_`; it is held across enqueueing and, on the host backend, across the wait in
// begin_run for the session's own previous operation (nobody else may use the session
// meanwhile anyway); never across another session's lock except in fork (source then new,
// which nobody else can see yet). What create() sets and never changes (runtime_,
// containers_, index_, bytes_, reserved_) is read without it.
#pragma once

#include <cstdint>
#include <memory>
#include <string>
#include <unordered_map>
#include <vector>

#include "constants/container.h"
#include "core/sync.h"
#include "device/runtime.h"
#include "sessions/state_arena.h"

namespace wharf {

struct SessionOptions {
  uint64_t max_state_bytes = 0;  // 0 = no limit
  bool allocate_eagerly = false;
};

struct StateView {
  void* data = nullptr;
  DType dtype = DType::kF32;
  const std::vector<int64_t>* shape = nullptr;
  uint64_t nbytes = 0;
};

class Session {
 public:
  static Status create(std::shared_ptr<Runtime> runtime, std::vector<std::shared_ptr<Container>> containers,
                       const SessionOptions& opts, std::shared_ptr<Session>* out);
  ~Session();
  Session(const Session&) = delete;
  Session& operator=(const Session&) = delete;

  Status fork(std::shared_ptr<Session>* out) WHARF_EXCLUDES(mu_);
  Status reset() WHARF_EXCLUDES(mu_);
  uint64_t state_bytes() const { return bytes_; }
  bool covers(const Container* c) const;

  // The run protocol: begin (BUSY if a run is open; allocates and initialises the state on
  // first use; `stream` waits for the previous operation; on the host backend begin itself
  // waits, so the state is ready to touch when it returns), then end (records `last_`).
  // `waited` (may be null): set to the event the stream was made to wait for (or, on the
  // host backend, that begin waited for), left as is when there was none.
  Status begin_run(Stream& stream, const Event** waited = nullptr) WHARF_EXCLUDES(mu_);
  Status end_run(Stream& stream) WHARF_EXCLUDES(mu_);
  // begin_run in two steps, for a batched run's all-or-nothing claim: claim marks the
  // session busy (BUSY if a run is open) and touches nothing else; unclaim undoes only that;
  // prepare_run does the rest of begin_run (on failure the claim is dropped too).
  // `waited` (may be null): the event the stream was last made to wait for by this batch;
  // a session whose previous operation is that same event skips the wait, and otherwise
  // updates it. Only a run's shared end event is ever seen twice (it is not recorded again
  // while a session holds it).
  Status claim() WHARF_EXCLUDES(mu_);
  void unclaim() WHARF_EXCLUDES(mu_);
  Status prepare_run(Stream& stream, const Event** waited = nullptr) WHARF_EXCLUDES(mu_);
  // Ends a run's claim with `done`, the event the run recorded once on its stream after its
  // work (instead of recording the session's own event); not recorded again while held.
  void end_run_shared(std::shared_ptr<Event> done) WHARF_EXCLUDES(mu_);
  // The arena whose slot holds this session's state (null: buffers of its own) and the slot
  // (-1 without an arena). Fixed for the session's life.
  const std::shared_ptr<StateArena>& arena() const { return arena_; }
  int64_t slot() const { return arena_ ? int64_t(slot_) : -1; }
  // A state of this session, or NOT_FOUND. Only for the open run (its buffers are fixed
  // while it is open).
  Status find(const std::string& fqn, StateView* out) const WHARF_EXCLUDES(mu_);

 private:
  struct State {
    std::string fqn;
    DType dtype = DType::kF32;
    std::vector<int64_t> shape;
    uint64_t nbytes = 0;
    const Buffer* initial = nullptr;  // a container's template (kept alive by containers_); null = zeros
    int arena_index = -1;             // the arena's state (arena sessions)
    Buffer buffer;                    // own storage (sessions without an arena)
    void* data = nullptr;             // the state's memory once allocated: buffer or arena slot
  };

  Session() = default;
  Status allocate_locked() WHARF_REQUIRES(mu_);
  Status prepare_locked(Stream& stream, const Event** waited) WHARF_REQUIRES(mu_);  // begin_run after the claim
  Event* last_event_locked() const WHARF_REQUIRES(mu_) { return shared_last_ ? shared_last_.get() : last_.get(); }
  Status initialise_locked(Stream& stream) WHARF_REQUIRES(mu_);  // enqueues initial values into the buffers
  Status order_after_last_locked(Stream& stream, const Event** waited = nullptr) WHARF_REQUIRES(mu_);
  Status record_last_locked(Stream& stream) WHARF_REQUIRES(mu_);
  // On the host backend the caller's own thread is the "kernel": begin_run waits (on the
  // host) until the state is ready, instead of ordering a stream after it.
  bool host_backend() const;

  // Set by create() before the session is shared, then read-only.
  std::shared_ptr<Runtime> runtime_;
  std::vector<std::shared_ptr<Container>> containers_;
  std::unordered_map<std::string, size_t> index_;  // FQN -> position in states_
  uint64_t bytes_ = 0;
  std::vector<Container*> reserved_;   // containers whose session budget holds bytes_
  std::shared_ptr<StateArena> arena_;  // null: buffers of its own
  uint32_t slot_ = 0;                  // arena_'s slot, held from create() to the destructor
  bool has_slot_ = false;

  mutable Mutex mu_;
  std::vector<State> states_ WHARF_GUARDED_BY(mu_);  // the declarations are fixed; buffers change
  bool in_run_ WHARF_GUARDED_BY(mu_) = false;
  bool allocated_ WHARF_GUARDED_BY(mu_) = false;  // every buffer of states_ allocated
  std::unique_ptr<Event> last_ WHARF_GUARDED_BY(mu_);
  std::shared_ptr<Event> shared_last_ WHARF_GUARDED_BY(mu_);  // set: the last operation was a run (its end event)
  bool has_last_ WHARF_GUARDED_BY(mu_) = false;               // last_ (or shared_last_) was recorded at least once
};

}  // namespace wharf

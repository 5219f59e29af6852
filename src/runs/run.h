/* SPDX-License-Identifier: Apache-2.0 */
// Run (lease): one generation of one container pinned for one execution, with a binding
// table from FQN to storage. Ending a run records an event on its stream; the generation
// (and every slot it references) is kept until that event completes.
#pragma once

#include <functional>
#include <memory>
#include <vector>
#include <string>

#include "constants/container.h"
#include "core/sync.h"
#include "sessions/session.h"

namespace wharf {

// A resolved constant or session state. `shape` points into the container or session,
// which the run keeps alive.
struct BoundTensor {
  void* data = nullptr;
  DType dtype = DType::kF32;
  const std::vector<int64_t>* shape = nullptr;
  uint64_t nbytes = 0;
  DeviceType device_type = DeviceType::kCpu;
  int device_index = 0;
  // The memory must not be written: a constant (its storage is shared with other
  // generations, containers and open runs), except in a fold's run a derived constant or
  // one the update gave fresh storage (Generation::fold_writable).
  bool read_only = false;
};

class Run {
 public:
  // `native_stream` is a caller's cudaStream_t, or nullptr for the runtime's stream.
  // `session` may be null for a container without states.
  static Status begin(std::shared_ptr<Container> container, std::shared_ptr<Session> session, void* native_stream,
                      std::unique_ptr<Run>* out);
  // A batched run over `sessions` (>= 1, distinct) of the container's state arena: one
  // generation pinned for all, every session claimed for the run's life (all or nothing: a
  // busy session fails the whole call, BUSY, nothing held), the sessions' slot indices on
  // the device (slot_indices) and the states as whole-arena views ([capacity, ...shape]).
  static Status begin_batch(std::shared_ptr<Container> container, std::vector<std::shared_ptr<Session>> sessions,
                            void* native_stream, std::unique_ptr<Run>* out);
  // A run over a generation that is being written (the fold callback's view).
  static std::unique_ptr<Run> over(std::shared_ptr<Container> container, std::shared_ptr<Generation> gen,
                                   Stream& stream);
  ~Run();

  Status tensor(const std::string& fqn, BoundTensor* out) const;
  // Whether constant `index` must not be written through this run (BoundTensor::read_only).
  bool constant_read_only(size_t index) const;
  // Copies [offset, offset+bytes) of a constant to host memory, ordered on the run's stream.
  Status read(const std::string& fqn, uint64_t offset, void* dst, uint64_t bytes) const;
  uint64_t generation() const { return gen_id_; }
  Stream& stream() const { return *stream_; }
  // Records completion and releases the lease (once; later calls are no-ops).
  Status end() WHARF_EXCLUDES(at_end_mu_);

 private:
  Run() = default;
  // Runs on the caller's stream (wrapped) when `native_stream` is given, else the runtime's.
  Status use_stream(Runtime& rt, void* native_stream);
  std::shared_ptr<Container> container_;
  std::shared_ptr<Generation> gen_;
  std::shared_ptr<Session> session_;  // null: no session
  std::unique_ptr<Stream> wrapped_;   // when the caller gave a stream
  Stream* stream_ = nullptr;
  uint64_t gen_id_ = 0;
  bool leased_ = false;                          // end() must retire it
  bool fold_ = false;                            // a fold callback's run (over()): some constants are writable
  std::vector<std::shared_ptr<Session>> batch_;  // a batched run's sessions
  std::shared_ptr<Event> end_event_;             // recorded at its end (end_event)
  const Event* begun_after_ = nullptr;           // begun_after
  std::shared_ptr<StateArena> arena_;            // the sessions' arena (null: none)
  std::vector<int64_t> slots_;                   // host copy of the slot indices
  std::vector<int64_t> slots_shape_;             // {N}
  std::unique_ptr<StateArena::IndexBuffer> index_;
  // Puts slots_ in an index buffer on the run's stream (ready when begin returns on the
  // host backend).
  Status upload_slots();
  // A state of the arena as a whole-arena view (batched runs).
  Status arena_state(int arena_index, BoundTensor* out) const;

 public:
  // Index access for the C API's hot path (no name lookup for constants): constant `index`
  // of the container's declarations (INVALID_ARGUMENT out of range), and state `index` of the
  // container's state declarations, resolved in the run's session (FAILED_PRECONDITION when
  // the run has none, as a fold's run).
  Status tensor_at(int index, BoundTensor* out) const;
  Status state_at(int index, BoundTensor* out) const;
  // State `index` of the container as the whole arena ([capacity, ...shape], writable) in
  // any run over sessions of a state arena, batched or of one session (a method compiled
  // over the whole arena binds it so; its slot indices say which rows are the run's):
  // FAILED_PRECONDITION when the run's sessions hold no arena slot.
  Status arena_state_at(int index, BoundTensor* out) const;
  // The run's slot indices on the host, in the order of its sessions (empty without an arena).
  const std::vector<int64_t>& slots() const { return slots_; }
  // The run's one session (null for a batched run, a run without session or a fold's run).
  const std::shared_ptr<Session>& session() const { return session_; }
  // Batched runs (begin_batch): the sessions in the caller's order (empty otherwise).
  bool batched() const { return !batch_.empty(); }
  const std::vector<std::shared_ptr<Session>>& batch() const { return batch_; }
  // The slot indices of the run's sessions, int64 [N], in device memory (read-only), for a
  // run over sessions of a state arena; FAILED_PRECONDITION otherwise.
  Status slot_indices(BoundTensor* out) const;
  const std::shared_ptr<Container>& container() const { return container_; }

  // The generation the run pinned (null after end).
  const std::shared_ptr<Generation>& pinned_generation() const { return gen_; }
  // Runs `fn` when the run ends, after its completion is recorded on its stream (what a
  // model run allocated for the caller is released then, stream-ordered). Thread-safe.
  void at_end(std::function<void()> fn) WHARF_EXCLUDES(at_end_mu_);
  // Inside at_end callbacks (null elsewhere): the event recorded on the run's stream at its
  // end, which its generation and sessions order after too (one record per run), for later
  // work to wait on; null when that record failed (the caller then orders by other means).
  // Held events are not recorded again.
  const std::shared_ptr<Event>& end_event() const { return end_event_; }
  // The event the run's stream was made to wait for at begin (its session's last operation,
  // for a batch the last one waited for), or null: the run's work is ordered after that
  // point already. A session holds the event for the run's whole life, so it is not
  // recorded again meanwhile: an equal pointer is the same point of a stream.
  const Event* begun_after() const { return begun_after_; }

 private:
  // Leaf: held only to add or take the callbacks, never while one runs.
  Mutex at_end_mu_;
  std::vector<std::function<void()>> at_end_ WHARF_GUARDED_BY(at_end_mu_);
};

}  // namespace wharf

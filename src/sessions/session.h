// Session: one conversation's mutable state (KV caches, recurrent state) over the shared
// weights of one or more containers.
//
// The session is named explicitly by every run (no thread-local "active" session). It owns
// one device buffer per state FQN of its containers; a run resolves state FQNs to them.
// One run at a time (BUSY otherwise). Ordering across streams: every operation that
// touches the state (a run, reset, fork) makes its stream wait for `last_`, the event
// recorded after the previous such operation, and records it again when done; so a
// session can move between streams, and nothing frees the buffers before `last_` fires.
//
// Locking: `mu_` is per session and guards the flags, the buffers and `last_`; it is held
// across enqueueing (not across device waits), never across another session's lock except
// in fork (source then new, which nobody else can see yet).
#pragma once

#include <cstdint>
#include <memory>
#include <mutex>
#include <string>
#include <unordered_map>
#include <vector>

#include "constants/container.h"
#include "device/runtime.h"

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

  Status fork(std::shared_ptr<Session>* out);
  Status reset();
  uint64_t state_bytes() const { return bytes_; }
  bool covers(const Container* c) const;

  // The run protocol: begin (BUSY if a run is open; allocates and initialises the state on
  // first use; `stream` waits for the previous operation; on the host backend begin itself
  // waits, so the state is ready to touch when it returns), then end (records `last_`).
  Status begin_run(Stream& stream);
  Status end_run(Stream& stream);
  // A state of this session, or NOT_FOUND.
  Status find(const std::string& fqn, StateView* out) const;

 private:
  struct State {
    std::string fqn;
    DType dtype = DType::kF32;
    std::vector<int64_t> shape;
    uint64_t nbytes = 0;
    const Buffer* initial = nullptr;  // a container's template (kept alive by containers_); null = zeros
    Buffer buffer;
  };

  Session() = default;
  Status allocate_locked();
  Status initialise_locked(Stream& stream);  // enqueues initial values into the buffers
  Status order_after_last_locked(Stream& stream);
  Status record_last_locked(Stream& stream);
  // On the host backend the caller's own thread is the "kernel": begin_run waits (on the
  // host) until the state is ready, instead of ordering a stream after it.
  bool host_backend() const;

  std::shared_ptr<Runtime> runtime_;
  std::vector<std::shared_ptr<Container>> containers_;
  std::vector<State> states_;
  std::unordered_map<std::string, size_t> index_;
  uint64_t bytes_ = 0;
  std::vector<Container*> reserved_;  // containers whose session budget holds bytes_

  mutable std::mutex mu_;
  bool in_run_ = false;
  bool allocated_ = false;
  std::unique_ptr<Event> last_;
  bool has_last_ = false;
};

}  // namespace wharf

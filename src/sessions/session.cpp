// SPDX-License-Identifier: Apache-2.0
#include "sessions/session.h"

#include <algorithm>

#include "core/logging.h"
#include "core/text.h"

namespace wharf {

Status Session::create(std::shared_ptr<Runtime> runtime, std::vector<std::shared_ptr<Container>> containers,
                       const SessionOptions& opts, std::shared_ptr<Session>* out) {
  if (containers.empty()) return InvalidArgument("session: at least one container is required");
  std::shared_ptr<Session> s(new Session());
  s->runtime_ = std::move(runtime);
  // Merge the containers' state declarations: one buffer per FQN.
  std::vector<State> states;
  std::vector<std::string> declared_by;
  for (const auto& c : containers) {
    if (!c) return InvalidArgument("session: a container is NULL");
    if (&c->runtime() != s->runtime_.get())
      return InvalidArgument("session: container " + quote_name(c->name()) + " belongs to another runtime");
    if (std::count(containers.begin(), containers.end(), c) > 1)
      return InvalidArgument("session: container " + quote_name(c->name()) + " is listed twice");
    for (const StateDecl& d : c->states()) {
      auto it = s->index_.find(d.fqn);
      if (it != s->index_.end()) {
        const State& e = states[it->second];
        if (e.dtype != d.dtype || e.shape != d.shape)
          return InvalidArgument("session: state " + quote_name(d.fqn) + " is declared " + dtype_name(d.dtype) + " " +
                                 shape_string(d.shape) + " by container " + quote_name(c->name()) + " but " +
                                 dtype_name(e.dtype) + " " + shape_string(e.shape) + " by container " +
                                 quote_name(declared_by[it->second]));
        continue;
      }
      s->index_.emplace(d.fqn, states.size());
      State st;
      st.fqn = d.fqn;
      st.dtype = d.dtype;
      st.shape = d.shape;
      st.nbytes = d.nbytes;
      st.initial = d.initial ? &d.initial : nullptr;
      states.push_back(std::move(st));
      declared_by.push_back(c->name());
      s->bytes_ += d.nbytes;
    }
  }
  // An arena: every container that declares states must hold them in the same one (or none).
  const Container* arena_of = nullptr;
  for (const auto& c : containers) {
    if (c->states().empty()) continue;
    if (!arena_of) {
      arena_of = c.get();
      s->arena_ = c->arena();
    } else if (c->arena() != s->arena_) {
      return InvalidArgument("session: container " + quote_name(c->name()) + " and container " +
                             quote_name(arena_of->name()) +
                             " keep their states in different places (a session covers containers of one state "
                             "arena, or containers without one)");
    }
  }
  if (s->arena_)
    for (State& st : states) st.arena_index = s->arena_->find(st.fqn);  // check_subset made sure it is there
  if (opts.max_state_bytes != 0 && s->bytes_ > opts.max_state_bytes)
    return ResourceExhausted("session: its state needs " + std::to_string(s->bytes_) +
                             " bytes, more than max_state_bytes " + std::to_string(opts.max_state_bytes));
  s->containers_ = std::move(containers);
  // Reserve against every container's budget; the destructor releases what was reserved.
  for (const auto& c : s->containers_) {
    WHARF_RETURN_IF_ERROR(c->reserve_session_bytes(s->bytes_));
    s->reserved_.push_back(c.get());
  }
  std::unique_ptr<Event> last;
  std::shared_ptr<Event> shared;
  bool has_last = false;
  if (s->arena_) {
    // The slot's previous user is ordered before this one through the slot's event.
    StateArena::Lease lease;
    WHARF_RETURN_IF_ERROR(s->arena_->acquire(&lease));
    s->slot_ = lease.slot;
    s->has_slot_ = true;
    last = std::move(lease.last);
    has_last = lease.has_last;
    shared = std::move(lease.shared_last);
  } else {
    WHARF_RETURN_IF_ERROR(s->runtime_->device().create_event(&last));
  }
  // Nobody else can see the session yet; the lock is for the analysis and costs nothing.
  MutexLock lock(s->mu_);
  s->states_ = std::move(states);
  s->last_ = std::move(last);
  s->shared_last_ = std::move(shared);
  s->has_last_ = has_last;
  if (opts.allocate_eagerly) {
    WHARF_RETURN_IF_ERROR(s->allocate_locked());
    WHARF_RETURN_IF_ERROR(s->initialise_locked(s->runtime_->stream()));
    WHARF_RETURN_IF_ERROR(s->record_last_locked(s->runtime_->stream()));
  }
  *out = s;
  return Status::Ok();
}

Session::~Session() {
  if (has_slot_) {
    // The slot outlives the session: hand it back with the event of its last operation,
    // which the slot's next user is ordered after. No wait here.
    StateArena::Lease lease;
    lease.slot = slot_;
    lease.last = std::move(last_);
    lease.shared_last = std::move(shared_last_);
    lease.has_last = has_last_;
    arena_->release(std::move(lease));
  } else if (has_last_) {
    // The buffers die with this object: wait until the device is done with the last run,
    // reset or fork that used them.
    Status st = last_event_locked()->synchronize();
    if (!st.ok()) {
      WHARF_LOG(kError, "session: waiting for its last run at free: " + st.message() + "; waiting for the device");
      st = runtime_->device().synchronize();
      if (!st.ok()) WHARF_LOG(kError, "session: device synchronize at free: " + st.message());
    }
  }
  for (Container* c : reserved_) c->release_session_bytes(bytes_);
}

bool Session::covers(const Container* c) const {
  for (const auto& x : containers_)
    if (x.get() == c) return true;
  return false;
}

Status Session::allocate_locked() {
  if (allocated_) return Status::Ok();
  if (arena_) {
    for (State& st : states_) st.data = arena_->slot_data(size_t(st.arena_index), slot_);
    allocated_ = true;
    return Status::Ok();
  }
  std::vector<Buffer> bufs(states_.size());
  for (size_t i = 0; i < states_.size(); ++i)
    if (states_[i].nbytes > 0)
      WHARF_RETURN_IF_ERROR(runtime_->device().allocate(MemKind::kDevice, MemTag::kState, states_[i].nbytes,
                                                        "session state " + quote_name(states_[i].fqn), &bufs[i]));
  for (size_t i = 0; i < states_.size(); ++i) {
    WHARF_DCHECK(bufs[i].size() == states_[i].nbytes, "session: a state buffer has the size of its declaration");
    states_[i].buffer = std::move(bufs[i]);
    states_[i].data = states_[i].buffer.data();
  }
  allocated_ = true;
  return Status::Ok();
}

bool Session::host_backend() const { return runtime_->backend() == Backend::kHost; }

Status Session::order_after_last_locked(Stream& stream, const Event** waited) {
  if (!has_last_) return Status::Ok();
  Event* e = last_event_locked();
  if (waited && *waited == e) return Status::Ok();  // this batch's stream already waits for it
  WHARF_RETURN_IF_ERROR(stream.wait(*e).with_context("session: ordering after its previous operation"));
  if (waited) *waited = e;
  return Status::Ok();
}

Status Session::record_last_locked(Stream& stream) {
  WHARF_RETURN_IF_ERROR(stream.record(*last_).with_context("session: recording the end of an operation"));
  shared_last_.reset();
  has_last_ = true;
  return Status::Ok();
}

Status Session::initialise_locked(Stream& stream) {
  WHARF_DCHECK(allocated_, "session: initialising buffers that are not allocated");
  WHARF_RETURN_IF_ERROR(order_after_last_locked(stream));
  for (State& st : states_) {
    if (st.nbytes == 0) continue;
    Status s = st.initial ? stream.copy_async(st.data, st.initial->data(), st.nbytes)
                          : stream.memset_async(st.data, 0, st.nbytes);
    WHARF_RETURN_IF_ERROR(s.with_context("session: initialising state " + quote_name(st.fqn)));
  }
  return Status::Ok();
}

Status Session::begin_run(Stream& stream, const Event** waited) {
  WHARF_RETURN_IF_ERROR(claim());
  return prepare_run(stream, waited);
}

Status Session::claim() {
  MutexLock lock(mu_);
  if (in_run_) return Busy("session: a run is already open on it (one run at a time per session)");
  in_run_ = true;
  return Status::Ok();
}

void Session::unclaim() {
  MutexLock lock(mu_);
  WHARF_DCHECK(in_run_, "session: unclaim without a claim");
  in_run_ = false;
}

Status Session::prepare_run(Stream& stream, const Event** waited) {
  MutexLock lock(mu_);
  WHARF_DCHECK(in_run_, "session: prepare_run without a claim");
  Status st = prepare_locked(stream, waited);
  if (!st.ok()) in_run_ = false;
  return st;
}

Status Session::prepare_locked(Stream& stream, const Event** waited) {
  if (!allocated_) {
    WHARF_RETURN_IF_ERROR(allocate_locked());
    Status st = initialise_locked(stream);
    if (!st.ok()) {
      // Not initialised: free the buffers so the next run starts over.
      for (State& s : states_) {
        s.buffer.reset();
        s.data = nullptr;
      }
      allocated_ = false;
      return st;
    }
    if (host_backend()) {
      // The caller's thread is the kernel: the initial values must be in place on return.
      st = record_last_locked(stream);
      if (st.ok()) st = last_->synchronize().with_context("session: waiting for its initialisation");
      if (!st.ok()) return st;  // allocated and enqueued: the next run waits for last_ again
    }
  } else if (host_backend()) {
    // Everything that touched the state (initialisation, reset, fork, the previous run's
    // stream work) is captured by last_: wait for it here rather than on the stream.
    if (has_last_ && !(waited && *waited == last_event_locked())) {
      WHARF_RETURN_IF_ERROR(
          last_event_locked()->synchronize().with_context("session: waiting for its previous operation"));
      if (waited) *waited = last_event_locked();
    }
  } else {
    WHARF_RETURN_IF_ERROR(order_after_last_locked(stream, waited));
  }
  WHARF_DCHECK(allocated_, "session: a run begins only over allocated state");
  return Status::Ok();
}

Status Session::end_run(Stream& stream) {
  MutexLock lock(mu_);
  WHARF_DCHECK(in_run_, "session: end_run without an open run");
  in_run_ = false;
  Status st = record_last_locked(stream);
  if (!st.ok()) {
    // Without the event the run's end is unknown: order the next user after the device.
    has_last_ = false;
    shared_last_.reset();
    Status s2 = runtime_->device().synchronize();
    if (!s2.ok()) WHARF_LOG(kError, "session: device synchronize after a failed record: " + s2.message());
  }
  return st;
}

void Session::end_run_shared(std::shared_ptr<Event> done) {
  MutexLock lock(mu_);
  WHARF_DCHECK(in_run_, "session: end_run_shared without an open run");
  in_run_ = false;
  shared_last_ = std::move(done);
  has_last_ = true;
}

Status Session::find(const std::string& fqn, StateView* out) const {
  auto it = index_.find(fqn);
  if (it == index_.end())
    return NotFound(quote_name(fqn) + " is neither a constant of the container nor a state of the session");
  MutexLock lock(mu_);
  WHARF_DCHECK(in_run_, "session: a state is handed out only to the open run");
  const State& st = states_[it->second];
  out->data = st.data;
  out->dtype = st.dtype;
  out->shape = &st.shape;
  out->nbytes = st.nbytes;
  return Status::Ok();
}

Status Session::reset() {
  MutexLock lock(mu_);
  if (in_run_) return Busy("session reset: a run is open on the session");
  if (!allocated_) return Status::Ok();  // the first run initialises it anyway
  Stream& stream = runtime_->stream();
  WHARF_RETURN_IF_ERROR(initialise_locked(stream));
  return record_last_locked(stream);
}

Status Session::fork(std::shared_ptr<Session>* out) {
  SessionOptions opts;  // the source passed its budgets; the containers' are checked again
  std::shared_ptr<Session> s;
  WHARF_RETURN_IF_ERROR(create(runtime_, containers_, opts, &s));
  MutexLock lock(mu_);
  if (in_run_) return Busy("session fork: a run is open on the source session");
  if (allocated_) {
    MutexLock lock2(s->mu_);
    WHARF_DCHECK(s->states_.size() == states_.size(), "session fork: the copy declares the same states");
    WHARF_RETURN_IF_ERROR(s->allocate_locked());
    Stream& stream = runtime_->stream();
    WHARF_RETURN_IF_ERROR(order_after_last_locked(stream));
    // An arena slot may still be in use by the session that had it before the copy.
    WHARF_RETURN_IF_ERROR(s->order_after_last_locked(stream));
    for (size_t i = 0; i < states_.size(); ++i)
      if (states_[i].nbytes > 0)
        WHARF_RETURN_IF_ERROR(stream.copy_async(s->states_[i].data, states_[i].data, states_[i].nbytes)
                                  .with_context("session fork: copying state " + quote_name(states_[i].fqn)));
    // Both wait for the copy: the new one before it is used, the source before it is written.
    WHARF_RETURN_IF_ERROR(s->record_last_locked(stream));
    WHARF_RETURN_IF_ERROR(record_last_locked(stream));
  }
  *out = std::move(s);
  return Status::Ok();
}

}  // namespace wharf

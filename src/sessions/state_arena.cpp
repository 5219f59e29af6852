// SPDX-License-Identifier: Apache-2.0
#include "sessions/state_arena.h"

#include "constants/container.h"
#include "core/checked.h"
#include "core/logging.h"
#include "core/text.h"

namespace wharf {

Status StateArena::create(std::shared_ptr<Runtime> runtime, const std::string& owner, uint32_t capacity,
                          const std::vector<StateDecl>& decls, std::shared_ptr<StateArena>* out) {
  const std::string what =
      "container " + quote_name(owner) + ": state arena of session_capacity " + std::to_string(capacity);
  if (capacity == 0) return InvalidArgument(what + ": the capacity must be at least 1");
  if (decls.empty()) return InvalidArgument(what + ": the container declares no states to hold");
  std::shared_ptr<StateArena> a(new StateArena());
  a->runtime_ = std::move(runtime);
  a->owner_ = owner;
  a->capacity_ = capacity;
  std::vector<State> states(decls.size());
  for (size_t i = 0; i < decls.size(); ++i) {
    State& s = states[i];
    s.fqn = decls[i].fqn;
    s.dtype = decls[i].dtype;
    s.shape = decls[i].shape;
    s.nbytes = decls[i].nbytes;
    s.arena_shape.push_back(int64_t(capacity));
    s.arena_shape.insert(s.arena_shape.end(), s.shape.begin(), s.shape.end());
    uint64_t total = 0;
    if (!checked_mul(s.nbytes, capacity, &total) || !checked_add(a->bytes_, total, &a->bytes_))
      return InvalidArgument(what + ": state " + quote_name(s.fqn) + " of " + std::to_string(s.nbytes) +
                             " bytes per session overflows 64 bits");
    a->index_.emplace(s.fqn, i);
  }
  // Allocate everything before anything is kept: a failure leaves nothing behind.
  for (State& s : states)
    if (s.nbytes > 0)
      WHARF_RETURN_IF_ERROR(a->runtime_->device().allocate(
          MemKind::kDevice, MemTag::kState, s.nbytes * capacity,
          "state arena " + quote_name(s.fqn) + " (" + std::to_string(capacity) + " sessions)", &s.storage));
  a->states_ = std::move(states);
  MutexLock lock(a->mu_);
  a->free_.reserve(capacity);
  for (uint32_t k = capacity; k > 0; --k) a->free_.push_back(k - 1);  // slot 0 is taken first
  a->events_.resize(capacity);
  a->shared_.resize(capacity);
  a->recorded_.assign(capacity, false);
  *out = std::move(a);
  return Status::Ok();
}

StateArena::~StateArena() {
  // Sessions and runs hold the arena, so none is alive; the device may still be running the
  // last work of freed sessions and batched runs: wait for it before the storage goes.
  std::vector<std::unique_ptr<Event>> events;
  std::vector<std::shared_ptr<Event>> shared;
  std::deque<std::unique_ptr<IndexBuffer>> pool;
  {
    MutexLock lock(mu_);
    for (size_t k = 0; k < events_.size(); ++k) {
      if (shared_[k] && recorded_[k])
        shared.push_back(std::move(shared_[k]));
      else if (events_[k] && recorded_[k])
        events.push_back(std::move(events_[k]));
    }
    pool.swap(index_pool_);
  }
  for (auto& b : pool)
    if (b->has_done) shared.push_back(std::move(b->done));
  std::vector<Event*> all;
  for (auto& e : events)
    if (e) all.push_back(e.get());
  for (auto& e : shared) all.push_back(e.get());
  for (Event* e : all) {
    Status st = e->synchronize();
    if (!st.ok()) {
      WHARF_LOG(kError, "state arena of container " + quote_name(owner_) + ": waiting at free: " + st.message());
      st = runtime_->device().synchronize();
      if (!st.ok()) WHARF_LOG(kError, "state arena: device synchronize at free: " + st.message());
      break;
    }
  }
}

int StateArena::find(const std::string& fqn) const {
  auto it = index_.find(fqn);
  return it == index_.end() ? -1 : int(it->second);
}

Status StateArena::check_subset(const std::string& who, const std::vector<StateDecl>& decls) const {
  for (const StateDecl& d : decls) {
    int i = find(d.fqn);
    if (i < 0)
      return InvalidArgument("container " + quote_name(who) + ": state " + quote_name(d.fqn) +
                             " is not held by the state arena of container " + quote_name(owner_) +
                             " (a container joining an arena declares a subset of its states)");
    const State& s = states_[size_t(i)];
    if (s.dtype != d.dtype || s.shape != d.shape)
      return InvalidArgument("container " + quote_name(who) + ": state " + quote_name(d.fqn) + " is declared " +
                             dtype_name(d.dtype) + " " + shape_string(d.shape) + " but " + dtype_name(s.dtype) + " " +
                             shape_string(s.shape) + " by container " + quote_name(owner_) + ", whose arena it joins");
  }
  return Status::Ok();
}

Status StateArena::acquire(Lease* out) {
  std::unique_ptr<Event> fresh;
  for (;;) {
    {
      MutexLock lock(mu_);
      if (free_.empty())
        return ResourceExhausted("state arena of container " + quote_name(owner_) + ": all " +
                                 std::to_string(capacity_) + " slots are in use (session_capacity " +
                                 std::to_string(capacity_) +
                                 "); free a session or create the container with a larger "
                                 "session_capacity");
      uint32_t k = free_.back();
      if (events_[k] || fresh) {
        free_.pop_back();
        out->slot = k;
        out->has_last = recorded_[k];
        out->last = events_[k] ? std::move(events_[k]) : std::move(fresh);
        out->shared_last = std::move(shared_[k]);
        recorded_[k] = false;
        return Status::Ok();
      }
    }
    // A slot never used yet: its event is created outside the lock (it may call the driver).
    WHARF_RETURN_IF_ERROR(runtime_->device().create_event(&fresh));
  }
}

void StateArena::release(Lease lease) {
  MutexLock lock(mu_);
  WHARF_DCHECK(lease.slot < capacity_ && !events_[lease.slot], "state arena: a slot is released once");
  events_[lease.slot] = std::move(lease.last);
  shared_[lease.slot] = std::move(lease.shared_last);
  recorded_[lease.slot] = lease.has_last;
  free_.push_back(lease.slot);
}

uint32_t StateArena::slots_used() const {
  MutexLock lock(mu_);
  return capacity_ - uint32_t(free_.size());
}

Status StateArena::take_index_buffer(std::unique_ptr<IndexBuffer>* out) {
  {
    MutexLock lock(mu_);
    if (!index_pool_.empty()) {
      IndexBuffer& b = *index_pool_.front();  // the oldest: the likeliest to be done
      bool done = !b.has_done;
      if (!done) {
        Status st = b.done->query(&done);
        if (!st.ok()) done = false;  // not known to be done: leave it, take a new one
      }
      if (done) {
        *out = std::move(index_pool_.front());
        index_pool_.pop_front();
        (*out)->has_done = false;
        (*out)->done.reset();  // not held while unused: the container may record it again
        return Status::Ok();
      }
    }
  }
  auto b = std::make_unique<IndexBuffer>();
  const uint64_t bytes = uint64_t(capacity_) * sizeof(int64_t);
  Device& dev = runtime_->device();
  // Workspace, not state: the pool grows with the batched runs in flight, not with sessions.
  WHARF_RETURN_IF_ERROR(dev.allocate(MemKind::kDevice, MemTag::kWorkspace, bytes,
                                     "slot indices of a batched run (state arena of " + quote_name(owner_) + ")",
                                     &b->device));
  if (runtime_->backend() != Backend::kHost)
    WHARF_RETURN_IF_ERROR(
        dev.allocate(MemKind::kPinnedHost, MemTag::kWorkspace, bytes,
                     "pinned slot indices of a batched run (state arena of " + quote_name(owner_) + ")", &b->staging));
  *out = std::move(b);
  return Status::Ok();
}

void StateArena::give_back_index_buffer(std::unique_ptr<IndexBuffer> buf) {
  MutexLock lock(mu_);
  index_pool_.push_back(std::move(buf));
}

}  // namespace wharf

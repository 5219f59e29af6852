// SPDX-License-Identifier: Apache-2.0
#include "runs/run.h"

#include <algorithm>

#include "core/text.h"
#include "core/logging.h"
#include "core/test_hooks.h"

namespace wharf {

Status Run::use_stream(Runtime& rt, void* native_stream) {
  if (!native_stream) {
    stream_ = &rt.stream();
    return Status::Ok();
  }
  WHARF_RETURN_IF_ERROR(rt.device().wrap_stream(native_stream, &wrapped_));
  stream_ = wrapped_.get();
  return Status::Ok();
}

Status Run::begin(std::shared_ptr<Container> container, std::shared_ptr<Session> session, void* native_stream,
                  std::unique_ptr<Run>* out) {
  if (!session && !container->states().empty())
    return FailedPrecondition("container " + quote_name(container->name()) + " declares " +
                              std::to_string(container->states().size()) +
                              " state tensors; a run needs a session (wharf_session_create)");
  if (session && !session->covers(container.get()))
    return InvalidArgument("the session does not cover container " + quote_name(container->name()) +
                           " (create the session with every container it will run)");
  std::unique_ptr<Run> run(new Run());
  Runtime& rt = container->runtime();
  WHARF_RETURN_IF_ERROR(run->use_stream(rt, native_stream));
  if (session) WHARF_RETURN_IF_ERROR(session->begin_run(*run->stream_, &run->begun_after_));
  Status st = container->acquire(&run->gen_, &run->gen_id_);
  if (!st.ok()) {
    if (session) {
      Status s2 = session->end_run(*run->stream_);
      if (!s2.ok()) WHARF_LOG(kError, "run: releasing the session after a failed begin: " + s2.message());
    }
    return st;
  }
  run->leased_ = true;
  run->container_ = std::move(container);
  run->session_ = std::move(session);
  if (run->session_ && run->session_->arena()) {
    // The one session's slot index, as a batched run of one would have it.
    run->arena_ = run->session_->arena();
    run->slots_.push_back(run->session_->slot());
    WHARF_RETURN_IF_ERROR(run->upload_slots());  // on failure ~Run ends the run
  }
  *out = std::move(run);
  return Status::Ok();
}

Status Run::begin_batch(std::shared_ptr<Container> container, std::vector<std::shared_ptr<Session>> sessions,
                        void* native_stream, std::unique_ptr<Run>* out) {
  const std::string what = "batched run of container " + quote_name(container->name());
  const std::shared_ptr<StateArena>& arena = container->arena();
  if (!arena)
    return FailedPrecondition(what + ": the container has no state arena (create it with a session_capacity)");
  if (sessions.empty()) return InvalidArgument(what + ": at least one session is required");
  if (sessions.size() > arena->capacity())
    return InvalidArgument(what + ": " + std::to_string(sessions.size()) + " sessions, more than the arena's " +
                           std::to_string(arena->capacity()) + " slots (session_capacity " +
                           std::to_string(arena->capacity()) + ")");
  std::vector<int64_t> slots(sessions.size());
  for (size_t i = 0; i < sessions.size(); ++i) {
    const auto& s = sessions[i];
    const std::string which = what + ": sessions[" + std::to_string(i) + "]";
    if (!s) return InvalidArgument(which + " is NULL");
    if (!s->covers(container.get()))
      return InvalidArgument(which +
                             " does not cover the container (create the session with every container it will run)");
    if (s->arena() != arena) return InvalidArgument(which + " does not hold its state in the container's arena");
    slots[i] = s->slot();
  }
  {
    // A session's slot is its own: equal slots are the same session twice.
    std::vector<int64_t> sorted = slots;
    std::sort(sorted.begin(), sorted.end());
    auto dup = std::adjacent_find(sorted.begin(), sorted.end());
    if (dup != sorted.end()) {
      size_t first = size_t(std::find(slots.begin(), slots.end(), *dup) - slots.begin());
      size_t second = size_t(std::find(slots.begin() + first + 1, slots.end(), *dup) - slots.begin());
      return InvalidArgument(what + ": sessions[" + std::to_string(first) + "] and sessions[" + std::to_string(second) +
                             "] are the same session");
    }
  }
  std::unique_ptr<Run> run(new Run());
  Runtime& rt = container->runtime();
  WHARF_RETURN_IF_ERROR(run->use_stream(rt, native_stream));
  // All or nothing: claim every session before touching any.
  for (size_t i = 0; i < sessions.size(); ++i) {
    Status st = sessions[i]->claim();
    if (!st.ok()) {
      for (size_t j = 0; j < i; ++j) sessions[j]->unclaim();
      return Status(st.code(), what + ": sessions[" + std::to_string(i) + "]: " + st.message());
    }
  }
  test_hook("run.begin_batch.claimed");
  const Event* waited = nullptr;  // sessions last used by one batch share its event: one wait
  for (size_t i = 0; i < sessions.size(); ++i) {
    Status st = sessions[i]->prepare_run(*run->stream_, &waited);  // on failure its claim is dropped
    if (!st.ok()) {
      for (size_t j = 0; j < i; ++j) {
        Status s2 = sessions[j]->end_run(*run->stream_);
        if (!s2.ok()) WHARF_LOG(kError, "run: releasing a session after a failed batch begin: " + s2.message());
      }
      for (size_t j = i + 1; j < sessions.size(); ++j) sessions[j]->unclaim();
      return st.with_context(what + ": sessions[" + std::to_string(i) + "]");
    }
  }
  Status st = container->acquire(&run->gen_, &run->gen_id_);
  if (!st.ok()) {
    for (const auto& s : sessions) {
      Status s2 = s->end_run(*run->stream_);
      if (!s2.ok()) WHARF_LOG(kError, "run: releasing a session after a failed batch begin: " + s2.message());
    }
    return st;
  }
  run->leased_ = true;
  run->container_ = std::move(container);
  run->batch_ = std::move(sessions);
  run->arena_ = arena;
  run->slots_ = std::move(slots);
  run->begun_after_ = waited;
  WHARF_RETURN_IF_ERROR(run->upload_slots());  // on failure ~Run ends the run
  test_hook("run.begin_batch.pinned");
  *out = std::move(run);
  return Status::Ok();
}

Status Run::upload_slots() {
  slots_shape_ = {int64_t(slots_.size())};
  WHARF_RETURN_IF_ERROR(arena_->take_index_buffer(&index_));
  const uint64_t bytes = slots_.size() * sizeof(int64_t);
  if (container_->runtime().backend() == Backend::kHost) {
    // The caller's thread is the kernel and the "device" memory is host memory: the
    // indices are in place on return. take_index_buffer handed out a buffer nobody reads.
    std::copy(slots_.begin(), slots_.end(), static_cast<int64_t*>(index_->device.data()));
    return Status::Ok();
  }
  // From pinned memory (truly asynchronous); the buffer is reused only after `done`.
  std::copy(slots_.begin(), slots_.end(), static_cast<int64_t*>(index_->staging.data()));
  return stream_->copy_async(index_->device.data(), index_->staging.data(), bytes)
      .with_context("run: copying the slot indices of its sessions");
}

std::unique_ptr<Run> Run::over(std::shared_ptr<Container> container, std::shared_ptr<Generation> gen, Stream& stream) {
  std::unique_ptr<Run> run(new Run());
  run->container_ = std::move(container);
  run->gen_ = std::move(gen);  // being written by its update: no id yet
  run->stream_ = &stream;
  run->fold_ = true;
  return run;
}

bool Run::constant_read_only(size_t index) const {
  return !(fold_ && index < gen_->fold_writable.size() && gen_->fold_writable[index]);
}

Run::~Run() {
  Status st = end();
  if (!st.ok()) WHARF_LOG(kError, "run: ending at destruction: " + st.message());
}

Status Run::tensor(const std::string& fqn, BoundTensor* out) const {
  int idx = container_->find(fqn);
  Placement placement = Placement::kDevice;  // session state always lives with the device
  if (idx < 0) {
    if (batched()) {
      int a = arena_->find(fqn);
      if (a < 0)
        return NotFound(quote_name(fqn) + " is neither a constant of container " + quote_name(container_->name()) +
                        " nor a state of its arena");
      return arena_state(a, out);
    }
    if (!session_)
      return NotFound("constant " + quote_name(fqn) + " is not declared by container " +
                      quote_name(container_->name()) + "");
    StateView v;
    WHARF_RETURN_IF_ERROR(session_->find(fqn, &v));
    out->data = v.data;
    out->dtype = v.dtype;
    out->shape = v.shape;
    out->nbytes = v.nbytes;
  } else {
    const ConstantDecl& d = container_->decls()[idx];
    const std::shared_ptr<Slot>& slot = gen_->slots[idx];
    if (!slot)  // only in a fold over a fresh container; a swapped-in generation is complete
      return FailedPrecondition("constant " + quote_name(fqn) + " has no storage in this generation yet");
    out->data = slot->data();
    out->dtype = d.dtype;
    out->shape = &d.shape;
    out->nbytes = d.nbytes;
    out->read_only = constant_read_only(size_t(idx));
    placement = d.placement;
  }
  out->device_type = container_->device_type_of(placement);
  out->device_index = out->device_type == DeviceType::kCuda ? container_->runtime().device().index() : 0;
  return Status::Ok();
}

Status Run::read(const std::string& fqn, uint64_t offset, void* dst, uint64_t bytes) const {
  BoundTensor b;
  WHARF_RETURN_IF_ERROR(tensor(fqn, &b));
  uint64_t n = b.nbytes;
  if (offset > n || bytes > n - offset)
    return InvalidArgument("" + quote_name(fqn) + ": reading bytes [" + std::to_string(offset) + ", " +
                           std::to_string(offset + bytes) + ") of " + std::to_string(n));
  if (bytes == 0) return Status::Ok();
  if (!dst) return InvalidArgument("" + quote_name(fqn) + ": read destination is NULL");
  WHARF_RETURN_IF_ERROR(stream_->copy_async(dst, static_cast<const char*>(b.data) + offset, bytes));
  return stream_->synchronize().with_context("reading constant " + quote_name(fqn) + "");
}

Status Run::end() {
  if (!leased_) return Status::Ok();
  leased_ = false;
  // One event marks the end for everything that orders after the run: the generation's
  // retirement, its sessions' next runs (Session::end_run_shared) and, through end_event(),
  // the at_end callbacks (the graphs' next replay); each record costs the host ~1 us.
  Status st = container_->retire(std::move(gen_), *stream_, &end_event_);
  if (session_) {
    if (end_event_) {
      session_->end_run_shared(end_event_);
    } else {  // the session records its own event (or waits for the device)
      Status s2 = session_->end_run(*stream_);
      if (st.ok()) st = s2;
    }
  }
  for (const auto& s : batch_) {
    if (end_event_) {
      s->end_run_shared(end_event_);
    } else {
      Status s2 = s->end_run(*stream_);
      if (st.ok()) st = s2;
    }
  }
  if (index_) {
    if (end_event_) {
      index_->done = end_event_;
      index_->has_done = true;
      arena_->give_back_index_buffer(std::move(index_));
    } else {
      // Its last reader is unknown: the buffer is not reused (freed when the device is done).
      Status s3 = stream_->synchronize();
      if (!s3.ok()) WHARF_LOG(kError, "run: synchronize after a failed record: " + s3.message());
      index_.reset();
    }
  }
  std::vector<std::function<void()>> fns;
  {
    MutexLock lock(at_end_mu_);
    fns.swap(at_end_);
  }
  for (auto& fn : fns) fn();
  end_event_.reset();  // for the callbacks only: held, the container would not reuse it
  return st;
}

void Run::at_end(std::function<void()> fn) {
  MutexLock lock(at_end_mu_);
  // A model run adds two (its outputs' owner, the graphs' release or the eager outputs):
  // one allocation for both.
  if (at_end_.empty()) at_end_.reserve(4);
  at_end_.push_back(std::move(fn));
}

Status Run::tensor_at(int index, BoundTensor* out) const {
  const auto& decls = container_->decls();
  if (index < 0 || size_t(index) >= decls.size())
    return InvalidArgument("constant index " + std::to_string(index) + " out of range (container " +
                           quote_name(container_->name()) + " declares " + std::to_string(decls.size()) +
                           " constants)");
  const ConstantDecl& d = decls[size_t(index)];
  const std::shared_ptr<Slot>& slot = gen_->slots[size_t(index)];
  if (!slot) return FailedPrecondition("constant " + quote_name(d.fqn) + " has no storage in this generation yet");
  out->data = slot->data();
  out->dtype = d.dtype;
  out->shape = &d.shape;
  out->nbytes = d.nbytes;
  out->read_only = constant_read_only(size_t(index));
  out->device_type = container_->device_type_of(d.placement);
  out->device_index = out->device_type == DeviceType::kCuda ? container_->runtime().device().index() : 0;
  return Status::Ok();
}

Status Run::state_at(int index, BoundTensor* out) const {
  const auto& states = container_->states();
  if (index < 0 || size_t(index) >= states.size())
    return InvalidArgument("state index " + std::to_string(index) + " out of range (container " +
                           quote_name(container_->name()) + " declares " + std::to_string(states.size()) + " states)");
  const std::string& fqn = states[size_t(index)].fqn;
  if (batched()) return arena_state(arena_->find(fqn), out);
  if (!session_)
    return FailedPrecondition("state " + quote_name(fqn) +
                              ": this run has no session (a fold callback's run reads constants only)");
  StateView v;
  WHARF_RETURN_IF_ERROR(session_->find(fqn, &v));
  out->data = v.data;
  out->dtype = v.dtype;
  out->shape = v.shape;
  out->nbytes = v.nbytes;
  out->device_type = container_->device_type_of(Placement::kDevice);  // state lives with the device
  out->device_index = out->device_type == DeviceType::kCuda ? container_->runtime().device().index() : 0;
  return Status::Ok();
}

}  // namespace wharf

namespace wharf {

Status Run::arena_state_at(int index, BoundTensor* out) const {
  const auto& states = container_->states();
  if (index < 0 || size_t(index) >= states.size())
    return InvalidArgument("state index " + std::to_string(index) + " out of range (container " +
                           quote_name(container_->name()) + " declares " + std::to_string(states.size()) + " states)");
  if (!arena_ || !index_)
    return FailedPrecondition("state " + quote_name(states[size_t(index)].fqn) + ": the run of container " +
                              quote_name(container_->name()) +
                              " holds no slot of a state arena (the container has no session_capacity)");
  return arena_state(arena_->find(states[size_t(index)].fqn), out);
}

Status Run::arena_state(int arena_index, BoundTensor* out) const {
  WHARF_DCHECK(arena_index >= 0, "run: a container's state is in its arena");
  const StateArena::State& a = arena_->state(size_t(arena_index));
  out->data = a.storage.data();
  out->dtype = a.dtype;
  out->shape = &a.arena_shape;
  out->nbytes = a.nbytes * arena_->capacity();
  out->read_only = false;
  out->device_type = container_->device_type_of(Placement::kDevice);
  out->device_index = out->device_type == DeviceType::kCuda ? container_->runtime().device().index() : 0;
  return Status::Ok();
}

Status Run::slot_indices(BoundTensor* out) const {
  if (!index_)
    return FailedPrecondition("run of container " + quote_name(container_->name()) +
                              ": its session holds no slot of a state arena (the container has no session_capacity)");
  out->data = index_->device.data();
  out->dtype = DType::kI64;
  out->shape = &slots_shape_;
  out->nbytes = slots_.size() * sizeof(int64_t);
  out->read_only = true;
  out->device_type = container_->device_type_of(Placement::kDevice);
  out->device_index = out->device_type == DeviceType::kCuda ? container_->runtime().device().index() : 0;
  return Status::Ok();
}

}  // namespace wharf

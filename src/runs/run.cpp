// SPDX-License-Identifier: Apache-2.0
#include "runs/run.h"

#include "core/text.h"
#include "core/logging.h"

namespace wharf {

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
  if (native_stream) {
    WHARF_RETURN_IF_ERROR(rt.device().wrap_stream(native_stream, &run->wrapped_));
    run->stream_ = run->wrapped_.get();
  } else {
    run->stream_ = &rt.stream();
  }
  if (session) WHARF_RETURN_IF_ERROR(session->begin_run(*run->stream_));
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
  *out = std::move(run);
  return Status::Ok();
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
  Status st = container_->retire(std::move(gen_), *stream_);
  if (session_) {
    Status s2 = session_->end_run(*stream_);
    if (st.ok()) st = s2;
  }
  std::vector<std::function<void()>> fns;
  {
    MutexLock lock(at_end_mu_);
    fns.swap(at_end_);
  }
  for (auto& fn : fns) fn();
  return st;
}

void Run::at_end(std::function<void()> fn) {
  MutexLock lock(at_end_mu_);
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

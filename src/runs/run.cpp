#include "runs/run.h"

#include "core/logging.h"

namespace wharf {

Status Run::begin(std::shared_ptr<Container> container, void* native_stream, std::unique_ptr<Run>* out) {
  std::unique_ptr<Run> run(new Run());
  Runtime& rt = container->runtime();
  if (native_stream) {
    WHARF_RETURN_IF_ERROR(rt.device().wrap_stream(native_stream, &run->wrapped_));
    run->stream_ = run->wrapped_.get();
  } else {
    run->stream_ = &rt.stream();
  }
  WHARF_RETURN_IF_ERROR(container->acquire(&run->gen_));
  run->gen_id_ = run->gen_->id;
  run->leased_ = true;
  run->container_ = std::move(container);
  *out = std::move(run);
  return Status::Ok();
}

std::unique_ptr<Run> Run::over(std::shared_ptr<Container> container, std::shared_ptr<Generation> gen,
                               Stream& stream) {
  std::unique_ptr<Run> run(new Run());
  run->container_ = std::move(container);
  run->gen_ = std::move(gen);
  run->gen_id_ = run->gen_->id;
  run->stream_ = &stream;
  return run;
}

Run::~Run() {
  Status st = end();
  if (!st.ok()) WHARF_LOG(kError, "run: ending at destruction: " + st.message());
}

Status Run::tensor(const std::string& fqn, BoundTensor* out) const {
  int idx = container_->find(fqn);
  if (idx < 0)
    return NotFound("constant '" + fqn + "' is not declared by container '" + container_->name() + "'");
  const ConstantDecl& d = container_->decls()[idx];
  const std::shared_ptr<Slot>& slot = gen_->slots[idx];
  if (!slot)  // only in a fold over a fresh container; a swapped-in generation is complete
    return FailedPrecondition("constant '" + fqn + "' has no storage in this generation yet");
  out->data = slot->data();
  out->decl = &d;
  out->device_type = container_->device_type_of(d.placement);
  out->device_index = out->device_type == DeviceType::kCuda ? container_->runtime().device().index() : 0;
  return Status::Ok();
}

Status Run::read(const std::string& fqn, uint64_t offset, void* dst, uint64_t bytes) const {
  BoundTensor b;
  WHARF_RETURN_IF_ERROR(tensor(fqn, &b));
  uint64_t n = b.decl->nbytes;
  if (offset > n || bytes > n - offset)
    return InvalidArgument("constant '" + fqn + "': reading bytes [" + std::to_string(offset) + ", " +
                           std::to_string(offset + bytes) + ") of " + std::to_string(n));
  if (bytes == 0) return Status::Ok();
  if (!dst) return InvalidArgument("constant '" + fqn + "': read destination is NULL");
  WHARF_RETURN_IF_ERROR(stream_->copy_async(dst, static_cast<const char*>(b.data) + offset, bytes));
  return stream_->synchronize().with_context("reading constant '" + fqn + "'");
}

Status Run::end() {
  if (!leased_) return Status::Ok();
  leased_ = false;
  return container_->retire(std::move(gen_), *stream_);
}

}  // namespace wharf

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

Status Run::end() {
  if (!leased_) return Status::Ok();
  leased_ = false;
  return container_->retire(std::move(gen_), *stream_);
}

}  // namespace wharf

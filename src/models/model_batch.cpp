// SPDX-License-Identifier: Apache-2.0
// Methods compiled over a whole state arena (issue 26): how their states are bound and how a
// run's inputs are checked. Host code only, so the unit tests check it without a GPU.
#include "core/text.h"
#include "models/model.h"

namespace wharf {

Status classify_state_binding(const std::string& context, const StateInit& decl, uint64_t bytes, uint32_t capacity,
                              bool whole_arena_required, StateBinding* out) {
  TensorMeta m;
  m.dtype = decl.dtype;
  m.shape = decl.shape;
  const uint64_t one = m.nbytes();
  const std::string declared = "state " + quote_name(decl.fqn) + " is declared " + dtype_name(decl.dtype) + " " +
                               shape_string(decl.shape) + " (" + std::to_string(one) + " bytes per session)";
  const std::string compiled = "the compiled model's buffer is " + std::to_string(bytes) + " bytes";
  // capacity x one without overflow (a buffer that large cannot exist anyway).
  const bool arena_sized = capacity > 0 && one > 0 && bytes % one == 0 && bytes / one == capacity;
  if (whole_arena_required) {
    if (capacity == 0)
      return InvalidArgument(context + ": a method over the whole state arena needs the state arena's capacity");
    if (!arena_sized)
      return InvalidArgument(context + ": " + declared + "; a method over a state arena of " +
                             std::to_string(capacity) + " sessions binds it as [" + std::to_string(capacity) +
                             ", ...] (" + std::to_string(uint64_t(capacity) * one) + " bytes), " + compiled);
    *out = StateBinding::kWholeArena;
    return Status::Ok();
  }
  if (bytes == one) {
    *out = StateBinding::kSession;
    return Status::Ok();
  }
  if (arena_sized) {
    *out = StateBinding::kWholeArena;
    return Status::Ok();
  }
  return InvalidArgument(context + ": " + declared + ", " + compiled +
                         (capacity > 1 ? " (neither one session's nor the state arena's " + std::to_string(capacity) +
                                             " sessions' " + std::to_string(uint64_t(capacity) * one) + " bytes)"
                                       : std::string()));
}

Status resolve_batch_inputs(const std::string& model, const std::vector<std::string>& input_names,
                            const BatchInputs& spec, const BoundTensor& slots, const std::vector<ModelTensor>& inputs,
                            std::vector<ModelTensor>* out) {
  const std::string what = "model " + quote_name(model);
  if (spec.slots < 0 || size_t(spec.slots) >= inputs.size() || !slots.shape || slots.shape->size() != 1)
    return Internal(what + ": the input of slot indices is not known");
  const int64_t n = (*slots.shape)[0];
  const std::string name = quote_name(input_names[size_t(spec.slots)]);
  const ModelTensor& given = inputs[size_t(spec.slots)];
  if (given.data && given.data != slots.data)
    return InvalidArgument(what + ": input " + name +
                           " must be the run's slot indices (wharf_run_get_slot_indices) or an empty view (data NULL), "
                           "which Wharf fills in: a run's model reads and writes only its own sessions' slots");
  if (given.data && (given.meta.dtype != DType::kI64 || given.meta.shape != *slots.shape))
    return InvalidArgument(what + ": input " + name + " is the run's slot indices, int64 " +
                           shape_string(*slots.shape) + ", but is given as " + dtype_name(given.meta.dtype) + " " +
                           shape_string(given.meta.shape));
  for (size_t i = 0; i < spec.batch_dims.size() && i < inputs.size(); ++i) {
    const int d = spec.batch_dims[i];
    if (d < 0 || int(i) == spec.slots) continue;
    const std::vector<int64_t>& shape = inputs[i].meta.shape;
    if (size_t(d) >= shape.size() || shape[size_t(d)] != n)
      return InvalidArgument(what + ": input " + quote_name(input_names[i]) + " has shape " + shape_string(shape) +
                             ": its dimension " + std::to_string(d) + " counts the run's sessions, " +
                             std::to_string(n) + " in this run");
  }
  *out = inputs;
  ModelTensor& t = (*out)[size_t(spec.slots)];
  t.data = slots.data;
  t.meta = TensorMeta();
  t.meta.dtype = DType::kI64;
  t.meta.shape = *slots.shape;
  t.meta.device_type = slots.device_type;
  t.meta.device_index = slots.device_index;
  return Status::Ok();
}

}  // namespace wharf

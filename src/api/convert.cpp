#include "api/handles.h"
#include "api/boundary.h"

namespace wharf {
namespace api {

Status meta_from_view(const wharf_tensor_view& v, const std::string& what, TensorMeta* out) {
  if (v.ndim < 0 || v.ndim > WHARF_MAX_DIMS)
    return InvalidArgument(what + ": ndim " + std::to_string(v.ndim) + " outside 0.." +
                           std::to_string(WHARF_MAX_DIMS));
  if (v.ndim > 0 && !v.shape) return InvalidArgument(what + ": shape is NULL with ndim " + std::to_string(v.ndim));
  const int32_t dtype = api::enum_int(v.dtype), device_type = api::enum_int(v.device_type);
  if (!dtype_valid(dtype)) return InvalidArgument(what + ": unknown dtype value " + std::to_string(dtype));
  if (device_type != WHARF_DEVICE_CPU && device_type != WHARF_DEVICE_CUDA)
    return InvalidArgument(what + ": unknown device type " + std::to_string(device_type));
  TensorMeta m;
  m.dtype = static_cast<DType>(dtype);
  m.shape.assign(v.shape, v.shape + v.ndim);
  if (v.strides) m.strides.assign(v.strides, v.strides + v.ndim);
  m.device_type = device_type == WHARF_DEVICE_CUDA ? DeviceType::kCuda : DeviceType::kCpu;
  m.device_index = v.device_index;
  WHARF_RETURN_IF_ERROR(m.validate(what));
  *out = std::move(m);
  return Status::Ok();
}

Status from_c(wharf_status* st) {
  if (!st) return Status::Ok();
  int code = int(wharf_status_code(st));
  Status out(code > 0 && code <= int(Code::kInternal) ? static_cast<Code>(code) : Code::kInternal,
             wharf_status_message(st));
  wharf_status_free(st);
  return out;
}

void view_from_meta(const TensorMeta& meta, void* data, wharf_tensor_view* out) {
  out->data = data;
  out->dtype = static_cast<wharf_dtype>(meta.dtype);
  out->device_type = meta.device_type == DeviceType::kCuda ? WHARF_DEVICE_CUDA : WHARF_DEVICE_CPU;
  out->device_index = meta.device_index;
  out->ndim = static_cast<int32_t>(meta.shape.size());
  out->shape = meta.shape.empty() ? nullptr : meta.shape.data();
  out->strides = meta.strides.empty() ? nullptr : meta.strides.data();
}

}  // namespace api
}  // namespace wharf

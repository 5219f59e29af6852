// SPDX-License-Identifier: Apache-2.0
// Conversions between the C structs of wharf.h and internal types, and the struct_size rules.
#include <mutex>
#include <shared_mutex>
#include <unordered_map>

#include "api/boundary.h"
#include "api/handles.h"
#include "core/text.h"

namespace wharf {
namespace api {

// --- layouts --------------------------------------------------------------------------------

namespace {

template <class T, size_t N>
StructLayout leading(const char* name, const FieldInfo (&fields)[N]) {
  static_assert(offsetof(T, struct_size) == 0, "every struct begins with struct_size");
  return StructLayout{name, fields, N, sizeof(T), sizeof(uint32_t)};
}

}  // namespace

const StructLayout& layout_of(const wharf_runtime_options*) {
  using T = wharf_runtime_options;
  static const FieldInfo f[] = {WHARF_FIELD(T, struct_size),  WHARF_FIELD(T, backend),
                                WHARF_FIELD(T, device_index), WHARF_FIELD(T, device_memory_limit),
                                WHARF_FIELD(T, copy_threads), WHARF_FIELD(T, staging_bytes)};
  static const StructLayout l = leading<T>("wharf_runtime_options", f);
  return l;
}

const StructLayout& layout_of(const wharf_update_options*) {
  using T = wharf_update_options;
  static const FieldInfo f[] = {WHARF_FIELD(T, struct_size),         WHARF_FIELD(T, target),
                                WHARF_FIELD(T, require_full),        WHARF_FIELD(T, fold),
                                WHARF_FIELD(T, fold_user),           WHARF_FIELD(T, wait_stream),
                                WHARF_FIELD(T, in_place_max_wait_ms)};
  static const StructLayout l = leading<T>("wharf_update_options", f);
  return l;
}

const StructLayout& layout_of(const wharf_session_options*) {
  using T = wharf_session_options;
  static const FieldInfo f[] = {WHARF_FIELD(T, struct_size), WHARF_FIELD(T, max_state_bytes),
                                WHARF_FIELD(T, allocate_eagerly)};
  static const StructLayout l = leading<T>("wharf_session_options", f);
  return l;
}

const StructLayout& layout_of(const wharf_container_options*) {
  using T = wharf_container_options;
  static const FieldInfo f[] = {WHARF_FIELD(T, struct_size),    WHARF_FIELD(T, name),
                                WHARF_FIELD(T, constants),      WHARF_FIELD(T, num_constants),
                                WHARF_FIELD(T, store),          WHARF_FIELD(T, states),
                                WHARF_FIELD(T, num_states),     WHARF_FIELD(T, max_session_bytes),
                                WHARF_FIELD(T, progress),       WHARF_FIELD(T, progress_user),
                                WHARF_FIELD(T, state_arena_of), WHARF_FIELD(T, session_capacity)};
  static const StructLayout l = leading<T>("wharf_container_options", f);
  return l;
}

const StructLayout& layout_of(const wharf_tensor_view*) {
  using T = wharf_tensor_view;
  static const FieldInfo f[] = {WHARF_FIELD(T, struct_size), WHARF_FIELD(T, flags),       WHARF_FIELD(T, data),
                                WHARF_FIELD(T, dtype),       WHARF_FIELD(T, device_type), WHARF_FIELD(T, device_index),
                                WHARF_FIELD(T, ndim),        WHARF_FIELD(T, shape),       WHARF_FIELD(T, strides),
                                WHARF_FIELD(T, byte_offset)};
  static const StructLayout l = leading<T>("wharf_tensor_view", f);
  return l;
}

const StructLayout& layout_of(const wharf_constant_decl*) {
  using T = wharf_constant_decl;
  static const FieldInfo f[] = {WHARF_FIELD(T, struct_size), WHARF_FIELD(T, fqn),   WHARF_FIELD(T, dtype),
                                WHARF_FIELD(T, ndim),        WHARF_FIELD(T, shape), WHARF_FIELD(T, placement),
                                WHARF_FIELD(T, flags)};
  static const StructLayout l = leading<T>("wharf_constant_decl", f);
  return l;
}

const StructLayout& layout_of(const wharf_state_decl*) {
  using T = wharf_state_decl;
  static const FieldInfo f[] = {WHARF_FIELD(T, struct_size), WHARF_FIELD(T, fqn),   WHARF_FIELD(T, dtype),
                                WHARF_FIELD(T, ndim),        WHARF_FIELD(T, shape), WHARF_FIELD(T, initial)};
  static const StructLayout l = leading<T>("wharf_state_decl", f);
  return l;
}

const StructLayout& layout_of(const wharf_device_info*) {
  using T = wharf_device_info;
  static const FieldInfo f[] = {WHARF_FIELD(T, struct_size),   WHARF_FIELD(T, backend),
                                WHARF_FIELD(T, device_index),  WHARF_FIELD(T, name),
                                WHARF_FIELD(T, total_memory),  WHARF_FIELD(T, free_memory),
                                WHARF_FIELD(T, compute_major), WHARF_FIELD(T, compute_minor)};
  static const StructLayout l = leading<T>("wharf_device_info", f);
  return l;
}

const StructLayout& layout_of(const wharf_memory_stats*) {
  using T = wharf_memory_stats;
  static const FieldInfo f[] = {
      WHARF_FIELD(T, struct_size),     WHARF_FIELD(T, current),     WHARF_FIELD(T, peak),
      WHARF_FIELD(T, device_current),  WHARF_FIELD(T, device_peak), WHARF_FIELD(T, pinned_host_current),
      WHARF_FIELD(T, pinned_host_peak)};
  static const StructLayout l = leading<T>("wharf_memory_stats", f);
  return l;
}

const StructLayout& layout_of(const wharf_constant_info*) {
  using T = wharf_constant_info;
  static const FieldInfo f[] = {WHARF_FIELD(T, struct_size), WHARF_FIELD(T, fqn),   WHARF_FIELD(T, dtype),
                                WHARF_FIELD(T, ndim),        WHARF_FIELD(T, shape), WHARF_FIELD(T, placement),
                                WHARF_FIELD(T, flags),       WHARF_FIELD(T, nbytes)};
  static const StructLayout l = leading<T>("wharf_constant_info", f);
  return l;
}

const StructLayout& layout_of(const wharf_state_info*) {
  using T = wharf_state_info;
  static const FieldInfo f[] = {WHARF_FIELD(T, struct_size), WHARF_FIELD(T, fqn),   WHARF_FIELD(T, dtype),
                                WHARF_FIELD(T, ndim),        WHARF_FIELD(T, shape), WHARF_FIELD(T, nbytes)};
  static const StructLayout l = leading<T>("wharf_state_info", f);
  return l;
}

const StructLayout& layout_of(const wharf_weight_store_stats*) {
  using T = wharf_weight_store_stats;
  static const FieldInfo f[] = {WHARF_FIELD(T, struct_size), WHARF_FIELD(T, num_unique_constants),
                                WHARF_FIELD(T, unique_bytes), WHARF_FIELD(T, num_references),
                                WHARF_FIELD(T, saved_bytes)};
  static const StructLayout l = leading<T>("wharf_weight_store_stats", f);
  return l;
}

const StructLayout& layout_of(const wharf_state_arena_stats*) {
  using T = wharf_state_arena_stats;
  static const FieldInfo f[] = {WHARF_FIELD(T, struct_size), WHARF_FIELD(T, num_slots), WHARF_FIELD(T, num_slots_used),
                                WHARF_FIELD(T, num_slots_free), WHARF_FIELD(T, bytes)};
  static const StructLayout l = leading<T>("wharf_state_arena_stats", f);
  return l;
}

// --- struct_size rules ------------------------------------------------------------------------

uint32_t stated_size(const void* p) {
  uint32_t v;
  std::memcpy(&v, p, sizeof v);
  return v;
}

namespace {

// Empty when `size` is a field boundary of L (or past its end); else the field it cuts.
const FieldInfo* field_cut_by(size_t size, const StructLayout& L) {
  if (size >= L.size) return nullptr;
  for (size_t i = 0; i < L.num_fields; ++i) {
    const FieldInfo& f = L.fields[i];
    if (size > f.offset && size < f.offset + f.size) return &f;
  }
  return nullptr;
}

Status check_size_shape(size_t size, const StructLayout& L, const std::string& what) {
  if (size < L.min_size || size > kMaxStructSize)
    return InvalidArgument(what + ": struct_size " + std::to_string(size) + " is outside " +
                           std::to_string(L.min_size) + ".." + std::to_string(kMaxStructSize) + " (set it to sizeof(" +
                           L.name + "))");
  if (const FieldInfo* f = field_cut_by(size, L))
    return InvalidArgument(what + ": struct_size " + std::to_string(size) + " ends inside field " +
                           quote_name(f->name) + " (bytes " + std::to_string(f->offset) + ".." +
                           std::to_string(f->offset + f->size) + " of " + L.name +
                           "); a struct_size is sizeof the struct as compiled");
  return Status::Ok();
}

}  // namespace

Status check_input_size(const void* p, size_t size, const StructLayout& L, const std::string& what) {
  WHARF_RETURN_IF_ERROR(check_size_shape(size, L, what));
  const auto* bytes = static_cast<const unsigned char*>(p);
  for (size_t i = L.size; i < size; ++i)
    if (bytes[i] != 0)
      return Unsupported(what + ": byte " + std::to_string(i) + " of " + L.name + " is non-zero, past the " +
                         std::to_string(L.size) + " bytes this library (wharf " + wharf_version() +
                         ") knows: a field of a newer wharf.h that this library cannot honour");
  return Status::Ok();
}

Status check_output_size(size_t size, const StructLayout& L, const std::string& what, size_t* n) {
  WHARF_RETURN_IF_ERROR(check_size_shape(size, L, what));
  *n = size < L.size ? size : L.size;
  return Status::Ok();
}

size_t output_view_size(const wharf_tensor_view* out) noexcept {
  const StructLayout& L = layout_of(out);
  const size_t size = stated_size(out);
  // (The 0.3 layout ends with byte_offset: keep it so when fields are appended.)
  constexpr size_t kLayout0_3 = offsetof(wharf_tensor_view, byte_offset) + sizeof(uint64_t);
  // No header ever had a smaller view, so a smaller size is never a caller's sizeof: it is
  // garbage (an uninitialised view), even where it falls on a field boundary. Trusting such
  // a size (8 or 16, say) wrote the first fields only and left `data` as it was. A view holds
  // pointers, so any header's sizeof is a multiple of their alignment: another larger size is
  // garbage too (it would be an array's stride: 57 or 60 would misalign every element).
  const bool garbage =
      size < kLayout0_3 || size > kMaxStructSize || size % alignof(wharf_tensor_view) != 0 || field_cut_by(size, L);
  return garbage ? kLayout0_3 : size;
}

void write_view(const wharf_tensor_view& full, wharf_tensor_view* out) noexcept {
  const StructLayout& L = layout_of(out);
  // Never past this library's struct.
  const size_t size = output_view_size(out);
  const size_t n = size < L.size ? size : L.size;
  std::memcpy(static_cast<void*>(out), &full, n);
  out->struct_size = uint32_t(n);
}

// --- tensor views -----------------------------------------------------------------------------

Status meta_from_view(const wharf_tensor_view& in, const std::string& what, TensorMeta* out, void** data) {
  wharf_tensor_view v;
  WHARF_RETURN_IF_ERROR(read_struct(&in, &v, what));
  if ((v.flags & ~WHARF_VIEW_READ_ONLY) != 0)
    return Unsupported(what + ": wharf_tensor_view flags " + std::to_string(v.flags) +
                       " hold bits this library does not know (it knows WHARF_VIEW_READ_ONLY)");
  if (v.ndim < 0 || v.ndim > WHARF_MAX_DIMS)
    return InvalidArgument(what + ": ndim " + std::to_string(v.ndim) + " outside 0.." + std::to_string(WHARF_MAX_DIMS));
  if (v.ndim > 0 && !v.shape) return InvalidArgument(what + ": shape is NULL with ndim " + std::to_string(v.ndim));
  const int32_t dtype = api::enum_int(v.dtype), device_type = api::enum_int(v.device_type);
  if (!dtype_valid(dtype)) return InvalidArgument(what + ": unknown dtype value " + std::to_string(dtype));
  if (device_type != WHARF_DEVICE_CPU && device_type != WHARF_DEVICE_CUDA)
    return InvalidArgument(what + ": unknown device type " + std::to_string(device_type));
  void* p = v.data;
  if (v.byte_offset != 0) {
    if (!p) return InvalidArgument(what + ": byte_offset " + std::to_string(v.byte_offset) + " with NULL data");
    const uintptr_t base = reinterpret_cast<uintptr_t>(p);
    if (v.byte_offset > UINTPTR_MAX - base)
      return InvalidArgument(what + ": data + byte_offset " + std::to_string(v.byte_offset) + " overflows");
    p = reinterpret_cast<void*>(base + uintptr_t(v.byte_offset));
  }
  TensorMeta m;
  m.dtype = static_cast<DType>(dtype);
  m.shape.assign(v.shape, v.shape + v.ndim);
  if (v.strides) m.strides.assign(v.strides, v.strides + v.ndim);
  m.device_type = device_type == WHARF_DEVICE_CUDA ? DeviceType::kCuda : DeviceType::kCpu;
  m.device_index = v.device_index;
  WHARF_RETURN_IF_ERROR(m.validate(what));
  *out = std::move(m);
  *data = p;
  return Status::Ok();
}

Status from_c(wharf_status* st) {
  if (!st) return Status::Ok();
  int code = int(wharf_status_code(st));
  Status out(code > 0 && code <= int(kLastCode) ? static_cast<Code>(code) : Code::kInternal, wharf_status_message(st));
  wharf_status_free(st);
  return out;
}

namespace {

wharf_tensor_view base_view(void* data, DType dtype, DeviceType device_type, int device_index,
                            const std::vector<int64_t>& shape, const int64_t* strides, uint32_t flags) {
  wharf_tensor_view v;
  std::memset(&v, 0, sizeof v);
  v.struct_size = sizeof v;
  v.flags = flags;
  v.data = data;
  v.dtype = static_cast<wharf_dtype>(dtype);
  v.device_type = device_type == DeviceType::kCuda ? WHARF_DEVICE_CUDA : WHARF_DEVICE_CPU;
  v.device_index = device_index;
  v.ndim = static_cast<int32_t>(shape.size());
  v.shape = shape.empty() ? nullptr : shape.data();
  v.strides = strides;
  return v;
}

}  // namespace

void view_from_meta(const TensorMeta& meta, void* data, wharf_tensor_view* out, uint32_t flags) {
  write_view(base_view(data, meta.dtype, meta.device_type, meta.device_index, meta.shape,
                       meta.strides.empty() ? nullptr : meta.strides.data(), flags),
             out);
}

const int64_t* contiguous_strides(const std::vector<int64_t>& shape) {
  if (shape.empty()) return nullptr;
  // Interned by shape for the life of the process: views point into this table, and a
  // process sees few distinct shapes (one entry per distinct shape, whatever the number of
  // containers, runs or calls).
  struct Hash {
    size_t operator()(const std::vector<int64_t>& s) const noexcept {
      size_t h = s.size();
      for (int64_t d : s) h = h * 1000003u ^ std::hash<int64_t>()(d);
      return h;
    }
  };
  static std::shared_mutex mu;
  static auto* table = new std::unordered_map<std::vector<int64_t>, std::vector<int64_t>, Hash>();
  {
    std::shared_lock<std::shared_mutex> lock(mu);
    auto it = table->find(shape);
    if (it != table->end()) return it->second.data();
  }
  TensorMeta m;
  m.shape = shape;
  std::unique_lock<std::shared_mutex> lock(mu);
  auto it = table->emplace(shape, m.contiguous_strides()).first;  // unordered_map nodes never move
  return it->second.data();
}

void view_from_bound(const BoundTensor& b, wharf_tensor_view* out) {
  write_view(base_view(b.data, b.dtype, b.device_type, b.device_index, *b.shape, contiguous_strides(*b.shape),
                       b.read_only ? WHARF_VIEW_READ_ONLY : 0u),
             out);
}

}  // namespace api
}  // namespace wharf

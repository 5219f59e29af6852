// SPDX-License-Identifier: Apache-2.0
// libwharf_aoti_shim.so: the `aoti_torch_*` C functions an AOTInductor-compiled model calls,
// implemented over plain device memory instead of libtorch.
//
// A tensor handle is a WharfAotiTensor: a refcounted storage (owned memory, or memory the
// caller keeps, e.g. a Wharf constant slot) plus sizes, strides, a storage offset, dtype and
// device. Memory the model asks for (aoti_torch_empty_strided, clones) comes from the CUDA
// stream-ordered allocator on the stream the model runs on (set by its stream guard) and is
// freed stream-ordered on that stream, so a buffer released while kernels still use it is
// reused only after them. Every function returns 0 on success and 1 on failure, with the
// reason kept per thread (wharf_aoti_last_error) and logged through the host table.
//
// Values of dtype/device/layout codes are PyTorch's (c10::ScalarType, DeviceType, Layout):
// compiled models read them through the getter functions, never as literals.
#include <cuda_runtime_api.h>

#include <algorithm>
#include <atomic>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <memory>
#include <mutex>
#include <new>
#include <string>
#include <vector>

#include "models/aoti/shim_host.h"
#include "models/aoti/shim_internal.h"

using namespace wharf_aoti;

namespace {

wharf_aoti_host g_host{};
std::mutex g_host_mu;
std::atomic<bool> g_attached{false};

thread_local std::string t_error;
thread_local bool t_grad_enabled = false;
thread_local cudaStream_t t_stream = nullptr;  // the current stream (stream guards set it)
thread_local void (*t_sink)(void*, void*) = nullptr;
thread_local void* t_sink_user = nullptr;
thread_local wharf_aoti_allocator t_allocator{};  // alloc == nullptr: the default allocator

void host_log(bool error, const std::string& m) {
  if (g_attached.load() && g_host.log) g_host.log(error ? 1 : 0, m.c_str(), g_host.user);
}
void host_account(int64_t delta) {
  if (g_attached.load() && g_host.account) g_host.account(delta, g_host.user);
}

}  // namespace

namespace wharf_aoti {

size_t element_size(int32_t dtype) {
  switch (dtype) {
    case kU8:
    case kI8:
    case kBool:
    case kF8E5M2:
    case kF8E4M3FN:
    case kF8E5M2FNUZ:
    case kF8E4M3FNUZ:
      return 1;
    case kI16:
    case kF16:
    case kBF16:
    case kU16:
      return 2;
    case kI32:
    case kF32:
    case kU32:
    case kC32:
      return 4;
    case kI64:
    case kF64:
    case kU64:
    case kC64:
      return 8;
    case kC128:
      return 16;
    default:
      return 0;
  }
}

AOTITorchError fail(const std::string& what) {
  t_error = what;
  host_log(true, "aoti shim: " + what);
  return kFail;
}
AOTITorchError cuda_fail(cudaError_t e, const std::string& what) {
  return fail(what + ": " + cudaGetErrorName(e) + " (" + cudaGetErrorString(e) + ")");
}

void note(const std::string& what) { host_log(false, "aoti shim: " + what); }

bool wharf_allocator_installed() { return t_allocator.alloc != nullptr; }

cudaStream_t current_stream() { return t_stream; }

Storage::~Storage() {
  if (release) release(base, bytes, release_user);
  if (!owned || !base) return;
  if (device_type == kCuda) {
    cudaError_t e = cudaFreeAsync(base, stream);
    if (e != cudaSuccess) host_log(true, std::string("aoti shim: cudaFreeAsync: ") + cudaGetErrorString(e));
  } else {
    std::free(base);
  }
  host_account(-static_cast<int64_t>(bytes));
}

}  // namespace wharf_aoti

namespace {

bool checked_storage_bytes(const std::vector<int64_t>& sizes, const std::vector<int64_t>& strides, size_t elem,
                           uint64_t* out) {
  // (1 + sum (size_i - 1) * stride_i) * elem; 0 for an empty tensor.
  unsigned __int128 extent = 1;
  for (size_t i = 0; i < sizes.size(); ++i) {
    if (sizes[i] < 0 || strides[i] < 0) return false;
    if (sizes[i] == 0) {
      *out = 0;
      return true;
    }
    extent += static_cast<unsigned __int128>(sizes[i] - 1) * static_cast<uint64_t>(strides[i]);
  }
  unsigned __int128 b = extent * elem;
  if (b > (unsigned __int128)(INT64_MAX)) return false;
  *out = static_cast<uint64_t>(b);
  return true;
}

std::vector<int64_t> contiguous_strides(const std::vector<int64_t>& sizes) {
  std::vector<int64_t> s(sizes.size());
  int64_t acc = 1;
  for (size_t i = sizes.size(); i-- > 0;) {
    s[i] = acc;
    acc *= sizes[i] > 1 ? sizes[i] : 1;
  }
  return s;
}

// Non-overlapping and dense: the elements fill [0, numel) of the storage exactly, in some
// order (so a byte copy of that span copies the tensor and keeps its strides).
bool dense(const WharfAotiTensor& t) {
  std::vector<size_t> order(t.sizes.size());
  for (size_t i = 0; i < order.size(); ++i) order[i] = i;
  std::sort(order.begin(), order.end(), [&](size_t a, size_t b) { return t.strides[a] < t.strides[b]; });
  int64_t expected = 1;
  for (size_t i : order) {
    if (t.sizes[i] == 1) continue;
    if (t.sizes[i] == 0) return true;
    if (t.strides[i] != expected) return false;
    expected *= t.sizes[i];
  }
  return true;
}

}  // namespace

namespace wharf_aoti {

int64_t numel(const WharfAotiTensor& t) {
  int64_t n = 1;
  for (int64_t s : t.sizes) n *= s;
  return n;
}

AOTITorchError allocate(uint64_t bytes, int32_t device_type, int32_t device_index, std::shared_ptr<Storage>* out) {
  auto s = std::make_shared<Storage>();
  s->bytes = bytes;
  s->owned = true;
  s->device_type = device_type;
  if (device_type == kCuda && t_allocator.alloc) {
    // Wharf's memory (a graph pool, a generation's folded constants): not owned, not accounted.
    s->owned = false;
    s->stream = t_stream;
    if (t_allocator.alloc(bytes, &s->base, t_allocator.user) != 0)
      return fail("allocating " + std::to_string(bytes) + " bytes from Wharf's allocator failed");
    s->release = t_allocator.free;
    s->release_user = t_allocator.user;
    *out = std::move(s);
    return kOk;
  }
  if (device_type == kCuda) {
    s->stream = t_stream;
    if (bytes > 0) {
      int cur = 0;
      cudaGetDevice(&cur);
      if (cur != device_index) {
        cudaError_t e = cudaSetDevice(device_index);
        if (e != cudaSuccess) return cuda_fail(e, "cudaSetDevice(" + std::to_string(device_index) + ")");
      }
      cudaError_t e = cudaMallocAsync(&s->base, bytes, s->stream);
      if (e != cudaSuccess) {
        s->owned = false;
        return cuda_fail(
            e, "cudaMallocAsync of " + std::to_string(bytes) + " bytes on CUDA device " + std::to_string(device_index));
      }
    }
  } else if (device_type == kCpu) {
    if (bytes > 0) {
      s->base = std::aligned_alloc(64, (bytes + 63) / 64 * 64);
      if (!s->base) {
        s->owned = false;
        return fail("host allocation of " + std::to_string(bytes) + " bytes failed");
      }
    }
  } else {
    s->owned = false;
    return fail("device type " + std::to_string(device_type) + " is not supported (CPU and CUDA are)");
  }
  host_account(static_cast<int64_t>(bytes));
  *out = std::move(s);
  return kOk;
}

}  // namespace wharf_aoti

namespace {

AOTITorchError copy_bytes(void* dst, const void* src, uint64_t bytes) {
  if (bytes == 0) return kOk;
  cudaError_t e = cudaMemcpyAsync(dst, src, bytes, cudaMemcpyDefault, t_stream);
  if (e != cudaSuccess) return cuda_fail(e, "cudaMemcpyAsync of " + std::to_string(bytes) + " bytes");
  return kOk;
}

AOTITorchError make_tensor(std::shared_ptr<Storage> storage, int64_t ndim, const int64_t* sizes, const int64_t* strides,
                           int64_t offset, int32_t dtype, int32_t device_type, int32_t device_index,
                           AtenTensorHandle* ret) {
  if (!ret) return fail("output handle pointer is NULL");
  if (ndim < 0 || (ndim > 0 && !sizes)) return fail("bad rank or NULL sizes");
  if (element_size(dtype) == 0) return fail("dtype code " + std::to_string(dtype) + " is not supported");
  auto t = std::make_unique<WharfAotiTensor>();
  t->storage = std::move(storage);
  t->dtype = dtype;
  t->device_type = device_type;
  t->device_index = device_index;
  t->sizes.assign(sizes, sizes + ndim);
  t->strides = strides ? std::vector<int64_t>(strides, strides + ndim) : contiguous_strides(t->sizes);
  t->offset = offset;
  *ret = t.release();
  return kOk;
}

}  // namespace

// ---- wharf entry points ---------------------------------------------------------------------

SHIM_API int32_t wharf_aoti_attach(const wharf_aoti_host* host) {
  std::lock_guard<std::mutex> lock(g_host_mu);
  if (!host) {
    g_attached.store(false);
    g_host = wharf_aoti_host{};
    return 0;
  }
  g_host = wharf_aoti_host{};
  std::memcpy(&g_host, host, host->struct_size < sizeof g_host ? host->struct_size : sizeof g_host);
  g_attached.store(true);
  return 0;
}

SHIM_API void wharf_aoti_capture(void (*sink)(void*, void*), void* user) {
  t_sink = sink;
  t_sink_user = user;
}

SHIM_API const char* wharf_aoti_last_error(void) { return t_error.c_str(); }

SHIM_API void wharf_aoti_set_allocator(const wharf_aoti_allocator* a) {
  t_allocator = wharf_aoti_allocator{};
  if (a) std::memcpy(&t_allocator, a, a->struct_size < sizeof t_allocator ? a->struct_size : sizeof t_allocator);
}

// ---- constants of the ABI -------------------------------------------------------------------

SHIM_API int32_t aoti_torch_device_type_cpu() { return kCpu; }
SHIM_API int32_t aoti_torch_device_type_cuda() { return kCuda; }
SHIM_API int32_t aoti_torch_device_type_meta() { return kMeta; }
SHIM_API int32_t aoti_torch_device_type_xpu() { return kXpu; }
SHIM_API int32_t aoti_torch_device_type_mps() { return kMps; }
SHIM_API int32_t aoti_torch_device_type_privateuse1() { return kPrivateUse1; }

SHIM_API int32_t aoti_torch_dtype_float8_e5m2() { return kF8E5M2; }
SHIM_API int32_t aoti_torch_dtype_float8_e4m3fn() { return kF8E4M3FN; }
SHIM_API int32_t aoti_torch_dtype_float8_e5m2fnuz() { return kF8E5M2FNUZ; }
SHIM_API int32_t aoti_torch_dtype_float8_e4m3fnuz() { return kF8E4M3FNUZ; }
SHIM_API int32_t aoti_torch_dtype_bfloat16() { return kBF16; }
SHIM_API int32_t aoti_torch_dtype_float16() { return kF16; }
SHIM_API int32_t aoti_torch_dtype_float32() { return kF32; }
SHIM_API int32_t aoti_torch_dtype_float64() { return kF64; }
SHIM_API int32_t aoti_torch_dtype_uint8() { return kU8; }
SHIM_API int32_t aoti_torch_dtype_uint16() { return kU16; }
SHIM_API int32_t aoti_torch_dtype_uint32() { return kU32; }
SHIM_API int32_t aoti_torch_dtype_uint64() { return kU64; }
SHIM_API int32_t aoti_torch_dtype_int8() { return kI8; }
SHIM_API int32_t aoti_torch_dtype_int16() { return kI16; }
SHIM_API int32_t aoti_torch_dtype_int32() { return kI32; }
SHIM_API int32_t aoti_torch_dtype_int64() { return kI64; }
SHIM_API int32_t aoti_torch_dtype_bool() { return kBool; }
SHIM_API int32_t aoti_torch_dtype_complex32() { return kC32; }
SHIM_API int32_t aoti_torch_dtype_complex64() { return kC64; }
SHIM_API int32_t aoti_torch_dtype_complex128() { return kC128; }
SHIM_API size_t aoti_torch_dtype_element_size(int32_t dtype) { return element_size(dtype); }

SHIM_API int32_t aoti_torch_layout_strided() { return 0; }
SHIM_API int32_t aoti_torch_memory_format_contiguous_format() { return 0; }
SHIM_API int32_t aoti_torch_memory_format_channels_last() { return 1; }
SHIM_API int32_t aoti_torch_memory_format_channels_last_3d() { return 2; }
SHIM_API int32_t aoti_torch_memory_format_preserve_format() { return 3; }

SHIM_API bool aoti_torch_grad_mode_is_enabled() { return t_grad_enabled; }
SHIM_API void aoti_torch_grad_mode_set_enabled(bool enabled) { t_grad_enabled = enabled; }

SHIM_API void aoti_torch_warn(const char* func, const char* file, uint32_t line, const char* msg) {
  host_log(false, std::string("model warning: ") + (msg ? msg : "") + " (" + (func ? func : "?") + " at " +
                      (file ? file : "?") + ":" + std::to_string(line) + ")");
}

// ---- tensors ----------------------------------------------------------------------------------

SHIM_API AOTITorchError aoti_torch_delete_tensor_object(AtenTensorHandle tensor) {
  delete tensor;  // NULL is fine
  return kOk;
}

SHIM_API AOTITorchError aoti_torch_get_data_ptr(AtenTensorHandle t, void** ret) {
  if (!t || !ret) return fail("aoti_torch_get_data_ptr: NULL argument");
  *ret = t->data();
  return kOk;
}
SHIM_API AOTITorchError aoti_torch_get_mutable_data_ptr(AtenTensorHandle t, void** ret) {
  return aoti_torch_get_data_ptr(t, ret);
}
SHIM_API AOTITorchError aoti_torch_get_const_data_ptr(AtenTensorHandle t, const void** ret) {
  if (!t || !ret) return fail("aoti_torch_get_const_data_ptr: NULL argument");
  *ret = t->data();
  return kOk;
}
SHIM_API AOTITorchError aoti_torch_get_storage_size(AtenTensorHandle t, int64_t* ret) {
  if (!t || !ret) return fail("aoti_torch_get_storage_size: NULL argument");
  *ret = static_cast<int64_t>(t->storage->bytes);
  return kOk;
}
SHIM_API AOTITorchError aoti_torch_get_dim(AtenTensorHandle t, int64_t* ret) {
  if (!t || !ret) return fail("aoti_torch_get_dim: NULL argument");
  *ret = static_cast<int64_t>(t->sizes.size());
  return kOk;
}
SHIM_API AOTITorchError aoti_torch_get_numel(AtenTensorHandle t, int64_t* ret) {
  if (!t || !ret) return fail("aoti_torch_get_numel: NULL argument");
  *ret = numel(*t);
  return kOk;
}
SHIM_API AOTITorchError aoti_torch_get_storage_numel(AtenTensorHandle t, int64_t* ret) {
  if (!t || !ret) return fail("aoti_torch_get_storage_numel: NULL argument");
  *ret = static_cast<int64_t>(t->storage->bytes / element_size(t->dtype));
  return kOk;
}
SHIM_API AOTITorchError aoti_torch_get_sizes(AtenTensorHandle t, int64_t** ret) {
  if (!t || !ret) return fail("aoti_torch_get_sizes: NULL argument");
  *ret = t->sizes.data();
  return kOk;
}
SHIM_API AOTITorchError aoti_torch_get_size(AtenTensorHandle t, int64_t d, int64_t* ret) {
  if (!t || !ret || d < 0 || d >= int64_t(t->sizes.size())) return fail("aoti_torch_get_size: bad argument");
  *ret = t->sizes[size_t(d)];
  return kOk;
}
SHIM_API AOTITorchError aoti_torch_get_strides(AtenTensorHandle t, int64_t** ret) {
  if (!t || !ret) return fail("aoti_torch_get_strides: NULL argument");
  *ret = t->strides.data();
  return kOk;
}
SHIM_API AOTITorchError aoti_torch_get_stride(AtenTensorHandle t, int64_t d, int64_t* ret) {
  if (!t || !ret || d < 0 || d >= int64_t(t->strides.size())) return fail("aoti_torch_get_stride: bad argument");
  *ret = t->strides[size_t(d)];
  return kOk;
}
SHIM_API AOTITorchError aoti_torch_get_dtype(AtenTensorHandle t, int32_t* ret) {
  if (!t || !ret) return fail("aoti_torch_get_dtype: NULL argument");
  *ret = t->dtype;
  return kOk;
}
SHIM_API AOTITorchError aoti_torch_get_device_type(AtenTensorHandle t, int32_t* ret) {
  if (!t || !ret) return fail("aoti_torch_get_device_type: NULL argument");
  *ret = t->device_type;
  return kOk;
}
SHIM_API AOTITorchError aoti_torch_get_device_index(AtenTensorHandle t, int32_t* ret) {
  if (!t || !ret) return fail("aoti_torch_get_device_index: NULL argument");
  *ret = t->device_index;
  return kOk;
}
SHIM_API AOTITorchError aoti_torch_get_layout(AtenTensorHandle t, int32_t* ret) {
  if (!t || !ret) return fail("aoti_torch_get_layout: NULL argument");
  *ret = 0;
  return kOk;
}
SHIM_API AOTITorchError aoti_torch_get_storage_offset(AtenTensorHandle t, int64_t* ret) {
  if (!t || !ret) return fail("aoti_torch_get_storage_offset: NULL argument");
  *ret = t->offset;
  return kOk;
}
SHIM_API AOTITorchError aoti_torch_is_contiguous(AtenTensorHandle t, bool* ret) {
  if (!t || !ret) return fail("aoti_torch_is_contiguous: NULL argument");
  std::vector<int64_t> c = contiguous_strides(t->sizes);
  bool ok = true;
  for (size_t i = 0; i < c.size(); ++i)
    if (t->sizes[i] != 1 && t->strides[i] != c[i]) ok = false;
  *ret = ok || numel(*t) == 0;
  return kOk;
}
SHIM_API AOTITorchError aoti_torch_is_defined(AtenTensorHandle t, bool* ret) {
  if (!ret) return fail("aoti_torch_is_defined: NULL argument");
  *ret = t != nullptr && t->storage != nullptr;
  return kOk;
}

SHIM_API AOTITorchError aoti_torch_new_tensor_handle(AtenTensorHandle orig, AtenTensorHandle* ret) {
  return guarded("aoti_torch_new_tensor_handle", [&] {
    if (!orig || !ret) return fail("aoti_torch_new_tensor_handle: NULL argument");
    *ret = new WharfAotiTensor(*orig);
    if (t_sink) t_sink(*ret, t_sink_user);
    return kOk;
  });
}

SHIM_API AOTITorchError aoti_torch_create_tensor_from_blob(void* data, int64_t ndim, const int64_t* sizes,
                                                           const int64_t* strides, int64_t storage_offset,
                                                           int32_t dtype, int32_t device_type, int32_t device_index,
                                                           AtenTensorHandle* ret) {
  return guarded("aoti_torch_create_tensor_from_blob", [&] {
    auto s = std::make_shared<Storage>();
    s->base = data;
    s->device_type = device_type;
    std::vector<int64_t> sz(sizes, sizes + (ndim > 0 ? ndim : 0));
    std::vector<int64_t> st = strides ? std::vector<int64_t>(strides, strides + sz.size()) : contiguous_strides(sz);
    uint64_t bytes = 0;
    if (!checked_storage_bytes(sz, st, element_size(dtype), &bytes))
      return fail("aoti_torch_create_tensor_from_blob: sizes/strides out of range");
    s->bytes = bytes + uint64_t(storage_offset) * element_size(dtype);
    return make_tensor(std::move(s), ndim, sizes, strides, storage_offset, dtype, device_type, device_index, ret);
  });
}

SHIM_API AOTITorchError aoti_torch_create_tensor_from_blob_v2(void* data, int64_t ndim, const int64_t* sizes,
                                                              const int64_t* strides, int64_t storage_offset,
                                                              int32_t dtype, int32_t device_type, int32_t device_index,
                                                              AtenTensorHandle* ret, int32_t layout,
                                                              const uint8_t* opaque_metadata,
                                                              int64_t opaque_metadata_size) {
  if (layout != 0) return fail("aoti_torch_create_tensor_from_blob_v2: only the strided layout is supported");
  if (opaque_metadata_size != 0) return fail("aoti_torch_create_tensor_from_blob_v2: opaque metadata is not supported");
  return aoti_torch_create_tensor_from_blob(data, ndim, sizes, strides, storage_offset, dtype, device_type,
                                            device_index, ret);
}

SHIM_API AOTITorchError aoti_torch_empty_strided(int64_t ndim, const int64_t* sizes, const int64_t* strides,
                                                 int32_t dtype, int32_t device_type, int32_t device_index,
                                                 AtenTensorHandle* ret) {
  return guarded("aoti_torch_empty_strided", [&] {
    std::vector<int64_t> sz(sizes, sizes + (ndim > 0 ? ndim : 0));
    std::vector<int64_t> st = strides ? std::vector<int64_t>(strides, strides + sz.size()) : contiguous_strides(sz);
    uint64_t bytes = 0;
    if (element_size(dtype) == 0) return fail("aoti_torch_empty_strided: dtype code " + std::to_string(dtype));
    if (!checked_storage_bytes(sz, st, element_size(dtype), &bytes))
      return fail("aoti_torch_empty_strided: sizes/strides out of range");
    std::shared_ptr<Storage> s;
    if (allocate(bytes, device_type, device_index, &s) != kOk) return kFail;
    return make_tensor(std::move(s), ndim, sizes, st.data(), 0, dtype, device_type, device_index, ret);
  });
}

SHIM_API AOTITorchError aoti_torch__reinterpret_tensor(AtenTensorHandle self, int64_t ndim, const int64_t* sizes,
                                                       const int64_t* strides, int64_t storage_offset,
                                                       AtenTensorHandle* ret) {
  return guarded("aoti_torch__reinterpret_tensor", [&] {
    if (!self) return fail("aoti_torch__reinterpret_tensor: NULL tensor");
    return make_tensor(self->storage, ndim, sizes, strides, storage_offset, self->dtype, self->device_type,
                       self->device_index, ret);
  });
}

SHIM_API AOTITorchError aoti_torch_as_strided(AtenTensorHandle self, const int64_t* sizes, const int64_t* strides,
                                              AtenTensorHandle* ret) {
  return guarded("aoti_torch_as_strided", [&] {
    if (!self) return fail("aoti_torch_as_strided: NULL tensor");
    return make_tensor(self->storage, int64_t(self->sizes.size()), sizes, strides, self->offset, self->dtype,
                       self->device_type, self->device_index, ret);
  });
}

// A copy with the same sizes and strides (torch's clone keeps the strides of a dense tensor).
SHIM_API AOTITorchError aoti_torch_clone(AtenTensorHandle self, AtenTensorHandle* ret) {
  return guarded("aoti_torch_clone", [&] {
    if (!self || !ret) return fail("aoti_torch_clone: NULL argument");
    if (!dense(*self))
      return fail(
          "aoti_torch_clone: a tensor with gaps or overlaps (sizes/strides that are not dense) is not supported");
    const uint64_t bytes = uint64_t(numel(*self)) * element_size(self->dtype);
    std::shared_ptr<Storage> s;
    if (allocate(bytes, self->device_type, self->device_index, &s) != kOk) return kFail;
    // Dense: the elements are the span [data, data + bytes) in storage order.
    if (copy_bytes(s->base, self->data(), bytes) != kOk) return kFail;
    return make_tensor(std::move(s), int64_t(self->sizes.size()), self->sizes.data(), self->strides.data(), 0,
                       self->dtype, self->device_type, self->device_index, ret);
  });
}

// The span the view covers, copied as is: same sizes and strides, offset 0.
SHIM_API AOTITorchError aoti_torch_clone_preserve_strides(AtenTensorHandle self, AtenTensorHandle* ret) {
  return guarded("aoti_torch_clone_preserve_strides", [&] {
    if (!self || !ret) return fail("aoti_torch_clone_preserve_strides: NULL argument");
    uint64_t bytes = 0;
    if (!checked_storage_bytes(self->sizes, self->strides, element_size(self->dtype), &bytes))
      return fail("aoti_torch_clone_preserve_strides: sizes/strides out of range");
    std::shared_ptr<Storage> s;
    if (allocate(bytes, self->device_type, self->device_index, &s) != kOk) return kFail;
    if (copy_bytes(s->base, self->data(), bytes) != kOk) return kFail;
    return make_tensor(std::move(s), int64_t(self->sizes.size()), self->sizes.data(), self->strides.data(), 0,
                       self->dtype, self->device_type, self->device_index, ret);
  });
}

SHIM_API AOTITorchError aoti_torch_copy_(AtenTensorHandle self, AtenTensorHandle src, int32_t non_blocking) {
  return guarded("aoti_torch_copy_", [&] {
    if (!self || !src) return fail("aoti_torch_copy_: NULL tensor");
    if (self->dtype != src->dtype || self->sizes != src->sizes || self->strides != src->strides || !dense(*self))
      return fail(
          "aoti_torch_copy_: only copies between dense tensors of equal dtype, sizes and strides are supported");
    if (copy_bytes(self->data(), src->data(), uint64_t(numel(*self)) * element_size(self->dtype)) != kOk) return kFail;
    if (!non_blocking && t_stream == nullptr) {
      cudaError_t e = cudaStreamSynchronize(nullptr);
      if (e != cudaSuccess) return cuda_fail(e, "aoti_torch_copy_: synchronising");
    }
    return kOk;
  });
}

SHIM_API AOTITorchError aoti_torch_assign_tensors_out(AtenTensorHandle src, AtenTensorHandle* ret) {
  return guarded("aoti_torch_assign_tensors_out", [&] {
    if (!src || !ret) return fail("aoti_torch_assign_tensors_out: NULL argument");
    *ret = new WharfAotiTensor(*src);
    return kOk;
  });
}

// ---- Wharf's custom ops: offload points -------------------------------------------------------
// wharf::offload_wait / wharf::offload_issued (tools/aoti/compile_offload_model.py), which the
// generated wrapper calls by AOTInductor's custom_ops_to_c_shims naming, aoti_torch_<device>_<op>.
// Each passes the point to the offloader of the run the model executes for (through the host
// table), then returns a copy of x on the model's stream: the op's output must be a fresh
// tensor (Inductor may write in place into a buffer it believes it owns).

namespace {
AOTITorchError offload_point(const char* fn, int32_t point, AtenTensorHandle x, int64_t layer, AtenTensorHandle* ret) {
  return guarded(fn, [&] {
    if (!x || !ret) return fail(std::string(fn) + ": NULL argument");
    // No host hook (an older libwharf): no offloader, the weights are where they were bound.
    const char* (*hook)(int32_t, int64_t, void*) = g_attached.load() ? g_host.offload : nullptr;
    if (hook)
      if (const char* err = hook(point, layer, g_host.user)) return fail(std::string(fn) + ": " + err);
    return aoti_torch_clone(x, ret);
  });
}
}  // namespace

SHIM_API AOTITorchError aoti_torch_cuda_offload_wait(AtenTensorHandle x, int64_t layer, AtenTensorHandle* ret) {
  return offload_point("wharf::offload_wait", 0, x, layer, ret);
}

SHIM_API AOTITorchError aoti_torch_cuda_offload_issued(AtenTensorHandle x, int64_t layer, AtenTensorHandle* ret) {
  return offload_point("wharf::offload_issued", 1, x, layer, ret);
}

// ---- streams and devices ----------------------------------------------------------------------

SHIM_API AOTITorchError aoti_torch_create_cuda_stream_guard(void* stream, int32_t device_index,
                                                            CUDAStreamGuardOpaque** ret) {
  return guarded("aoti_torch_create_cuda_stream_guard", [&] {
    if (!ret) return fail("aoti_torch_create_cuda_stream_guard: NULL argument");
    auto g = std::make_unique<CUDAStreamGuardOpaque>();
    g->previous = t_stream;
    cudaGetDevice(&g->previous_device);
    if (g->previous_device != device_index) {
      cudaError_t e = cudaSetDevice(device_index);
      if (e != cudaSuccess) return cuda_fail(e, "cudaSetDevice(" + std::to_string(device_index) + ")");
    }
    t_stream = static_cast<cudaStream_t>(stream);
    *ret = g.release();
    return kOk;
  });
}

SHIM_API AOTITorchError aoti_torch_delete_cuda_stream_guard(CUDAStreamGuardOpaque* guard) {
  if (!guard) return kOk;
  t_stream = guard->previous;
  int cur = 0;
  cudaGetDevice(&cur);
  if (cur != guard->previous_device) cudaSetDevice(guard->previous_device);
  delete guard;
  return kOk;
}

SHIM_API AOTITorchError aoti_torch_create_cuda_guard(int32_t device_index, CUDAGuardOpaque** ret) {
  return guarded("aoti_torch_create_cuda_guard", [&] {
    if (!ret) return fail("aoti_torch_create_cuda_guard: NULL argument");
    auto g = std::make_unique<CUDAGuardOpaque>();
    cudaGetDevice(&g->previous_device);
    cudaError_t e = cudaSetDevice(device_index);
    if (e != cudaSuccess) return cuda_fail(e, "cudaSetDevice(" + std::to_string(device_index) + ")");
    *ret = g.release();
    return kOk;
  });
}

SHIM_API AOTITorchError aoti_torch_cuda_guard_set_index(CUDAGuardOpaque* guard, int32_t device_index) {
  if (!guard) return fail("aoti_torch_cuda_guard_set_index: NULL guard");
  cudaError_t e = cudaSetDevice(device_index);
  if (e != cudaSuccess) return cuda_fail(e, "cudaSetDevice(" + std::to_string(device_index) + ")");
  return kOk;
}

SHIM_API AOTITorchError aoti_torch_delete_cuda_guard(CUDAGuardOpaque* guard) {
  if (!guard) return kOk;
  cudaSetDevice(guard->previous_device);
  delete guard;
  return kOk;
}

SHIM_API AOTITorchError aoti_torch_get_current_cuda_stream(int32_t device_index, void** ret) {
  if (!ret) return fail("aoti_torch_get_current_cuda_stream: NULL argument");
  *ret = t_stream;
  return kOk;
}

/* SPDX-License-Identifier: Apache-2.0 */
// What the source files of libwharf_aoti_shim.so share (shim.cpp: tensors, streams, the host
// table; gemm.cpp: the aten GEMM fallbacks over cuBLASLt). Internal to the shim library: all
// of it is hidden (shim.map exports aoti_torch_* and wharf_aoti_* only).
#pragma once

#include <cuda_runtime_api.h>

#include <cstddef>
#include <cstdint>
#include <memory>
#include <new>
#include <string>
#include <vector>

#define SHIM_API extern "C" __attribute__((visibility("default")))

namespace wharf_aoti {

using AOTITorchError = int32_t;
constexpr AOTITorchError kOk = 0;
constexpr AOTITorchError kFail = 1;

// PyTorch's codes (c10::ScalarType, DeviceType).
enum : int32_t {
  kU8 = 0,
  kI8 = 1,
  kI16 = 2,
  kI32 = 3,
  kI64 = 4,
  kF16 = 5,
  kF32 = 6,
  kF64 = 7,
  kC32 = 8,
  kC64 = 9,
  kC128 = 10,
  kBool = 11,
  kBF16 = 15,
  kF8E5M2 = 23,
  kF8E4M3FN = 24,
  kF8E5M2FNUZ = 25,
  kF8E4M3FNUZ = 26,
  kU16 = 27,
  kU32 = 28,
  kU64 = 29,
};
enum : int32_t { kCpu = 0, kCuda = 1, kMeta = 9, kXpu = 12, kMps = 13, kPrivateUse1 = 20 };

// Bytes per element of a dtype code; 0 for a code the shim does not know.
size_t element_size(int32_t dtype);

// A tensor's memory: owned (freed stream-ordered on the stream it was allocated on, and
// accounted to the host), or memory the caller keeps.
struct Storage {
  void* base = nullptr;
  uint64_t bytes = 0;
  bool owned = false;
  int32_t device_type = kCpu;
  cudaStream_t stream = nullptr;  // owned CUDA memory: freed stream-ordered here
  // Memory from an installed wharf_aoti_allocator (not owned): handed back here, if set.
  void (*release)(void* ptr, uint64_t bytes, void* user) = nullptr;
  void* release_user = nullptr;
  ~Storage();
};

// Records `what` as the calling thread's last error, logs it through the host table and
// returns kFail.
AOTITorchError fail(const std::string& what);
AOTITorchError cuda_fail(cudaError_t e, const std::string& what);
// Logs `what` through the host table as information (not an error; the last error is kept).
void note(const std::string& what);
// Whether a wharf_aoti_allocator is installed on the calling thread (Wharf's graph warm-up
// and capture, and its folds).
bool wharf_allocator_installed();
// The calling thread's current CUDA stream (set by the model's stream guard).
cudaStream_t current_stream();
// `bytes` of memory on the device, stream-ordered on the current stream for CUDA.
AOTITorchError allocate(uint64_t bytes, int32_t device_type, int32_t device_index, std::shared_ptr<Storage>* out);

// Runs f(), turning the exceptions that can escape it into an error (no exception crosses the
// C ABI).
template <class F>
AOTITorchError guarded(const char* fn, F&& f) noexcept {
  try {
    return f();
  } catch (const std::bad_alloc&) {
    return fail(std::string(fn) + ": host memory exhausted");
  } catch (...) {
    return fail(std::string(fn) + ": unexpected exception");
  }
}

}  // namespace wharf_aoti

// The tensor behind an AtenTensorHandle.
struct WharfAotiTensor {
  std::shared_ptr<wharf_aoti::Storage> storage;
  int32_t dtype = wharf_aoti::kF32;
  int32_t device_type = wharf_aoti::kCpu;
  int32_t device_index = 0;
  std::vector<int64_t> sizes, strides;
  int64_t offset = 0;  // in elements
  char* data() const { return static_cast<char*>(storage->base) + offset * int64_t(wharf_aoti::element_size(dtype)); }
};
using AtenTensorHandle = WharfAotiTensor*;
struct CUDAStreamGuardOpaque {
  cudaStream_t previous;
  int previous_device;
};
struct CUDAGuardOpaque {
  int previous_device;
};

namespace wharf_aoti {
int64_t numel(const WharfAotiTensor& t);
}  // namespace wharf_aoti

// SPDX-License-Identifier: Apache-2.0
// The CUDA backend: CudaDevice, CudaStream, CudaEvent over the CUDA runtime API only
// (cudart is linked statically, so Wharf never clashes with the caller's cudart version).
//
// Conventions, all for reasons that bite in a library living inside someone else's process:
//  * Every entry point that may run on a caller thread first makes this device current
//    (set_device), since the caller's thread may have another device current, and CUDA
//    binds allocations, streams and events to the current device.
//  * Every call is checked; failures become Status through cuda_check.h, naming the call,
//    the sizes/pointers and the stream or device. Nothing throws.
//  * Every CUDA object is owned by exactly one RAII holder.
#include <cuda_runtime_api.h>

#include <atomic>
#include <cstdlib>
#include <cstring>
#include <exception>
#include <functional>
#include <memory>
#include <string>
#include <utility>
#include <vector>

#include "core/env.h"
#include "core/logging.h"
#include "core/sync.h"
#include "core/text.h"
#include "device/cuda/cuda_check.h"
#include "device/device.h"
#include "device/serving.h"

namespace wharf {
namespace {

using cuda::error_status;
using cuda::error_text;
using cuda::hex_ptr;

std::string device_label(int index) { return "device " + std::to_string(index); }

// Makes `index` the calling thread's current device. We deliberately do not restore the
// previous device on the way out: since CUDA 12 cudaSetDevice initialises the target's
// primary context, so "restoring" device 0 on a thread that never used CUDA would create a
// context (hundreds of MiB) on a GPU the caller never asked for. cudaSetDevice to the
// already-current device is a cheap thread-local check.
Status set_device(int index) {
  WHARF_CUDA_RETURN_IF_ERROR(cudaSetDevice(index), "cudaSetDevice(" + std::to_string(index) + ")");
  return Status::Ok();
}

// For paths that cannot return a Status (destructors, frees). At process exit static
// destructors may run after cudart has torn itself down; the driver reclaims everything
// then, so that case is not worth an error line.
void log_cuda_failure(cudaError_t e, const std::string& what) noexcept {
  (void)cudaGetLastError();
  if (e == cudaErrorCudartUnloading) {
    WHARF_LOG(kDebug, what + " during process exit: " + error_text(e));
  } else {
    WHARF_LOG(kError, what + ": " + error_text(e));
  }
}

// set_device for destructors and frees: the release is attempted even if this fails (the
// driver resolves the object's own context), so the failure is only logged.
void set_device_or_log(int index) noexcept {
  cudaError_t e = cudaSetDevice(index);
  if (e != cudaSuccess) log_cuda_failure(e, "cudaSetDevice(" + std::to_string(index) + ") before a release");
}

// The cudaStream_t behind a CudaStream. It is shared between the CudaStream and its
// device's registry so that Device::synchronize, which synchronizes streams without
// holding the registry lock, can never touch a destroyed stream: whoever drops the last
// reference destroys it.
struct StreamHandle {
  StreamHandle(cudaStream_t s, int dev, bool own) : stream(s), device(dev), owned(own) {}
  StreamHandle(const StreamHandle&) = delete;
  StreamHandle& operator=(const StreamHandle&) = delete;
  ~StreamHandle() {
    if (!owned) return;  // a wrapped caller stream: the caller destroys it
    // cudaStreamDestroy returns at once; work still queued on the stream runs to completion
    // and the driver releases the stream afterwards, which matches the host backend.
    set_device_or_log(device);
    cudaError_t e = cudaStreamDestroy(stream);
    if (e != cudaSuccess) log_cuda_failure(e, "cudaStreamDestroy of " + label());
  }
  std::string label() const { return "stream " + hex_ptr(stream) + " (" + device_label(device) + ")"; }

  const cudaStream_t stream;
  const int device;
  const bool owned;
};

class CudaEvent final : public Event {
 public:
  CudaEvent(cudaEvent_t ev, int device, bool timing = false) : ev_(ev), device_(device), timing_(timing) {}
  CudaEvent(const CudaEvent&) = delete;
  CudaEvent& operator=(const CudaEvent&) = delete;
  ~CudaEvent() override {
    // Like streams, an event destroyed while its record is pending is released by the
    // driver once that work completes.
    set_device_or_log(device_);
    cudaError_t e = cudaEventDestroy(ev_);
    if (e != cudaSuccess) log_cuda_failure(e, "cudaEventDestroy of " + label());
  }

  Status query(bool* done) override {
    WHARF_RETURN_IF_ERROR(set_device(device_));
    cudaError_t e = cudaEventQuery(ev_);
    if (e == cudaSuccess) {  // also for a never-recorded event, as the interface wants
      *done = true;
      return Status::Ok();
    }
    if (e == cudaErrorNotReady) {
      // Not an error, but the runtime may still leave it in the last-error slot, where the
      // caller's next cudaGetLastError() would find it.
      (void)cudaGetLastError();
      *done = false;
      return Status::Ok();
    }
    // May also be a fault of earlier asynchronous work captured by the event.
    return error_status(e, "cudaEventQuery of " + label());
  }

  Status synchronize() override {
    WHARF_RETURN_IF_ERROR(set_device(device_));
    WHARF_CUDA_RETURN_IF_ERROR(cudaEventSynchronize(ev_), "cudaEventSynchronize of " + label());
    return Status::Ok();
  }

  Status elapsed_ms_since(Event& start, double* ms) override {
    auto* from = dynamic_cast<CudaEvent*>(&start);
    if (!from) return InvalidArgument("elapsed time from an event of another backend to " + label());
    if (!timing_ || !from->timing_)
      return InvalidArgument("elapsed time from " + from->label() + " to " + label() +
                             ": both must be timing events (create_timing_event)");
    WHARF_RETURN_IF_ERROR(set_device(device_));
    float f = 0;
    // cudaErrorNotReady (not complete) and invalid handles (never recorded) come back as errors.
    WHARF_CUDA_RETURN_IF_ERROR(cudaEventElapsedTime(&f, from->ev_, ev_),
                               "cudaEventElapsedTime from " + from->label() + " to " + label());
    *ms = double(f);
    return Status::Ok();
  }

  cudaEvent_t native() const { return ev_; }
  int device() const { return device_; }
  std::string label() const { return "event " + hex_ptr(ev_) + " (" + device_label(device_) + ")"; }

 private:
  const cudaEvent_t ev_;
  const int device_;
  const bool timing_;
};

// A heap-allocated std::function travels through cudaLaunchHostFunc's void* and is freed
// here after it ran. If the context dies before the function runs, CUDA never calls it
// (documented for cudaLaunchHostFunc) and the closure leaks; the process must restart then
// anyway. Exceptions must not unwind into the driver's callback thread.
void CUDART_CB host_trampoline(void* user) {
  std::unique_ptr<std::function<void()>> fn(static_cast<std::function<void()>*>(user));
  try {
    (*fn)();
  } catch (const std::exception& ex) {
    WHARF_LOG(kError, std::string("stream host function threw: ") + ex.what());
  } catch (...) {
    WHARF_LOG(kError, "stream host function threw a non-standard exception");
  }
}

class CudaDevice;

class CudaStream final : public Stream {
 public:
  // Holds its device alive: a stream may outlive the runtime handle that made it.
  CudaStream(std::shared_ptr<CudaDevice> dev, std::shared_ptr<StreamHandle> h);
  ~CudaStream() override;

  Status copy_async(void* dst, const void* src, uint64_t bytes) override {
    if (bytes == 0) return Status::Ok();
    // Checked here rather than left to CUDA so both backends answer a null pointer alike.
    if (!dst || !src)
      return InvalidArgument("copy of " + std::to_string(bytes) + " bytes with a null pointer (" + hex_ptr(src) +
                             " -> " + hex_ptr(dst) + ") on " + h_->label());
    WHARF_RETURN_IF_ERROR(set_device(h_->device));
    // cudaMemcpyDefault: with unified addressing the driver infers the direction from the
    // pointers, so one call covers pageable/pinned/device in any combination. Only pinned
    // and device memory are truly asynchronous: a pageable source is staged by the driver
    // before the call returns, and a pageable destination makes the call wait for the copy
    // (why the runtime's H2D path uses its own pinned staging ring).
    WHARF_CUDA_RETURN_IF_ERROR(cudaMemcpyAsync(dst, src, static_cast<size_t>(bytes), cudaMemcpyDefault, h_->stream),
                               "cudaMemcpyAsync of " + std::to_string(bytes) + " bytes " + hex_ptr(src) + " -> " +
                                   hex_ptr(dst) + " on " + h_->label());
    return Status::Ok();
  }

  Status memset_async(void* dst, int value, uint64_t bytes) override;

  Status record(Event& event) override {
    auto* ce = dynamic_cast<CudaEvent*>(&event);
    if (!ce) return InvalidArgument("recording an event of another backend on CUDA " + h_->label());
    if (ce->device() != h_->device)
      return InvalidArgument("recording " + ce->label() + " on " + h_->label() +
                             ": CUDA records an event only on a stream of its own device");
    WHARF_RETURN_IF_ERROR(set_device(h_->device));
    WHARF_CUDA_RETURN_IF_ERROR(cudaEventRecord(ce->native(), h_->stream),
                               "cudaEventRecord of " + ce->label() + " on " + h_->label());
    return Status::Ok();
  }

  Status wait(Event& event) override {
    auto* ce = dynamic_cast<CudaEvent*>(&event);
    if (!ce) return InvalidArgument("waiting on an event of another backend on CUDA " + h_->label());
    WHARF_RETURN_IF_ERROR(set_device(h_->device));
    // The wait happens on the GPU; the host returns at once. Events of other devices are
    // fine here (CUDA allows cross-device waits).
    WHARF_CUDA_RETURN_IF_ERROR(cudaStreamWaitEvent(h_->stream, ce->native(), 0),
                               "cudaStreamWaitEvent on " + h_->label() + " for " + ce->label());
    return Status::Ok();
  }

  Status synchronize() override {
    WHARF_RETURN_IF_ERROR(set_device(h_->device));
    WHARF_CUDA_RETURN_IF_ERROR(cudaStreamSynchronize(h_->stream), "cudaStreamSynchronize of " + h_->label());
    return Status::Ok();
  }

  Status enqueue_host(std::function<void()> fn) override {
    if (!fn) return InvalidArgument("enqueue_host with an empty function on " + h_->label());
    WHARF_RETURN_IF_ERROR(set_device(h_->device));
    auto heap = std::make_unique<std::function<void()>>(std::move(fn));
    WHARF_CUDA_RETURN_IF_ERROR(cudaLaunchHostFunc(h_->stream, &host_trampoline, heap.get()),
                               "cudaLaunchHostFunc on " + h_->label());
    heap.release();  // owned by the trampoline from here on
    return Status::Ok();
  }

  void* native_handle() const override { return h_->stream; }

 private:
  std::shared_ptr<CudaDevice> dev_;
  std::shared_ptr<StreamHandle> h_;
};

// Device memory comes from a private stream-ordered memory pool rather than cudaMalloc.
// Measured on an H100 (docs/performance.md): while two other threads do small synchronous
// device-to-host reads, ten cudaMalloc calls took 400-800 ms and ten cudaFree calls as long,
// because they wait for a driver lock those copies hold; ten pool allocations took 0.05-0.3
// ms. Allocation and free are made synchronous on the pool's own stream, so a buffer is
// usable by any stream when raw_allocate returns and, with the pool's release threshold at
// 0 (the default), freed memory goes back to the device when raw_free returns, as with
// cudaFree. What cudaFree did implicitly -- wait for the whole device -- Buffer owners
// already do themselves: they wait for the runs' events before dropping a buffer.
class DevicePool {
 public:
  // Returns null (use cudaMalloc) on a device without memory pool support.
  static Status create(int device, std::unique_ptr<DevicePool>* out) {
    int supported = 0;
    WHARF_CUDA_RETURN_IF_ERROR(cudaDeviceGetAttribute(&supported, cudaDevAttrMemoryPoolsSupported, device),
                               "cudaDeviceGetAttribute(MemoryPoolsSupported) on " + device_label(device));
    out->reset();
    if (!supported) return Status::Ok();
    cudaMemPoolProps props{};
    props.allocType = cudaMemAllocationTypePinned;
    props.location.type = cudaMemLocationTypeDevice;
    props.location.id = device;
    cudaMemPool_t pool = nullptr;
    WHARF_CUDA_RETURN_IF_ERROR(cudaMemPoolCreate(&pool, &props), "cudaMemPoolCreate on " + device_label(device));
    cudaStream_t stream = nullptr;
    cudaError_t e = cudaStreamCreateWithFlags(&stream, cudaStreamNonBlocking);
    if (e != cudaSuccess) {
      cudaMemPoolDestroy(pool);
      return error_status(e, "cudaStreamCreateWithFlags for the memory pool of " + device_label(device));
    }
    *out = std::make_unique<DevicePool>(device, pool, stream);
    return Status::Ok();
  }
  // Takes ownership of both handles (create() is the way in).
  DevicePool(int device, cudaMemPool_t pool, cudaStream_t stream) : device_(device), pool_(pool), stream_(stream) {}
  DevicePool(const DevicePool&) = delete;
  DevicePool& operator=(const DevicePool&) = delete;
  ~DevicePool() {
    set_device_or_log(device_);
    cudaError_t e = cudaStreamSynchronize(stream_);
    if (e != cudaSuccess) log_cuda_failure(e, "draining the memory pool stream of " + device_label(device_));
    e = cudaStreamDestroy(stream_);
    if (e != cudaSuccess)
      log_cuda_failure(e, "cudaStreamDestroy of the memory pool stream of " + device_label(device_));
    e = cudaMemPoolDestroy(pool_);
    if (e != cudaSuccess) log_cuda_failure(e, "cudaMemPoolDestroy on " + device_label(device_));
  }

  // Serving while updating (device/serving.h): with WHARF_SERVING_POOL_KEEP_MIB > 0, memory
  // freed while runs are being served stays in the pool (up to that many bytes) instead of
  // going back to the driver at once, and goes back at the first allocation or free once
  // serving stopped. Handing gigabytes back to the driver makes it unmap and scrub them, and
  // for ~20 ms after such a free the copy engines are busy (docs/performance.md); an update's
  // next generation reuses the kept memory instead. Off by default: freed memory returns to
  // the device when raw_free returns, as documented.
  void keep_while_serving(uint64_t bytes, uint64_t window_ms, std::shared_ptr<ServingSignal> signal) {
    keep_bytes_ = bytes;
    window_ms_ = window_ms;
    signal_ = std::move(signal);
  }

  cudaError_t allocate(void** out, size_t bytes) {
    trim_if_not_serving();
    cudaError_t e = cudaMallocFromPoolAsync(out, bytes, pool_, stream_);
    if (e != cudaSuccess) return e;
    e = cudaStreamSynchronize(stream_);  // complete before any other stream uses it
    if (e != cudaSuccess) {
      (void)cudaFreeAsync(*out, stream_);
      *out = nullptr;
    }
    return e;
  }
  cudaError_t free(void* ptr) {
    cudaError_t e = cudaFreeAsync(ptr, stream_);
    if (e != cudaSuccess) return e;
    if (keep_bytes_ > 0) {
      // The threshold decides what the synchronize below hands back to the driver.
      const bool serving = signal_ && signal_->active(window_ms_);
      uint64_t threshold = serving ? keep_bytes_ : 0;
      e = cudaMemPoolSetAttribute(pool_, cudaMemPoolAttrReleaseThreshold, &threshold);
      if (e != cudaSuccess) return e;
      kept_.store(serving, std::memory_order_relaxed);
    }
    return cudaStreamSynchronize(stream_);  // memory back to the device when free returns
  }

 private:
  void trim_if_not_serving() {
    if (keep_bytes_ == 0 || !kept_.load(std::memory_order_relaxed) || (signal_ && signal_->active(window_ms_))) return;
    uint64_t zero = 0;
    if (cudaMemPoolSetAttribute(pool_, cudaMemPoolAttrReleaseThreshold, &zero) == cudaSuccess &&
        cudaMemPoolTrimTo(pool_, 0) == cudaSuccess)
      kept_.store(false, std::memory_order_relaxed);
  }

  uint64_t keep_bytes_ = 0;  // set once, before the pool is shared
  uint64_t window_ms_ = 0;
  std::shared_ptr<ServingSignal> signal_;
  std::atomic<bool> kept_{false};  // memory may be kept beyond what is allocated
  const int device_;
  const cudaMemPool_t pool_;
  const cudaStream_t stream_;
};

class CudaDevice final : public Device {
 public:
  CudaDevice(const DeviceOptions& opts, const cudaDeviceProp& prop)
      : Device(opts),
        index_(opts.device_index),
        name_(prop.name),
        total_memory_(prop.totalGlobalMem),
        major_(prop.major),
        minor_(prop.minor) {}

  Backend backend() const override { return Backend::kCuda; }
  int index() const override { return index_; }

  Status info(DeviceInfo* out) override {
    WHARF_RETURN_IF_ERROR(set_device(index_));
    size_t free = 0, total = 0;
    WHARF_CUDA_RETURN_IF_ERROR(cudaMemGetInfo(&free, &total), "cudaMemGetInfo on " + device_label(index_));
    out->backend = Backend::kCuda;
    out->index = index_;
    out->name = name_;  // static properties are read once at creation (the query is slow)
    out->total_memory = total_memory_;
    out->free_memory = free;
    out->compute_major = major_;
    out->compute_minor = minor_;
    return Status::Ok();
  }

  Status create_stream(std::unique_ptr<Stream>* out) override {
    WHARF_RETURN_IF_ERROR(set_device(index_));
    cudaStream_t s = nullptr;
    // Non-blocking: no implicit synchronization with the legacy default stream, which the
    // caller or other libraries in the process may be using for unrelated work.
    WHARF_CUDA_RETURN_IF_ERROR(cudaStreamCreateWithFlags(&s, cudaStreamNonBlocking),
                               "cudaStreamCreateWithFlags(cudaStreamNonBlocking) on " + device_label(index_));
    auto h = std::make_shared<StreamHandle>(s, index_, /*owned=*/true);
    *out = std::make_unique<CudaStream>(self(), std::move(h));
    return Status::Ok();
  }

  Status wrap_stream(void* native, std::unique_ptr<Stream>* out) override {
    if (!native)
      return InvalidArgument(
          "wrap_stream: a NULL cudaStream_t cannot be wrapped (the legacy default "
          "stream would serialize with everything); pass NULL to the runtime API "
          "to use the runtime's own stream");
    auto s = static_cast<cudaStream_t>(native);
    WHARF_RETURN_IF_ERROR(set_device(index_));
#if CUDART_VERSION >= 12080
    // Work on a stream of another device would run there, not here; reject it up front
    // instead of failing later at an event record.
    int dev = -1;
    WHARF_CUDA_RETURN_IF_ERROR(cudaStreamGetDevice(s, &dev), "cudaStreamGetDevice of caller stream " + hex_ptr(s));
    if (dev != index_)
      return InvalidArgument("wrap_stream: caller stream " + hex_ptr(s) + " belongs to " + device_label(dev) +
                             ", not to this runtime's " + device_label(index_));
#endif
    auto h = std::make_shared<StreamHandle>(s, index_, /*owned=*/false);
    *out = std::make_unique<CudaStream>(self(), std::move(h));
    return Status::Ok();
  }

  Status create_event(std::unique_ptr<Event>* out) override {
    WHARF_RETURN_IF_ERROR(set_device(index_));
    cudaEvent_t ev = nullptr;
    // No timing: record and wait are cheaper without a timestamp, and nothing reads one.
    WHARF_CUDA_RETURN_IF_ERROR(cudaEventCreateWithFlags(&ev, cudaEventDisableTiming),
                               "cudaEventCreateWithFlags(cudaEventDisableTiming) on " + device_label(index_));
    *out = std::make_unique<CudaEvent>(ev, index_);
    return Status::Ok();
  }
  Status create_timing_event(std::unique_ptr<Event>* out) override {
    WHARF_RETURN_IF_ERROR(set_device(index_));
    cudaEvent_t ev = nullptr;
    WHARF_CUDA_RETURN_IF_ERROR(cudaEventCreateWithFlags(&ev, cudaEventDefault),
                               "cudaEventCreateWithFlags(cudaEventDefault) on " + device_label(index_));
    *out = std::make_unique<CudaEvent>(ev, index_, /*timing=*/true);
    return Status::Ok();
  }

  PointerInfo query_pointer(const void* p) override {
    PointerInfo info;  // pageable host unless CUDA knows the pointer
    if (!p) return info;
    if (!set_device(index_).ok()) return info;  // the error surfaces at the next real call
    cudaPointerAttributes attr{};
    cudaError_t e = cudaPointerGetAttributes(&attr, p);
    if (e != cudaSuccess) {
      // Before CUDA 11 unknown host pointers gave cudaErrorInvalidValue; clear it so it
      // cannot surface from an unrelated later call. A sticky error reappears anyway.
      (void)cudaGetLastError();
      return info;
    }
    switch (attr.type) {
      case cudaMemoryTypeDevice:
      case cudaMemoryTypeManaged:  // device-resident for our purposes: copy it directly
        info.kind = PointerKind::kDevice;
        info.device_index = attr.device;
        break;
      case cudaMemoryTypeHost:  // cudaHostAlloc / cudaHostRegister: DMA-able
        info.kind = PointerKind::kPinnedHost;
        break;
      case cudaMemoryTypeUnregistered:
      default:
        break;
    }
    return info;
  }

  Status synchronize() override {
    // Not cudaDeviceSynchronize: the device is shared with the caller and other libraries,
    // and waiting for their work could stall us indefinitely. Copy the registry (holding
    // references keeps every stream alive) and wait for each outside the lock, so stream
    // creation and destruction on other threads are not blocked behind GPU work.
    std::vector<std::shared_ptr<StreamHandle>> streams;
    {
      MutexLock lock(mu_);
      streams = streams_;
    }
    Status first;
    for (const auto& h : streams) {
      Status st = set_device(h->device);
      // A stream being captured into a CUDA graph (a caller's run stream, a graph capture's
      // stream, an offloader's copy stream joined into a capture) records work instead of
      // running it: cudaStreamSynchronize on it fails and invalidates the capture, which
      // another thread's capture must not pay for. Work enqueued before its capture began is
      // left to the capture's owner.
      cudaStreamCaptureStatus capture = cudaStreamCaptureStatusNone;
      if (st.ok() && cudaStreamIsCapturing(h->stream, &capture) != cudaSuccess) (void)cudaGetLastError();
      if (capture != cudaStreamCaptureStatusNone) continue;
      if (st.ok()) {
        cudaError_t e = cudaStreamSynchronize(h->stream);
        if (e != cudaSuccess) st = error_status(e, "cudaStreamSynchronize of " + h->label());
      }
      // Keep waiting for the others: the caller asked for all work to be finished.
      if (!st.ok() && first.ok()) first = st.with_context("synchronizing " + device_label(index_));
    }
    return first;
  }

  // Wrapped caller streams are registered too: work the runtime put on them is work of
  // this device that synchronize() promises to wait for.
  void add_stream(std::shared_ptr<StreamHandle> h) WHARF_EXCLUDES(mu_) {
    MutexLock lock(mu_);
    streams_.push_back(std::move(h));
  }
  void remove_stream(const StreamHandle* h) WHARF_EXCLUDES(mu_) {
    MutexLock lock(mu_);
    for (size_t i = 0; i < streams_.size(); ++i) {
      if (streams_[i].get() == h) {
        streams_[i] = std::move(streams_.back());
        streams_.pop_back();
        return;
      }
    }
    WHARF_DCHECK(false, "cuda device: removing a stream that was never registered");
  }

 protected:
  Status raw_allocate(MemKind kind, uint64_t bytes, void** out) override {
    WHARF_RETURN_IF_ERROR(set_device(index_));
    const size_t n = static_cast<size_t>(bytes);
    if (kind == MemKind::kDevice) {
      DevicePool* pool = nullptr;
      WHARF_RETURN_IF_ERROR(device_pool(&pool));
      cudaError_t e = pool ? pool->allocate(out, n) : cudaMalloc(out, n);
      if (e == cudaSuccess) return Status::Ok();
      Status st = error_status(e, std::string(pool ? "cudaMallocFromPoolAsync" : "cudaMalloc") + " of " +
                                      std::to_string(bytes) + " bytes on " + device_label(index_));
      if (e == cudaErrorMemoryAllocation) {
        // What the driver had left explains the refusal (fragmentation, other processes).
        size_t free = 0, total = 0;
        if (cudaMemGetInfo(&free, &total) == cudaSuccess)
          return OutOfMemory(st.message() + " (" + std::to_string(free) + " of " + std::to_string(total) +
                             " bytes free on the device)");
        (void)cudaGetLastError();
      }
      return st;
    }
    // Portable: pinned for every CUDA context in the process, so a copy from a stream of
    // another device (another runtime, the caller's own) is still a direct DMA.
    WHARF_CUDA_RETURN_IF_ERROR(cudaHostAlloc(out, n, cudaHostAllocPortable),
                               "cudaHostAlloc(cudaHostAllocPortable) of " + std::to_string(bytes) +
                                   " pinned host bytes for " + device_label(index_));
    return Status::Ok();
  }

  // Buffer owners have waited (on the host) for all device work using the buffer before
  // freeing it; the pool free does not wait for the device as cudaFree would.
  void raw_free(MemKind kind, void* ptr) noexcept override {
    set_device_or_log(index_);
    cudaError_t e;
    if (kind == MemKind::kDevice) {
      DevicePool* pool = nullptr;
      {
        MutexLock lock(pool_mu_);
        pool = pool_.get();  // set before any device allocation succeeded
      }
      e = pool ? pool->free(ptr) : cudaFree(ptr);
      if (e != cudaSuccess)
        log_cuda_failure(e, "freeing device memory " + hex_ptr(ptr) + " on " + device_label(index_));
    } else {
      e = cudaFreeHost(ptr);
      if (e != cudaSuccess) log_cuda_failure(e, "cudaFreeHost of " + hex_ptr(ptr));
    }
  }

 private:
  std::shared_ptr<CudaDevice> self() { return std::static_pointer_cast<CudaDevice>(shared_from_this()); }

  // The pool is made at the first device allocation (a runtime that only stages pinned
  // memory never creates one). *out stays null where pools are unsupported.
  Status device_pool(DevicePool** out) WHARF_EXCLUDES(pool_mu_) {
    MutexLock lock(pool_mu_);
    if (!pool_checked_) {
      // Read first: a malformed value fails this allocation and makes nothing (core/env.h).
      // The serving window only where the pool keeps memory (the other WHARF_SERVING_*
      // switches are the transfer engine's, checked when a runtime makes it).
      std::optional<uint64_t> keep_mib;
      WHARF_RETURN_IF_ERROR(env_uint("WHARF_SERVING_POOL_KEEP_MIB", 0, 1ull << 24, "MiB", &keep_mib));
      ServingPolicy policy;
      if (keep_mib.value_or(0) > 0) WHARF_RETURN_IF_ERROR(ServingPolicy::from_env(&policy));
      WHARF_RETURN_IF_ERROR(DevicePool::create(index_, &pool_));
      pool_checked_ = true;
      if (pool_ && keep_mib.value_or(0) > 0)
        pool_->keep_while_serving(*keep_mib << 20, policy.window_ms, ServingSignal::for_cuda_device(index_));
    }
    *out = pool_.get();
    return Status::Ok();
  }

  const int index_;
  const std::string name_;
  const uint64_t total_memory_;
  const int major_, minor_;
  Mutex mu_;
  std::vector<std::shared_ptr<StreamHandle>> streams_ WHARF_GUARDED_BY(mu_);
  Mutex pool_mu_;
  bool pool_checked_ WHARF_GUARDED_BY(pool_mu_) = false;
  // Created once, never replaced: the DevicePool it points to is used without the lock.
  // Destroyed after every Buffer (they hold the device).
  std::unique_ptr<DevicePool> pool_ WHARF_GUARDED_BY(pool_mu_);
};

CudaStream::CudaStream(std::shared_ptr<CudaDevice> dev, std::shared_ptr<StreamHandle> h)
    : dev_(std::move(dev)), h_(std::move(h)) {
  dev_->add_stream(h_);
}

CudaStream::~CudaStream() {
  dev_->remove_stream(h_.get());
  // h_ is released after this body: the cudaStream_t is destroyed here, or by a concurrent
  // Device::synchronize once it is done with it.
}

Status CudaStream::memset_async(void* dst, int value, uint64_t bytes) {
  if (bytes == 0) return Status::Ok();
  if (!dst) return InvalidArgument("memset of " + std::to_string(bytes) + " bytes at a null pointer on " + h_->label());
  if (dev_->query_pointer(dst).kind == PointerKind::kDevice) {
    WHARF_RETURN_IF_ERROR(set_device(h_->device));
    WHARF_CUDA_RETURN_IF_ERROR(
        cudaMemsetAsync(dst, value, static_cast<size_t>(bytes), h_->stream),
        "cudaMemsetAsync of " + std::to_string(bytes) + " bytes at " + hex_ptr(dst) + " on " + h_->label());
    return Status::Ok();
  }
  // Host memory (pinned or pageable): a host memset in stream order. Setting pinned memory
  // from the GPU would push every byte across PCIe; the CPU does it locally.
  return enqueue_host([dst, value, bytes] { std::memset(dst, value, static_cast<size_t>(bytes)); })
      .with_context("memset of " + std::to_string(bytes) + " host bytes at " + hex_ptr(dst));
}

}  // namespace

bool cuda_backend_built() { return true; }

bool cuda_device_available(int index, std::string* reason) {
  std::string why;
  int count = 0;
  // With no driver at all (no libcuda.so.1) the static cudart fails this call quickly, with
  // cudaErrorInsufficientDriver (seen on a machine without a driver) or cudaErrorNoDevice; it
  // neither crashes nor hangs. cudart's own text for the first ("CUDA driver version is
  // insufficient") misleads when there is no driver at all, so the driver's version decides:
  // 0 means none was loaded.
  cudaError_t e = cudaGetDeviceCount(&count);
  if (e != cudaSuccess) {
    (void)cudaGetLastError();
    int driver = 0;
    const bool no_driver = cudaDriverGetVersion(&driver) != cudaSuccess || driver == 0;
    (void)cudaGetLastError();
    if (no_driver && (e == cudaErrorInsufficientDriver || e == cudaErrorNoDevice)) {
      why = std::string("no NVIDIA driver: libcuda.so.1 could not be loaded (cudaGetDeviceCount: ") +
            cudaGetErrorName(e) + ")";
    } else {
      why = "no CUDA device visible";
      if (e == cudaErrorInsufficientDriver)
        why += ": the NVIDIA driver supports CUDA " + std::to_string(driver / 1000) + "." +
               std::to_string(driver % 1000 / 10) + ", this build needs " + std::to_string(CUDART_VERSION / 1000) +
               "." + std::to_string(CUDART_VERSION % 1000 / 10);
      why += " (" + error_text(e) + ")";
    }
  } else if (count <= 0) {
    why = "no CUDA device visible (cudaGetDeviceCount found none)";
  } else if (index < 0 || index >= count) {
    why = "CUDA device index " + std::to_string(index) + " is out of range: " + std::to_string(count) +
          " device(s) visible";
  }
  if (why.empty()) return true;
  // A frequent cause of "no device": the process was started with the GPU hidden.
  if (const char* vis = std::getenv("CUDA_VISIBLE_DEVICES")) why += " (CUDA_VISIBLE_DEVICES=" + quote_name(vis) + ")";
  if (reason) *reason = why;
  return false;
}

Status create_cuda_device(const DeviceOptions& opts, std::shared_ptr<Device>* out) {
  std::string reason;
  if (!cuda_device_available(opts.device_index, &reason))
    return Unsupported("CUDA device " + std::to_string(opts.device_index) + " is not usable: " + reason);
  // Create the primary context now (cudaSetDevice does since CUDA 12; cudaFree(nullptr) is
  // the classic way before), so a device in exclusive-process mode held by another process,
  // or a broken one, fails here rather than at the first allocation.
  WHARF_RETURN_IF_ERROR(set_device(opts.device_index));
  WHARF_CUDA_RETURN_IF_ERROR(cudaFree(nullptr), "initializing the CUDA context of " + device_label(opts.device_index));
  cudaDeviceProp prop{};
  WHARF_CUDA_RETURN_IF_ERROR(cudaGetDeviceProperties(&prop, opts.device_index),
                             "cudaGetDeviceProperties of " + device_label(opts.device_index));
  *out = std::make_shared<CudaDevice>(opts, prop);
  return Status::Ok();
}

}  // namespace wharf

/* SPDX-License-Identifier: Apache-2.0 */
// The device layer: the one place that talks to CUDA. A Device owns allocation (tagged and
// accounted), streams and events. Two backends implement it: cuda/ (a CUDA GPU) and host/
// (host memory; streams run their work in order on a worker thread, truly asynchronously).
//
// Threads: a Device and its accounting are safe to use from many threads. A Stream may be
// used from many threads; work is ordered in the order the enqueue calls return. Events
// follow CUDA's rules: record() captures the work enqueued so far, query()/synchronize()
// ask whether that work has finished.
#pragma once

#include <cstdint>
#include <functional>
#include <memory>
#include <string>

#include "core/status.h"
#include "device/memory_accounting.h"

namespace wharf {

enum class Backend : int { kCuda = 1, kHost = 2 };
const char* backend_name(Backend b);

class Device;

// An owned allocation. Move-only; frees itself through its device (which it keeps alive).
class Buffer {
 public:
  Buffer() = default;
  Buffer(Buffer&& o) noexcept { *this = std::move(o); }
  Buffer& operator=(Buffer&& o) noexcept;
  Buffer(const Buffer&) = delete;
  Buffer& operator=(const Buffer&) = delete;
  ~Buffer() { reset(); }

  void* data() const { return ptr_; }
  uint64_t size() const { return size_; }
  MemKind kind() const { return kind_; }
  MemTag tag() const { return tag_; }
  explicit operator bool() const { return device_ != nullptr; }
  void reset();

 private:
  friend class Device;
  std::shared_ptr<Device> device_;
  void* ptr_ = nullptr;
  uint64_t size_ = 0;
  MemKind kind_ = MemKind::kDevice;
  MemTag tag_ = MemTag::kWorkspace;
};

class Event {
 public:
  virtual ~Event() = default;
  // *done = true when the work captured by the last record() has finished (or never recorded).
  virtual Status query(bool* done) = 0;
  virtual Status synchronize() = 0;
  // *ms = the time from the completion of `start`'s last record to this event's (negative if
  // this one completed first). Both must be complete and made by Device::create_timing_event;
  // otherwise an error naming what is wrong.
  virtual Status elapsed_ms_since(Event& start, double* ms) = 0;
};

class Stream {
 public:
  virtual ~Stream() = default;
  // Copies between any two of host/pinned/device memory, ordered on this stream. A host
  // source must stay valid until the copy has run (record an event and wait for it).
  virtual Status copy_async(void* dst, const void* src, uint64_t bytes) = 0;
  virtual Status memset_async(void* dst, int value, uint64_t bytes) = 0;
  virtual Status record(Event& event) = 0;
  // Later work on this stream waits (on the device, not the host) for `event`.
  virtual Status wait(Event& event) = 0;
  virtual Status synchronize() = 0;
  // Runs fn on a host thread after all earlier work on this stream; later work waits for it.
  // fn must not call into the device layer (CUDA forbids it inside host callbacks).
  virtual Status enqueue_host(std::function<void()> fn) = 0;
  // The cudaStream_t, or nullptr on the host backend.
  virtual void* native_handle() const = 0;
};

enum class PointerKind : int { kPageableHost = 0, kPinnedHost = 1, kDevice = 2 };
struct PointerInfo {
  PointerKind kind = PointerKind::kPageableHost;
  int device_index = -1;  // for kDevice
};

struct DeviceInfo {
  Backend backend = Backend::kHost;
  int index = 0;
  std::string name;
  uint64_t total_memory = 0;
  uint64_t free_memory = 0;
  int compute_major = 0, compute_minor = 0;
};

struct DeviceOptions {
  int device_index = 0;
  uint64_t device_memory_limit = 0;  // 0 = none
};

class Device : public std::enable_shared_from_this<Device> {
 public:
  explicit Device(const DeviceOptions& opts) : accounting_(opts.device_memory_limit) {}
  virtual ~Device() = default;
  Device(const Device&) = delete;
  Device& operator=(const Device&) = delete;

  virtual Backend backend() const = 0;
  virtual int index() const = 0;
  virtual Status info(DeviceInfo* out) = 0;

  // Allocates `bytes` of `kind` memory under `tag`; `what` names the use in error messages
  // ("constant 'layers.0.w'"). Counts against the device limit first, so a refused
  // allocation never reaches the driver. Zero bytes gives an empty (null) live buffer.
  Status allocate(MemKind kind, MemTag tag, uint64_t bytes, const std::string& what, Buffer* out);

  virtual Status create_stream(std::unique_ptr<Stream>* out) = 0;
  // Wraps a caller's native stream (cudaStream_t); the caller keeps ownership.
  virtual Status wrap_stream(void* native, std::unique_ptr<Stream>* out) = 0;
  virtual Status create_event(std::unique_ptr<Event>* out) = 0;
  // An event that also takes a timestamp when it completes (Event::elapsed_ms_since; the
  // transfer trace's device times). create_event's events are cheaper and cannot be timed.
  virtual Status create_timing_event(std::unique_ptr<Event>* out) = 0;
  // What kind of memory `p` points to, as seen from this device.
  virtual PointerInfo query_pointer(const void* p) = 0;
  // Waits for all work on every stream of this device.
  virtual Status synchronize() = 0;

  MemoryAccounting& accounting() { return accounting_; }
  const MemoryAccounting& accounting() const { return accounting_; }

 protected:
  virtual Status raw_allocate(MemKind kind, uint64_t bytes, void** out) = 0;
  virtual void raw_free(MemKind kind, void* ptr) noexcept = 0;

 private:
  friend class Buffer;
  MemoryAccounting accounting_;
};

// Factories. create_cuda_device returns UNSUPPORTED in a build without CUDA.
Status create_host_device(const DeviceOptions& opts, std::shared_ptr<Device>* out);
Status create_cuda_device(const DeviceOptions& opts, std::shared_ptr<Device>* out);
// Whether a CUDA device is usable; `reason` says why not.
bool cuda_device_available(int index, std::string* reason);
// Whether this build contains the CUDA backend.
bool cuda_backend_built();

}  // namespace wharf

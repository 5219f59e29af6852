/* SPDX-License-Identifier: Apache-2.0 */
// Runtime: one device (CUDA or host), the runtime's own stream, and the options every
// component reads (staging ring size, copy threads). Shared by everything made from it.
#pragma once

#include <condition_variable>
#include <cstdint>
#include <deque>
#include <memory>
#include <thread>

#include "core/sync.h"
#include "device/device.h"
#include "device/serving.h"
#include "device/transfer.h"

namespace wharf {

struct RuntimeOptions {
  int backend = 0;  // 0 auto, 1 cuda, 2 host (wharf_backend values)
  int device_index = 0;
  uint64_t device_memory_limit = 0;
  uint32_t copy_threads = 0;   // 0 = auto
  uint64_t staging_bytes = 0;  // 0 = auto
};

class Runtime {
 public:
  // Resolves AUTO (logs the choice), validates options, creates the device and its stream.
  static Status create(const RuntimeOptions& opts, std::shared_ptr<Runtime>* out);
  ~Runtime();

  Backend backend() const { return device_->backend(); }
  Device& device() { return *device_; }
  const std::shared_ptr<Device>& device_ptr() const { return device_; }
  Stream& stream() { return *stream_; }
  const RuntimeOptions& options() const { return opts_; }  // with autos resolved
  // Waits for the device's work (Device::synchronize) and for the frees handed to
  // release_later so far.
  Status synchronize() WHARF_EXCLUDES(release_mu_);
  // The runtime's copy engine, created on first use (its staging ring on first pageable copy).
  Status transfers(TransferEngine** out) WHARF_EXCLUDES(transfers_mu_);
  // Whether runs are being served on this device (device/serving.h): every run notes itself
  // (Container::acquire), the transfer engine paces an update's copies meanwhile. Shared by
  // every runtime of the same CUDA device; a host-backend runtime has its own.
  ServingSignal& serving() { return *serving_; }
  // Destroys `obj` (the last reference to storage a run let go of) on a background thread
  // instead of the calling one: a run's end must not spend its time in device frees
  // (issue 26). The thread starts at the first call; synchronize() waits for what was handed
  // over. On for the CUDA backend; WHARF_DEFER_RUN_FREES=0 (or 1) at creation turns it off
  // (on): off, the object is destroyed here.
  void release_later(std::shared_ptr<void> obj) WHARF_EXCLUDES(release_mu_);
  bool defers_run_frees() const { return defer_run_frees_; }

 private:
  Runtime() = default;
  RuntimeOptions opts_;
  std::shared_ptr<Device> device_;
  std::unique_ptr<Stream> stream_;
  std::shared_ptr<ServingSignal> serving_;
  Mutex transfers_mu_;
  // Created once under transfers_mu_ and never replaced or freed before the runtime, so the
  // pointer transfers() hands out stays valid without the lock.
  std::unique_ptr<TransferEngine> transfers_ WHARF_GUARDED_BY(transfers_mu_);

  // release_later's queue and thread.
  void release_loop() WHARF_EXCLUDES(release_mu_);
  bool defer_run_frees_ = true;
  Mutex release_mu_;
  std::condition_variable release_cv_;   // work queued, or stop
  std::condition_variable released_cv_;  // the queue ran empty
  std::deque<std::shared_ptr<void>> release_queue_ WHARF_GUARDED_BY(release_mu_);
  bool releasing_ WHARF_GUARDED_BY(release_mu_) = false;  // the thread is destroying one
  bool release_stop_ WHARF_GUARDED_BY(release_mu_) = false;
  std::thread release_thread_ WHARF_GUARDED_BY(release_mu_);
};

}  // namespace wharf

/* SPDX-License-Identifier: Apache-2.0 */
// Runtime: one device (CUDA or host), the runtime's own stream, and the options every
// component reads (staging ring size, copy threads). Shared by everything made from it.
#pragma once

#include <cstdint>
#include <memory>

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
  Status synchronize() { return device_->synchronize(); }
  // The runtime's copy engine, created on first use (its staging ring on first pageable copy).
  Status transfers(TransferEngine** out) WHARF_EXCLUDES(transfers_mu_);
  // Whether runs are being served on this device (device/serving.h): every run notes itself
  // (Container::acquire), the transfer engine paces an update's copies meanwhile. Shared by
  // every runtime of the same CUDA device; a host-backend runtime has its own.
  ServingSignal& serving() { return *serving_; }

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
};

}  // namespace wharf

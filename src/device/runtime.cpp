// SPDX-License-Identifier: Apache-2.0
#include "device/runtime.h"

#include <algorithm>
#include <thread>

#include "core/logging.h"
#include "device/host/host_device.h"

namespace wharf {
namespace {
constexpr uint32_t kMaxCopyThreads = 256;
constexpr uint64_t kMinStagingBytes = 128 << 10;  // two chunks of the 64 KiB minimum
constexpr uint64_t kDefaultChunkBytes = 4 << 20;  // measured best on H100 (docs/performance.md, h2d_bench)
}  // namespace

Status Runtime::create(const RuntimeOptions& in, std::shared_ptr<Runtime>* out) {
  RuntimeOptions o = in;
  if (o.backend < 0 || o.backend > 2)
    return InvalidArgument("runtime option backend: unknown value " + std::to_string(o.backend));
  if (o.device_index < 0)
    return InvalidArgument("runtime option device_index: negative value " + std::to_string(o.device_index));
  if (o.copy_threads > kMaxCopyThreads)
    return InvalidArgument("runtime option copy_threads: " + std::to_string(o.copy_threads) +
                           " is more than the maximum " + std::to_string(kMaxCopyThreads));
  if (o.staging_bytes != 0 && o.staging_bytes < kMinStagingBytes)
    return InvalidArgument("runtime option staging_bytes: " + std::to_string(o.staging_bytes) +
                           " is below the minimum " + std::to_string(kMinStagingBytes));
  if (o.copy_threads == 0) {
    unsigned hw = std::max(1u, std::thread::hardware_concurrency());
    o.copy_threads = std::min<uint32_t>(12, std::max(1u, hw - 1));
  }
  if (o.staging_bytes == 0) o.staging_bytes = uint64_t(2) * o.copy_threads * kDefaultChunkBytes;

  DeviceOptions dopts;
  dopts.device_index = o.device_index;
  dopts.device_memory_limit = o.device_memory_limit;
  std::shared_ptr<Device> dev;
  if (o.backend == 0) {
    std::string reason;
    if (cuda_device_available(o.device_index, &reason)) {
      WHARF_RETURN_IF_ERROR(create_cuda_device(dopts, &dev));
      WHARF_LOG(kInfo, "runtime: backend AUTO chose CUDA device " + std::to_string(o.device_index));
    } else {
      WHARF_RETURN_IF_ERROR(create_host_device(dopts, &dev));
      // A CUDA build that cannot use its GPU is worth a warning (a missing driver would
      // otherwise silently serve from host memory); a CPU-only build expects the host backend.
      if (cuda_backend_built()) {
        WHARF_LOG(kWarn, "runtime: backend AUTO chose the host backend although this build has CUDA: " + reason);
      } else {
        WHARF_LOG(kInfo, "runtime: backend AUTO chose the host backend (" + reason + ")");
      }
    }
  } else if (o.backend == 1) {
    WHARF_RETURN_IF_ERROR(create_cuda_device(dopts, &dev));
  } else {
    WHARF_RETURN_IF_ERROR(create_host_device(dopts, &dev));
  }
  o.backend = static_cast<int>(dev->backend());

  std::shared_ptr<Runtime> rt(new Runtime());
  rt->opts_ = o;
  rt->device_ = std::move(dev);
  WHARF_RETURN_IF_ERROR(rt->device_->create_stream(&rt->stream_));
  rt->serving_ = rt->device_->backend() == Backend::kCuda ? ServingSignal::for_cuda_device(rt->device_->index())
                                                          : std::make_shared<ServingSignal>();
  *out = std::move(rt);
  return Status::Ok();
}

Status Runtime::transfers(TransferEngine** out) {
  MutexLock lock(transfers_mu_);
  if (!transfers_) {
    TransferOptions t;
    t.threads = opts_.copy_threads;
    t.chunk_bytes = std::min<uint64_t>(kDefaultChunkBytes, opts_.staging_bytes / 2);
    t.staging_bytes = opts_.staging_bytes;
    t.serving = serving_;
    WHARF_RETURN_IF_ERROR(TransferEngine::create(device_, t, &transfers_));
  }
  *out = transfers_.get();
  return Status::Ok();
}

Runtime::~Runtime() {
  if (stream_) {
    Status st = stream_->synchronize();
    if (!st.ok()) WHARF_LOG(kError, "runtime: draining its stream at free: " + st.message());
  }
}

}  // namespace wharf

// SPDX-License-Identifier: Apache-2.0
#include "device/runtime.h"

#include <pthread.h>

#include <algorithm>
#include <string>
#include <system_error>
#include <thread>

#include "core/env.h"
#include "core/logging.h"
#include "core/text.h"
#include "device/host/host_device.h"
#include "device/transfer_env.h"

namespace wharf {
namespace {
constexpr uint32_t kMaxCopyThreads = 256;
constexpr uint64_t kMinStagingBytes = 128 << 10;  // two chunks of the 64 KiB minimum

}  // namespace

Status Runtime::create(const RuntimeOptions& in, std::shared_ptr<Runtime>* out) {
  warn_unknown_env_variables_once();  // a misspelt switch would otherwise measure the default
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
  if (o.staging_bytes == 0) o.staging_bytes = default_staging_options(o.copy_threads).staging_bytes;
  std::optional<bool> defer_env;  // read before anything is made: a bad value makes nothing
  WHARF_RETURN_IF_ERROR(env_switch("WHARF_DEFER_RUN_FREES", &defer_env));

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
  // On the host backend a free is a free(): nothing to take off the serving path, and the
  // bindings' tests see storage go at once, as before. WHARF_DEFER_RUN_FREES=0/1 forces it.
  rt->defer_run_frees_ = defer_env.value_or(rt->device_->backend() == Backend::kCuda);
  rt->serving_ = rt->device_->backend() == Backend::kCuda ? ServingSignal::for_cuda_device(rt->device_->index())
                                                          : std::make_shared<ServingSignal>();
  *out = std::move(rt);
  return Status::Ok();
}

Status Runtime::transfers(TransferEngine** out) {
  MutexLock lock(transfers_mu_);
  if (!transfers_) {
    TransferOptions t = default_staging_options(opts_.copy_threads, opts_.staging_bytes);
    const TransferOptions defaults = t;
    WHARF_RETURN_IF_ERROR(apply_transfer_env(&t));
    t.serving = serving_;
    Status st = TransferEngine::create(device_, t, &transfers_);
    if (st.code() == Code::kInvalidArgument &&
        (t.chunk_bytes != defaults.chunk_bytes || t.block_bytes != defaults.block_bytes))
      return st.with_context("the transfer engine with WHARF_TRANSFER_CHUNK_KIB / _BLOCK_KIB from the environment");
    WHARF_RETURN_IF_ERROR(st);
  }
  *out = transfers_.get();
  return Status::Ok();
}

Status Runtime::synchronize() {
  {
    UniqueLock lock(release_mu_);
    lock.wait(released_cv_, [&]() WHARF_REQUIRES(release_mu_) { return release_queue_.empty() && !releasing_; });
  }
  return device_->synchronize();
}

void Runtime::release_later(std::shared_ptr<void> obj) {
  if (!obj) return;
  if (!defer_run_frees_) return;  // obj goes here, on the caller's thread (the old way)
  MutexLock lock(release_mu_);
  if (release_stop_) return;  // never: the runtime is going and nothing holds it any more
  if (!release_thread_.joinable()) {
    try {
      release_thread_ = std::thread([this] { release_loop(); });
    } catch (const std::system_error& e) {
      WHARF_LOG(kWarn, std::string("runtime: no release thread (") + e.what() + "); freeing on the calling thread");
      return;  // obj is destroyed by the caller's frame (after the lock is dropped: it is a by-value parameter)
    }
  }
  release_queue_.push_back(std::move(obj));
  release_cv_.notify_one();
}

void Runtime::release_loop() {
#ifdef __linux__
  pthread_setname_np(pthread_self(), "wharf-release");
#endif
  UniqueLock lock(release_mu_);
  for (;;) {
    lock.wait(release_cv_, [&]() WHARF_REQUIRES(release_mu_) { return release_stop_ || !release_queue_.empty(); });
    if (release_queue_.empty()) return;  // stopping, and everything handed over is gone
    std::shared_ptr<void> obj = std::move(release_queue_.front());
    release_queue_.pop_front();
    releasing_ = true;
    lock.unlock();
    obj.reset();  // the device frees, outside the lock
    lock.lock();
    releasing_ = false;
    if (release_queue_.empty()) released_cv_.notify_all();
  }
}

Runtime::~Runtime() {
  std::thread releaser;
  {
    MutexLock lock(release_mu_);
    release_stop_ = true;
    release_cv_.notify_all();
    releaser = std::move(release_thread_);
  }
  // The thread drains the queue before it exits. Nothing it destroys holds the runtime, so
  // this destructor never runs on it; if it ever did, it must not join itself.
  if (releaser.joinable()) {
    if (releaser.get_id() == std::this_thread::get_id())
      releaser.detach();
    else
      releaser.join();
  }
  if (stream_) {
    Status st = stream_->synchronize();
    if (!st.ok()) WHARF_LOG(kError, "runtime: draining its stream at free: " + st.message());
  }
}

}  // namespace wharf

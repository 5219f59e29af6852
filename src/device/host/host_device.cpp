// SPDX-License-Identifier: Apache-2.0
#include "device/host/host_device.h"

#include <unistd.h>

#include <condition_variable>
#include <chrono>
#include <cstdlib>
#include <cstring>
#include <deque>
#include <map>
#include <set>
#include <thread>

#include "core/sync.h"

namespace wharf {
namespace {

// Event state shared by the event and the stream tasks that complete it. `recorded` counts
// record() calls; a task enqueued by record number n sets completed >= n when it runs. As in
// CUDA, query/synchronize refer to the most recent record().
struct HostEventState {
  Mutex mu;
  std::condition_variable cv;
  uint64_t recorded WHARF_GUARDED_BY(mu) = 0;
  uint64_t completed WHARF_GUARDED_BY(mu) = 0;  // never more than recorded
  // When the stream reached the last completed record (timing events' elapsed_ms_since).
  std::chrono::steady_clock::time_point completed_at WHARF_GUARDED_BY(mu);

  // Called by the stream task of record number `target`.
  void complete(uint64_t target) WHARF_EXCLUDES(mu) {
    const auto now = std::chrono::steady_clock::now();
    MutexLock lock(mu);
    WHARF_DCHECK(target <= recorded, "host event: completing a record that was never made");
    if (completed < target) {
      completed = target;
      completed_at = now;
    }
    cv.notify_all();
  }
  void wait_for(uint64_t target) WHARF_EXCLUDES(mu) {
    UniqueLock lock(mu);
    lock.wait(cv, [&]() WHARF_REQUIRES(mu) { return completed >= target; });
  }
};

class HostEvent final : public Event {
 public:
  explicit HostEvent(bool timing = false) : st_(std::make_shared<HostEventState>()), timing_(timing) {}
  Status query(bool* done) override {
    MutexLock lock(st_->mu);
    *done = st_->completed >= st_->recorded;
    return Status::Ok();
  }
  Status synchronize() override {
    uint64_t target;
    {
      MutexLock lock(st_->mu);
      target = st_->recorded;
    }
    st_->wait_for(target);
    return Status::Ok();
  }
  Status elapsed_ms_since(Event& start, double* ms) override {
    auto* from = dynamic_cast<HostEvent*>(&start);
    if (!from) return InvalidArgument("elapsed time from an event of another backend to a host event");
    if (!timing_ || !from->timing_)
      return InvalidArgument("elapsed time between host events: both must be timing events (create_timing_event)");
    std::chrono::steady_clock::time_point a, b;
    if (!from->completed_at(&a) || !completed_at(&b))
      return FailedPrecondition("elapsed time between host events: both must be recorded and complete");
    *ms = std::chrono::duration<double, std::milli>(b - a).count();
    return Status::Ok();
  }
  const std::shared_ptr<HostEventState>& state() const { return st_; }

 private:
  // The completion time of the last record, if it was recorded and is complete.
  bool completed_at(std::chrono::steady_clock::time_point* t) const {
    MutexLock lock(st_->mu);
    if (st_->recorded == 0 || st_->completed < st_->recorded) return false;
    *t = st_->completed_at;
    return true;
  }
  std::shared_ptr<HostEventState> st_;
  const bool timing_;
};

class HostDevice;

class HostStream final : public Stream {
 public:
  // Holds its device alive: a stream may outlive the runtime handle that made it.
  explicit HostStream(std::shared_ptr<HostDevice> dev);
  ~HostStream() override;

  Status copy_async(void* dst, const void* src, uint64_t bytes) override {
    if (bytes == 0) return Status::Ok();
    if (!dst || !src) return InvalidArgument("copy of " + std::to_string(bytes) + " bytes with a null pointer");
    return enqueue([dst, src, bytes] { std::memcpy(dst, src, bytes); });
  }
  Status memset_async(void* dst, int value, uint64_t bytes) override {
    if (bytes == 0) return Status::Ok();
    if (!dst) return InvalidArgument("memset of " + std::to_string(bytes) + " bytes at a null pointer");
    return enqueue([dst, value, bytes] { std::memset(dst, value, bytes); });
  }
  Status record(Event& event) override {
    auto* he = dynamic_cast<HostEvent*>(&event);
    if (!he) return InvalidArgument("recording an event of another backend on a host stream");
    std::shared_ptr<HostEventState> st = he->state();
    uint64_t target;
    {
      MutexLock lock(st->mu);
      target = ++st->recorded;
    }
    return enqueue([st, target] { st->complete(target); });
  }
  Status wait(Event& event) override {
    auto* he = dynamic_cast<HostEvent*>(&event);
    if (!he) return InvalidArgument("waiting on an event of another backend on a host stream");
    std::shared_ptr<HostEventState> st = he->state();
    uint64_t target;
    {
      MutexLock lock(st->mu);
      target = st->recorded;
    }
    // The target was recorded before this call, so the task it waits for is already queued
    // somewhere: this cannot deadlock.
    return enqueue([st, target] { st->wait_for(target); });
  }
  Status synchronize() override WHARF_EXCLUDES(mu_) {
    UniqueLock lock(mu_);
    uint64_t target = enqueued_;
    lock.wait(done_cv_, [&]() WHARF_REQUIRES(mu_) { return done_ >= target; });
    return Status::Ok();
  }
  Status enqueue_host(std::function<void()> fn) override {
    if (!fn) return InvalidArgument("enqueue_host with an empty function");
    return enqueue(std::move(fn));
  }
  void* native_handle() const override { return nullptr; }

 private:
  Status enqueue(std::function<void()> fn) WHARF_EXCLUDES(mu_) {
    {
      MutexLock lock(mu_);
      WHARF_DCHECK(!stop_, "host stream: work enqueued on a stream being destroyed");
      queue_.push_back(std::move(fn));
      ++enqueued_;
    }
    work_cv_.notify_one();
    return Status::Ok();
  }
  // The worker: runs the queue in order, each task without the lock.
  void run() WHARF_EXCLUDES(mu_) {
    UniqueLock lock(mu_);
    for (;;) {
      lock.wait(work_cv_, [&]() WHARF_REQUIRES(mu_) { return stop_ || !queue_.empty(); });
      if (queue_.empty()) return;  // stop_ and drained
      std::function<void()> fn = std::move(queue_.front());
      queue_.pop_front();
      lock.unlock();
      fn();
      lock.lock();
      ++done_;
      WHARF_DCHECK(done_ <= enqueued_, "host stream: more tasks done than enqueued");
      done_cv_.notify_all();
    }
  }

  std::shared_ptr<HostDevice> dev_;
  Mutex mu_;
  std::condition_variable work_cv_, done_cv_;
  std::deque<std::function<void()>> queue_ WHARF_GUARDED_BY(mu_);
  uint64_t enqueued_ WHARF_GUARDED_BY(mu_) = 0;
  uint64_t done_ WHARF_GUARDED_BY(mu_) = 0;  // tasks finished, in order: done_ <= enqueued_
  bool stop_ WHARF_GUARDED_BY(mu_) = false;
  std::thread worker_;  // last: starts after the members it uses exist
};

class HostDevice final : public Device {
 public:
  explicit HostDevice(const DeviceOptions& opts) : Device(opts) {}

  Backend backend() const override { return Backend::kHost; }
  int index() const override { return 0; }

  Status info(DeviceInfo* out) override {
    long pages = sysconf(_SC_PHYS_PAGES), avail = sysconf(_SC_AVPHYS_PAGES), page = sysconf(_SC_PAGESIZE);
    out->backend = Backend::kHost;
    out->index = 0;
    out->name = "host";
    out->total_memory = pages > 0 && page > 0 ? uint64_t(pages) * uint64_t(page) : 0;
    out->free_memory = avail > 0 && page > 0 ? uint64_t(avail) * uint64_t(page) : 0;
    out->compute_major = out->compute_minor = 0;
    return Status::Ok();
  }

  Status create_stream(std::unique_ptr<Stream>* out) override {
    *out = std::make_unique<HostStream>(std::static_pointer_cast<HostDevice>(shared_from_this()));
    return Status::Ok();
  }
  Status wrap_stream(void* native, std::unique_ptr<Stream>*) override {
    return InvalidArgument("the host backend has no native streams; pass NULL to use the runtime's stream");
  }
  Status create_event(std::unique_ptr<Event>* out) override {
    *out = std::make_unique<HostEvent>();
    return Status::Ok();
  }
  Status create_timing_event(std::unique_ptr<Event>* out) override {
    *out = std::make_unique<HostEvent>(/*timing=*/true);
    return Status::Ok();
  }

  // Memory this device allocated is reported as device or pinned memory (so callers take
  // the same paths as on a GPU); anything else is pageable host memory.
  PointerInfo query_pointer(const void* p) override {
    auto addr = reinterpret_cast<uintptr_t>(p);
    MutexLock lock(mu_);
    auto it = ranges_.upper_bound(addr);
    if (it != ranges_.begin()) {
      --it;
      if (addr < it->first + it->second.first) {
        PointerInfo info;
        info.kind = it->second.second == MemKind::kDevice ? PointerKind::kDevice : PointerKind::kPinnedHost;
        info.device_index = info.kind == PointerKind::kDevice ? 0 : -1;
        return info;
      }
    }
    return PointerInfo{};
  }

  Status synchronize() override {
    std::vector<HostStream*> streams;
    {
      MutexLock lock(mu_);
      streams.assign(streams_.begin(), streams_.end());
    }
    // Streams unregister in their destructor under mu_, but a stream being destroyed while
    // another thread synchronizes the device is a caller bug, as with cudaStreamDestroy.
    for (HostStream* s : streams) WHARF_RETURN_IF_ERROR(s->synchronize());
    return Status::Ok();
  }

  void add_stream(HostStream* s) WHARF_EXCLUDES(mu_) {
    MutexLock lock(mu_);
    streams_.insert(s);
  }
  void remove_stream(HostStream* s) WHARF_EXCLUDES(mu_) {
    MutexLock lock(mu_);
    streams_.erase(s);
  }

 protected:
  Status raw_allocate(MemKind kind, uint64_t bytes, void** out) override {
    // 256-byte alignment, as cudaMalloc gives, so alignment bugs show on both backends.
    void* p = nullptr;
    if (posix_memalign(&p, 256, bytes) != 0 || !p)
      return OutOfMemory("host allocation of " + std::to_string(bytes) + " bytes failed");
    MutexLock lock(mu_);
    ranges_[reinterpret_cast<uintptr_t>(p)] = {bytes, kind};
    *out = p;
    return Status::Ok();
  }
  void raw_free(MemKind, void* ptr) noexcept override {
    {
      MutexLock lock(mu_);
      size_t erased = ranges_.erase(reinterpret_cast<uintptr_t>(ptr));
      WHARF_DCHECK(erased == 1, "host device: freeing memory it did not allocate (or twice)");
      (void)erased;
    }
    std::free(ptr);
  }

 private:
  Mutex mu_;
  std::set<HostStream*> streams_ WHARF_GUARDED_BY(mu_);
  std::map<uintptr_t, std::pair<uint64_t, MemKind>> ranges_ WHARF_GUARDED_BY(mu_);  // start -> (size, kind)
};

HostStream::HostStream(std::shared_ptr<HostDevice> dev) : dev_(std::move(dev)), worker_([this] { run(); }) {
  dev_->add_stream(this);
}

HostStream::~HostStream() {
  dev_->remove_stream(this);
  {
    MutexLock lock(mu_);
    stop_ = true;
  }
  work_cv_.notify_one();
  worker_.join();  // drains queued work first, as cudaStreamDestroy lets it finish
}

}  // namespace

Status create_host_device(const DeviceOptions& opts, std::shared_ptr<Device>* out) {
  *out = std::make_shared<HostDevice>(opts);
  return Status::Ok();
}

}  // namespace wharf

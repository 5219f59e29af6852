// SPDX-License-Identifier: Apache-2.0
// TransferEngine. How a copy() runs:
//
//  1. Validate and classify every request (query_pointer on both ends) before touching
//     anything, so an invalid request fails the call with nothing copied.
//  2. Pageable sources (and files) into device memory are packed into "fills": runs of
//     segments that together occupy at most one staging chunk (a large request spans many
//     fills; many small requests share one; the first blocks' fills hold less, see
//     TransferOptions::ramp_start). Pageable sources into pinned host memory need no
//     DMA and are split into chunk-sized host memcpy (or pread) pieces. Every file is checked
//     to still hold the bytes asked of it before anything is enqueued.
//  3. The copy stream waits for `wait_for`, then the worker pool starts: each staging worker
//     takes the next fill from a shared atomic index (fill f of block k uses chunk f - kG of
//     the ring slot block k took), waits until the slot's previous contents have been copied
//     out, copies the sources in (streaming
//     stores, device/dma_copy.h) or preads them, and the worker that completes the last fill
//     of a block (G consecutive chunks, see TransferOptions::block_bytes) enqueues the
//     block's DMAs, one per run of bytes that continue one destination, and records the
//     block's event. Then every worker takes host memcpy pieces. Meanwhile the calling
//     thread walks the requests in order: allocates a destination the caller left null
//     (AllocateFn), publishes it to the workers, and enqueues the pinned/device sources'
//     copies directly, so allocation overlaps the copies already in flight.
//  4. The stream is always drained before returning, so nothing in flight still reads
//     caller memory or the ring.
//
// Chunks are shared, blocks keep them apart: a block's G chunks are filled by up to G threads
// at once and leave in as few DMAs as their destinations allow (a 128 MiB tensor: one DMA of
// G chunks; a slab of small constants: one DMA where the fills meet). The ring holds B = N / G
// slots of G chunks. The first fill of block k to arrive takes a slot for it (Job::slot_of):
// one not used yet in this call, else the slot whose block went on the stream first (a
// host-side queue, because an event not recorded yet reads as complete), and every fill of
// block k waits for that slot's event before writing. Slots are not tied to block numbers, so
// a fill that stalls (a thread descheduled for milliseconds, seen on busy hosts) holds one
// slot while the other blocks keep cycling through the rest and the copy engine stays fed.
// A slot's event is recorded only after every fill of its block has been read, i.e. after
// every wait on the slot's previous record has returned, so no thread waits on an event
// while another re-records it.
#include "device/transfer.h"

#include <pthread.h>
#include <sched.h>
#ifdef __linux__
#include <sys/prctl.h>
#endif

#include <algorithm>
#include <atomic>
#include <chrono>
#include <condition_variable>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <deque>
#include <exception>
#include <functional>
#include <string>
#include <system_error>
#include <thread>
#include <unordered_map>

#include "core/logging.h"
#include "core/progress.h"
#include "core/sync.h"
#include "core/test_hooks.h"
#include "core/text.h"
#include "io/read_only_file.h"

namespace wharf {
namespace {

constexpr uint64_t kMinChunkBytes = 64ull << 10;
// Matches the runtime's copy_threads cap; more threads than this only add contention.
constexpr uint32_t kMaxThreads = 256;

// A fixed set of threads that run one job at a time: run(n, fn) calls fn(i) on worker i for
// every i < n and returns when all of those calls have returned. Persistent threads, because
// a transfer of a few MiB takes less time than creating a dozen threads.
class WorkerPool {
 public:
  WorkerPool() = default;
  WorkerPool(const WorkerPool&) = delete;
  WorkerPool& operator=(const WorkerPool&) = delete;
  ~WorkerPool() {
    {
      MutexLock lock(mu_);
      stop_ = true;
    }
    work_cv_.notify_all();
    for (std::thread& t : threads_) t.join();
  }

  // On failure the threads already started are joined by the destructor. Called once, before
  // any run() (threads_ is read without a lock afterwards).
  Status start(uint32_t n) {
    WHARF_DCHECK(threads_.empty(), "worker pool: started twice");
    threads_.reserve(n);
    for (uint32_t i = 0; i < n; ++i) {
      try {
        threads_.emplace_back([this, i] { loop(i); });
      } catch (const std::system_error& e) {
        return Status(Code::kResourceExhausted, "starting transfer copy thread " + std::to_string(i + 1) + " of " +
                                                    std::to_string(n) + ": " + e.what());
      }
    }
    return Status::Ok();
  }

  uint32_t size() const { return static_cast<uint32_t>(threads_.size()); }

  // Starts fn(i) on workers i < n and returns at once; wait() returns when all of those calls
  // have returned. fn must not throw and must outlive wait(). One job at a time: the engine
  // calls begin/wait under its copy mutex.
  void begin(uint32_t n, const std::function<void(uint32_t)>& fn) WHARF_EXCLUDES(mu_) {
    if (n == 0) return;
    MutexLock lock(mu_);
    WHARF_DCHECK(job_ == nullptr && running_ == 0, "worker pool: begin() while a job runs (one job at a time)");
    job_ = &fn;
    job_threads_ = std::min(n, size());
    running_ = job_threads_;
    ++generation_;
    work_cv_.notify_all();
  }
  void wait() WHARF_EXCLUDES(mu_) {
    UniqueLock lock(mu_);
    lock.wait(done_cv_, [&]() WHARF_REQUIRES(mu_) { return running_ == 0; });
    job_ = nullptr;
  }

 private:
  void loop(uint32_t index) WHARF_EXCLUDES(mu_) {
    // Named so a profiler or `top -H` shows which threads are the copy pool.
#ifdef __linux__
    std::string name = "wharf-copy-" + std::to_string(index);
    pthread_setname_np(pthread_self(), name.substr(0, 15).c_str());  // Linux caps names at 15 chars
    // Their polling waits while runs are served sleep ~20 us; Linux's default timer slack
    // (50 us) would stretch each to ~70 us and leave the copy engine idle between pieces.
    prctl(PR_SET_TIMERSLACK, 1000UL, 0UL, 0UL, 0UL);
#endif
    uint64_t seen = 0;
    UniqueLock lock(mu_);
    for (;;) {
      lock.wait(work_cv_, [&]() WHARF_REQUIRES(mu_) { return stop_ || generation_ != seen; });
      if (stop_) return;
      seen = generation_;
      // Workers beyond this job's count skip it; run() does not wait for them.
      if (index >= job_threads_) continue;
      const std::function<void(uint32_t)>* fn = job_;
      lock.unlock();
      (*fn)(index);
      lock.lock();
      WHARF_DCHECK(running_ > 0, "worker pool: more workers finished than were running");
      if (--running_ == 0) done_cv_.notify_all();
    }
  }

  Mutex mu_;
  std::condition_variable work_cv_, done_cv_;
  const std::function<void(uint32_t)>* job_ WHARF_GUARDED_BY(mu_) = nullptr;
  uint32_t job_threads_ WHARF_GUARDED_BY(mu_) = 0;
  uint32_t running_ WHARF_GUARDED_BY(mu_) = 0;  // workers of the current job not yet done
  uint64_t generation_ WHARF_GUARDED_BY(mu_) = 0;
  bool stop_ WHARF_GUARDED_BY(mu_) = false;
  std::vector<std::thread> threads_;  // filled by start() before any run(), then fixed
};

// A contiguous source -> destination range: `dst_offset` bytes into the destination of
// request `request` (known only once that destination is ready; see Job::dst). A null `src`:
// the request reads a file, at its file_offset + dst_offset. Staged segments sit at
// `chunk_offset` in their fill's chunk. `joins`: its destination may continue the previous
// segment's in the same allocation (the same request, or the next request of its
// dst_group); where both the ring bytes and the destinations are adjacent, one DMA carries
// both. Two allocations can sit back to back, and CUDA rejects one copy spanning both
// (cudaErrorInvalidValue), so adjacency alone never merges copies.
struct Segment {
  const char* src;
  uint64_t dst_offset;
  uint64_t bytes;
  size_t request;
  uint64_t chunk_offset = 0;
  bool joins = false;
};

// Segments [begin, end) of Job::staged, packed back to back into one staging chunk.
struct Fill {
  size_t begin, end;
};

// One copy() call's work for the pool, and the first error any thread hit.
using Clock = std::chrono::steady_clock;

uint64_t ns_since(Clock::time_point t0) {
  return uint64_t(std::chrono::duration_cast<std::chrono::nanoseconds>(Clock::now() - t0).count());
}

// The trace of one copy() call (TransferTrace), collected only when asked for. Every
// record has one writer: a fill's the worker that read it, a block's the worker that
// enqueued it, a worker's that worker, the rest the calling thread; all are read after
// pool.wait() and the drain.
struct Trace {
  bool on = false;
  bool device = false;  // timing events (device times)
  Clock::time_point t0;
  TransferTrace* out = nullptr;  // non-null when on

  Clock::time_point now() const { return on ? Clock::now() : Clock::time_point(); }
  int64_t at(Clock::time_point t) const {
    return int64_t(std::chrono::duration_cast<std::chrono::nanoseconds>(t - t0).count());
  }
  int64_t now_ns() const { return on ? at(Clock::now()) : -1; }
  // The events of block k and of direct copy j (TransferTrace::directs), when timing.
  std::vector<Event*> block_start, block_end, direct_start, direct_end;
  Event* start_event = nullptr;
  std::vector<char> block_timed, direct_timed;  // both of its events recorded
  std::vector<int> direct_slot;                 // request -> index in out->directs, or -1
};

struct Job {
  const std::vector<CopyRequest>* requests = nullptr;
  std::vector<Segment> staged;  // pageable/file -> device, via the ring
  std::vector<Fill> fills;
  std::vector<Segment> host;  // pageable -> pinned host: plain memcpy, no DMA
  const std::vector<Event*>* wait_for = nullptr;

  // Destinations by request. Requests [0, ready) have theirs: given by the caller or
  // allocated by the calling thread, which writes dst[i] before publishing ready > i.
  std::vector<char*> dst;
  std::atomic<size_t> ready{0};
  Mutex ready_mu;  // with ready_cv, for workers that must wait for a destination
  std::condition_variable ready_cv;

  Trace trace;
  std::string trace_path;  // WHARF_TRANSFER_TRACE, read when the call began

  std::atomic<size_t> next_fill{0};
  std::atomic<size_t> next_host{0};

  // Blocks of fills (see the top of this file): fills of block k not read yet; the ring slot
  // block k took (kNoSlot: none yet, kTakingSlot: one of its fills is taking one) and whether
  // that slot held an earlier block of this call; slots not used yet in this call (taken from
  // the back: 0, 1, ... in order), and slots whose block is on the stream, oldest first.
  static constexpr int64_t kNoSlot = -1, kTakingSlot = -2;
  std::unique_ptr<std::atomic<uint32_t>[]> block_left;
  Mutex issue_mu;
  std::condition_variable issue_cv;
  std::vector<int64_t> block_slot WHARF_GUARDED_BY(issue_mu);
  std::vector<bool> block_reuses WHARF_GUARDED_BY(issue_mu);
  std::vector<uint32_t> unused_slots WHARF_GUARDED_BY(issue_mu);
  std::deque<uint32_t> issued_slots WHARF_GUARDED_BY(issue_mu);
  std::atomic<uint64_t> staged_copies{0};
  std::atomic<uint64_t> direct_copies{0};
  // The serving policy of this call (device/serving.h), read once when it begins.
  ServingPolicy policy;
  std::atomic<uint64_t> paced_waits{0};
  std::atomic<uint64_t> polls{0};  // event queries that found the copy engine not done yet
  // Set on the first error so no thread starts another piece; pieces already running finish.
  std::atomic<bool> failed{false};

  // Progress (only when the caller asked for it): bytes the workers have read from their
  // sources, and a wake-up for the calling thread each Progress::kInterval of them and when
  // the workers are done.
  bool progress_on = false;
  std::atomic<uint64_t> read_bytes{0};
  std::atomic<uint32_t> workers_left{0};
  Mutex progress_mu;
  std::condition_variable progress_cv;
  void advance(uint64_t n) WHARF_EXCLUDES(progress_mu) {
    if (!progress_on) return;
    const uint64_t before = read_bytes.fetch_add(n, std::memory_order_relaxed);
    if (before / Progress::kInterval != (before + n) / Progress::kInterval) {
      MutexLock lock(progress_mu);
      progress_cv.notify_all();
    }
  }
  void worker_done() WHARF_EXCLUDES(progress_mu) {
    if (!progress_on) return;
    workers_left.fetch_sub(1, std::memory_order_acq_rel);
    MutexLock lock(progress_mu);
    progress_cv.notify_all();
  }

  Mutex mu;
  Status error WHARF_GUARDED_BY(mu);  // the first error

  // Its own lock: a worker failing elsewhere must not queue behind a long host-side wait.
  Mutex host_mu;
  bool host_waited WHARF_GUARDED_BY(host_mu) = false;  // wait_for synchronized on the host
  Status host_wait_status WHARF_GUARDED_BY(host_mu);

  void fail(Status st) WHARF_EXCLUDES(mu, ready_mu, progress_mu, issue_mu) {
    WHARF_DCHECK(!st.ok(), "transfer: failing a job with an OK status");
    {
      MutexLock lock(mu);
      if (error.ok()) error = std::move(st);
      failed.store(true, std::memory_order_relaxed);
    }
    // Workers waiting for a destination or a block that will never come must see the failure.
    {
      MutexLock lock(ready_mu);
      ready_cv.notify_all();
    }
    {
      MutexLock lock(issue_mu);
      issue_cv.notify_all();
    }
    if (progress_on) {
      MutexLock lock(progress_mu);
      progress_cv.notify_all();
    }
  }

  // Sets up the slots for `blocks` blocks over a ring of `slots` slots.
  void reset_slots(size_t blocks, uint64_t slots) WHARF_EXCLUDES(issue_mu) {
    MutexLock lock(issue_mu);
    block_slot.assign(blocks, kNoSlot);
    block_reuses.assign(blocks, false);
    unused_slots.clear();
    for (uint64_t i = slots; i-- > 0;) unused_slots.push_back(uint32_t(i));
    issued_slots.clear();
  }
  // Block k's ring slot, taken by the first of its fills to ask (waiting until a slot is on
  // the stream if none is free); *reuses: the slot held an earlier block of this call, whose
  // event the caller must wait for before writing. -1 if the job failed first.
  int64_t slot_of(size_t k, bool* reuses) WHARF_EXCLUDES(issue_mu) {
    UniqueLock lock(issue_mu);
    auto failed_now = [&] { return failed.load(std::memory_order_relaxed); };
    lock.wait(issue_cv, [&]() WHARF_REQUIRES(issue_mu) { return block_slot[k] != kTakingSlot || failed_now(); });
    if (failed_now()) return -1;
    if (block_slot[k] == kNoSlot) {
      block_slot[k] = kTakingSlot;
      lock.wait(issue_cv, [&]() WHARF_REQUIRES(issue_mu) {
        return !unused_slots.empty() || !issued_slots.empty() || failed_now();
      });
      if (failed_now()) {
        issue_cv.notify_all();  // the block's other fills wait for this one
        return -1;
      }
      if (!unused_slots.empty()) {
        block_slot[k] = unused_slots.back();
        unused_slots.pop_back();
      } else {
        block_slot[k] = issued_slots.front();
        issued_slots.pop_front();
        block_reuses[k] = true;
      }
      issue_cv.notify_all();
    }
    *reuses = block_reuses[k];
    return block_slot[k];
  }
  // Marks `slot` as on the stream (its block's event recorded), for the next block to take.
  void mark_issued(uint32_t slot) WHARF_EXCLUDES(issue_mu) {
    MutexLock lock(issue_mu);
    issued_slots.push_back(slot);
    issue_cv.notify_all();
  }

  // Publishes request i's destination (requests are published in order).
  void publish(size_t i, char* d) WHARF_EXCLUDES(ready_mu) {
    dst[i] = d;
    MutexLock lock(ready_mu);
    ready.store(i + 1, std::memory_order_release);
    ready_cv.notify_all();
  }
  // The destination of request i, once ready; null if the job failed first.
  char* wait_dst(size_t i) WHARF_EXCLUDES(ready_mu) {
    if (ready.load(std::memory_order_acquire) <= i) {
      UniqueLock lock(ready_mu);
      lock.wait(ready_cv,
                [&] { return ready.load(std::memory_order_acquire) > i || failed.load(std::memory_order_relaxed); });
      if (ready.load(std::memory_order_acquire) <= i) return nullptr;
    }
    return dst[i];
  }
  Status first_error() WHARF_EXCLUDES(mu) {
    MutexLock lock(mu);
    return error;
  }

  // How pageable sources are copied into the ring (TransferOptions::staging_copy).
  StagingCopy staging_copy = StagingCopy::kStream;

  // Puts segment s's source bytes at `to`: a copy, or a pread of its file. Into the ring
  // (`to_ring`), which the DMA engine reads next, the copy writes around the cache (no
  // read-for-ownership of the ring's lines; device/dma_copy.h); into a pinned destination,
  // which host code may read next, it is a memcpy. A short or failed read names the request,
  // the tensor, the file and the range.
  Status read(const Segment& s, char* to, bool to_ring) const {
    if (s.src) {
      if (to_ring && staging_copy == StagingCopy::kStream)
        copy_to_dma_buffer(to, s.src, s.bytes);
      else
        std::memcpy(to, s.src, s.bytes);
      return Status::Ok();
    }
    const CopyRequest& r = (*requests)[s.request];
    Status st = r.file->read_exact(to, s.bytes, r.file_offset + s.dst_offset);
    if (st.ok()) return st;
    return st.with_context("copy request " + std::to_string(s.request) + " of " + std::to_string(requests->size()) +
                           (r.name.empty() ? std::string() : " (" + quote_name(r.name, kMaxQuotedPathBytes) + ")"));
  }

  // A host memcpy into pinned memory is not ordered by the copy stream, so the events that
  // order the destination's previous use are waited for on the host instead, once, by the
  // first worker that needs it (and only if the call has such pieces).
  Status wait_on_host() WHARF_EXCLUDES(host_mu) {
    MutexLock lock(host_mu);
    if (!host_waited) {
      host_waited = true;
      for (size_t k = 0; k < wait_for->size(); ++k) {
        Status st = (*wait_for)[k]->synchronize();
        if (!st.ok()) {
          host_wait_status = st.with_context("waiting on the host for wait_for event " + std::to_string(k) +
                                             " before copying into pinned host memory");
          break;
        }
      }
    }
    return host_wait_status;
  }
};

// The staging ring these options give: its chunks, the chunks of a block, the staging threads.
struct RingShape {
  uint64_t chunks = 1, block_chunks = 1;
  uint32_t threads = 1;
};
RingShape ring_shape(const TransferOptions& opts) {
  RingShape r;
  r.chunks = opts.staging_bytes / opts.chunk_bytes;  // >= 1: validated at create
  const uint64_t n = r.chunks;
  // Two chunks per thread let one fill while the other is in flight; with fewer chunks,
  // fewer threads stage (each with at least two chunks, or one thread with the only chunk).
  r.threads = static_cast<uint32_t>(std::min<uint64_t>(opts.threads, std::max<uint64_t>(1, n / 2)));
  // Blocks: as many chunks as block_bytes holds, at most half the ring (one block fills while
  // another is copied), and a divisor of the chunk count so that no block wraps the ring.
  uint64_t g =
      std::min<uint64_t>(std::max<uint64_t>(1, opts.block_bytes / opts.chunk_bytes), std::max<uint64_t>(1, n / 2));
  while (n % g != 0) --g;
  r.block_chunks = g;
  return r;
}

const char* kind_name(PointerKind k) {
  switch (k) {
    case PointerKind::kPageableHost:
      return "pageable host";
    case PointerKind::kPinnedHost:
      return "pinned host";
    case PointerKind::kDevice:
      return "device";
  }
  return "unknown";
}

}  // namespace

struct TransferEngine::Impl {
  // Set by create(), then read-only.
  std::shared_ptr<Device> device;
  TransferOptions opts;
  StagingCopy staging_copy = StagingCopy::kStream;  // opts.staging_copy, or the environment's
  bool ramp_start = true;                           // opts.ramp_start, or the environment's
  uint64_t alloc_ahead = 0;                         // opts.alloc_ahead_bytes, or the environment's
  // Serialises copy(): one transfer uses the whole ring and every worker. The pool's workers
  // run only inside copy()'s pool.run(), which holds mu until every one of them returns:
  // they work on the holder's behalf, so the job's functions are analysed as holding it.
  Mutex mu;

  // The staging ring, created on the first call that needs it and kept: num_chunks chunks
  // in blocks of block_chunks, one event per block slot (its last block's DMAs).
  Buffer ring WHARF_GUARDED_BY(mu);
  std::vector<std::unique_ptr<Event>> block_events WHARF_GUARDED_BY(mu);
  uint64_t num_chunks WHARF_GUARDED_BY(mu) = 0;
  uint64_t block_chunks WHARF_GUARDED_BY(mu) = 1;
  // Timing events of traced calls (begin_trace), kept for the next one.
  std::vector<std::unique_ptr<Event>> trace_events WHARF_GUARDED_BY(mu);

  // Declared after the ring so it is destroyed first: the stream drains before the ring
  // it reads is freed (copy() already drains it before returning; this keeps it so).
  // Created by create(), then fixed (a Stream is safe to use from many threads).
  std::unique_ptr<Stream> stream;
  // Last, so it is destroyed first: its threads use everything above.
  WorkerPool pool;

  // Serving while updating: the copy stream's pieces still in flight while pacing (each with
  // the event recorded after it), oldest first, and their bytes; spare events for reuse.
  struct Pending {
    std::unique_ptr<Event> event;
    uint64_t bytes;
  };
  Mutex pace_mu;
  std::deque<Pending> pending WHARF_GUARDED_BY(pace_mu);
  uint64_t inflight WHARF_GUARDED_BY(pace_mu) = 0;
  std::vector<std::unique_ptr<Event>> spare_events WHARF_GUARDED_BY(pace_mu);

  // Whether runs are being served on the device now, under `policy`.
  bool serving(const ServingPolicy& policy) const {
    return opts.serving && policy.window_ms > 0 && opts.serving->active(policy.window_ms);
  }
  // Enqueues one copy on the copy stream (counted in *copies, one per DMA). While runs are
  // served it goes in pieces of at most policy.dma_bytes, and waits before each piece until
  // the stream holds at most policy.inflight_bytes including it (device/serving.h).
  Status enqueue(Job& job, void* dst, const void* src, uint64_t bytes, std::atomic<uint64_t>* copies)
      WHARF_EXCLUDES(pace_mu);
  // Waits for `ev` on the host: Event::synchronize (CUDA spins by default), or, while runs are
  // being served with policy.poll_us > 0, a query every poll_us with the thread asleep in
  // between, so waiting staging threads leave the cores to the serving ones.
  Status wait_event(Job& job, Event& ev);
  // After the stream drained: every pending piece is complete.
  void forget_pending() WHARF_EXCLUDES(pace_mu);

  Status ensure_ring() WHARF_REQUIRES(mu);
  // Tracing (Job::trace): sizes the records and readies the timing events once the call is
  // planned, then, after the drain, reads the device times and hands the trace out.
  void begin_trace(Job& job, size_t blocks, const std::vector<size_t>& direct) WHARF_REQUIRES(mu);
  void end_trace(Job& job, const TransferStats& totals, uint32_t stage_n, const Status& result, bool drained)
      WHARF_REQUIRES(mu);
  // t: the worker's index (its trace record).
  void run_staged(Job& job, uint32_t t) WHARF_REQUIRES(mu);
  // Enqueues block k's DMAs from ring slot `slot` and records the slot's event (worker t,
  // which read its last fill).
  void issue_block(Job& job, size_t k, uint32_t slot, uint32_t t) WHARF_REQUIRES(mu);
  void run_host(Job& job, uint32_t t);
  Status copy(const std::vector<CopyRequest>& requests, const std::vector<Event*>& wait_for, TransferStats* stats,
              const AllocateFn& allocate, const CopyProgressFn& progress, TransferTrace* trace) WHARF_EXCLUDES(mu);
};

Status TransferEngine::Impl::ensure_ring() {
  if (ring) return Status::Ok();
  const uint64_t n = opts.staging_bytes / opts.chunk_bytes;  // >= 1: validated at create
  const uint64_t g = ring_shape(opts).block_chunks;
  const uint64_t slots = n / g;
  // Built in locals and committed only when complete: a failure leaves no ring, no
  // accounting and no events behind, and the next call tries again.
  Buffer buf;
  WHARF_RETURN_IF_ERROR(device->allocate(
      MemKind::kPinnedHost, MemTag::kStaging, n * opts.chunk_bytes,
      "the transfer staging ring (" + std::to_string(n) + " chunks of " + mib_text(opts.chunk_bytes) + ")", &buf));
  std::vector<std::unique_ptr<Event>> events(slots);
  for (uint64_t i = 0; i < slots; ++i) {
    Status st = device->create_event(&events[i]);
    if (!st.ok())
      return st.with_context("creating the event of staging block " + std::to_string(i) + " of " +
                             std::to_string(slots));
  }
  ring = std::move(buf);
  block_events = std::move(events);
  num_chunks = n;
  block_chunks = g;
  return Status::Ok();
}

void TransferEngine::Impl::run_staged(Job& job, uint32_t t) {
  char* const base = static_cast<char*>(ring.data());
  const uint64_t chunk_bytes = opts.chunk_bytes;
  for (;;) {
    if (job.failed.load(std::memory_order_relaxed)) return;
    const size_t f = job.next_fill.fetch_add(1, std::memory_order_relaxed);
    if (f >= job.fills.size()) return;
    const Fill& fill = job.fills[f];
    const size_t k = f / block_chunks;

    // The slot's previous block in this call must be on the stream (slot_of hands out only
    // such slots) and its DMAs done before we overwrite the chunk (blocks of earlier calls
    // were drained by them). With a ring of two blocks or more this is usually long complete.
    const Clock::time_point t_wait = job.trace.now();
    bool reuses = false;
    const int64_t slot = job.slot_of(k, &reuses);
    if (slot < 0) return;  // the job failed; its error is recorded
    char* const chunk = base + (uint64_t(slot) * block_chunks + (f - k * block_chunks)) * chunk_bytes;
    if (reuses) {
      Status st = wait_event(job, *block_events[size_t(slot)]);
      if (!st.ok()) {
        job.fail(st.with_context("waiting for staging block " + std::to_string(slot) + "'s previous copy"));
        return;
      }
    }
    test_hook("transfer.staged.fill");  // about to read a fill's sources into its chunk
    const Clock::time_point t_read = job.trace.now();
#ifdef __linux__
    const int cpu = job.trace.on ? sched_getcpu() : -1;
#else
    const int cpu = -1;
#endif
    uint64_t bytes = 0;
    for (size_t i = fill.begin; i < fill.end; ++i) {
      const Segment& s = job.staged[i];
      Status rs = job.read(s, chunk + s.chunk_offset, /*to_ring=*/true);
      if (!rs.ok()) {
        job.fail(rs);  // the block is never enqueued: nothing reads the chunk
        return;
      }
      bytes += s.bytes;
    }
    if (job.trace.on) {
      const Clock::time_point t_end = Clock::now();
      TransferTrace::Fill& rec = job.trace.out->fills[f];
      rec.block = uint32_t(k);
      rec.thread = t;
      rec.cpu = cpu;
      rec.bytes = bytes;
      rec.wait_ns = job.trace.at(t_wait);
      rec.read_start_ns = job.trace.at(t_read);
      rec.read_end_ns = job.trace.at(t_end);
      TransferTrace::Worker& w = job.trace.out->workers[t];
      ++w.fills;
      w.bytes += bytes;
      w.chunk_wait_ns += uint64_t(rec.read_start_ns - rec.wait_ns);
      w.read_ns += uint64_t(rec.read_end_ns - rec.read_start_ns);
    }
    job.advance(bytes);
    // The last reader of a block enqueues it; acq_rel: it sees every other fill's bytes.
    if (job.block_left[k].fetch_sub(1, std::memory_order_acq_rel) == 1) issue_block(job, k, uint32_t(slot), t);
  }
}

void TransferEngine::Impl::issue_block(Job& job, size_t k, uint32_t slot, uint32_t t) {
  const uint64_t chunk_bytes = opts.chunk_bytes;
  TransferTrace::Block* rec = job.trace.on ? &job.trace.out->blocks[k] : nullptr;
  TransferTrace::Worker* wrec = job.trace.on ? &job.trace.out->workers[t] : nullptr;
  bool started = false;  // tracing: the block's first DMA call began
  bool timed = false;    // its start event is on the stream (recorded just before that DMA)
  if (rec) {
    rec->thread = t;
    rec->ready_ns = job.trace.now_ns();
  }
  const size_t first = k * block_chunks, end = std::min<size_t>(job.fills.size(), first + block_chunks);
  char* const block = static_cast<char*>(ring.data()) + uint64_t(slot) * block_chunks * chunk_bytes;
  // One DMA per run of segments whose ring bytes and destinations both continue each other.
  struct Run {
    const char* from = nullptr;
    char* to = nullptr;
    uint64_t bytes = 0;
    size_t request = 0;
  } run;
  auto flush = [&]() -> bool {
    if (run.bytes == 0) return true;
    const Clock::time_point t_enq = job.trace.now();
    if (rec && !started) {
      started = true;
      rec->enqueue_start_ns = job.trace.at(t_enq);
      // A failed record only costs the block its device times.
      timed = job.trace.device && stream->record(*job.trace.block_start[k]).ok();
    }
    Status cs = enqueue(job, run.to, run.from, run.bytes, &job.staged_copies);
    if (rec) {
      ++rec->copies;
      rec->bytes += run.bytes;
      wrec->enqueue_ns += uint64_t(ns_since(t_enq));
    }
    if (!cs.ok()) {
      // Stop using this block: DMAs from it that were enqueued are not covered by its event,
      // but no one refills it in this call and copy() drains the stream first.
      job.fail(cs.with_context("copy request " + std::to_string(run.request) + ": enqueueing the copy of " +
                               std::to_string(run.bytes) + " bytes from staging block " + std::to_string(slot)));
      return false;
    }
    return true;
  };
  for (size_t f = first; f < end; ++f) {
    const Fill& fill = job.fills[f];
    const char* const chunk = block + (f - first) * chunk_bytes;
    for (size_t i = fill.begin; i < fill.end; ++i) {
      const Segment& s = job.staged[i];
      const Clock::time_point t_dst = job.trace.now();
      char* const dst = job.wait_dst(s.request);
      if (wrec) wrec->dst_wait_ns += uint64_t(ns_since(t_dst));
      if (!dst) return;  // the job failed (its error is recorded); nothing more is enqueued
      const char* const from = chunk + s.chunk_offset;
      char* const to = dst + s.dst_offset;
      if (run.bytes > 0 && s.joins && from == run.from + run.bytes && to == run.to + run.bytes) {
        run.bytes += s.bytes;
        continue;
      }
      if (!flush()) return;
      run = Run{from, to, s.bytes, s.request};
    }
  }
  if (!flush()) return;
  Status st = stream->record(*block_events[slot]);
  if (!st.ok()) {
    job.fail(st.with_context("recording the event of staging block " + std::to_string(slot) + " after its copy"));
    return;
  }
  if (rec) {
    rec->fills = uint32_t(end - first);
    // Device times only where both events are recorded in this call (a reused event may hold
    // an earlier call's record).
    if (timed && stream->record(*job.trace.block_end[k]).ok()) job.trace.block_timed[k] = 1;
    rec->enqueue_end_ns = job.trace.now_ns();
  }
  job.mark_issued(slot);
  for (size_t f = first; f < end; ++f) test_hook("transfer.staged.enqueued");  // each fill's DMAs are on the stream
}

Status TransferEngine::Impl::enqueue(Job& job, void* dst, const void* src, uint64_t bytes,
                                     std::atomic<uint64_t>* copies) {
  const ServingPolicy& p = job.policy;
  const bool now_serving = serving(p);
  const uint64_t piece = now_serving && p.dma_bytes > 0 ? p.dma_bytes : bytes;
  const bool pace = now_serving && p.inflight_bytes > 0;
  for (uint64_t off = 0; off < bytes; off += piece) {
    const uint64_t n = std::min(piece, bytes - off);
    char* const to = static_cast<char*>(dst) + off;
    const char* const from = static_cast<const char*>(src) + off;
    if (!pace) {
      WHARF_RETURN_IF_ERROR(stream->copy_async(to, from, n));
      copies->fetch_add(1, std::memory_order_relaxed);
      continue;
    }
    // One enqueuer at a time while pacing: the oldest pieces are waited for in stream order.
    MutexLock lock(pace_mu);
    while (!pending.empty() && inflight + n > p.inflight_bytes) {
      Pending& oldest = pending.front();
      WHARF_RETURN_IF_ERROR(wait_event(job, *oldest.event)
                                .with_context("waiting for an earlier copy while pacing for runs being served"));
      inflight -= oldest.bytes;
      spare_events.push_back(std::move(oldest.event));
      pending.pop_front();
      job.paced_waits.fetch_add(1, std::memory_order_relaxed);
    }
    WHARF_RETURN_IF_ERROR(stream->copy_async(to, from, n));
    copies->fetch_add(1, std::memory_order_relaxed);
    std::unique_ptr<Event> ev;
    if (!spare_events.empty()) {
      ev = std::move(spare_events.back());
      spare_events.pop_back();
    } else {
      WHARF_RETURN_IF_ERROR(device->create_event(&ev).with_context("creating a pacing event"));
    }
    WHARF_RETURN_IF_ERROR(stream->record(*ev).with_context("recording a pacing event"));
    pending.push_back({std::move(ev), n});
    inflight += n;
  }
  return Status::Ok();
}

Status TransferEngine::Impl::wait_event(Job& job, Event& ev) {
  if (job.policy.poll_us == 0 || !serving(job.policy)) return ev.synchronize();
  for (;;) {
    bool done = false;
    WHARF_RETURN_IF_ERROR(ev.query(&done));
    if (done) return Status::Ok();
    job.polls.fetch_add(1, std::memory_order_relaxed);
    std::this_thread::sleep_for(std::chrono::microseconds(job.policy.poll_us));
  }
}

void TransferEngine::Impl::forget_pending() {
  MutexLock lock(pace_mu);
  for (Pending& q : pending) spare_events.push_back(std::move(q.event));
  pending.clear();
  inflight = 0;
}

void TransferEngine::Impl::run_host(Job& job, uint32_t t) {
  for (;;) {
    if (job.failed.load(std::memory_order_relaxed)) return;
    const size_t h = job.next_host.fetch_add(1, std::memory_order_relaxed);
    if (h >= job.host.size()) return;
    Status st = job.wait_on_host();
    if (!st.ok()) {
      job.fail(st);
      return;
    }
    const Segment& s = job.host[h];
    char* const dst = job.wait_dst(s.request);
    if (!dst) return;
    const Clock::time_point t_read = job.trace.now();
    st = job.read(s, dst + s.dst_offset, /*to_ring=*/false);
    if (!st.ok()) {
      job.fail(st);
      return;
    }
    if (job.trace.on) {
      TransferTrace::Worker& w = job.trace.out->workers[t];
      ++w.host_pieces;
      w.bytes += s.bytes;
      w.read_ns += uint64_t(ns_since(t_read));
    }
    job.advance(s.bytes);
  }
}

uint64_t staging_fill_bytes(size_t fill, uint64_t chunk_bytes, uint64_t block_chunks, uint64_t staging_threads,
                            bool ramp) {
  if (!ramp || block_chunks == 0 || staging_threads == 0) return chunk_bytes;
  // The blocks the threads begin together: their fills all end about one chunk's read after
  // the start, so none could leave before then. Smaller fills in them, growing block by block,
  // let the first leave after a fraction of that and the next ones follow while the threads
  // go on to whole chunks.
  const uint64_t wave = (staging_threads + block_chunks - 1) / block_chunks;
  const uint64_t block = fill / block_chunks;
  if (block >= wave) return chunk_bytes;
  constexpr uint64_t kAlign = 4096;  // whole pages: keeps the ring's copies aligned
  const uint64_t bytes = chunk_bytes / (wave + 1) * (block + 1) / kAlign * kAlign;
  return std::min(chunk_bytes, std::max(bytes, kAlign));
}

void TransferEngine::Impl::begin_trace(Job& job, size_t blocks, const std::vector<size_t>& direct) {
  Trace& tr = job.trace;
  TransferTrace& o = *tr.out;
  o.planned_ns = tr.now_ns();
  const Clock::time_point s0 = Clock::now();
  o.fills.assign(job.fills.size(), {});
  o.blocks.assign(blocks, {});
  o.workers.assign(pool.size(), {});
  o.directs.assign(direct.size(), {});
  tr.direct_slot.assign(job.requests->size(), -1);
  for (size_t j = 0; j < direct.size(); ++j) {
    o.directs[j].request = direct[j];
    o.directs[j].bytes = (*job.requests)[direct[j]].bytes;
    tr.direct_slot[direct[j]] = int(j);
  }
  o.allocs.reserve(job.requests->size());
  if (tr.device) {
    // Timing events are kept between traced calls: creating them is the setup left out.
    const size_t need = 1 + 2 * blocks + 2 * direct.size();
    Status st;
    while (st.ok() && trace_events.size() < need) {
      std::unique_ptr<Event> e;
      st = device->create_timing_event(&e);
      if (st.ok()) trace_events.push_back(std::move(e));
    }
    if (st.ok()) {
      tr.start_event = trace_events[0].get();
      tr.block_start.resize(blocks);
      tr.block_end.resize(blocks);
      for (size_t k = 0; k < blocks; ++k) {
        tr.block_start[k] = trace_events[1 + 2 * k].get();
        tr.block_end[k] = trace_events[2 + 2 * k].get();
      }
      tr.direct_start.resize(direct.size());
      tr.direct_end.resize(direct.size());
      for (size_t j = 0; j < direct.size(); ++j) {
        tr.direct_start[j] = trace_events[1 + 2 * blocks + 2 * j].get();
        tr.direct_end[j] = trace_events[2 + 2 * blocks + 2 * j].get();
      }
      tr.block_timed.assign(blocks, 0);
      tr.direct_timed.assign(direct.size(), 0);
    } else {
      WHARF_LOG(kWarn, "transfer trace: no device times (" + st.message() + ")");
      tr.device = false;
    }
  }
  const Clock::duration setup = Clock::now() - s0;
  o.setup_ns = uint64_t(std::chrono::duration_cast<std::chrono::nanoseconds>(setup).count());
  tr.t0 += setup;  // left out of every later time
  // The stream is idle (every call drains it), so this event completes at once: the device
  // clock's zero, within microseconds of the host's.
  if (tr.device && !stream->record(*tr.start_event).ok()) tr.device = false;
}

void TransferEngine::Impl::end_trace(Job& job, const TransferStats& totals, uint32_t stage_n, const Status& result,
                                     bool drained) {
  Trace& tr = job.trace;
  TransferTrace& o = *tr.out;
  o.total_ns = tr.now_ns();
  o.requests = job.requests->size();
  o.pageable_bytes = totals.pageable_bytes;
  o.pinned_bytes = totals.pinned_bytes;
  o.device_bytes = totals.device_bytes;
  o.file_bytes = totals.file_bytes;
  o.staging_threads = stage_n;
  o.block_chunks = uint32_t(block_chunks);
  o.chunk_bytes = opts.chunk_bytes;
  o.ring_bytes = num_chunks * opts.chunk_bytes;
  o.staging_copy = staging_copy_name(job.staging_copy);
  o.serving = totals.serving;
  o.staged_copies = job.staged_copies.load(std::memory_order_relaxed);
  o.ramp_start = ramp_start;
  o.alloc_ahead_bytes = alloc_ahead;
  o.error = result.ok() ? std::string() : result.message();
  // Device times: only after a drain, and only of events recorded in this call.
  o.device_times = tr.device && drained;
  if (o.device_times) {
    auto since_start = [&](Event* e) {
      double ms = -1;
      return e->elapsed_ms_since(*tr.start_event, &ms).ok() ? ms : -1.0;
    };
    for (size_t k = 0; k < o.blocks.size(); ++k)
      if (tr.block_timed[k]) {
        o.blocks[k].device_start_ms = since_start(tr.block_start[k]);
        o.blocks[k].device_end_ms = since_start(tr.block_end[k]);
      }
    for (size_t j = 0; j < o.directs.size(); ++j)
      if (tr.direct_timed[j]) {
        o.directs[j].device_start_ms = since_start(tr.direct_start[j]);
        o.directs[j].device_end_ms = since_start(tr.direct_end[j]);
      }
  }
  if (!job.trace_path.empty()) {
    const std::string text = format_transfer_trace(o);
    FILE* f = std::fopen(job.trace_path.c_str(), "a");
    const bool written = f && std::fwrite(text.data(), 1, text.size(), f) == text.size();
    if (f && std::fclose(f) != 0) f = nullptr;
    if (!written || !f)
      WHARF_LOG(kWarn, "WHARF_TRANSFER_TRACE: cannot append the trace to " + quote_path(job.trace_path) + ": " +
                           std::strerror(errno));
  }
  if (log_enabled(LogLevel::kDebug)) log_transfer_trace(o);
}

Status TransferEngine::Impl::copy(const std::vector<CopyRequest>& requests, const std::vector<Event*>& wait_for,
                                  TransferStats* stats, const AllocateFn& allocate, const CopyProgressFn& progress,
                                  TransferTrace* trace) {
  test_hook("transfer.copy.begin");  // before the engine's lock: a test may change a source file here
  MutexLock lock(mu);
  if (stats) *stats = TransferStats{};
  Job job;
  job.requests = &requests;
  job.policy = opts.serving_policy.value_or(ServingPolicy{});
  job.staging_copy = staging_copy;
  job.progress_on = bool(progress);
  // Tracing: for the caller's `trace`, for WHARF_TRANSFER_TRACE (a file each traced call
  // appends to), with device times; for the debug log, host times only.
  TransferTrace local_trace;
  if (const char* path = std::getenv("WHARF_TRANSFER_TRACE"); path && *path) job.trace_path = path;
  job.trace.device = trace || !job.trace_path.empty();
  job.trace.on = job.trace.device || log_enabled(LogLevel::kDebug);
  if (job.trace.on) {
    job.trace.out = trace ? trace : &local_trace;
    *job.trace.out = TransferTrace{};
    job.trace.t0 = Clock::now();
  }

  // 1. Validate and classify everything first: an invalid request copies nothing.
  for (size_t k = 0; k < wait_for.size(); ++k)
    if (!wait_for[k]) return InvalidArgument("copy: wait_for event " + std::to_string(k) + " is null");
  TransferStats totals;
  std::vector<size_t> direct, staged, host;
  const std::string of_n = " of " + std::to_string(requests.size());
  for (size_t i = 0; i < requests.size(); ++i) {
    const CopyRequest& r = requests[i];
    if (r.bytes == 0) continue;
    const bool has_source = r.file ? !r.src : r.src != nullptr;  // exactly one of the two
    if (!has_source || (!r.dst && !allocate))
      return InvalidArgument("copy request " + std::to_string(i) + of_n + ": " + std::to_string(r.bytes) +
                             " bytes with " +
                             (!has_source ? (r.file ? "both a source address and a file" : "a null source")
                                          : "a null destination (and no allocate callback)"));
    PointerInfo d;
    if (r.dst) {
      d = device->query_pointer(r.dst);
    } else {  // allocated below, by this device
      d.kind = r.dst_kind == MemKind::kPinnedHost ? PointerKind::kPinnedHost : PointerKind::kDevice;
      d.device_index = device->index();
    }
    if (d.kind == PointerKind::kPageableHost)
      return InvalidArgument("copy request " + std::to_string(i) + of_n +
                             ": the destination is pageable host memory; it must be device or pinned "
                             "host memory allocated by this runtime's device");
    if (d.kind == PointerKind::kDevice && d.device_index != device->index())
      return InvalidArgument("copy request " + std::to_string(i) + of_n + ": the destination is memory of device " +
                             std::to_string(d.device_index) + ", not of this runtime's device " +
                             std::to_string(device->index()));
    if (r.file) {  // read by the staging threads, as a pageable source is copied
      totals.file_bytes += r.bytes;
      (d.kind == PointerKind::kPinnedHost ? host : staged).push_back(i);
      continue;
    }
    switch (r.src_kind ? *r.src_kind : device->query_pointer(r.src).kind) {
      case PointerKind::kPageableHost:
        totals.pageable_bytes += r.bytes;
        (d.kind == PointerKind::kPinnedHost ? host : staged).push_back(i);
        break;
      case PointerKind::kPinnedHost:
        totals.pinned_bytes += r.bytes;
        direct.push_back(i);
        break;
      case PointerKind::kDevice:
        totals.device_bytes += r.bytes;
        direct.push_back(i);
        break;
    }
  }

  // Files: each must still hold every byte asked of it. One truncated since it was opened
  // (and validated) fails here, before any destination is written; one that shrinks later
  // fails its read.
  if (totals.file_bytes > 0) {
    std::unordered_map<const io::ReadOnlyFile*, std::pair<uint64_t, size_t>> ends;  // file -> (end, request)
    for (size_t i = 0; i < requests.size(); ++i) {
      const CopyRequest& r = requests[i];
      if (!r.file || r.bytes == 0) continue;
      auto& e = ends[r.file];
      if (r.file_offset + r.bytes > e.first) e = {r.file_offset + r.bytes, i};
    }
    for (const auto& [file, e] : ends) {
      Status st = file->check_covers(e.first);
      if (!st.ok()) {
        const CopyRequest& r = requests[e.second];
        return st.with_context("copy request " + std::to_string(e.second) + of_n +
                               (r.name.empty() ? std::string() : " (" + quote_name(r.name, kMaxQuotedPathBytes) + ")") +
                               ": nothing was copied");
      }
    }
  }

  // 2. Plan the pool's work. Pageable -> device requests are packed back to back into
  // chunk-sized fills, so 1000 small tensors cost ~1000/chunk fills, not 1000 round trips,
  // and a dst_group's requests (one slab) lie in the ring as in their destination, so the
  // block that carries them needs one DMA, not one per request.
  // The first blocks' fills are smaller (TransferOptions::ramp_start), sized for the threads
  // that will stage this call (fewer while runs are served, see below).
  job.wait_for = &wait_for;
  const uint64_t chunk_bytes = opts.chunk_bytes;
  const bool serving_at_start = serving(job.policy);
  const RingShape shape = ring_shape(opts);
  const uint64_t stage_threads = serving_at_start && job.policy.copy_threads > 0
                                     ? std::min<uint64_t>(shape.threads, job.policy.copy_threads)
                                     : shape.threads;
  uint64_t cap = 0, used = 0;                          // the current fill's capacity and bytes; "full" opens a new one
  std::vector<size_t> first_fill(requests.size(), 0);  // a staged request's first fill
  uint64_t prev_group = 0;                             // the dst_group of the previous staged request
  for (size_t i : staged) {
    const CopyRequest& r = requests[i];
    const char* src = static_cast<const char*>(r.src);  // null for a file: read at file_offset + off
    uint64_t off = 0;
    bool joins = r.dst_group != 0 && r.dst_group == prev_group;
    for (uint64_t left = r.bytes; left > 0;) {
      if (used == cap) {
        cap = staging_fill_bytes(job.fills.size(), chunk_bytes, shape.block_chunks, stage_threads, ramp_start);
        job.fills.push_back({job.staged.size(), job.staged.size()});
        used = 0;
      }
      const uint64_t n = std::min(left, cap - used);
      if (off == 0) first_fill[i] = job.fills.size() - 1;
      job.staged.push_back({src, off, n, i, used, joins});
      job.fills.back().end = job.staged.size();
      used += n;
      if (src) src += n;
      off += n;
      left -= n;
      joins = true;  // the request's next piece continues this one
    }
    prev_group = r.dst_group;
  }
  for (size_t i : host) {
    const CopyRequest& r = requests[i];
    for (uint64_t off = 0; off < r.bytes; off += chunk_bytes)
      job.host.push_back(
          {r.src ? static_cast<const char*>(r.src) + off : nullptr, off, std::min(chunk_bytes, r.bytes - off), i});
  }
  std::vector<bool> is_direct(requests.size(), false);
  for (size_t i : direct) is_direct[i] = true;
  job.dst.assign(requests.size(), nullptr);

  // Before anything is enqueued, so a failed allocation leaves nothing in flight.
  if (!job.fills.empty()) {
    uint64_t staged_bytes = 0;
    for (const Segment& seg : job.staged) staged_bytes += seg.bytes;
    WHARF_RETURN_IF_ERROR(ensure_ring().with_context("copy: staging " + std::to_string(staged_bytes) +
                                                     " bytes from pageable memory or files"));
    const size_t blocks = (job.fills.size() + block_chunks - 1) / block_chunks;
    job.block_left.reset(new std::atomic<uint32_t>[blocks]);
    for (size_t k = 0; k < blocks; ++k)
      job.block_left[k].store(
          static_cast<uint32_t>(std::min<uint64_t>(block_chunks, job.fills.size() - k * block_chunks)),
          std::memory_order_relaxed);
    job.reset_slots(blocks, num_chunks / block_chunks);
  }

  if (job.trace.on)
    begin_trace(job, job.fills.empty() ? 0 : (job.fills.size() + block_chunks - 1) / block_chunks, direct);

  // 3. Enqueue. From here on every path drains the stream before returning.
  Status first;
  for (size_t k = 0; k < wait_for.size() && first.ok(); ++k) {
    Status st = stream->wait(*wait_for[k]);
    if (!st.ok()) first = st.with_context("copy: making the copy stream wait for wait_for event " + std::to_string(k));
  }
  // The pool's workers start staging (their host memcpys need no destination) while this
  // thread, in request order, allocates missing destinations, publishes each one, and
  // enqueues the direct copies: allocation overlaps the DMA of the requests before it.
  // While serving, optionally fewer staging threads (stage_threads, above): cores (and memory
  // bandwidth) for the threads that serve.
  totals.serving = serving_at_start;
  const uint32_t stage_n =
      job.fills.empty() ? 0 : static_cast<uint32_t>(std::min<uint64_t>(stage_threads, job.fills.size()));
  totals.staging_threads = stage_n;
  const uint32_t host_n = static_cast<uint32_t>(std::min<uint64_t>(pool.size(), job.host.size()));
  // Runs on the pool's threads while this thread holds mu (see Impl::mu).
  std::function<void(uint32_t)> work = [&](uint32_t t) WHARF_REQUIRES(mu) {
    // A worker thread must not die with an exception (std::terminate); the only throws
    // possible here are allocation failures while building an error message.
    if (job.trace.on) job.trace.out->workers[t].start_ns = job.trace.now_ns();
    try {
      if (t < stage_n) run_staged(job, t);
      run_host(job, t);
    } catch (const std::exception& e) {
      job.fail(Internal(std::string("transfer copy thread: ") + e.what()));
    } catch (...) {
      job.fail(Internal("transfer copy thread: unknown exception"));
    }
    if (job.trace.on) job.trace.out->workers[t].end_ns = job.trace.now_ns();
    job.worker_done();
  };
  const bool pooled = first.ok() && (stage_n > 0 || host_n > 0);
  // Direct copies' progress: an event after the direct copy that passes each interval mark,
  // completed in stream order (only when the caller asked for progress).
  struct Mark {
    std::unique_ptr<Event> event;
    uint64_t direct_done;
  };
  std::vector<Mark> marks;
  uint64_t direct_enqueued = 0, direct_done = 0;
  size_t next_mark = 0;
  // Reports what is done so far; a refusal fails the job (nothing more is enqueued).
  auto report = [&]() {
    if (!progress || job.failed.load(std::memory_order_relaxed)) return;
    while (next_mark < marks.size()) {
      bool fired = false;
      if (!marks[next_mark].event->query(&fired).ok() || !fired) break;
      direct_done = marks[next_mark++].direct_done;
    }
    Status st = progress(job.read_bytes.load(std::memory_order_relaxed) + direct_done);
    if (!st.ok()) job.fail(st);
  };
  if (pooled) {
    const uint32_t n = std::max(stage_n, host_n);
    job.workers_left.store(n, std::memory_order_relaxed);
    if (job.trace.on) job.trace.out->workers_begin_ns = job.trace.now_ns();
    pool.begin(n, work);
  }
  if (!first.ok()) job.fail(first);
  // Allocating ahead of need (TransferOptions::alloc_ahead_bytes): a staged request's
  // destination only once the staging threads have taken fills up to `ahead` fills before its
  // first one. The fills before it belong to earlier requests, whose destinations are
  // allocated, so the threads always get there (or the job fails): the wait cannot deadlock.
  const uint64_t ahead_fills = (alloc_ahead + chunk_bytes - 1) / chunk_bytes;
  for (size_t i = 0; i < requests.size() && !job.failed.load(std::memory_order_relaxed); ++i) {
    const CopyRequest& r = requests[i];
    void* d = r.dst;
    if (!d && r.bytes > 0 && alloc_ahead > 0 && !is_direct[i] && first_fill[i] > ahead_fills && pooled) {
      // Polled: the threads take a fill every few hundred microseconds, and the lead is
      // whole fills, so a sleep of 50 us costs nothing.
      while (job.next_fill.load(std::memory_order_relaxed) + ahead_fills < first_fill[i] &&
             !job.failed.load(std::memory_order_relaxed))
        std::this_thread::sleep_for(std::chrono::microseconds(50));
      if (job.failed.load(std::memory_order_relaxed)) break;
    }
    if (!d && r.bytes > 0) {
      const Clock::time_point t_alloc = job.trace.now();
      Status st = allocate(i, &d);
      if (job.trace.on) job.trace.out->allocs.push_back({i, r.bytes, job.trace.at(t_alloc), job.trace.now_ns()});
      if (st.ok() && !d) st = Internal("the allocate callback returned no memory");
      if (!st.ok()) {
        job.fail(st.with_context("copy request " + std::to_string(i) + of_n + ": allocating its destination of " +
                                 std::to_string(r.bytes) + " bytes"));
        break;
      }
    }
    job.publish(i, static_cast<char*>(d));
    if (!is_direct[i]) {
      if (progress) report();
      continue;
    }
    const Clock::time_point t_enq = job.trace.now();
    const int slot = job.trace.on ? job.trace.direct_slot[i] : -1;
    const bool timed = slot >= 0 && job.trace.device && stream->record(*job.trace.direct_start[size_t(slot)]).ok();
    Status st = enqueue(job, d, r.src, r.bytes, &job.direct_copies);
    if (slot >= 0) {
      TransferTrace::Direct& rec = job.trace.out->directs[size_t(slot)];
      rec.enqueue_start_ns = job.trace.at(t_enq);
      if (timed && st.ok() && stream->record(*job.trace.direct_end[size_t(slot)]).ok())
        job.trace.direct_timed[size_t(slot)] = 1;
      rec.enqueue_end_ns = job.trace.now_ns();
    }
    if (!st.ok()) {
      job.fail(st.with_context("copy request " + std::to_string(i) + of_n + ": enqueueing the direct copy of " +
                               std::to_string(r.bytes) + " bytes from " + kind_name(device->query_pointer(r.src).kind) +
                               " memory"));
      break;
    }
    if (!progress) continue;
    const uint64_t before = direct_enqueued;
    direct_enqueued += r.bytes;
    if (before / Progress::kInterval != direct_enqueued / Progress::kInterval || i + 1 == requests.size()) {
      Mark m{nullptr, direct_enqueued};
      st = device->create_event(&m.event);
      if (st.ok()) st = stream->record(*m.event);
      if (!st.ok()) {
        job.fail(st.with_context("copy: recording a progress event after copy request " + std::to_string(i)));
        break;
      }
      marks.push_back(std::move(m));
    }
    report();
  }
  if (job.trace.on) job.trace.out->requests_done_ns = job.trace.now_ns();
  if (progress) {
    // Until the workers are done and every mark has fired: wake at each interval the workers
    // pass (or every few ms, for the direct copies' marks) and report.
    while (!job.failed.load(std::memory_order_relaxed)) {
      const bool workers_done = !pooled || job.workers_left.load(std::memory_order_acquire) == 0;
      if (workers_done && next_mark == marks.size()) break;
      if (workers_done) {
        Status st = marks[next_mark].event->synchronize();
        if (!st.ok()) {
          job.fail(st.with_context("copy: waiting for a progress event"));
          break;
        }
      } else {
        const uint64_t seen = job.read_bytes.load(std::memory_order_relaxed);
        UniqueLock lock(job.progress_mu);
        lock.wait_for(job.progress_cv, std::chrono::milliseconds(5), [&] {
          return job.failed.load(std::memory_order_relaxed) || job.workers_left.load(std::memory_order_acquire) == 0 ||
                 job.read_bytes.load(std::memory_order_relaxed) / Progress::kInterval != seen / Progress::kInterval;
        });
      }
      report();
    }
  }
  if (pooled) pool.wait();
  first = job.first_error();
  if (job.trace.on) job.trace.out->workers_done_ns = job.trace.now_ns();

  // 4. Drain: returning while DMAs still read caller memory would be a use-after-return.
  if (job.trace.on) job.trace.out->drain_start_ns = job.trace.now_ns();
  Status sync = stream->synchronize();
  if (first.ok() && !sync.ok()) first = sync.with_context("copy: waiting for the copy stream to finish");
  forget_pending();  // drained: nothing of this call is in flight (or the stream failed)
  totals.staged_copies = job.staged_copies.load(std::memory_order_relaxed);
  totals.direct_copies = job.direct_copies.load(std::memory_order_relaxed);
  totals.paced_waits = job.paced_waits.load(std::memory_order_relaxed);
  totals.polls = job.polls.load(std::memory_order_relaxed);
  if (first.ok() && stats) *stats = totals;
  if (job.trace.on) end_trace(job, totals, stage_n, first, sync.ok());
  return first;
}

TransferEngine::TransferEngine(std::unique_ptr<Impl> impl) : impl_(std::move(impl)) {}
TransferEngine::~TransferEngine() = default;

Status TransferEngine::create(std::shared_ptr<Device> device, const TransferOptions& opts,
                              std::unique_ptr<TransferEngine>* out) {
  if (!device) return InvalidArgument("transfer engine: no device");
  if (!out) return InvalidArgument("transfer engine: null output pointer");
  if (opts.threads < 1 || opts.threads > kMaxThreads)
    return InvalidArgument("transfer engine option threads: " + std::to_string(opts.threads) + " is outside 1.." +
                           std::to_string(kMaxThreads));
  if (opts.chunk_bytes < kMinChunkBytes)
    return InvalidArgument("transfer engine option chunk_bytes: " + std::to_string(opts.chunk_bytes) +
                           " is below the minimum " + std::to_string(kMinChunkBytes) +
                           " (smaller chunks spend more on events than on copying)");
  if (opts.staging_bytes < opts.chunk_bytes)
    return InvalidArgument("transfer engine option staging_bytes: " + std::to_string(opts.staging_bytes) +
                           " is less than one chunk (chunk_bytes " + std::to_string(opts.chunk_bytes) + ")");
  auto impl = std::make_unique<Impl>();
  impl->device = std::move(device);
  impl->opts = opts;
  impl->staging_copy = opts.staging_copy.value_or(StagingCopy::kMemcpy);
  impl->ramp_start = opts.ramp_start.value_or(true);
  impl->alloc_ahead = opts.alloc_ahead_bytes.value_or(0);
  WHARF_RETURN_IF_ERROR(
      impl->device->create_stream(&impl->stream).with_context("transfer engine: creating the copy stream"));
  WHARF_RETURN_IF_ERROR(impl->pool.start(opts.threads));
  out->reset(new TransferEngine(std::move(impl)));
  return Status::Ok();
}

Status TransferEngine::copy(const std::vector<CopyRequest>& requests, const std::vector<Event*>& wait_for,
                            TransferStats* stats, const AllocateFn& allocate, const CopyProgressFn& progress,
                            TransferTrace* trace) {
  return impl_->copy(requests, wait_for, stats, allocate, progress, trace);
}

}  // namespace wharf

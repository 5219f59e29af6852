/* SPDX-License-Identifier: Apache-2.0 */
// TransferEngine: moves bytes from wherever a caller's tensors live (pageable host, pinned
// host or device memory, or a file) into memory this device allocated (device or pinned
// host), at the hardware's limit. Pinned and device sources go straight to copy_async on the
// engine's copy stream; pageable sources and files go through a ring of pinned staging chunks
// that a pool of host threads fills (streaming-store copies, or pread for a file) while the DMA engine drains
// earlier ones (in blocks of consecutive chunks, an event per block), so host reads and DMA
// overlap. One per runtime; the staging ring is allocated on first use under
// MemTag::kStaging and kept.
//
// Threads: copy() is safe to call from many threads; calls are serialised (one transfer
// uses the whole ring and every copy thread).
#pragma once

#include <cstdint>
#include <functional>
#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "core/status.h"
#include "device/device.h"
#include "device/dma_copy.h"
#include "device/serving.h"

namespace wharf {
namespace io {
class ReadOnlyFile;
}

struct CopyRequest {
  void* dst = nullptr;        // device or pinned host memory of the engine's device; null:
                              // allocated during the copy (see TransferEngine::copy)
  const void* src = nullptr;  // any host memory, or device memory of the engine's device;
                              // null when the bytes come from `file`
  uint64_t bytes = 0;
  MemKind dst_kind = MemKind::kDevice;  // what `allocate` returns for a null dst; else unused
  // Or the bytes are [file_offset, file_offset + bytes) of `file`, read with pread by the
  // staging threads straight into the pinned ring (or into a pinned host destination): no
  // mapping, so a file that shrinks is an error of the copy, never SIGBUS. The file outlives
  // the copy() call.
  const io::ReadOnlyFile* file = nullptr;
  uint64_t file_offset = 0;
  std::string_view name;  // what the bytes are (a tensor's FQN), for messages; may be empty
  // Nonzero: this request's destination lies in one allocation with the other requests of
  // the same dst_group, which are consecutive in the request list, in request order (a slab
  // of small constants, Container::allocate_and_copy). Their bytes staged side by side in the
  // ring then go to the device in one copy where their destinations are adjacent, instead of
  // one copy per request. The caller guarantees the one allocation (CUDA refuses a copy across
  // two, even adjacent ones); the engine checks the adjacency, so gaps are never written.
  uint64_t dst_group = 0;
  // What device->query_pointer(src).kind answered, when the caller already asked (the engine
  // then does not ask again: a CUDA pointer query per small tensor adds up); empty: the engine
  // asks.
  std::optional<PointerKind> src_kind;
};

// Allocates the destination of request `i` (one with a null dst), of its dst_kind, and sets
// *dst. The caller of copy() owns what it allocates (the engine only writes into it).
using AllocateFn = std::function<Status(size_t i, void** dst)>;

// Told, on the calling thread, how many bytes of this copy() are done (read from their
// source into the ring or a pinned destination, or, for direct copies, complete on the
// device), at least every Progress::kInterval bytes; a status other than OK (e.g. CANCELLED)
// stops the copy: nothing more is enqueued, what is in flight drains, and copy() returns it.
using CopyProgressFn = std::function<Status(uint64_t done)>;

// The runtime's default staging shape (device/runtime.cpp): chunks of 512 KiB, a ring of
// 4 MiB per staging thread (48 MiB for 12), DMAs of up to 8 MiB. A fill of 512 KiB still sits
// in its core's caches when the DMA reads it (4 MiB ones did not); measured on H100 hosts
// against the earlier 4 MiB chunks in a 96 MiB ring with 16 MiB DMAs, in the same runs
// (docs/performance.md, "Small staging chunks").
constexpr uint64_t kDefaultStagingChunkBytes = 512ull << 10;
constexpr uint64_t kDefaultStagingBytesPerThread = 4ull << 20;
constexpr uint64_t kDefaultStagingBlockBytes = 8ull << 20;

struct TransferOptions {
  uint32_t threads = 4;                  // host threads that fill staging chunks
  uint64_t staging_bytes = 32ull << 20;  // ring size; split into chunks of chunk_bytes
  uint64_t chunk_bytes = 4ull << 20;     // measured best on H100 (docs/performance.md, h2d_bench)
  // The most one copy from the ring carries: consecutive chunks, each filled by its own
  // thread, go to the device together as a block of up to block_bytes, one copy per run of
  // bytes that continue one destination. One thread reads a chunk (4 MiB reads keep glibc's
  // memcpy fast) but the copy engine gets fewer, larger copies: on an H100 a copy of 4 MiB
  // runs at 0.966 of one large copy, 16 MiB at 0.990 (docs/performance.md). The block is
  // the largest whole number of chunks <= block_bytes that divides the ring, at most half of
  // it (so one block fills while another is copied); one chunk when block_bytes < chunk_bytes.
  uint64_t block_bytes = 16ull << 20;
  // The blocks the staging threads begin together when a call starts hold smaller fills
  // (staging_fill_bytes), so the first DMA starts after part of a chunk is read instead of
  // after a whole block: with whole chunks those threads all finish about one chunk's read
  // (~0.65 ms on the H100 host) after the start, and the copy engine waits until then.
  // false: every fill holds up to a whole chunk. Empty: WHARF_TRANSFER_RAMP, read once per
  // process ("0": off; unset or anything else: on), for A/B measurements.
  std::optional<bool> ramp_start;
  // 0: the calling thread allocates null destinations (AllocateFn) as early as it can, all at
  // the start for a copy of pageable sources. N > 0: a staged request's destination (pageable
  // or file source, device destination) only once the staging threads are within N bytes
  // (rounded up to chunks) of its first byte, so allocations spread over the copy instead of
  // running beside its first blocks (an A/B switch for issue 21 item 7: whether allocating on
  // the calling thread slows the first DMAs). Empty: WHARF_TRANSFER_ALLOC_AHEAD_MIB, read once
  // per process (unset: 0).
  std::optional<uint64_t> alloc_ahead_bytes;
  // Serving while updating (device/serving.h): while `serving` says runs are served on the
  // device, copies follow `serving_policy` (split into pieces, paced, fewer staging threads)
  // so runs' own small copies do not queue behind them. Null: never. An empty policy is read
  // from the environment at each copy() (the A/B switches of bench/serve_update_bench).
  std::shared_ptr<const ServingSignal> serving;
  std::optional<ServingPolicy> serving_policy;
  // How the staging threads copy pageable sources into the ring (device/dma_copy.h): with
  // memcpy (the default) or streaming stores. Empty: WHARF_STAGING_COPY, read once per process.
  std::optional<StagingCopy> staging_copy;
};

// The most bytes staging fill `fill` of a call holds (its chunk's capacity in this call), for
// rings of `block_chunks` chunks per block and `staging_threads` threads. With `ramp` (and
// TransferOptions::ramp_start), the fills of the first W = ceil(staging_threads / block_chunks)
// blocks, which those threads begin at once, hold (b + 1) / (W + 1) of a chunk in block b
// (whole 4 KiB pages, at least one); every later fill, a whole chunk. Without: a whole chunk.
uint64_t staging_fill_bytes(size_t fill, uint64_t chunk_bytes, uint64_t block_chunks, uint64_t staging_threads,
                            bool ramp);

struct TransferStats {
  uint64_t pageable_bytes = 0, pinned_bytes = 0, device_bytes = 0, file_bytes = 0;
  // Copies enqueued from the staging ring: one per run of staged bytes that continue one
  // destination within a block (a request's bytes across the block's chunks, a dst_group's
  // requests side by side).
  uint64_t staged_copies = 0;
  // Copies enqueued straight from pinned or device sources (a request's pieces while serving).
  uint64_t direct_copies = 0;
  // Whether runs were being served when the call began (the serving policy applied), and how
  // often an enqueue waited for the copy stream to take fewer bytes in flight.
  bool serving = false;
  uint64_t paced_waits = 0;
  uint32_t staging_threads = 0;  // host threads that filled the ring in this call
  uint64_t polls = 0;            // event queries while serving that found the copy not done
};

// The trace of one copy() call: where its time went, for finding fixed costs and bubbles
// (docs/performance.md, "Tracing one update"). Collected when the caller passes one to
// copy(), or for every call while WHARF_TRANSFER_TRACE names a file (each traced call appends
// format_transfer_trace's text to it), or, host times only, while debug logging is on (one
// log line per call). Off, tracing costs a branch per step and a getenv per call; on, a clock
// read per step and, for the device times, two timing events per staging block and per direct
// copy.
//
// Host times are ns since the call began, the trace's own setup (creating timing events)
// left out; -1: never happened (e.g. after a failure). Device times are ms since a timing event
// recorded on the idle copy stream just after the host's start (so both clocks start within a
// few microseconds of each other), read from timing events after the drain; -1: unknown. A
// block's device interval runs from an event recorded before its first DMA to one after its
// last: when blocks are enqueued by two threads at once their intervals may overlap.
struct TransferTrace {
  struct Fill {  // one staging chunk's fill
    uint32_t block = 0, thread = 0;
    int cpu = -1;  // the CPU its read began on (sched_getcpu; -1: unknown)
    uint64_t bytes = 0;
    int64_t wait_ns = -1;  // began waiting for the chunk's previous block (== read_start_ns: no wait)
    int64_t read_start_ns = -1, read_end_ns = -1;
  };
  struct Block {          // consecutive chunks leaving the ring together
    uint32_t thread = 0;  // the worker that read its last fill and enqueued it
    uint32_t fills = 0, copies = 0;
    uint64_t bytes = 0;
    int64_t ready_ns = -1;          // its last fill read
    int64_t enqueue_start_ns = -1;  // its destinations known: the first DMA call begins
    int64_t enqueue_end_ns = -1;    // its DMAs and event on the stream
    double device_start_ms = -1, device_end_ms = -1;
  };
  struct Direct {  // a pinned or device source's copy
    size_t request = 0;
    uint64_t bytes = 0;
    int64_t enqueue_start_ns = -1, enqueue_end_ns = -1;
    double device_start_ms = -1, device_end_ms = -1;
  };
  struct Alloc {  // an AllocateFn call, on the calling thread
    size_t request = 0;
    uint64_t bytes = 0;
    int64_t start_ns = -1, end_ns = -1;
  };
  struct Worker {                        // one pool thread's part (sums over its fills, blocks and host pieces)
    int64_t start_ns = -1, end_ns = -1;  // it began / finished this call's work
    uint64_t fills = 0, bytes = 0, host_pieces = 0;
    uint64_t read_ns = 0, chunk_wait_ns = 0, dst_wait_ns = 0, enqueue_ns = 0;
  };

  // The call.
  size_t requests = 0;
  uint64_t pageable_bytes = 0, pinned_bytes = 0, device_bytes = 0, file_bytes = 0;
  uint32_t staging_threads = 0, block_chunks = 0;
  uint64_t chunk_bytes = 0, ring_bytes = 0;
  std::string staging_copy;        // "memcpy" or "stream"
  uint64_t staged_copies = 0;      // DMAs from the ring (TransferStats::staged_copies)
  bool ramp_start = false;         // the first blocks' fills were smaller (TransferOptions::ramp_start)
  uint64_t alloc_ahead_bytes = 0;  // TransferOptions::alloc_ahead_bytes in effect
  bool serving = false;
  std::string error;          // the call's error, if it failed
  uint64_t setup_ns = 0;      // the trace's own setup, left out of every time below
  bool device_times = false;  // the device's clock was read (timing events)

  // The calling thread.
  int64_t planned_ns = -1;        // requests validated and planned
  int64_t workers_begin_ns = -1;  // the pool told to start
  int64_t requests_done_ns = -1;  // every destination allocated, every direct copy enqueued
  int64_t workers_done_ns = -1;   // every worker returned
  int64_t drain_start_ns = -1;    // waiting for the copy stream
  int64_t total_ns = -1;          // copy() returns
  std::vector<Alloc> allocs;
  std::vector<Direct> directs;

  // The pool.
  std::vector<Fill> fills;
  std::vector<Block> blocks;
  std::vector<Worker> workers;
};

// What a trace says, reduced (format_transfer_trace prints it).
struct TransferTraceSummary {
  uint64_t bytes = 0, staged_bytes = 0;
  uint64_t dma_bytes = 0;  // staged bytes and direct copies' (what the copy engine carried)
  double total_ms = 0;
  double first_enqueue_ms = -1;                                  // host: the first DMA call began
  double first_dma_ms = -1;                                      // device: the first DMA began
  double last_dma_ms = -1;                                       // device: the last DMA ended
  double worker_first_start_ms = -1, worker_last_start_ms = -1;  // after the call began
  double fill_first_ms = -1, fill_last_ms = -1;                  // first read began, last read ended
  double fill_gbps = 0;                                          // staged bytes over [fill_first, fill_last]
  double thread_read_gbps = 0;                                   // staged bytes over the workers' summed read time
  // The same for the fills the threads read first (one per staging thread, begun together
  // when the call starts: cold caches, waking cores) and for all later ones.
  double first_fills_thread_gbps = 0, later_fills_thread_gbps = 0;
  uint32_t fill_cpus = 0;                   // distinct CPUs the fills were read on (thread placement)
  double dma_busy_ms = 0, dma_idle_ms = 0;  // within [first_dma, last_dma]: the union of the
                                            // copies' device intervals, and the rest
  struct Gap {
    double at_ms, ms;
  };
  std::vector<Gap> gaps;  // the copy engine's largest idle gaps within [first_dma, last_dma]
  double alloc_ms = 0, alloc_max_ms = 0, allocs_done_ms = -1;  // calling thread
  double direct_enqueue_ms = 0;
  double wait_workers_ms = 0, drain_ms = 0;  // calling thread: after its requests, then the stream
  double read_ms = 0, chunk_wait_ms = 0, dst_wait_ms = 0, enqueue_ms = 0;  // workers, summed
};
TransferTraceSummary summarize_transfer_trace(const TransferTrace& t);
// The summary as text lines ("transfer trace: ...", then one "  what  figures" line per part,
// the last one "  summary key=value ..." for programs), then, unless summary_only, every record (lines "fill", "block",
// "direct", "alloc", "worker", each after a "# ..." line naming its columns; times in ms).
std::string format_transfer_trace(const TransferTrace& t, bool summary_only = false);

class TransferEngine {
 public:
  static Status create(std::shared_ptr<Device> device, const TransferOptions& opts,
                       std::unique_ptr<TransferEngine>* out);
  ~TransferEngine();

  // Performs every request and returns once all of them are complete on the device. Before
  // any copy starts, the copy stream waits (on the device) for each event in `wait_for`.
  // On error, copies already issued are drained before returning (no work is left in flight
  // that reads caller memory).
  //
  // Requests with a null dst get theirs from `allocate`, called on the calling thread in
  // request order while the copies of earlier requests already run: allocating a
  // generation's slots (driver work on the host, mapping memory) overlaps the DMA instead of
  // preceding it. A request waits for its own destination only. If `allocate` fails, the
  // copy fails with its status after draining; what it allocated stays the caller's.
  //
  // File sources: before anything is enqueued, each file is checked to still cover the bytes
  // asked of it (fstat), so a file truncated since it was validated fails the call with
  // kIoError before any destination is written. A file that shrinks while it is read fails
  // the call with kIoError naming the file, the tensor (`name`) and the offset; destinations
  // may then hold part of the new bytes (the caller drops them: an update stages nothing).
  //
  // `progress` (optional) is called as described at CopyProgressFn; a non-OK answer fails
  // the copy with that status after draining, like any other error.
  //
  // `trace` (optional): filled with the call's trace (TransferTrace), also when the call fails
  // once under way (one refused before anything was enqueued, e.g. an invalid request, leaves
  // it empty).
  Status copy(const std::vector<CopyRequest>& requests, const std::vector<Event*>& wait_for,
              TransferStats* stats = nullptr, const AllocateFn& allocate = nullptr,
              const CopyProgressFn& progress = nullptr, TransferTrace* trace = nullptr);

 private:
  struct Impl;
  explicit TransferEngine(std::unique_ptr<Impl> impl);
  std::unique_ptr<Impl> impl_;
};

}  // namespace wharf

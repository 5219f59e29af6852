/* SPDX-License-Identifier: Apache-2.0 */
// The transfer trace (TransferTrace): what one TransferEngine::copy() call recorded, and how it
// is reduced (summarize_transfer_trace) and printed (format_transfer_trace). The engine fills
// the records (device/transfer.cpp); everything here only reads them.
#pragma once

#include <cstddef>
#include <cstdint>
#include <string>
#include <vector>

namespace wharf {

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
    // Began waiting for its chunk: a ring slot for its block, then that slot's previous block
    // (== read_start_ns: no wait).
    int64_t wait_ns = -1;
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
// The summary on one debug log line (format_transfer_trace's summary, lines joined by ';').
void log_transfer_trace(const TransferTrace& t);

// Bytes as MiB with two decimals ("12.50 MiB"), for the trace's text and the engine's messages.
std::string mib_text(uint64_t bytes);

}  // namespace wharf

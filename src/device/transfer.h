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

#include <algorithm>
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
#include "device/transfer_trace.h"

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
  // false: every fill holds up to a whole chunk. Empty: on. (A runtime's engine takes
  // WHARF_TRANSFER_RAMP=0/1 from the environment, device/transfer_env.h.)
  std::optional<bool> ramp_start;
  // 0: the calling thread allocates null destinations (AllocateFn) as early as it can, all at
  // the start for a copy of pageable sources. N > 0: a staged request's destination (pageable
  // or file source, device destination) only once the staging threads are within N bytes
  // (rounded up to chunks) of its first byte, so allocations spread over the copy instead of
  // running beside its first blocks (an A/B switch for issue 21 item 7: whether allocating on
  // the calling thread slows the first DMAs). Empty: 0. (A runtime's engine takes
  // WHARF_TRANSFER_ALLOC_AHEAD_MIB from the environment, device/transfer_env.h.)
  std::optional<uint64_t> alloc_ahead_bytes;
  // Serving while updating (device/serving.h): while `serving` says runs are served on the
  // device, copies follow `serving_policy` (split into pieces, paced, fewer staging threads)
  // so runs' own small copies do not queue behind them. Null: never. Empty policy: the
  // defaults. (A runtime's engine takes WHARF_SERVING_* from the environment, the A/B
  // switches of bench/serve_update_bench; device/transfer_env.h.)
  std::shared_ptr<const ServingSignal> serving;
  std::optional<ServingPolicy> serving_policy;
  // How the staging threads copy pageable sources into the ring (device/dma_copy.h): with
  // memcpy or streaming stores. Empty: memcpy. (A runtime's engine takes WHARF_STAGING_COPY
  // from the environment, device/transfer_env.h.)
  std::optional<StagingCopy> staging_copy;
};

// The runtime's default staging shape for `threads` (>= 1) staging threads and a ring of
// `staging_bytes` (0: kDefaultStagingBytesPerThread per thread): chunks of
// kDefaultStagingChunkBytes (at most half the ring), blocks of kDefaultStagingBlockBytes.
inline TransferOptions default_staging_options(uint32_t threads, uint64_t staging_bytes = 0) {
  TransferOptions t;
  t.threads = threads;
  t.staging_bytes = staging_bytes ? staging_bytes : uint64_t(threads) * kDefaultStagingBytesPerThread;
  t.chunk_bytes = std::min<uint64_t>(kDefaultStagingChunkBytes, t.staging_bytes / 2);
  t.block_bytes = kDefaultStagingBlockBytes;
  return t;
}

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

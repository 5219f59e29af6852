/* SPDX-License-Identifier: Apache-2.0 */
// TransferEngine: moves bytes from wherever a caller's tensors live (pageable host, pinned
// host or device memory) into memory this device allocated (device or pinned host), at the
// hardware's limit. Pinned and device sources go straight to copy_async on the engine's copy
// stream; pageable sources go through a ring of pinned staging chunks that a pool of host
// threads fills while the DMA engine drains the previous chunks (an event per chunk), so host
// memcpy and DMA overlap. One per runtime; the staging ring is allocated on first use under
// MemTag::kStaging and kept.
//
// Threads: copy() is safe to call from many threads; calls are serialised (one transfer
// uses the whole ring and every copy thread).
#pragma once

#include <cstdint>
#include <functional>
#include <memory>
#include <vector>

#include "core/status.h"
#include "device/device.h"

namespace wharf {

struct CopyRequest {
  void* dst = nullptr;        // device or pinned host memory of the engine's device; null:
                              // allocated during the copy (see TransferEngine::copy)
  const void* src = nullptr;  // any host memory, or device memory of the engine's device
  uint64_t bytes = 0;
  MemKind dst_kind = MemKind::kDevice;  // what `allocate` returns for a null dst; else unused
};

// Allocates the destination of request `i` (one with a null dst), of its dst_kind, and sets
// *dst. The caller of copy() owns what it allocates (the engine only writes into it).
using AllocateFn = std::function<Status(size_t i, void** dst)>;

struct TransferOptions {
  uint32_t threads = 4;                  // host threads that fill staging chunks
  uint64_t staging_bytes = 32ull << 20;  // ring size; split into chunks of chunk_bytes
  uint64_t chunk_bytes = 4ull << 20;     // measured best on H100 (DESIGN.md)
};

struct TransferStats {
  uint64_t pageable_bytes = 0, pinned_bytes = 0, device_bytes = 0;
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
  Status copy(const std::vector<CopyRequest>& requests, const std::vector<Event*>& wait_for,
              TransferStats* stats = nullptr, const AllocateFn& allocate = nullptr);

 private:
  struct Impl;
  explicit TransferEngine(std::unique_ptr<Impl> impl);
  std::unique_ptr<Impl> impl_;
};

}  // namespace wharf

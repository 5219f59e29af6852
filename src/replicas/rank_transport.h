/* SPDX-License-Identifier: Apache-2.0 */
// RankTransport: the collectives a replica group spanning processes needs (one rank per
// process, rank 0 the source), and the 128-byte id a group is formed from. The caller makes
// the id on one process (wharf_replica_group_get_unique_id) and hands it to every rank
// through its own control plane; Wharf runs no rendezvous service.
//
// The group protocol (src/replicas/rank_group.cpp) stands on three calls every rank makes in
// the same order: broadcast(), vote() and abort(). Implementations:
// - host (host_rank_transport.cpp): the stand-in for NCCL between processes on one Linux
//   host, for the host backend and its tests. The id names an abstract Unix-domain socket
//   (no file, gone with its last descriptor) that rank 0 listens on; the other ranks connect
//   to it, so the transport is a star around rank 0. Every wait (accept, connect, send,
//   receive) is bounded by the caller's deadline, and a peer that closes (a dead process)
//   is seen at once (EOF / EPIPE). When rank 0 sees a peer fail it tells the others which
//   rank it was (an abort frame) before it closes, so every survivor names the same rank.
//   Not for production traffic: one socket per peer through rank 0, no pipelining.
// - NCCL (nccl_rank_transport.cpp, CUDA builds): one communicator per rank from
//   ncclCommInitRankConfig (non-blocking), ncclBroadcast from rank 0 and an ncclAllReduce
//   (ncclMin) for the vote on the runtime's stream, every wait polled against the deadline
//   with ncclCommGetAsyncError, ncclCommAbort on a timeout or an error. NCCL does not say
//   which peer failed: its errors name the communicator, not the rank.
//
// Threads: one group call at a time uses a transport (the group serialises them).
#pragma once

#include <chrono>
#include <cstdint>
#include <memory>
#include <string>

#include "core/status.h"

namespace wharf {

// Bytes 0-7: which transport made it (a magic); the host transport's socket name follows
// (bytes 8-127); the NCCL transport's ncclUniqueId is bytes 128-255.
constexpr size_t kRankIdBytes = 256;
constexpr size_t kRankIdNcclOffset = 128;
struct RankId {
  unsigned char bytes[kRankIdBytes];
};

using RankClock = std::chrono::steady_clock;

// A fresh host id: a magic, then an abstract socket name unique to this process and call
// (pid, a counter and 64 random bits).
Status make_host_rank_id(RankId* out);
// Whether `id` was made by make_host_rank_id (its magic).
bool is_host_rank_id(const RankId& id);

class RankTransport {
 public:
  virtual ~RankTransport() = default;
  virtual uint32_t rank() const = 0;
  virtual uint32_t size() const = 0;
  // Rank 0 sends `bytes` at `data` to every other rank; the others receive them into `data`.
  // `data` may be null on any rank: rank 0 then sends zeros, a receiver discards (a rank that
  // failed locally keeps the ranks in step). Errors (IO_ERROR) name the rank at fault: a
  // peer that closed or did not keep up by `deadline`, or, on a receiver, rank 0's abort
  // frame naming the rank that failed. After an error the transport is aborted.
  virtual Status broadcast(void* data, uint64_t bytes, RankClock::time_point deadline) = 0;
  // broadcast() that may return before the bytes have arrived: `data` (device memory on the
  // NCCL transport; null as above) must stay valid and unread/unwritten by the caller until
  // flush() returns. Host memory is still done by the time it returns. Every rank issues the
  // same calls (async or not), so the pieces match across ranks. Default: broadcast().
  virtual Status broadcast_async(void* data, uint64_t bytes, RankClock::time_point deadline) {
    return broadcast(data, bytes, deadline);
  }
  // Waits for every broadcast_async issued so far (errors as broadcast). Default: nothing.
  // The NCCL transport launches broadcast_async pieces in NCCL groups of kRankGroupPieces
  // (rank_protocol.h): flush() waits for the groups closed so far, not an open one.
  virtual Status flush(RankClock::time_point) { return Status::Ok(); }
  // The end of a run of broadcast_async calls (step 3 of the protocol): closes the open group
  // and waits for everything, as flush(). Every rank calls it at the same point.
  virtual Status finish(RankClock::time_point deadline) { return flush(deadline); }
  // Every rank's `mine` combined: *out is the minimum over the ranks (every rank gets the
  // same answer). Errors as broadcast.
  virtual Status vote(uint64_t mine, RankClock::time_point deadline, uint64_t* out) = 0;
  // Closes every connection (rank 0 first sends an abort frame naming `failed_rank`, with
  // `why`, to every peer it can still reach within a short bound). Idempotent.
  virtual void abort(uint32_t failed_rank, const std::string& why) = 0;
  // Why the transport was aborted (empty while it is not).
  virtual std::string aborted() const = 0;
  // NCCL's version (ncclGetVersion) for the NCCL transport, 0 for others.
  virtual int nccl_version() const { return 0; }
};

// Forms the host transport for `rank` of `size` from `id`: rank 0 listens on the id's socket
// and accepts size - 1 peers, each of which sends its rank, the size and `fingerprint` (a
// hash of its declarations), and gets rank 0's verdict; the others connect (retrying while
// rank 0 is not yet listening). Errors: INVALID_ARGUMENT (not a host id), ALREADY_EXISTS
// (rank 0: the id's socket is in use), IO_ERROR (a rank missing at `deadline`, a peer that
// closed), INVALID_ARGUMENT (on every rank: a rank given twice, sizes that differ,
// declarations unlike rank 0's; the rank named).
// A fresh NCCL id (ncclGetUniqueId) for ranks on CUDA runtimes; UNSUPPORTED without NCCL
// (or one older than 2.14) or in a build without CUDA.
Status make_nccl_rank_id(RankId* out);
bool is_nccl_rank_id(const RankId& id);

// Forms the NCCL transport for `rank` of `size` on `runtime` (a CUDA runtime) from `id`.
// The declarations' `fingerprint` is checked with an all-reduce (min and max must agree; a
// rank without declarations, such as tools/sender's trainer, gives UINT64_MAX to both):
// INVALID_ARGUMENT on every rank when they differ (NCCL cannot say which rank). Errors:
// UNSUPPORTED (no NCCL, or no ncclCommInitRankConfig), IO_ERROR (a rank missing at the
// deadline: the communicator is aborted), DEVICE_ERROR (NCCL errors).
class Runtime;
Status make_nccl_rank_transport(const RankId& id, std::shared_ptr<Runtime> runtime, uint32_t rank, uint32_t size,
                                uint64_t fingerprint, RankClock::time_point deadline,
                                std::unique_ptr<RankTransport>* out);

Status make_host_rank_transport(const RankId& id, uint32_t rank, uint32_t size, uint64_t fingerprint,
                                RankClock::time_point deadline, std::unique_ptr<RankTransport>* out);

}  // namespace wharf

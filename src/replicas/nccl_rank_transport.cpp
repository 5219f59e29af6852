// SPDX-License-Identifier: Apache-2.0
// The NCCL rank transport (rank_transport.h): one non-blocking communicator per process, on
// the rank's CUDA runtime stream. Every NCCL call that answers ncclInProgress and every wait
// for the stream is polled against the caller's deadline with ncclCommGetAsyncError; a
// timeout or an error aborts the communicator (ncclCommAbort ends NCCL's kernels in flight,
// so nothing still writes into the rank's fresh slots afterwards).
#include <algorithm>
#include <chrono>
#include <cstdlib>
#include <cstring>
#include <thread>
#include <utility>
#include <vector>

#include "core/logging.h"
#include "device/runtime.h"
#include "replicas/broadcaster.h"
#include "replicas/nccl_api.h"
#include "replicas/rank_protocol.h"
#include "replicas/rank_transport.h"

#if defined(WHARF_HAVE_CUDA)
#include <cuda_runtime_api.h>
#endif

namespace wharf {
namespace {

constexpr char kNcclMagic[8] = {'W', 'H', 'A', 'R', 'F', 'N', 'C', '1'};

}  // namespace

bool is_nccl_rank_id(const RankId& id) { return std::memcmp(id.bytes, kNcclMagic, sizeof kNcclMagic) == 0; }

#if defined(WHARF_HAVE_CUDA)

namespace {

// Host data (the header, the plan, the vote) and host-placed constants go through a pinned
// host buffer and a device scratch buffer of one protocol piece; device constants are
// broadcast in place. Pinned, because a device-to-pageable copy blocks the host until the
// stream gets there, which a stopped peer would make forever (the deadline could not be kept).
// Every broadcast is cut into pieces of kRankChunkBytes whatever the memory (rank_protocol.h),
// so a rank discarding into the scratch buffer issues the same NCCL calls as one receiving in
// place, and a sender outside Wharf (tools/sender) knows which calls to make.
constexpr uint64_t kScratchBytes = kRankChunkBytes;

Status require_rank_api(const NcclApi& api) {
  if (!api.GetUniqueId || !api.CommInitRankConfig || !api.AllReduce)
    return Unsupported("NCCL library " + api.path +
                       " lacks ncclGetUniqueId, ncclCommInitRankConfig or ncclAllReduce (groups across processes "
                       "need NCCL 2.14 or later)");
  return Status::Ok();
}

class NcclRankTransport final : public RankTransport {
 public:
  NcclRankTransport(std::shared_ptr<const NcclApi> nccl, std::shared_ptr<Runtime> runtime, uint32_t rank, uint32_t size)
      : nccl_(std::move(nccl)), runtime_(std::move(runtime)), rank_(rank), size_(size) {}
  ~NcclRankTransport() override {
    if (comm_) {
      // A clean destroy waits for peers; abort never does (a freed group must not hang).
      nccl_->CommAbort(comm_);
      comm_ = nullptr;
    }
  }

  uint32_t rank() const override { return rank_; }
  uint32_t size() const override { return size_; }
  std::string aborted() const override { return aborted_; }
  int nccl_version() const override {
    int v = 0;
    return nccl_->GetVersion(&v) == nccl::kSuccess ? v : 0;
  }

  Status init(const nccl::UniqueId& id, RankClock::time_point deadline) {
    WHARF_RETURN_IF_ERROR(set_device());
    WHARF_RETURN_IF_ERROR(runtime_->device().create_event(&event_));
    WHARF_RETURN_IF_ERROR(runtime_->device().allocate(MemKind::kDevice, MemTag::kStaging, kScratchBytes,
                                                      "replica group NCCL scratch", &scratch_));
    WHARF_RETURN_IF_ERROR(runtime_->device().allocate(MemKind::kPinnedHost, MemTag::kStaging, kScratchBytes,
                                                      "replica group NCCL host buffer", &pinned_));
    nccl::Config config;
    config.blocking = 0;  // returns at once; completion is polled, so a missing rank cannot hang us
    nccl::Result r = nccl_->CommInitRankConfig(&comm_, int(size_), id, int(rank_), &config);
    if (r != nccl::kSuccess && r != nccl::kInProgress) {
      if (comm_) nccl_->CommAbort(comm_);
      comm_ = nullptr;
      return DeviceError("ncclCommInitRankConfig (rank " + std::to_string(rank_) + " of " + std::to_string(size_) +
                         ") failed: " + nccl_->error(r));
    }
    Status st = settle(deadline, "join (ncclCommInitRankConfig): a rank is missing or failed");
    if (!st.ok()) return st;
    return Status::Ok();
  }

  Status broadcast(void* data, uint64_t bytes, RankClock::time_point deadline) override {
    if (group_pieces_ > 0)
      return fail(Internal("replica group: a broadcast of the header, plan or vote while step 3's NCCL group is open"));
    WHARF_RETURN_IF_ERROR(issue(data, bytes, deadline));
    return wait(deadline, "broadcast");
  }

  // Step 3's pieces, in NCCL groups of kRankGroupPieces counted across calls
  // (rank_protocol.h). Only enqueued: the stream orders the pieces, so the host waits once
  // per batch instead of once per constant. Device memory is broadcast in place, a discard
  // (null) through the scratch buffer (rank 0's zeros come from it; concurrent pieces into
  // it are garbage nobody reads); host memory through a group-sized bounce buffer (device
  // and pinned), copied out when the group is closed.
  Status broadcast_async(void* data, uint64_t bytes, RankClock::time_point deadline) override {
    WHARF_RETURN_IF_ERROR(check_open());
    WHARF_RETURN_IF_ERROR(set_device());
    void* stream = runtime_->stream().native_handle();
    const PointerKind kind = data ? runtime_->device().query_pointer(data).kind : PointerKind::kDevice;
    const bool host = data && kind != PointerKind::kDevice;
    if (host) WHARF_RETURN_IF_ERROR(ensure_bounce());
    for (uint64_t off = 0; off < bytes; off += kRankChunkBytes) {
      const uint64_t n = std::min(kRankChunkBytes, bytes - off);
      if (group_pieces_ == 0) {
        nccl::Result r = nccl_->GroupStart();
        if (r != nccl::kSuccess) return fail(DeviceError("ncclGroupStart failed: " + nccl_->error(r)));
      }
      const uint64_t at = uint64_t(group_pieces_) * kRankChunkBytes;
      ++group_pieces_;  // counted before anything can fail: fail() closes the group
      void* buf = nullptr;
      if (!data) {
        buf = scratch_.data();
        if (rank_ == 0) {
          Status st = runtime_->stream().memset_async(buf, 0, n);
          if (!st.ok()) return fail(st);
        }
      } else if (!host) {
        buf = static_cast<char*>(data) + off;
      } else {
        buf = static_cast<char*>(bounce_.data()) + at;
        char* staged = static_cast<char*>(bounce_pinned_.data()) + at;
        char* mine = static_cast<char*>(data) + off;
        if (rank_ == 0) {
          std::memcpy(staged, mine, size_t(n));
          Status st = runtime_->stream().copy_async(buf, staged, n);
          if (!st.ok()) return fail(st);
        } else {
          bounced_.push_back({mine, at, n});
        }
        bounce_used_ = true;
      }
      nccl::Result r = nccl_->Broadcast(buf, buf, size_t(n), nccl::kInt8, 0, comm_, stream);
      if (r != nccl::kSuccess && r != nccl::kInProgress)
        return fail(DeviceError("ncclBroadcast failed: " + nccl_->error(r)));
      if (group_pieces_ == kRankGroupPieces) WHARF_RETURN_IF_ERROR(close_group(deadline));
    }
    return Status::Ok();
  }

  Status flush(RankClock::time_point deadline) override {
    WHARF_RETURN_IF_ERROR(check_open());
    WHARF_RETURN_IF_ERROR(set_device());
    return wait(deadline, "broadcast");
  }

  Status finish(RankClock::time_point deadline) override {
    WHARF_RETURN_IF_ERROR(check_open());
    WHARF_RETURN_IF_ERROR(set_device());
    WHARF_RETURN_IF_ERROR(close_group(deadline));
    return wait(deadline, "broadcast");
  }

  Status vote(uint64_t mine, RankClock::time_point deadline, uint64_t* out) override {
    WHARF_RETURN_IF_ERROR(check_open());
    WHARF_RETURN_IF_ERROR(set_device());
    uint64_t* value = static_cast<uint64_t*>(pinned_.data());
    *value = mine;
    Status st = runtime_->stream().copy_async(scratch_.data(), value, sizeof *value);
    if (!st.ok()) return fail(st);
    WHARF_RETURN_IF_ERROR(call(nccl_->AllReduce(scratch_.data(), scratch_.data(), 1, nccl::kUint64, nccl::kMin, comm_,
                                                runtime_->stream().native_handle()),
                               "ncclAllReduce", deadline));
    st = runtime_->stream().copy_async(value, scratch_.data(), sizeof *value);
    if (!st.ok()) return fail(st);
    WHARF_RETURN_IF_ERROR(wait(deadline, "vote"));
    *out = *value;
    return Status::Ok();
  }

  void abort(uint32_t, const std::string& why) override {
    if (!aborted_.empty()) return;
    aborted_ = why.empty() ? "aborted" : why;
    if (group_pieces_ > 0) {
      // NCCL's group depth is per thread: a group left open would swallow this thread's next
      // NCCL calls (on any communicator). Closed first; the abort then ends what it launched.
      group_pieces_ = 0;
      bounced_.clear();
      (void)nccl_->GroupEnd();
    }
    if (comm_) {
      nccl::Result r = nccl_->CommAbort(comm_);
      if (r != nccl::kSuccess) WHARF_LOG(kError, "ncclCommAbort: " + nccl_->error(r));
      comm_ = nullptr;
    }
    // The abort ended NCCL's kernels; the copies around them finish on their own.
    (void)runtime_->stream().synchronize();
  }

 private:
  // Enqueues the pieces of one broadcast (rank_protocol.h: at most kScratchBytes each) on the
  // runtime's stream. Device memory is broadcast in place; a discard (receiver, null) goes
  // into the scratch buffer and rank 0's zeros come from it, with no host wait (the stream
  // orders the reuse); host memory goes through the pinned buffer, waiting for each piece.
  Status issue(void* data, uint64_t bytes, RankClock::time_point deadline) {
    WHARF_RETURN_IF_ERROR(check_open());
    WHARF_RETURN_IF_ERROR(set_device());
    void* stream = runtime_->stream().native_handle();
    const bool on_device = data && runtime_->device().query_pointer(data).kind == PointerKind::kDevice;
    if (on_device) {
      for (uint64_t off = 0; off < bytes; off += kScratchBytes) {
        char* p = static_cast<char*>(data) + off;
        const uint64_t n = std::min(kScratchBytes, bytes - off);
        WHARF_RETURN_IF_ERROR(
            call(nccl_->Broadcast(p, p, size_t(n), nccl::kInt8, 0, comm_, stream), "ncclBroadcast", deadline));
      }
      return Status::Ok();
    }
    if (!data && rank_ == 0 && bytes > 0) {
      Status st = runtime_->stream().memset_async(scratch_.data(), 0, std::min(kScratchBytes, bytes));
      if (!st.ok()) return fail(st);
    }
    for (uint64_t off = 0; off < bytes; off += kScratchBytes) {
      const uint64_t n = std::min(kScratchBytes, bytes - off);
      char* host = data ? static_cast<char*>(data) + off : nullptr;
      if (rank_ == 0 && host) {
        std::memcpy(pinned_.data(), host, size_t(n));
        Status st = runtime_->stream().copy_async(scratch_.data(), pinned_.data(), n);
        if (!st.ok()) return fail(st);
      }
      WHARF_RETURN_IF_ERROR(
          call(nccl_->Broadcast(scratch_.data(), scratch_.data(), size_t(n), nccl::kInt8, 0, comm_, stream),
               "ncclBroadcast", deadline));
      if (!host) continue;  // a discard, or zeros: nothing to bring back, no wait
      if (rank_ != 0) {
        Status st = runtime_->stream().copy_async(pinned_.data(), scratch_.data(), n);
        if (!st.ok()) return fail(st);
      }
      // The pinned buffer is reused by the next piece: this one completes first.
      WHARF_RETURN_IF_ERROR(wait(deadline, "broadcast"));
      if (rank_ != 0) std::memcpy(host, pinned_.data(), size_t(n));
    }
    return Status::Ok();
  }

  // Ends the open group of step 3 (launching it) and, for host memory in it, brings the
  // received bytes out (receivers) or waits until the pinned bounce may be refilled (rank 0).
  Status close_group(RankClock::time_point deadline) {
    if (group_pieces_ == 0) return Status::Ok();
    group_pieces_ = 0;
    nccl::Result r = nccl_->GroupEnd();
    WHARF_RETURN_IF_ERROR(call(r, "ncclGroupEnd", deadline));
    if (!bounce_used_) return Status::Ok();
    bounce_used_ = false;
    for (const Bounced& b : bounced_) {
      Status st = runtime_->stream().copy_async(static_cast<char*>(bounce_pinned_.data()) + b.at,
                                                static_cast<char*>(bounce_.data()) + b.at, b.bytes);
      if (!st.ok()) return fail(st);
    }
    WHARF_RETURN_IF_ERROR(wait(deadline, "broadcast"));
    for (const Bounced& b : bounced_)
      std::memcpy(b.host, static_cast<char*>(bounce_pinned_.data()) + b.at, size_t(b.bytes));
    bounced_.clear();
    return Status::Ok();
  }

  // The bounce buffers for host memory in a group, allocated at the first need (most
  // updates broadcast device memory only): one group's pieces, device and pinned.
  Status ensure_bounce() {
    if (bounce_.data()) return Status::Ok();
    const uint64_t bytes = uint64_t(kRankGroupPieces) * kRankChunkBytes;
    Status st = runtime_->device().allocate(MemKind::kDevice, MemTag::kStaging, bytes,
                                            "replica group NCCL bounce (host-placed constants)", &bounce_);
    if (st.ok())
      st = runtime_->device().allocate(MemKind::kPinnedHost, MemTag::kStaging, bytes,
                                       "replica group NCCL pinned bounce (host-placed constants)", &bounce_pinned_);
    if (!st.ok()) {
      bounce_ = Buffer();
      return fail(st);  // the ranks are mid-update: this one cannot stay in step
    }
    return Status::Ok();
  }

  Status set_device() {
    cudaError_t e = cudaSetDevice(runtime_->device().index());
    if (e != cudaSuccess)
      return DeviceError("cudaSetDevice(" + std::to_string(runtime_->device().index()) + "): " + cudaGetErrorString(e));
    return Status::Ok();
  }

  Status check_open() const {
    if (!aborted_.empty())
      return FailedPrecondition("replica group: the NCCL communicator was aborted (" + aborted_ +
                                "); free the group and form a new one");
    return Status::Ok();
  }

  Status fail(const Status& st) {
    abort(rank_, st.message());
    return st;
  }

  // A non-blocking NCCL call: its immediate answer, then (ncclInProgress) its completion.
  Status call(nccl::Result r, const char* what, RankClock::time_point deadline) {
    if (r != nccl::kSuccess && r != nccl::kInProgress)
      return fail(DeviceError(std::string(what) + " failed: " + nccl_->error(r)));
    return settle(deadline, std::string(what) + " could not be issued");
  }

  // Polls ncclCommGetAsyncError until the communicator is not in progress.
  Status settle(RankClock::time_point deadline, const std::string& what) {
    RankClock::time_point spin_from;
    for (;;) {
      nccl::Result async = nccl::kSuccess;
      nccl::Result r = nccl_->CommGetAsyncError(comm_, &async);
      if (r != nccl::kSuccess) return fail(DeviceError("ncclCommGetAsyncError: " + nccl_->error(r)));
      if (async == nccl::kSuccess) return Status::Ok();
      if (async != nccl::kInProgress)
        return fail(IoError("NCCL: " + what + ": " + nccl_->error(async) +
                            " (a peer rank failed or closed; NCCL does not say which)"));
      const auto now = RankClock::now();
      if (now > deadline)
        return fail(IoError("NCCL: " + what +
                            " within the timeout (a peer rank is missing or stopped; NCCL does "
                            "not say which)"));
      // A launch from NCCL's thread takes tens of microseconds: spin that long, then sleep
      // (a join waiting for its peers can take seconds).
      if (spin_from == RankClock::time_point()) spin_from = now;
      if (now - spin_from < std::chrono::milliseconds(2))
        std::this_thread::yield();
      else
        std::this_thread::sleep_for(std::chrono::microseconds(200));
    }
  }

  // Waits for the stream (the collective and the copies around it), watching for NCCL errors.
  Status wait(RankClock::time_point deadline, const char* what) {
    Status st = runtime_->stream().record(*event_);
    if (!st.ok()) return fail(st);
    for (;;) {
      bool done = false;
      st = event_->query(&done);
      if (!st.ok()) return fail(st);
      if (done) return Status::Ok();
      nccl::Result async = nccl::kSuccess;
      nccl::Result r = nccl_->CommGetAsyncError(comm_, &async);
      if (r != nccl::kSuccess) return fail(DeviceError("ncclCommGetAsyncError: " + nccl_->error(r)));
      if (async != nccl::kSuccess && async != nccl::kInProgress)
        return fail(IoError(std::string("NCCL ") + what + ": " + nccl_->error(async) +
                            " (a peer rank failed; NCCL does not say which)"));
      if (RankClock::now() > deadline)
        return fail(IoError(std::string("NCCL ") + what +
                            " did not complete within the timeout (a peer rank died or stopped; NCCL does not say "
                            "which)"));
      std::this_thread::sleep_for(std::chrono::microseconds(50));
    }
  }

  std::shared_ptr<const NcclApi> nccl_;
  std::shared_ptr<Runtime> runtime_;
  uint32_t rank_, size_;
  nccl::Comm comm_ = nullptr;
  std::unique_ptr<Event> event_;
  Buffer scratch_;  // device
  Buffer pinned_;   // pinned host
  // Step 3's open NCCL group: its pieces so far, and its host-memory pieces (receivers).
  struct Bounced {
    char* host;
    uint64_t at, bytes;
  };
  uint32_t group_pieces_ = 0;
  bool bounce_used_ = false;
  std::vector<Bounced> bounced_;
  Buffer bounce_, bounce_pinned_;  // kRankGroupPieces pieces each, at the first host piece
  std::string aborted_;
};

}  // namespace

Status make_nccl_rank_id(RankId* out) {
  std::shared_ptr<const NcclApi> nccl;
  WHARF_RETURN_IF_ERROR(nccl_api(&nccl));
  WHARF_RETURN_IF_ERROR(require_rank_api(*nccl));
  nccl::UniqueId id;
  nccl::Result r = nccl->GetUniqueId(&id);
  if (r != nccl::kSuccess) return DeviceError("ncclGetUniqueId failed: " + nccl->error(r));
  std::memset(out->bytes, 0, sizeof out->bytes);
  std::memcpy(out->bytes, kNcclMagic, sizeof kNcclMagic);
  static_assert(kRankIdNcclOffset + sizeof(id) <= kRankIdBytes, "the NCCL id fits the Wharf id");
  std::memcpy(out->bytes + kRankIdNcclOffset, &id, sizeof id);
  return Status::Ok();
}

Status make_nccl_rank_transport(const RankId& id, std::shared_ptr<Runtime> runtime, uint32_t rank, uint32_t size,
                                uint64_t fingerprint, RankClock::time_point deadline,
                                std::unique_ptr<RankTransport>* out) {
  if (!is_nccl_rank_id(id))
    return InvalidArgument("replica group id: not made by wharf_replica_group_get_unique_id on a CUDA runtime");
  std::shared_ptr<const NcclApi> nccl;
  WHARF_RETURN_IF_ERROR(nccl_api(&nccl));
  WHARF_RETURN_IF_ERROR(require_rank_api(*nccl));
  // NVLink multicast stays off, as for groups of one process (docs/decisions.md).
  setenv("NCCL_NVLS_ENABLE", "0", 0);
  nccl::UniqueId nid;
  std::memcpy(&nid, id.bytes + kRankIdNcclOffset, sizeof nid);
  auto t = std::make_unique<NcclRankTransport>(std::move(nccl), std::move(runtime), rank, size);
  WHARF_RETURN_IF_ERROR(t->init(nid, deadline));
  // Declarations: the minimum and the maximum of the fingerprints agree only when every rank
  // declares alike (two votes: min of f, min of ~f).
  uint64_t lo = 0, hi = 0;
  WHARF_RETURN_IF_ERROR(t->vote(fingerprint, deadline, &lo));
  WHARF_RETURN_IF_ERROR(t->vote(~fingerprint, deadline, &hi));
  if (lo != fingerprint || ~hi != fingerprint)
    return InvalidArgument(
        "replica group: the ranks' containers are not declared alike (constants or states differ "
        "in name, order, dtype, shape, placement or flags; NCCL cannot say which rank differs)");
  *out = std::move(t);
  return Status::Ok();
}

#else  // !WHARF_HAVE_CUDA

Status make_nccl_rank_id(RankId*) {
  return Unsupported("replica groups across processes on CUDA: this libwharf was built without CUDA");
}

Status make_nccl_rank_transport(const RankId&, std::shared_ptr<Runtime>, uint32_t, uint32_t, uint64_t,
                                RankClock::time_point, std::unique_ptr<RankTransport>*) {
  return Unsupported("replica groups across processes on CUDA: this libwharf was built without CUDA");
}

#endif

}  // namespace wharf

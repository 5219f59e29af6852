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
    WHARF_RETURN_IF_ERROR(issue(data, bytes, deadline));
    return wait(deadline, "broadcast");
  }

  // Device memory and discards are only enqueued (the stream orders the pieces, so the host
  // waits once per batch instead of once per constant: a broadcast's latency grows with the
  // ranks, and a model has tens of thousands of constants).
  Status broadcast_async(void* data, uint64_t bytes, RankClock::time_point deadline) override {
    return issue(data, bytes, deadline);
  }

  Status flush(RankClock::time_point deadline) override {
    WHARF_RETURN_IF_ERROR(check_open());
    WHARF_RETURN_IF_ERROR(set_device());
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
    for (;;) {
      nccl::Result async = nccl::kSuccess;
      nccl::Result r = nccl_->CommGetAsyncError(comm_, &async);
      if (r != nccl::kSuccess) return fail(DeviceError("ncclCommGetAsyncError: " + nccl_->error(r)));
      if (async == nccl::kSuccess) return Status::Ok();
      if (async != nccl::kInProgress)
        return fail(IoError("NCCL: " + what + ": " + nccl_->error(async) +
                            " (a peer rank failed or closed; NCCL does not say which)"));
      if (RankClock::now() > deadline)
        return fail(IoError("NCCL: " + what +
                            " within the timeout (a peer rank is missing or stopped; NCCL does "
                            "not say which)"));
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

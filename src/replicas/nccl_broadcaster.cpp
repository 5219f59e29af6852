// SPDX-License-Identifier: Apache-2.0
// The NCCL broadcaster. libnccl.so.2 is opened at run time with dlopen and only the
// functions used here are resolved, so libwharf neither links NCCL nor needs it to load
// (a group that would need it says UNSUPPORTED, with the loader's reason). The few NCCL
// types are declared here rather than taken from nccl.h: that header is not on every build
// machine, and these declarations are NCCL 2's stable ABI (ncclResult_t and ncclDataType_t
// are C enums, i.e. int; ncclUniqueId is 128 bytes; a communicator is an opaque pointer).
#include <dlfcn.h>

#include <algorithm>
#include <cstdlib>
#include <mutex>
#include <string>
#include <type_traits>
#include <utility>

#include "core/logging.h"
#include "core/sync.h"
#include "core/text.h"
#include "replicas/broadcaster.h"
#include "replicas/nccl_api.h"

namespace wharf {

std::string nccl_library_path() {
  const char* env = std::getenv("WHARF_NCCL_LIBRARY");
  return env && *env ? env : "libnccl.so.2";
}

Status open_nccl(const std::string& path, std::shared_ptr<const NcclApi>* out, int* version) {
  auto api = std::make_shared<NcclApi>();
  api->path = path;
  // RTLD_LOCAL: NCCL's symbols stay out of the process's global scope (a PyTorch in the same
  // process may carry its own NCCL).
  dlerror();
  api->handle = dlopen(path.c_str(), RTLD_NOW | RTLD_LOCAL);
  if (!api->handle) {
    const char* why = dlerror();
    return Unsupported("NCCL could not be loaded from " + quote_path(path) + ": " +
                       (why ? why : "unknown loader error") +
                       " (install NCCL 2, or point WHARF_NCCL_LIBRARY at libnccl.so.2)");
  }
  auto resolve = [&](const char* name, auto* fn) -> Status {
    dlerror();
    void* sym = dlsym(api->handle, name);
    if (!sym) {
      const char* why = dlerror();
      return Unsupported("NCCL library " + quote_path(path) + " has no " + name + ": " +
                         (why ? why : "symbol not found") + " (NCCL 2.4 or later is needed)");
    }
    *fn = reinterpret_cast<std::remove_pointer_t<decltype(fn)>>(sym);
    return Status::Ok();
  };
  WHARF_RETURN_IF_ERROR(resolve("ncclGetVersion", &api->GetVersion));
  WHARF_RETURN_IF_ERROR(resolve("ncclCommInitAll", &api->CommInitAll));
  WHARF_RETURN_IF_ERROR(resolve("ncclCommDestroy", &api->CommDestroy));
  WHARF_RETURN_IF_ERROR(resolve("ncclCommAbort", &api->CommAbort));
  WHARF_RETURN_IF_ERROR(resolve("ncclCommGetAsyncError", &api->CommGetAsyncError));
  WHARF_RETURN_IF_ERROR(resolve("ncclGroupStart", &api->GroupStart));
  WHARF_RETURN_IF_ERROR(resolve("ncclGroupEnd", &api->GroupEnd));
  WHARF_RETURN_IF_ERROR(resolve("ncclBroadcast", &api->Broadcast));
  WHARF_RETURN_IF_ERROR(resolve("ncclGetErrorString", &api->GetErrorString));
  // Groups across processes (nccl_rank_transport.cpp) need these too; a library without
  // them (before NCCL 2.14) still serves groups of one process.
  auto optional = [&](const char* name, auto* fn) {
    *fn = reinterpret_cast<std::remove_pointer_t<decltype(fn)>>(dlsym(api->handle, name));
  };
  optional("ncclGetUniqueId", &api->GetUniqueId);
  optional("ncclCommInitRankConfig", &api->CommInitRankConfig);
  optional("ncclAllReduce", &api->AllReduce);
  int v = 0;
  nccl::Result r = api->GetVersion(&v);
  if (r != nccl::kSuccess)
    return Unsupported("NCCL library " + quote_path(path) + ": ncclGetVersion failed: " + api->error(r));
  if (version) *version = v;
  *out = std::move(api);
  return Status::Ok();
}

namespace {
// The process's NCCL, loaded once (never unloaded: communicators may outlive any group).
Mutex g_nccl_mu;
std::shared_ptr<const NcclApi> g_nccl WHARF_GUARDED_BY(g_nccl_mu);
}  // namespace

Status nccl_api(std::shared_ptr<const NcclApi>* out) {
  MutexLock lock(g_nccl_mu);
  std::shared_ptr<const NcclApi>& loaded = g_nccl;
  if (!loaded) {
    // A failure is not remembered: a later call (after the environment is fixed) retries.
    std::shared_ptr<const NcclApi> api;
    int version = 0;
    WHARF_RETURN_IF_ERROR(open_nccl(nccl_library_path(), &api, &version));
    const_cast<NcclApi&>(*api).close_on_destroy = false;
    WHARF_LOG(kInfo, "NCCL " + std::to_string(version) + " loaded from " + quote_path(api->path));
    loaded = std::move(api);
  }
  *out = loaded;
  return Status::Ok();
}

namespace {

// ncclBroadcast calls per ncclGroupStart/End: NCCL fuses a group's operations; bounded so
// a model with very many constants does not build one huge group.
constexpr size_t kMaxGroupedBuffers = 256;

class NcclBroadcaster final : public Broadcaster {
 public:
  NcclBroadcaster(std::shared_ptr<const NcclApi> nccl, std::vector<std::shared_ptr<Runtime>> replicas)
      : nccl_(std::move(nccl)), replicas_(std::move(replicas)) {}
  ~NcclBroadcaster() override { destroy_comms(false); }

  const char* kind() const override { return "nccl"; }
  int nccl_version() const override { return version_; }

  Status init() {
    nccl_->GetVersion(&version_);
    // NVLink SHARP multicast (NVLS) stays off: on shared multi-GPU hosts a program using
    // multicast can put the GPUs out of service for others, and a broadcast from one root
    // gains little from it (docs/decisions.md). overwrite = 0: an operator's setting wins.
    setenv("NCCL_NVLS_ENABLE", "0", 0);
    std::vector<int> devs;
    for (const auto& rt : replicas_) devs.push_back(rt->device().index());
    comms_.assign(replicas_.size(), nullptr);
    nccl::Result r = nccl_->CommInitAll(comms_.data(), int(devs.size()), devs.data());
    if (r != nccl::kSuccess) {
      comms_.clear();
      return DeviceError("ncclCommInitAll over " + std::to_string(devs.size()) + " GPUs failed: " + nccl_->error(r));
    }
    return Status::Ok();
  }

  Status enqueue(const std::vector<BroadcastBuffer>& buffers) override {
    if (comms_.empty()) WHARF_RETURN_IF_ERROR(init().with_context("recreating the NCCL communicators after an error"));
    const size_t n = replicas_.size();
    std::vector<void*> streams(n);
    for (size_t r = 0; r < n; ++r) streams[r] = replicas_[r]->stream().native_handle();
    for (size_t first = 0; first < buffers.size(); first += kMaxGroupedBuffers) {
      const size_t last = std::min(buffers.size(), first + kMaxGroupedBuffers);
      nccl::Result r = nccl_->GroupStart();
      if (r != nccl::kSuccess) return failed(DeviceError("ncclGroupStart failed: " + nccl_->error(r)));
      nccl::Result issue = nccl::kSuccess;
      std::string at;
      for (size_t i = first; i < last && issue == nccl::kSuccess; ++i) {
        const BroadcastBuffer& b = buffers[i];
        if (b.bytes == 0) continue;
        for (size_t k = 0; k < n && issue == nccl::kSuccess; ++k) {
          // In place on every rank: the root (0) sends its buffer, the others receive into theirs
          // (sendbuff is read on the root only).
          issue = nccl_->Broadcast(b.ptrs[k], b.ptrs[k], size_t(b.bytes), nccl::kInt8, 0, comms_[k], streams[k]);
          if (issue != nccl::kSuccess)
            at = "ncclBroadcast of " + std::to_string(b.bytes) + " bytes to replica " + std::to_string(k);
        }
      }
      // The group is always closed, also after a failed call inside it.
      r = nccl_->GroupEnd();
      if (issue != nccl::kSuccess) return failed(DeviceError(at + " failed: " + nccl_->error(issue)));
      if (r != nccl::kSuccess && r != nccl::kInProgress)
        return failed(DeviceError("ncclGroupEnd failed: " + nccl_->error(r)));
    }
    return Status::Ok();
  }

  Status finish() override {
    // After a failed enqueue, abort first: a collective issued on some ranks only would never
    // complete, and the abort ends NCCL's work in flight so the waits below return.
    if (!failure_.ok()) destroy_comms(true);
    // Wait for every rank (after a failure too: nothing may still write once this returns).
    Status st;
    for (size_t k = 0; k < replicas_.size(); ++k) {
      Status s = replicas_[k]->stream().synchronize();
      if (!s.ok() && st.ok()) st = s.with_context("replica " + std::to_string(k) + ": waiting for the NCCL broadcast");
    }
    for (size_t k = 0; k < comms_.size() && st.ok(); ++k) {
      nccl::Result async = nccl::kSuccess;
      nccl::Result r = nccl_->CommGetAsyncError(comms_[k], &async);
      if (r != nccl::kSuccess)
        st = DeviceError("ncclCommGetAsyncError of replica " + std::to_string(k) + ": " + nccl_->error(r));
      else if (async != nccl::kSuccess)
        st = DeviceError("NCCL communicator of replica " + std::to_string(k) + ": " + nccl_->error(async));
    }
    if (st.ok() && !failure_.ok()) st = failure_;
    failure_ = Status::Ok();
    // A communicator that saw an error is not trusted again: the next broadcast makes new ones.
    if (!st.ok()) destroy_comms(true);
    return st;
  }

 private:
  void destroy_comms(bool abort) {
    for (nccl::Comm c : comms_) {
      if (!c) continue;
      nccl::Result r = abort ? nccl_->CommAbort(c) : nccl_->CommDestroy(c);
      if (r != nccl::kSuccess)
        WHARF_LOG(kError, std::string(abort ? "ncclCommAbort" : "ncclCommDestroy") + ": " + nccl_->error(r));
    }
    comms_.clear();
  }

  std::shared_ptr<const NcclApi> nccl_;
  std::vector<std::shared_ptr<Runtime>> replicas_;
  // Remembers an enqueue failure for finish(), which still waits for what was issued.
  Status failed(Status st) {
    if (failure_.ok()) failure_ = st;
    return st;
  }

  std::vector<nccl::Comm> comms_;  // by replica; empty after an error
  Status failure_;                 // the first enqueue error since the last finish()
  int version_ = 0;
};

}  // namespace

Status make_nccl_broadcaster(std::shared_ptr<const NcclApi> nccl, std::vector<std::shared_ptr<Runtime>> replicas,
                             std::unique_ptr<Broadcaster>* out) {
  auto b = std::make_unique<NcclBroadcaster>(std::move(nccl), std::move(replicas));
  WHARF_RETURN_IF_ERROR(b->init());
  *out = std::move(b);
  return Status::Ok();
}

}  // namespace wharf

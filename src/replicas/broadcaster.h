/* SPDX-License-Identifier: Apache-2.0 */
// Broadcaster: copies buffers of replica 0 into the same-sized buffers of every other
// replica of a replica group. The group's all-or-nothing logic (src/replicas/replica_group.h)
// stands on this interface only, so it is tested on the host backend with the host
// implementation (and with failing ones); CUDA groups use NCCL.
//
// Implementations:
// - NCCL (nccl_broadcaster.cpp): grouped ncclBroadcast calls from rank 0, one communicator
//   per GPU (ncclCommInitAll), on each replica runtime's stream. libnccl.so.2 is opened at
//   run time (dlopen), never linked, so libwharf loads where NCCL is absent.
// - host (host_broadcaster.cpp): copies on each receiving replica's stream, for replicas on
//   the host backend.
//
// Threads: a broadcaster is used by one group call at a time (the group serialises them).
#pragma once

#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "core/status.h"
#include "device/runtime.h"

namespace wharf {

// One buffer of every replica: ptrs[0] is the source (replica 0), ptrs[r] the destination
// on replica r; all `bytes` long, in memory of each replica's device.
struct BroadcastBuffer {
  std::vector<void*> ptrs;
  uint64_t bytes = 0;
};

class Broadcaster {
 public:
  virtual ~Broadcaster() = default;
  // "nccl" or "host".
  virtual const char* kind() const = 0;
  // NCCL's version number (ncclGetVersion, e.g. 22703), 0 for others.
  virtual int nccl_version() const { return 0; }
  // Issues the copies of every destination from its source without waiting for them (the
  // sources must be complete). Calls may follow each other; the buffers of one call must stay
  // valid until finish() returns.
  virtual Status enqueue(const std::vector<BroadcastBuffer>& buffers) = 0;
  // Waits until everything enqueued is complete on the device and reports any error (of the
  // copies, or of the transport). Always waits, also after an enqueue failed: nothing may
  // still write into the destinations once it returns. On failure the destinations hold
  // unspecified bytes (the group drops them).
  virtual Status finish() = 0;
};

// Copies with Stream::copy_async on each receiving replica's runtime stream.
std::unique_ptr<Broadcaster> make_host_broadcaster(std::vector<std::shared_ptr<Runtime>> replicas);

// The NCCL library as this process opened it (the functions Wharf uses).
struct NcclApi;

// Where libnccl is looked for: $WHARF_NCCL_LIBRARY when set, else "libnccl.so.2".
std::string nccl_library_path();
// Opens the NCCL library at `path` and resolves the functions Wharf uses. UNSUPPORTED with
// the loader's reason (dlerror) when it cannot; `*version` gets ncclGetVersion's answer.
// Each call opens the library anew (tests); the group uses nccl_api(), which opens it once.
Status open_nccl(const std::string& path, std::shared_ptr<const NcclApi>* out, int* version);
// The process's NCCL (nccl_library_path(), opened on first success and kept).
Status nccl_api(std::shared_ptr<const NcclApi>* out);

// A broadcaster over one NCCL communicator per replica (CUDA runtimes on distinct devices),
// made with ncclCommInitAll. Sets NCCL_NVLS_ENABLE=0 (unless the environment sets it) before
// the first communicator: NVLink multicast stays off (docs/decisions.md says why).
Status make_nccl_broadcaster(std::shared_ptr<const NcclApi> nccl, std::vector<std::shared_ptr<Runtime>> replicas,
                             std::unique_ptr<Broadcaster>* out);

}  // namespace wharf

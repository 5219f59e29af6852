/* SPDX-License-Identifier: Apache-2.0 */
// The NCCL functions Wharf calls, as opened at run time (nccl_broadcaster.cpp loads them).
// The few NCCL types are declared here rather than taken from nccl.h: that header is not on
// every build machine, and these declarations are NCCL 2's stable ABI (ncclResult_t,
// ncclDataType_t and ncclRedOp_t are C enums, i.e. int; ncclUniqueId is 128 bytes; a
// communicator is an opaque pointer; ncclConfig_t is read up to its stated size).
#pragma once

#include <dlfcn.h>

#include <climits>
#include <cstddef>
#include <string>

namespace wharf {

namespace nccl {
using Result = int;           // ncclResult_t
using Comm = struct Opaque*;  // ncclComm_t
constexpr Result kSuccess = 0;
constexpr Result kInProgress = 7;
constexpr int kInt8 = 0;    // ncclInt8 (bytes)
constexpr int kUint64 = 5;  // ncclUint64
constexpr int kMin = 3;     // ncclMin
struct UniqueId {
  char internal[128];
};
// ncclConfig_t as NCCL 2.14 declared it (NCCL_CONFIG_INITIALIZER's first fields). Later
// libraries read `size` bytes of it and take their defaults for the rest (parseCommConfig),
// so this prefix stays valid.
struct Config {
  size_t size = sizeof(Config);
  unsigned int magic = 0xcafebeef;
  unsigned int version = 21400;  // NCCL_VERSION(2, 14, 0)
  int blocking = INT_MIN;        // NCCL_CONFIG_UNDEF_INT
  int cga_cluster_size = INT_MIN;
  int min_ctas = INT_MIN;
  int max_ctas = INT_MIN;
  const char* net_name = nullptr;
};
}  // namespace nccl

struct NcclApi {
  void* handle = nullptr;
  std::string path;
  nccl::Result (*GetVersion)(int*) = nullptr;
  nccl::Result (*CommInitAll)(nccl::Comm*, int, const int*) = nullptr;
  nccl::Result (*CommDestroy)(nccl::Comm) = nullptr;
  nccl::Result (*CommAbort)(nccl::Comm) = nullptr;
  nccl::Result (*CommGetAsyncError)(nccl::Comm, nccl::Result*) = nullptr;
  nccl::Result (*GroupStart)() = nullptr;
  nccl::Result (*GroupEnd)() = nullptr;
  nccl::Result (*Broadcast)(const void*, void*, size_t, int, int, nccl::Comm, void*) = nullptr;
  // Optional (null when the library lacks them): groups across processes.
  nccl::Result (*GetUniqueId)(nccl::UniqueId*) = nullptr;
  nccl::Result (*CommInitRankConfig)(nccl::Comm*, int, nccl::UniqueId, int, nccl::Config*) = nullptr;
  nccl::Result (*AllReduce)(const void*, void*, size_t, int, int, nccl::Comm, void*) = nullptr;
  const char* (*GetErrorString)(nccl::Result) = nullptr;

  ~NcclApi() {
    // Kept open for the process's life when it is the process's copy (nccl_api()): NCCL's
    // own threads and atexit handlers must not outlive its code. Copies opened by
    // open_nccl for a check are closed.
    if (handle && close_on_destroy) dlclose(handle);
  }
  bool close_on_destroy = true;

  std::string error(nccl::Result r) const {
    return std::string(GetErrorString ? GetErrorString(r) : "unknown NCCL error") + " (ncclResult_t " +
           std::to_string(r) + ")";
  }
};

}  // namespace wharf

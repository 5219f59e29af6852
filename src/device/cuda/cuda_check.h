/* SPDX-License-Identifier: Apache-2.0 */
// Turning cudaError_t into Status. Every CUDA runtime call in the backend goes through
// WHARF_CUDA_RETURN_IF_ERROR (or cuda_error_status on paths that cannot return a Status), so
// every failure says what was being done, with which sizes/pointers, and what CUDA said:
//   "cudaMemcpyAsync of 4096 bytes 0x7f.. -> 0x7f.. on stream 0x55.. (device 0):
//    cudaErrorInvalidValue: invalid argument"
#pragma once

#include <cuda_runtime_api.h>

#include <cstdio>
#include <string>

#include "core/status.h"

namespace wharf {
namespace cuda {

// "cudaErrorInvalidValue: invalid argument"
inline std::string error_text(cudaError_t e) { return std::string(cudaGetErrorName(e)) + ": " + cudaGetErrorString(e); }

inline std::string hex_ptr(const void* p) {
  char buf[2 + 2 * sizeof(void*) + 1];
  std::snprintf(buf, sizeof(buf), "%p", p);
  return buf;
}

// Errors after which the CUDA context is unusable: every later call in this process fails
// with the same code, and only a process restart recovers (the list is the codes that
// driver_types.h documents so). Saying so in the message spares
// the reader from chasing the later, unrelated-looking failures.
inline bool is_sticky(cudaError_t e) {
  switch (e) {
    case cudaErrorIllegalAddress:
    case cudaErrorLaunchTimeout:
    case cudaErrorAssert:
    case cudaErrorHardwareStackError:
    case cudaErrorIllegalInstruction:
    case cudaErrorMisalignedAddress:
    case cudaErrorInvalidAddressSpace:
    case cudaErrorInvalidPc:
    case cudaErrorLaunchFailure:
    case cudaErrorMpsClientTerminated:
      return true;
    default:
      return false;
  }
}

// Builds the Status for a failed call and clears the thread's last-error slot, so an
// error we already reported does not resurface from a later cudaGetLastError() in the
// caller's own code (e.g. its kernel-launch check). A sticky error cannot be cleared.
// Out-of-memory maps to OUT_OF_MEMORY (callers may retry with less); the rest to
// DEVICE_ERROR.
inline Status error_status(cudaError_t e, const std::string& what) {
  (void)cudaGetLastError();
  std::string msg = what + ": " + error_text(e);
  if (is_sticky(e)) msg += " (the CUDA context is now unusable; the process must restart)";
  if (e == cudaErrorMemoryAllocation) return OutOfMemory(std::move(msg));
  return DeviceError(std::move(msg));
}

}  // namespace cuda
}  // namespace wharf

// Runs `call`; on failure returns error_status(e, what). `what` is an expression building
// the description and is evaluated only on failure, so hot paths (one copy per staging
// chunk) pay no string formatting.
#define WHARF_CUDA_RETURN_IF_ERROR(call, what)                                                       \
  do {                                                                                               \
    const cudaError_t wharf_cuda_err_ = (call);                                                      \
    if (wharf_cuda_err_ != cudaSuccess) return ::wharf::cuda::error_status(wharf_cuda_err_, (what)); \
  } while (0)

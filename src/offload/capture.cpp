// SPDX-License-Identifier: Apache-2.0
// Whether a stream is being captured into a CUDA graph. The device layer has no such query
// yet (docs/decisions.md, "Offloaders"): this is the one CUDA call of src/offload, on the
// stream's native handle, until Stream grows `is_capturing()`.
#include "offload/offloader.h"

#if defined(WHARF_HAVE_CUDA)
#include <cuda_runtime_api.h>
#endif

namespace wharf {

Status stream_is_capturing(Stream& stream, bool* capturing) {
  *capturing = false;
  void* native = stream.native_handle();
  if (!native) return Status::Ok();  // the host backend never captures
#if defined(WHARF_HAVE_CUDA)
  cudaStreamCaptureStatus cs = cudaStreamCaptureStatusNone;
  cudaError_t e = cudaStreamIsCapturing(static_cast<cudaStream_t>(native), &cs);
  if (e != cudaSuccess) {
    (void)cudaGetLastError();
    return DeviceError(std::string("cudaStreamIsCapturing: ") + cudaGetErrorString(e));
  }
  if (cs == cudaStreamCaptureStatusInvalidated)
    return DeviceError("the run's stream is in an invalidated CUDA graph capture (end the capture and start again)");
  *capturing = cs == cudaStreamCaptureStatusActive;
#endif
  return Status::Ok();
}

}  // namespace wharf

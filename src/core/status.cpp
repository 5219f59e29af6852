// SPDX-License-Identifier: Apache-2.0
#include "core/status.h"

namespace wharf {

const char* code_name(Code code) noexcept {
  switch (code) {
    case Code::kOk:
      return "OK";
    case Code::kInvalidArgument:
      return "INVALID_ARGUMENT";
    case Code::kNotFound:
      return "NOT_FOUND";
    case Code::kAlreadyExists:
      return "ALREADY_EXISTS";
    case Code::kOutOfMemory:
      return "OUT_OF_MEMORY";
    case Code::kResourceExhausted:
      return "RESOURCE_EXHAUSTED";
    case Code::kFailedPrecondition:
      return "FAILED_PRECONDITION";
    case Code::kBusy:
      return "BUSY";
    case Code::kUnsupported:
      return "UNSUPPORTED";
    case Code::kDeviceError:
      return "DEVICE_ERROR";
    case Code::kIoError:
      return "IO_ERROR";
    case Code::kDataCorrupt:
      return "DATA_CORRUPT";
    case Code::kInternal:
      return "INTERNAL";
    case Code::kCancelled:
      return "CANCELLED";
  }
  return "UNKNOWN";
}

}  // namespace wharf

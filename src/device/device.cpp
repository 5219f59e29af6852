// SPDX-License-Identifier: Apache-2.0
#include "device/device.h"

namespace wharf {

const char* backend_name(Backend b) {
  switch (b) {
    case Backend::kCuda:
      return "cuda";
    case Backend::kHost:
      return "host";
  }
  return "unknown";
}

Buffer& Buffer::operator=(Buffer&& o) noexcept {
  if (this != &o) {
    reset();
    device_ = std::move(o.device_);
    ptr_ = o.ptr_;
    size_ = o.size_;
    kind_ = o.kind_;
    tag_ = o.tag_;
    o.ptr_ = nullptr;
    o.size_ = 0;
  }
  return *this;
}

void Buffer::reset() {
  if (!device_) return;
  if (ptr_) device_->raw_free(kind_, ptr_);
  device_->accounting_.release(kind_, tag_, size_);
  device_.reset();
  ptr_ = nullptr;
  size_ = 0;
}

Status Device::allocate(MemKind kind, MemTag tag, uint64_t bytes, const std::string& what, Buffer* out) {
  WHARF_RETURN_IF_ERROR(accounting_.reserve(kind, tag, bytes, what));
  void* p = nullptr;
  if (bytes > 0) {
    Status st = raw_allocate(kind, bytes, &p);
    if (!st.ok()) {
      accounting_.release(kind, tag, bytes);
      return st.with_context("allocating " + std::to_string(bytes) + " bytes for " + what);
    }
  }
  Buffer b;
  b.device_ = shared_from_this();
  b.ptr_ = p;
  b.size_ = bytes;
  b.kind_ = kind;
  b.tag_ = tag;
  *out = std::move(b);
  return Status::Ok();
}

#ifndef WHARF_HAVE_CUDA
Status create_cuda_device(const DeviceOptions&, std::shared_ptr<Device>*) {
  return Unsupported(
      "this build of Wharf has no CUDA backend (configured with WHARF_WITH_CUDA=OFF "
      "or no CUDA toolkit found)");
}
bool cuda_device_available(int, std::string* reason) {
  if (reason) *reason = "built without CUDA";
  return false;
}
bool cuda_backend_built() { return false; }
#endif

}  // namespace wharf

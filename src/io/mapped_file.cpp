// SPDX-License-Identifier: Apache-2.0
#include "io/mapped_file.h"

#include <sys/mman.h>
#include <unistd.h>

#include <cerrno>
#include <system_error>

#include "core/text.h"
#include "io/read_only_file.h"

namespace wharf::io {
namespace {

// std::generic_category().message is thread-safe, unlike strerror.
std::string errno_text(int err) { return std::generic_category().message(err); }

}  // namespace

Status MappedFile::open(const std::string& path, std::unique_ptr<MappedFile>* out) {
  out->reset();
  // Allocate first: once the mapping exists nothing may throw before it has an owner.
  std::unique_ptr<MappedFile> file(new MappedFile(path, nullptr, 0));
  int fd = -1;
  uint64_t file_size = 0;
  WHARF_RETURN_IF_ERROR(open_regular_file(path, "map", &fd, &file_size));
  const size_t size = static_cast<size_t>(file_size);
  void* addr = nullptr;
  if (size > 0) {
    addr = ::mmap(nullptr, size, PROT_READ, MAP_PRIVATE, fd, 0);
    if (addr == MAP_FAILED) {
      const int err = errno;
      ::close(fd);
      return IoError("cannot mmap " + quote_path(path) + ": " + errno_text(err));
    }
  }
  ::close(fd);  // the mapping holds its own reference to the file
  file->data_ = static_cast<const uint8_t*>(addr);
  file->size_ = size;
  *out = std::move(file);
  return Status::Ok();
}

MappedFile::~MappedFile() {
  if (data_ != nullptr) ::munmap(const_cast<uint8_t*>(data_), size_);
}

}  // namespace wharf::io

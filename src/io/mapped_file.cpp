// SPDX-License-Identifier: Apache-2.0
#include "io/mapped_file.h"

#include <fcntl.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <system_error>

#include "core/text.h"

namespace wharf::io {
namespace {

// std::generic_category().message is thread-safe, unlike strerror.
std::string errno_text(int err) { return std::generic_category().message(err); }

Status errno_status(const std::string& what, const std::string& path, int err) {
  return IoError(what + " " + quote_path(path) + ": " + errno_text(err));
}

const char* file_type_name(mode_t mode) {
  if (S_ISDIR(mode)) return "a directory";
  if (S_ISFIFO(mode)) return "a FIFO";
  if (S_ISCHR(mode)) return "a character device";
  if (S_ISBLK(mode)) return "a block device";
  if (S_ISSOCK(mode)) return "a socket";
  return "an unknown kind of file";
}

}  // namespace

Status MappedFile::open(const std::string& path, std::unique_ptr<MappedFile>* out) {
  out->reset();
  // Allocate first: once the mapping exists nothing may throw before it has an owner.
  std::unique_ptr<MappedFile> file(new MappedFile(path, nullptr, 0));
  // O_NONBLOCK: opening a FIFO for reading otherwise waits for a writer, forever if none comes,
  // and a device may wait for its hardware. With it, open returns at once and fstat below
  // refuses whatever is not a regular file before anything is read. O_NOCTTY: a terminal must
  // not become the process's controlling terminal.
  int fd;
  do {
    fd = ::open(path.c_str(), O_RDONLY | O_CLOEXEC | O_NONBLOCK | O_NOCTTY);
  } while (fd < 0 && errno == EINTR);
  if (fd < 0) {
    const int err = errno;
    // ENOTDIR: a component of the path is a regular file, so the file does not exist either.
    if (err == ENOENT || err == ENOTDIR)
      return NotFound("file " + quote_path(path) + " does not exist");
    return errno_status("cannot open", path, err);
  }
  struct stat st;
  if (::fstat(fd, &st) != 0) {
    const int err = errno;
    ::close(fd);
    return errno_status("cannot stat", path, err);
  }
  if (!S_ISREG(st.st_mode)) {
    ::close(fd);
    return IoError("cannot map " + quote_path(path) + ": not a regular file (" + file_type_name(st.st_mode) + ")");
  }
  // A regular file ignores O_NONBLOCK; clear it anyway so the descriptor means what it says.
  const int flags = ::fcntl(fd, F_GETFL);
  if (flags < 0 || ::fcntl(fd, F_SETFL, flags & ~O_NONBLOCK) != 0) {
    const int err = errno;
    ::close(fd);
    return errno_status("cannot clear O_NONBLOCK on", path, err);
  }
  const size_t size = static_cast<size_t>(st.st_size);
  void* addr = nullptr;
  if (size > 0) {
    addr = ::mmap(nullptr, size, PROT_READ, MAP_PRIVATE, fd, 0);
    if (addr == MAP_FAILED) {
      const int err = errno;
      ::close(fd);
      return errno_status("cannot mmap", path, err);
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

// SPDX-License-Identifier: Apache-2.0
#include "io/read_only_file.h"

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
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

// Linux transfers at most this much in one read (MAX_RW_COUNT); asking for more only returns
// less, so each pread asks for at most this.
constexpr uint64_t kMaxReadBytes = 0x7ffff000;

}  // namespace

Status open_regular_file(const std::string& path, const char* verb, int* fd_out, uint64_t* size_out) {
  *fd_out = -1;
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
    if (err == ENOENT || err == ENOTDIR) return NotFound("file " + quote_path(path) + " does not exist");
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
    return IoError(std::string("cannot ") + verb + " " + quote_path(path) + ": not a regular file (" +
                   file_type_name(st.st_mode) + ")");
  }
  // A regular file ignores O_NONBLOCK; clear it anyway so the descriptor means what it says.
  const int flags = ::fcntl(fd, F_GETFL);
  if (flags < 0 || ::fcntl(fd, F_SETFL, flags & ~O_NONBLOCK) != 0) {
    const int err = errno;
    ::close(fd);
    return errno_status("cannot clear O_NONBLOCK on", path, err);
  }
  *fd_out = fd;
  *size_out = static_cast<uint64_t>(st.st_size);
  return Status::Ok();
}

Status ReadOnlyFile::open(const std::string& path, std::shared_ptr<const ReadOnlyFile>* out) {
  out->reset();
  // Allocated before the descriptor exists, so nothing can throw while it has no owner.
  std::unique_ptr<ReadOnlyFile> file(new ReadOnlyFile(path, -1, 0));
  WHARF_RETURN_IF_ERROR(open_regular_file(path, "read", &file->fd_, &file->size_));
  *out = std::move(file);
  return Status::Ok();
}

ReadOnlyFile::~ReadOnlyFile() {
  if (fd_ >= 0) ::close(fd_);
}

Status ReadOnlyFile::read_exact(void* dst, uint64_t bytes, uint64_t offset) const {
  char* p = static_cast<char*>(dst);
  uint64_t done = 0;
  while (done < bytes) {
    const size_t want = static_cast<size_t>(std::min(bytes - done, kMaxReadBytes));
    const ssize_t n = ::pread(fd_, p + done, want, static_cast<off_t>(offset + done));
    if (n > 0) {
      done += static_cast<uint64_t>(n);
      continue;
    }
    const std::string range =
        "reading " + std::to_string(bytes) + " bytes at offset " + std::to_string(offset) + " of " + quote_path(path_);
    if (n == 0)
      return IoError(range + ": the file ends after " + std::to_string(offset + done) + " bytes (it was " +
                     std::to_string(size_) + " bytes when opened: it shrank while being read)");
    if (errno == EINTR) continue;
    return IoError(range + ": " + errno_text(errno) + " after " + std::to_string(done) + " bytes");
  }
  return Status::Ok();
}

Status ReadOnlyFile::check_covers(uint64_t end) const {
  struct stat st;
  if (::fstat(fd_, &st) != 0) return errno_status("cannot stat", path_, errno);
  const uint64_t now = static_cast<uint64_t>(st.st_size);
  if (now < end)
    return IoError("file " + quote_path(path_) + " is " + std::to_string(now) + " bytes, but its tensors need " +
                   std::to_string(end) + " (it was " + std::to_string(size_) +
                   " bytes when opened: it was truncated since)");
  return Status::Ok();
}

}  // namespace wharf::io

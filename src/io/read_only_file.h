/* SPDX-License-Identifier: Apache-2.0 */
// A regular file open for reading with pread: no mapping, so a file that shrinks while it is
// read gives a short read (an error) where a mapping would raise SIGBUS. Updates from files
// read their tensors this way, straight into the pinned staging ring (io/safetensors.h,
// SafetensorsFile::open_for_reading); the descriptor is also what GPUDirect Storage registers.
#pragma once

#include <cstdint>
#include <memory>
#include <string>

#include "core/status.h"

namespace wharf::io {

// Opens `path` read-only without blocking and checks that it is a regular file: the rules of
// MappedFile::open. O_NONBLOCK at open (a FIFO would otherwise wait for a writer, forever if
// none comes), cleared afterwards; a FIFO, device, socket or directory is kIoError "not a
// regular file (a FIFO)"; a missing file kNotFound; other failures kIoError with strerror.
// `verb` is what the caller meant to do ("map", "read"). On success *fd is owned by the caller
// and *size is the file's size now.
Status open_regular_file(const std::string& path, const char* verb, int* fd, uint64_t* size);

class ReadOnlyFile {
 public:
  // open_regular_file, kept open for the object's life. Shared: every tensor read from the
  // file (a map entry, a copy request) holds it.
  static Status open(const std::string& path, std::shared_ptr<const ReadOnlyFile>* out);

  ~ReadOnlyFile();
  ReadOnlyFile(const ReadOnlyFile&) = delete;
  ReadOnlyFile& operator=(const ReadOnlyFile&) = delete;

  const std::string& path() const { return path_; }
  int fd() const { return fd_; }
  uint64_t size() const { return size_; }  // when it was opened

  // Reads exactly `bytes` bytes at `offset` into `dst` (pread, retried after EINTR and partial
  // reads). Safe from many threads at once (pread has no file position). A read that ends
  // early, because the file is now shorter, or that fails (EIO) is kIoError naming the path,
  // the range and what happened; `dst` then holds an unspecified prefix of the range.
  Status read_exact(void* dst, uint64_t bytes, uint64_t offset) const;

  // kIoError naming the path if the file is now shorter than `end` bytes (fstat): it was
  // truncated since it was opened (and validated). A file can still shrink after this check;
  // read_exact reports that.
  Status check_covers(uint64_t end) const;

 private:
  ReadOnlyFile(std::string path, int fd, uint64_t size) : path_(std::move(path)), fd_(fd), size_(size) {}

  std::string path_;
  int fd_ = -1;
  uint64_t size_ = 0;
};

}  // namespace wharf::io

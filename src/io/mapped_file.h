/* SPDX-License-Identifier: Apache-2.0 */
// A read-only, private memory mapping of a whole file, unmapped on destruction.
#pragma once

#include <cstddef>
#include <cstdint>
#include <memory>
#include <string>

#include "core/status.h"

namespace wharf::io {

class MappedFile {
 public:
  // Maps `path` with PROT_READ / MAP_PRIVATE. The descriptor is closed once the mapping exists
  // (the mapping keeps the file alive). A missing file is kNotFound naming the path; any other
  // failure (permissions, mmap) is kIoError with the path and strerror. Only regular files are
  // mapped: the open never blocks (O_NONBLOCK, cleared afterwards), so a FIFO, a device, a
  // socket or a directory is refused at once as kIoError "not a regular file (a FIFO)". Paths
  // appear in messages through quote_path. An empty file succeeds with data() == nullptr and
  // size() == 0 (mmap cannot map zero bytes).
  //
  // Caveat of every mmap reader: if another process truncates the file while it is mapped,
  // touching the lost pages raises SIGBUS. Model files are written by rename (see the writer),
  // which replaces the directory entry and leaves a mapped inode intact. Updates from files do
  // not map (io/read_only_file.h: pread, a short read is an error); what maps is the public
  // wharf_constant_map_load_safetensors, whose views are the mapping, and the .pt2 reader.
  static Status open(const std::string& path, std::unique_ptr<MappedFile>* out);

  ~MappedFile();
  MappedFile(const MappedFile&) = delete;
  MappedFile& operator=(const MappedFile&) = delete;

  const uint8_t* data() const { return data_; }
  size_t size() const { return size_; }
  const std::string& path() const { return path_; }

 private:
  MappedFile(std::string path, const uint8_t* data, size_t size) : path_(std::move(path)), data_(data), size_(size) {}

  std::string path_;
  const uint8_t* data_ = nullptr;
  size_t size_ = 0;
};

}  // namespace wharf::io

// SPDX-License-Identifier: Apache-2.0
// A read-only view of a ZIP archive's stored entries, enough to open PyTorch's `.pt2`
// packages (torch._inductor.aoti_compile_and_package writes them with its own ZIP writer:
// every entry stored, uncompressed, often 64-byte aligned through an extra field; ZIP64 where
// sizes need it). The archive is memory-mapped; entries are views into the mapping.
//
// Hostile input: every offset and size is checked against the file before it is used, the
// central directory must describe entries that fit, a local header must agree with its
// central record on name and size, and an entry's bytes must match its CRC-32 when read.
// What this reader does not do (compressed or encrypted entries, multi-disk archives) is
// kUnsupported naming the entry; what breaks the format is kDataCorrupt naming the archive,
// the entry and the byte offset.
#pragma once

#include <cstddef>
#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "core/status.h"
#include "io/mapped_file.h"

namespace wharf::io {

struct ZipEntry {
  std::string name;
  uint16_t method = 0;  // 0: stored
  uint16_t flags = 0;
  uint32_t crc32 = 0;
  uint64_t compressed_size = 0;
  uint64_t size = 0;  // uncompressed
  uint64_t local_header_offset = 0;
};

class ZipArchive {
 public:
  // Maps `path` and reads its central directory (MappedFile's errors for the file itself).
  static Status open(const std::string& path, std::unique_ptr<ZipArchive>* out);
  // The same over bytes the caller keeps alive (tests build archives in memory).
  static Status from_bytes(const uint8_t* data, size_t size, const std::string& label,
                           std::unique_ptr<ZipArchive>* out);

  const std::vector<ZipEntry>& entries() const { return entries_; }
  const ZipEntry* find(const std::string& name) const;
  // The stored bytes of `e` (one of entries()), checked against its CRC-32.
  Status read(const ZipEntry& e, const uint8_t** data, uint64_t* size) const;
  const std::string& label() const { return label_; }

 private:
  ZipArchive() = default;
  Status parse();

  std::unique_ptr<MappedFile> file_;
  const uint8_t* data_ = nullptr;
  size_t size_ = 0;
  std::string label_;  // quoted path, for messages
  std::vector<ZipEntry> entries_;
};

// CRC-32 (ISO-HDLC, as ZIP uses), of `n` bytes continuing from `crc` (0 to start).
uint32_t crc32(const uint8_t* data, size_t n, uint32_t crc = 0);

}  // namespace wharf::io

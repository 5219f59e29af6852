// SPDX-License-Identifier: Apache-2.0
#include "io/zip_archive.h"

#include <array>
#include <cstdio>
#include <cstring>
#include <set>

#include "core/text.h"

namespace wharf::io {
namespace {

constexpr uint32_t kEocdSig = 0x06054b50, kZip64LocatorSig = 0x07064b50, kZip64EocdSig = 0x06064b50;
constexpr uint32_t kCentralSig = 0x02014b50, kLocalSig = 0x04034b50;
constexpr size_t kEocdSize = 22, kZip64LocatorSize = 20, kZip64EocdSize = 56, kCentralSize = 46, kLocalSize = 30;

uint16_t u16(const uint8_t* p) { return uint16_t(p[0] | (p[1] << 8)); }
uint32_t u32(const uint8_t* p) {
  return uint32_t(p[0]) | (uint32_t(p[1]) << 8) | (uint32_t(p[2]) << 16) | (uint32_t(p[3]) << 24);
}
uint64_t u64(const uint8_t* p) { return uint64_t(u32(p)) | (uint64_t(u32(p + 4)) << 32); }

std::array<uint32_t, 256> make_crc_table() {
  std::array<uint32_t, 256> t{};
  for (uint32_t i = 0; i < 256; ++i) {
    uint32_t c = i;
    for (int k = 0; k < 8; ++k) c = (c & 1) ? 0xEDB88320u ^ (c >> 1) : c >> 1;
    t[i] = c;
  }
  return t;
}

}  // namespace

uint32_t crc32(const uint8_t* data, size_t n, uint32_t crc) {
  static const std::array<uint32_t, 256> table = make_crc_table();
  crc = ~crc;
  for (size_t i = 0; i < n; ++i) crc = table[(crc ^ data[i]) & 0xFF] ^ (crc >> 8);
  return ~crc;
}

Status ZipArchive::open(const std::string& path, std::unique_ptr<ZipArchive>* out) {
  std::unique_ptr<MappedFile> file;
  WHARF_RETURN_IF_ERROR(MappedFile::open(path, &file));
  std::unique_ptr<ZipArchive> z(new ZipArchive());
  z->data_ = file->data();
  z->size_ = file->size();
  z->label_ = "archive " + quote_path(path);
  z->file_ = std::move(file);
  WHARF_RETURN_IF_ERROR(z->parse());
  *out = std::move(z);
  return Status::Ok();
}

Status ZipArchive::from_bytes(const uint8_t* data, size_t size, const std::string& label,
                              std::unique_ptr<ZipArchive>* out) {
  std::unique_ptr<ZipArchive> z(new ZipArchive());
  z->data_ = data;
  z->size_ = size;
  z->label_ = "archive " + quote_name(label);
  WHARF_RETURN_IF_ERROR(z->parse());
  *out = std::move(z);
  return Status::Ok();
}

Status ZipArchive::parse() {
  auto corrupt = [&](const std::string& what) { return DataCorrupt(label_ + ": " + what); };
  // 1. The end of central directory record: the last 22 bytes, or earlier by its comment's
  // length. Scanning back at most 64 KiB (the longest comment) from the end.
  if (size_ < kEocdSize)
    return corrupt("not a ZIP archive: " + std::to_string(size_) + " bytes is shorter than its end record");
  size_t eocd = SIZE_MAX;
  const size_t lowest = size_ - kEocdSize > 0xFFFF ? size_ - kEocdSize - 0xFFFF : 0;
  for (size_t p = size_ - kEocdSize + 1; p-- > lowest;) {
    if (u32(data_ + p) == kEocdSig && p + kEocdSize + u16(data_ + p + 20) == size_) {
      eocd = p;
      break;
    }
  }
  if (eocd == SIZE_MAX) return corrupt("not a ZIP archive: no end of central directory record at its end");
  const uint8_t* e = data_ + eocd;
  if (u16(e + 4) != 0 || u16(e + 6) != 0)
    return Unsupported(label_ + ": a multi-disk archive (disk " + std::to_string(u16(e + 4)) + ") is not supported");
  uint64_t count = u16(e + 10), cd_size = u32(e + 12), cd_offset = u32(e + 16);
  size_t cd_end_limit = eocd;  // the central directory ends before the records that follow it

  // 2. ZIP64: a locator right before the end record points at the 64-bit end record.
  if (eocd >= kZip64LocatorSize && u32(data_ + eocd - kZip64LocatorSize) == kZip64LocatorSig) {
    const uint8_t* l = data_ + eocd - kZip64LocatorSize;
    const uint64_t z64 = u64(l + 8);
    if (u32(l + 4) != 0 || u32(l + 16) > 1)
      return Unsupported(label_ + ": a multi-disk ZIP64 archive is not supported");
    if (z64 > eocd - kZip64LocatorSize || eocd - kZip64LocatorSize - z64 < kZip64EocdSize)
      return corrupt("the ZIP64 end record offset " + std::to_string(z64) + " does not fit before its locator");
    const uint8_t* r = data_ + z64;
    if (u32(r) != kZip64EocdSig) return corrupt("no ZIP64 end record at offset " + std::to_string(z64));
    if (u32(r + 16) != 0 || u32(r + 20) != 0)
      return Unsupported(label_ + ": a multi-disk ZIP64 archive is not supported");
    count = u64(r + 32);
    cd_size = u64(r + 40);
    cd_offset = u64(r + 48);
    cd_end_limit = size_t(z64);
  } else if (count == 0xFFFF || cd_size == 0xFFFFFFFF || cd_offset == 0xFFFFFFFF) {
    return corrupt("its end record asks for ZIP64 values but there is no ZIP64 locator");
  }
  if (cd_offset > cd_end_limit || cd_size > cd_end_limit - cd_offset)
    return corrupt("the central directory (" + std::to_string(cd_size) + " bytes at offset " +
                   std::to_string(cd_offset) + ") does not fit before its end record at " +
                   std::to_string(cd_end_limit));
  if (count > cd_size / kCentralSize)
    return corrupt(std::to_string(count) + " entries cannot fit in a central directory of " + std::to_string(cd_size) +
                   " bytes");

  // 3. The central directory.
  std::vector<ZipEntry> entries;
  entries.reserve(size_t(count));
  std::set<std::string> names;
  uint64_t p = cd_offset;
  const uint64_t end = cd_offset + cd_size;
  for (uint64_t i = 0; i < count; ++i) {
    const std::string where = "central directory entry " + std::to_string(i) + " at offset " + std::to_string(p);
    if (end - p < kCentralSize) return corrupt(where + ": truncated");
    const uint8_t* c = data_ + p;
    if (u32(c) != kCentralSig) return corrupt(where + ": bad signature");
    ZipEntry z;
    z.flags = u16(c + 8);
    z.method = u16(c + 10);
    z.crc32 = u32(c + 16);
    z.compressed_size = u32(c + 20);
    z.size = u32(c + 24);
    const uint64_t n = u16(c + 28), x = u16(c + 30), m = u16(c + 32);
    const uint16_t disk = u16(c + 34);
    z.local_header_offset = u32(c + 42);
    if (end - p - kCentralSize < n + x + m)
      return corrupt(where + ": its name, extra field and comment overrun the directory");
    z.name.assign(reinterpret_cast<const char*>(c + kCentralSize), size_t(n));
    if (z.name.find('\0') != std::string::npos) return corrupt(where + ": its name contains a NUL byte");
    const std::string entry = "entry " + quote_name(z.name);
    // ZIP64 extra field: the 64-bit values of the fields saturated above, in this order.
    const uint8_t* xf = c + kCentralSize + n;
    for (uint64_t q = 0; q + 4 <= x;) {
      const uint16_t id = u16(xf + q), len = u16(xf + q + 2);
      if (q + 4 + len > x) return corrupt(entry + ": its extra field overruns itself");
      if (id == 0x0001) {
        const uint8_t* v = xf + q + 4;
        uint64_t left = len;
        auto take = [&](uint64_t* field) -> bool {
          if (left < 8) return false;
          *field = u64(v);
          v += 8;
          left -= 8;
          return true;
        };
        if (z.size == 0xFFFFFFFF && !take(&z.size)) return corrupt(entry + ": a short ZIP64 extra field");
        if (z.compressed_size == 0xFFFFFFFF && !take(&z.compressed_size))
          return corrupt(entry + ": a short ZIP64 extra field");
        if (z.local_header_offset == 0xFFFFFFFF && !take(&z.local_header_offset))
          return corrupt(entry + ": a short ZIP64 extra field");
      }
      q += 4 + len;
    }
    if (disk != 0 && disk != 0xFFFF) return Unsupported(label_ + ": " + entry + " is on disk " + std::to_string(disk));
    if (!names.insert(z.name).second) return corrupt("two entries are named " + quote_name(z.name));
    // Its local header and data lie before the central directory.
    const uint64_t lh = z.local_header_offset;
    if (lh > cd_offset || cd_offset - lh < kLocalSize)
      return corrupt(entry + ": its local header offset " + std::to_string(lh) + " is outside the archive's data");
    const uint8_t* l = data_ + lh;
    if (u32(l) != kLocalSig) return corrupt(entry + ": no local header at offset " + std::to_string(lh));
    const uint64_t ln = u16(l + 26), lx = u16(l + 28);
    if (cd_offset - lh - kLocalSize < ln + lx) return corrupt(entry + ": its local header overruns the data");
    if (ln != n || std::memcmp(l + kLocalSize, z.name.data(), size_t(n)) != 0)
      return corrupt(entry + ": its local header names another file");
    const uint64_t data = lh + kLocalSize + ln + lx;
    if (z.compressed_size > cd_offset - data)
      return corrupt(entry + ": its " + std::to_string(z.compressed_size) + " bytes at offset " + std::to_string(data) +
                     " run past the archive's data");
    entries.push_back(std::move(z));
    p += kCentralSize + n + x + m;
  }
  entries_ = std::move(entries);
  return Status::Ok();
}

const ZipEntry* ZipArchive::find(const std::string& name) const {
  for (const ZipEntry& e : entries_)
    if (e.name == name) return &e;
  return nullptr;
}

Status ZipArchive::read(const ZipEntry& e, const uint8_t** data, uint64_t* size) const {
  const std::string entry = label_ + ": entry " + quote_name(e.name);
  if (e.flags & 1) return Unsupported(entry + " is encrypted");
  if (e.method != 0)
    return Unsupported(entry + " is compressed (method " + std::to_string(e.method) +
                       "); only stored entries are read (PyTorch writes packages stored)");
  if (e.compressed_size != e.size)
    return DataCorrupt(entry + ": stored, but its sizes differ (" + std::to_string(e.compressed_size) + " and " +
                       std::to_string(e.size) + ")");
  const uint8_t* l = data_ + e.local_header_offset;  // checked by parse()
  const uint8_t* d = l + kLocalSize + u16(l + 26) + u16(l + 28);
  const uint32_t got = crc32(d, size_t(e.size));
  if (got != e.crc32) {
    char buf[64];
    std::snprintf(buf, sizeof buf, "CRC-32 %08x where the directory records %08x", got, e.crc32);
    return DataCorrupt(entry + ": " + buf);
  }
  *data = d;
  *size = e.size;
  return Status::Ok();
}

}  // namespace wharf::io

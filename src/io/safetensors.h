/* SPDX-License-Identifier: Apache-2.0 */
// safetensors reader (mmap, zero-copy; or header only, for reading tensors with pread) and
// writer (atomic replace).
//
// Format (https://github.com/huggingface/safetensors): an 8-byte little-endian header length N,
// N bytes of UTF-8 JSON, then the data section. The JSON object maps each tensor name to
// {"dtype", "shape", "data_offsets": [begin, end]} with offsets relative to the data section;
// the optional "__metadata__" entry maps strings to strings.
//
// The reader follows the reference implementation (the `safetensors` crate's read_metadata and
// Metadata::validate) to the letter: header length at most 100,000,000 bytes; sorted by
// (begin, end), each tensor begins exactly where the previous one ends, the first at 0 and the
// last at the end of the file (no overlap, no hole, no trailing byte, a zero-size tensor only
// at a boundary); element count and bit size computed left to right without overflowing 64
// bits; a tensor's bit size a multiple of 8; its byte range exactly that size. Where Wharf is
// stricter or different, docs/decisions.md says so and why ("Safetensors to the letter").
//
// The reader trusts nothing in the file: every size is computed with checked arithmetic and
// every range is checked against the data section before a pointer is formed, so a tensor's
// [data, data + (end - begin)) is always inside the bytes given to parse()/open().
#pragma once

#include <cstddef>
#include <cstdint>
#include <memory>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "core/dtype.h"
#include "core/status.h"
#include "core/tensor.h"

namespace wharf::io {

class MappedFile;
class ReadOnlyFile;

// Largest header the reader accepts and the writer writes: the reference implementation's
// MAX_HEADER_SIZE (100,000,000 bytes, a decimal limit: a header of exactly that size is valid).
constexpr uint64_t kMaxSafetensorsHeaderBytes = 100'000'000;

struct SafetensorsTensor {
  std::string name;
  DType dtype = DType::kF32;
  std::vector<int64_t> shape;
  uint64_t begin = 0, end = 0;  // byte offsets inside the data section
  // The tensor's first byte, inside the mapping/buffer (null for open_for_reading: the tensor is
  // at file offset SafetensorsFile::data_offset() + begin). Not necessarily aligned to the dtype:
  // the format aligns nothing beyond (usually) 8 bytes for the data section's start, so read
  // with memcpy or copy out. For a zero-byte tensor it still points inside (or one past the end
  // of) the data section.
  const void* data = nullptr;
};

// A validated safetensors file. Immutable after open/parse; safe to read from many threads.
class SafetensorsFile {
 public:
  // mmaps `path` read-only (PROT_READ, MAP_PRIVATE), validates everything, and keeps the mapping
  // alive for the object's life. Missing file: kNotFound naming the path; not a regular file
  // (a FIFO, a device: refused without blocking) and other open/mmap failures: kIoError with
  // strerror; contents that break the format's rules: kDataCorrupt whose message names the path
  // and, where there is one, the tensor at fault. A file that is valid safetensors but holds
  // something Wharf cannot (a dtype name it does not know, more than kMaxDims dimensions, a
  // dimension past INT64_MAX, an empty tensor name, NUL in a name or in metadata) is
  // kUnsupported naming it, and only once every rule of the format has passed: a corrupt file
  // is always reported as corrupt. Names and paths in messages go through quote_name
  // (core/text.h), so a hostile name cannot put a newline or a terminal escape in a log.
  // Tensor names thus pass check_fqn (non-empty, no NUL, valid UTF-8); metadata keys and
  // values may be empty but are valid UTF-8 without NUL.
  static Status open(const std::string& path, std::unique_ptr<SafetensorsFile>* out);

  // The same rules and errors as open(), with no mapping: the file is opened (kept open for the
  // object's life, see file()) and only its header is read, with pread; tensors are read later
  // by whoever copies them (ReadOnlyFile::read_exact at data_offset() + begin), and have no
  // data pointer. A file that shrinks meanwhile is then a kIoError of that read, never SIGBUS.
  // The header (at most 100,000,000 bytes) is held in host memory while it is parsed.
  static Status open_for_reading(const std::string& path, std::unique_ptr<SafetensorsFile>* out);

  // The same validation over `size` bytes at `bytes`, which the caller keeps alive and unchanged
  // for the object's life (nothing is copied). Used by the fuzzer and tests.
  static Status parse(const void* bytes, size_t size, std::unique_ptr<SafetensorsFile>* out);

  ~SafetensorsFile();
  SafetensorsFile(const SafetensorsFile&) = delete;
  SafetensorsFile& operator=(const SafetensorsFile&) = delete;

  const std::vector<SafetensorsTensor>& tensors() const { return tensors_; }  // header order
  // "__metadata__" entries in header order (empty if the header has none).
  const std::vector<std::pair<std::string, std::string>>& metadata() const { return metadata_; }
  // The tensor named `name`, or nullptr. O(log n).
  const SafetensorsTensor* find(std::string_view name) const;

  uint64_t header_size() const { return header_size_; }      // N, the JSON length
  uint64_t data_size() const { return data_size_; }          // bytes after the header
  uint64_t data_offset() const { return 8 + header_size_; }  // where the data section begins
  // The open file of open_for_reading (null otherwise).
  const std::shared_ptr<const ReadOnlyFile>& file() const { return file_; }

 private:
  SafetensorsFile() = default;
  Status init(const uint8_t* bytes, size_t size);
  // init() past the 8-byte length: the `n` header bytes at `header`, for a file of `size` bytes
  // whose data section is at `data_section` (null: not in memory).
  Status init_header(const uint8_t* header, uint64_t n, uint64_t size, const uint8_t* data_section);

  std::unique_ptr<MappedFile> mapping_;       // open() only
  std::shared_ptr<const ReadOnlyFile> file_;  // open_for_reading() only
  std::vector<SafetensorsTensor> tensors_;
  std::vector<std::pair<std::string, std::string>> metadata_;
  // Indices into tensors_ sorted by name, for find(). A sorted vector rather than a hash map:
  // names come from the file, and binary search cannot be flooded with colliding keys.
  std::vector<size_t> by_name_;
  uint64_t header_size_ = 0;
  uint64_t data_size_ = 0;
};

// One tensor to write. meta.device_type must be kCpu and `data` host memory covering
// meta.extent_bytes(); a strided meta is gathered element by element into contiguous output.
struct TensorToWrite {
  std::string name;
  TensorMeta meta;
  const void* data = nullptr;
};

// Writes a safetensors file as the reference writer lays it out: tensors (header entries and
// data alike) sorted by dtype alignment, largest first, then by name, so every tensor is
// naturally aligned; "__metadata__" first if `metadata` is non-empty (in the given order);
// header padded with spaces so the data section starts 8-byte aligned. A header (padding
// included) over kMaxSafetensorsHeaderBytes is refused (kInvalidArgument), as the reference's.
// Writes `path + ".tmp.<pid>.<n>"`, fsyncs it and rename()s it over `path`, so readers see the
// old file or the new one, never a partial one; the temporary is removed on failure.
// kInvalidArgument naming the tensor for: an empty name, "__metadata__", a name or metadata that
// is not valid UTF-8 or contains NUL, a duplicate name or metadata key, a non-CPU or invalid
// meta, or null data with a nonzero size. kIoError naming the path and strerror for any file
// system failure, including a temporary name already taken by something that is not a regular
// file (never followed through a symbolic link, never blocking on a FIFO).
Status write_safetensors(const std::string& path, const std::vector<TensorToWrite>& tensors,
                         const std::vector<std::pair<std::string, std::string>>& metadata);

}  // namespace wharf::io

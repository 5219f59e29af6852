/* SPDX-License-Identifier: Apache-2.0 */
// ConstantMap: FQN -> borrowed tensor view, in insertion order. The caller's memory may be
// pageable host, pinned host or device memory; the map never copies or owns data, except a
// map loaded from safetensors, which keeps the file's mapping (every shard's, for a sharded
// checkpoint) alive. A map opened for reading (open_safetensors) holds file ranges instead of
// views: its tensors are read with pread when they are copied.
#pragma once

#include <memory>
#include <string>
#include <string_view>
#include <unordered_map>
#include <utility>
#include <vector>

#include "core/status.h"
#include "core/tensor.h"
#include "device/transfer.h"

namespace wharf {
namespace io {
class SafetensorsFile;
class ReadOnlyFile;
}  // namespace io

struct MapEntry {
  std::string fqn;
  TensorMeta meta;
  void* data = nullptr;
  // Or, in a map of open_safetensors, no data: the tensor is meta.nbytes() bytes at
  // `file_offset` of `file` (host bytes, read when copied).
  std::shared_ptr<const io::ReadOnlyFile> file;
  uint64_t file_offset = 0;

  // For validation: non-null when the entry has a source (its data, or its file). Only `data`
  // is an address; the file's is a token that says "there are bytes", never to be read.
  const void* source() const { return file ? static_cast<const void*>(file.get()) : data; }
};

// The copy of entry `e`'s bytes into `dst` (null: allocated by the copy, see TransferEngine):
// from its memory, or read from its file. The entry outlives the copy.
inline CopyRequest copy_request(const MapEntry& e, void* dst, uint64_t bytes, MemKind dst_kind = MemKind::kDevice) {
  CopyRequest r;
  r.dst = dst;
  r.src = e.file ? nullptr : e.data;
  r.bytes = bytes;
  r.dst_kind = dst_kind;
  r.file = e.file.get();
  r.file_offset = e.file_offset;
  r.name = e.fqn;
  return r;
}

class ConstantMap {
 public:
  // Validates and adds; on error the map is unchanged. The FQN must pass check_fqn (non-empty,
  // no NUL, valid UTF-8): kInvalidArgument otherwise; a name already present: kAlreadyExists.
  // Messages quote the name with quote_name (core/text.h).
  Status set(std::string fqn, TensorMeta meta, void* data);
  // Adds a copy of another map's entry: a view, or a file range of open_safetensors (the file
  // stays open while either map holds it). The rules and errors of set().
  Status add_entry(const MapEntry& e) { return add(e.fqn, e.meta, e.data, e.file, e.file_offset); }
  const MapEntry* find(std::string_view fqn) const;
  size_t size() const { return entries_.size(); }
  // Loaded from a file: its views point into a read-only mapping.
  bool mapped() const { return !files_.empty(); }
  const MapEntry& entry(size_t i) const { return entries_[i]; }
  const std::vector<std::pair<std::string, std::string>>& metadata() const { return metadata_; }
  // Sets metadata `key` to `value` ("__metadata__" when saved): a new key is appended, an
  // existing one keeps its place and takes the new value. Key and value may be empty but must
  // be valid UTF-8 without NUL (kInvalidArgument naming the key); on error nothing changes.
  Status set_metadata(std::string key, std::string value);

  // Opens a safetensors file without blocking (a FIFO or device is refused as kIoError, see
  // MappedFile) and keeps its mapping for the views' life; entries in file (header) order, the
  // file's "__metadata__" as the map's metadata. A path ending in ".json" is a sharded
  // checkpoint's index instead (load_safetensors_index).
  static Status load_safetensors(const std::string& path, std::unique_ptr<ConstantMap>* out);
  // One map of every tensor of a sharded checkpoint (io/safetensors_index.h): each shard
  // opened and validated whole, the index checked against them: every tensor it lists is in
  // the shard it names, and every tensor of a shard is listed, for that shard (kDataCorrupt
  // naming the tensor and the shards otherwise). Entries in the index's order; the index's
  // "metadata" as the map's. All or nothing: on error no mapping is kept.
  static Status load_safetensors_index(const std::string& path, std::unique_ptr<ConstantMap>* out);
  // The same files, rules and errors as load_safetensors (an index too), opened for reading
  // rather than mapped: only the headers (and the index) are read, with pread, and each entry
  // is a file range (MapEntry::file) that the transfer engine reads with pread when it copies
  // it. A file that shrinks later is then an IO_ERROR of that copy, never SIGBUS. What updates
  // from files use; the map is theirs alone (its entries have no data pointer to hand out).
  static Status open_safetensors(const std::string& path, std::unique_ptr<ConstantMap>* out);
  Status save_safetensors(const std::string& path) const;

 private:
  std::vector<MapEntry> entries_;
  std::unordered_map<std::string, size_t> index_;
  std::vector<std::pair<std::string, std::string>> metadata_;
  // How the files of load_safetensors* are opened: mapped (views) or for reading (ranges).
  static Status load_file(const std::string& path, bool mapped, std::unique_ptr<ConstantMap>* out);
  static Status load_index(const std::string& path, bool mapped, std::unique_ptr<ConstantMap>* out);
  Status add_tensor(const io::SafetensorsFile& file, const std::string& name, const std::string& where);
  // set(), for an entry of either kind.
  Status add(std::string fqn, TensorMeta meta, void* data, std::shared_ptr<const io::ReadOnlyFile> file,
             uint64_t file_offset);

  std::vector<std::shared_ptr<const io::SafetensorsFile>> files_;  // keep mapped views valid
};

}  // namespace wharf

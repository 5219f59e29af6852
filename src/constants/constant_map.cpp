// SPDX-License-Identifier: Apache-2.0
#include "constants/constant_map.h"

#include <map>

#include "core/text.h"
#include "io/read_only_file.h"
#include "io/safetensors.h"
#include "io/safetensors_index.h"

namespace wharf {

Status ConstantMap::set(std::string fqn, TensorMeta meta, void* data) {
  return add(std::move(fqn), std::move(meta), data, nullptr, 0);
}

Status ConstantMap::add(std::string fqn, TensorMeta meta, void* data, std::shared_ptr<const io::ReadOnlyFile> file,
                        uint64_t file_offset) {
  if (fqn.empty()) return InvalidArgument("constant map: empty FQN");
  WHARF_RETURN_IF_ERROR(check_fqn("constant", fqn));  // no NUL, valid UTF-8
  std::string what = "constant " + quote_name(fqn);
  WHARF_RETURN_IF_ERROR(meta.validate(what));
  if (!data && !file && meta.numel() > 0)
    return InvalidArgument(what + ": null data for shape " + shape_string(meta.shape));
  if (index_.count(fqn)) return AlreadyExists(what + " is already in the map");
  // Reserve first so that no allocation can fail between the two inserts.
  entries_.reserve(entries_.size() + 1);
  index_.emplace(fqn, entries_.size());
  entries_.push_back(MapEntry{std::move(fqn), std::move(meta), data, std::move(file), file_offset});
  return Status::Ok();
}

const MapEntry* ConstantMap::find(std::string_view fqn) const {
  auto it = index_.find(std::string(fqn));
  return it == index_.end() ? nullptr : &entries_[it->second];
}

Status ConstantMap::set_metadata(std::string key, std::string value) {
  const std::string what = "metadata key " + quote_name(key);
  // The reader's rules (the same as for names, without non-emptiness: the format allows "").
  if (key.find('\0') != std::string::npos) return InvalidArgument(what + " contains a NUL byte");
  if (value.find('\0') != std::string::npos) return InvalidArgument(what + ": value contains a NUL byte");
  if (!valid_utf8(key)) return InvalidArgument(what + " is not valid UTF-8");
  if (!valid_utf8(value)) return InvalidArgument(what + ": value is not valid UTF-8");
  for (auto& kv : metadata_)
    if (kv.first == key) {
      kv.second = std::move(value);
      return Status::Ok();
    }
  metadata_.emplace_back(std::move(key), std::move(value));
  return Status::Ok();
}

Status ConstantMap::load_safetensors(const std::string& path, std::unique_ptr<ConstantMap>* out) {
  if (io::is_safetensors_index_path(path)) return load_index(path, /*mapped=*/true, out);
  return load_file(path, /*mapped=*/true, out);
}

Status ConstantMap::load_safetensors_index(const std::string& path, std::unique_ptr<ConstantMap>* out) {
  return load_index(path, /*mapped=*/true, out);
}

Status ConstantMap::open_safetensors(const std::string& path, std::unique_ptr<ConstantMap>* out) {
  if (io::is_safetensors_index_path(path)) return load_index(path, /*mapped=*/false, out);
  return load_file(path, /*mapped=*/false, out);
}

namespace {

Status open_file(const std::string& path, bool mapped, std::unique_ptr<io::SafetensorsFile>* out) {
  return mapped ? io::SafetensorsFile::open(path, out) : io::SafetensorsFile::open_for_reading(path, out);
}

}  // namespace

// Adds tensor `name` of `file` (a view into its mapping, or a range of its open file).
Status ConstantMap::add_tensor(const io::SafetensorsFile& file, const std::string& name, const std::string& where) {
  const io::SafetensorsTensor* t = file.find(name);
  TensorMeta meta;
  meta.dtype = t->dtype;
  meta.shape = t->shape;
  meta.device_type = DeviceType::kCpu;
  if (!file.file()) {
    // The mapping is read-only; views hand out void* as every view does, and Wharf only
    // ever reads a map's data.
    return set(name, std::move(meta), const_cast<void*>(t->data)).with_context(where);
  }
  return add(name, std::move(meta), nullptr, file.file(), file.data_offset() + t->begin).with_context(where);
}

Status ConstantMap::load_file(const std::string& path, bool mapped, std::unique_ptr<ConstantMap>* out) {
  std::unique_ptr<io::SafetensorsFile> file;
  WHARF_RETURN_IF_ERROR(open_file(path, mapped, &file));
  auto map = std::make_unique<ConstantMap>();
  for (const io::SafetensorsTensor& t : file->tensors())
    WHARF_RETURN_IF_ERROR(map->add_tensor(*file, t.name, "loading " + quote_path(path)));
  map->metadata_ = file->metadata();
  if (mapped) map->files_.push_back(std::move(file));  // a file read later is held by its entries
  *out = std::move(map);
  return Status::Ok();
}

Status ConstantMap::load_index(const std::string& path, bool mapped, std::unique_ptr<ConstantMap>* out) {
  io::SafetensorsIndex index;
  WHARF_RETURN_IF_ERROR(io::read_safetensors_index(path, &index));
  const std::string where = "safetensors index " + quote_path(path);
  std::vector<std::unique_ptr<io::SafetensorsFile>> shards(index.shards.size());
  for (size_t i = 0; i < shards.size(); ++i) {
    Status st = open_file(io::shard_path(path, index.shards[i]), mapped, &shards[i]);
    if (!st.ok()) return st.with_context(where + ": shard " + quote_name(index.shards[i]));
  }
  // Every listed tensor is in the shard the index names...
  auto map = std::make_unique<ConstantMap>();
  map->entries_.reserve(index.weight_map.size());
  for (const auto& [name, s] : index.weight_map) {
    if (!shards[s]->find(name))
      return DataCorrupt(where + ": tensor " + quote_name(name) + " is listed in shard " + quote_name(index.shards[s]) +
                         ", which does not hold it");
    WHARF_RETURN_IF_ERROR(map->add_tensor(*shards[s], name, where));
  }
  // ... and every tensor of a shard is listed, for that shard: a tensor the index does not
  // list, or lists in another shard, would be data the index does not account for.
  std::map<std::string_view, size_t> listed;  // tensor -> shard (a tree: names come from files)
  for (const auto& [name, s] : index.weight_map) listed.emplace(name, s);
  for (size_t s = 0; s < shards.size(); ++s)
    for (const io::SafetensorsTensor& t : shards[s]->tensors()) {
      const auto it = listed.find(t.name);
      if (it == listed.end())
        return DataCorrupt(where + ": shard " + quote_name(index.shards[s]) + " holds tensor " + quote_name(t.name) +
                           ", which the index does not list");
      if (it->second != s)
        return DataCorrupt(where + ": shard " + quote_name(index.shards[s]) + " holds tensor " + quote_name(t.name) +
                           ", which the index lists in shard " + quote_name(index.shards[it->second]));
    }
  map->metadata_ = std::move(index.metadata);
  if (mapped)
    for (auto& f : shards) map->files_.push_back(std::move(f));
  *out = std::move(map);
  return Status::Ok();
}

Status ConstantMap::save_safetensors(const std::string& path) const {
  std::vector<io::TensorToWrite> tensors;
  tensors.reserve(entries_.size());
  for (const MapEntry& e : entries_) tensors.push_back(io::TensorToWrite{e.fqn, e.meta, e.data});
  return io::write_safetensors(path, tensors, metadata_);
}

}  // namespace wharf

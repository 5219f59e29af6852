// SPDX-License-Identifier: Apache-2.0
#include "constants/constant_map.h"

#include <map>

#include "core/text.h"
#include "io/safetensors.h"
#include "io/safetensors_index.h"

namespace wharf {

Status ConstantMap::set(std::string fqn, TensorMeta meta, void* data) {
  if (fqn.empty()) return InvalidArgument("constant map: empty FQN");
  WHARF_RETURN_IF_ERROR(check_fqn("constant", fqn));  // no NUL, valid UTF-8
  std::string what = "constant " + quote_name(fqn);
  WHARF_RETURN_IF_ERROR(meta.validate(what));
  if (!data && meta.numel() > 0)
    return InvalidArgument(what + ": null data for shape " + shape_string(meta.shape));
  if (index_.count(fqn)) return AlreadyExists(what + " is already in the map");
  // Reserve first so that no allocation can fail between the two inserts.
  entries_.reserve(entries_.size() + 1);
  index_.emplace(fqn, entries_.size());
  entries_.push_back(MapEntry{std::move(fqn), std::move(meta), data});
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
  if (io::is_safetensors_index_path(path)) return load_safetensors_index(path, out);
  std::unique_ptr<io::SafetensorsFile> file;
  WHARF_RETURN_IF_ERROR(io::SafetensorsFile::open(path, &file));
  auto map = std::make_unique<ConstantMap>();
  for (const io::SafetensorsTensor& t : file->tensors()) {
    TensorMeta meta;
    meta.dtype = t.dtype;
    meta.shape = t.shape;
    meta.device_type = DeviceType::kCpu;
    // The mapping is read-only; views hand out void* as every view does, and Wharf only
    // ever reads a map's data.
    WHARF_RETURN_IF_ERROR(map->set(t.name, std::move(meta), const_cast<void*>(t.data))
                              .with_context("loading " + quote_path(path)));
  }
  map->metadata_ = file->metadata();
  map->files_.push_back(std::move(file));
  *out = std::move(map);
  return Status::Ok();
}

Status ConstantMap::load_safetensors_index(const std::string& path, std::unique_ptr<ConstantMap>* out) {
  io::SafetensorsIndex index;
  WHARF_RETURN_IF_ERROR(io::read_safetensors_index(path, &index));
  const std::string where = "safetensors index " + quote_path(path);
  std::vector<std::unique_ptr<io::SafetensorsFile>> shards(index.shards.size());
  for (size_t i = 0; i < shards.size(); ++i) {
    Status st = io::SafetensorsFile::open(io::shard_path(path, index.shards[i]), &shards[i]);
    if (!st.ok()) return st.with_context(where + ": shard " + quote_name(index.shards[i]));
  }
  // Every listed tensor is in the shard the index names...
  auto map = std::make_unique<ConstantMap>();
  map->entries_.reserve(index.weight_map.size());
  for (const auto& [name, s] : index.weight_map) {
    const io::SafetensorsTensor* t = shards[s]->find(name);
    if (!t)
      return DataCorrupt(where + ": tensor " + quote_name(name) + " is listed in shard " + quote_name(index.shards[s]) +
                         ", which does not hold it");
    TensorMeta meta;
    meta.dtype = t->dtype;
    meta.shape = t->shape;
    meta.device_type = DeviceType::kCpu;
    WHARF_RETURN_IF_ERROR(map->set(name, std::move(meta), const_cast<void*>(t->data)).with_context(where));
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

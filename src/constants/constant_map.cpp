#include "constants/constant_map.h"

#include "core/text.h"
#include "io/safetensors.h"

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

Status ConstantMap::load_safetensors(const std::string& path, std::unique_ptr<ConstantMap>* out) {
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
  map->file_ = std::move(file);
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

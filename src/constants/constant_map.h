// ConstantMap: FQN -> borrowed tensor view, in insertion order. The caller's memory may be
// pageable host, pinned host or device memory; the map never copies or owns data, except a
// map loaded from safetensors, which keeps the file's mapping alive.
#pragma once

#include <memory>
#include <string>
#include <string_view>
#include <unordered_map>
#include <utility>
#include <vector>

#include "core/status.h"
#include "core/tensor.h"

namespace wharf {
namespace io { class SafetensorsFile; }

struct MapEntry {
  std::string fqn;
  TensorMeta meta;
  void* data = nullptr;
};

class ConstantMap {
 public:
  // Validates and adds; on error the map is unchanged. The FQN must pass check_fqn (non-empty,
  // no NUL, valid UTF-8): kInvalidArgument otherwise; a name already present: kAlreadyExists.
  // Messages quote the name with quote_name (core/text.h).
  Status set(std::string fqn, TensorMeta meta, void* data);
  const MapEntry* find(std::string_view fqn) const;
  size_t size() const { return entries_.size(); }
  const MapEntry& entry(size_t i) const { return entries_[i]; }
  const std::vector<std::pair<std::string, std::string>>& metadata() const { return metadata_; }

  // Opens `path` without blocking (a FIFO or device is refused as kIoError, see MappedFile) and
  // keeps its mapping for the views' life.
  static Status load_safetensors(const std::string& path, std::unique_ptr<ConstantMap>* out);
  Status save_safetensors(const std::string& path) const;

 private:
  std::vector<MapEntry> entries_;
  std::unordered_map<std::string, size_t> index_;
  std::vector<std::pair<std::string, std::string>> metadata_;
  std::shared_ptr<const io::SafetensorsFile> file_;  // keeps mapped views valid
};

}  // namespace wharf

/* SPDX-License-Identifier: Apache-2.0 */
// Sharded safetensors checkpoints: the Hugging Face index file ("model.safetensors.index.json")
//
//   {"metadata": {"total_size": 16060522496, ...},
//    "weight_map": {"model.embed_tokens.weight": "model-00001-of-00004.safetensors", ...}}
//
// names, for each tensor, the shard file (relative to the index's directory) that holds it.
// This reads and checks the index only; ConstantMap::load_safetensors opens the shards.
#pragma once

#include <cstdint>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "core/status.h"

namespace wharf::io {

// Largest index file read (the safetensors header limit: an index lists names only).
constexpr uint64_t kMaxSafetensorsIndexBytes = 100'000'000;

struct SafetensorsIndex {
  // "metadata" members in file order: strings as they are; numbers and booleans as their JSON
  // text ("total_size" -> "16060522496", true -> "true"); null, objects and arrays are left
  // out (the map's metadata is string -> string).
  std::vector<std::pair<std::string, std::string>> metadata;
  // The distinct shard names, in order of first appearance in "weight_map".
  std::vector<std::string> shards;
  // "weight_map" in file order: tensor name -> index into `shards`.
  std::vector<std::pair<std::string, size_t>> weight_map;
};

// Whether `path` names an index rather than a safetensors file: it ends in ".json" (the
// convention is "<name>.safetensors.index.json"). A safetensors file has no such name.
bool is_safetensors_index_path(std::string_view path);

// Reads and checks an index: a JSON object (other members than the two below are ignored) whose
// "weight_map" (required) maps tensor names to shard file names and whose "metadata", if
// present, is an object or null. A shard name must be a relative path that stays inside the
// index's directory: not empty, not absolute, no ".." component (kDataCorrupt naming the tensor
// and the name). Symbolic links are followed when the shards are opened (the Hugging Face cache
// is made of them); the check is on the names the index gives. Missing file: kNotFound; I/O:
// kIoError; bad JSON or structure: kDataCorrupt; names valid in JSON but not as FQNs (empty,
// NUL) and NUL in metadata: kUnsupported. Messages name the index path and the member at fault.
Status read_safetensors_index(const std::string& path, SafetensorsIndex* out);

// The same checks over the index's text (no file): used by the fuzzer and tests.
Status parse_safetensors_index(std::string_view text, SafetensorsIndex* out);

// The path of shard `name` of the index at `index_path`: its directory + "/" + name.
std::string shard_path(const std::string& index_path, const std::string& name);

}  // namespace wharf::io

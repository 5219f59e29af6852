// SPDX-License-Identifier: Apache-2.0
// Hugging Face sharded-checkpoint index: read with the strict pull parser (io/json.h).

#include "io/safetensors_index.h"

#include <exception>
#include <map>
#include <new>

#include "core/text.h"
#include "io/json.h"
#include "io/read_only_file.h"

namespace wharf::io {
namespace {

Status syntax(Status st) {
  if (st.ok() || st.code() != Code::kDataCorrupt) return st;
  return DataCorrupt("not valid JSON: " + st.message());
}

std::string kind_of(json::Cursor* c) {
  json::Kind k = json::Kind::kNull;
  (void)c->peek(&k);
  return json::kind_name(k);
}

// A shard name stays inside the index's directory: relative, no ".." component.
Status check_shard_name(const std::string& tensor, const std::string& shard) {
  const std::string what = "weight_map: tensor " + quote_name(tensor) + ": shard " + quote_name(shard);
  if (shard.empty()) return DataCorrupt(what + " is empty, expected a file name");
  if (shard.find('\0') != std::string::npos) return DataCorrupt(what + " contains a NUL byte");
  if (shard[0] == '/')
    return DataCorrupt(what + " is an absolute path; a shard must be a file in the index's directory");
  size_t start = 0;
  for (;;) {
    const size_t slash = shard.find('/', start);
    const std::string_view part(shard.data() + start, (slash == std::string::npos ? shard.size() : slash) - start);
    if (part == "..")
      return DataCorrupt(what + " has a '..' component; a shard must be a file in the index's directory");
    if (slash == std::string::npos) break;
    start = slash + 1;
  }
  if (shard.back() == '/') return DataCorrupt(what + " ends with '/', expected a file name");
  return Status::Ok();
}

Status read_metadata(json::Cursor* c, SafetensorsIndex* out, Status* unsupported) {
  json::Kind k;
  WHARF_RETURN_IF_ERROR(syntax(c->peek(&k)));
  if (k == json::Kind::kNull) return syntax(c->read_null());
  if (k != json::Kind::kObject)
    return DataCorrupt("\"metadata\" is a JSON " + std::string(json::kind_name(k)) + ", expected an object");
  WHARF_RETURN_IF_ERROR(syntax(c->begin_object()));
  std::string key;
  for (;;) {
    bool more;
    WHARF_RETURN_IF_ERROR(syntax(c->next_member(&more, &key)));
    if (!more) return Status::Ok();
    WHARF_RETURN_IF_ERROR(syntax(c->peek(&k)));
    std::string value;
    switch (k) {
      case json::Kind::kString:
        WHARF_RETURN_IF_ERROR(syntax(c->read_string(&value)));
        break;
      case json::Kind::kNumber: {
        json::Number n;
        WHARF_RETURN_IF_ERROR(syntax(c->read_number(&n)));
        value.assign(n.text.data(), n.text.size());
        break;
      }
      case json::Kind::kBool: {
        bool b;
        WHARF_RETURN_IF_ERROR(syntax(c->read_bool(&b)));
        value = b ? "true" : "false";
        break;
      }
      default:  // null, objects, arrays: not string -> string; left out
        WHARF_RETURN_IF_ERROR(syntax(c->skip_value()));
        continue;
    }
    if ((key.find('\0') != std::string::npos || value.find('\0') != std::string::npos) && unsupported->ok())
      *unsupported = Unsupported("\"metadata\" key " + quote_name(key) +
                                 ": a NUL byte, which cannot cross Wharf's C API (NUL-terminated strings)");
    out->metadata.emplace_back(std::move(key), std::move(value));
  }
}

Status read_weight_map(json::Cursor* c, SafetensorsIndex* out, Status* unsupported) {
  json::Kind k;
  WHARF_RETURN_IF_ERROR(syntax(c->peek(&k)));
  if (k != json::Kind::kObject)
    return DataCorrupt("\"weight_map\" is a JSON " + std::string(json::kind_name(k)) +
                       ", expected an object of tensor name -> shard file name");
  // Duplicate tensor names are refused by the parser when the object closes.
  WHARF_RETURN_IF_ERROR(syntax(c->begin_object()));
  std::string name, shard;
  std::map<std::string, size_t> shard_index;
  for (;;) {
    bool more;
    WHARF_RETURN_IF_ERROR(syntax(c->next_member(&more, &name)));
    if (!more) break;
    WHARF_RETURN_IF_ERROR(syntax(c->peek(&k)));
    if (k != json::Kind::kString)
      return DataCorrupt("weight_map: tensor " + quote_name(name) + " maps to a JSON " + kind_of(c) +
                         ", expected a shard file name");
    shard.clear();
    WHARF_RETURN_IF_ERROR(syntax(c->read_string(&shard)));
    if (unsupported->ok()) {
      if (name.empty())
        *unsupported = Unsupported("weight_map: a tensor with an empty name (an FQN is non-empty)");
      else if (Status st = check_fqn("tensor", name); !st.ok())
        *unsupported = Unsupported("weight_map: " + st.message());
    }
    WHARF_RETURN_IF_ERROR(check_shard_name(name, shard));
    // An ordered map, not a hash: names come from the file, and a tree cannot be flooded.
    const auto it = shard_index.emplace(shard, out->shards.size()).first;
    if (it->second == out->shards.size()) out->shards.push_back(shard);
    out->weight_map.emplace_back(name, it->second);
  }
  return Status::Ok();
}

Status parse_index(std::string_view text, SafetensorsIndex* out) {
  if (text.size() > kMaxSafetensorsIndexBytes)
    return DataCorrupt("the index is " + std::to_string(text.size()) + " bytes, more than the limit of " +
                       std::to_string(kMaxSafetensorsIndexBytes));
  json::Cursor c(text);
  json::Kind k;
  WHARF_RETURN_IF_ERROR(syntax(c.peek(&k)));
  if (k != json::Kind::kObject)
    return DataCorrupt("the index is a JSON " + std::string(json::kind_name(k)) + ", expected an object");
  WHARF_RETURN_IF_ERROR(syntax(c.begin_object()));
  bool have_weight_map = false;
  std::string key;
  Status unsupported = Status::Ok();
  for (;;) {
    bool more;
    WHARF_RETURN_IF_ERROR(syntax(c.next_member(&more, &key)));
    if (!more) break;
    // Duplicate top-level keys are refused by the parser when the object closes.
    if (key == "weight_map") {
      WHARF_RETURN_IF_ERROR(read_weight_map(&c, out, &unsupported));
      have_weight_map = true;
    } else if (key == "metadata") {
      WHARF_RETURN_IF_ERROR(read_metadata(&c, out, &unsupported));
    } else {
      WHARF_RETURN_IF_ERROR(syntax(c.skip_value()));
    }
  }
  WHARF_RETURN_IF_ERROR(syntax(c.finish()));
  if (!have_weight_map) return DataCorrupt("no \"weight_map\" member");
  return unsupported;
}

}  // namespace

bool is_safetensors_index_path(std::string_view path) {
  constexpr std::string_view kSuffix = ".json";
  return path.size() >= kSuffix.size() && path.substr(path.size() - kSuffix.size()) == kSuffix;
}

std::string shard_path(const std::string& index_path, const std::string& name) {
  const size_t slash = index_path.rfind('/');
  if (slash == std::string::npos) return name;
  return index_path.substr(0, slash + 1) + name;
}

Status parse_safetensors_index(std::string_view text, SafetensorsIndex* out) {
  *out = SafetensorsIndex();
  try {
    SafetensorsIndex idx;
    WHARF_RETURN_IF_ERROR(parse_index(text, &idx));
    *out = std::move(idx);
    return Status::Ok();
  } catch (const std::bad_alloc&) {
    return OutOfMemory("parsing a safetensors index of " + std::to_string(text.size()) + " bytes: out of host memory");
  } catch (const std::exception& e) {
    return Internal(std::string("parsing a safetensors index: ") + e.what());
  }
}

Status read_safetensors_index(const std::string& path, SafetensorsIndex* out) {
  *out = SafetensorsIndex();
  try {
    // Read with pread, not mapped: an index truncated while it is read is an error, not SIGBUS.
    std::shared_ptr<const ReadOnlyFile> file;
    WHARF_RETURN_IF_ERROR(ReadOnlyFile::open(path, &file));  // its messages name the path
    const std::string where = "safetensors index " + quote_path(path);
    if (file->size() > kMaxSafetensorsIndexBytes)  // parse_index's rule, before the allocation
      return DataCorrupt(where + ": the index is " + std::to_string(file->size()) + " bytes, more than the limit of " +
                         std::to_string(kMaxSafetensorsIndexBytes));
    std::string text(static_cast<size_t>(file->size()), '\0');
    WHARF_RETURN_IF_ERROR(file->read_exact(text.data(), text.size(), 0));
    SafetensorsIndex idx;
    Status st = parse_index(text, &idx);
    if (!st.ok()) return st.with_context(where);
    *out = std::move(idx);
    return Status::Ok();
  } catch (const std::bad_alloc&) {
    return OutOfMemory("reading safetensors index " + quote_path(path) + ": out of host memory");
  } catch (const std::exception& e) {
    return Internal("reading safetensors index " + quote_path(path) + ": " + e.what());
  }
}

}  // namespace wharf::io

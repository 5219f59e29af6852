// safetensors reader: every check is here, in init(); open() only adds the mapping.

#include <algorithm>
#include <exception>
#include <new>

#include "core/checked.h"
#include "io/json.h"
#include "io/mapped_file.h"
#include "io/safetensors.h"

namespace wharf::io {
namespace {

constexpr uint64_t kMaxInt64 = static_cast<uint64_t>(INT64_MAX);

std::string offsets_string(uint64_t begin, uint64_t end) {
  return "[" + std::to_string(begin) + ", " + std::to_string(end) + "]";
}

// Reads a non-negative integer no larger than `max`. Floats ("2.0", "2e0"), negative numbers
// (including "-0") and non-numbers are rejected: shapes and offsets are exact counts, and
// accepting "2.0" would only invite parsers to disagree.
Status read_count(const json::Value& v, const std::string& what, uint64_t max, uint64_t* out) {
  if (!v.is_number())
    return DataCorrupt(what + " is a JSON " + json::kind_name(v.kind()) +
                       ", expected a non-negative integer");
  if (!v.is_integer())
    return DataCorrupt(what + " is " + v.number_text() + ", expected an integer");
  if (v.is_negative())
    return DataCorrupt(what + " is " + v.number_text() + ", expected a non-negative integer");
  const std::optional<uint64_t> n = v.as_uint64();
  if (!n || *n > max)
    return DataCorrupt(what + " is " + v.number_text() + ", larger than " + std::to_string(max));
  *out = *n;
  return Status::Ok();
}

const json::Value* require(const json::Value& entry, const char* key, json::Kind kind,
                           const std::string& what, Status* st) {
  const json::Value* v = entry.find(key);
  if (v == nullptr) {
    *st = DataCorrupt(what + ": missing \"" + key + "\"");
    return nullptr;
  }
  if (v->kind() != kind) {
    *st = DataCorrupt(what + ": \"" + key + "\" is a JSON " + json::kind_name(v->kind()) +
                      ", expected " +
                      (kind == json::Kind::kArray || kind == json::Kind::kObject ? "an " : "a ") +
                      json::kind_name(kind));
    return nullptr;
  }
  return v;
}

// Validates one header entry against the data section's size. Extra keys in the entry are
// ignored, as the reference implementation does, so files from newer writers still load.
Status read_tensor(const std::string& name, const json::Value& entry, uint64_t data_size,
                   SafetensorsTensor* t) {
  if (name.empty()) return DataCorrupt("tensor with an empty name");
  const std::string what = "tensor " + json::quote_for_message(name);
  // Names cross the C ABI as NUL-terminated strings, where "a\0b" would read as "a".
  if (name.find('\0') != std::string::npos) return DataCorrupt(what + ": name contains a NUL character");
  if (!entry.is_object())
    return DataCorrupt(what + ": entry is a JSON " + json::kind_name(entry.kind()) + ", expected an object");

  Status st;
  const json::Value* dtype = require(entry, "dtype", json::Kind::kString, what, &st);
  if (dtype == nullptr) return st;
  const json::Value* shape = require(entry, "shape", json::Kind::kArray, what, &st);
  if (shape == nullptr) return st;
  const json::Value* offsets = require(entry, "data_offsets", json::Kind::kArray, what, &st);
  if (offsets == nullptr) return st;

  const std::optional<DType> dt = dtype_from_name(dtype->as_string());
  if (!dt) return DataCorrupt(what + ": unknown dtype " + json::quote_for_message(dtype->as_string()));

  const std::vector<json::Value>& dims = shape->as_array();
  if (dims.size() > static_cast<size_t>(kMaxDims))
    return DataCorrupt(what + ": shape has " + std::to_string(dims.size()) + " dimensions, at most " +
                       std::to_string(kMaxDims) + " supported");
  std::vector<int64_t> shp(dims.size());
  for (size_t i = 0; i < dims.size(); ++i) {
    uint64_t d;
    WHARF_RETURN_IF_ERROR(read_count(dims[i], what + ": shape[" + std::to_string(i) + "]", kMaxInt64, &d));
    shp[i] = static_cast<int64_t>(d);
  }

  const std::vector<json::Value>& offs = offsets->as_array();
  if (offs.size() != 2)
    return DataCorrupt(what + ": data_offsets has " + std::to_string(offs.size()) +
                       " elements, expected [begin, end]");
  uint64_t begin, end;
  WHARF_RETURN_IF_ERROR(read_count(offs[0], what + ": data_offsets[0]", UINT64_MAX, &begin));
  WHARF_RETURN_IF_ERROR(read_count(offs[1], what + ": data_offsets[1]", UINT64_MAX, &end));
  const std::string range = "data_offsets " + offsets_string(begin, end);
  if (begin > end) return DataCorrupt(what + ": " + range + " are reversed (begin > end)");
  if (end > data_size)
    return DataCorrupt(what + ": " + range + " run past the end of the data section (" +
                       std::to_string(data_size) + " bytes)");

  const std::string shape_desc = "shape " + shape_string(shp) + " of " + dtype_name(*dt);
  uint64_t numel = 1, nbytes;
  for (int64_t d : shp)
    if (!checked_mul(numel, static_cast<uint64_t>(d), &numel))
      return DataCorrupt(what + ": element count of " + shape_desc + " overflows 64 bits");
  if (!checked_mul(numel, dtype_size(*dt), &nbytes))
    return DataCorrupt(what + ": byte size of " + shape_desc + " overflows 64 bits");
  if (end - begin != nbytes)
    return DataCorrupt(what + ": " + range + " cover " + std::to_string(end - begin) + " bytes but " +
                       shape_desc + " needs " + std::to_string(nbytes));

  t->name = name;
  t->dtype = *dt;
  t->shape = std::move(shp);
  t->begin = begin;
  t->end = end;
  return Status::Ok();
}

Status read_metadata(const json::Value& v, std::vector<std::pair<std::string, std::string>>* out) {
  if (!v.is_object())
    return DataCorrupt("__metadata__ is a JSON " + std::string(json::kind_name(v.kind())) +
                       ", expected an object of strings");
  out->reserve(v.as_object().size());
  for (const json::Value::Member& m : v.as_object()) {
    if (!m.second.is_string())
      return DataCorrupt("__metadata__ key " + json::quote_for_message(m.first) + " has a JSON " +
                         json::kind_name(m.second.kind()) + " value, expected a string");
    out->emplace_back(m.first, m.second.as_string());
  }
  return Status::Ok();
}

// Non-empty ranges must be disjoint. Sorting by begin makes adjacent checks sufficient: if every
// range ends at or before the next one begins, ends are sorted too and no later range can reach
// back. Zero-byte tensors own no bytes, so they may sit anywhere (even inside another tensor).
Status check_overlaps(const std::vector<SafetensorsTensor>& tensors) {
  std::vector<size_t> order;
  order.reserve(tensors.size());
  for (size_t i = 0; i < tensors.size(); ++i)
    if (tensors[i].end > tensors[i].begin) order.push_back(i);
  std::sort(order.begin(), order.end(), [&](size_t a, size_t b) {
    return tensors[a].begin != tensors[b].begin ? tensors[a].begin < tensors[b].begin : a < b;
  });
  for (size_t k = 1; k < order.size(); ++k) {
    const SafetensorsTensor& prev = tensors[order[k - 1]];
    const SafetensorsTensor& cur = tensors[order[k]];
    if (prev.end > cur.begin)
      return DataCorrupt("tensor " + json::quote_for_message(prev.name) + ": data_offsets " +
                         offsets_string(prev.begin, prev.end) + " overlap tensor " +
                         json::quote_for_message(cur.name) + " data_offsets " +
                         offsets_string(cur.begin, cur.end));
  }
  return Status::Ok();
}

}  // namespace

SafetensorsFile::~SafetensorsFile() = default;

Status SafetensorsFile::init(const uint8_t* bytes, size_t size) {
  if (size < 8)
    return DataCorrupt("file is " + std::to_string(size) +
                       " bytes, too short for the 8-byte header length");
  uint64_t n = 0;
  for (int i = 0; i < 8; ++i) n |= static_cast<uint64_t>(bytes[i]) << (8 * i);  // little endian
  if (n > kMaxSafetensorsHeaderBytes)
    return DataCorrupt("header length " + std::to_string(n) + " exceeds the limit of " +
                       std::to_string(kMaxSafetensorsHeaderBytes) + " bytes");
  if (n > size - 8)
    return DataCorrupt("header length " + std::to_string(n) + " runs past the end of the file (" +
                       std::to_string(size) + " bytes)");
  header_size_ = n;
  data_size_ = size - 8 - n;

  // JSON whitespace around the object includes the spaces writers pad the header with.
  json::Value root;
  Status st = json::parse(std::string_view(reinterpret_cast<const char*>(bytes + 8), n), &root);
  if (!st.ok()) return DataCorrupt("header is not valid JSON: " + st.message());
  if (!root.is_object())
    return DataCorrupt("header is a JSON " + std::string(json::kind_name(root.kind())) +
                       ", expected an object");

  const uint8_t* data_section = bytes + 8 + n;
  tensors_.reserve(root.as_object().size());
  for (const json::Value::Member& m : root.as_object()) {
    if (m.first == "__metadata__") {
      WHARF_RETURN_IF_ERROR(read_metadata(m.second, &metadata_));
      continue;
    }
    SafetensorsTensor t;
    WHARF_RETURN_IF_ERROR(read_tensor(m.first, m.second, data_size_, &t));
    t.data = data_section + t.begin;  // begin <= end <= data_size_: inside, or one past the end
    tensors_.push_back(std::move(t));
  }
  WHARF_RETURN_IF_ERROR(check_overlaps(tensors_));

  index_.reserve(tensors_.size());
  for (size_t i = 0; i < tensors_.size(); ++i) index_.emplace(tensors_[i].name, i);
  return Status::Ok();
}

const SafetensorsTensor* SafetensorsFile::find(std::string_view name) const {
  auto it = index_.find(name);
  return it == index_.end() ? nullptr : &tensors_[it->second];
}

// Allocation failure is the one exception the code above can raise (a hostile header can ask
// for a large JSON tree); it becomes a Status here so nothing escapes.
Status SafetensorsFile::parse(const void* bytes, size_t size, std::unique_ptr<SafetensorsFile>* out) {
  out->reset();
  try {
    std::unique_ptr<SafetensorsFile> f(new SafetensorsFile());
    WHARF_RETURN_IF_ERROR(f->init(static_cast<const uint8_t*>(bytes), size));
    *out = std::move(f);
    return Status::Ok();
  } catch (const std::bad_alloc&) {
    return OutOfMemory("parsing a safetensors buffer of " + std::to_string(size) +
                       " bytes: out of host memory");
  } catch (const std::exception& e) {
    return Internal(std::string("parsing a safetensors buffer: ") + e.what());
  }
}

Status SafetensorsFile::open(const std::string& path, std::unique_ptr<SafetensorsFile>* out) {
  out->reset();
  try {
    std::unique_ptr<SafetensorsFile> f(new SafetensorsFile());
    WHARF_RETURN_IF_ERROR(MappedFile::open(path, &f->mapping_));
    Status st = f->init(f->mapping_->data(), f->mapping_->size());
    if (!st.ok()) return st.with_context("safetensors file '" + path + "'");
    *out = std::move(f);
    return Status::Ok();
  } catch (const std::bad_alloc&) {
    return OutOfMemory("reading safetensors file '" + path + "': out of host memory");
  } catch (const std::exception& e) {
    return Internal("reading safetensors file '" + path + "': " + e.what());
  }
}

}  // namespace wharf::io

// safetensors reader: every check is here, in init(); open() only adds the mapping.

#include <algorithm>
#include <exception>
#include <new>

#include "core/checked.h"
#include "core/text.h"
#include "io/json.h"
#include "io/mapped_file.h"
#include "io/safetensors.h"

namespace wharf::io {
namespace {

constexpr uint64_t kMaxInt64 = static_cast<uint64_t>(INT64_MAX);

std::string offsets_string(uint64_t begin, uint64_t end) {
  return "[" + std::to_string(begin) + ", " + std::to_string(end) + "]";
}

// Cursor errors are syntax errors in the header; the reader's own checks say what is wrong in
// safetensors terms. The prefix tells the two apart.
Status syntax(Status st) {
  if (st.ok() || st.code() != Code::kDataCorrupt) return st;
  return DataCorrupt("header is not valid JSON: " + st.message());
}

std::string a_kind(json::Kind k) {
  return std::string(k == json::Kind::kArray || k == json::Kind::kObject ? "an " : "a ") + json::kind_name(k);
}

// Names the value being read. Turned into text only on failure: the happy path of a
// million-tensor header must not format a million messages.
struct Field {
  const std::string& tensor;
  const char* name;  // "entry", "\"dtype\"", "shape", ...
  int index = -1;    // element index, or -1

  std::string str() const {
    std::string s = "tensor " + quote_name(tensor) + ": " + name;
    if (index >= 0) s += "[" + std::to_string(index) + "]";
    return s;
  }
};

Status corrupt(const std::string& tensor, const std::string& what) {
  return DataCorrupt("tensor " + quote_name(tensor) + ": " + what);
}

// Checks that the next value has kind `want`.
Status expect(json::Cursor* c, json::Kind want, const Field& f) {
  json::Kind k;
  WHARF_RETURN_IF_ERROR(syntax(c->peek(&k)));
  if (k != want) return DataCorrupt(f.str() + " is a JSON " + json::kind_name(k) + ", expected " + a_kind(want));
  return Status::Ok();
}

// Reads a non-negative integer no larger than `max`. Floats ("2.0", "2e0"), negative numbers
// (including "-0") and non-numbers are rejected: shapes and offsets are exact counts, and
// accepting "2.0" would only invite parsers to disagree.
Status read_count(json::Cursor* c, const Field& f, uint64_t max, uint64_t* out) {
  json::Kind k;
  WHARF_RETURN_IF_ERROR(syntax(c->peek(&k)));
  if (k != json::Kind::kNumber)
    return DataCorrupt(f.str() + " is a JSON " + json::kind_name(k) + ", expected a non-negative integer");
  json::Number n;
  WHARF_RETURN_IF_ERROR(syntax(c->read_number(&n)));
  const std::optional<uint64_t> v = n.as_uint64();
  if (v && *v <= max) {
    *out = *v;
    return Status::Ok();
  }
  // Echo at most 40 characters: a hostile header can hold a number millions of digits long.
  const std::string text = n.text.size() <= 40 ? std::string(n.text) : std::string(n.text.substr(0, 40)) + "...";
  if (!n.integer) return DataCorrupt(f.str() + " is " + text + ", expected an integer");
  if (n.negative) return DataCorrupt(f.str() + " is " + text + ", expected a non-negative integer");
  return DataCorrupt(f.str() + " is " + text + ", larger than " + std::to_string(max));
}

// Reads one header entry (the cursor is at its value) and validates it against the data
// section's size. Keys other than the three below are checked as JSON and otherwise ignored,
// as the reference implementation does, so files from newer writers still load.
Status read_tensor(json::Cursor* c, const std::string& name, uint64_t data_size, SafetensorsTensor* t) {
  if (name.empty()) return DataCorrupt("tensor with an empty name");
  // Names cross the C ABI as NUL-terminated strings, where "a\0b" would read as "a"; and the
  // header promises UTF-8 (which the JSON layer already enforces: this is the same rule every
  // entry point applies, kept here so the reader never depends on the parser for it).
  if (Status st = check_fqn("tensor", name); !st.ok()) return DataCorrupt(st.message());
  WHARF_RETURN_IF_ERROR(expect(c, json::Kind::kObject, {name, "entry"}));
  WHARF_RETURN_IF_ERROR(syntax(c->begin_object()));

  bool have_dtype = false, have_shape = false, have_offsets = false;
  DType dt = DType::kF32;
  std::vector<int64_t> shp;
  uint64_t offs[2] = {0, 0};
  std::string key, s;
  for (;;) {
    bool more;
    WHARF_RETURN_IF_ERROR(syntax(c->next_member(&more, &key)));
    if (!more) break;
    if (key == "dtype") {
      WHARF_RETURN_IF_ERROR(expect(c, json::Kind::kString, {name, "\"dtype\""}));
      s.clear();
      WHARF_RETURN_IF_ERROR(syntax(c->read_string(&s)));
      const std::optional<DType> d = dtype_from_name(s);
      if (!d) return corrupt(name, "unknown dtype " + quote_name(s));
      dt = *d;
      have_dtype = true;
    } else if (key == "shape") {
      WHARF_RETURN_IF_ERROR(expect(c, json::Kind::kArray, {name, "\"shape\""}));
      WHARF_RETURN_IF_ERROR(syntax(c->begin_array()));
      // Elements are read one at a time, so a hostile million-element shape costs nothing.
      for (int i = 0;; ++i) {
        WHARF_RETURN_IF_ERROR(syntax(c->next_element(&more)));
        if (!more) break;
        if (i == kMaxDims)
          return corrupt(name, "shape has more than " + std::to_string(kMaxDims) + " dimensions, at most " +
                                   std::to_string(kMaxDims) + " supported");
        uint64_t d;
        WHARF_RETURN_IF_ERROR(read_count(c, {name, "shape", i}, kMaxInt64, &d));
        shp.push_back(static_cast<int64_t>(d));
      }
      have_shape = true;
    } else if (key == "data_offsets") {
      WHARF_RETURN_IF_ERROR(expect(c, json::Kind::kArray, {name, "\"data_offsets\""}));
      WHARF_RETURN_IF_ERROR(syntax(c->begin_array()));
      int i = 0;
      for (;; ++i) {
        WHARF_RETURN_IF_ERROR(syntax(c->next_element(&more)));
        if (!more) break;
        if (i == 2) return corrupt(name, "data_offsets has more than 2 elements, expected [begin, end]");
        WHARF_RETURN_IF_ERROR(read_count(c, {name, "data_offsets", i}, UINT64_MAX, &offs[i]));
      }
      if (i != 2) return corrupt(name, "data_offsets has " + std::to_string(i) + " elements, expected [begin, end]");
      have_offsets = true;
    } else {
      WHARF_RETURN_IF_ERROR(syntax(c->skip_value()));
    }
  }
  if (!have_dtype) return corrupt(name, "missing \"dtype\"");
  if (!have_shape) return corrupt(name, "missing \"shape\"");
  if (!have_offsets) return corrupt(name, "missing \"data_offsets\"");

  const uint64_t begin = offs[0], end = offs[1];
  const auto range = [&] { return "data_offsets " + offsets_string(begin, end); };
  if (begin > end) return corrupt(name, range() + " are reversed (begin > end)");
  if (end > data_size)
    return corrupt(name, range() + " run past the end of the data section (" + std::to_string(data_size) + " bytes)");

  const auto shape_desc = [&] { return "shape " + shape_string(shp) + " of " + dtype_name(dt); };
  // A zero dimension makes the count exactly 0 wherever it stands (no spurious overflow for
  // [2^62, 2^62, 0]); otherwise the product must fit.
  uint64_t numel = std::find(shp.begin(), shp.end(), 0) != shp.end() ? 0 : 1, nbytes;
  for (size_t i = 0; numel != 0 && i < shp.size(); ++i)
    if (!checked_mul(numel, static_cast<uint64_t>(shp[i]), &numel))
      return corrupt(name, "element count of " + shape_desc() + " overflows 64 bits");
  if (!checked_mul(numel, dtype_size(dt), &nbytes))
    return corrupt(name, "byte size of " + shape_desc() + " overflows 64 bits");
  if (end - begin != nbytes)
    return corrupt(name, range() + " cover " + std::to_string(end - begin) + " bytes but " + shape_desc() +
                             " needs " + std::to_string(nbytes));

  t->name = name;
  t->dtype = dt;
  t->shape = std::move(shp);
  t->begin = begin;
  t->end = end;
  return Status::Ok();
}

Status read_metadata(json::Cursor* c, std::vector<std::pair<std::string, std::string>>* out) {
  json::Kind k;
  WHARF_RETURN_IF_ERROR(syntax(c->peek(&k)));
  if (k != json::Kind::kObject)
    return DataCorrupt("__metadata__ is a JSON " + std::string(json::kind_name(k)) +
                       ", expected an object of strings");
  WHARF_RETURN_IF_ERROR(syntax(c->begin_object()));
  for (;;) {
    bool more;
    std::string key, value;
    WHARF_RETURN_IF_ERROR(syntax(c->next_member(&more, &key)));
    if (!more) return Status::Ok();
    WHARF_RETURN_IF_ERROR(syntax(c->peek(&k)));
    if (k != json::Kind::kString)
      return DataCorrupt("__metadata__ key " + quote_name(key) + " has a JSON " +
                         json::kind_name(k) + " value, expected a string");
    WHARF_RETURN_IF_ERROR(syntax(c->read_string(&value)));
    // Metadata crosses the C ABI as NUL-terminated strings too: "a\0b" would read as "a".
    // Empty keys and values are allowed (the format does not forbid them).
    if (key.find('\0') != std::string::npos)
      return DataCorrupt("__metadata__ key " + quote_name(key) + " contains a NUL byte");
    if (value.find('\0') != std::string::npos)
      return DataCorrupt("__metadata__ key " + quote_name(key) + ": value contains a NUL byte");
    if (!valid_utf8(key)) return DataCorrupt("__metadata__ key " + quote_name(key) + " is not valid UTF-8");
    if (!valid_utf8(value))
      return DataCorrupt("__metadata__ key " + quote_name(key) + ": value is not valid UTF-8");
    out->emplace_back(std::move(key), std::move(value));
  }
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
      return DataCorrupt("tensor " + quote_name(prev.name) + ": data_offsets " +
                         offsets_string(prev.begin, prev.end) + " overlap tensor " +
                         quote_name(cur.name) + " data_offsets " +
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

  // The header is walked with a pull parser rather than built into a tree: memory then follows
  // what is kept (names, shapes), not the header's size, whatever a hostile header contains.
  // JSON whitespace around the object includes the spaces writers pad the header with.
  json::Cursor c(std::string_view(reinterpret_cast<const char*>(bytes + 8), n));
  json::Kind k;
  WHARF_RETURN_IF_ERROR(syntax(c.peek(&k)));
  if (k != json::Kind::kObject)
    return DataCorrupt("header is a JSON " + std::string(json::kind_name(k)) + ", expected an object");
  // Duplicate tensor names are found below, on the index that find() needs anyway.
  WHARF_RETURN_IF_ERROR(syntax(c.begin_object(/*check_duplicate_keys=*/false)));

  const uint8_t* data_section = bytes + 8 + n;
  std::string key;
  bool have_metadata = false;
  for (;;) {
    bool more;
    WHARF_RETURN_IF_ERROR(syntax(c.next_member(&more, &key)));
    if (!more) break;
    if (key == "__metadata__") {
      if (have_metadata) return DataCorrupt("header has two \"__metadata__\" entries");
      have_metadata = true;
      WHARF_RETURN_IF_ERROR(read_metadata(&c, &metadata_));
      continue;
    }
    SafetensorsTensor t;
    WHARF_RETURN_IF_ERROR(read_tensor(&c, key, data_size_, &t));
    t.data = data_section + t.begin;  // begin <= end <= data_size_: inside, or one past the end
    tensors_.push_back(std::move(t));
  }
  WHARF_RETURN_IF_ERROR(syntax(c.finish()));

  by_name_.resize(tensors_.size());
  for (size_t i = 0; i < by_name_.size(); ++i) by_name_[i] = i;
  std::sort(by_name_.begin(), by_name_.end(),
            [&](size_t a, size_t b) { return tensors_[a].name < tensors_[b].name; });
  for (size_t i = 1; i < by_name_.size(); ++i)
    if (tensors_[by_name_[i]].name == tensors_[by_name_[i - 1]].name)
      return corrupt(tensors_[by_name_[i]].name, "appears twice in the header");

  return check_overlaps(tensors_);
}

const SafetensorsTensor* SafetensorsFile::find(std::string_view name) const {
  auto it = std::lower_bound(by_name_.begin(), by_name_.end(), name,
                             [&](size_t i, std::string_view n) { return tensors_[i].name < n; });
  if (it == by_name_.end() || tensors_[*it].name != name) return nullptr;
  return &tensors_[*it];
}

// Allocation failure is the one exception the code above can raise (the names, shapes and
// metadata of a header of up to 100 MiB are kept); it becomes a Status so nothing escapes.
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
    if (!st.ok()) return st.with_context("safetensors file " + quote_path(path));
    *out = std::move(f);
    return Status::Ok();
  } catch (const std::bad_alloc&) {
    return OutOfMemory("reading safetensors file " + quote_path(path) + ": out of host memory");
  } catch (const std::exception& e) {
    return Internal("reading safetensors file " + quote_path(path) + ": " + e.what());
  }
}

}  // namespace wharf::io

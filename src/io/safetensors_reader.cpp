// SPDX-License-Identifier: Apache-2.0
// safetensors reader: every check is here, in init(); open() only adds the mapping.

#include <algorithm>
#include <optional>
#include <exception>
#include <new>

#include "core/checked.h"
#include "core/text.h"
#include "io/json.h"
#include "io/mapped_file.h"
#include "io/read_only_file.h"
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

// What one header entry says, as read; checked against the reference's rules by check_entry.
struct Entry {
  std::optional<DType> dtype;    // empty: a dtype name this library does not know
  uint64_t dims[kMaxDims] = {};  // the first kMaxDims dimensions
  size_t rank = 0;               // the number of dimensions (may exceed kMaxDims)
  bool numel_overflows = false;  // the running product of the dimensions left 64 bits
  uint64_t numel = 1;            // valid unless numel_overflows
  uint64_t offs[2] = {0, 0};
};

std::string entry_shape(const Entry& e) {
  std::string s = "[";
  for (size_t i = 0; i < e.rank && i < static_cast<size_t>(kMaxDims); ++i) {
    if (i) s += ", ";
    s += std::to_string(e.dims[i]);
  }
  if (e.rank > static_cast<size_t>(kMaxDims)) s += ", ... (" + std::to_string(e.rank) + " dimensions)";
  return s + "]";
}

// Reads one header entry (the cursor is at its value). Keys other than the three below are
// checked as JSON and otherwise ignored, as the reference implementation does, so files from
// newer writers still load. What the reference would accept but Wharf cannot hold (an unknown
// dtype name, more than kMaxDims dimensions, a dimension past INT64_MAX, a name that is empty or
// holds NUL) is not an error here: the first such reason goes to *unsupported, reported only
// if the file passes every rule of the format (a corrupt file is reported as corrupt).
Status read_entry(json::Cursor* c, const std::string& name, Entry* e, Status* unsupported) {
  const auto defer = [&](const std::string& why) {
    if (unsupported->ok()) *unsupported = Unsupported(why);
  };
  // Names cross the C ABI as NUL-terminated strings, where "a\0b" would read as "a", and an
  // empty name is no FQN. (UTF-8 is the JSON layer's rule already; check_fqn repeats it so the
  // reader never depends on the parser for it.)
  if (name.empty()) {
    defer("tensor with an empty name: a valid safetensors name, but not one Wharf can hold (an FQN is non-empty)");
  } else if (Status st = check_fqn("tensor", name); !st.ok()) {
    if (!valid_utf8(name)) return DataCorrupt(st.message());
    defer(st.message() + ": valid in safetensors, but names cross Wharf's C API as NUL-terminated strings");
  }
  WHARF_RETURN_IF_ERROR(expect(c, json::Kind::kObject, {name, "entry"}));
  WHARF_RETURN_IF_ERROR(syntax(c->begin_object()));

  bool have_dtype = false, have_shape = false, have_offsets = false;
  std::string key, s;
  for (;;) {
    bool more;
    WHARF_RETURN_IF_ERROR(syntax(c->next_member(&more, &key)));
    if (!more) break;
    if (key == "dtype") {
      WHARF_RETURN_IF_ERROR(expect(c, json::Kind::kString, {name, "\"dtype\""}));
      s.clear();
      WHARF_RETURN_IF_ERROR(syntax(c->read_string(&s)));
      e->dtype = dtype_from_name(s);
      if (!e->dtype)
        defer("tensor " + quote_name(name) + ": unknown dtype " + quote_name(s) + " (not one of the " +
              std::to_string(kNumDTypes) + " safetensors dtypes this version of Wharf knows)");
      have_dtype = true;
    } else if (key == "shape") {
      WHARF_RETURN_IF_ERROR(expect(c, json::Kind::kArray, {name, "\"shape\""}));
      WHARF_RETURN_IF_ERROR(syntax(c->begin_array()));
      // Elements are read one at a time and only the first kMaxDims kept, so a hostile
      // million-element shape costs no memory.
      for (int i = 0;; ++i) {
        WHARF_RETURN_IF_ERROR(syntax(c->next_element(&more)));
        if (!more) break;
        uint64_t d;
        WHARF_RETURN_IF_ERROR(read_count(c, {name, "shape", i}, UINT64_MAX, &d));
        // The reference folds the product left to right and fails at the first overflow, even
        // if a later dimension is 0 ([2^32, 2^32, 0] is refused, [0, 2^32, 2^32] is not).
        if (!e->numel_overflows && !checked_mul(e->numel, d, &e->numel)) e->numel_overflows = true;
        if (e->rank < static_cast<size_t>(kMaxDims)) e->dims[e->rank] = d;
        ++e->rank;
        if (e->rank == static_cast<size_t>(kMaxDims) + 1)
          defer("tensor " + quote_name(name) + ": shape has more than " + std::to_string(kMaxDims) +
                " dimensions, at most " + std::to_string(kMaxDims) + " supported");
        if (d > kMaxInt64)
          defer("tensor " + quote_name(name) + ": shape[" + std::to_string(i) + "] is " + std::to_string(d) +
                ", larger than " + std::to_string(kMaxInt64) + ", the largest dimension Wharf supports");
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
        WHARF_RETURN_IF_ERROR(read_count(c, {name, "data_offsets", i}, UINT64_MAX, &e->offs[i]));
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
  return Status::Ok();
}

// The reference's per-tensor rules: ordered offsets inside the data section, a shape whose
// element count and bit size fit in 64 bits, a bit size that is a multiple of 8 (sub-byte
// dtypes), and exactly that many bytes between the offsets. A tensor of an unknown dtype is
// checked as far as its dtype is not needed.
Status check_entry(const std::string& name, const Entry& e, uint64_t data_size) {
  const uint64_t begin = e.offs[0], end = e.offs[1];
  const auto range = [&] { return "data_offsets " + offsets_string(begin, end); };
  if (begin > end) return corrupt(name, range() + " are reversed (begin > end)");
  if (end > data_size)
    return corrupt(name, range() + " run past the end of the data section (" + std::to_string(data_size) + " bytes)");
  const auto shape_desc = [&] {
    return "shape " + entry_shape(e) + (e.dtype ? std::string(" of ") + dtype_name(*e.dtype) : std::string());
  };
  if (e.numel_overflows) return corrupt(name, "element count of " + shape_desc() + " overflows 64 bits");
  if (!e.dtype) return Status::Ok();
  uint64_t nbits;
  if (!checked_mul(e.numel, dtype_bits(*e.dtype), &nbits))
    return corrupt(name, "bit size of " + shape_desc() + " overflows 64 bits");
  if (nbits % 8 != 0)
    return corrupt(name, shape_desc() + " is " + std::to_string(nbits) + " bits, not a whole number of bytes (a " +
                             std::to_string(dtype_bits(*e.dtype)) +
                             "-bit dtype needs an element count that makes "
                             "a multiple of 8 bits)");
  if (end - begin != nbits / 8)
    return corrupt(name, range() + " cover " + std::to_string(end - begin) + " bytes but " + shape_desc() + " needs " +
                             std::to_string(nbits / 8));
  return Status::Ok();
}

// "__metadata__": an object of strings, or null (the reference reads it as an optional map, so
// null means no metadata). NUL in a key or value is valid there but cannot cross the C API:
// deferred to *unsupported like the names.
Status read_metadata(json::Cursor* c, std::vector<std::pair<std::string, std::string>>* out, Status* unsupported) {
  json::Kind k;
  WHARF_RETURN_IF_ERROR(syntax(c->peek(&k)));
  if (k == json::Kind::kNull) return syntax(c->read_null());
  if (k != json::Kind::kObject)
    return DataCorrupt("__metadata__ is a JSON " + std::string(json::kind_name(k)) + ", expected an object of strings");
  WHARF_RETURN_IF_ERROR(syntax(c->begin_object()));
  for (;;) {
    bool more;
    std::string key, value;
    WHARF_RETURN_IF_ERROR(syntax(c->next_member(&more, &key)));
    if (!more) return Status::Ok();
    WHARF_RETURN_IF_ERROR(syntax(c->peek(&k)));
    if (k != json::Kind::kString)
      return DataCorrupt("__metadata__ key " + quote_name(key) + " has a JSON " + json::kind_name(k) +
                         " value, expected a string");
    WHARF_RETURN_IF_ERROR(syntax(c->read_string(&value)));
    // Metadata crosses the C ABI as NUL-terminated strings too: "a\0b" would read as "a".
    // Empty keys and values are allowed (the format does not forbid them).
    if (!valid_utf8(key)) return DataCorrupt("__metadata__ key " + quote_name(key) + " is not valid UTF-8");
    if (!valid_utf8(value)) return DataCorrupt("__metadata__ key " + quote_name(key) + ": value is not valid UTF-8");
    const bool nul_key = key.find('\0') != std::string::npos, nul_value = value.find('\0') != std::string::npos;
    if ((nul_key || nul_value) && unsupported->ok())
      *unsupported = Unsupported("__metadata__ key " + quote_name(key) + (nul_key ? " contains" : ": value contains") +
                                 " a NUL byte: valid in safetensors, but metadata crosses Wharf's C API as "
                                 "NUL-terminated strings");
    out->emplace_back(std::move(key), std::move(value));
  }
}

// The reference's rule for the data section: sorted by (begin, end), each tensor begins exactly
// where the previous one ended, the first at 0, and the last ends at the end of the data
// section. So no two tensors overlap, no byte belongs to no tensor (no hole, no trailing bytes:
// nothing can hide in a file, no polyglot), and a zero-size tensor sits only at a boundary
// between tensors, never strictly inside one.
Status check_coverage(const std::vector<SafetensorsTensor>& tensors, uint64_t data_size) {
  std::vector<size_t> order(tensors.size());
  for (size_t i = 0; i < order.size(); ++i) order[i] = i;
  std::sort(order.begin(), order.end(), [&](size_t a, size_t b) {
    const SafetensorsTensor &x = tensors[a], &y = tensors[b];
    if (x.begin != y.begin) return x.begin < y.begin;
    if (x.end != y.end) return x.end < y.end;
    return a < b;
  });
  uint64_t expected = 0;                    // where the next tensor must begin
  const SafetensorsTensor* last = nullptr;  // the tensor that ends at `expected`
  for (size_t i : order) {
    const SafetensorsTensor& t = tensors[i];
    const std::string range = "data_offsets " + offsets_string(t.begin, t.end);
    if (t.begin > expected) {
      if (!last)
        return corrupt(t.name, range + ": the first tensor must begin at offset 0 of the data section; bytes [0, " +
                                   std::to_string(t.begin) + ") belong to no tensor");
      return corrupt(t.name, range + " leave a hole after tensor " + quote_name(last->name) + " data_offsets " +
                                 offsets_string(last->begin, last->end) + ": bytes [" + std::to_string(expected) +
                                 ", " + std::to_string(t.begin) + ") belong to no tensor");
    }
    if (t.begin < expected) {
      if (t.begin == t.end)
        return corrupt(last->name, "data_offsets " + offsets_string(last->begin, last->end) +
                                       " contain zero-size tensor " + quote_name(t.name) + " data_offsets " +
                                       offsets_string(t.begin, t.end) +
                                       " (a tensor may begin only where the previous one ends)");
      return DataCorrupt("tensor " + quote_name(last->name) + ": data_offsets " +
                         offsets_string(last->begin, last->end) + " overlap tensor " + quote_name(t.name) + " " +
                         range);
    }
    expected = t.end;
    last = &t;
  }
  if (expected != data_size) {
    if (!last)
      return DataCorrupt("the header declares no tensor but the data section has " + std::to_string(data_size) +
                         " bytes: bytes [0, " + std::to_string(data_size) + ") belong to no tensor");
    return corrupt(last->name, "data_offsets " + offsets_string(last->begin, last->end) + " end the last tensor at " +
                                   std::to_string(expected) + " but the data section has " + std::to_string(data_size) +
                                   " bytes: bytes [" + std::to_string(expected) + ", " + std::to_string(data_size) +
                                   ") belong to no tensor");
  }
  return Status::Ok();
}

// The first 8 bytes (`first8`, which holds them when size >= 8) give the header length N; it
// must fit the limit and the file.
Status header_length(const uint8_t* first8, uint64_t size, uint64_t* n_out) {
  if (size < 8)
    return DataCorrupt("file is " + std::to_string(size) + " bytes, too short for the 8-byte header length");
  uint64_t n = 0;
  for (int i = 0; i < 8; ++i) n |= static_cast<uint64_t>(first8[i]) << (8 * i);  // little endian
  if (n > kMaxSafetensorsHeaderBytes)
    return DataCorrupt("header length " + std::to_string(n) + " exceeds the limit of " +
                       std::to_string(kMaxSafetensorsHeaderBytes) + " bytes");
  if (n > size - 8)
    return DataCorrupt("header length " + std::to_string(n) + " runs past the end of the file (" +
                       std::to_string(size) + " bytes)");
  *n_out = n;
  return Status::Ok();
}

}  // namespace

SafetensorsFile::~SafetensorsFile() = default;

Status SafetensorsFile::init(const uint8_t* bytes, size_t size) {
  uint64_t n = 0;
  WHARF_RETURN_IF_ERROR(header_length(bytes, size, &n));
  return init_header(bytes + 8, n, size, bytes + 8 + n);
}

Status SafetensorsFile::init_header(const uint8_t* header, uint64_t n, uint64_t size, const uint8_t* data_section) {
  header_size_ = n;
  data_size_ = size - 8 - n;

  // The header is walked with a pull parser rather than built into a tree: memory then follows
  // what is kept (names, shapes), not the header's size, whatever a hostile header contains.
  // JSON whitespace around the object includes the spaces writers pad the header with.
  json::Cursor c(std::string_view(reinterpret_cast<const char*>(header), n));
  json::Kind k;
  WHARF_RETURN_IF_ERROR(syntax(c.peek(&k)));
  if (k != json::Kind::kObject)
    return DataCorrupt("header is a JSON " + std::string(json::kind_name(k)) + ", expected an object");
  // Duplicate tensor names are found below, on the index that find() needs anyway.
  WHARF_RETURN_IF_ERROR(syntax(c.begin_object(/*check_duplicate_keys=*/false)));

  std::string key;
  bool have_metadata = false;
  // The first thing that is valid safetensors but that Wharf cannot hold; reported only once
  // the whole file has passed the format's rules.
  Status unsupported = Status::Ok();
  for (;;) {
    bool more;
    WHARF_RETURN_IF_ERROR(syntax(c.next_member(&more, &key)));
    if (!more) break;
    if (key == "__metadata__") {
      if (have_metadata) return DataCorrupt("header has two \"__metadata__\" entries");
      have_metadata = true;
      WHARF_RETURN_IF_ERROR(read_metadata(&c, &metadata_, &unsupported));
      continue;
    }
    Entry e;
    WHARF_RETURN_IF_ERROR(read_entry(&c, key, &e, &unsupported));
    WHARF_RETURN_IF_ERROR(check_entry(key, e, data_size_));
    SafetensorsTensor t;
    t.name = key;
    t.dtype = e.dtype.value_or(DType::kU8);  // only kept when every dtype is known
    t.shape.reserve(std::min(e.rank, static_cast<size_t>(kMaxDims)));
    for (size_t i = 0; i < e.rank && i < static_cast<size_t>(kMaxDims); ++i)
      t.shape.push_back(static_cast<int64_t>(std::min(e.dims[i], kMaxInt64)));  // kept only if all fit
    t.begin = e.offs[0];
    t.end = e.offs[1];
    // begin <= end <= data_size_: inside, or one past the end. No data section in memory (a file
    // read with pread): no pointer, the offset says where.
    t.data = data_section ? data_section + t.begin : nullptr;
    tensors_.push_back(std::move(t));
  }
  WHARF_RETURN_IF_ERROR(syntax(c.finish()));

  by_name_.resize(tensors_.size());
  for (size_t i = 0; i < by_name_.size(); ++i) by_name_[i] = i;
  std::sort(by_name_.begin(), by_name_.end(), [&](size_t a, size_t b) { return tensors_[a].name < tensors_[b].name; });
  for (size_t i = 1; i < by_name_.size(); ++i)
    if (tensors_[by_name_[i]].name == tensors_[by_name_[i - 1]].name)
      return corrupt(tensors_[by_name_[i]].name, "appears twice in the header");

  WHARF_RETURN_IF_ERROR(check_coverage(tensors_, data_size_));
  if (!unsupported.ok()) {
    tensors_.clear();
    metadata_.clear();
    by_name_.clear();
  }
  return unsupported;
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
    return OutOfMemory("parsing a safetensors buffer of " + std::to_string(size) + " bytes: out of host memory");
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

Status SafetensorsFile::open_for_reading(const std::string& path, std::unique_ptr<SafetensorsFile>* out) {
  out->reset();
  try {
    std::unique_ptr<SafetensorsFile> f(new SafetensorsFile());
    WHARF_RETURN_IF_ERROR(ReadOnlyFile::open(path, &f->file_));
    const uint64_t size = f->file_->size();
    uint8_t first8[8] = {};
    if (size >= 8) WHARF_RETURN_IF_ERROR(f->file_->read_exact(first8, 8, 0));
    uint64_t n = 0;
    Status st = header_length(first8, size, &n);
    // n <= 100,000,000: the header is read into memory whole (as a mapping's pages would be).
    std::string header;
    if (st.ok()) {
      header.resize(static_cast<size_t>(n));
      WHARF_RETURN_IF_ERROR(f->file_->read_exact(header.data(), n, 8));
      st = f->init_header(reinterpret_cast<const uint8_t*>(header.data()), n, size, nullptr);
    }
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

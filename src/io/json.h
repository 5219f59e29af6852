// A small strict JSON (RFC 8259) parser and string encoder, enough for safetensors headers.
//
// Strictness is deliberate: the input is an untrusted file header, and every byte that two
// parsers could read differently (duplicate keys, lone surrogates, invalid UTF-8, leading zeros,
// trailing garbage) is a chance for two tools to disagree about what a file contains. So all of
// them are errors here. Numbers are kept as their source text plus, for integers, the exact
// magnitude; there is no conversion to double, so a dimension is never silently rounded.
#pragma once

#include <cstddef>
#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "core/status.h"

namespace wharf::io::json {

enum class Kind : uint8_t { kNull, kBool, kNumber, kString, kArray, kObject };

const char* kind_name(Kind kind);  // "null", "boolean", "number", "string", "array", "object"

class Value {
 public:
  using Member = std::pair<std::string, Value>;

  Value() = default;  // null

  Kind kind() const { return kind_; }
  bool is_null() const { return kind_ == Kind::kNull; }
  bool is_bool() const { return kind_ == Kind::kBool; }
  bool is_number() const { return kind_ == Kind::kNumber; }
  bool is_string() const { return kind_ == Kind::kString; }
  bool is_array() const { return kind_ == Kind::kArray; }
  bool is_object() const { return kind_ == Kind::kObject; }

  // Accessors for the wrong kind return false / an empty value rather than invoking UB, so a
  // caller that forgot a kind check reads "nothing" instead of crashing.
  bool as_bool() const { return kind_ == Kind::kBool && bool_; }
  const std::string& as_string() const;         // the decoded UTF-8 text of a string
  const std::vector<Value>& as_array() const;   // elements of an array
  const std::vector<Member>& as_object() const; // members of an object, in source order

  // Numbers. number_text() is the exact source spelling ("12", "-0", "2.5e3").
  const std::string& number_text() const;
  bool is_integer() const { return kind_ == Kind::kNumber && integer_; }  // no fraction/exponent
  bool is_negative() const { return kind_ == Kind::kNumber && negative_; }
  // A non-negative integer (no '-', no fraction, no exponent) that fits in 64 bits.
  std::optional<uint64_t> as_uint64() const;

  // First member named `key` of an object (keys are unique after a successful parse); nullptr
  // if absent or not an object. Linear: objects in safetensors entries have a handful of keys.
  const Value* find(std::string_view key) const;

 private:
  friend class Parser;

  Kind kind_ = Kind::kNull;
  bool bool_ = false;
  bool negative_ = false;
  bool integer_ = false;
  bool fits_u64_ = false;
  uint64_t magnitude_ = 0;       // valid when integer_ && fits_u64_
  std::string text_;             // string contents, or a number's source text
  std::vector<Value> elements_;  // array elements
  std::vector<Member> members_;  // object members
};

struct ParseOptions {
  // Arrays and objects nested deeper than this are rejected; also bounds the parser's recursion.
  int max_depth = 64;
};

// Parses exactly one JSON value from `text`, allowing only JSON whitespace (space, tab, CR, LF)
// around it. On failure returns kDataCorrupt with "at byte N: <what>" (N counted from the start
// of `text`) and leaves *out unspecified. Duplicate object keys, invalid UTF-8, lone surrogate
// escapes and control characters inside strings are errors. Never throws except std::bad_alloc.
//
// Memory: the tree costs roughly sizeof(Value) (~120 bytes) per value, i.e. up to ~60x the input
// size for inputs like "[0,0,0,...]". Callers that parse untrusted input bound its size first.
Status parse(std::string_view text, Value* out, const ParseOptions& options = {});

// `s` in single quotes with control characters shown as \xNN: untrusted names echoed in error
// messages must not carry newlines or terminal escapes into logs.
std::string quote_for_message(std::string_view s);

// True if `s` is well-formed UTF-8 (no overlong forms, no surrogates, nothing above U+10FFFF).
bool is_valid_utf8(std::string_view s);

// Appends `s` as a JSON string literal (with quotes). `s` must be valid UTF-8; bytes are copied
// through unchanged except '"', '\\' and control characters, which are escaped.
void append_quoted(std::string* out, std::string_view s);

}  // namespace wharf::io::json

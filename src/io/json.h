/* SPDX-License-Identifier: Apache-2.0 */
// A small strict JSON (RFC 8259) parser and string encoder, enough for safetensors headers.
//
// Strictness is deliberate: the input is an untrusted file header, and every byte that two
// parsers could read differently (duplicate keys, lone surrogates, invalid UTF-8, leading zeros,
// trailing garbage) is a chance for two tools to disagree about what a file contains. So all of
// them are errors here. Numbers are kept as their source text plus, for integers, the exact
// magnitude; there is no conversion to double, so a dimension is never silently rounded.
//
// Two interfaces share one grammar implementation:
//  - Cursor, a pull parser: the caller walks the document and keeps only what it needs, and
//    skip_value() checks a value without storing it. Memory stays proportional to what the
//    caller keeps, not to the input, which matters for a 100 MiB hostile header.
//  - parse(), which builds a Value tree (convenient for small documents and for tests).
// All errors are kDataCorrupt "at byte N: <what>", N counted from the start of the text.
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

struct ParseOptions {
  // Arrays and objects nested deeper than this are rejected; also bounds recursion in
  // skip_value() and parse().
  int max_depth = 64;
};

// A number token.
struct Number {
  std::string_view text;   // exact source spelling ("12", "-0", "2.5e3"); a view into the input
  bool negative = false;   // starts with '-' (so "-0" is negative)
  bool integer = false;    // no fraction and no exponent
  bool fits_u64 = false;   // integer whose magnitude fits in 64 bits
  uint64_t magnitude = 0;  // valid when fits_u64

  // A non-negative integer (no '-', no fraction, no exponent) that fits in 64 bits.
  std::optional<uint64_t> as_uint64() const {
    if (!integer || negative || !fits_u64) return std::nullopt;
    return magnitude;
  }
};

// Pull parser over one JSON text. Usage: peek() to learn the next value's kind, then exactly one
// read_*/begin_*/skip_value() to consume it; inside an array call next_element() before each
// element, inside an object next_member() before each member; finish() at the end. After any
// error the cursor must not be used further. Duplicate keys are reported when their object
// closes (each open object keeps its keys until then, and sorts them: no hashing, so no
// hash-flooding input can make a large object quadratic).
class Cursor {
 public:
  // The cursor views `text`, which must outlive it (a temporary std::string is refused).
  explicit Cursor(std::string_view text, const ParseOptions& options = {});
  explicit Cursor(const char* text, const ParseOptions& options = {}) : Cursor(std::string_view(text), options) {}
  Cursor(std::string&&, const ParseOptions& = {}) = delete;

  // Kind of the next value, without consuming it. Fails at the end of the input or on a byte
  // that cannot start a value.
  Status peek(Kind* kind);

  Status read_null();
  Status read_bool(bool* value);
  Status read_number(Number* value);
  // Appends the decoded (UTF-8) text to *value; nullptr: validate and discard.
  Status read_string(std::string* value);

  Status begin_array();
  // Call before each element: *more is true if an element follows (then consume it), false if
  // the array ended (its ']' is consumed).
  Status next_element(bool* more);

  // check_duplicate_keys = false leaves duplicate detection for this object to the caller
  // (one that indexes the keys anyway need not pay for a second copy and sort of them).
  Status begin_object(bool check_duplicate_keys = true);
  // Call before each member: if one follows, *more is true, its key is in *key (nullptr: not
  // wanted) and its value is next; otherwise *more is false and the '}' is consumed, after the
  // object's keys were checked for duplicates.
  Status next_member(bool* more, std::string* key);

  // Consumes the next value of any kind, checking it as strictly as the read_* calls would.
  Status skip_value();

  // Succeeds if every array and object is closed and only whitespace remains.
  Status finish();

  size_t offset() const { return pos_; }  // byte offset of the next unread byte

 private:
  struct Frame {
    bool object = false;
    bool first = true;
    bool track_keys = false;
    std::vector<std::pair<std::string, size_t>> keys;  // if track_keys: key, byte offset
  };

  Status error(size_t at, const std::string& what) const;
  void skip_ws();
  Status expect_kind(Kind want);
  Status push(bool object, bool track_keys);
  Status check_duplicate_keys(Frame* f) const;
  Status parse_hex4(size_t at, uint32_t* out) const;

  std::string_view s_;
  ParseOptions options_;
  size_t pos_ = 0;
  std::vector<Frame> frames_;  // frames_[0, depth_) are open; deeper ones kept for reuse
  size_t depth_ = 0;
  std::string scratch_;  // key storage when the caller does not want the key
};

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
  const std::string& as_string() const;          // the decoded UTF-8 text of a string
  const std::vector<Value>& as_array() const;    // elements of an array
  const std::vector<Member>& as_object() const;  // members of an object, in source order

  // Numbers. number_text() is the exact source spelling ("12", "-0", "2.5e3").
  const std::string& number_text() const;
  bool is_integer() const { return kind_ == Kind::kNumber && integer_; }  // no fraction/exponent
  bool is_negative() const { return kind_ == Kind::kNumber && negative_; }
  // A non-negative integer (no '-', no fraction, no exponent) that fits in 64 bits.
  std::optional<uint64_t> as_uint64() const;

  // The member named `key` of an object (keys are unique after a successful parse); nullptr if
  // absent or not an object. Linear: meant for small objects.
  const Value* find(std::string_view key) const;

 private:
  friend Status parse_value(Cursor* c, Value* out);

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

// Parses exactly one JSON value from `text`, allowing only JSON whitespace (space, tab, CR, LF)
// around it, into a tree. *out is reset first. Never throws except std::bad_alloc.
// Memory: about sizeof(Value) (96 bytes) per value, i.e. up to ~50x the input for inputs like
// "[0,0,0,...]"; for large untrusted input walk it with a Cursor instead.
Status parse(std::string_view text, Value* out, const ParseOptions& options = {});

// wharf::quote_name (core/text.h): `s` quoted for a status message, with JSON-style escapes, so
// untrusted names echoed in error messages never carry newlines or terminal escapes into logs.
// Longer than max_bytes, it is cut (at a UTF-8 boundary) and marked: 'abc'... (70000 bytes).
std::string quote_for_message(std::string_view s, size_t max_bytes = 256);

// wharf::valid_utf8 (core/text.h): well-formed UTF-8 (no overlong forms, no surrogates, nothing
// above U+10FFFF).
bool is_valid_utf8(std::string_view s);

// Appends `s` as a JSON string literal (with quotes), escaped as the safetensors reference
// implementation (serde_json) does: '"', '\\' and C0 controls only, everything else copied
// through, so headers Wharf writes are byte-identical to the reference's. Bytes that are not
// well-formed UTF-8 become U+FFFD as in Writer below: the output is always valid JSON.
void append_quoted(std::string* out, std::string_view s);

// Writes one JSON text (RFC 8259). This is the one JSON writer of the project: append_quoted()
// above for safetensors headers, a Writer for everything else (the `wharf` program's --json
// output). Commas and nesting are tracked, so a caller cannot produce "[, {...}]".
//
// Strings are valid JSON whatever bytes they hold, and safe to print on a terminal:
//  - bytes that are not well-formed UTF-8 become U+FFFD, written "\ufffd", one per maximal
//    subpart (utf8_invalid_length() in core/text.h; Python's errors="replace" does the same).
//    A JSON string is Unicode text: "\xNN" is not JSON, and lone surrogates (Python's
//    surrogateescape) are refused by strict parsers, this one included. So a file name that
//    is not UTF-8 shows as itself with its stray bytes replaced (lossy, but always parsable);
//  - '"', '\\' and the short escapes (\b \f \n \r \t) as usual, and every code point
//    that escaped_when_shown() names (C0/C1 controls, DEL, bidi and line-layout characters)
//    as \uXXXX, so no terminal escape reaches the screen raw.
// Output is compact on one line with ", " and ": " between items. Misuse (a value in an object
// without a key, a key in an array, an unmatched end, a second top-level value) is recorded,
// not undefined: complete() then stays false.
class Writer {
 public:
  Writer& begin_object();
  Writer& end_object();
  Writer& begin_array();
  Writer& end_array();
  Writer& key(std::string_view k);  // in an object, before each value
  Writer& string(std::string_view s);
  Writer& uint(uint64_t v);
  Writer& sint(int64_t v);
  // The shortest text that reads back as `v`; NaN and infinities (not JSON numbers) as null.
  Writer& number(double v);
  Writer& boolean(bool v);
  Writer& null();
  // Another writer's complete() value, copied in as one value (nothing if it is incomplete:
  // then this writer is marked misused).
  Writer& value(const Writer& complete_value);

  const std::string& text() const { return out_; }
  // Exactly one top-level value was written, every array and object is closed, no misuse.
  bool complete() const { return done_ && !misused_; }

 private:
  bool before_value();  // false (and misused_) where no value may go
  Writer& close(char open, char close_char);
  void scalar_written();

  std::string out_;
  std::vector<char> open_;  // '{' or '[' per open container
  bool first_ = true;       // nothing written yet in the innermost container
  bool after_key_ = false;  // a key was written; its value comes next
  bool done_ = false;       // the top-level value is complete
  bool misused_ = false;
};

}  // namespace wharf::io::json

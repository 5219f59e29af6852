// SPDX-License-Identifier: Apache-2.0
#include "io/json.h"

#include <algorithm>
#include <charconv>
#include <cmath>

#include "core/text.h"

namespace wharf::io::json {
namespace {

void append_utf8(std::string* out, uint32_t cp) {
  if (cp < 0x80) {
    out->push_back(static_cast<char>(cp));
  } else if (cp < 0x800) {
    out->push_back(static_cast<char>(0xC0 | (cp >> 6)));
    out->push_back(static_cast<char>(0x80 | (cp & 0x3F)));
  } else if (cp < 0x10000) {
    out->push_back(static_cast<char>(0xE0 | (cp >> 12)));
    out->push_back(static_cast<char>(0x80 | ((cp >> 6) & 0x3F)));
    out->push_back(static_cast<char>(0x80 | (cp & 0x3F)));
  } else {
    out->push_back(static_cast<char>(0xF0 | (cp >> 18)));
    out->push_back(static_cast<char>(0x80 | ((cp >> 12) & 0x3F)));
    out->push_back(static_cast<char>(0x80 | ((cp >> 6) & 0x3F)));
    out->push_back(static_cast<char>(0x80 | (cp & 0x3F)));
  }
}

bool is_digit(char c) { return c >= '0' && c <= '9'; }

int hex_value(char c) {
  if (c >= '0' && c <= '9') return c - '0';
  if (c >= 'a' && c <= 'f') return c - 'a' + 10;
  if (c >= 'A' && c <= 'F') return c - 'A' + 10;
  return -1;
}

constexpr char kHex[] = "0123456789abcdef";

// "'x'" for printable ASCII, "byte 0xNN" otherwise: messages must stay printable.
std::string describe(char c) {
  const auto u = static_cast<unsigned char>(c);
  if (u >= 0x20 && u < 0x7F) return quote_name(std::string(1, c));
  return std::string("byte 0x") + kHex[u >> 4] + kHex[u & 0xF];
}

}  // namespace

const char* kind_name(Kind kind) {
  switch (kind) {
    case Kind::kNull:
      return "null";
    case Kind::kBool:
      return "boolean";
    case Kind::kNumber:
      return "number";
    case Kind::kString:
      return "string";
    case Kind::kArray:
      return "array";
    case Kind::kObject:
      return "object";
  }
  return "unknown";
}

// --- Cursor ----------------------------------------------------------------------------------

Cursor::Cursor(std::string_view text, const ParseOptions& options) : s_(text), options_(options) {}

Status Cursor::error(size_t at, const std::string& what) const {
  return DataCorrupt("at byte " + std::to_string(at) + ": " + what);
}

void Cursor::skip_ws() {
  while (pos_ < s_.size()) {
    const char c = s_[pos_];
    if (c != ' ' && c != '\t' && c != '\n' && c != '\r') break;
    ++pos_;
  }
}

Status Cursor::peek(Kind* kind) {
  skip_ws();
  if (pos_ >= s_.size()) return error(pos_, "unexpected end of input, expected a value");
  const char c = s_[pos_];
  switch (c) {
    case '{':
      *kind = Kind::kObject;
      return Status::Ok();
    case '[':
      *kind = Kind::kArray;
      return Status::Ok();
    case '"':
      *kind = Kind::kString;
      return Status::Ok();
    case 't':
    case 'f':
      *kind = Kind::kBool;
      return Status::Ok();
    case 'n':
      *kind = Kind::kNull;
      return Status::Ok();
    default:
      if (c == '-' || is_digit(c)) {
        *kind = Kind::kNumber;
        return Status::Ok();
      }
      return error(pos_, "unexpected " + describe(c) + ", expected a value");
  }
}

Status Cursor::expect_kind(Kind want) {
  Kind k;
  WHARF_RETURN_IF_ERROR(peek(&k));
  if (k != want) return error(pos_, std::string("expected a JSON ") + kind_name(want) + ", found " + kind_name(k));
  return Status::Ok();
}

Status Cursor::read_null() {
  WHARF_RETURN_IF_ERROR(expect_kind(Kind::kNull));
  if (s_.substr(pos_, 4) != "null") return error(pos_, "invalid literal");
  pos_ += 4;
  return Status::Ok();
}

Status Cursor::read_bool(bool* value) {
  WHARF_RETURN_IF_ERROR(expect_kind(Kind::kBool));
  if (s_.substr(pos_, 4) == "true") {
    pos_ += 4;
    *value = true;
  } else if (s_.substr(pos_, 5) == "false") {
    pos_ += 5;
    *value = false;
  } else {
    return error(pos_, "invalid literal");
  }
  return Status::Ok();
}

Status Cursor::read_number(Number* value) {
  WHARF_RETURN_IF_ERROR(expect_kind(Kind::kNumber));
  const size_t start = pos_;
  const auto at_end = [&] { return pos_ >= s_.size(); };
  Number n;
  if (s_[pos_] == '-') {
    n.negative = true;
    ++pos_;
  }
  if (at_end() || !is_digit(s_[pos_])) return error(start, "invalid number: expected a digit");
  // Integer part, accumulating the magnitude with overflow detection.
  bool fits = true;
  uint64_t mag = 0;
  if (s_[pos_] == '0') {
    ++pos_;
    if (!at_end() && is_digit(s_[pos_])) return error(start, "invalid number: leading zero");
  } else {
    while (!at_end() && is_digit(s_[pos_])) {
      const auto d = static_cast<uint64_t>(s_[pos_] - '0');
      if (fits && mag > (UINT64_MAX - d) / 10) fits = false;
      if (fits) mag = mag * 10 + d;
      ++pos_;
    }
  }
  n.integer = true;
  if (!at_end() && s_[pos_] == '.') {
    n.integer = false;
    ++pos_;
    if (at_end() || !is_digit(s_[pos_])) return error(start, "invalid number: expected a digit after '.'");
    while (!at_end() && is_digit(s_[pos_])) ++pos_;
  }
  if (!at_end() && (s_[pos_] == 'e' || s_[pos_] == 'E')) {
    n.integer = false;
    ++pos_;
    if (!at_end() && (s_[pos_] == '+' || s_[pos_] == '-')) ++pos_;
    if (at_end() || !is_digit(s_[pos_])) return error(start, "invalid number: expected a digit in the exponent");
    while (!at_end() && is_digit(s_[pos_])) ++pos_;
  }
  n.fits_u64 = n.integer && fits;
  n.magnitude = n.fits_u64 ? mag : 0;
  n.text = s_.substr(start, pos_ - start);
  *value = n;
  return Status::Ok();
}

Status Cursor::parse_hex4(size_t at, uint32_t* out) const {
  if (s_.size() - at < 4) return error(at, "truncated \\u escape");
  uint32_t v = 0;
  for (size_t k = 0; k < 4; ++k) {
    const int h = hex_value(s_[at + k]);
    if (h < 0) return error(at + k, "invalid hex digit " + describe(s_[at + k]) + " in \\u escape");
    v = (v << 4) | static_cast<uint32_t>(h);
  }
  *out = v;
  return Status::Ok();
}

Status Cursor::read_string(std::string* out) {
  WHARF_RETURN_IF_ERROR(expect_kind(Kind::kString));
  const size_t start = pos_;
  ++pos_;  // opening quote
  for (;;) {
    // Copy the longest run of bytes that need no attention in one append.
    size_t run = pos_;
    while (run < s_.size()) {
      const auto c = static_cast<unsigned char>(s_[run]);
      if (c == '"' || c == '\\' || c < 0x20 || c >= 0x80) break;
      ++run;
    }
    if (out) out->append(s_.data() + pos_, run - pos_);
    pos_ = run;
    if (pos_ >= s_.size()) return error(start, "unterminated string");
    const auto c = static_cast<unsigned char>(s_[pos_]);
    if (c == '"') {
      ++pos_;
      return Status::Ok();
    }
    if (c < 0x20) return error(pos_, "unescaped control character " + describe(s_[pos_]) + " in string");
    if (c >= 0x80) {
      const size_t len = utf8_sequence_length(s_, pos_);
      if (len == 0) return error(pos_, "invalid UTF-8 in string");
      if (out) out->append(s_.data() + pos_, len);
      pos_ += len;
      continue;
    }
    // Backslash escape.
    if (s_.size() - pos_ < 2) return error(start, "unterminated string");
    const char e = s_[pos_ + 1];
    const size_t esc = pos_;
    pos_ += 2;
    char simple = 0;
    switch (e) {
      case '"':
        simple = '"';
        break;
      case '\\':
        simple = '\\';
        break;
      case '/':
        simple = '/';
        break;
      case 'b':
        simple = '\b';
        break;
      case 'f':
        simple = '\f';
        break;
      case 'n':
        simple = '\n';
        break;
      case 'r':
        simple = '\r';
        break;
      case 't':
        simple = '\t';
        break;
      case 'u':
        break;
      default:
        return error(esc, "invalid escape character " + describe(e) + " after '\\'");
    }
    if (simple != 0) {
      if (out) out->push_back(simple);
      continue;
    }
    uint32_t cp;
    WHARF_RETURN_IF_ERROR(parse_hex4(pos_, &cp));
    pos_ += 4;
    if (cp >= 0xDC00 && cp <= 0xDFFF) return error(esc, "unpaired low surrogate in \\u escape");
    if (cp >= 0xD800 && cp <= 0xDBFF) {
      // A high surrogate must be followed at once by an escaped low surrogate; a lone one has
      // no UTF-8 encoding.
      if (s_.size() - pos_ < 2 || s_[pos_] != '\\' || s_[pos_ + 1] != 'u')
        return error(esc, "unpaired high surrogate in \\u escape");
      uint32_t low;
      WHARF_RETURN_IF_ERROR(parse_hex4(pos_ + 2, &low));
      if (low < 0xDC00 || low > 0xDFFF)
        return error(esc, "high surrogate not followed by a low surrogate in \\u escape");
      pos_ += 6;
      cp = 0x10000 + ((cp - 0xD800) << 10) + (low - 0xDC00);
    }
    if (out) append_utf8(out, cp);
  }
}

Status Cursor::push(bool object, bool track_keys) {
  if (depth_ >= static_cast<size_t>(options_.max_depth < 0 ? 0 : options_.max_depth))
    return error(pos_, "nesting deeper than " + std::to_string(options_.max_depth) + " levels");
  // Frames are reused, so sibling objects share one key vector's allocation.
  if (depth_ == frames_.size()) frames_.emplace_back();
  Frame& f = frames_[depth_++];
  f.object = object;
  f.first = true;
  f.track_keys = track_keys;
  f.keys.clear();  // O(size), unlike clearing a hash set with many buckets
  ++pos_;          // '[' or '{'
  return Status::Ok();
}

Status Cursor::begin_array() {
  WHARF_RETURN_IF_ERROR(expect_kind(Kind::kArray));
  return push(false, false);
}

Status Cursor::begin_object(bool check_duplicate_keys) {
  WHARF_RETURN_IF_ERROR(expect_kind(Kind::kObject));
  return push(true, check_duplicate_keys);
}

// Sorting by (key, offset) puts equal keys next to each other in source order, so the second
// of a pair is the repeat to report. O(n log n) for the top level of a large header.
Status Cursor::check_duplicate_keys(Frame* f) const {
  if (f->keys.size() < 2) return Status::Ok();
  std::sort(f->keys.begin(), f->keys.end());
  for (size_t i = 1; i < f->keys.size(); ++i)
    if (f->keys[i].first == f->keys[i - 1].first)
      return error(f->keys[i].second, "duplicate object key " + quote_for_message(f->keys[i].first));
  return Status::Ok();
}

Status Cursor::next_element(bool* more) {
  if (depth_ == 0 || frames_[depth_ - 1].object) return Internal("json::Cursor: next_element outside an array");
  Frame& f = frames_[depth_ - 1];
  skip_ws();
  if (pos_ >= s_.size()) return error(pos_, "unexpected end of input in array");
  if (s_[pos_] == ']') {
    ++pos_;
    --depth_;
    *more = false;
    return Status::Ok();
  }
  if (!f.first) {
    // "[1,]" passes here and fails in the next read, at the ']' where a value should be.
    if (s_[pos_] != ',') return error(pos_, "unexpected " + describe(s_[pos_]) + " in array, expected ',' or ']'");
    ++pos_;
  }
  f.first = false;
  *more = true;
  return Status::Ok();
}

Status Cursor::next_member(bool* more, std::string* key) {
  if (depth_ == 0 || !frames_[depth_ - 1].object) return Internal("json::Cursor: next_member outside an object");
  Frame& f = frames_[depth_ - 1];
  skip_ws();
  if (pos_ >= s_.size()) return error(pos_, "unexpected end of input in object");
  if (s_[pos_] == '}') {  // "{}" or the end after a member; "{"a":1,}" fails at the key below
    WHARF_RETURN_IF_ERROR(check_duplicate_keys(&f));
    ++pos_;
    --depth_;
    *more = false;
    return Status::Ok();
  }
  if (!f.first) {
    if (s_[pos_] != ',') return error(pos_, "unexpected " + describe(s_[pos_]) + " in object, expected ',' or '}'");
    ++pos_;
    skip_ws();
  }
  f.first = false;
  if (pos_ >= s_.size()) return error(pos_, "unexpected end of input, expected an object key");
  if (s_[pos_] != '"') return error(pos_, "unexpected " + describe(s_[pos_]) + ", expected an object key");
  const size_t key_pos = pos_;
  std::string* k = key ? key : &scratch_;
  k->clear();
  WHARF_RETURN_IF_ERROR(read_string(k));
  if (f.track_keys) f.keys.emplace_back(*k, key_pos);
  skip_ws();
  if (pos_ >= s_.size() || s_[pos_] != ':') return error(pos_, "expected ':' after object key");
  ++pos_;
  *more = true;
  return Status::Ok();
}

// Recursion is bounded: push() refuses more than max_depth open containers.
Status Cursor::skip_value() {
  Kind k;
  WHARF_RETURN_IF_ERROR(peek(&k));
  bool more = true;
  switch (k) {
    case Kind::kNull:
      return read_null();
    case Kind::kBool: {
      bool b;
      return read_bool(&b);
    }
    case Kind::kNumber: {
      Number n;
      return read_number(&n);
    }
    case Kind::kString:
      return read_string(nullptr);
    case Kind::kArray:
      WHARF_RETURN_IF_ERROR(begin_array());
      for (;;) {
        WHARF_RETURN_IF_ERROR(next_element(&more));
        if (!more) return Status::Ok();
        WHARF_RETURN_IF_ERROR(skip_value());
      }
    case Kind::kObject:
      WHARF_RETURN_IF_ERROR(begin_object());
      for (;;) {
        WHARF_RETURN_IF_ERROR(next_member(&more, nullptr));
        if (!more) return Status::Ok();
        WHARF_RETURN_IF_ERROR(skip_value());
      }
  }
  return Internal("json::Cursor: unknown kind");
}

Status Cursor::finish() {
  if (depth_ != 0) return Internal("json::Cursor: finish() with open arrays or objects");
  skip_ws();
  if (pos_ != s_.size()) return error(pos_, "unexpected " + describe(s_[pos_]) + " after the top-level value");
  return Status::Ok();
}

// --- Value -----------------------------------------------------------------------------------

const std::string& Value::as_string() const {
  static const std::string kEmpty;
  return kind_ == Kind::kString ? text_ : kEmpty;
}

const std::string& Value::number_text() const {
  static const std::string kEmpty;
  return kind_ == Kind::kNumber ? text_ : kEmpty;
}

const std::vector<Value>& Value::as_array() const {
  static const std::vector<Value> kEmpty;
  return kind_ == Kind::kArray ? elements_ : kEmpty;
}

const std::vector<Value::Member>& Value::as_object() const {
  static const std::vector<Member> kEmpty;
  return kind_ == Kind::kObject ? members_ : kEmpty;
}

std::optional<uint64_t> Value::as_uint64() const {
  if (kind_ != Kind::kNumber || !integer_ || negative_ || !fits_u64_) return std::nullopt;
  return magnitude_;
}

const Value* Value::find(std::string_view key) const {
  if (kind_ != Kind::kObject) return nullptr;
  for (const Member& m : members_)
    if (m.first == key) return &m.second;
  return nullptr;
}

// Builds one value from the cursor. Recursion is bounded by the cursor's depth limit.
Status parse_value(Cursor* c, Value* out) {
  Kind k;
  WHARF_RETURN_IF_ERROR(c->peek(&k));
  out->kind_ = k;
  bool more = true;
  switch (k) {
    case Kind::kNull:
      return c->read_null();
    case Kind::kBool:
      return c->read_bool(&out->bool_);
    case Kind::kNumber: {
      Number n;
      WHARF_RETURN_IF_ERROR(c->read_number(&n));
      out->negative_ = n.negative;
      out->integer_ = n.integer;
      out->fits_u64_ = n.fits_u64;
      out->magnitude_ = n.magnitude;
      out->text_.assign(n.text.data(), n.text.size());
      return Status::Ok();
    }
    case Kind::kString:
      return c->read_string(&out->text_);
    case Kind::kArray:
      WHARF_RETURN_IF_ERROR(c->begin_array());
      for (;;) {
        WHARF_RETURN_IF_ERROR(c->next_element(&more));
        if (!more) return Status::Ok();
        out->elements_.emplace_back();
        WHARF_RETURN_IF_ERROR(parse_value(c, &out->elements_.back()));
      }
    case Kind::kObject:
      WHARF_RETURN_IF_ERROR(c->begin_object());
      for (;;) {
        std::string key;
        WHARF_RETURN_IF_ERROR(c->next_member(&more, &key));
        if (!more) return Status::Ok();
        out->members_.emplace_back(std::move(key), Value());
        WHARF_RETURN_IF_ERROR(parse_value(c, &out->members_.back().second));
      }
  }
  return Internal("json::parse: unknown kind");
}

Status parse(std::string_view text, Value* out, const ParseOptions& options) {
  *out = Value();
  Cursor c(text, options);
  WHARF_RETURN_IF_ERROR(parse_value(&c, out));
  return c.finish();
}

// --- helpers ---------------------------------------------------------------------------------

std::string quote_for_message(std::string_view s, size_t max_bytes) { return quote_name(s, max_bytes); }

bool is_valid_utf8(std::string_view s) { return valid_utf8(s); }

namespace {

// One encoder for append_quoted() (terminal_safe = false: what JSON requires, as serde_json)
// and Writer (terminal_safe = true: also every escaped_when_shown() code point).
void append_string(std::string* out, std::string_view s, bool terminal_safe) {
  const auto u4 = [out](uint32_t cp) {
    *out += "\\u";
    for (int shift = 12; shift >= 0; shift -= 4) out->push_back(kHex[(cp >> shift) & 0xF]);
  };
  out->push_back('"');
  for (size_t i = 0; i < s.size();) {
    const size_t len = utf8_sequence_length(s, i);
    if (len == 0) {  // not UTF-8: one U+FFFD per maximal subpart
      *out += "\\ufffd";
      i += utf8_invalid_length(s, i);
      continue;
    }
    const uint32_t cp = utf8_decode(s, i, len);
    switch (cp) {
      case '"':
        *out += "\\\"";
        break;
      case '\\':
        *out += "\\\\";
        break;
      case '\b':
        *out += "\\b";
        break;
      case '\f':
        *out += "\\f";
        break;
      case '\n':
        *out += "\\n";
        break;
      case '\r':
        *out += "\\r";
        break;
      case '\t':
        *out += "\\t";
        break;
      default:
        if (cp < 0x20 || (terminal_safe && escaped_when_shown(cp)))
          u4(cp);
        else
          out->append(s.data() + i, len);
    }
    i += len;
  }
  out->push_back('"');
}

}  // namespace

void append_quoted(std::string* out, std::string_view s) { append_string(out, s, false); }

// --- Writer ----------------------------------------------------------------------------------

bool Writer::before_value() {
  if (done_ || (!open_.empty() && open_.back() == '{' && !after_key_)) {
    misused_ = true;
    return false;
  }
  if (after_key_) {
    after_key_ = false;
  } else if (!open_.empty()) {
    if (!first_) out_ += ", ";
  }
  first_ = false;
  return true;
}

Writer& Writer::begin_object() {
  if (before_value()) {
    out_.push_back('{');
    open_.push_back('{');
    first_ = true;
  }
  return *this;
}

Writer& Writer::begin_array() {
  if (before_value()) {
    out_.push_back('[');
    open_.push_back('[');
    first_ = true;
  }
  return *this;
}

Writer& Writer::close(char open, char close_char) {
  if (open_.empty() || open_.back() != open || after_key_) {
    misused_ = true;
    return *this;
  }
  out_.push_back(close_char);
  open_.pop_back();
  first_ = false;
  if (open_.empty()) done_ = true;
  return *this;
}

Writer& Writer::end_object() { return close('{', '}'); }
Writer& Writer::end_array() { return close('[', ']'); }

Writer& Writer::key(std::string_view k) {
  if (open_.empty() || open_.back() != '{' || after_key_) {
    misused_ = true;
    return *this;
  }
  if (!first_) out_ += ", ";
  append_string(&out_, k, true);
  out_ += ": ";
  after_key_ = true;
  return *this;
}

void Writer::scalar_written() {
  if (open_.empty()) done_ = true;  // a scalar standing alone is the whole text
}

Writer& Writer::string(std::string_view s) {
  if (before_value()) {
    append_string(&out_, s, true);
    scalar_written();
  }
  return *this;
}

Writer& Writer::uint(uint64_t v) {
  if (before_value()) {
    out_ += std::to_string(v);
    scalar_written();
  }
  return *this;
}

Writer& Writer::sint(int64_t v) {
  if (before_value()) {
    out_ += std::to_string(v);
    scalar_written();
  }
  return *this;
}

Writer& Writer::number(double v) {
  if (!std::isfinite(v)) return null();
  if (before_value()) {
    char buf[32];
    const std::to_chars_result r = std::to_chars(buf, buf + sizeof buf, v);
    out_.append(buf, r.ptr);
    scalar_written();
  }
  return *this;
}

Writer& Writer::boolean(bool v) {
  if (before_value()) {
    out_ += v ? "true" : "false";
    scalar_written();
  }
  return *this;
}

Writer& Writer::null() {
  if (before_value()) {
    out_ += "null";
    scalar_written();
  }
  return *this;
}

Writer& Writer::value(const Writer& complete_value) {
  if (!complete_value.complete()) {
    misused_ = true;
    return *this;
  }
  if (before_value()) {
    out_ += complete_value.out_;
    scalar_written();
  }
  return *this;
}

}  // namespace wharf::io::json

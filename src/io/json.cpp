#include "io/json.h"

#include <algorithm>

namespace wharf::io::json {
namespace {

// Length of the well-formed UTF-8 sequence starting at s[i] (RFC 3629, table 3-7 of the
// Unicode standard), or 0 if the bytes there are not one. Rejects overlong forms, UTF-16
// surrogates (U+D800..U+DFFF) and code points above U+10FFFF.
size_t utf8_sequence_length(std::string_view s, size_t i) {
  const auto byte = [&](size_t k) { return static_cast<unsigned char>(s[k]); };
  const size_t avail = s.size() - i;
  const unsigned char c = byte(i);
  if (c < 0x80) return 1;
  size_t len;
  unsigned char lo = 0x80, hi = 0xBF;  // allowed range of the second byte
  if (c >= 0xC2 && c <= 0xDF) {
    len = 2;
  } else if (c >= 0xE0 && c <= 0xEF) {
    len = 3;
    if (c == 0xE0) lo = 0xA0;       // overlong below U+0800
    else if (c == 0xED) hi = 0x9F;  // surrogates
  } else if (c >= 0xF0 && c <= 0xF4) {
    len = 4;
    if (c == 0xF0) lo = 0x90;       // overlong below U+10000
    else if (c == 0xF4) hi = 0x8F;  // above U+10FFFF
  } else {
    return 0;  // continuation byte, C0/C1 (always overlong) or F5..FF
  }
  if (avail < len) return 0;
  if (byte(i + 1) < lo || byte(i + 1) > hi) return 0;
  for (size_t k = 2; k < len; ++k)
    if (byte(i + k) < 0x80 || byte(i + k) > 0xBF) return 0;
  return len;
}

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

// "'x'" for printable ASCII, "byte 0xNN" otherwise: messages must stay printable.
std::string describe(char c) {
  const auto u = static_cast<unsigned char>(c);
  if (u >= 0x20 && u < 0x7F) return std::string("'") + c + "'";
  static const char kHex[] = "0123456789abcdef";
  return std::string("byte 0x") + kHex[u >> 4] + kHex[u & 0xF];
}

}  // namespace

std::string quote_for_message(std::string_view s) {
  static const char kHex[] = "0123456789abcdef";
  std::string out = "'";
  for (char c : s) {
    const auto u = static_cast<unsigned char>(c);
    if (u < 0x20 || u == 0x7F) {
      out += "\\x";
      out.push_back(kHex[u >> 4]);
      out.push_back(kHex[u & 0xF]);
    } else {
      out.push_back(c);
    }
  }
  return out + "'";
}

const char* kind_name(Kind kind) {
  switch (kind) {
    case Kind::kNull: return "null";
    case Kind::kBool: return "boolean";
    case Kind::kNumber: return "number";
    case Kind::kString: return "string";
    case Kind::kArray: return "array";
    case Kind::kObject: return "object";
  }
  return "unknown";
}

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

// Recursive descent over the RFC 8259 grammar. Recursion depth is bounded by max_depth.
class Parser {
 public:
  Parser(std::string_view text, const ParseOptions& options) : s_(text), options_(options) {}

  Status parse_document(Value* out) {
    skip_ws();
    WHARF_RETURN_IF_ERROR(parse_value(out, 0));
    skip_ws();
    if (pos_ != s_.size())
      return error(pos_, "unexpected " + describe(s_[pos_]) + " after the top-level value");
    return Status::Ok();
  }

 private:
  Status error(size_t at, const std::string& what) const {
    return DataCorrupt("at byte " + std::to_string(at) + ": " + what);
  }

  bool at_end() const { return pos_ >= s_.size(); }

  void skip_ws() {
    while (pos_ < s_.size()) {
      const char c = s_[pos_];
      if (c != ' ' && c != '\t' && c != '\n' && c != '\r') break;
      ++pos_;
    }
  }

  // `depth` is the number of arrays/objects enclosing this value.
  Status parse_value(Value* out, int depth) {
    if (at_end()) return error(pos_, "unexpected end of input, expected a value");
    switch (s_[pos_]) {
      case '{': return parse_object(out, depth);
      case '[': return parse_array(out, depth);
      case '"':
        out->kind_ = Kind::kString;
        return parse_string(&out->text_);
      case 't': return parse_literal("true", out, Kind::kBool, true);
      case 'f': return parse_literal("false", out, Kind::kBool, false);
      case 'n': return parse_literal("null", out, Kind::kNull, false);
      default:
        if (s_[pos_] == '-' || is_digit(s_[pos_])) return parse_number(out);
        return error(pos_, "unexpected " + describe(s_[pos_]) + ", expected a value");
    }
  }

  Status parse_literal(std::string_view word, Value* out, Kind kind, bool value) {
    if (s_.substr(pos_, word.size()) != word) return error(pos_, "invalid literal");
    pos_ += word.size();
    out->kind_ = kind;
    out->bool_ = value;
    return Status::Ok();
  }

  Status enter_container(size_t at, int depth) const {
    if (depth >= options_.max_depth)
      return error(at, "nesting deeper than " + std::to_string(options_.max_depth) + " levels");
    return Status::Ok();
  }

  Status parse_array(Value* out, int depth) {
    WHARF_RETURN_IF_ERROR(enter_container(pos_, depth));
    out->kind_ = Kind::kArray;
    ++pos_;  // '['
    skip_ws();
    if (!at_end() && s_[pos_] == ']') {
      ++pos_;
      return Status::Ok();
    }
    for (;;) {
      out->elements_.emplace_back();
      WHARF_RETURN_IF_ERROR(parse_value(&out->elements_.back(), depth + 1));
      skip_ws();
      if (at_end()) return error(pos_, "unexpected end of input in array");
      if (s_[pos_] == ']') {
        ++pos_;
        return Status::Ok();
      }
      if (s_[pos_] != ',')
        return error(pos_, "unexpected " + describe(s_[pos_]) + " in array, expected ',' or ']'");
      ++pos_;
      skip_ws();
    }
  }

  Status parse_object(Value* out, int depth) {
    WHARF_RETURN_IF_ERROR(enter_container(pos_, depth));
    out->kind_ = Kind::kObject;
    ++pos_;  // '{'
    skip_ws();
    if (!at_end() && s_[pos_] == '}') {
      ++pos_;
      return Status::Ok();
    }
    std::vector<size_t> key_pos;  // where each key starts, for the duplicate-key message
    for (;;) {
      if (at_end() || s_[pos_] != '"')
        return error(pos_, at_end() ? "unexpected end of input, expected an object key"
                                    : "unexpected " + describe(s_[pos_]) + ", expected an object key");
      key_pos.push_back(pos_);
      out->members_.emplace_back();
      Value::Member& m = out->members_.back();
      WHARF_RETURN_IF_ERROR(parse_string(&m.first));
      skip_ws();
      if (at_end() || s_[pos_] != ':') return error(pos_, "expected ':' after object key");
      ++pos_;
      skip_ws();
      WHARF_RETURN_IF_ERROR(parse_value(&m.second, depth + 1));
      skip_ws();
      if (at_end()) return error(pos_, "unexpected end of input in object");
      if (s_[pos_] == '}') {
        ++pos_;
        break;
      }
      if (s_[pos_] != ',')
        return error(pos_, "unexpected " + describe(s_[pos_]) + " in object, expected ',' or '}'");
      ++pos_;
      skip_ws();
    }
    return check_duplicate_keys(*out, key_pos);
  }

  // Sorting indices keeps this O(n log n) for the top-level object of a large header, which
  // can hold hundreds of thousands of tensors.
  Status check_duplicate_keys(const Value& obj, const std::vector<size_t>& key_pos) const {
    const std::vector<Value::Member>& m = obj.members_;
    if (m.size() < 2) return Status::Ok();
    std::vector<size_t> order(m.size());
    for (size_t i = 0; i < order.size(); ++i) order[i] = i;
    std::stable_sort(order.begin(), order.end(),
                     [&](size_t a, size_t b) { return m[a].first < m[b].first; });
    for (size_t i = 1; i < order.size(); ++i) {
      if (m[order[i]].first == m[order[i - 1]].first) {
        // stable_sort keeps equal keys in source order, so order[i] is a repeat.
        return error(key_pos[order[i]], "duplicate object key " + quote_for_message(m[order[i]].first));
      }
    }
    return Status::Ok();
  }


  Status parse_hex4(size_t at, uint32_t* out) {
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

  Status parse_string(std::string* out) {
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
      out->append(s_.data() + pos_, run - pos_);
      pos_ = run;
      if (at_end()) return error(start, "unterminated string");
      const auto c = static_cast<unsigned char>(s_[pos_]);
      if (c == '"') {
        ++pos_;
        return Status::Ok();
      }
      if (c < 0x20)
        return error(pos_, "unescaped control character " + describe(s_[pos_]) + " in string");
      if (c >= 0x80) {
        const size_t len = utf8_sequence_length(s_, pos_);
        if (len == 0) return error(pos_, "invalid UTF-8 in string");
        out->append(s_.data() + pos_, len);
        pos_ += len;
        continue;
      }
      // Backslash escape.
      if (s_.size() - pos_ < 2) return error(start, "unterminated string");
      const char e = s_[pos_ + 1];
      const size_t esc = pos_;
      pos_ += 2;
      switch (e) {
        case '"': out->push_back('"'); break;
        case '\\': out->push_back('\\'); break;
        case '/': out->push_back('/'); break;
        case 'b': out->push_back('\b'); break;
        case 'f': out->push_back('\f'); break;
        case 'n': out->push_back('\n'); break;
        case 'r': out->push_back('\r'); break;
        case 't': out->push_back('\t'); break;
        case 'u': {
          uint32_t cp;
          WHARF_RETURN_IF_ERROR(parse_hex4(pos_, &cp));
          pos_ += 4;
          if (cp >= 0xDC00 && cp <= 0xDFFF) return error(esc, "unpaired low surrogate in \\u escape");
          if (cp >= 0xD800 && cp <= 0xDBFF) {
            // A high surrogate must be followed at once by an escaped low surrogate; a lone one
            // has no UTF-8 encoding.
            if (s_.size() - pos_ < 2 || s_[pos_] != '\\' || s_[pos_ + 1] != 'u')
              return error(esc, "unpaired high surrogate in \\u escape");
            uint32_t low;
            WHARF_RETURN_IF_ERROR(parse_hex4(pos_ + 2, &low));
            if (low < 0xDC00 || low > 0xDFFF)
              return error(esc, "high surrogate not followed by a low surrogate in \\u escape");
            pos_ += 6;
            cp = 0x10000 + ((cp - 0xD800) << 10) + (low - 0xDC00);
          }
          append_utf8(out, cp);
          break;
        }
        default:
          return error(esc, "invalid escape character " + describe(e) + " after '\\'");
      }
    }
  }

  Status parse_number(Value* out) {
    const size_t start = pos_;
    out->kind_ = Kind::kNumber;
    if (s_[pos_] == '-') {
      out->negative_ = true;
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
        const uint64_t d = static_cast<uint64_t>(s_[pos_] - '0');
        if (fits && (mag > (UINT64_MAX - d) / 10)) fits = false;
        if (fits) mag = mag * 10 + d;
        ++pos_;
      }
    }
    bool integer = true;
    if (!at_end() && s_[pos_] == '.') {
      integer = false;
      ++pos_;
      if (at_end() || !is_digit(s_[pos_]))
        return error(start, "invalid number: expected a digit after '.'");
      while (!at_end() && is_digit(s_[pos_])) ++pos_;
    }
    if (!at_end() && (s_[pos_] == 'e' || s_[pos_] == 'E')) {
      integer = false;
      ++pos_;
      if (!at_end() && (s_[pos_] == '+' || s_[pos_] == '-')) ++pos_;
      if (at_end() || !is_digit(s_[pos_]))
        return error(start, "invalid number: expected a digit in the exponent");
      while (!at_end() && is_digit(s_[pos_])) ++pos_;
    }
    out->integer_ = integer;
    out->fits_u64_ = integer && fits;
    out->magnitude_ = out->fits_u64_ ? mag : 0;
    out->text_.assign(s_.data() + start, pos_ - start);
    return Status::Ok();
  }

  std::string_view s_;
  const ParseOptions& options_;
  size_t pos_ = 0;
};

Status parse(std::string_view text, Value* out, const ParseOptions& options) {
  *out = Value();
  return Parser(text, options).parse_document(out);
}

bool is_valid_utf8(std::string_view s) {
  for (size_t i = 0; i < s.size();) {
    const size_t len = utf8_sequence_length(s, i);
    if (len == 0) return false;
    i += len;
  }
  return true;
}

void append_quoted(std::string* out, std::string_view s) {
  static const char kHex[] = "0123456789abcdef";
  out->push_back('"');
  for (char c : s) {
    switch (c) {
      case '"': *out += "\\\""; break;
      case '\\': *out += "\\\\"; break;
      case '\b': *out += "\\b"; break;
      case '\f': *out += "\\f"; break;
      case '\n': *out += "\\n"; break;
      case '\r': *out += "\\r"; break;
      case '\t': *out += "\\t"; break;
      default:
        if (static_cast<unsigned char>(c) < 0x20) {
          *out += "\\u00";
          out->push_back(kHex[(c >> 4) & 0xF]);
          out->push_back(kHex[c & 0xF]);
        } else {
          out->push_back(c);
        }
    }
  }
  out->push_back('"');
}

}  // namespace wharf::io::json

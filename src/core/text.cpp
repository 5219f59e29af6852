// SPDX-License-Identifier: Apache-2.0
#include "core/text.h"

#include <cstdint>

namespace wharf {
namespace {

constexpr char kHex[] = "0123456789abcdef";

void append_u4(std::string* out, uint32_t cp) {
  *out += "\\u";
  for (int shift = 12; shift >= 0; shift -= 4) out->push_back(kHex[(cp >> shift) & 0xF]);
}

}  // namespace

uint32_t utf8_decode(std::string_view s, size_t i, size_t len) {
  const auto byte = [&](size_t k) { return static_cast<uint32_t>(static_cast<unsigned char>(s[i + k])); };
  switch (len) {
    case 1:
      return byte(0);
    case 2:
      return ((byte(0) & 0x1F) << 6) | (byte(1) & 0x3F);
    case 3:
      return ((byte(0) & 0x0F) << 12) | ((byte(1) & 0x3F) << 6) | (byte(2) & 0x3F);
    default:
      return ((byte(0) & 0x07) << 18) | ((byte(1) & 0x3F) << 12) | ((byte(2) & 0x3F) << 6) | (byte(3) & 0x3F);
  }
}

bool escaped_when_shown(uint32_t cp) {
  return cp < 0x20 || (cp >= 0x7F && cp <= 0x9F) || cp == 0x200E || cp == 0x200F || (cp >= 0x2028 && cp <= 0x202E) ||
         (cp >= 0x2066 && cp <= 0x2069);
}

namespace {

// What a lead byte promises: the sequence length and the allowed range of the second byte
// (RFC 3629; table 3-7 of the Unicode standard). Length 0: the byte starts no sequence (a
// continuation byte, C0/C1, which are always overlong, or F5..FF).
struct Lead {
  size_t len = 0;
  unsigned char lo = 0x80, hi = 0xBF;
};

Lead lead_of(unsigned char c) {
  Lead l;
  if (c >= 0xC2 && c <= 0xDF) {
    l.len = 2;
  } else if (c >= 0xE0 && c <= 0xEF) {
    l.len = 3;
    if (c == 0xE0)
      l.lo = 0xA0;  // overlong below U+0800
    else if (c == 0xED)
      l.hi = 0x9F;  // surrogates
  } else if (c >= 0xF0 && c <= 0xF4) {
    l.len = 4;
    if (c == 0xF0)
      l.lo = 0x90;  // overlong below U+10000
    else if (c == 0xF4)
      l.hi = 0x8F;  // above U+10FFFF
  }
  return l;
}

// How many bytes at s[i] (at most `len`) follow the lead byte's promise.
size_t matching_prefix(std::string_view s, size_t i, const Lead& l) {
  size_t k = 1;
  if (i + k < s.size()) {
    const auto b = static_cast<unsigned char>(s[i + k]);
    if (b < l.lo || b > l.hi) return k;
    ++k;
  }
  while (k < l.len && i + k < s.size()) {
    const auto b = static_cast<unsigned char>(s[i + k]);
    if (b < 0x80 || b > 0xBF) break;
    ++k;
  }
  return k;
}

}  // namespace

size_t utf8_sequence_length(std::string_view s, size_t i) {
  const auto c = static_cast<unsigned char>(s[i]);
  if (c < 0x80) return 1;
  const Lead l = lead_of(c);
  if (l.len == 0 || s.size() - i < l.len) return 0;
  return matching_prefix(s, i, l) == l.len ? l.len : 0;
}

size_t utf8_invalid_length(std::string_view s, size_t i) {
  const Lead l = lead_of(static_cast<unsigned char>(s[i]));
  return l.len == 0 ? 1 : matching_prefix(s, i, l);
}

size_t utf8_error_offset(std::string_view s) {
  for (size_t i = 0; i < s.size();) {
    const size_t len = utf8_sequence_length(s, i);
    if (len == 0) return i;
    i += len;
  }
  return s.size();
}

bool valid_utf8(std::string_view s) { return utf8_error_offset(s) == s.size(); }

std::string quote_name(std::string_view s, size_t max_bytes) {
  std::string_view shown = s;
  if (s.size() > max_bytes) {
    size_t cut = max_bytes;
    // Not mid-character: back up over at most 3 continuation bytes (more cannot belong to one
    // character, and a run of stray ones must not cut the name to nothing).
    while (cut > 0 && max_bytes - cut < 3 && (static_cast<unsigned char>(s[cut]) & 0xC0) == 0x80) --cut;
    shown = s.substr(0, cut);
  }
  std::string out;
  out.reserve(shown.size() + 2);
  out.push_back('\'');
  for (size_t i = 0; i < shown.size();) {
    const size_t len = utf8_sequence_length(shown, i);
    if (len == 0) {  // not UTF-8: show the byte
      const auto u = static_cast<unsigned char>(shown[i]);
      out += "\\x";
      out.push_back(kHex[u >> 4]);
      out.push_back(kHex[u & 0xF]);
      ++i;
      continue;
    }
    const uint32_t cp = utf8_decode(shown, i, len);
    switch (cp) {
      case '\n':
        out += "\\n";
        break;
      case '\r':
        out += "\\r";
        break;
      case '\t':
        out += "\\t";
        break;
      case '\b':
        out += "\\b";
        break;
      case '\f':
        out += "\\f";
        break;
      case '\\':
        out += "\\\\";
        break;
      case '\'':
        out += "\\'";
        break;
      default:
        if (escaped_when_shown(cp))
          append_u4(&out, cp);
        else
          out.append(shown.data() + i, len);
    }
    i += len;
  }
  out.push_back('\'');
  if (shown.size() != s.size()) out += "... (" + std::to_string(s.size()) + " bytes)";
  return out;
}

std::string quote_name(const std::string& s) { return quote_name(std::string_view(s), kMaxQuotedNameBytes); }

Status check_fqn(const std::string& what, const std::string& fqn) {
  if (fqn.empty()) return InvalidArgument(what + ": empty name");
  const size_t nul = fqn.find('\0');
  if (nul != std::string::npos)
    return InvalidArgument(what + " " + quote_name(fqn) + ": name contains a NUL byte (byte " + std::to_string(nul) +
                           ")");
  const size_t bad = utf8_error_offset(fqn);
  if (bad != fqn.size())
    return InvalidArgument(what + " " + quote_name(fqn) + ": name is not valid UTF-8 (byte " + std::to_string(bad) +
                           ")");
  return Status::Ok();
}

}  // namespace wharf

/* SPDX-License-Identifier: Apache-2.0 */
// Text that crosses a trust boundary: names (FQNs) and paths that come from files or callers.
//
// Two rules hold everywhere a status message is built:
//  - a name from a file or a caller appears only through quote_name(), so a newline, a terminal
//    escape or a byte that is not UTF-8 can never reach a log line raw (scripts/check-quoting.sh,
//    ctest 'quoting', fails on hand-made quoting such as "'" + name + "'");
//  - a name is checked with check_fqn() where it enters (constant maps, containers, state
//    declarations, the safetensors reader): non-empty, no NUL (names cross the C ABI as
//    NUL-terminated strings, where "a\0b" would read as "a"), well-formed UTF-8 (the header
//    promises UTF-8 names; a binding that decodes them as UTF-8 must not fail or guess).
#pragma once

#include <cstddef>
#include <cstdint>
#include <string>
#include <string_view>

#include "core/status.h"

namespace wharf {

// Longest part of a name that quote_name() shows; the rest is replaced by "... (N bytes)".
constexpr size_t kMaxQuotedNameBytes = 256;

// `s` in single quotes (the quotes of every Wharf message: "constant 'layers.0.w'") with
// JSON-style escapes for everything that is not plain printable text:
//   \n \r \t \b \f             those control characters
//   \\ \'                      the escape character and the quote itself (so quoting is unambiguous)
//   \u00XX                     other C0 controls, DEL and the C1 controls U+0080..U+009F
//   \u200E \u2028 \u202E ...   invisible direction marks, line/paragraph separators and the
//                              bidirectional overrides/isolates ("Trojan Source" reordering)
//   \xNN                       each byte that is not part of well-formed UTF-8
// The result is always valid UTF-8 with no control characters. Inputs longer than
// kMaxQuotedNameBytes (or `max_bytes`) are cut at a character boundary and marked:
// 'abc'... (70000 bytes).
//   quote_name("layers.0\n") == "'layers.0\\n'"
std::string quote_name(const std::string& s);
std::string quote_name(std::string_view s, size_t max_bytes);

// Longest path shown whole by quote_path() (PATH_MAX on Linux).
constexpr size_t kMaxQuotedPathBytes = 4096;
// quote_name() with room for a whole path.
inline std::string quote_path(std::string_view path) { return quote_name(path, kMaxQuotedPathBytes); }

// True if `s` is well-formed UTF-8 (RFC 3629, table 3-7 of the Unicode standard): no overlong
// forms, no UTF-16 surrogates (U+D800..U+DFFF), nothing above U+10FFFF, no truncated sequence.
// NUL is valid UTF-8 (check_fqn refuses it separately).
bool valid_utf8(std::string_view s);
inline bool valid_utf8(const std::string& s) { return valid_utf8(std::string_view(s)); }
inline bool valid_utf8(const char* s) { return valid_utf8(std::string_view(s)); }  // no ambiguity

// Length (1..4) of the well-formed UTF-8 sequence starting at s[i], or 0 if the bytes there are
// not one (an overlong form, a surrogate, a code point above U+10FFFF, a stray continuation
// byte, a sequence cut short). Requires i < s.size().
size_t utf8_sequence_length(std::string_view s, size_t i);

// Where utf8_sequence_length(s, i) is 0: the length of the "maximal subpart" there (Unicode
// 3.9, U+FFFD substitution): the bytes that start a sequence but are cut short count as one
// unit, any other byte alone. What WHATWG's decoder and Python's errors="replace" replace by
// one U+FFFD each.
size_t utf8_invalid_length(std::string_view s, size_t i);

// The code point of the well-formed UTF-8 sequence of `len` bytes (from utf8_sequence_length)
// at s[i].
uint32_t utf8_decode(std::string_view s, size_t i, size_t len);

// Code points that are valid text but are never shown raw (quote_name() and the JSON writer
// of io/json.h escape them): C0 controls, DEL, C1 controls (U+009B is CSI to some terminals),
// and the invisible characters that change how a line is laid out: direction marks,
// line/paragraph separators, bidi embeddings/overrides/isolates ("Trojan Source").
bool escaped_when_shown(uint32_t cp);

// Byte offset of the first byte of `s` that does not start a well-formed UTF-8 sequence, or
// s.size() if the whole string is well-formed.
size_t utf8_error_offset(std::string_view s);

// Checks a name where it enters Wharf: non-empty, no NUL byte, well-formed UTF-8. `what` says
// what is named, with any context the caller wants in front ("constant", "state",
// "container 'm': constant"). On failure returns kInvalidArgument whose message quotes the name
// with quote_name(), e.g. "constant 'a\xc0\xaf': name is not valid UTF-8 (byte 1)"; callers that
// read the name from a file turn the code into kDataCorrupt.
Status check_fqn(const std::string& what, const std::string& fqn);

}  // namespace wharf

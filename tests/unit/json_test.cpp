// SPDX-License-Identifier: Apache-2.0
// Tests of the strict JSON parser behind the safetensors header reader.

#include "io/json.h"

#include <gtest/gtest.h>

#include <string>
#include <type_traits>
#include <vector>

namespace wharf::io::json {
namespace {

Value parse_ok(std::string_view text) {
  Value v;
  Status st = parse(text, &v);
  EXPECT_TRUE(st.ok()) << "input: " << text << "\nerror: " << st.message();
  return v;
}

// Expects a parse failure whose message contains `fragment`.
void expect_error(std::string_view text, const std::string& fragment, const ParseOptions& opts = {}) {
  Value v;
  Status st = parse(text, &v, opts);
  ASSERT_FALSE(st.ok()) << "accepted: " << text;
  EXPECT_EQ(st.code(), Code::kDataCorrupt);
  EXPECT_NE(st.message().find(fragment), std::string::npos)
      << "input: " << text << "\nmessage: " << st.message() << "\nexpected fragment: " << fragment;
}

TEST(JsonTest, Literals) {
  EXPECT_TRUE(parse_ok("null").is_null());
  Value t = parse_ok("true");
  ASSERT_TRUE(t.is_bool());
  EXPECT_TRUE(t.as_bool());
  Value f = parse_ok("false");
  ASSERT_TRUE(f.is_bool());
  EXPECT_FALSE(f.as_bool());
  expect_error("nul", "invalid literal");
  expect_error("True", "unexpected 'T'");
  expect_error("truex", "after the top-level value");
}

TEST(JsonTest, IntegersKeepExactMagnitude) {
  Value v = parse_ok("0");
  EXPECT_TRUE(v.is_integer());
  EXPECT_EQ(v.as_uint64(), std::optional<uint64_t>(0));
  EXPECT_EQ(parse_ok("4096").as_uint64(), std::optional<uint64_t>(4096));
  EXPECT_EQ(parse_ok("9223372036854775808").as_uint64(), std::optional<uint64_t>(uint64_t(1) << 63));
  EXPECT_EQ(parse_ok("18446744073709551615").as_uint64(), std::optional<uint64_t>(UINT64_MAX));
  // One past 2^64 - 1 is still an integer, but has no 64-bit value.
  Value big = parse_ok("18446744073709551616");
  EXPECT_TRUE(big.is_integer());
  EXPECT_FALSE(big.as_uint64().has_value());
  EXPECT_EQ(big.number_text(), "18446744073709551616");
  Value huge = parse_ok("99999999999999999999999999999");
  EXPECT_FALSE(huge.as_uint64().has_value());
}

TEST(JsonTest, NegativeAndFractionalNumbersHaveNoUnsignedValue) {
  for (const char* text : {"-1", "-0", "1.5", "2.0", "1e3", "1E+3", "-2.5e-3", "0.0"}) {
    Value v = parse_ok(text);
    ASSERT_TRUE(v.is_number()) << text;
    EXPECT_FALSE(v.as_uint64().has_value()) << text;
    EXPECT_EQ(v.number_text(), text);
  }
  EXPECT_TRUE(parse_ok("-0").is_negative());
  EXPECT_TRUE(parse_ok("-0").is_integer());
  EXPECT_FALSE(parse_ok("2.0").is_integer());
  EXPECT_FALSE(parse_ok("2e0").is_integer());
}

TEST(JsonTest, RejectsMalformedNumbers) {
  expect_error("01", "leading zero");
  expect_error("-01", "leading zero");
  expect_error("-", "expected a digit");
  expect_error("1.", "after '.'");
  expect_error(".5", "unexpected '.'");
  expect_error("1e", "exponent");
  expect_error("1e+", "exponent");
  expect_error("+1", "unexpected '+'");
  expect_error("0x10", "after the top-level value");
  expect_error("NaN", "unexpected 'N'");
  expect_error("Infinity", "unexpected 'I'");
  expect_error("-Infinity", "expected a digit");
}

TEST(JsonTest, StringEscapes) {
  EXPECT_EQ(parse_ok(R"("a\"b\\c\/d\be\ff\ng\rh\ti")").as_string(), "a\"b\\c/d\be\ff\ng\rh\ti");
  EXPECT_EQ(parse_ok(R"("\u0041\u00e9\u20AC")").as_string(), "A\xC3\xA9\xE2\x82\xAC");
  // A surrogate pair becomes one 4-byte UTF-8 sequence (U+1F600).
  EXPECT_EQ(parse_ok(R"("\uD83D\uDE00")").as_string(), "\xF0\x9F\x98\x80");
  EXPECT_EQ(parse_ok(R"("\udbff\udfff")").as_string(), "\xF4\x8F\xBF\xBF");  // U+10FFFF
  std::string nul = parse_ok(R"("a\u0000b")").as_string();
  EXPECT_EQ(nul, std::string("a\0b", 3));
  EXPECT_EQ(parse_ok("\"\"").as_string(), "");
}

TEST(JsonTest, RejectsBadEscapes) {
  expect_error(R"("\uD83D")", "unpaired high surrogate");
  expect_error(R"("\uD83Dx")", "unpaired high surrogate");
  expect_error(R"("\uD83D\u0041")", "not followed by a low surrogate");
  expect_error(R"("\uDE00")", "unpaired low surrogate");
  expect_error(R"("\u12")", "\\u escape");
  expect_error(R"("\u12G4")", "invalid hex digit 'G'");
  expect_error(R"("\x41")", "invalid escape character 'x'");
  expect_error(R"("\')", "invalid escape character");
  expect_error("\"\\", "unterminated string");
}

TEST(JsonTest, RejectsRawControlCharactersAndUnterminatedStrings) {
  expect_error("\"a\nb\"", "unescaped control character byte 0x0a");
  expect_error(std::string_view("\"a\0b\"", 5), "unescaped control character byte 0x00");
  expect_error("\"abc", "at byte 0: unterminated string");
  expect_error("\"", "unterminated string");
}

TEST(JsonTest, RawUtf8InStrings) {
  EXPECT_EQ(parse_ok("\"\xC3\xA9\xE2\x82\xAC\xF0\x9F\x98\x80\"").as_string(), "\xC3\xA9\xE2\x82\xAC\xF0\x9F\x98\x80");
  EXPECT_EQ(parse_ok("\"\x7F\"").as_string(), "\x7F");  // DEL is not a control character in JSON
  const char* bad[] = {
      "\"\xC0\x80\"",          // overlong NUL
      "\"\xC1\xBF\"",          // overlong
      "\"\xE0\x80\xAF\"",      // overlong 3-byte
      "\"\xF0\x80\x80\xAF\"",  // overlong 4-byte
      "\"\xED\xA0\x80\"",      // UTF-16 surrogate encoded in UTF-8
      "\"\xF4\x90\x80\x80\"",  // above U+10FFFF
      "\"\x80\"",              // lone continuation byte
      "\"\xE2\x82\"",          // truncated sequence
      "\"\xE2\x82",            // truncated at end of input
      "\"\xFF\"",              // never valid
      "\"\xC3\x28\"",          // bad continuation
  };
  for (const char* text : bad) expect_error(text, "invalid UTF-8");
}

TEST(JsonTest, RejectsNonAsciiOutsideStrings) {
  expect_error("\xEF\xBB\xBF{}", "byte 0xef");  // a byte order mark is not JSON whitespace
  expect_error("{}\xC2\xA0", "after the top-level value");
}

TEST(JsonTest, ObjectsKeepSourceOrder) {
  Value v = parse_ok(R"({"b": 1, "a": [true, null], "c": {"d": "e"}})");
  ASSERT_TRUE(v.is_object());
  const auto& m = v.as_object();
  ASSERT_EQ(m.size(), 3u);
  EXPECT_EQ(m[0].first, "b");
  EXPECT_EQ(m[1].first, "a");
  EXPECT_EQ(m[2].first, "c");
  ASSERT_NE(v.find("a"), nullptr);
  ASSERT_TRUE(v.find("a")->is_array());
  EXPECT_EQ(v.find("a")->as_array().size(), 2u);
  EXPECT_TRUE(v.find("a")->as_array()[1].is_null());
  ASSERT_NE(v.find("c"), nullptr);
  EXPECT_EQ(v.find("c")->find("d")->as_string(), "e");
  EXPECT_EQ(v.find("z"), nullptr);
  EXPECT_EQ(parse_ok("{}").as_object().size(), 0u);
  EXPECT_EQ(parse_ok("[]").as_array().size(), 0u);
}

TEST(JsonTest, RejectsDuplicateKeys) {
  expect_error(R"({"a": 1, "b": 2, "a": 3})", "at byte 17: duplicate object key 'a'");
  // Same key after unescaping.
  expect_error(R"({"a": 1, "\u0061": 2})", "duplicate object key 'a'");
  // In nested objects too.
  expect_error(R"({"x": {"k": 1, "k": 1}})", "duplicate object key 'k'");
  // Control characters in the echoed key are made visible, not copied into the message.
  expect_error(R"({"a\n": 1, "a\n": 2})", "duplicate object key 'a\\n'");
  expect_error(R"({"\u001b[31m": 1, "\u001b[31m": 2})", "duplicate object key '\\u001b[31m'");
  // Keys equal up to a prefix are distinct.
  EXPECT_EQ(parse_ok(R"({"a": 1, "ab": 2, "": 3})").as_object().size(), 3u);
}

TEST(JsonTest, RejectsStructuralErrors) {
  expect_error("", "at byte 0: unexpected end of input, expected a value");
  expect_error("   ", "unexpected end of input");
  expect_error("[1,]", "at byte 3: unexpected ']'");
  expect_error("[1 2]", "expected ',' or ']'");
  expect_error("[1", "unexpected end of input in array");
  expect_error(R"({"a":1,})", "expected an object key");
  expect_error(R"({"a" 1})", "expected ':'");
  expect_error(R"({"a":})", "unexpected '}', expected a value");
  expect_error(R"({1:2})", "expected an object key");
  expect_error(R"({"a":1)", "unexpected end of input in object");
  expect_error(R"({"a":1 "b":2})", "expected ',' or '}'");
  expect_error("{}{}", "after the top-level value");
  expect_error("{} x", "at byte 3: unexpected 'x' after the top-level value");
  expect_error("{}\f", "byte 0x0c");  // form feed is not JSON whitespace
  expect_error(std::string_view("{}\0", 3), "byte 0x00");
}

TEST(JsonTest, AllowsJsonWhitespaceAround) {
  Value v = parse_ok(" \t\r\n{ \"a\" : [ 1 , 2 ] }  \n\t   ");
  ASSERT_TRUE(v.is_object());
  EXPECT_EQ(v.find("a")->as_array()[1].as_uint64(), std::optional<uint64_t>(2));
}

TEST(JsonTest, DepthLimit) {
  const auto nested = [](int n) { return std::string(n, '[') + std::string(n, ']'); };
  EXPECT_TRUE(parse_ok(nested(64)).is_array());
  expect_error(nested(65), "at byte 64: nesting deeper than 64 levels");
  ParseOptions opts;
  opts.max_depth = 2;
  expect_error(R"({"a":{"b":{}}})", "nesting deeper than 2 levels", opts);
  Value v;
  EXPECT_TRUE(parse(R"({"a":{"b":1}})", &v, opts).ok());
  // Far deeper than any stack could recurse: must fail cleanly, not overflow the stack.
  expect_error(std::string(1000000, '['), "nesting deeper than");
}

TEST(JsonTest, WrongKindAccessorsReturnEmpty) {
  Value n = parse_ok("5");
  EXPECT_EQ(n.as_string(), "");
  EXPECT_TRUE(n.as_array().empty());
  EXPECT_TRUE(n.as_object().empty());
  EXPECT_EQ(n.find("x"), nullptr);
  EXPECT_FALSE(n.as_bool());
  Value s = parse_ok("\"5\"");
  EXPECT_FALSE(s.as_uint64().has_value());
  EXPECT_EQ(s.number_text(), "");
  EXPECT_STREQ(kind_name(s.kind()), "string");
  EXPECT_STREQ(kind_name(Kind::kObject), "object");
}

TEST(JsonTest, FailedParseResetsOutput) {
  Value v = parse_ok("[1,2,3]");
  ASSERT_FALSE(parse("{", &v).ok());
  // parse() starts from a null value, so nothing of the earlier tree remains.
  EXPECT_FALSE(v.is_array());
}

TEST(JsonTest, IsValidUtf8) {
  EXPECT_TRUE(is_valid_utf8(""));
  EXPECT_TRUE(is_valid_utf8("plain ascii"));
  EXPECT_TRUE(is_valid_utf8("\xC3\xA9\xE2\x82\xAC\xF0\x9F\x98\x80\xF4\x8F\xBF\xBF"));
  EXPECT_TRUE(is_valid_utf8(std::string_view("\0", 1)));
  EXPECT_FALSE(is_valid_utf8("\xC0\x80"));
  EXPECT_FALSE(is_valid_utf8("\xED\xBF\xBF"));
  EXPECT_FALSE(is_valid_utf8("\xF4\x90\x80\x80"));
  EXPECT_FALSE(is_valid_utf8("\xF5\x80\x80\x80"));
  EXPECT_FALSE(is_valid_utf8("abc\xE2\x82"));
  EXPECT_FALSE(is_valid_utf8("\xBF"));
}

TEST(JsonTest, AppendQuotedRoundTrips) {
  std::string all;
  for (int c = 1; c < 0x80; ++c) all.push_back(static_cast<char>(c));
  all.push_back('\0');
  all += "\xC3\xA9\xF0\x9F\x98\x80";
  std::string quoted;
  append_quoted(&quoted, all);
  // Every byte below 0x20 is escaped; nothing raw that JSON forbids remains.
  for (char c : quoted) EXPECT_GE(static_cast<unsigned char>(c), 0x20);
  Value v = parse_ok(quoted);
  EXPECT_EQ(v.as_string(), all);

  std::string q;
  append_quoted(&q, "a\"b\\\n\x01");
  EXPECT_EQ(q, "\"a\\\"b\\\\\\n\\u0001\"");
}

TEST(JsonTest, AppendQuotedReplacesBytesThatAreNotUtf8) {
  std::string q;
  append_quoted(&q,
                "a\xFF"
                "b\xC3");
  EXPECT_EQ(q, "\"a\\ufffdb\\ufffd\"");
  EXPECT_EQ(parse_ok(q).as_string(),
            "a\xEF\xBF\xBD"
            "b\xEF\xBF\xBD");
  // One U+FFFD per maximal subpart, as Python's errors="replace": a sequence cut short is
  // one, C0 (always overlong) and a stray continuation byte one each, a surrogate's E0/ED
  // lead stops at the byte out of range.
  q.clear();
  append_quoted(&q,
                "\xE2\x82"
                "a\xC0\xAF\xF0\x9F\x98"
                "b\xED\xA0\x80");
  EXPECT_EQ(q, "\"\\ufffda\\ufffd\\ufffd\\ufffdb\\ufffd\\ufffd\\ufffd\"");
}

// The writer behind the `wharf` program's --json: always valid JSON, whatever the strings.
TEST(JsonWriterTest, NestedValuesParseBack) {
  Writer w;
  w.begin_array();
  w.begin_object().key("file").string("a.safetensors").key("error").null().end_object();
  w.begin_object().key("n").uint(18446744073709551615ull).key("i").sint(-3).key("x").number(0.25);
  w.key("inf").number(1.0 / 0.0).key("ok").boolean(true).key("t").begin_array().end_array();
  w.key("o").begin_object().end_object().end_object();
  w.end_array();
  ASSERT_TRUE(w.complete()) << w.text();
  EXPECT_EQ(w.text(),
            "[{\"file\": \"a.safetensors\", \"error\": null}, {\"n\": 18446744073709551615, \"i\": -3, "
            "\"x\": 0.25, \"inf\": null, \"ok\": true, \"t\": [], \"o\": {}}]");
  Value v = parse_ok(w.text());
  ASSERT_EQ(v.as_array().size(), 2u);
  EXPECT_EQ(v.as_array()[1].find("n")->as_uint64(), 18446744073709551615ull);
}

TEST(JsonWriterTest, AnyBytesGiveValidJsonAndNoRawControls) {
  // A name that is not UTF-8, C0/C1 controls, DEL, an ESC sequence, a bidi override.
  const std::string name = std::string(
                               "a\xFF\xC0\xAF"
                               "b\x1b[31m\n\"\\",
                               13) +
                           "\x7F\xC2\x9B\xE2\x80\xAE"
                           "c";
  Writer w;
  w.begin_object().key(name).string(name).end_object();
  ASSERT_TRUE(w.complete());
  for (char c : w.text()) EXPECT_TRUE(static_cast<unsigned char>(c) >= 0x20 && c != 0x7F) << w.text();
  EXPECT_EQ(w.text().find("\xC2\x9B"), std::string::npos);
  EXPECT_EQ(w.text().find("\xE2\x80\xAE"), std::string::npos);
  Value v = parse_ok(w.text());
  const std::string want =
      "a\xEF\xBF\xBD\xEF\xBF\xBD\xEF\xBF\xBD"
      "b\x1b[31m\n\"\\\x7F\xC2\x9B\xE2\x80\xAE"
      "c";
  ASSERT_EQ(v.as_object().size(), 1u);
  EXPECT_EQ(v.as_object()[0].first, want);
  EXPECT_EQ(v.as_object()[0].second.as_string(), want);
}

TEST(JsonWriterTest, MisuseIsRecordedNotWritten) {
  Writer value_without_key;
  value_without_key.begin_object().uint(1).end_object();
  EXPECT_FALSE(value_without_key.complete());
  Writer key_in_array;
  key_in_array.begin_array().key("k").end_array();
  EXPECT_FALSE(key_in_array.complete());
  Writer unmatched;
  unmatched.begin_array().end_object();
  EXPECT_FALSE(unmatched.complete());
  Writer two_values;
  two_values.uint(1).uint(2);
  EXPECT_FALSE(two_values.complete());
  Writer open;
  open.begin_array().uint(1);
  EXPECT_FALSE(open.complete());
  Writer incomplete_inside;
  incomplete_inside.begin_array().value(open).end_array();
  EXPECT_FALSE(incomplete_inside.complete());
  Writer nested;
  nested.begin_array().value(two_values).end_array();
  EXPECT_FALSE(nested.complete());
  Writer scalar;
  scalar.string("x");
  EXPECT_TRUE(scalar.complete());
  Writer outer;
  outer.begin_array().value(scalar).value(scalar).end_array();
  EXPECT_TRUE(outer.complete());
  EXPECT_EQ(outer.text(), "[\"x\", \"x\"]");
}

TEST(JsonTest, QuoteForMessage) {
  EXPECT_EQ(quote_for_message("layers.0.w"), "'layers.0.w'");
  // The escapes of wharf::quote_name (core/text.h), which this forwards to.
  EXPECT_EQ(quote_for_message(std::string_view("a\n\x1b[0m\x7f", 7)), "'a\\n\\u001b[0m\\u007f'");
  // Long input is cut, never inside a UTF-8 sequence.
  EXPECT_EQ(quote_for_message(std::string(300, 'x')), "'" + std::string(256, 'x') + "'... (300 bytes)");
  EXPECT_EQ(quote_for_message("ab\xC3\xA9"
                              "cd",
                              3),
            "'ab'... (6 bytes)");
  EXPECT_EQ(quote_for_message("ab\xC3\xA9"
                              "cd",
                              4),
            "'ab\xC3\xA9'... (6 bytes)");
  EXPECT_EQ(quote_for_message("abc", 3), "'abc'");
}

// --- Cursor ----------------------------------------------------------------------------------

TEST(JsonCursorTest, WalksADocumentAndSkipsWhatItDoesNotNeed) {
  Cursor c(R"( {"keep": [1, 2], "skip": {"x": [true, null, "s\u00e9", -1.5e3, {}]}, "s": "v"} )");
  Kind k;
  ASSERT_TRUE(c.peek(&k).ok());
  EXPECT_EQ(k, Kind::kObject);
  ASSERT_TRUE(c.begin_object().ok());
  bool more;
  std::string key;
  std::vector<uint64_t> kept;
  std::string s;
  for (;;) {
    ASSERT_TRUE(c.next_member(&more, &key).ok());
    if (!more) break;
    if (key == "keep") {
      ASSERT_TRUE(c.begin_array().ok());
      for (;;) {
        ASSERT_TRUE(c.next_element(&more).ok());
        if (!more) break;
        Number n;
        ASSERT_TRUE(c.read_number(&n).ok());
        kept.push_back(*n.as_uint64());
      }
    } else if (key == "s") {
      ASSERT_TRUE(c.read_string(&s).ok());
    } else {
      EXPECT_EQ(key, "skip");
      ASSERT_TRUE(c.skip_value().ok());
    }
  }
  EXPECT_TRUE(c.finish().ok());
  EXPECT_EQ(kept, (std::vector<uint64_t>{1, 2}));
  EXPECT_EQ(s, "v");
}

TEST(JsonCursorTest, SkipValueIsAsStrictAsReading) {
  const char* bad[] = {
      R"([1, {"a": 1, "a": 2}])",  // duplicate key inside a skipped value
      "[\"\\uD800\"]",             // lone surrogate
      "[\"\xC0\x80\"]",            // invalid UTF-8
      "[01]",                      // leading zero
      "[1,]",                      // trailing comma
      "[tru]",                     // bad literal
      "{\"a\":1",                  // unterminated
  };
  for (const char* text : bad) {
    Cursor c(text);
    Status st = c.skip_value();
    EXPECT_EQ(st.code(), Code::kDataCorrupt) << text;
  }
  const std::string nested = std::string(100, '[') + std::string(100, ']');
  Cursor deep(nested);
  Status st = deep.skip_value();
  EXPECT_NE(st.message().find("nesting deeper than 64 levels"), std::string::npos) << st.message();
}

TEST(JsonCursorTest, ReportsKindMismatchAndMisuse) {
  Cursor c("[5]");
  std::string s;
  Status st = c.read_string(&s);
  EXPECT_EQ(st.code(), Code::kDataCorrupt);
  EXPECT_EQ(st.message(), "at byte 0: expected a JSON string, found array");
  // Calling object functions inside an array is a caller bug, not corrupt data.
  ASSERT_TRUE(c.begin_array().ok());
  bool more;
  EXPECT_EQ(c.next_member(&more, nullptr).code(), Code::kInternal);
  EXPECT_EQ(c.finish().code(), Code::kInternal);  // the array is still open
  ASSERT_TRUE(c.next_element(&more).ok());
  ASSERT_TRUE(more);
  ASSERT_TRUE(c.skip_value().ok());
  ASSERT_TRUE(c.next_element(&more).ok());
  EXPECT_FALSE(more);
  EXPECT_TRUE(c.finish().ok());
  EXPECT_EQ(c.offset(), 3u);
}

// The cursor keeps a view of its text, so it must not be built from a temporary string.
static_assert(!std::is_constructible_v<Cursor, std::string>, "Cursor must refuse a temporary std::string");
static_assert(std::is_constructible_v<Cursor, const std::string&>, "Cursor views a named std::string");
static_assert(std::is_constructible_v<Cursor, const char*>, "Cursor views a C string");

TEST(JsonCursorTest, NumberTokenViewsTheInput) {
  const std::string text = "-12.5e+3";
  Cursor c(text);
  Number n;
  ASSERT_TRUE(c.read_number(&n).ok());
  EXPECT_EQ(n.text, text);
  EXPECT_EQ(n.text.data(), text.data());
  EXPECT_TRUE(n.negative);
  EXPECT_FALSE(n.integer);
  EXPECT_FALSE(n.as_uint64().has_value());
}

TEST(JsonCursorTest, CallerMayTakeOverDuplicateDetectionForOneObject) {
  const std::string text = R"({"a": {"k": 1}, "a": {"k": 1, "k": 2}})";
  Cursor c(text);
  ASSERT_TRUE(c.begin_object(/*check_duplicate_keys=*/false).ok());
  bool more;
  std::vector<std::string> keys;
  std::string key;
  Status st;
  for (;;) {
    st = c.next_member(&more, &key);
    if (!st.ok() || !more) break;
    keys.push_back(key);
    st = c.skip_value();  // nested objects are still checked
    if (!st.ok()) break;
  }
  EXPECT_EQ(keys, (std::vector<std::string>{"a", "a"}));  // the outer repeat is the caller's
  EXPECT_EQ(st.message(), "at byte 30: duplicate object key 'k'");
}

TEST(JsonCursorTest, DuplicateKeysAreScopedToTheirObject) {
  // The same key in sibling and nested objects is fine; frames are reused between siblings.
  Value v;
  Status st = parse(R"([{"a":1,"b":{"a":2}},{"a":3,"b":4}])", &v);
  EXPECT_TRUE(st.ok()) << st.message();
  st = parse(R"([{"a":1},{"b":1,"b":2}])", &v);
  EXPECT_NE(st.message().find("duplicate object key 'b'"), std::string::npos) << st.message();
}

}  // namespace
}  // namespace wharf::io::json

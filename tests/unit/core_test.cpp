// SPDX-License-Identifier: Apache-2.0
#include <gtest/gtest.h>

#include "core/dtype.h"
#include "core/env.h"
#include "core/logging.h"
#include "core/status.h"
#include "core/tensor.h"
#include "core/text.h"
#include "common/scoped_env.h"
#include "wharf/wharf.h"

#include <unistd.h>

#include <cstdint>
#include <cstring>
#include <map>
#include <optional>
#include <string>
#include <vector>

namespace wharf {
namespace {

TEST(Status, OkAndContext) {
  Status ok;
  EXPECT_TRUE(ok.ok());
  EXPECT_TRUE(ok.with_context("x").ok());
  Status e = NotFound("constant 'a'");
  EXPECT_EQ(e.code(), Code::kNotFound);
  Status c = e.with_context("loading 'f'");
  EXPECT_EQ(c.code(), Code::kNotFound);
  EXPECT_EQ(c.message(), "loading 'f': constant 'a'");
  EXPECT_STREQ(code_name(Code::kDataCorrupt), "DATA_CORRUPT");
}

TEST(DType, SizesAndNames) {
  const struct {
    DType d;
    size_t size;
    const char* name;
  } cases[] = {
      {DType::kF32, 4, "F32"}, {DType::kF16, 2, "F16"},        {DType::kBF16, 2, "BF16"},
      {DType::kF64, 8, "F64"}, {DType::kF8E4M3, 1, "F8_E4M3"}, {DType::kF8E5M2, 1, "F8_E5M2"},
      {DType::kI8, 1, "I8"},   {DType::kU8, 1, "U8"},          {DType::kI16, 2, "I16"},
      {DType::kI32, 4, "I32"}, {DType::kI64, 8, "I64"},        {DType::kBool, 1, "BOOL"},
  };
  for (const auto& c : cases) {
    EXPECT_EQ(dtype_size(c.d), c.size) << c.name;
    EXPECT_STREQ(dtype_name(c.d), c.name);
    ASSERT_TRUE(dtype_from_name(c.name).has_value());
    EXPECT_EQ(*dtype_from_name(c.name), c.d);
  }
  EXPECT_EQ(dtype_size(static_cast<DType>(99)), 0u);
  EXPECT_EQ(dtype_name(static_cast<DType>(-1)), nullptr);
  EXPECT_FALSE(dtype_from_name("f32").has_value());  // names are case-sensitive
}

TEST(TensorMeta, ValidateAndSizes) {
  TensorMeta m;
  m.dtype = DType::kBF16;
  m.shape = {4, 8};
  ASSERT_TRUE(m.validate("t").ok());
  EXPECT_EQ(m.numel(), 32u);
  EXPECT_EQ(m.nbytes(), 64u);
  EXPECT_TRUE(m.contiguous());
  m.strides = {8, 1};
  EXPECT_TRUE(m.contiguous());
  m.strides = {1, 4};  // transposed view
  EXPECT_FALSE(m.contiguous());
  EXPECT_EQ(m.extent_bytes(), uint64_t((3 * 1 + 7 * 4 + 1) * 2));

  TensorMeta scalar;
  EXPECT_TRUE(scalar.validate("s").ok());
  EXPECT_EQ(scalar.numel(), 1u);

  TensorMeta neg;
  neg.shape = {2, -1};
  Status st = neg.validate("constant 'x'");
  EXPECT_EQ(st.code(), Code::kInvalidArgument);
  EXPECT_NE(st.message().find("constant 'x'"), std::string::npos);
  EXPECT_NE(st.message().find("[2, -1]"), std::string::npos);

  TensorMeta huge;
  huge.shape = {int64_t(1) << 40, int64_t(1) << 40};
  EXPECT_EQ(huge.validate("h").code(), Code::kInvalidArgument);

  TensorMeta rank;
  rank.shape.assign(9, 1);
  EXPECT_EQ(rank.validate("r").code(), Code::kInvalidArgument);

  TensorMeta bad_strides;
  bad_strides.shape = {2, 2};
  bad_strides.strides = {1};
  EXPECT_EQ(bad_strides.validate("b").code(), Code::kInvalidArgument);
}

// Shapes with a zero dimension address no element, so any dimension may be huge (the validator
// checks only the byte size, 0). The contiguous strides are still defined, without signed
// overflow (UBSan aborted here): a stride whose exact value does not fit int64 saturates at
// INT64_MAX, and a zero-element view counts as contiguous whatever its strides.
TEST(TensorMeta, ZeroElementViewsWithHugeDimensionsHaveDefinedStrides) {
  TensorMeta m;
  m.dtype = DType::kF32;
  m.shape = {0, INT64_MAX, 4};
  ASSERT_TRUE(m.validate("z").ok());
  EXPECT_EQ(m.numel(), 0u);
  EXPECT_EQ(m.nbytes(), 0u);
  EXPECT_EQ(m.contiguous_strides(), (std::vector<int64_t>{INT64_MAX, 4, 1}));
  EXPECT_TRUE(m.contiguous());
  m.strides = {0, 4, 1};
  ASSERT_TRUE(m.validate("z").ok());
  EXPECT_TRUE(m.contiguous());
  EXPECT_EQ(m.extent_bytes(), 0u);

  m.shape = {INT64_MAX, INT64_MAX, 0};
  m.strides.clear();
  ASSERT_TRUE(m.validate("z").ok());
  EXPECT_EQ(m.contiguous_strides(), (std::vector<int64_t>{0, 0, 1}));
  m.shape = {3, INT64_MAX, INT64_MAX, 0, 2};
  EXPECT_EQ(m.contiguous_strides(), (std::vector<int64_t>{0, 0, 0, 2, 1}));
  m.shape = {0, int64_t(1) << 62, 2, 2};
  EXPECT_EQ(m.contiguous_strides(), (std::vector<int64_t>{INT64_MAX, 4, 2, 1}));

  // Zero elements: the layout is irrelevant, every stride vector describes the same (empty) view.
  m.shape = {2, 0, 3};
  m.strides = {1, 1, 1};
  ASSERT_TRUE(m.validate("z").ok());
  EXPECT_TRUE(m.contiguous());

  // Non-empty shapes keep the row-major strides.
  m.shape = {2, 3, 4};
  m.strides.clear();
  EXPECT_EQ(m.contiguous_strides(), (std::vector<int64_t>{12, 4, 1}));
  m.strides = {12, 4, 1};
  EXPECT_TRUE(m.contiguous());
  m.strides = {12, 1, 3};
  EXPECT_FALSE(m.contiguous());
  m.shape = {1, 3, 4};
  m.strides = {99, 4, 1};  // size-1 dimensions may carry any stride
  EXPECT_TRUE(m.contiguous());
}

// --- text: quoting and checking names --------------------------------------------------------

TEST(Text, QuoteNameEscapesJsonStyle) {
  EXPECT_EQ(quote_name(std::string("layers.0.w")), "'layers.0.w'");
  EXPECT_EQ(quote_name(std::string("layers.0\n")), "'layers.0\\n'");
  EXPECT_EQ(quote_name(std::string("")), "''");
  EXPECT_EQ(quote_name(std::string("a\r\t\b\fz")), "'a\\r\\t\\b\\fz'");
  EXPECT_EQ(quote_name(std::string("q'uo\"te\\")), "'q\\'uo\"te\\\\'");
  EXPECT_EQ(quote_name(std::string("\x1b[31mred\x7f")), "'\\u001b[31mred\\u007f'");
  EXPECT_EQ(quote_name(std::string("a\0b", 3)), "'a\\u0000b'");
  // Printable non-ASCII text is shown as is.
  EXPECT_EQ(quote_name(std::string("caf\xC3\xA9 \xE2\x82\xAC \xF0\x9F\x98\x80")),
            "'caf\xC3\xA9 \xE2\x82\xAC \xF0\x9F\x98\x80'");
  // C1 controls (U+009B is CSI to some terminals), separators and bidi controls are escaped.
  EXPECT_EQ(quote_name(std::string("\xC2\x9B"
                                   "31m\xC2\x85")),
            "'\\u009b31m\\u0085'");
  EXPECT_EQ(quote_name(std::string("a\xE2\x80\xA8"
                                   "b\xE2\x80\xAE"
                                   "c\xE2\x81\xA6"
                                   "d\xE2\x80\x8F")),
            "'a\\u2028b\\u202ec\\u2066d\\u200f'");
  // Bytes that are not UTF-8 are shown as \xNN, one by one.
  EXPECT_EQ(quote_name(std::string("a\xC0\xAF"
                                   "b")),
            "'a\\xc0\\xafb'");
  EXPECT_EQ(quote_name(std::string("\xED\xA0\x80")), "'\\xed\\xa0\\x80'");
  EXPECT_EQ(quote_name(std::string("x\xE2\x82")), "'x\\xe2\\x82'");
  EXPECT_EQ(quote_name(std::string("\xFF")), "'\\xff'");
  // Long names are cut at a character boundary and marked.
  EXPECT_EQ(quote_name(std::string(300, 'x')), "'" + std::string(kMaxQuotedNameBytes, 'x') + "'... (300 bytes)");
  EXPECT_EQ(quote_name("ab\xC3\xA9"
                       "cd",
                       3),
            "'ab'... (6 bytes)");
  EXPECT_EQ(quote_name("ab\xC3\xA9"
                       "cd",
                       4),
            "'ab\xC3\xA9'... (6 bytes)");
  EXPECT_EQ(quote_name("abc", 3), "'abc'");
  EXPECT_EQ(quote_path("/tmp/" + std::string(1000, 'p')), "'/tmp/" + std::string(1000, 'p') + "'");

  // Whatever goes in, what comes out is valid UTF-8 without a control character.
  std::string every;
  for (int b = 0; b < 256; ++b) every.push_back(static_cast<char>(b));
  const std::string q = quote_name(every, 1000);
  EXPECT_TRUE(valid_utf8(q));
  for (char c : q) {
    const auto u = static_cast<unsigned char>(c);
    EXPECT_FALSE(u < 0x20 || u == 0x7F) << int(u);
  }
}

TEST(Text, ValidUtf8IsStrict) {
  EXPECT_TRUE(valid_utf8(""));
  EXPECT_TRUE(valid_utf8("layers.0.weight"));
  EXPECT_TRUE(valid_utf8(std::string("a\0b", 3)));  // NUL is UTF-8; check_fqn refuses it
  EXPECT_TRUE(valid_utf8("\xC2\x80\xDF\xBF\xE0\xA0\x80\xED\x9F\xBF\xEE\x80\x80\xEF\xBF\xBF"));
  EXPECT_TRUE(valid_utf8("\xF0\x90\x80\x80\xF4\x8F\xBF\xBF"));  // U+10000, U+10FFFF
  const char* bad[] = {
      "\xC0\xAF",                  // overlong '/'
      "\xC1\xBF",                  // overlong
      "\xE0\x80\xAF",              // overlong 3-byte
      "\xE0\x9F\xBF",              // overlong below U+0800
      "\xF0\x80\x80\xAF",          // overlong 4-byte
      "\xF0\x8F\xBF\xBF",          // overlong below U+10000
      "\xED\xA0\x80",              // U+D800, high surrogate
      "\xED\xBF\xBF",              // U+DFFF, low surrogate
      "\xED\xA0\xBD\xED\xB8\x80",  // a surrogate pair spelled as two 3-byte forms (CESU-8)
      "\xF4\x90\x80\x80",          // U+110000
      "\xF5\x80\x80\x80",          // past U+10FFFF
      "\xF8\x88\x80\x80\x80",      // 5-byte form
      "\xFE",
      "\xFF",
      "\x80",  // lone continuation byte
      "a\xBF",
      "\xC2",          // truncated 2-byte
      "\xE2\x82",      // truncated 3-byte
      "\xF0\x9F\x98",  // truncated 4-byte
      "\xE2\x82"
      "a",  // continuation missing mid-string
      "\xC2\xC2\x80",
  };
  for (const char* b : bad) EXPECT_FALSE(valid_utf8(b)) << quote_name(std::string(b));
  EXPECT_FALSE(valid_utf8(std::string("ok\xE2\x82")));
  EXPECT_FALSE(valid_utf8(std::string_view("ok\xE2\x82", 5)));

  EXPECT_EQ(utf8_error_offset("abc"), 3u);
  EXPECT_EQ(utf8_error_offset("ab\xC0\xAF"), 2u);
  EXPECT_EQ(utf8_error_offset("\xC3\xA9\xE2\x82"), 2u);
}

TEST(Text, CheckFqn) {
  EXPECT_TRUE(check_fqn("constant", "layers.0.w").ok());
  EXPECT_TRUE(check_fqn("constant", "caf\xC3\xA9.\xF0\x9F\x98\x80").ok());
  EXPECT_TRUE(check_fqn("constant", "with space and 'quotes'").ok());

  Status st = check_fqn("constant", "");
  EXPECT_EQ(st.code(), Code::kInvalidArgument);
  EXPECT_EQ(st.message(), "constant: empty name");

  st = check_fqn("state", std::string("kv\0cache", 8));
  EXPECT_EQ(st.code(), Code::kInvalidArgument);
  EXPECT_EQ(st.message(), "state 'kv\\u0000cache': name contains a NUL byte (byte 2)");

  struct Case {
    std::string name, shown;
    size_t at;
  };
  const Case cases[] = {
      {"a\xC0\xAF", "'a\\xc0\\xaf'", 1},
      {"\xED\xA0\x80", "'\\xed\\xa0\\x80'", 0},
      {"x.\xF4\x90\x80\x80", "'x.\\xf4\\x90\\x80\\x80'", 2},
      {"w\xE2\x82", "'w\\xe2\\x82'", 1},
      {"w\xC3", "'w\\xc3'", 1},
  };
  for (const Case& c : cases) {
    st = check_fqn("container 'm': constant", c.name);
    EXPECT_EQ(st.code(), Code::kInvalidArgument);
    EXPECT_EQ(st.message(),
              "container 'm': constant " + c.shown + ": name is not valid UTF-8 (byte " + std::to_string(c.at) + ")");
  }
}

// core/env.h: unset or empty is "not set"; anything else must parse exactly, or the error
// names the variable, quotes its value (escaped) and says what is accepted.
TEST(Env, SwitchesParseExactlyOrNameTheVariable) {
  constexpr const char* kName = "WHARF_TEST_ENV_SWITCH";
  std::optional<uint64_t> n;
  std::optional<bool> b;
  std::optional<std::string> c;
  {
    wharf_test::ScopedEnv env(kName, nullptr);
    n = 5;
    ASSERT_TRUE(env_uint(kName, 0, 10, "KiB", &n).ok());
    EXPECT_FALSE(n.has_value()) << "unset: not set";
  }
  {
    wharf_test::ScopedEnv env(kName, "");
    ASSERT_TRUE(env_switch(kName, &b).ok());
    EXPECT_FALSE(b.has_value()) << "empty: not set";
  }
  for (const char* good : {"0", "10", "007"}) {
    wharf_test::ScopedEnv env(kName, good);
    Status st = env_uint(kName, 0, 10, "KiB", &n);
    ASSERT_TRUE(st.ok()) << good << ": " << st.message();
    EXPECT_EQ(*n, std::stoull(good));
  }
  for (const char* bad : {"11", "-1", "+1", " 1", "1 ", "0x1", "1k", "1.0", "99999999999999999999999"}) {
    wharf_test::ScopedEnv env(kName, bad);
    Status st = env_uint(kName, 0, 10, "KiB", &n);
    EXPECT_EQ(st.code(), Code::kInvalidArgument) << bad;
    EXPECT_EQ(st.message(), std::string(kName) + "=" + quote_name(bad) +
                                " in the environment: expected a whole number of KiB from 0 to 10");
  }
  {
    wharf_test::ScopedEnv env(kName, "1");
    ASSERT_TRUE(env_switch(kName, &b).ok());
    EXPECT_TRUE(*b);
  }
  for (const char* bad : {"true", "on", "01", "yes"}) {
    wharf_test::ScopedEnv env(kName, bad);
    Status st = env_switch(kName, &b);
    EXPECT_EQ(st.code(), Code::kInvalidArgument) << bad;
    EXPECT_NE(st.message().find("expected 0 (off) or 1 (on)"), std::string::npos) << st.message();
  }
  {
    wharf_test::ScopedEnv env(kName, "stream");
    ASSERT_TRUE(env_choice(kName, {"memcpy", "stream"}, &c).ok());
    EXPECT_EQ(*c, "stream");
  }
  {
    wharf_test::ScopedEnv env(kName, "str\neam");  // a newline: quoted escaped, never raw
    Status st = env_choice(kName, {"memcpy", "stream"}, &c);
    EXPECT_EQ(st.code(), Code::kInvalidArgument);
    EXPECT_EQ(st.message(), std::string(kName) + "='str\\neam' in the environment: expected memcpy or stream");
  }
}

// Logging has no caller to fail: an unknown WHARF_LOG_LEVEL is said on stderr, naming it,
// and logging stays at warn (it was silently warn).
TEST(Env, AnUnknownLogLevelIsSaidAndWarnApplies) {
  {
    wharf_test::ScopedEnv env("WHARF_LOG_LEVEL", "verbose");
    ::testing::internal::CaptureStderr();
    set_log_sink(nullptr, LogLevel::kWarn, nullptr);  // the default sink re-reads the variable
    const std::string err = ::testing::internal::GetCapturedStderr();
    EXPECT_NE(err.find("WHARF_LOG_LEVEL='verbose' in the environment is not debug, info, warn, error or off"),
              std::string::npos)
        << err;
    EXPECT_TRUE(log_enabled(LogLevel::kWarn));
    EXPECT_FALSE(log_enabled(LogLevel::kInfo));
  }
  {
    wharf_test::ScopedEnv env("WHARF_LOG_LEVEL", "error");
    ::testing::internal::CaptureStderr();
    set_log_sink(nullptr, LogLevel::kWarn, nullptr);
    EXPECT_EQ(::testing::internal::GetCapturedStderr(), "");
    EXPECT_FALSE(log_enabled(LogLevel::kWarn));
  }
  set_log_sink(nullptr, LogLevel::kWarn, nullptr);  // back to the process's own setting
}

// A WHARF_* variable nothing reads is named, with the known name closest to it: a typo in an
// A/B run (WHARF_SERVING_WINDOW for WHARF_SERVING_WINDOW_MS) would otherwise measure the
// default without a word.
TEST(Env, UnknownVariablesAreNamedWithTheClosestKnownOne) {
  wharf_test::ScopedEnv env({{"WHARF_SERVING_WINDOW", "100"},
                             {"WHARF_TRANSFER_CHUNK_KB", "512"},
                             {"WHARF_QQQQQQQQQQQQ", "1"},
                             {"WHARF_LOG_LEVEL", "warn"}});
  // The caller's own WHARF_* variables may be listed too: look only for these.
  std::map<std::string, std::string> got;
  for (const UnknownEnvVariable& u : unknown_env_variables()) got[u.name] = u.closest;
  const std::map<std::string, std::string> want = {{"WHARF_QQQQQQQQQQQQ", ""},
                                                   {"WHARF_SERVING_WINDOW", "WHARF_SERVING_WINDOW_MS"},
                                                   {"WHARF_TRANSFER_CHUNK_KB", "WHARF_TRANSFER_CHUNK_KIB"}};
  for (const auto& [name, closest] : want) {
    ASSERT_TRUE(got.count(name)) << name << " is not listed";
    EXPECT_EQ(got[name], closest) << name;
  }
  EXPECT_FALSE(got.count("WHARF_LOG_LEVEL")) << "a known name is not listed";
  for (const std::string& k : known_env_variables()) EXPECT_EQ(k.rfind("WHARF_", 0), 0u) << k;
}

// "Did you mean" suggests one name only when it is clearly the closest: nothing for a name far
// from every switch (a service's own setting) or equally close to several.
TEST(Env, NoSuggestionWhereNoKnownNameIsClearlyClosest) {
  const std::vector<const char*> far = {"WHARF_TRACE",    "WHARF_CONFIG", "WHARF_CUDA",          "WHARF_CACHE_DIR",
                                        "WHARF_DATA_DIR", "WHARF_AOTI",   "WHARF_MY_APP_CONFIG", "WHARF_HOME"};
  std::vector<std::pair<const char*, const char*>> vars;
  for (const char* n : far) vars.emplace_back(n, "1");
  wharf_test::ScopedEnv env(vars);
  std::map<std::string, std::string> got;
  for (const UnknownEnvVariable& u : unknown_env_variables()) got[u.name] = u.closest;
  for (const char* n : far) {
    EXPECT_TRUE(got.count(n)) << n;
    EXPECT_EQ(got[n], "") << n << " suggested " << got[n];
  }
}

// The first runtime of a process says so, once (two runtimes, one line: the pattern spans the
// whole output), on the log (a fresh process: the death test re-runs this binary).
TEST(Env, TheFirstRuntimeWarnsAboutUnknownVariables) {
  GTEST_FLAG_SET(death_test_style, "threadsafe");
  wharf_test::ScopedEnv env("WHARF_SERVING_WINDOW", "100");
  EXPECT_EXIT(
      {
        // Only this unknown name, whatever the caller's environment holds (WHARF_LOG_LEVEL=error
        // would hide the line, another unknown name add one).
        std::vector<std::string> set;
        for (char** e = environ; e && *e; ++e)
          if (std::strncmp(*e, "WHARF_", 6) == 0) set.emplace_back(*e, std::strcspn(*e, "="));
        for (const std::string& n : set) ::unsetenv(n.c_str());
        ::setenv("WHARF_SERVING_WINDOW", "100", 1);
        for (int i = 0; i < 2; ++i) {
          wharf_runtime_options o;
          wharf_runtime_options_init(&o);
          o.backend = WHARF_BACKEND_HOST;
          wharf_runtime* rt = nullptr;
          if (wharf_status* st = wharf_runtime_create(&o, &rt)) std::_Exit(2 + 0 * (wharf_status_free(st), 0));
          wharf_runtime_free(rt);
        }
        std::_Exit(0);
      },
      ::testing::ExitedWithCode(0),
      "^\\[wharf warn\\] 'WHARF_SERVING_WINDOW' is set in the environment but Wharf reads no such variable; did you "
      "mean "
      "WHARF_SERVING_WINDOW_MS\\? \\(docs/environment.md lists them\\)\n$");
}

}  // namespace
}  // namespace wharf

// SPDX-License-Identifier: Apache-2.0
// Conformance of the safetensors reader and writer with the format as the reference
// implementation (the `safetensors` crate: read_metadata, Metadata::validate, Dtype::bitsize,
// serialize) defines it. Every file here is built byte by byte from the format's rules, not
// by Wharf's writer: an 8-byte little-endian header length N, N bytes of JSON, the data.
//
// Rules, one test (or one row) each:
//  - header length: below 8 bytes, N > 100,000,000 (decimal), N past the end: refused; N of
//    exactly 100,000,000: accepted.
//  - data section, sorted by (begin, end): the first tensor at 0, each next one where the
//    previous ended, the last ending at the end of the file: no hole, no overlap, no trailing
//    byte; a zero-size tensor only at a boundary (start, between two tensors, end).
//  - element count folded left to right, refusing the first overflow ([2^32, 2^32, 0] is
//    refused, [0, 2^32, 2^32] accepted); bit size numel * bits without overflow; a multiple
//    of 8; byte range exactly bits / 8.
//  - the 22 dtypes with the reference's bit sizes; sub-byte ones packed.
//  - "__metadata__": an object of strings, or null.
//  - valid files Wharf cannot hold: UNSUPPORTED, and only when nothing is corrupt.
//  - writer: the reference's order (dtype alignment rank descending, then name), every tensor
//    naturally aligned, header padded with spaces to 8, byte for byte the reference's layout;
//    header limit 100,000,000 as the reader's.
//  - files written by the reference itself (the `safetensors` package 0.8.0, committed in
//    tests/data/safetensors/ with the script that made them): read back exactly, and Wharf's
//    writer reproduces them byte for byte.

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <gtest/gtest.h>

#include <algorithm>
#include <atomic>
#include <cstring>
#include <fstream>
#include <optional>
#include <sstream>
#include <string>
#include <vector>

#include "common/test_paths.h"
#include "constants/constant_map.h"
#include "core/dtype.h"
#include "io/json.h"
#include "io/safetensors.h"
#include "wharf/wharf.h"

namespace wharf::io {
namespace {

std::string le64(uint64_t n) {
  std::string s(8, '\0');
  for (int i = 0; i < 8; ++i) s[i] = static_cast<char>((n >> (8 * i)) & 0xFF);
  return s;
}

// length prefix + header exactly as given + data
std::string image(const std::string& header, const std::string& data = "") {
  return le64(header.size()) + header + data;
}

std::string tensor_json(const std::string& name, const std::string& dtype, const std::string& shape, uint64_t begin,
                        uint64_t end) {
  return "\"" + name + "\":{\"dtype\":\"" + dtype + "\",\"shape\":" + shape + ",\"data_offsets\":[" +
         std::to_string(begin) + "," + std::to_string(end) + "]}";
}

Status parse(const std::string& bytes, std::unique_ptr<SafetensorsFile>* f) {
  return SafetensorsFile::parse(bytes.data(), bytes.size(), f);
}
Status parse(const std::string& bytes) {
  std::unique_ptr<SafetensorsFile> f;
  return parse(bytes, &f);
}

#define EXPECT_CODE(expr, want, fragment)                                \
  do {                                                                   \
    const Status st_ = (expr);                                           \
    EXPECT_EQ(st_.code(), (want)) << st_.message();                      \
    EXPECT_NE(st_.message().find(fragment), std::string::npos)           \
        << "message: " << st_.message() << "\nexpected: " << (fragment); \
  } while (0)

// --- header length ---------------------------------------------------------------------------

TEST(SafetensorsConformance, HeaderLengthLimitIsExactly100000000Bytes) {
  // A header of exactly the limit (a valid header padded with spaces) is accepted...
  const uint64_t limit = 100000000;
  ASSERT_EQ(kMaxSafetensorsHeaderBytes, limit);
  std::string header = "{" + tensor_json("w", "U8", "[2]", 0, 2) + "}";
  header.resize(limit, ' ');
  const std::string bytes = image(header, "ab");  // parse() views the bytes: keep them
  std::unique_ptr<SafetensorsFile> f;
  Status st = parse(bytes, &f);
  ASSERT_TRUE(st.ok()) << st.message();
  EXPECT_EQ(f->header_size(), limit);
  EXPECT_EQ(std::memcmp(f->find("w")->data, "ab", 2), 0);
  // ... one byte more is not, whatever follows.
  header.push_back(' ');
  EXPECT_CODE(parse(image(header, "ab")), Code::kDataCorrupt,
              "header length 100000001 exceeds the limit of 100000000 bytes");
  // The limit is checked before the length is compared with the file (no allocation from it).
  EXPECT_CODE(parse(le64(limit + 1) + "{}"), Code::kDataCorrupt, "exceeds the limit of 100000000 bytes");
  EXPECT_CODE(parse(le64(limit) + "{}"), Code::kDataCorrupt, "header length 100000000 runs past the end of the file");
}

TEST(SafetensorsConformance, FilesShorterThanTheLengthPrefixAreRefused) {
  for (size_t n = 0; n < 8; ++n)
    EXPECT_CODE(parse(std::string(n, '\0')), Code::kDataCorrupt, "too short for the 8-byte header length");
  EXPECT_CODE(parse(le64(3) + "{}"), Code::kDataCorrupt, "header length 3 runs past the end of the file (10 bytes)");
}

// --- the data section is covered exactly -----------------------------------------------------

struct Layout {
  const char* label;
  std::vector<std::string> tensors;  // header entries, in header order
  size_t data_bytes;
  bool valid;
  const char* fragment;  // what the refusal says
};

TEST(SafetensorsConformance, TensorsTileTheDataSectionExactly) {
  const std::vector<Layout> layouts = {
      {"one tensor", {tensor_json("a", "F32", "[2]", 0, 8)}, 8, true, ""},
      {"two, header order reversed",
       {tensor_json("b", "U8", "[4]", 8, 12), tensor_json("a", "F32", "[2]", 0, 8)},
       12,
       true,
       ""},
      {"zero-size first, between and last",
       {tensor_json("z0", "F32", "[0]", 0, 0), tensor_json("a", "F32", "[1]", 0, 4),
        tensor_json("z1", "I64", "[0,9]", 4, 4), tensor_json("b", "U8", "[2]", 4, 6),
        tensor_json("z2", "BOOL", "[3,0]", 6, 6)},
       6,
       true,
       ""},
      {"two zero-size tensors at one offset",
       {tensor_json("a", "U8", "[1]", 0, 1), tensor_json("y", "U8", "[0]", 1, 1), tensor_json("z", "U8", "[0]", 1, 1)},
       1,
       true,
       ""},
      {"only zero-size tensors, no data",
       {tensor_json("y", "U8", "[0]", 0, 0), tensor_json("z", "F64", "[0]", 0, 0)},
       0,
       true,
       ""},
      {"no tensor, no data", {}, 0, true, ""},
      {"first tensor at 1",
       {tensor_json("a", "U8", "[3]", 1, 4)},
       4,
       false,
       "tensor 'a': data_offsets [1, 4]: the first tensor must begin at offset 0 of the data section; bytes [0, 1)"},
      {"only a zero-size tensor past 0",
       {tensor_json("z", "U8", "[0]", 2, 2)},
       2,
       false,
       "the first tensor must begin at offset 0"},
      {"a hole of one byte",
       {tensor_json("a", "U8", "[2]", 0, 2), tensor_json("b", "U8", "[2]", 3, 5)},
       5,
       false,
       "tensor 'b': data_offsets [3, 5] leave a hole after tensor 'a' data_offsets [0, 2]: bytes [2, 3) belong to no "
       "tensor"},
      {"a hole after a zero-size tensor",
       {tensor_json("a", "U8", "[2]", 0, 2), tensor_json("z", "U8", "[0]", 2, 2), tensor_json("b", "U8", "[2]", 4, 6)},
       6,
       false,
       "tensor 'b': data_offsets [4, 6] leave a hole after tensor 'z' data_offsets [2, 2]: bytes [2, 4)"},
      {"one trailing byte",
       {tensor_json("a", "U8", "[2]", 0, 2)},
       3,
       false,
       "tensor 'a': data_offsets [0, 2] end the last tensor at 2 but the data section has 3 bytes: bytes [2, 3) belong "
       "to no tensor"},
      {"a polyglot payload after the tensors",
       {tensor_json("a", "F32", "[1]", 0, 4)},
       4 + 4096,
       false,
       "bytes [4, 4100) belong to no tensor"},
      {"no tensor but data", {}, 1, false, "the header declares no tensor but the data section has 1 bytes"},
      {"overlap by one byte",
       {tensor_json("a", "U8", "[3]", 0, 3), tensor_json("b", "U8", "[3]", 2, 5)},
       5,
       false,
       "tensor 'a': data_offsets [0, 3] overlap tensor 'b' data_offsets [2, 5]"},
      {"identical ranges",
       {tensor_json("a", "F32", "[1]", 0, 4), tensor_json("b", "I32", "[1]", 0, 4)},
       4,
       false,
       "tensor 'a': data_offsets [0, 4] overlap tensor 'b' data_offsets [0, 4]"},
      {"one inside another",
       {tensor_json("big", "U8", "[8]", 0, 8), tensor_json("small", "U8", "[2]", 3, 5)},
       8,
       false,
       "tensor 'big': data_offsets [0, 8] overlap tensor 'small' data_offsets [3, 5]"},
      {"zero-size strictly inside",
       {tensor_json("big", "U8", "[8]", 0, 8), tensor_json("z", "F32", "[0]", 3, 3)},
       8,
       false,
       "tensor 'big': data_offsets [0, 8] contain zero-size tensor 'z' data_offsets [3, 3]"},
      {"zero-size inside, listed first",
       {tensor_json("z", "U8", "[0]", 1, 1), tensor_json("big", "U8", "[2]", 0, 2)},
       2,
       false,
       "contain zero-size tensor 'z'"},
  };
  for (const Layout& l : layouts) {
    SCOPED_TRACE(l.label);
    std::string header = "{";
    for (size_t i = 0; i < l.tensors.size(); ++i) header += (i ? "," : "") + l.tensors[i];
    header += "}";
    std::string data(l.data_bytes, '\x5a');
    std::unique_ptr<SafetensorsFile> f;
    Status st = parse(image(header, data), &f);
    if (l.valid) {
      ASSERT_TRUE(st.ok()) << st.message();
      EXPECT_EQ(f->tensors().size(), l.tensors.size());
      EXPECT_EQ(f->data_size(), l.data_bytes);
    } else {
      EXPECT_CODE(st, Code::kDataCorrupt, l.fragment);
      EXPECT_EQ(f, nullptr);
    }
  }
}

// --- shapes, bit sizes, dtypes ---------------------------------------------------------------

// The reference's Dtype::bitsize, by name: the 22 dtypes of the format.
struct RefDtype {
  const char* name;
  size_t bits;
};
const std::vector<RefDtype>& reference_dtypes() {
  static const std::vector<RefDtype> v = {
      {"BOOL", 8},    {"F4", 4},      {"F6_E2M3", 6}, {"F6_E3M2", 6},     {"U8", 8},          {"I8", 8},
      {"F8_E5M2", 8}, {"F8_E4M3", 8}, {"F8_E8M0", 8}, {"F8_E4M3FNUZ", 8}, {"F8_E5M2FNUZ", 8}, {"I16", 16},
      {"U16", 16},    {"F16", 16},    {"BF16", 16},   {"I32", 32},        {"U32", 32},        {"F32", 32},
      {"C64", 64},    {"F64", 64},    {"I64", 64},    {"U64", 64},
  };
  return v;
}

TEST(SafetensorsConformance, EveryReferenceDtypeIsKnownWithItsBitSizeAndOrder) {
  ASSERT_EQ(reference_dtypes().size(), 22u);
  ASSERT_EQ(kNumDTypes, 22);
  for (size_t rank = 0; rank < reference_dtypes().size(); ++rank) {
    const RefDtype& r = reference_dtypes()[rank];
    SCOPED_TRACE(r.name);
    const std::optional<DType> d = dtype_from_name(r.name);
    ASSERT_TRUE(d.has_value());
    EXPECT_STREQ(dtype_name(*d), r.name);
    EXPECT_EQ(dtype_bits(*d), r.bits);
    EXPECT_EQ(dtype_size(*d), r.bits / 8);  // 0 for the sub-byte dtypes, as the reference's size()
    EXPECT_EQ(dtype_sub_byte(*d), r.bits % 8 != 0);
    EXPECT_EQ(dtype_safetensors_rank(*d), static_cast<int>(rank));  // the reference enum's order
    // The C API agrees.
    wharf_dtype c;
    wharf_status* st = wharf_dtype_from_name(r.name, &c);
    ASSERT_EQ(st, nullptr);
    EXPECT_EQ(static_cast<int>(c), static_cast<int>(*d));
    EXPECT_EQ(wharf_dtype_bits(c), r.bits);
    EXPECT_EQ(wharf_dtype_size(c), r.bits / 8);
    EXPECT_STREQ(wharf_dtype_name(c), r.name);
  }
  // Values are the appended enum's.
  EXPECT_EQ(static_cast<int>(WHARF_DTYPE_BOOL), 11);
  EXPECT_EQ(static_cast<int>(WHARF_DTYPE_U16), 12);
  EXPECT_EQ(static_cast<int>(WHARF_DTYPE_F6_E3M2), 21);
  EXPECT_EQ(wharf_dtype_bits(static_cast<wharf_dtype>(22)), 0u);
  EXPECT_EQ(wharf_dtype_bits(static_cast<wharf_dtype>(-1)), 0u);
  EXPECT_EQ(wharf_dtype_name(static_cast<wharf_dtype>(22)), nullptr);
}

// A file of one tensor of every dtype (8 elements each: whole bytes for every bit size), laid
// out in the reference's order, loads with each dtype, shape and byte range, bytes intact.
TEST(SafetensorsConformance, EveryDtypeLoadsFromAFileBuiltByteByByte) {
  std::string header = "{";
  std::string data;
  std::vector<std::pair<std::string, std::string>> expected;  // name, bytes
  const auto& dts = reference_dtypes();
  for (size_t k = dts.size(); k-- > 0;) {  // descending rank: naturally aligned
    const RefDtype& r = dts[k];
    const size_t bytes = 8 * r.bits / 8;
    std::string b;
    for (size_t i = 0; i < bytes; ++i) b.push_back(static_cast<char>(k * 16 + i));
    const std::string name = std::string("t.") + r.name;
    if (header.size() > 1) header += ",";
    header += tensor_json(name, r.name, "[2,4]", data.size(), data.size() + bytes);
    data += b;
    expected.push_back({name, b});
  }
  header += "}";
  header.resize((header.size() + 7) / 8 * 8, ' ');
  const std::string bytes = image(header, data);  // parse() views the bytes: keep them
  std::unique_ptr<SafetensorsFile> f;
  Status st = parse(bytes, &f);
  ASSERT_TRUE(st.ok()) << st.message();
  ASSERT_EQ(f->tensors().size(), 22u);
  for (const auto& [name, b] : expected) {
    SCOPED_TRACE(name);
    const SafetensorsTensor* t = f->find(name);
    ASSERT_NE(t, nullptr);
    EXPECT_STREQ(dtype_name(t->dtype), name.c_str() + 2);
    EXPECT_EQ(t->shape, (std::vector<int64_t>{2, 4}));
    EXPECT_EQ(t->end - t->begin, b.size());
    EXPECT_EQ(std::memcmp(t->data, b.data(), b.size()), 0);
    // The map built from it carries the packed size.
    TensorMeta m;
    m.dtype = t->dtype;
    m.shape = t->shape;
    ASSERT_TRUE(m.validate(name).ok());
    EXPECT_EQ(m.nbytes(), b.size());
  }
}

TEST(SafetensorsConformance, SubByteTensorsMustBeWholeBytes) {
  struct Case {
    const char* dtype;
    const char* shape;
    uint64_t bytes;
    bool valid;
    const char* fragment;
  };
  const Case cases[] = {
      {"F4", "[]", 1, false, "shape [] of F4 is 4 bits, not a whole number of bytes"},
      {"F4", "[1]", 1, false, "shape [1] of F4 is 4 bits"},
      {"F4", "[3]", 2, false, "shape [3] of F4 is 12 bits"},
      {"F4", "[2]", 1, true, ""},
      {"F4", "[3,2]", 3, true, ""},
      {"F4", "[4]", 1, false, "cover 1 bytes but shape [4] of F4 needs 2"},  // not rounded: exact
      {"F4", "[0]", 0, true, ""},
      {"F6_E2M3", "[1]", 1, false, "shape [1] of F6_E2M3 is 6 bits"},
      {"F6_E2M3", "[2]", 2, false, "12 bits"},
      {"F6_E2M3", "[3]", 3, false, "18 bits"},
      {"F6_E2M3", "[4]", 3, true, ""},
      {"F6_E3M2", "[2,2]", 3, true, ""},
      {"F6_E3M2", "[8]", 6, true, ""},
      {"F6_E3M2", "[8]", 8, false, "cover 8 bytes but shape [8] of F6_E3M2 needs 6"},
      // The bit size must fit in 64 bits: 2^62 F4 elements are 2^64 bits.
      {"F4", "[4611686018427387904]", 0, false, "bit size of shape [4611686018427387904] of F4 overflows 64 bits"},
      // A whole-byte dtype too: the reference computes bits (2^61 F32 elements are 2^66 bits).
      {"F32", "[2305843009213693952]", 0, false, "bit size of shape [2305843009213693952] of F32 overflows 64 bits"},
  };
  for (const Case& c : cases) {
    SCOPED_TRACE(std::string(c.dtype) + " " + c.shape);
    const std::string bytes =
        image("{" + tensor_json("w", c.dtype, c.shape, 0, c.bytes) + "}", std::string(c.bytes, 'q'));
    std::unique_ptr<SafetensorsFile> f;
    Status st = parse(bytes, &f);
    if (c.valid) {
      ASSERT_TRUE(st.ok()) << st.message();
      EXPECT_EQ(f->find("w")->end, c.bytes);
    } else {
      EXPECT_CODE(st, Code::kDataCorrupt, c.fragment);
    }
  }
}

TEST(SafetensorsConformance, ElementCountIsFoldedLeftToRightAsTheReferenceDoes) {
  struct Case {
    const char* shape;
    bool valid;
  };
  const Case cases[] = {
      {"[0,4294967296,4294967296]", true},   // 0 first: never overflows
      {"[4294967296,0,4294967296]", true},   // 2^32, then 0
      {"[4294967296,4294967296,0]", false},  // 2^64 overflows before the 0
      {"[18446744073709551615,0]", false},   // fits, then 0... but see below: Wharf cannot hold the dim
      {"[4294967295,4294967297,0]", true},   // 2^64 - 1 fits exactly, then 0
      {"[4294967296,4294967296]", false},
  };
  for (const Case& c : cases) {
    SCOPED_TRACE(c.shape);
    Status st = parse(image("{" + tensor_json("w", "U8", c.shape, 0, 0) + "}"));
    if (std::string(c.shape) == "[18446744073709551615,0]") {
      // Valid for the reference (usize dims), but past INT64_MAX: Wharf cannot hold it.
      EXPECT_CODE(st, Code::kUnsupported, "shape[0] is 18446744073709551615, larger than 9223372036854775807");
    } else if (c.valid) {
      EXPECT_TRUE(st.ok()) << st.message();
    } else {
      EXPECT_CODE(st, Code::kDataCorrupt, "element count of shape");
    }
  }
}

// --- metadata --------------------------------------------------------------------------------

TEST(SafetensorsConformance, MetadataIsAnObjectOfStringsOrNull) {
  std::unique_ptr<SafetensorsFile> f;
  // null: no metadata (the reference reads an Option).
  ASSERT_TRUE(parse(image(R"({"__metadata__":null,)" + tensor_json("w", "U8", "[1]", 0, 1) + "}", "x"), &f).ok());
  EXPECT_TRUE(f->metadata().empty());
  // Anywhere in the header, in header order, empty strings allowed.
  ASSERT_TRUE(
      parse(image("{" + tensor_json("w", "U8", "[1]", 0, 1) + R"(,"__metadata__":{"b":"2","a":"","":"x"}})", "x"), &f)
          .ok());
  EXPECT_EQ(f->metadata(), (std::vector<std::pair<std::string, std::string>>{{"b", "2"}, {"a", ""}, {"", "x"}}));
  EXPECT_CODE(parse(image(R"({"__metadata__":{"k":1}})")), Code::kDataCorrupt,
              "has a JSON number value, expected a string");
  EXPECT_CODE(parse(image(R"({"__metadata__":{"k":null}})")), Code::kDataCorrupt, "has a JSON null value");
  EXPECT_CODE(parse(image(R"({"__metadata__":[]})")), Code::kDataCorrupt, "__metadata__ is a JSON array");
  EXPECT_CODE(parse(image(R"({"__metadata__":true})")), Code::kDataCorrupt, "__metadata__ is a JSON boolean");
}

// --- valid files Wharf cannot hold -----------------------------------------------------------

TEST(SafetensorsConformance, ValidFilesWharfCannotHoldAreUnsupportedNotCorrupt) {
  struct Case {
    const char* label;
    std::string header;
    std::string data;
    std::string fragment;
  };
  const std::vector<Case> cases = {
      {"unknown dtype name", "{" + tensor_json("w", "X9", "[4]", 0, 4) + "}", "abcd",
       "tensor 'w': unknown dtype 'X9' (not one of the 22 safetensors dtypes this version of Wharf knows)"},
      {"lower-case dtype name", "{" + tensor_json("w", "f32", "[1]", 0, 4) + "}", "abcd", "unknown dtype 'f32'"},
      {"nine dimensions", "{" + tensor_json("w", "U8", "[1,1,1,1,1,1,1,1,2]", 0, 2) + "}", "ab",
       "tensor 'w': shape has more than 8 dimensions, at most 8 supported"},
      {"a dimension past INT64_MAX", "{" + tensor_json("w", "F16", "[9223372036854775808,0]", 0, 0) + "}", "",
       "shape[0] is 9223372036854775808, larger than 9223372036854775807"},
      {"an empty name", "{" + tensor_json("", "U8", "[1]", 0, 1) + "}", "a", "tensor with an empty name"},
      {"NUL in a name", "{" + tensor_json("a\\u0000b", "U8", "[1]", 0, 1) + "}", "a",
       "tensor 'a\\u0000b': name contains a NUL byte (byte 1)"},
      {"NUL in metadata", R"({"__metadata__":{"k":"v\u0000"}})", "", "__metadata__ key 'k': value contains a NUL byte"},
  };
  for (const Case& c : cases) {
    SCOPED_TRACE(c.label);
    std::unique_ptr<SafetensorsFile> f;
    EXPECT_CODE(parse(image(c.header, c.data), &f), Code::kUnsupported, c.fragment);
    EXPECT_EQ(f, nullptr);
  }
  // Corruption wins: the same entries in a file that also breaks a rule are DATA_CORRUPT.
  EXPECT_CODE(parse(image("{" + tensor_json("w", "X9", "[4]", 0, 4) + "}", "abcdXX")), Code::kDataCorrupt,
              "bytes [4, 6) belong to no tensor");
  EXPECT_CODE(
      parse(image("{" + tensor_json("", "U8", "[1]", 0, 1) + "," + tensor_json("b", "U8", "[1]", 2, 3) + "}", "abc")),
      Code::kDataCorrupt, "leave a hole");
  EXPECT_CODE(parse(image("{" + tensor_json("w", "U8", "[1,1,1,1,1,1,1,1,2]", 0, 3) + "}", "abc")), Code::kDataCorrupt,
              "cover 3 bytes but shape [1, 1, 1, 1, 1, 1, 1, 1, ... (9 dimensions)] of U8 needs 2");
}

// --- writer ----------------------------------------------------------------------------------

class SafetensorsWriterConformance : public ::testing::Test {
 protected:
  void SetUp() override {
    static std::atomic<int> counter{0};
    dir_ = ::testing::TempDir() + "wharf_stconf_" + std::to_string(::getpid()) + "_" + std::to_string(counter++);
    ASSERT_EQ(::mkdir(dir_.c_str(), 0755), 0);
  }
  void TearDown() override {
    for (const std::string& f : files_) ::unlink(f.c_str());
    ::rmdir(dir_.c_str());
  }
  std::string path(const std::string& name) {
    files_.push_back(dir_ + "/" + name);
    return files_.back();
  }
  static std::string slurp(const std::string& p) {
    std::ifstream f(p, std::ios::binary);
    std::stringstream ss;
    ss << f.rdbuf();
    return ss.str();
  }
  std::string dir_;
  std::vector<std::string> files_;
};

TensorMeta meta(DType dt, std::vector<int64_t> shape) {
  TensorMeta m;
  m.dtype = dt;
  m.shape = std::move(shape);
  return m;
}

// The reference's serialize(): sort by dtype (descending enum order) then name; header
// {"name":{"dtype":..,"shape":[..],"data_offsets":[b,e]},...} without spaces, padded with
// spaces to a multiple of 8; data in the same order. Built here by hand.
TEST_F(SafetensorsWriterConformance, WritesTheReferencesBytes) {
  const uint8_t b1 = 1, f4[2] = {0x21, 0x43}, f6[3] = {7, 8, 9};
  const uint16_t h = 0x3c00, u16[2] = {1, 2};
  const float f = 1.0f;
  const double d = 2.0;
  const uint64_t u64 = 5;
  std::vector<TensorToWrite> in = {
      {"z.bool", meta(DType::kBool, {1}), &b1}, {"a.f4", meta(DType::kF4, {4}), f4},
      {"m.f16", meta(DType::kF16, {}), &h},     {"c.u16", meta(DType::kU16, {2}), u16},
      {"b.f32", meta(DType::kF32, {1, 1}), &f}, {"a.f32", meta(DType::kF32, {1}), &f},
      {"y.f64", meta(DType::kF64, {1}), &d},    {"x.u64", meta(DType::kU64, {1}), &u64},
      {"q.f6", meta(DType::kF6E3M2, {4}), f6},
  };
  const std::string p = path("ref.safetensors");
  ASSERT_TRUE(write_safetensors(p, in, {}).ok());

  // Expected order: U64(21) F64(19) F32(17: a, b) F16(13) U16(12) F6_E3M2(3) F4(1) BOOL(0).
  std::string header =
      "{" + tensor_json("x.u64", "U64", "[1]", 0, 8) + "," + tensor_json("y.f64", "F64", "[1]", 8, 16) + "," +
      tensor_json("a.f32", "F32", "[1]", 16, 20) + "," + tensor_json("b.f32", "F32", "[1,1]", 20, 24) + "," +
      tensor_json("m.f16", "F16", "[]", 24, 26) + "," + tensor_json("c.u16", "U16", "[2]", 26, 30) + "," +
      tensor_json("q.f6", "F6_E3M2", "[4]", 30, 33) + "," + tensor_json("a.f4", "F4", "[4]", 33, 35) + "," +
      tensor_json("z.bool", "BOOL", "[1]", 35, 36) + "}";
  header.resize((header.size() + 7) / 8 * 8, ' ');
  std::string data;
  const auto put = [&](const void* p, size_t n) { data.append(static_cast<const char*>(p), n); };
  put(&u64, 8), put(&d, 8), put(&f, 4), put(&f, 4), put(&h, 2), put(u16, 4), put(f6, 3), put(f4, 2), put(&b1, 1);
  EXPECT_EQ(slurp(p), image(header, data));
}

TEST_F(SafetensorsWriterConformance, EveryTensorIsNaturallyAlignedWhateverTheGivenOrder) {
  // Odd-sized byte tensors given first would misalign everything after them in the given order.
  std::vector<std::vector<uint8_t>> storage;
  std::vector<TensorToWrite> in;
  for (int d = 0; d < kNumDTypes; ++d) {
    for (int64_t n : {1, 3, 8}) {
      const DType dt = static_cast<DType>(d);
      TensorMeta m = meta(dt, {dtype_sub_byte(dt) ? 8 * n : n});
      storage.emplace_back(m.nbytes(), static_cast<uint8_t>(d));
      in.push_back({std::string(dtype_name(dt)) + "." + std::to_string(n), m, storage.back().data()});
    }
  }
  std::reverse(in.begin(), in.end());
  const std::string p = path("aligned.safetensors");
  ASSERT_TRUE(write_safetensors(p, in, {{"format", "pt"}}).ok());
  std::unique_ptr<SafetensorsFile> f;
  ASSERT_TRUE(SafetensorsFile::open(p, &f).ok());
  EXPECT_EQ((8 + f->header_size()) % 8, 0u);
  int last_rank = 1000;
  std::string last_name;
  for (const SafetensorsTensor& t : f->tensors()) {
    SCOPED_TRACE(t.name);
    const size_t align = dtype_bits(t.dtype) >= 8 ? dtype_bits(t.dtype) / 8 : 1;
    EXPECT_EQ(t.begin % align, 0u);
    EXPECT_EQ(reinterpret_cast<uintptr_t>(t.data) % align, 0u);  // in the page-aligned mapping
    const int rank = dtype_safetensors_rank(t.dtype);
    EXPECT_TRUE(rank < last_rank || (rank == last_rank && t.name > last_name));
    last_rank = rank;
    last_name = t.name;
  }
}

TEST_F(SafetensorsWriterConformance, HeaderLimitIsTheReaders) {
  // {"__metadata__":{"k":"<v>"}} is 25 bytes + v: 99,999,975 bytes of v make exactly 100,000,000.
  const std::string p = path("limit.safetensors");
  std::string v(99999975, 'v');
  ASSERT_TRUE(write_safetensors(p, {}, {{"k", v}}).ok());
  std::unique_ptr<SafetensorsFile> f;
  Status st = SafetensorsFile::open(p, &f);
  ASSERT_TRUE(st.ok()) << st.message();
  EXPECT_EQ(f->header_size(), 100000000u);
  EXPECT_EQ(f->metadata()[0].second.size(), v.size());
  f.reset();
  ::unlink(p.c_str());
  v.push_back('v');  // 100,000,001 bytes, padded to 100,000,008
  st = write_safetensors(p, {}, {{"k", v}});
  EXPECT_EQ(st.code(), Code::kInvalidArgument);
  EXPECT_NE(st.message().find("the header would be 100000008 bytes, more than the 100000000 a reader accepts"),
            std::string::npos)
      << st.message();
  EXPECT_NE(::access(p.c_str(), F_OK), 0);
}

TEST_F(SafetensorsWriterConformance, SubByteTensorsAreWrittenPackedAndStridedOnesRefused) {
  const uint8_t packed[3] = {0x10, 0x32, 0x54};
  const std::string p = path("f4.safetensors");
  ASSERT_TRUE(write_safetensors(p, {{"w", meta(DType::kF4, {2, 3}), packed}}, {}).ok());
  std::unique_ptr<SafetensorsFile> f;
  ASSERT_TRUE(SafetensorsFile::open(p, &f).ok());
  EXPECT_EQ(f->find("w")->end - f->find("w")->begin, 3u);
  EXPECT_EQ(std::memcmp(f->find("w")->data, packed, 3), 0);
  // 3 F4 elements are 12 bits: no such tensor.
  Status st = write_safetensors(p, {{"odd", meta(DType::kF4, {3}), packed}}, {});
  EXPECT_EQ(st.code(), Code::kInvalidArgument);
  EXPECT_NE(st.message().find("tensor 'odd': shape [3] of F4 is 12 bits, not a whole number of bytes"),
            std::string::npos)
      << st.message();
  // A transposed view of packed elements cannot be gathered byte-wise.
  TensorMeta t = meta(DType::kF4, {2, 2});
  t.strides = {1, 2};
  st = write_safetensors(p, {{"t", t, packed}}, {});
  EXPECT_EQ(st.code(), Code::kUnsupported);
  EXPECT_NE(st.message().find("not byte-addressable"), std::string::npos) << st.message();
  // Contiguous strides spelled out are fine.
  t.strides = {2, 1};
  EXPECT_TRUE(write_safetensors(p, {{"t", t, packed}}, {}).ok());
}

// --- metadata on a new map ------------------------------------------------------------------

TEST_F(SafetensorsWriterConformance, MetadataSetOnANewMapIsWrittenAndReadBack) {
  ConstantMap map;
  const float x[2] = {1, 2};
  ASSERT_TRUE(map.set("w", meta(DType::kF32, {2}), const_cast<float*>(x)).ok());
  ASSERT_TRUE(map.set_metadata("format", "pt").ok());
  ASSERT_TRUE(map.set_metadata("note", "caf\xc3\xa9 \"q\"\n").ok());
  ASSERT_TRUE(map.set_metadata("", "").ok());
  ASSERT_TRUE(map.set_metadata("format", "np").ok());  // replaces, keeps the first position
  EXPECT_EQ(map.metadata(), (std::vector<std::pair<std::string, std::string>>{
                                {"format", "np"}, {"note", "caf\xc3\xa9 \"q\"\n"}, {"", ""}}));
  // The rules of names, for keys and values: UTF-8, no NUL.
  Status st = map.set_metadata(std::string("k\0x", 3), "v");
  EXPECT_EQ(st.code(), Code::kInvalidArgument);
  EXPECT_NE(st.message().find("metadata key 'k\\u0000x' contains a NUL byte"), std::string::npos) << st.message();
  st = map.set_metadata("k", "\xc0\xaf");
  EXPECT_EQ(st.code(), Code::kInvalidArgument);
  EXPECT_NE(st.message().find("metadata key 'k': value is not valid UTF-8"), std::string::npos) << st.message();
  EXPECT_EQ(map.metadata().size(), 3u);

  const std::string p = path("md.safetensors");
  ASSERT_TRUE(map.save_safetensors(p).ok());
  std::unique_ptr<ConstantMap> back;
  ASSERT_TRUE(ConstantMap::load_safetensors(p, &back).ok());
  EXPECT_EQ(back->metadata(), map.metadata());
}

TEST_F(SafetensorsWriterConformance, CApiSetsMetadata) {
  wharf_constant_map* map = nullptr;
  ASSERT_EQ(wharf_constant_map_create(&map), nullptr);
  ASSERT_EQ(wharf_constant_map_set_metadata(map, "format", "pt"), nullptr);
  ASSERT_EQ(wharf_constant_map_set_metadata(map, "format", "pt2"), nullptr);
  EXPECT_EQ(wharf_constant_map_num_metadata_entries(map), 1u);
  const char *k = nullptr, *v = nullptr;
  ASSERT_EQ(wharf_constant_map_get_metadata_entry(map, 0, &k, &v), nullptr);
  EXPECT_STREQ(k, "format");
  EXPECT_STREQ(v, "pt2");
  for (auto [key, value] :
       {std::pair<const char*, const char*>{nullptr, "v"}, {"k", nullptr}, {"\xff", "v"}, {"k", "\xc3"}}) {
    wharf_status* st = wharf_constant_map_set_metadata(map, key, value);
    ASSERT_NE(st, nullptr);
    EXPECT_EQ(wharf_status_code(st), WHARF_INVALID_ARGUMENT) << wharf_status_message(st);
    wharf_status_free(st);
  }
  wharf_status* st = wharf_constant_map_set_metadata(nullptr, "k", "v");
  EXPECT_EQ(wharf_status_code(st), WHARF_INVALID_ARGUMENT);
  wharf_status_free(st);
  EXPECT_EQ(wharf_constant_map_num_metadata_entries(map), 1u);
  const std::string p = path("capi.safetensors");
  ASSERT_EQ(wharf_constant_map_save_safetensors(map, p.c_str()), nullptr);
  wharf_constant_map_free(map);
  ASSERT_EQ(wharf_constant_map_load_safetensors(p.c_str(), &map), nullptr);
  ASSERT_EQ(wharf_constant_map_num_metadata_entries(map), 1u);
  ASSERT_EQ(wharf_constant_map_get_metadata_entry(map, 0, &k, &v), nullptr);
  EXPECT_STREQ(v, "pt2");
  wharf_constant_map_free(map);
}

// --- files written by the reference implementation ----------------------------------------

// make_reference.py's contents: byte i of a tensor of dtype d is (rank(d) * 16 + 7i + 3) & 0xFF.
std::string reference_pattern(DType d, uint64_t n) {
  std::string b(n, '\0');
  for (uint64_t i = 0; i < n; ++i) b[i] = static_cast<char>((dtype_safetensors_rank(d) * 16 + i * 7 + 3) & 0xFF);
  return b;
}

TEST_F(SafetensorsWriterConformance, FilesWrittenByTheReferenceReadBackAndWharfWritesTheSameBytes) {
  const std::string dir = wharf_test::test_data("safetensors/");
  json::Value manifest;
  {
    const std::string text = slurp(dir + "manifest.json");
    ASSERT_FALSE(text.empty()) << dir << "manifest.json";
    ASSERT_TRUE(json::parse(text, &manifest).ok());
  }
  const json::Value* files = manifest.find("files");
  ASSERT_NE(files, nullptr);
  ASSERT_EQ(files->as_object().size(), 4u);
  size_t dtypes_seen = 0;
  for (const auto& [file, spec] : files->as_object()) {
    SCOPED_TRACE(file);
    const std::string ref = slurp(dir + file);
    ASSERT_FALSE(ref.empty());
    std::unique_ptr<SafetensorsFile> f;
    Status st = SafetensorsFile::open(dir + file, &f);
    ASSERT_TRUE(st.ok()) << st.message();

    const auto& tensors = spec.find("tensors")->as_object();
    ASSERT_EQ(f->tensors().size(), tensors.size());
    std::vector<std::string> keep;  // the bytes Wharf writes from
    keep.reserve(tensors.size());
    std::vector<TensorToWrite> in;
    for (const auto& [name, t] : tensors) {
      SCOPED_TRACE(name);
      const SafetensorsTensor* got = f->find(name);
      ASSERT_NE(got, nullptr);
      const std::optional<DType> dt = dtype_from_name(t.find("dtype")->as_string());
      ASSERT_TRUE(dt.has_value());
      EXPECT_EQ(got->dtype, *dt);
      std::vector<int64_t> shape;
      for (const json::Value& d : t.find("shape")->as_array()) shape.push_back(static_cast<int64_t>(*d.as_uint64()));
      EXPECT_EQ(got->shape, shape);
      TensorMeta m = meta(*dt, shape);
      ASSERT_TRUE(m.validate(name).ok());
      keep.push_back(reference_pattern(*dt, m.nbytes()));
      ASSERT_EQ(got->end - got->begin, keep.back().size());
      EXPECT_EQ(std::memcmp(got->data, keep.back().data(), keep.back().size()), 0);
      const size_t align = std::max<size_t>(1, dtype_bits(*dt) / 8);
      EXPECT_EQ(got->begin % align, 0u);  // the reference aligns too
      if (file == "every_dtype.safetensors") ++dtypes_seen;
      in.push_back({name, m, keep.back().data()});
    }
    std::vector<std::pair<std::string, std::string>> md;
    if (const json::Value* v = spec.find("metadata"); v && v->is_object())
      for (const auto& [k, val] : v->as_object()) md.emplace_back(k, val.as_string());
    EXPECT_EQ(f->metadata(), md);

    // Wharf's writer, given the tensors in the manifest's (name) order, writes the same bytes.
    const std::string p = path("wharf_" + file);
    ASSERT_TRUE(write_safetensors(p, in, md).ok());
    EXPECT_TRUE(slurp(p) == ref) << "Wharf's file differs from the reference's";
  }
  EXPECT_EQ(dtypes_seen, 20u);  // all but F6_E2M3 and F6_E3M2, which the Python API cannot name
}

}  // namespace
}  // namespace wharf::io

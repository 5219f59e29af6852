// SPDX-License-Identifier: Apache-2.0
// Tests of the safetensors reader and writer: round trips, strided writes, the writer's atomic
// replace and argument checks, and a corpus of malformed files.

#include "io/safetensors.h"

#include <dirent.h>
#include <algorithm>
#include <fcntl.h>
#include <sys/resource.h>
#include <sys/stat.h>
#include <unistd.h>

#include <gtest/gtest.h>

#include <atomic>
#include <csignal>
#include <cstring>
#include <fstream>
#include <sstream>
#include <string>
#include <vector>

namespace wharf::io {
namespace {

// A fresh directory per test, so leftover-file checks see only that test's files.
class SafetensorsTest : public ::testing::Test {
 protected:
  void SetUp() override {
    static std::atomic<int> counter{0};
    const auto* info = ::testing::UnitTest::GetInstance()->current_test_info();
    dir_ = ::testing::TempDir() + "wharf_st_" + std::to_string(::getpid()) + "_" + std::to_string(counter++) + "_" +
           info->name();
    ASSERT_EQ(::mkdir(dir_.c_str(), 0755), 0) << dir_ << ": " << std::strerror(errno);
  }
  void TearDown() override {
    for (const std::string& f : list_dir()) ::unlink((dir_ + "/" + f).c_str());
    ::rmdir(dir_.c_str());
  }

  std::string path(const std::string& name) const { return dir_ + "/" + name; }

  std::vector<std::string> list_dir() const {
    std::vector<std::string> out;
    if (DIR* d = ::opendir(dir_.c_str())) {
      while (dirent* e = ::readdir(d)) {
        std::string n = e->d_name;
        if (n != "." && n != "..") out.push_back(n);
      }
      ::closedir(d);
    }
    return out;
  }

  std::string dir_;
};

std::string read_file(const std::string& p) {
  std::ifstream f(p, std::ios::binary);
  std::stringstream ss;
  ss << f.rdbuf();
  return ss.str();
}

void write_file(const std::string& p, const std::string& bytes) {
  std::ofstream f(p, std::ios::binary | std::ios::trunc);
  f.write(bytes.data(), static_cast<std::streamsize>(bytes.size()));
  ASSERT_TRUE(f.good()) << p;
}

std::string le64(uint64_t n) {
  std::string s(8, '\0');
  for (int i = 0; i < 8; ++i) s[i] = static_cast<char>((n >> (8 * i)) & 0xFF);
  return s;
}

// A file image: length prefix, header as given, then data.
std::string image(const std::string& header, const std::string& data = "") {
  return le64(header.size()) + header + data;
}

Status parse_image(const std::string& bytes, std::unique_ptr<SafetensorsFile>* f) {
  return SafetensorsFile::parse(bytes.data(), bytes.size(), f);
}

TensorMeta meta(DType dt, std::vector<int64_t> shape, std::vector<int64_t> strides = {}) {
  TensorMeta m;
  m.dtype = dt;
  m.shape = std::move(shape);
  m.strides = std::move(strides);
  return m;
}

// Distinct bytes per tensor, so a swapped or shifted tensor is caught.
std::vector<uint8_t> pattern(size_t n, int seed) {
  std::vector<uint8_t> v(n);
  for (size_t i = 0; i < n; ++i) v[i] = static_cast<uint8_t>(i * 31 + seed * 7 + 1);
  return v;
}

// --- round trips -----------------------------------------------------------------------------

TEST_F(SafetensorsTest, RoundTripsEveryDtypeScalarsEmptyTensorsAndMetadata) {
  struct Case {
    std::string name;
    TensorMeta meta;
    std::vector<uint8_t> bytes;
  };
  std::vector<Case> cases;
  for (int d = 0; d < kNumDTypes; ++d) {
    const auto dt = static_cast<DType>(d);
    TensorMeta m = meta(dt, {2, 4});  // 8 elements: whole bytes for the 4- and 6-bit dtypes too
    cases.push_back({std::string("t.") + dtype_name(dt), m, pattern(m.nbytes(), d)});
    if (dtype_sub_byte(dt)) continue;  // a scalar of 4 or 6 bits is not a whole byte
    TensorMeta s = meta(dt, {});       // scalar: one element
    cases.push_back({std::string("scalar.") + dtype_name(dt), s, pattern(s.nbytes(), 100 + d)});
  }
  cases.push_back({"empty.0x4", meta(DType::kF32, {0, 4}), {}});
  cases.push_back({"empty.3x0", meta(DType::kBF16, {3, 0}), {}});
  cases.push_back({"rank8", meta(DType::kI8, {1, 2, 1, 2, 1, 2, 1, 3}), pattern(24, 7)});

  std::vector<TensorToWrite> in;
  for (const Case& c : cases) in.push_back({c.name, c.meta, c.bytes.empty() ? nullptr : c.bytes.data()});
  const std::vector<std::pair<std::string, std::string>> md = {
      {"format", "pt"}, {"quote\"and\\slash", "line\nbreak \xE2\x82\xAC"}, {"", ""}};
  const std::string p = path("all.safetensors");
  ASSERT_TRUE(write_safetensors(p, in, md).ok());

  std::unique_ptr<SafetensorsFile> f;
  Status st = SafetensorsFile::open(p, &f);
  ASSERT_TRUE(st.ok()) << st.message();
  EXPECT_EQ(f->metadata(), md);
  ASSERT_EQ(f->tensors().size(), cases.size());
  EXPECT_EQ(f->header_size() % 8, 0u);  // data section 8-byte aligned
  // The writer orders tensors as the reference does: by dtype alignment rank (descending),
  // then by name; header order is data order.
  std::stable_sort(cases.begin(), cases.end(), [](const Case& a, const Case& b) {
    const int ra = dtype_safetensors_rank(a.meta.dtype), rb = dtype_safetensors_rank(b.meta.dtype);
    return ra != rb ? ra > rb : a.name < b.name;
  });
  uint64_t offset = 0;
  for (size_t i = 0; i < cases.size(); ++i) {
    const SafetensorsTensor& t = f->tensors()[i];
    SCOPED_TRACE(cases[i].name);
    EXPECT_EQ(t.name, cases[i].name);
    EXPECT_EQ(t.dtype, cases[i].meta.dtype);
    EXPECT_EQ(t.shape, cases[i].meta.shape);
    EXPECT_EQ(t.begin, offset);  // data laid out in header order, no gaps
    // Naturally aligned in the file (the data section starts 8-byte aligned).
    const size_t align = std::max<size_t>(1, dtype_bits(t.dtype) / 8);
    EXPECT_EQ((8 + f->header_size() + t.begin) % align, 0u) << dtype_name(t.dtype);
    EXPECT_EQ(t.end - t.begin, cases[i].bytes.size());
    offset = t.end;
    if (!cases[i].bytes.empty()) {
      EXPECT_EQ(std::memcmp(t.data, cases[i].bytes.data(), cases[i].bytes.size()), 0);
    }
    EXPECT_EQ(f->find(cases[i].name), &t);
  }
  EXPECT_EQ(f->data_size(), offset);
  EXPECT_EQ(f->find("missing"), nullptr);
  EXPECT_EQ(read_file(p).size(), 8 + f->header_size() + offset);
}

TEST_F(SafetensorsTest, MetadataComesFirstAndIsOmittedWhenEmpty) {
  const float v[2] = {1.5f, -2.0f};
  const std::string p = path("m.safetensors");
  ASSERT_TRUE(write_safetensors(p, {{"w", meta(DType::kF32, {2}), v}}, {{"k", "v"}}).ok());
  std::string bytes = read_file(p);
  ASSERT_GE(bytes.size(), 8u);
  EXPECT_EQ(bytes.substr(8, 17), "{\"__metadata__\":{");

  ASSERT_TRUE(write_safetensors(p, {{"w", meta(DType::kF32, {2}), v}}, {}).ok());
  bytes = read_file(p);
  EXPECT_EQ(bytes.find("__metadata__"), std::string::npos);
  EXPECT_EQ(bytes.substr(8, 5), "{\"w\":");
  std::unique_ptr<SafetensorsFile> f;
  ASSERT_TRUE(SafetensorsFile::open(p, &f).ok());
  EXPECT_TRUE(f->metadata().empty());
  float back[2];
  std::memcpy(back, f->tensors()[0].data, sizeof back);
  EXPECT_EQ(back[0], 1.5f);
  EXPECT_EQ(back[1], -2.0f);
}

TEST_F(SafetensorsTest, HeaderIsSpacePaddedToEightBytes) {
  // Names of every length mod 8 exercise every padding amount.
  for (int len = 1; len <= 8; ++len) {
    const uint8_t b = 7;
    const std::string p = path("pad.safetensors");
    ASSERT_TRUE(write_safetensors(p, {{std::string(len, 'x'), meta(DType::kU8, {1}), &b}}, {}).ok());
    const std::string bytes = read_file(p);
    uint64_t n = 0;
    for (int i = 0; i < 8; ++i) n |= uint64_t(static_cast<uint8_t>(bytes[i])) << (8 * i);
    EXPECT_EQ(n % 8, 0u) << len;
    const std::string header = bytes.substr(8, n);
    const size_t close = header.rfind('}');
    EXPECT_EQ(header.find_first_not_of(' ', close + 1), std::string::npos) << header;
    EXPECT_LT(header.size() - close - 1, 8u);
    EXPECT_EQ(bytes.back(), 7);
  }
}

TEST_F(SafetensorsTest, WritesEmptyFile) {
  const std::string p = path("empty.safetensors");
  ASSERT_TRUE(write_safetensors(p, {}, {}).ok());
  std::unique_ptr<SafetensorsFile> f;
  ASSERT_TRUE(SafetensorsFile::open(p, &f).ok());
  EXPECT_TRUE(f->tensors().empty());
  EXPECT_EQ(f->data_size(), 0u);
  EXPECT_EQ(read_file(p), le64(8) + "{}      ");
}

// --- strided writes --------------------------------------------------------------------------

TEST_F(SafetensorsTest, StridedViewsAreGatheredIntoRowMajorOrder) {
  // A 4x3 F32 matrix; its transpose is the 3x4 view with strides {1, 3}.
  std::vector<float> m(12);
  for (int i = 0; i < 12; ++i) m[i] = static_cast<float>(i);
  // Inner stride 1 with a padded row pitch: rows of 3 taken from rows of 5 (I16), shape 2x2x3.
  std::vector<int16_t> padded(40);
  for (int i = 0; i < 40; ++i) padded[i] = static_cast<int16_t>(1000 + i);
  // Stride 0 broadcasts one row to 3 rows; size-1 dims carrying odd strides are contiguous.
  const int64_t row[4] = {10, 20, 30, 40};
  const uint8_t odd[6] = {1, 2, 3, 4, 5, 6};

  const std::string p = path("strided.safetensors");
  std::vector<TensorToWrite> in = {
      {"transposed", meta(DType::kF32, {3, 4}, {1, 3}), m.data()},
      {"pitched", meta(DType::kI16, {2, 2, 3}, {20, 5, 1}), padded.data()},
      {"broadcast", meta(DType::kI64, {3, 4}, {0, 1}), row},
      {"unit_dims", meta(DType::kU8, {1, 6, 1}, {99, 1, 42}), odd},
      {"every_other", meta(DType::kU8, {3}, {2}), odd},
      {"empty_strided", meta(DType::kF32, {0, 5}, {7, 2}), nullptr},
  };
  ASSERT_TRUE(write_safetensors(p, in, {}).ok());
  std::unique_ptr<SafetensorsFile> f;
  ASSERT_TRUE(SafetensorsFile::open(p, &f).ok());

  std::vector<float> t(12);
  ASSERT_EQ(f->find("transposed")->end - f->find("transposed")->begin, 48u);
  std::memcpy(t.data(), f->find("transposed")->data, 48);
  for (int r = 0; r < 3; ++r)
    for (int c = 0; c < 4; ++c) EXPECT_EQ(t[r * 4 + c], m[c * 3 + r]) << r << "," << c;

  std::vector<int16_t> pt(12);
  std::memcpy(pt.data(), f->find("pitched")->data, 24);
  for (int a = 0; a < 2; ++a)
    for (int b = 0; b < 2; ++b)
      for (int c = 0; c < 3; ++c) EXPECT_EQ(pt[a * 6 + b * 3 + c], padded[a * 20 + b * 5 + c]);

  std::vector<int64_t> bc(12);
  std::memcpy(bc.data(), f->find("broadcast")->data, 96);
  for (int i = 0; i < 12; ++i) EXPECT_EQ(bc[i], row[i % 4]);

  EXPECT_EQ(std::memcmp(f->find("unit_dims")->data, odd, 6), 0);
  const uint8_t eo[3] = {1, 3, 5};
  EXPECT_EQ(std::memcmp(f->find("every_other")->data, eo, 3), 0);
  EXPECT_EQ(f->find("empty_strided")->end, f->find("empty_strided")->begin);
}

// --- atomic replace --------------------------------------------------------------------------

TEST_F(SafetensorsTest, ReplaceIsAtomicAndLeavesNoTemporaries) {
  const std::string p = path("model.safetensors");
  const uint32_t a = 0xAAAAAAAA, b = 0xBBBBBBBB;
  ASSERT_TRUE(write_safetensors(p, {{"w", meta(DType::kU8, {4}), &a}}, {}).ok());
  std::unique_ptr<SafetensorsFile> old_file;
  ASSERT_TRUE(SafetensorsFile::open(p, &old_file).ok());

  ASSERT_TRUE(write_safetensors(p, {{"w", meta(DType::kU8, {4}), &b}}, {}).ok());
  // The old mapping still sees the old inode's bytes; a new open sees the new file.
  EXPECT_EQ(std::memcmp(old_file->find("w")->data, &a, 4), 0);
  std::unique_ptr<SafetensorsFile> new_file;
  ASSERT_TRUE(SafetensorsFile::open(p, &new_file).ok());
  EXPECT_EQ(std::memcmp(new_file->find("w")->data, &b, 4), 0);
  EXPECT_EQ(list_dir(), std::vector<std::string>{"model.safetensors"});
}

TEST_F(SafetensorsTest, FailedRenameRemovesTheTemporary) {
  const std::string target = path("is_a_dir");
  ASSERT_EQ(::mkdir(target.c_str(), 0755), 0);
  ::close(::open((target + "/keep").c_str(), O_CREAT | O_WRONLY, 0644));  // non-empty: rename fails
  const uint8_t x = 1;
  Status st = write_safetensors(target, {{"w", meta(DType::kU8, {1}), &x}}, {});
  EXPECT_EQ(st.code(), Code::kIoError);
  EXPECT_NE(st.message().find(target), std::string::npos) << st.message();
  EXPECT_EQ(list_dir(), std::vector<std::string>{"is_a_dir"});
  ::unlink((target + "/keep").c_str());
  ::rmdir(target.c_str());
}

// A write that fails part-way (here: the file size limit, standing in for a full disk) is an
// IoError with strerror, and neither the destination nor a temporary is left behind.
TEST_F(SafetensorsTest, FailedWriteIsIoErrorAndRemovesTheTemporary) {
  const std::vector<uint8_t> big(4 << 20, 0x5A);
  struct rlimit old_limit;
  ASSERT_EQ(::getrlimit(RLIMIT_FSIZE, &old_limit), 0);
  struct rlimit limit = old_limit;
  limit.rlim_cur = 1 << 20;
  void (*old_handler)(int) = ::signal(SIGXFSZ, SIG_IGN);  // get EFBIG instead of a signal
  ASSERT_EQ(::setrlimit(RLIMIT_FSIZE, &limit), 0);
  const std::string p = path("big.safetensors");
  Status st = write_safetensors(p, {{"big", meta(DType::kU8, {int64_t(big.size())}), big.data()}}, {});
  ::setrlimit(RLIMIT_FSIZE, &old_limit);
  ::signal(SIGXFSZ, old_handler);
  EXPECT_EQ(st.code(), Code::kIoError);
  EXPECT_NE(st.message().find(p), std::string::npos) << st.message();
  EXPECT_NE(st.message().find("File too large"), std::string::npos) << st.message();
  EXPECT_TRUE(list_dir().empty());
}

TEST_F(SafetensorsTest, WriteToMissingDirectoryIsIoError) {
  const std::string p = path("no/such/dir/x.safetensors");
  Status st = write_safetensors(p, {}, {});
  EXPECT_EQ(st.code(), Code::kIoError);
  EXPECT_NE(st.message().find(p), std::string::npos) << st.message();
  EXPECT_NE(st.message().find("No such file or directory"), std::string::npos) << st.message();
}

// --- writer argument checks ------------------------------------------------------------------

TEST_F(SafetensorsTest, WriterRejectsBadArguments) {
  const float v[4] = {};
  const std::string p = path("bad.safetensors");
  struct Case {
    const char* what;
    std::vector<TensorToWrite> tensors;
    std::vector<std::pair<std::string, std::string>> md;
    std::string fragment;
  };
  TensorMeta cuda = meta(DType::kF32, {4});
  cuda.device_type = DeviceType::kCuda;
  const std::vector<Case> cases = {
      {"non-CPU", {{"gpu.w", cuda, v}}, {}, "tensor 'gpu.w': data is on a device"},
      {"invalid meta", {{"neg", meta(DType::kF32, {-1}), v}}, {}, "tensor 'neg': negative dimension"},
      {"bad dtype", {{"dt", meta(static_cast<DType>(99), {1}), v}}, {}, "tensor 'dt': unknown dtype"},
      {"duplicate",
       {{"w", meta(DType::kF32, {1}), v}, {"w", meta(DType::kF32, {1}), v}},
       {},
       "tensor 'w': name appears twice"},
      {"null data",
       {{"nul", meta(DType::kF32, {4}), nullptr}},
       {},
       "tensor 'nul': data is null but the tensor has 16 bytes"},
      {"empty name",
       {{"a", meta(DType::kF32, {1}), v}, {"", meta(DType::kF32, {1}), v}},
       {},
       "tensor #1 has an empty name"},
      {"reserved", {{"__metadata__", meta(DType::kF32, {1}), v}}, {}, "'__metadata__': the name is reserved"},
      {"NUL in name", {{std::string("a\0b", 3), meta(DType::kF32, {1}), v}}, {}, "name contains a NUL"},
      {"bad UTF-8 name", {{"bad\xFF", meta(DType::kF32, {1}), v}}, {}, "name is not valid UTF-8"},
      {"duplicate metadata", {}, {{"k", "1"}, {"k", "2"}}, "metadata key 'k' appears twice"},
      {"bad UTF-8 metadata", {}, {{"k", "\xC0\x80"}}, "metadata key 'k': value is not valid UTF-8"},
  };
  for (const Case& c : cases) {
    Status st = write_safetensors(p, c.tensors, c.md);
    EXPECT_EQ(st.code(), Code::kInvalidArgument) << c.what;
    EXPECT_NE(st.message().find(c.fragment), std::string::npos) << c.what << ": " << st.message();
  }
  EXPECT_TRUE(list_dir().empty());  // validation happens before any file is created

  // Null data is fine when there are no bytes to read.
  EXPECT_TRUE(write_safetensors(p, {{"z", meta(DType::kF32, {0}), nullptr}}, {}).ok());
}

// --- reader: open errors ---------------------------------------------------------------------

TEST_F(SafetensorsTest, MissingFileIsNotFound) {
  std::unique_ptr<SafetensorsFile> f;
  const std::string p = path("absent.safetensors");
  Status st = SafetensorsFile::open(p, &f);
  EXPECT_EQ(st.code(), Code::kNotFound);
  EXPECT_NE(st.message().find(p), std::string::npos) << st.message();
  EXPECT_EQ(f, nullptr);
  // A path through a regular file cannot exist either.
  write_file(path("plain"), "x");
  EXPECT_EQ(SafetensorsFile::open(path("plain/child"), &f).code(), Code::kNotFound);
}

TEST_F(SafetensorsTest, DirectoryIsIoError) {
  std::unique_ptr<SafetensorsFile> f;
  Status st = SafetensorsFile::open(dir_, &f);
  EXPECT_EQ(st.code(), Code::kIoError);
  EXPECT_NE(st.message().find(dir_), std::string::npos) << st.message();
}

TEST_F(SafetensorsTest, CorruptFileMessageNamesPathAndTensor) {
  const std::string p = path("corrupt.safetensors");
  write_file(p, image(R"({"layers.0.w":{"dtype":"F32","shape":[2,2],"data_offsets":[0,12]}})", std::string(12, '\0')));
  std::unique_ptr<SafetensorsFile> f;
  Status st = SafetensorsFile::open(p, &f);
  EXPECT_EQ(st.code(), Code::kDataCorrupt);
  EXPECT_EQ(st.message(), "safetensors file '" + p +
                              "': tensor 'layers.0.w': data_offsets [0, 12] cover 12 bytes but shape "
                              "[2, 2] of F32 needs 16");
  EXPECT_EQ(f, nullptr);

  write_file(p, "");  // an empty file cannot be mapped, but is still just corrupt
  st = SafetensorsFile::open(p, &f);
  EXPECT_EQ(st.code(), Code::kDataCorrupt);
  EXPECT_NE(st.message().find("file is 0 bytes"), std::string::npos) << st.message();
}

// --- reader: accepted variations -------------------------------------------------------------

TEST(SafetensorsParseTest, PointsIntoTheCallersBufferWithoutCopying) {
  const std::string bytes = image(
      R"({"b":{"dtype":"U8","shape":[2],"data_offsets":[4,6]},"a":{"dtype":"I16","shape":[2],"data_offsets":[0,4]}})",
      "ABCDEF");
  std::unique_ptr<SafetensorsFile> f;
  ASSERT_TRUE(parse_image(bytes, &f).ok());
  ASSERT_EQ(f->tensors().size(), 2u);
  EXPECT_EQ(f->tensors()[0].name, "b");  // header order, not offset order
  const char* data_section = bytes.data() + 8 + f->header_size();
  EXPECT_EQ(f->tensors()[0].data, data_section + 4);
  EXPECT_EQ(f->tensors()[1].data, data_section);
  EXPECT_EQ(f->find("a")->dtype, DType::kI16);
}

TEST(SafetensorsParseTest, AcceptsPaddingZeroByteTensorsAtBoundariesAndExtraKeys) {
  // Leading and trailing JSON whitespace, an empty __metadata__, keys the format does not know,
  // and zero-byte tensors at the start, between two tensors and at the end of the data section.
  const std::string header =
      "  {\"__metadata__\":{},"
      "\"a\":{\"dtype\":\"F32\",\"shape\":[1],\"data_offsets\":[0,4],\"extra\":[1,{\"x\":null}]},"
      "\"first\":{\"dtype\":\"F64\",\"shape\":[0,3],\"data_offsets\":[0,0]},"
      "\"between\":{\"dtype\":\"F64\",\"shape\":[0,3],\"data_offsets\":[4,4]},"
      "\"at_end\":{\"dtype\":\"BOOL\",\"shape\":[5,0],\"data_offsets\":[6,6]},"
      "\"b\":{\"dtype\":\"U8\",\"shape\":[2],\"data_offsets\":[4,6]}}      ";
  std::unique_ptr<SafetensorsFile> f;
  Status st = parse_image(image(header, std::string(6, 'x')), &f);
  ASSERT_TRUE(st.ok()) << st.message();
  EXPECT_EQ(f->tensors().size(), 5u);
  EXPECT_TRUE(f->metadata().empty());
  EXPECT_EQ(f->find("at_end")->begin, 6u);
}

TEST(SafetensorsParseTest, AcceptsEmptyHeaderObject) {
  std::unique_ptr<SafetensorsFile> f;
  ASSERT_TRUE(parse_image(image("{}"), &f).ok());
  EXPECT_TRUE(f->tensors().empty());
  EXPECT_EQ(f->data_size(), 0u);
  // Bytes after an empty header belong to no tensor: refused, as the reference does.
  Status st = parse_image(image("{}", "junk"), &f);
  EXPECT_EQ(st.code(), Code::kDataCorrupt);
  EXPECT_NE(st.message().find("the header declares no tensor but the data section has 4 bytes"), std::string::npos)
      << st.message();
}

// --- reader: malformed corpus ----------------------------------------------------------------

// One header entry: {"<name>":{"dtype":..,"shape":..,"data_offsets":..}} without the braces.
std::string entry(const std::string& name, const std::string& dtype, const std::string& shape,
                  const std::string& offsets) {
  return "\"" + name + "\":{\"dtype\":" + dtype + ",\"shape\":" + shape + ",\"data_offsets\":" + offsets + "}";
}
std::string obj(const std::string& members) { return "{" + members + "}"; }

struct Malformed {
  const char* label;
  std::string bytes;
  std::string tensor;    // the tensor the message must name, or empty
  std::string fragment;  // what the message must say
};

std::vector<Malformed> malformed_corpus() {
  const std::string d16(16, '\0');
  const auto w = [](const std::string& dtype, const std::string& shape, const std::string& offsets) {
    return obj(entry("w", dtype, shape, offsets));
  };
  return {
      {"empty file", "", "", "file is 0 bytes, too short for the 8-byte header length"},
      {"7-byte file", std::string(7, '\0'), "", "file is 7 bytes"},
      {"header length past EOF", le64(100) + "{}", "", "header length 100 runs past the end of the file (10 bytes)"},
      {"header length over 100,000,000", le64(100000001) + "{}", "",
       "header length 100000001 exceeds the limit of 100000000 bytes"},
      {"header length 100 MiB", le64(uint64_t(100) << 20) + "{}", "",
       "header length 104857600 exceeds the limit of 100000000 bytes"},
      {"header length 2^64-1", le64(UINT64_MAX) + "{}", "", "exceeds the limit"},
      {"truncated data", image(w("\"F32\"", "[4]", "[0,16]"), std::string(10, '\0')), "w",
       "data_offsets [0, 16] run past the end of the data section (10 bytes)"},
      {"empty header", image(""), "", "header is not valid JSON: at byte 0: unexpected end of input"},
      {"header not JSON", image("<html>"), "", "header is not valid JSON: at byte 0: unexpected '<'"},
      {"truncated JSON", image("{\"w\":{\"dtype\":\"F32\""), "", "unexpected end of input in object"},
      {"header an array", image("[]"), "", "header is a JSON array, expected an object"},
      {"header a string", image("\"w\""), "", "header is a JSON string, expected an object"},
      {"trailing garbage", image("{} x"), "", "after the top-level value"},
      {"NUL padding", image(std::string("{}\0\0\0\0\0\0", 8)), "", "byte 0x00 after the top-level value"},
      {"entry not an object", image(R"({"w":[1]})"), "w", "entry is a JSON array, expected an object"},
      {"missing dtype", image(R"({"w":{"shape":[1],"data_offsets":[0,4]}})", d16), "w", "missing \"dtype\""},
      {"missing shape", image(R"({"w":{"dtype":"F32","data_offsets":[0,4]}})", d16), "w", "missing \"shape\""},
      {"missing data_offsets", image(R"({"w":{"dtype":"F32","shape":[1]}})", d16), "w", "missing \"data_offsets\""},
      {"dtype not a string", image(w("4", "[1]", "[0,4]"), d16), "w", "\"dtype\" is a JSON number, expected a string"},
      {"F4 scalar (4 bits)", image(w("\"F4\"", "[]", "[0,1]"), d16), "w",
       "shape [] of F4 is 4 bits, not a whole number of bytes"},
      {"shape not an array", image(w("\"F32\"", "4", "[0,16]"), d16), "w",
       "\"shape\" is a JSON number, expected an array"},
      {"negative dim", image(w("\"F32\"", "[2,-1]", "[0,4]"), d16), "w",
       "shape[1] is -1, expected a non-negative integer"},
      {"negative zero dim", image(w("\"F32\"", "[-0]", "[0,0]"), d16), "w", "shape[0] is -0"},
      {"float dim", image(w("\"F32\"", "[2.0]", "[0,8]"), d16), "w", "shape[0] is 2.0, expected an integer"},
      {"exponent dim", image(w("\"F32\"", "[1e0]", "[0,4]"), d16), "w", "shape[0] is 1e0, expected an integer"},
      {"string dim", image(w("\"F32\"", "[\"2\"]", "[0,8]"), d16), "w", "shape[0] is a JSON string"},
      {"null dim", image(w("\"F32\"", "[null]", "[0,8]"), d16), "w", "shape[0] is a JSON null"},
      {"dim over 2^63-1", image(w("\"U8\"", "[9223372036854775808]", "[0,1]"), d16), "w",
       "bit size of shape [9223372036854775808] of U8 overflows 64 bits"},
      {"dim over 2^64-1", image(w("\"U8\"", "[18446744073709551616]", "[0,1]"), d16), "w",
       "shape[0] is 18446744073709551616, larger than 18446744073709551615"},
      {"offsets not an array", image(w("\"F32\"", "[1]", "{}"), d16), "w",
       "\"data_offsets\" is a JSON object, expected an array"},
      {"one offset", image(w("\"F32\"", "[1]", "[4]"), d16), "w", "data_offsets has 1 elements, expected [begin, end]"},
      {"three offsets", image(w("\"F32\"", "[1]", "[0,4,8]"), d16), "w",
       "data_offsets has more than 2 elements, expected [begin, end]"},
      {"negative offset", image(w("\"F32\"", "[1]", "[-4,0]"), d16), "w", "data_offsets[0] is -4"},
      {"float offset", image(w("\"F32\"", "[1]", "[0,4.0]"), d16), "w", "data_offsets[1] is 4.0, expected an integer"},
      {"offset over 2^64", image(w("\"F32\"", "[1]", "[0,18446744073709551616]"), d16), "w",
       "data_offsets[1] is 18446744073709551616, larger than"},
      {"offsets out of range", image(w("\"F32\"", "[2]", "[12,20]"), d16), "w",
       "data_offsets [12, 20] run past the end of the data section (16 bytes)"},
      {"offsets near 2^64", image(w("\"U8\"", "[1]", "[18446744073709551614,18446744073709551615]"), d16), "w",
       "run past the end of the data section"},
      {"offsets reversed", image(w("\"F32\"", "[1]", "[8,4]"), d16), "w",
       "data_offsets [8, 4] are reversed (begin > end)"},
      {"size mismatch", image(obj(entry("layers.0.w", "\"F32\"", "[2,2]", "[0,12]")), d16), "layers.0.w",
       "tensor 'layers.0.w': data_offsets [0, 12] cover 12 bytes but shape [2, 2] of F32 needs 16"},
      {"zero-element size mismatch", image(w("\"F32\"", "[0]", "[0,4]"), d16), "w",
       "cover 4 bytes but shape [0] of F32 needs 0"},
      {"scalar size mismatch", image(w("\"F64\"", "[]", "[0,4]"), d16), "w",
       "cover 4 bytes but shape [] of F64 needs 8"},
      {"element count overflow", image(w("\"F32\"", "[4294967296,4294967296,16]", "[0,0]"), d16), "w",
       "element count of shape [4294967296, 4294967296, 16] of F32 overflows 64 bits"},
      {"bit size overflow", image(w("\"F32\"", "[576460752303423488]", "[0,0]"), d16), "w",
       "bit size of shape [576460752303423488] of F32 overflows 64 bits"},
      {"overflow before a zero dim", image(w("\"F32\"", "[4294967296,4294967296,0]", "[0,0]")), "w",
       "element count of shape [4294967296, 4294967296, 0] of F32 overflows 64 bits"},
      {"overlap", image(obj(entry("a", "\"F32\"", "[2]", "[0,8]") + "," + entry("b", "\"F32\"", "[2]", "[4,12]")), d16),
       "a", "tensor 'a': data_offsets [0, 8] overlap tensor 'b' data_offsets [4, 12]"},
      {"same range", image(obj(entry("a", "\"U8\"", "[4]", "[0,4]") + "," + entry("b", "\"I32\"", "[]", "[0,4]")), d16),
       "b", "overlap tensor 'b'"},
      {"contained, listed out of order",
       image(obj(entry("z", "\"U8\"", "[4]", "[12,16]") + "," + entry("small", "\"F32\"", "[1]", "[4,8]") + "," +
                 entry("big", "\"F32\"", "[3]", "[0,12]")),
             d16),
       "small", "tensor 'big': data_offsets [0, 12] overlap tensor 'small' data_offsets [4, 8]"},
      {"zero-size tensor inside another",
       image(obj(entry("big", "\"F32\"", "[4]", "[0,16]") + "," + entry("z", "\"F32\"", "[0]", "[8,8]")), d16), "z",
       "tensor 'big': data_offsets [0, 16] contain zero-size tensor 'z' data_offsets [8, 8]"},
      {"first tensor not at 0", image(obj(entry("w", "\"F32\"", "[3]", "[4,16]")), d16), "w",
       "data_offsets [4, 16]: the first tensor must begin at offset 0 of the data section; bytes [0, 4) belong to "
       "no tensor"},
      {"hole between tensors",
       image(obj(entry("b", "\"F32\"", "[2]", "[8,16]") + "," + entry("a", "\"F32\"", "[1]", "[0,4]")), d16), "b",
       "tensor 'b': data_offsets [8, 16] leave a hole after tensor 'a' data_offsets [0, 4]: bytes [4, 8) belong "
       "to no tensor"},
      {"trailing bytes", image(obj(entry("w", "\"F32\"", "[3]", "[0,12]")), d16), "w",
       "tensor 'w': data_offsets [0, 12] end the last tensor at 12 but the data section has 16 bytes: bytes "
       "[12, 16) belong to no tensor"},
      {"zero-size tensor past the last byte",
       image(obj(entry("w", "\"F32\"", "[4]", "[0,16]") + "," + entry("z", "\"U8\"", "[0]", "[17,17]")), d16), "z",
       "data_offsets [17, 17] run past the end of the data section (16 bytes)"},
      {"metadata non-string value", image(R"({"__metadata__":{"format":"pt","k":1}})"), "",
       "__metadata__ key 'k' has a JSON number value, expected a string"},
      {"metadata nested object", image(R"({"__metadata__":{"k":{}}})"), "", "__metadata__ key 'k' has a JSON object"},
      {"metadata not an object", image(R"({"__metadata__":"x"})"), "",
       "__metadata__ is a JSON string, expected an object of strings"},
      {"duplicate tensor",
       image(obj(entry("w", "\"U8\"", "[1]", "[0,1]") + "," + entry("w", "\"U8\"", "[1]", "[1,2]")), d16), "w",
       "tensor 'w': appears twice in the header"},
      {"duplicate metadata key", image(R"({"__metadata__":{"k":"1","k":"2"}})"), "", "duplicate object key 'k'"},
      {"duplicate __metadata__", image(R"({"__metadata__":{},"__metadata__":{}})"), "",
       "header has two \"__metadata__\" entries"},
      {"bad UTF-8 in name", image(obj(entry("w\xFF", "\"U8\"", "[1]", "[0,1]")), d16), "", "invalid UTF-8 in string"},
      {"overlong UTF-8 in metadata", image("{\"__metadata__\":{\"k\":\"\xC0\xAF\"}}"), "", "invalid UTF-8 in string"},
      {"lone surrogate in name", image(obj(entry("\\uD800", "\"U8\"", "[1]", "[0,1]")), d16), "",
       "unpaired high surrogate"},
      {"huge number echoed only in part", image(w("\"U8\"", "[" + std::string(5000, '9') + "]", "[0,1]"), d16), "w",
       "shape[0] is " + std::string(40, '9') + "..., larger than"},
      {"deep nesting in an extra key", image("{\"w\":{\"x\":" + std::string(100, '[') + std::string(100, ']') + "}}"),
       "", "nesting deeper than"},
  };
}

TEST_F(SafetensorsTest, MalformedCorpusIsDataCorrupt) {
  const std::vector<Malformed> corpus = malformed_corpus();
  ASSERT_GE(corpus.size(), 50u);
  for (const Malformed& m : corpus) {
    SCOPED_TRACE(m.label);
    std::unique_ptr<SafetensorsFile> f;
    Status st = parse_image(m.bytes, &f);
    EXPECT_EQ(st.code(), Code::kDataCorrupt) << st.message();
    EXPECT_EQ(f, nullptr);
    if (!m.tensor.empty()) {
      EXPECT_NE(st.message().find("tensor '" + m.tensor + "'"), std::string::npos) << st.message();
    }
    EXPECT_NE(st.message().find(m.fragment), std::string::npos)
        << "message: " << st.message() << "\nexpected: " << m.fragment;

    // The same bytes from disk: same error, prefixed with the path.
    const std::string p = path("corpus.safetensors");
    write_file(p, m.bytes);
    Status from_disk = SafetensorsFile::open(p, &f);
    EXPECT_EQ(from_disk.code(), Code::kDataCorrupt);
    EXPECT_EQ(from_disk.message(), "safetensors file '" + p + "': " + st.message());
  }
}

// Every strict prefix of a valid file is rejected: the cut lands in the length, the header or
// the data, and each must be caught, never read past.
TEST_F(SafetensorsTest, EveryTruncationOfAValidFileIsRejected) {
  const uint16_t h[3] = {1, 2, 3};
  const double d = 2.5;
  const std::string p = path("valid.safetensors");
  ASSERT_TRUE(
      write_safetensors(p, {{"h", meta(DType::kF16, {3}), h}, {"d", meta(DType::kF64, {}), &d}}, {{"k", "v"}}).ok());
  const std::string bytes = read_file(p);
  std::unique_ptr<SafetensorsFile> f;
  ASSERT_TRUE(parse_image(bytes, &f).ok());
  for (size_t n = 0; n < bytes.size(); ++n) {
    // A fresh heap copy of exactly n bytes, so ASan flags any read past the end.
    std::unique_ptr<char[]> cut(new char[n + 1]);
    std::memcpy(cut.get(), bytes.data(), n);
    Status st = SafetensorsFile::parse(cut.get(), n, &f);
    EXPECT_EQ(st.code(), Code::kDataCorrupt) << "prefix of " << n << " bytes";
  }
}

}  // namespace
}  // namespace wharf::io

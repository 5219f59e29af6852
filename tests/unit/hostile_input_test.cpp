// SPDX-License-Identifier: Apache-2.0
// Hostile input at the edges of src/io and the constant map: special files where a model file is
// expected, names and paths with control characters, escape sequences and bytes that are not
// UTF-8, NUL bytes in metadata. Each either is refused with a clear code or, where it is only
// echoed, never reaches a status message raw.

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <gtest/gtest.h>

#include <atomic>
#include <chrono>
#include <cstring>
#include <fstream>
#include <functional>
#include <future>
#include <string>
#include <thread>
#include <vector>

#include "common/test_support.h"
#include "constants/constant_map.h"
#include "core/text.h"
#include "io/mapped_file.h"
#include "io/safetensors.h"
#include "wharf/wharf.h"

namespace wharf {
namespace {

using wharf_test::St;

class HostileInputTest : public ::testing::Test {
 protected:
  void SetUp() override {
    static std::atomic<int> counter{0};
    const auto* info = ::testing::UnitTest::GetInstance()->current_test_info();
    dir_ = ::testing::TempDir() + "wharf_hostile_" + std::to_string(::getpid()) + "_" + std::to_string(counter++) +
           "_" + info->name();
    ASSERT_EQ(::mkdir(dir_.c_str(), 0755), 0) << dir_ << ": " << std::strerror(errno);
  }
  void TearDown() override {
    for (const std::string& f : created_) ::unlink(f.c_str());
    ::rmdir(dir_.c_str());
  }

  std::string path(const std::string& name) {
    created_.push_back(dir_ + "/" + name);
    return created_.back();
  }

  std::string dir_;
  std::vector<std::string> created_;
};

void write_file(const std::string& p, const std::string& bytes) {
  std::ofstream f(p, std::ios::binary | std::ios::trunc);
  f.write(bytes.data(), static_cast<std::streamsize>(bytes.size()));
  ASSERT_TRUE(f.good()) << p;
}

// A safetensors image built byte by byte: 8-byte little-endian header length, the header, data.
std::string image(const std::string& header, const std::string& data = "") {
  std::string s;
  for (int i = 0; i < 8; ++i) s.push_back(static_cast<char>((uint64_t(header.size()) >> (8 * i)) & 0xFF));
  return s + header + data;
}

Status parse(const std::string& bytes) {
  std::unique_ptr<io::SafetensorsFile> f;
  Status st = io::SafetensorsFile::parse(bytes.data(), bytes.size(), &f);
  if (st.ok() != (f != nullptr)) ADD_FAILURE() << "output and status disagree";
  return st;
}

// No byte of a message may be a control character (a newline splits a log record, ESC starts
// a terminal escape), a C1 control (U+0080..U+009F; CSI to some terminals) or a bidi override,
// and the whole message is valid UTF-8.
void expect_clean_message(const std::string& msg) {
  EXPECT_TRUE(valid_utf8(msg)) << quote_name(msg, 100000);
  for (size_t i = 0; i < msg.size(); ++i) {
    const auto u = static_cast<unsigned char>(msg[i]);
    EXPECT_FALSE(u < 0x20 || u == 0x7F) << "raw byte " << int(u) << " at " << i << " in " << quote_name(msg, 100000);
  }
  EXPECT_EQ(msg.find("\xC2\x9B"), std::string::npos) << quote_name(msg, 100000);
  EXPECT_EQ(msg.find("\xE2\x80\xAE"), std::string::npos) << quote_name(msg, 100000);
}

// --- 1. special files --------------------------------------------------------------------------

// Runs `open` on its own thread and fails (instead of hanging the suite) if it has not returned
// after a few seconds. A call stuck opening the FIFO for reading is released by opening the FIFO
// for writing once, so the thread can always be joined.
Status open_with_deadline(const std::string& fifo, const std::function<Status()>& open) {
  std::promise<Status> result;
  std::future<Status> done = result.get_future();
  std::thread t([&] { result.set_value(open()); });
  if (done.wait_for(std::chrono::seconds(5)) != std::future_status::ready) {
    ADD_FAILURE() << "opening the FIFO blocked for 5 s";
    while (done.wait_for(std::chrono::milliseconds(10)) != std::future_status::ready) {
      const int w = ::open(fifo.c_str(), O_WRONLY | O_NONBLOCK | O_CLOEXEC);
      if (w >= 0) ::close(w);
    }
  }
  t.join();
  return done.get();
}

TEST_F(HostileInputTest, FifoIsRefusedWithoutBlocking) {
  const std::string fifo = path("pipe.safetensors");
  ASSERT_EQ(::mkfifo(fifo.c_str(), 0600), 0) << std::strerror(errno);

  const auto check = [&](const Status& st) {
    EXPECT_EQ(st.code(), Code::kIoError) << st.message();
    EXPECT_NE(st.message().find("'" + fifo + "'"), std::string::npos) << st.message();
    EXPECT_NE(st.message().find("not a regular file (a FIFO)"), std::string::npos) << st.message();
  };
  check(open_with_deadline(fifo, [&] {
    std::unique_ptr<io::MappedFile> m;
    Status st = io::MappedFile::open(fifo, &m);
    EXPECT_EQ(m, nullptr);
    return st;
  }));
  check(open_with_deadline(fifo, [&] {
    std::unique_ptr<io::SafetensorsFile> f;
    return io::SafetensorsFile::open(fifo, &f);
  }));
  check(open_with_deadline(fifo, [&] {
    std::unique_ptr<ConstantMap> map;
    return ConstantMap::load_safetensors(fifo, &map);
  }));
  check(open_with_deadline(fifo, [&] {
    wharf_constant_map* map = nullptr;
    St st(wharf_constant_map_load_safetensors(fifo.c_str(), &map));
    EXPECT_EQ(st.code(), WHARF_IO_ERROR);
    EXPECT_EQ(map, nullptr);
    return Status(Code::kIoError, st.msg());
  }));
}

TEST_F(HostileInputTest, CharacterDeviceIsRefused) {
  std::unique_ptr<io::MappedFile> m;
  Status st = io::MappedFile::open("/dev/null", &m);
  EXPECT_EQ(st.code(), Code::kIoError);
  EXPECT_NE(st.message().find("'/dev/null': not a regular file (a character device)"), std::string::npos)
      << st.message();
}

// The writer's temporary name already taken by a FIFO (planted, or left by something else): the
// write fails at once instead of waiting for a reader, and the FIFO is left alone.
TEST_F(HostileInputTest, WriterDoesNotBlockOnAFifoAtItsTemporaryName) {
  // A failed rename reports the temporary's name, which tells the counter the next write uses.
  const std::string target = path("is_a_dir");
  ASSERT_EQ(::mkdir(target.c_str(), 0755), 0);
  const std::string keep = target + "/keep";
  ::close(::open(keep.c_str(), O_CREAT | O_WRONLY | O_CLOEXEC, 0644));  // non-empty: rename fails
  const uint8_t x = 1;
  io::TensorToWrite t;
  t.name = "w";
  t.meta.dtype = DType::kU8;
  t.meta.shape = {1};
  t.data = &x;
  Status st = io::write_safetensors(target, {t}, {});
  ::unlink(keep.c_str());
  ::rmdir(target.c_str());
  ASSERT_EQ(st.code(), Code::kIoError);
  const std::string prefix = "is_a_dir.tmp." + std::to_string(::getpid()) + ".";
  const size_t at = st.message().find(prefix);
  ASSERT_NE(at, std::string::npos) << st.message();
  const uint64_t used = std::stoull(st.message().substr(at + prefix.size()));

  const std::string p = path("model.safetensors");
  const std::string fifo = path("model.safetensors.tmp." + std::to_string(::getpid()) + "." + std::to_string(used + 1));
  ASSERT_EQ(::mkfifo(fifo.c_str(), 0600), 0) << std::strerror(errno);
  std::promise<Status> result;
  std::future<Status> done = result.get_future();
  std::thread writer([&] { result.set_value(io::write_safetensors(p, {t}, {})); });
  int reader = -1;
  if (done.wait_for(std::chrono::seconds(5)) != std::future_status::ready) {
    ADD_FAILURE() << "the writer blocked for 5 s on the FIFO";
    // Release it: a reader lets its open return (the reader stays open so no write gets SIGPIPE).
    reader = ::open(fifo.c_str(), O_RDONLY | O_NONBLOCK | O_CLOEXEC);
  }
  writer.join();
  if (reader >= 0) ::close(reader);
  st = done.get();
  EXPECT_EQ(st.code(), Code::kIoError) << st.message();
  EXPECT_NE(st.message().find(quote_path(fifo)), std::string::npos) << st.message();
  struct stat sb;
  EXPECT_EQ(::lstat(fifo.c_str(), &sb), 0);  // left alone
  EXPECT_TRUE(S_ISFIFO(sb.st_mode));
  EXPECT_NE(::access(p.c_str(), F_OK), 0);
}

// --- 2. zero-element shapes with huge dimensions ----------------------------------------------------

// A zero dimension makes the element count 0; the reader computes the count as the reference
// does (left to right, refusing the first overflow), so [0, huge, huge] loads and a map of it
// reports itself contiguous (no signed overflow in the strides, which UBSan checks in the
// sanitizer build), while [huge, huge, 0] overflows before the zero and is refused.
TEST(HostileShapes, ZeroElementTensorsWithHugeDimensionsLoad) {
  for (const std::string shape :
       {"[0,9223372036854775807,4]", "[4294967296,0,4294967296]", "[9223372036854775807,0,9223372036854775807,2]"}) {
    SCOPED_TRACE(shape);
    const std::string bytes = image("{\"e\":{\"dtype\":\"F32\",\"shape\":" + shape + ",\"data_offsets\":[0,0]}}");
    std::unique_ptr<io::SafetensorsFile> f;
    Status st = io::SafetensorsFile::parse(bytes.data(), bytes.size(), &f);
    ASSERT_TRUE(st.ok()) << st.message();
    TensorMeta m;
    m.dtype = f->tensors()[0].dtype;
    m.shape = f->tensors()[0].shape;
    ASSERT_TRUE(m.validate("e").ok());
    EXPECT_EQ(m.nbytes(), 0u);
    m.strides = m.contiguous_strides();
    EXPECT_TRUE(m.contiguous());
    ConstantMap map;
    ASSERT_TRUE(map.set("e", m, nullptr).ok());
  }
  // Without a zero the count must still fit, and it must fit up to the zero.
  const std::string big = image(R"({"e":{"dtype":"F32","shape":[4294967296,4294967296,1],"data_offsets":[0,0]}})");
  EXPECT_EQ(parse(big).code(), Code::kDataCorrupt);
  for (const std::string shape : {"[4294967296,4294967296,0]", "[9223372036854775807,9223372036854775807,0,2]"}) {
    SCOPED_TRACE(shape);
    Status st = parse(image("{\"e\":{\"dtype\":\"F32\",\"shape\":" + shape + ",\"data_offsets\":[0,0]}}"));
    EXPECT_EQ(st.code(), Code::kDataCorrupt);
    EXPECT_NE(st.message().find("element count of shape"), std::string::npos) << st.message();
    // Such a shape is still a valid view for callers (TensorMeta counts it as 0 elements).
    TensorMeta m;
    m.shape = shape.size() < 30 ? std::vector<int64_t>{4294967296, 4294967296, 0}
                                : std::vector<int64_t>{INT64_MAX, INT64_MAX, 0, 2};
    EXPECT_TRUE(m.validate("e").ok());
    EXPECT_EQ(m.nbytes(), 0u);
  }
}

// --- 3. names and paths are quoted in messages ----------------------------------------------------

TEST_F(HostileInputTest, TensorNameWithEscapesIsQuotedInMessages) {
  // {"layers.0\n\u001b[31m":{"dtype":"X9",...}}: the JSON escapes decode to a newline and ESC.
  const std::string header = "{\"layers.0\\n\\u001b[31m\":{\"dtype\":\"X9\",\"shape\":[1],\"data_offsets\":[0,4]}}";
  const std::string bytes = image(header, std::string(4, '\0'));
  Status st = parse(bytes);
  EXPECT_EQ(st.code(), Code::kUnsupported);  // a dtype this library does not know
  expect_clean_message(st.message());
  EXPECT_NE(st.message().find("tensor 'layers.0\\n\\u001b[31m': unknown dtype 'X9'"), std::string::npos)
      << st.message();

  // The same from disk, through the C API, from a path that holds the same characters.
  const std::string p = path("evil\n\x1b[31m.safetensors");
  write_file(p, bytes);
  wharf_constant_map* map = nullptr;
  St cst(wharf_constant_map_load_safetensors(p.c_str(), &map));
  EXPECT_EQ(cst.code(), WHARF_UNSUPPORTED);
  EXPECT_EQ(map, nullptr);
  expect_clean_message(cst.msg());
  EXPECT_NE(cst.msg().find("evil\\n\\u001b[31m.safetensors'"), std::string::npos) << cst.msg();

  // A missing file whose name carries escapes.
  St nf(wharf_constant_map_load_safetensors((dir_ + "/nope\r\n\x1b]0;title\x07").c_str(), &map));
  EXPECT_EQ(nf.code(), WHARF_NOT_FOUND);
  expect_clean_message(nf.msg());
}

TEST_F(HostileInputTest, C1ControlsAndBidiOverridesInNamesAreEscaped) {
  // U+009B (CSI) and U+202E (right-to-left override) are valid UTF-8 and valid JSON.
  for (const std::string name : {"\\u009b31mred", "ok\\u202egnp.exe", "\\u0085next"}) {
    SCOPED_TRACE(name);
    Status st = parse(
        image("{\"" + name + "\":{\"dtype\":\"F32\",\"shape\":[2],\"data_offsets\":[0,4]}}", std::string(4, '\0')));
    EXPECT_EQ(st.code(), Code::kDataCorrupt);
    expect_clean_message(st.message());
    EXPECT_NE(st.message().find("'" + name + "'"), std::string::npos) << st.message();
  }
}

TEST(HostileNames, ConstantMapQuotesNamesFromCallers) {
  ConstantMap map;
  TensorMeta bad;
  bad.shape = {2, -1};
  float x[4] = {0};
  Status st = map.set("w\n\x1b[31m", bad, x);
  EXPECT_EQ(st.code(), Code::kInvalidArgument);
  expect_clean_message(st.message());
  EXPECT_NE(st.message().find("constant 'w\\n\\u001b[31m': negative dimension"), std::string::npos) << st.message();

  TensorMeta good;
  good.shape = {2};
  ASSERT_TRUE(map.set("dup\t", good, x).ok());
  st = map.set("dup\t", good, x);
  EXPECT_EQ(st.code(), Code::kAlreadyExists);
  expect_clean_message(st.message());
  st = map.set("nul\x1b", good, nullptr);
  EXPECT_EQ(st.code(), Code::kInvalidArgument);
  expect_clean_message(st.message());
}

// Names quoted by hand ("'" + name + "'") carried a caller's newline or terminal escape raw
// into these messages (issue 21); scripts/check-quoting.sh keeps such sites out.
TEST(HostileNames, CApiMessagesQuoteNamesFromCallers) {
  const std::string name = "w\n\x1b[31m";
  wharf_constant_map* map = nullptr;
  ASSERT_EQ(wharf_status_code(wharf_constant_map_create(&map)), WHARF_OK);
  wharf_tensor_view out{};
  std::memset(&out, 0, sizeof out);
  out.struct_size = sizeof out;
  St missing(wharf_constant_map_find(map, name.c_str(), &out));
  EXPECT_EQ(missing.code(), WHARF_NOT_FOUND);
  EXPECT_NE(missing.msg().find("constant 'w\\n\\u001b[31m' is not in the map"), std::string::npos) << missing.msg();
  expect_clean_message(missing.msg());
  wharf_tensor_view bad{};
  std::memset(&bad, 0, sizeof bad);
  bad.struct_size = sizeof bad;
  bad.dtype = WHARF_DTYPE_F32;
  bad.ndim = -1;
  St negative(wharf_constant_map_set(map, name.c_str(), &bad));
  EXPECT_EQ(negative.code(), WHARF_INVALID_ARGUMENT);
  EXPECT_NE(negative.msg().find("constant 'w\\n\\u001b[31m'"), std::string::npos) << negative.msg();
  expect_clean_message(negative.msg());
  wharf_constant_map_free(map);
  wharf_dtype dt;
  St dtype(wharf_dtype_from_name(name.c_str(), &dt));
  EXPECT_EQ(dtype.code(), WHARF_NOT_FOUND);
  EXPECT_NE(dtype.msg().find("unknown dtype name 'w\\n\\u001b[31m'"), std::string::npos) << dtype.msg();
  expect_clean_message(dtype.msg());
}

// --- 4. NUL bytes in __metadata__ -----------------------------------------------------------------

// NUL is valid in safetensors metadata but cannot cross the C API in a C string: UNSUPPORTED.
TEST_F(HostileInputTest, NulInMetadataIsRefused) {
  struct Case {
    const char* label;
    std::string header;
    std::string fragment;
  };
  const Case cases[] = {
      {"NUL in a key", R"({"__metadata__":{"format":"pt","ke\u0000y":"v"}})",
       "__metadata__ key 'ke\\u0000y' contains a NUL byte"},
      {"NUL in a value", R"({"__metadata__":{"format":"p\u0000t"}})",
       "__metadata__ key 'format': value contains a NUL byte"},
      {"NUL alone", R"({"__metadata__":{"\u0000":""}})", "__metadata__ key '\\u0000' contains a NUL byte"},
  };
  for (const Case& c : cases) {
    SCOPED_TRACE(c.label);
    Status st = parse(image(c.header));
    EXPECT_EQ(st.code(), Code::kUnsupported);
    EXPECT_NE(st.message().find(c.fragment), std::string::npos) << st.message();
    expect_clean_message(st.message());

    const std::string p = path("meta.safetensors");
    write_file(p, image(c.header));
    wharf_constant_map* map = nullptr;
    St cst(wharf_constant_map_load_safetensors(p.c_str(), &map));
    EXPECT_EQ(cst.code(), WHARF_UNSUPPORTED);
    EXPECT_EQ(map, nullptr);
  }
  // An empty key and an empty value stay allowed (the format does not forbid them).
  EXPECT_TRUE(parse(image(R"({"__metadata__":{"":""}})")).ok());
}

TEST_F(HostileInputTest, WriterRefusesMetadataTheReaderWouldRefuse) {
  const std::string p = path("out.safetensors");
  Status st = io::write_safetensors(p, {}, {{std::string("k\0x", 3), "v"}});
  EXPECT_EQ(st.code(), Code::kInvalidArgument);
  EXPECT_NE(st.message().find("metadata key 'k\\u0000x' contains a NUL byte"), std::string::npos) << st.message();
  st = io::write_safetensors(p, {}, {{"k", std::string("v\0", 2)}});
  EXPECT_EQ(st.code(), Code::kInvalidArgument);
  EXPECT_NE(st.message().find("metadata key 'k': value contains a NUL byte"), std::string::npos) << st.message();
  EXPECT_NE(::access(p.c_str(), F_OK), 0);  // nothing was written
}

// --- 5. names must be UTF-8 ------------------------------------------------------------------------

const std::vector<std::string>& bad_utf8_names() {
  static const std::vector<std::string> names = {
      "\xc0\xaf",             // overlong '/'
      "layers.\xe0\x80\xaf",  // overlong, 3 bytes
      "\xed\xa0\x80",         // surrogate U+D800
      "w.\xed\xbf\xbf",       // surrogate U+DFFF
      "\xf4\x90\x80\x80",     // U+110000
      "w\xe2\x82",            // truncated 3-byte sequence
      "w\xf0\x9f\x98",        // truncated 4-byte sequence
      "\xc3",                 // truncated 2-byte sequence
      "w\x80",                // lone continuation byte
      "\xff\xfe",
  };
  return names;
}

TEST(HostileNames, ConstantMapRefusesBadNames) {
  ConstantMap map;
  TensorMeta m;
  m.shape = {2};
  float x[2] = {1, 2};
  for (const std::string& name : bad_utf8_names()) {
    Status st = map.set(name, m, x);
    EXPECT_EQ(st.code(), Code::kInvalidArgument) << quote_name(name);
    EXPECT_NE(st.message().find("constant " + quote_name(name) + ": name is not valid UTF-8"), std::string::npos)
        << st.message();
    expect_clean_message(st.message());
  }
  Status st = map.set(std::string("a\0b", 3), m, x);
  EXPECT_EQ(st.code(), Code::kInvalidArgument);
  EXPECT_NE(st.message().find("constant 'a\\u0000b': name contains a NUL byte"), std::string::npos) << st.message();
  EXPECT_EQ(map.set("", m, x).code(), Code::kInvalidArgument);
  EXPECT_EQ(map.size(), 0u);
  // Valid non-ASCII names are fine.
  EXPECT_TRUE(map.set("caf\xc3\xa9.\xf0\x9f\x98\x80", m, x).ok());
  EXPECT_EQ(map.size(), 1u);
}

TEST(HostileNames, CApiConstantMapRefusesBadNames) {
  wharf_constant_map* map = nullptr;
  ASSERT_EQ(wharf_status_code(wharf_constant_map_create(&map)), WHARF_OK);
  float x[2] = {1, 2};
  int64_t shape[1] = {2};
  wharf_tensor_view v{sizeof(wharf_tensor_view), 0, x, WHARF_DTYPE_F32, WHARF_DEVICE_CPU, 0, 1, shape, nullptr};
  for (const std::string& name : bad_utf8_names()) {
    St st(wharf_constant_map_set(map, name.c_str(), &v));
    EXPECT_EQ(st.code(), WHARF_INVALID_ARGUMENT) << quote_name(name);
    EXPECT_NE(st.msg().find("name is not valid UTF-8"), std::string::npos) << st.msg();
    expect_clean_message(st.msg());
  }
  EXPECT_EQ(wharf_constant_map_num_entries(map), 0u);
  wharf_constant_map_free(map);
}

TEST(HostileNames, SafetensorsReaderRefusesBadUtf8InNamesAndMetadata) {
  const auto tensor = [](const std::string& name) {
    return image("{\"" + name + "\":{\"dtype\":\"U8\",\"shape\":[1],\"data_offsets\":[0,1]}}", "x");
  };
  for (const std::string& name : bad_utf8_names()) {
    SCOPED_TRACE(quote_name(name));
    for (const std::string& bytes : {tensor(name), image("{\"__metadata__\":{\"" + name + "\":\"v\"}}"),
                                     image("{\"__metadata__\":{\"k\":\"" + name + "\"}}")}) {
      Status st = parse(bytes);
      EXPECT_EQ(st.code(), Code::kDataCorrupt);
      EXPECT_NE(st.message().find("invalid UTF-8"), std::string::npos) << st.message();
      expect_clean_message(st.message());
    }
  }
  // Escapes that would decode to a surrogate are refused too.
  EXPECT_EQ(parse(tensor("\\ud800")).code(), Code::kDataCorrupt);
  EXPECT_EQ(parse(image(R"({"__metadata__":{"k":"\udfff"}})")).code(), Code::kDataCorrupt);
  // A well-formed non-ASCII name is read back exactly.
  std::unique_ptr<io::SafetensorsFile> f;
  const std::string ok = tensor("caf\xc3\xa9\\u00e9\xf4\x8f\xbf\xbf");
  ASSERT_TRUE(io::SafetensorsFile::parse(ok.data(), ok.size(), &f).ok());
  EXPECT_EQ(f->tensors()[0].name, "caf\xc3\xa9\xc3\xa9\xf4\x8f\xbf\xbf");
}

TEST_F(HostileInputTest, WriterRefusesBadNames) {
  const std::string p = path("out.safetensors");
  const uint8_t byte = 1;
  io::TensorToWrite t;
  t.meta.dtype = DType::kU8;
  t.meta.shape = {1};
  t.data = &byte;
  for (const std::string& name : bad_utf8_names()) {
    t.name = name;
    Status st = io::write_safetensors(p, {t}, {});
    EXPECT_EQ(st.code(), Code::kInvalidArgument) << quote_name(name);
    EXPECT_NE(st.message().find("not valid UTF-8"), std::string::npos) << st.message();
    expect_clean_message(st.message());
    st = io::write_safetensors(p, {}, {{name, "v"}});
    EXPECT_EQ(st.code(), Code::kInvalidArgument);
    expect_clean_message(st.message());
  }
  EXPECT_NE(::access(p.c_str(), F_OK), 0);
}

}  // namespace
}  // namespace wharf

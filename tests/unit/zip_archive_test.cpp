// SPDX-License-Identifier: Apache-2.0
// The ZIP reader behind `.pt2` packages (src/io/zip_archive.h) and the package loader
// (src/models/package.h), on archives built byte by byte here: stored entries with and
// without ZIP64 records, PyTorch's alignment extra fields, a comment; then every way the
// format can be broken: each truncation, each corrupted byte of the directory, compressed,
// encrypted and CRC-mismatched entries, duplicate names, headers that disagree. Then the
// loader: each package and each replaced `.so` gets its own code (tests/unit/libs/ built
// into unit-libs/ beside this binary), and the descriptors it holds for that.
#include "io/zip_archive.h"

#include <dlfcn.h>
#include <gtest/gtest.h>
#include <poll.h>
#include <signal.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include <atomic>
#include <chrono>
#include <cmath>
#include <fstream>
#include <string>
#include <thread>
#include <vector>

#include "common/test_paths.h"
#include "core/text.h"
#include "models/package.h"

namespace wharf {
namespace {

std::string le(uint64_t v, int bytes) {
  std::string s(size_t(bytes), '\0');
  for (int i = 0; i < bytes; ++i) s[size_t(i)] = char((v >> (8 * i)) & 0xFF);
  return s;
}

struct ZEntry {
  std::string name, data;
  uint16_t method = 0;
  uint16_t flags = 0;
  std::string local_extra;  // e.g. PyTorch's alignment padding
  bool bad_crc = false;
  std::string local_name;  // if set, the local header names this instead
};

// A ZIP archive laid out as PKWARE's APPNOTE describes: local headers and data, the central
// directory, (ZIP64 end record and locator,) end record and comment.
std::string build_zip(const std::vector<ZEntry>& es, bool zip64 = false, const std::string& comment = "") {
  std::string out, cd;
  for (const ZEntry& e : es) {
    const uint64_t off = out.size();
    uint32_t crc = io::crc32(reinterpret_cast<const uint8_t*>(e.data.data()), e.data.size());
    if (e.bad_crc) crc ^= 1;
    const std::string& ln = e.local_name.empty() ? e.name : e.local_name;
    out += le(0x04034b50, 4) + le(20, 2) + le(e.flags, 2) + le(e.method, 2) + le(0, 4) + le(crc, 4) +
           le(e.data.size(), 4) + le(e.data.size(), 4) + le(ln.size(), 2) + le(e.local_extra.size(), 2) + ln +
           e.local_extra + e.data;
    std::string extra;
    if (zip64) extra = le(1, 2) + le(24, 2) + le(e.data.size(), 8) + le(e.data.size(), 8) + le(off, 8);
    const uint64_t sat = 0xFFFFFFFF;
    cd += le(0x02014b50, 4) + le(45, 2) + le(45, 2) + le(e.flags, 2) + le(e.method, 2) + le(0, 4) + le(crc, 4) +
          le(zip64 ? sat : e.data.size(), 4) + le(zip64 ? sat : e.data.size(), 4) + le(e.name.size(), 2) +
          le(extra.size(), 2) + le(0, 2) + le(0, 2) + le(0, 2) + le(0, 4) + le(zip64 ? sat : off, 4) + e.name + extra;
  }
  const uint64_t cd_off = out.size();
  out += cd;
  if (zip64) {
    const uint64_t z64 = out.size();
    out += le(0x06064b50, 4) + le(44, 8) + le(45, 2) + le(45, 2) + le(0, 4) + le(0, 4) + le(es.size(), 8) +
           le(es.size(), 8) + le(cd.size(), 8) + le(cd_off, 8);
    out += le(0x07064b50, 4) + le(0, 4) + le(z64, 8) + le(1, 4);
    out += le(0x06054b50, 4) + le(0, 2) + le(0, 2) + le(0xFFFF, 2) + le(0xFFFF, 2) + le(0xFFFFFFFF, 4) +
           le(0xFFFFFFFF, 4) + le(comment.size(), 2) + comment;
  } else {
    out += le(0x06054b50, 4) + le(0, 2) + le(0, 2) + le(es.size(), 2) + le(es.size(), 2) + le(cd.size(), 4) +
           le(cd_off, 4) + le(comment.size(), 2) + comment;
  }
  return out;
}

// The archive views `bytes`: they must outlive *z.
Status parse(const std::string& bytes, std::unique_ptr<io::ZipArchive>* z) {
  return io::ZipArchive::from_bytes(reinterpret_cast<const uint8_t*>(bytes.data()), bytes.size(), "t.pt2", z);
}

std::string read_all(const io::ZipArchive& z, const std::string& name, Status* st) {
  const io::ZipEntry* e = z.find(name);
  if (!e) {
    *st = NotFound(name);
    return "";
  }
  const uint8_t* d = nullptr;
  uint64_t n = 0;
  *st = z.read(*e, &d, &n);
  return st->ok() ? std::string(reinterpret_cast<const char*>(d), size_t(n)) : "";
}

TEST(ZipArchive, Crc32MatchesTheStandardCheckValue) {
  const std::string s = "123456789";
  EXPECT_EQ(io::crc32(reinterpret_cast<const uint8_t*>(s.data()), s.size()), 0xCBF43926u);
  EXPECT_EQ(io::crc32(nullptr, 0), 0u);
}

TEST(ZipArchive, ReadsStoredEntriesWithAndWithoutZip64) {
  for (bool zip64 : {false, true}) {
    SCOPED_TRACE(zip64 ? "zip64" : "plain");
    ZEntry a{"pkg/archive_format", "pt2"};
    ZEntry b{"pkg/data/aotinductor/model/x.so", std::string(1000, 'q')};
    b.local_extra = le(0xCAFE, 2) + le(7, 2) + std::string(7, '\0');  // padding to an alignment, as PyTorch does
    ZEntry c{"pkg/empty", ""};
    const std::string bytes = build_zip({a, b, c}, zip64, "a comment");
    std::unique_ptr<io::ZipArchive> z;
    Status st = parse(bytes, &z);
    ASSERT_TRUE(st.ok()) << st.message();
    ASSERT_EQ(z->entries().size(), 3u);
    EXPECT_EQ(read_all(*z, "pkg/archive_format", &st), "pt2");
    EXPECT_TRUE(st.ok()) << st.message();
    EXPECT_EQ(read_all(*z, "pkg/data/aotinductor/model/x.so", &st), b.data);
    EXPECT_TRUE(st.ok()) << st.message();
    EXPECT_EQ(read_all(*z, "pkg/empty", &st), "");
    EXPECT_TRUE(st.ok()) << st.message();
    EXPECT_EQ(z->find("absent"), nullptr);
  }
}

TEST(ZipArchive, CompressedEncryptedAndMismatchedEntriesAreRefusedWhenRead) {
  ZEntry deflated{"d", "xyz"};
  deflated.method = 8;
  ZEntry encrypted{"e", "xyz"};
  encrypted.flags = 1;
  ZEntry bad{"c", "payload"};
  bad.bad_crc = true;
  std::unique_ptr<io::ZipArchive> z;
  const std::string bytes = build_zip({deflated, encrypted, bad, ZEntry{"ok", "fine"}});  // outlives z
  Status st = parse(bytes, &z);
  ASSERT_TRUE(st.ok()) << st.message();
  read_all(*z, "d", &st);
  EXPECT_EQ(st.code(), Code::kUnsupported) << st.message();
  EXPECT_NE(st.message().find("entry 'd' is compressed (method 8)"), std::string::npos) << st.message();
  read_all(*z, "e", &st);
  EXPECT_EQ(st.code(), Code::kUnsupported) << st.message();
  EXPECT_NE(st.message().find("'e' is encrypted"), std::string::npos) << st.message();
  read_all(*z, "c", &st);
  EXPECT_EQ(st.code(), Code::kDataCorrupt) << st.message();
  EXPECT_NE(st.message().find("entry 'c': CRC-32"), std::string::npos) << st.message();
  EXPECT_EQ(read_all(*z, "ok", &st), "fine");
}

TEST(ZipArchive, MalformedDirectoriesAreDataCorrupt) {
  std::unique_ptr<io::ZipArchive> z;
  auto expect_corrupt = [&](const std::string& bytes, const char* fragment) {
    Status st = parse(bytes, &z);
    EXPECT_EQ(st.code(), Code::kDataCorrupt) << st.message();
    EXPECT_NE(st.message().find(fragment), std::string::npos) << "want '" << fragment << "' in: " << st.message();
    EXPECT_NE(st.message().find("archive 't.pt2'"), std::string::npos) << st.message();
  };
  expect_corrupt("", "shorter than its end record");
  expect_corrupt(std::string(100, 'x'), "no end of central directory record");
  expect_corrupt(build_zip({ZEntry{"a", "1"}}) + "trailing", "no end of central directory record");
  expect_corrupt(build_zip({ZEntry{"a", "1"}, ZEntry{"a", "2"}}), "two entries are named 'a'");
  ZEntry liar{"real", "1"};
  liar.local_name = "fake";
  expect_corrupt(build_zip({liar}), "its local header names another file");
  ZEntry nul{std::string("a\0b", 3), "1"};
  expect_corrupt(build_zip({nul}), "contains a NUL byte");
  // An end record that claims more entries than its directory can hold.
  std::string many = build_zip({ZEntry{"a", "1"}});
  many[many.size() - 22 + 10] = char(0xFF);
  many[many.size() - 22 + 8] = char(0xFF);
  expect_corrupt(many, "cannot fit in a central directory");
  // Saturated fields without ZIP64 records.
  std::string sat = build_zip({ZEntry{"a", "1"}});
  for (int i = 12; i < 20; ++i) sat[sat.size() - 22 + size_t(i)] = char(0xFF);
  expect_corrupt(sat, "no ZIP64 locator");
}

// Every prefix of an archive is refused cleanly, and every single corrupted byte (headers,
// data, directory, end records) is either refused or still reads within the archive (run under
// ASan in make test, so an out-of-bounds read fails the test).
TEST(ZipArchive, EveryTruncationAndCorruptedByteIsHandled) {
  for (bool zip64 : {false, true}) {
    const std::string bytes = build_zip(
        {ZEntry{"pkg/data/aotinductor/model/m.so", std::string(300, 'm')}, ZEntry{"pkg/version", "1"}}, zip64);
    std::unique_ptr<io::ZipArchive> z;
    for (size_t n = 0; n < bytes.size(); ++n) {
      // Copied so ASan sees exactly n bytes.
      std::vector<uint8_t> cut(bytes.begin(), bytes.begin() + std::ptrdiff_t(n));
      Status st = io::ZipArchive::from_bytes(cut.data(), cut.size(), "t", &z);
      ASSERT_FALSE(st.ok()) << "prefix of " << n << " bytes was accepted";
      ASSERT_EQ(st.code(), Code::kDataCorrupt) << st.message();
    }
    for (size_t i = 0; i < bytes.size(); ++i)
      for (uint8_t v : {uint8_t(0x00), uint8_t(0xFF), uint8_t(0x7F), uint8_t(bytes[i] ^ 0x01)}) {
        std::vector<uint8_t> bad(bytes.begin(), bytes.end());
        bad[i] = v;
        Status st = io::ZipArchive::from_bytes(bad.data(), bad.size(), "t", &z);
        if (!st.ok()) {
          ASSERT_TRUE(st.code() == Code::kDataCorrupt || st.code() == Code::kUnsupported) << st.message();
          continue;
        }
        for (const io::ZipEntry& e : z->entries()) {
          const uint8_t* d = nullptr;
          uint64_t n = 0;
          if (z->read(e, &d, &n).ok()) {
            ASSERT_GE(d, bad.data());
            ASSERT_LE(d + n, bad.data() + bad.size());
          }
        }
      }
  }
}

// --- packages ---------------------------------------------------------------------------

class ModelPackage : public ::testing::Test {
 protected:
  void TearDown() override {
    for (const std::string& p : files_) ::unlink(p.c_str());
  }
  std::string path(const std::string& name) {
    return ::testing::TempDir() + "wharf_pkg_" + std::to_string(::getpid()) + "_" + name;
  }
  std::string write(const std::string& name, const std::string& bytes) {
    const std::string p = path(name);
    std::ofstream(p, std::ios::binary) << bytes;
    files_.push_back(p);
    return p;
  }
  static std::string read(const std::string& p) {
    std::ifstream f(p, std::ios::binary);
    EXPECT_TRUE(f.good()) << "cannot read " << p;
    return std::string(std::istreambuf_iterator<char>(f), {});
  }
  // A real shared library's bytes (the C math library this test links), so dlopen from the
  // package's memory file is exercised for real.
  static std::string a_shared_library() {
    Dl_info info{};
    EXPECT_NE(dladdr(reinterpret_cast<void*>(static_cast<double (*)(double)>(&std::cos)), &info), 0);
    return read(info.dli_fname);
  }
  // tests/unit/libs/tagged_library.c built as tagged_<tag>.so into unit-libs/ beside this
  // test binary (in the build tree and in the GPU bundle alike).
  static std::string tagged_library_path(const std::string& tag) {
    return wharf_test::binary_dir() + "/unit-libs/tagged_" + tag + ".so";
  }
  static std::string tagged_library(const std::string& tag) {
    const std::string bytes = read(tagged_library_path(tag));
    EXPECT_GT(bytes.size(), 100u) << tagged_library_path(tag);
    return bytes;
  }
  // A package whose model library is tagged_<tag>.
  std::string package(const std::string& name, const std::string& tag) {
    return write(name, build_zip({ZEntry{"m/archive_format", "pt2"},
                                  ZEntry{"m/data/aotinductor/model/" + tag + ".wrapper.so", tagged_library(tag)}}));
  }
  // Which library's code `lib` runs.
  static std::string tag_of(const ModelLibrary* lib) {
    if (!lib) return "<not loaded>";
    auto fn = reinterpret_cast<const char* (*)()>(dlsym(lib->handle(), "wharf_test_library_tag"));
    return fn ? fn() : "<no tag function>";
  }
  static std::unique_ptr<ModelLibrary> load(const std::string& p) {
    std::unique_ptr<ModelLibrary> lib;
    std::string err;
    Status st = open_model_library(p, RTLD_NOW | RTLD_LOCAL, &lib, &err);
    EXPECT_TRUE(st.ok()) << st.message();
    EXPECT_NE(lib, nullptr) << p << ": " << err;
    return lib;
  }
  std::vector<std::string> files_;
};

TEST_F(ModelPackage, OpensTheModelLibraryFromAPackageWithoutATemporaryFile) {
  const std::string lib = a_shared_library();
  ASSERT_GT(lib.size(), 1000u);
  const std::string pkg = write("ok.pt2", build_zip({ZEntry{"m/archive_format", "pt2"},
                                                     ZEntry{"m/data/aotinductor/model/abc.wrapper.cpp", "// source"},
                                                     ZEntry{"m/data/aotinductor/model/abc.wrapper.so", lib}},
                                                    true));
  EXPECT_TRUE(is_model_package(pkg));
  std::unique_ptr<ModelLibrary> h = load(pkg);
  ASSERT_NE(h, nullptr);
  EXPECT_NE(dlsym(h->handle(), "cos"), nullptr);
}

TEST_F(ModelPackage, PackagesWithoutOneModelLibraryAreRefusedByName) {
  std::unique_ptr<ModelLibrary> h;
  std::string err;
  const std::string none =
      write("none.pt2", build_zip({ZEntry{"m/archive_format", "pt2"}, ZEntry{"m/data/x.so", "x"}}));
  Status st = open_model_library(none, RTLD_NOW, &h, &err);
  EXPECT_EQ(st.code(), Code::kInvalidArgument) << st.message();
  EXPECT_NE(st.message().find("holds no compiled model"), std::string::npos) << st.message();
  EXPECT_NE(st.message().find("none.pt2"), std::string::npos) << st.message();

  const std::string two =
      write("two.pt2", build_zip({ZEntry{"m/data/aotinductor/a/x.so", "x"}, ZEntry{"m/data/aotinductor/b/y.so", "y"}}));
  st = open_model_library(two, RTLD_NOW, &h, &err);
  EXPECT_EQ(st.code(), Code::kInvalidArgument) << st.message();
  EXPECT_NE(st.message().find("'m/data/aotinductor/a/x.so', 'm/data/aotinductor/b/y.so'"), std::string::npos)
      << st.message();

  // Not a shared library: the loader's refusal names the entry (not the descriptor it was
  // opened through), the call itself succeeds, and no descriptor stays behind.
  const size_t held = model_library_descriptors();
  const std::string junk = write("junk.pt2", build_zip({ZEntry{"m/data/aotinductor/model/z.so", "not an ELF file"}}));
  st = open_model_library(junk, RTLD_NOW, &h, &err);
  ASSERT_TRUE(st.ok()) << st.message();
  EXPECT_EQ(h, nullptr);
  EXPECT_NE(err.find("entry 'm/data/aotinductor/model/z.so'"), std::string::npos) << err;
  EXPECT_EQ(err.find("/proc/self/fd"), std::string::npos) << err;
  st = open_model_library(write("junk.so", "not an ELF file"), RTLD_NOW, &h, &err);
  ASSERT_TRUE(st.ok()) << st.message();
  EXPECT_EQ(h, nullptr);
  EXPECT_EQ(err.find("/proc/self/fd"), std::string::npos) << err;
  EXPECT_EQ(model_library_descriptors(), held);

  // A compressed model library and a corrupt package.
  ZEntry deflated{"m/data/aotinductor/model/z.so", "x"};
  deflated.method = 8;
  st = open_model_library(write("deflated.pt2", build_zip({deflated})), RTLD_NOW, &h, &err);
  EXPECT_EQ(st.code(), Code::kUnsupported) << st.message();
  st = open_model_library(write("corrupt.pt2", "PK not really"), RTLD_NOW, &h, &err);
  EXPECT_EQ(st.code(), Code::kDataCorrupt) << st.message();
  st = open_model_library(::testing::TempDir() + "wharf_no_such.pt2", RTLD_NOW, &h, &err);
  EXPECT_EQ(st.code(), Code::kNotFound) << st.message();
  st = open_model_library(::testing::TempDir() + "wharf_no_such.so", RTLD_NOW, &h, &err);
  EXPECT_EQ(st.code(), Code::kNotFound) << st.message();
  EXPECT_NE(st.message().find("wharf_no_such.so"), std::string::npos) << st.message();
}

TEST_F(ModelPackage, SeveralModelsChooseTheDefaultOne) {
  const std::string lib = a_shared_library();
  const std::string pkg = write("multi.pt2", build_zip({ZEntry{"m/data/aotinductor/other/o.so", "not loaded"},
                                                        ZEntry{"m/data/aotinductor/model/d.so", lib}}));
  EXPECT_NE(load(pkg), nullptr);
}

// Issue 21: a package's library used to be opened as /proc/self/fd/<n> of a memory file
// closed at once; the next package's memory file got the same number, and the dynamic
// loader, which matches loaded objects by that name, handed it the first package's code.
TEST_F(ModelPackage, TwoPackagesLoadedAtOnceEachRunTheirOwnCode) {
  const std::string a = package("a.pt2", "a"), b = package("b.pt2", "b");
  std::unique_ptr<ModelLibrary> la = load(a);
  std::unique_ptr<ModelLibrary> lb = load(b);
  EXPECT_EQ(tag_of(la.get()), "a");
  EXPECT_EQ(tag_of(lb.get()), "b");
  // The same package loaded again is a library of its own, with the same code.
  std::unique_ptr<ModelLibrary> la2 = load(a);
  EXPECT_EQ(tag_of(la2.get()), "a");
  EXPECT_EQ(tag_of(la.get()), "a");
  EXPECT_EQ(tag_of(lb.get()), "b");
}

// AOTInductor libraries stay loaded after dlclose (their STB_GNU_UNIQUE symbols): a freed
// package's library must not answer for the next one either (holding each memory file only
// while its library is in use would not be enough).
TEST_F(ModelPackage, ALibraryTheLoaderKeepsAfterItsModelIsFreedDoesNotAnswerForTheNext) {
  const std::string a = package("a.pt2", "a"), b = package("b.pt2", "b");
  for (int i = 0; i < 3; ++i) {
    EXPECT_EQ(tag_of(load(a).get()), "a") << "round " << i;
    EXPECT_EQ(tag_of(load(b).get()), "b") << "round " << i;
  }
}

// A `.so` replaced by rename at the same path while the old one is loaded: the dynamic
// loader would return the loaded object for the same path string.
TEST_F(ModelPackage, ARenameReplacedLibraryLoadsTheNewCode) {
  const std::string so = write("model.so", tagged_library("a"));
  std::unique_ptr<ModelLibrary> old = load(so);
  EXPECT_EQ(tag_of(old.get()), "a");
  const std::string tmp = write("model.so.tmp", tagged_library("b"));
  ASSERT_EQ(::rename(tmp.c_str(), so.c_str()), 0);
  std::unique_ptr<ModelLibrary> now = load(so);
  EXPECT_EQ(tag_of(now.get()), "b");
  EXPECT_EQ(tag_of(old.get()), "a");
  // The same file loaded twice is one object; a replaced one is another, also after the old
  // model is freed (tagged_a stays loaded, as AOTInductor models do).
  std::unique_ptr<ModelLibrary> again = load(so);
  ASSERT_NE(again, nullptr);
  ASSERT_NE(now, nullptr);
  EXPECT_EQ(again->handle(), now->handle());
  old.reset();
  const std::string tmp2 = write("model.so.tmp2", tagged_library("a"));
  ASSERT_EQ(::rename(tmp2.c_str(), so.c_str()), 0);
  EXPECT_EQ(tag_of(load(so).get()), "a");
  EXPECT_EQ(tag_of(now.get()), "b");
}

// Another part of the process left libraries loaded under /proc/self/fd/<n> names and
// closed those descriptors (the same mistake, outside Wharf): packages and `.so` files
// opened through descriptors of those numbers still get their own code. And a file that the
// process has already loaded by its path is the same object, as dlopen would say.
TEST_F(ModelPackage, NamesLeftBehindByOtherCodeAreNotReused) {
  const std::string c = tagged_library("c");
  std::vector<void*> foreign;
  for (int i = 0; i < 8; ++i) {
    const int fd = ::memfd_create("foreign", MFD_CLOEXEC);
    ASSERT_GE(fd, 0);
    ASSERT_EQ(::write(fd, c.data(), c.size()), ssize_t(c.size()));
    void* h = dlopen(("/proc/self/fd/" + std::to_string(fd)).c_str(), RTLD_NOW | RTLD_LOCAL);
    ::close(fd);
    ASSERT_NE(h, nullptr) << dlerror();
    foreign.push_back(h);
  }
  EXPECT_EQ(tag_of(load(package("b.pt2", "b")).get()), "b");
  EXPECT_EQ(tag_of(load(write("b.so", tagged_library("b"))).get()), "b");

  const std::string so = write("c.so", c);
  void* by_path = dlopen(so.c_str(), RTLD_NOW | RTLD_LOCAL);
  ASSERT_NE(by_path, nullptr) << dlerror();
  std::unique_ptr<ModelLibrary> lib = load(so);
  ASSERT_NE(lib, nullptr);
  EXPECT_EQ(lib->handle(), by_path);
  EXPECT_EQ(tag_of(lib.get()), "c");
  lib.reset();
  dlclose(by_path);
  for (void* h : foreign) dlclose(h);
}

// Wharf keeps a library's descriptor only while the loader may know its name: one per
// file, however often it is loaded, and none once the library is unloaded.
TEST_F(ModelPackage, DescriptorsAreHeldOncePerLibraryAndReleasedWhenItIsUnloaded) {
  const size_t before = model_library_descriptors();
  const std::string unloadable = write("c.so", tagged_library("c"));
  for (int i = 0; i < 20; ++i) {
    std::unique_ptr<ModelLibrary> x = load(unloadable), y = load(unloadable);
    ASSERT_NE(x, nullptr);
    ASSERT_NE(y, nullptr);
    EXPECT_EQ(x->handle(), y->handle());
    EXPECT_EQ(model_library_descriptors(), before + 1);
  }
  EXPECT_EQ(model_library_descriptors(), before);
  const std::string kept = write("a.so", tagged_library("a"));
  for (int i = 0; i < 20; ++i) EXPECT_EQ(tag_of(load(kept).get()), "a");
  EXPECT_EQ(model_library_descriptors(), before + 1);  // the loader keeps tagged_a: its name stays taken
}

// Loads and frees from many threads at once: each gets its own code, and afterwards only
// the descriptor of the library the loader keeps (tagged_b) remains; the packages' copies of
// tagged_c are unloaded and their memory files closed.
TEST_F(ModelPackage, ConcurrentLoadsEachGetTheirOwnCode) {
  const std::string pkg = package("c.pt2", "c"), so = write("b.so", tagged_library("b"));
  const size_t before = model_library_descriptors();
  std::atomic<int> wrong{0};
  std::vector<std::thread> threads;
  for (int t = 0; t < 8; ++t)
    threads.emplace_back([&, t] {
      for (int i = 0; i < 20; ++i) {
        std::unique_ptr<ModelLibrary> lib = load(t % 2 ? pkg : so);
        if (tag_of(lib.get()) != (t % 2 ? "c" : "b")) ++wrong;
      }
    });
  for (std::thread& t : threads) t.join();
  EXPECT_EQ(wrong.load(), 0);
  EXPECT_EQ(model_library_descriptors(), before + 1);
}

// What a load in a child process came to: the status it returned, or that it did not
// return within the time allowed (the child is killed then).
struct ChildLoad {
  bool timed_out = false;
  int code = -1;
  std::string message;
};

ChildLoad load_in_child(const std::string& path, int timeout_ms) {
  ChildLoad r;
  int fds[2];
  if (::pipe(fds) != 0) {
    r.message = "pipe failed";
    return r;
  }
  const pid_t pid = ::fork();
  if (pid == 0) {
    ::close(fds[0]);
    std::unique_ptr<ModelLibrary> lib;
    std::string err;
    Status st = open_model_library(path, RTLD_NOW, &lib, &err);
    const std::string out = std::to_string(int(st.code())) + " " + st.message() + err;
    ssize_t w = ::write(fds[1], out.data(), out.size());
    (void)w;
    ::_exit(0);
  }
  ::close(fds[1]);
  std::string got;
  const auto deadline = std::chrono::steady_clock::now() + std::chrono::milliseconds(timeout_ms);
  for (;;) {
    const auto left =
        std::chrono::duration_cast<std::chrono::milliseconds>(deadline - std::chrono::steady_clock::now());
    pollfd p{fds[0], POLLIN, 0};
    if (left.count() <= 0 || ::poll(&p, 1, int(left.count())) == 0) {
      r.timed_out = true;
      ::kill(pid, SIGKILL);
      break;
    }
    char buf[4096];
    const ssize_t n = ::read(fds[0], buf, sizeof buf);
    if (n <= 0) break;
    got.append(buf, size_t(n));
  }
  ::close(fds[0]);
  int wstatus = 0;
  ::waitpid(pid, &wstatus, 0);
  const size_t sp = got.find(' ');
  if (!r.timed_out && sp != std::string::npos) {
    r.code = std::stoi(got.substr(0, sp));
    r.message = got.substr(sp + 1);
  }
  return r;
}

// Issue 21: a model path that is a FIFO blocked forever in dlopen (waiting for a writer).
// The load runs in a child process so that a regression fails after a few seconds instead
// of hanging the suite. A directory and a character device are refused the same way.
TEST_F(ModelPackage, AFifoADirectoryOrADeviceIsRefusedWithoutBlocking) {
  const std::string fifo_so = path("fifo.so"), fifo_pkg = path("fifo.pt2"), dir_so = path("dir.so");
  ASSERT_EQ(::mkfifo(fifo_so.c_str(), 0600), 0);
  files_.push_back(fifo_so);
  ASSERT_EQ(::mkfifo(fifo_pkg.c_str(), 0600), 0);
  files_.push_back(fifo_pkg);
  ASSERT_EQ(::mkdir(dir_so.c_str(), 0700), 0);
  struct RemoveDir {
    std::string p;
    ~RemoveDir() { ::rmdir(p.c_str()); }
  } remove_dir{dir_so};
  const struct {
    std::string path, kind;
  } cases[] = {
      {fifo_so, "(a FIFO)"}, {fifo_pkg, "(a FIFO)"}, {dir_so, "(a directory)"}, {"/dev/null", "(a character device)"}};
  for (const auto& c : cases) {
    SCOPED_TRACE(c.path);
    const ChildLoad r = load_in_child(c.path, 5000);
    EXPECT_FALSE(r.timed_out) << "loading " << c.path << " blocked";
    if (r.timed_out) continue;
    EXPECT_EQ(r.code, int(Code::kIoError)) << r.message;
    EXPECT_NE(r.message.find("not a regular file " + c.kind), std::string::npos) << r.message;
    EXPECT_NE(r.message.find(quote_path(c.path)), std::string::npos) << r.message;
  }
}

}  // namespace
}  // namespace wharf

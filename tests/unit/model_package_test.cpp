// SPDX-License-Identifier: Apache-2.0
// wharf_model_package_load on the host backend: every refusal of docs/model-package.md's
// table that needs no compiled method, on packages crafted byte by byte in a temporary
// directory (manifest text, safetensors images, placeholder method files). A valid package
// gets as far as its first method and stops there with UNSUPPORTED (AOTInductor methods run
// on the CUDA backend): so everything before the methods is checked before the device is
// touched, and a refusal leaves nothing behind (no memory, no open file, no file written).
// The loading itself (weights, methods, sessions, updates) is tests/gpu/model_package_gpu_test.cpp.

#include <dirent.h>
#include <sys/stat.h>
#include <unistd.h>

#include <gtest/gtest.h>

#include <atomic>
#include <cstring>
#include <fstream>
#include <string>
#include <vector>

#define WHARF_EXPERIMENTAL
#include "common/test_support.h"
#include "core/dtype.h"
#include "models/model_package.h"
#include "wharf/wharf.h"

namespace {

using wharf_test::St;

std::string le64(uint64_t n) {
  std::string s(8, '\0');
  for (int i = 0; i < 8; ++i) s[i] = static_cast<char>((n >> (8 * i)) & 0xFF);
  return s;
}

struct T {
  std::string name, dtype, shape;
  size_t bytes;
};

// A safetensors image as the reference lays it out (zero-filled data).
std::string st_file(const std::vector<T>& ts) {
  std::string h = "{", data;
  for (const T& t : ts) {
    if (h.size() > 1) h += ",";
    h += "\"" + t.name + "\":{\"dtype\":\"" + t.dtype + "\",\"shape\":" + t.shape + ",\"data_offsets\":[" +
         std::to_string(data.size()) + "," + std::to_string(data.size() + t.bytes) + "]}";
    data += std::string(t.bytes, '\0');
  }
  h += "}";
  h.resize((h.size() + 7) / 8 * 8, ' ');
  return le64(h.size()) + h + data;
}

// The valid manifest every test starts from; a test replaces one piece of it.
const char* const kManifest = R"({
  "format": "wharf-model-package",
  "format_version": 1,
  "name": "tiny",
  "dtype": "float32",
  "source": {"model_type": "llama", "random_weights": true},
  "producer": {"tool": "wharf-export", "future_key": [1, 2, 3]},
  "max_seq_len": 64,
  "weights": {
    "files": ["weights/model-00001-of-00002.safetensors", "weights/model-00002-of-00002.safetensors"],
    "parameters": [
      {"fqn": "embed.weight", "dtype": "float32", "shape": [8, 4]},
      {"fqn": "norm.weight", "dtype": "bfloat16", "shape": [4]},
      {"fqn": "lm_head.weight", "dtype": "F32", "shape": [8, 4]}
    ]
  },
  "state": [
    {"fqn": "cache.key_0", "dtype": "float32", "shape": [1, 2, 64, 2], "initial": "zeros"},
    {"fqn": "cache.pos", "dtype": "int64", "shape": [1], "initial": {"tensor": "pos0"}}
  ],
  "state_file": "state.safetensors",
  "methods": [
    {"name": "prefill", "file": "methods/prefill.so",
     "inputs": [{"name": "input_ids", "dtype": "int64", "shape": [1, "T"]},
                {"name": "cache_position", "dtype": "int64", "shape": ["T"]}],
     "outputs": [{"name": "logits", "dtype": "float32", "shape": [1, 1, 8]}],
     "dims": {"T": {"min": 1, "max": 64}}},
    {"name": "decode", "file": "methods/decode.so",
     "inputs": [{"name": "input_ids", "dtype": "int64", "shape": [1, 1]},
                {"name": "cache_position", "dtype": "int64", "shape": [1]}],
     "outputs": [{"name": "logits", "dtype": "float32", "shape": [1, 1, 8]}]}
  ]
})";

class WharfPackage : public ::testing::Test {
 protected:
  void SetUp() override {
    static std::atomic<int> counter{0};
    base_ = ::testing::TempDir() + "wharf_pkg_" + std::to_string(::getpid()) + "_" + std::to_string(counter++);
    ASSERT_EQ(::mkdir(base_.c_str(), 0755), 0);
    dir_ = base_ + "/tiny.wharf";
    ASSERT_EQ(::mkdir(dir_.c_str(), 0755), 0);
    mkdir_p("weights");
    mkdir_p("methods");
    manifest_ = kManifest;
    write("weights/model-00001-of-00002.safetensors",
          st_file({{"embed.weight", "F32", "[8,4]", 128}, {"norm.weight", "BF16", "[4]", 8}}));
    write("weights/model-00002-of-00002.safetensors", st_file({{"lm_head.weight", "F32", "[8,4]", 128}}));
    write("state.safetensors", st_file({{"pos0", "I64", "[1]", 8}}));
    write("methods/prefill.so", "placeholder: the host backend never opens it");
    write("methods/decode.so", "placeholder");
    rt_ = wharf_test::make_runtime(WHARF_BACKEND_HOST);
    ASSERT_NE(rt_, nullptr);
  }
  void TearDown() override {
    wharf_runtime_free(rt_);
    remove_all(base_);
  }

  static void remove_all(const std::string& p) {
    struct stat st;
    if (::lstat(p.c_str(), &st) != 0) return;
    if (S_ISDIR(st.st_mode)) {
      if (DIR* d = ::opendir(p.c_str())) {
        while (dirent* e = ::readdir(d)) {
          const std::string n = e->d_name;
          if (n != "." && n != "..") remove_all(p + "/" + n);
        }
        ::closedir(d);
      }
      ::rmdir(p.c_str());
    } else {
      ::unlink(p.c_str());
    }
  }
  void mkdir_p(const std::string& rel) { ASSERT_EQ(::mkdir((dir_ + "/" + rel).c_str(), 0755), 0); }
  void write(const std::string& rel, const std::string& bytes, const std::string& in = "") {
    const std::string p = (in.empty() ? dir_ : in) + "/" + rel;
    std::ofstream f(p, std::ios::binary | std::ios::trunc);
    f.write(bytes.data(), static_cast<std::streamsize>(bytes.size()));
    ASSERT_TRUE(f.good()) << p;
  }
  // Replaces `from` (which must occur once) in the manifest.
  void edit(const std::string& from, const std::string& to) {
    const size_t at = manifest_.find(from);
    ASSERT_NE(at, std::string::npos) << from;
    ASSERT_EQ(manifest_.find(from, at + 1), std::string::npos) << from << " occurs twice";
    manifest_.replace(at, from.size(), to);
  }

  static size_t open_fds() {
    size_t n = 0;
    if (DIR* d = ::opendir("/proc/self/fd")) {
      while (::readdir(d)) ++n;
      ::closedir(d);
    }
    return n;
  }
  static size_t entries(const std::string& dir) {
    size_t n = 0;
    if (DIR* d = ::opendir(dir.c_str())) {
      while (::readdir(d)) ++n;
      ::closedir(d);
    }
    return n;
  }

  // Writes the manifest and loads the package; checks that a refusal left nothing behind:
  // no memory held by the runtime, no descriptor open, no file added to the package.
  wharf_status* load(const std::string& path = "") {
    if (!manifest_.empty()) write("manifest.json", manifest_);
    const size_t fds = open_fds(), files = entries(dir_);
    wharf_model_package* pkg = nullptr;
    wharf_model_package_options o;
    wharf_model_package_options_init(&o);
    o.session_capacity = capacity_;
    wharf_status* st = wharf_model_package_load(rt_, (path.empty() ? dir_ : path).c_str(), &o, &pkg);
    EXPECT_EQ(pkg, nullptr) << "the host backend cannot load the methods";
    wharf_model_package_free(pkg);
    EXPECT_EQ(open_fds(), fds) << "a descriptor was left open";
    EXPECT_EQ(entries(dir_), files) << "a file was added to the package";
    wharf_memory_stats ms;
    std::memset(&ms, 0, sizeof ms);
    ms.struct_size = sizeof ms;
    EXPECT_OK(wharf_runtime_get_memory_stats(rt_, &ms));
    for (uint64_t c : ms.current) EXPECT_EQ(c, 0u) << "memory left behind";
    return st;
  }

  // Loads and expects `code` with every one of `needles` in the message.
  void expect_refused(wharf_code code, const std::vector<std::string>& needles) {
    St st(load());
    EXPECT_EQ(st.code(), code) << st.msg();
    for (const std::string& n : needles) EXPECT_TRUE(st.has(n)) << "'" << n << "' not in: " << st.msg();
  }

  // A batched method (BATCHED.md: compiled over a state arena of 8 sessions) listed first.
  void add_batch_method() {
    edit("\"methods\": [", std::string("\"methods\": [\n    ") + kBatchMethod + ",");
    write("methods/decode_batch.so", "placeholder");
  }
  static constexpr const char* kBatchMethod = R"({"name": "decode_batch", "file": "methods/decode_batch.so",
     "session_capacity": 8,
     "inputs": [{"name": "input_ids", "dtype": "int64", "shape": ["N", 1]},
                {"name": "cache_position", "dtype": "int64", "shape": ["N"]},
                {"name": "slots", "dtype": "int64", "shape": ["N"]}],
     "outputs": [{"name": "logits", "dtype": "float32", "shape": ["N", 1, 8]}],
     "dims": {"N": {"min": 1, "max": 8}}})";

  std::string base_, dir_, manifest_;
  uint32_t capacity_ = 0;  // wharf_model_package_options.session_capacity of load()
  wharf_runtime* rt_ = nullptr;
};

TEST_F(WharfPackage, AValidPackageIsCheckedWholeBeforeItsFirstMethodNeedsTheDevice) {
  // Unknown keys (source, producer's future_key) are ignored; torch and safetensors dtype
  // names are both accepted; the state file and both shards pass: the load reaches the first
  // method, which needs a CUDA runtime.
  expect_refused(WHARF_UNSUPPORTED, {"method 'prefill'", "CUDA backend"});
}

TEST_F(WharfPackage, ArgumentsAndOptionsAreChecked) {
  wharf_model_package* pkg = nullptr;
  EXPECT_CODE(wharf_model_package_load(nullptr, dir_.c_str(), nullptr, &pkg), WHARF_INVALID_ARGUMENT);
  EXPECT_CODE(wharf_model_package_load(rt_, nullptr, nullptr, &pkg), WHARF_INVALID_ARGUMENT);
  EXPECT_CODE(wharf_model_package_load(rt_, dir_.c_str(), nullptr, nullptr), WHARF_INVALID_ARGUMENT);
  // A caller built against a newer header asking for a field this library lacks.
  struct Bigger {
    wharf_model_package_options o;
    uint64_t newer_field;
  } big;
  std::memset(&big, 0, sizeof big);
  wharf_model_package_options_init_sized(&big.o, sizeof big);
  EXPECT_EQ(big.o.struct_size, sizeof big.o);  // never written past the library's struct
  big.o.struct_size = sizeof big;
  big.newer_field = 1;
  write("manifest.json", manifest_);
  EXPECT_CODE(wharf_model_package_load(rt_, dir_.c_str(), &big.o, &pkg), WHARF_UNSUPPORTED);
  EXPECT_EQ(pkg, nullptr);
  // The NULL-tolerant queries.
  EXPECT_EQ(wharf_model_package_name(nullptr), nullptr);
  EXPECT_EQ(wharf_model_package_num_methods(nullptr), 0u);
  EXPECT_EQ(wharf_model_package_method_name(nullptr, 0), nullptr);
  EXPECT_EQ(wharf_model_package_find_method(nullptr, "decode"), -1);
  EXPECT_EQ(wharf_model_package_store(nullptr), nullptr);
  EXPECT_EQ(wharf_model_package_max_seq_len(nullptr), 0u);
  EXPECT_EQ(wharf_model_package_num_method_inputs(nullptr, 0), 0u);
  wharf_model* m = nullptr;
  EXPECT_CODE(wharf_model_package_get_method(nullptr, "decode", &m), WHARF_INVALID_ARGUMENT);
  wharf_session* s = nullptr;
  EXPECT_CODE(wharf_model_package_create_session(nullptr, nullptr, &s), WHARF_INVALID_ARGUMENT);
  wharf_model_package_tensor_info ti;
  std::memset(&ti, 0, sizeof ti);
  ti.struct_size = sizeof ti;
  EXPECT_CODE(wharf_model_package_get_method_input(nullptr, 0, 0, &ti), WHARF_INVALID_ARGUMENT);
  wharf_model_package_free(nullptr);
}

TEST_F(WharfPackage, TheDirectoryAndTheManifestMustExist) {
  {
    St st(load(base_ + "/missing.wharf"));
    EXPECT_EQ(st.code(), WHARF_NOT_FOUND) << st.msg();
    EXPECT_TRUE(st.has("missing.wharf")) << st.msg();
  }
  {
    St st(load(dir_ + "/manifest.json"));  // a file, not a package directory
    EXPECT_EQ(st.code(), WHARF_INVALID_ARGUMENT) << st.msg();
    EXPECT_TRUE(st.has("is not a directory")) << st.msg();
  }
  manifest_.clear();  // not written again
  ASSERT_EQ(::unlink((dir_ + "/manifest.json").c_str()), 0);
  expect_refused(WHARF_NOT_FOUND, {"tiny.wharf", "no manifest.json"});
}

TEST_F(WharfPackage, AManifestThatIsNotJsonOrNotAnObject) {
  manifest_ = "{\"format\": \"wharf-model-package\",";
  expect_refused(WHARF_INVALID_ARGUMENT, {"manifest.json: not JSON", "at byte"});
  manifest_ = "[1, 2]";
  expect_refused(WHARF_INVALID_ARGUMENT, {"manifest.json: a JSON object expected, got an array"});
  manifest_ = std::string(kManifest) + "{}";
  expect_refused(WHARF_INVALID_ARGUMENT, {"not JSON"});
}

TEST_F(WharfPackage, TheFormatAndItsVersion) {
  edit("\"wharf-model-package\"", "\"onnx\"");
  expect_refused(WHARF_INVALID_ARGUMENT, {"format: 'onnx' is not \"wharf-model-package\""});
  manifest_ = kManifest;
  edit("\"format_version\": 1", "\"format_version\": 2");
  expect_refused(WHARF_UNSUPPORTED, {"format_version 2 is newer than this loader reads (1)"});
  manifest_ = kManifest;
  edit("\"format_version\": 1", "\"format_version\": \"1\"");
  expect_refused(WHARF_INVALID_ARGUMENT, {"format_version: a number expected, got a string"});
  manifest_ = kManifest;
  edit("\"format_version\": 1", "\"format_version\": 1.5");
  expect_refused(WHARF_INVALID_ARGUMENT, {"format_version: 1.5 is not an integer"});
  manifest_ = kManifest;
  edit("\"format_version\": 1,", "");
  expect_refused(WHARF_INVALID_ARGUMENT, {"format_version: missing"});
}

TEST_F(WharfPackage, RequiredFieldsAndTheirTypes) {
  edit("\"name\": \"tiny\",", "");
  expect_refused(WHARF_INVALID_ARGUMENT, {"manifest.json: name: missing"});
  manifest_ = kManifest;
  edit("\"name\": \"tiny\"", "\"name\": \"\"");
  expect_refused(WHARF_INVALID_ARGUMENT, {"manifest.json: name: an empty name"});
  manifest_ = kManifest;
  edit("\"max_seq_len\": 64", "\"max_seq_len\": -1");
  expect_refused(WHARF_INVALID_ARGUMENT, {"max_seq_len: -1 is not an integer"});
  manifest_ = kManifest;
  edit("\"weights\": {", "\"weights\": [], \"unused\": {");
  expect_refused(WHARF_INVALID_ARGUMENT, {"weights: an object expected, got an array"});
  manifest_ = kManifest;
  edit("\"methods\": [", "\"methods\": [], \"old_methods\": [");
  expect_refused(WHARF_INVALID_ARGUMENT, {"methods: empty"});
  manifest_ = kManifest;
  edit("{\"name\": \"decode\", \"file\": \"methods/decode.so\",", "{\"file\": \"methods/decode.so\",");
  expect_refused(WHARF_INVALID_ARGUMENT, {"methods[1].name: missing"});
  manifest_ = kManifest;
  edit("\"shape\": [1, 2, 64, 2], \"initial\": \"zeros\"", "\"shape\": [1, 2, 64, 2]");
  expect_refused(WHARF_INVALID_ARGUMENT, {"state[0].initial: missing"});
  manifest_ = kManifest;
  edit("\"initial\": \"zeros\"", "\"initial\": \"ones\"");
  expect_refused(WHARF_INVALID_ARGUMENT, {"state[0].initial: 'ones' is not \"zeros\""});
}

TEST_F(WharfPackage, DtypesAndShapes) {
  edit("{\"name\": \"input_ids\", \"dtype\": \"int64\", \"shape\": [1, 1]}",
       "{\"name\": \"input_ids\", \"dtype\": \"int65\", \"shape\": [1, 1]}");
  expect_refused(WHARF_INVALID_ARGUMENT, {"manifest.json: methods[1].inputs[0].dtype: 'int65' is not a dtype"});
  manifest_ = kManifest;
  edit("{\"fqn\": \"embed.weight\", \"dtype\": \"float32\", \"shape\": [8, 4]}",
       "{\"fqn\": \"embed.weight\", \"dtype\": \"float32\", \"shape\": [8, -4]}");
  expect_refused(WHARF_INVALID_ARGUMENT, {"weights.parameters[0].shape[1]: -4 is not an integer"});
  manifest_ = kManifest;
  edit("\"shape\": [\"T\"]", "\"shape\": [\"S\"]");
  expect_refused(WHARF_INVALID_ARGUMENT,
                 {"methods[0].inputs[1].shape[0]: symbolic dimension 'S' is not in the method's dims"});
  manifest_ = kManifest;
  edit("\"shape\": [1, 2, 64, 2]", "\"shape\": [1, 2, \"T\", 2]");
  expect_refused(WHARF_INVALID_ARGUMENT, {"state[0].shape[2]: a symbolic dimension ('T')"});
  manifest_ = kManifest;
  edit("{\"min\": 1, \"max\": 64}", "{\"min\": 65, \"max\": 64}");
  expect_refused(WHARF_INVALID_ARGUMENT, {"methods[0].dims.T: min 65 > max 64"});
  manifest_ = kManifest;
  edit("\"shape\": [1, 2, 64, 2]", "\"shape\": [1, 2, 3, 4, 5, 6, 7, 8, 9]");
  expect_refused(WHARF_INVALID_ARGUMENT, {"state[0].shape: 9 dimensions"});
}

TEST_F(WharfPackage, DuplicateNames) {
  edit("{\"name\": \"decode\", \"file\"", "{\"name\": \"prefill\", \"file\"");
  expect_refused(WHARF_INVALID_ARGUMENT, {"methods[1].name: 'prefill' is given twice"});
  manifest_ = kManifest;
  edit("{\"fqn\": \"lm_head.weight\"", "{\"fqn\": \"embed.weight\"");
  expect_refused(WHARF_INVALID_ARGUMENT, {"weights.parameters[2].fqn: 'embed.weight' is listed twice"});
  manifest_ = kManifest;
  edit("{\"fqn\": \"cache.pos\"", "{\"fqn\": \"norm.weight\"");
  expect_refused(WHARF_INVALID_ARGUMENT, {"state[1].fqn: 'norm.weight' is declared twice"});
  manifest_ = kManifest;
  edit("{\"name\": \"cache_position\", \"dtype\": \"int64\", \"shape\": [1]}",
       "{\"name\": \"input_ids\", \"dtype\": \"int64\", \"shape\": [1]}");
  expect_refused(WHARF_INVALID_ARGUMENT, {"methods[1].inputs[1].name: 'input_ids' is given twice"});
  manifest_ = kManifest;
  edit("\"weights/model-00002-of-00002.safetensors\"]", "\"weights/model-00001-of-00002.safetensors\"]");
  expect_refused(WHARF_INVALID_ARGUMENT, {"weights.files[1]", "is listed twice"});
}

TEST_F(WharfPackage, PathsMayNotLeaveThePackage) {
  write("outside.so", "outside", base_);
  edit("\"methods/decode.so\"", "\"../outside.so\"");
  expect_refused(WHARF_INVALID_ARGUMENT, {"methods[1].file: path '../outside.so' leaves the package"});
  manifest_ = kManifest;
  edit("\"methods/decode.so\"", "\"methods/../../outside.so\"");
  expect_refused(WHARF_INVALID_ARGUMENT, {"leaves the package"});
  manifest_ = kManifest;
  edit("\"methods/decode.so\"", "\"" + base_ + "/outside.so\"");
  expect_refused(WHARF_INVALID_ARGUMENT, {"methods[1].file: path", "is absolute"});
  // A symbolic link out of the package, by a name that looks inside.
  manifest_ = kManifest;
  ASSERT_EQ(::symlink((base_ + "/outside.so").c_str(), (dir_ + "/methods/link.so").c_str()), 0);
  edit("\"methods/decode.so\"", "\"methods/link.so\"");
  expect_refused(WHARF_INVALID_ARGUMENT, {"methods[1].file: 'methods/link.so' leaves the package (a symbolic link"});
  // A symbolic link inside the package is followed.
  manifest_ = kManifest;
  ASSERT_EQ(::symlink("decode.so", (dir_ + "/methods/inside.so").c_str()), 0);
  edit("\"methods/decode.so\"", "\"methods/inside.so\"");
  expect_refused(WHARF_UNSUPPORTED, {"CUDA backend"});
  // The same rules for weight files and the state file.
  manifest_ = kManifest;
  ASSERT_EQ(::symlink((base_ + "/outside.so").c_str(), (dir_ + "/state_link.safetensors").c_str()), 0);
  edit("\"state_file\": \"state.safetensors\"", "\"state_file\": \"state_link.safetensors\"");
  expect_refused(WHARF_INVALID_ARGUMENT, {"state_file: 'state_link.safetensors' leaves the package"});
  manifest_ = kManifest;
  edit("\"weights/model-00002-of-00002.safetensors\"]", "\"../tiny.wharf/weights/model-00002-of-00002.safetensors\"]");
  expect_refused(WHARF_INVALID_ARGUMENT, {"weights.files[1]", "leaves the package"});
  // Paths are normalised ("./a//b" is "a/b"): a second spelling of a listed file is that file
  // listed twice (the duplicate check compares the normalised names), and a method's file
  // spelled loosely still loads (here: up to the host backend's refusal of the methods).
  for (const char* spelling :
       {"weights//model-00001-of-00002.safetensors", "./weights/model-00001-of-00002.safetensors",
        "weights/./model-00001-of-00002.safetensors"}) {
    manifest_ = kManifest;
    edit("\"weights/model-00002-of-00002.safetensors\"]", std::string("\"") + spelling + "\"]");
    expect_refused(WHARF_INVALID_ARGUMENT, {std::string("weights.files[1]: '") + spelling +
                                            "' (that is 'weights/model-00001-of-00002.safetensors') is listed "
                                            "twice (as weights.files[0] too)"});
  }
  manifest_ = kManifest;
  edit("\"methods/decode.so\"", "\"./methods//decode.so\"");
  expect_refused(WHARF_UNSUPPORTED, {"CUDA backend"});
  manifest_ = kManifest;
  edit("\"methods/decode.so\"", "\"./\"");
  expect_refused(WHARF_INVALID_ARGUMENT, {"methods[1].file: path './' names the package directory itself"});
  // A directory where a file is named.
  manifest_ = kManifest;
  edit("\"methods/decode.so\"", "\"methods\"");
  expect_refused(WHARF_INVALID_ARGUMENT, {"methods[1].file: 'methods' is not a regular file"});
}

TEST_F(WharfPackage, AFileTheManifestNamesIsMissing) {
  edit("\"methods/decode.so\"", "\"methods/decode2.so\"");
  expect_refused(WHARF_NOT_FOUND, {"methods[1].file: no file 'methods/decode2.so' in the package"});
  manifest_ = kManifest;
  ASSERT_EQ(::unlink((dir_ + "/weights/model-00002-of-00002.safetensors").c_str()), 0);
  expect_refused(WHARF_NOT_FOUND, {"weights.files[1]: no file 'weights/model-00002-of-00002.safetensors'"});
}

TEST_F(WharfPackage, WeightFilesMustHoldExactlyTheListedParameters) {
  // A tensor the manifest does not list.
  write("weights/model-00002-of-00002.safetensors",
        st_file({{"lm_head.weight", "F32", "[8,4]", 128}, {"extra.bias", "F32", "[4]", 16}}));
  expect_refused(WHARF_INVALID_ARGUMENT, {"weight file 'weights/model-00002-of-00002.safetensors'",
                                          "tensor 'extra.bias' is not listed in the manifest's weights.parameters"});
  // A listed parameter in no file.
  write("weights/model-00002-of-00002.safetensors", st_file({{"other.weight", "F32", "[1]", 4}}));
  edit("{\"fqn\": \"lm_head.weight\", \"dtype\": \"F32\", \"shape\": [8, 4]}",
       "{\"fqn\": \"lm_head.weight\", \"dtype\": \"F32\", \"shape\": [8, 4]}, "
       "{\"fqn\": \"other.weight\", \"dtype\": \"F32\", \"shape\": [1]}");
  expect_refused(WHARF_INVALID_ARGUMENT, {"weights.parameters[2]: parameter 'lm_head.weight' is in no weight file"});
  // A tensor in two files.
  write("weights/model-00002-of-00002.safetensors", st_file({{"lm_head.weight", "F32", "[8,4]", 128},
                                                             {"other.weight", "F32", "[1]", 4},
                                                             {"norm.weight", "BF16", "[4]", 8}}));
  expect_refused(WHARF_INVALID_ARGUMENT, {"tensor 'norm.weight' is in weight file "
                                          "'weights/model-00001-of-00002.safetensors' too"});
}

TEST_F(WharfPackage, ATensorOfAnotherShapeOrDtype) {
  write("weights/model-00002-of-00002.safetensors", st_file({{"lm_head.weight", "F32", "[4,8]", 128}}));
  expect_refused(WHARF_INVALID_ARGUMENT,
                 {"weight file 'weights/model-00002-of-00002.safetensors': tensor 'lm_head.weight' is F32 [4, 8], "
                  "the manifest declares F32 [8, 4]"});
  write("weights/model-00002-of-00002.safetensors", st_file({{"lm_head.weight", "F16", "[8,4]", 64}}));
  expect_refused(WHARF_INVALID_ARGUMENT, {"tensor 'lm_head.weight' is F16 [8, 4], the manifest declares F32 [8, 4]"});
}

TEST_F(WharfPackage, ACorruptWeightFile) {
  write("weights/model-00002-of-00002.safetensors", "not a safetensors file");
  expect_refused(WHARF_DATA_CORRUPT, {"tiny.wharf", "model-00002-of-00002.safetensors"});
}

TEST_F(WharfPackage, StateInitialValues) {
  // The tensor an initial value names is missing from the state file.
  write("state.safetensors", st_file({{"pos1", "I64", "[1]", 8}}));
  expect_refused(WHARF_NOT_FOUND, {"state[1].initial: tensor 'pos0' is not in the state file 'state.safetensors'"});
  // Of another shape.
  write("state.safetensors", st_file({{"pos0", "I64", "[2]", 16}}));
  expect_refused(WHARF_INVALID_ARGUMENT,
                 {"state[1].initial: tensor 'pos0'", "is I64 [2], the state is declared I64 [1]"});
  // No state file, while an initial value names a tensor.
  edit("\"state_file\": \"state.safetensors\",", "");
  expect_refused(WHARF_INVALID_ARGUMENT, {"state[1].initial: names tensor 'pos0' but the manifest has no state_file"});
  // A state file that is not there.
  manifest_ = kManifest;
  ASSERT_EQ(::unlink((dir_ + "/state.safetensors").c_str()), 0);
  expect_refused(WHARF_NOT_FOUND, {"state_file: no file 'state.safetensors'"});
}

// What the fuzzer found in the manifest parser (tests/fuzz): a key of the manifest reached
// messages raw (a newline or a terminal escape in a dims or alias key), an alias could be a
// state's name or an invalid name, and a symbolic dimension could be named "".
TEST(ManifestParser, KeysAreQuotedAndAliasesAndDimensionNamesChecked) {
  auto parse = [](const std::string& text) {
    wharf::Manifest m;
    return wharf::parse_manifest(text, "m", &m);
  };
  const std::string head = R"({"format": "wharf-model-package", "format_version": 1, "name": "m",)";
  const std::string weights =
      R"("weights": {"files": ["w.safetensors"], "parameters": [{"fqn": "w", "dtype": "F32", "shape": [2]}])";
  const std::string state = R"("state": [{"fqn": "s", "dtype": "F32", "shape": [1], "initial": "zeros"}],)";
  auto method = [](const std::string& dim, const std::string& bounds) {
    return R"("methods": [{"name": "f", "file": "f.so", "inputs": [{"name": "x", "dtype": "int64", "shape": [")" + dim +
           R"("]}], "outputs": [], "dims": {")" + dim + R"(": )" + bounds + "}}]}";
  };
  EXPECT_TRUE(parse(head + weights + "}," + state + method("N", R"({"min": 1})")).ok());
  // A dims key with a newline and an escape: named quoted and escaped, never raw.
  wharf::Status st = parse(head + weights + "}," + method(R"(N\n\u001b[31m)", R"({"min": -1})"));
  EXPECT_EQ(st.code(), wharf::Code::kInvalidArgument);
  EXPECT_EQ(st.message().find('\n'), std::string::npos) << st.message();
  EXPECT_EQ(st.message().find('\x1b'), std::string::npos) << st.message();
  EXPECT_NE(st.message().find(R"(dims.'N\n\u001b[31m'.min)"), std::string::npos) << st.message();
  // An alias that is a state's name, or not a valid name at all.
  st = parse(head + weights + R"(, "aliases": {"s": "w"}},)" + state + method("N", "{}"));
  EXPECT_EQ(st.code(), wharf::Code::kInvalidArgument);
  EXPECT_NE(st.message().find("weights.aliases.s: 's' is the name of a state"), std::string::npos) << st.message();
  st = parse(head + weights + R"(, "aliases": {"a\u0000b": "w"}},)" + method("N", "{}"));
  EXPECT_EQ(st.code(), wharf::Code::kInvalidArgument);
  EXPECT_NE(st.message().find("weights.aliases.'a\\u0000b'"), std::string::npos) << st.message();
  // A bound of a dimension no shape uses is still checked, and named with its method.
  st = parse(head + weights + "}," + R"("methods": [{"name": "f", "file": "f.so", "inputs": [], "outputs": [],
      "dims": {"unused": {"max": "a"}}}]})");
  EXPECT_EQ(st.code(), wharf::Code::kInvalidArgument);
  EXPECT_NE(st.message().find("methods[0].dims.unused.max: a string is not an integer"), std::string::npos)
      << st.message();
  // A symbolic dimension named "".
  st = parse(head + weights + "}," + method("", "{}"));
  EXPECT_EQ(st.code(), wharf::Code::kInvalidArgument);
  EXPECT_NE(st.message().find("methods[0].dims"), std::string::npos) << st.message();
}

TEST_F(WharfPackage, ManifestParserKeepsShapesAndSymbolicDimensions) {
  wharf::Manifest m;
  ASSERT_TRUE(wharf::parse_manifest(kManifest, "m", &m).ok());
  EXPECT_EQ(m.name, "tiny");
  EXPECT_EQ(m.max_seq_len, 64u);
  ASSERT_EQ(m.methods.size(), 2u);
  const wharf::PackageTensor& ids = m.methods[0].inputs[0];
  EXPECT_EQ(ids.shape, (std::vector<int64_t>{1, -1}));
  EXPECT_EQ(ids.dim_names, (std::vector<std::string>{"", "T"}));
  EXPECT_EQ(ids.dim_min, (std::vector<int64_t>{1, 1}));
  EXPECT_EQ(ids.dim_max, (std::vector<int64_t>{1, 64}));
  ASSERT_EQ(ids.dim_name_c.size(), 2u);
  EXPECT_EQ(ids.dim_name_c[0], nullptr);
  EXPECT_STREQ(ids.dim_name_c[1], "T");
  EXPECT_EQ(m.parameters[1].dtype, wharf::DType::kBF16);
  EXPECT_EQ(m.parameters[2].dtype, wharf::DType::kF32);  // "F32", the safetensors spelling
  EXPECT_EQ(m.states[1].initial_tensor, "pos0");
  EXPECT_EQ(m.states[0].initial_tensor, "");
  // A dimension without bounds.
  std::string text = kManifest;
  text.replace(text.find("{\"min\": 1, \"max\": 64}"), 21, "{}");
  ASSERT_TRUE(wharf::parse_manifest(text, "m", &m).ok());
  EXPECT_EQ(m.methods[0].inputs[0].dim_min[1], 0);
  EXPECT_EQ(m.methods[0].inputs[0].dim_max[1], -1);
  // Every dtype name PyTorch prints for the common types.
  for (const char* n : {"float32", "bfloat16", "float16", "float64", "int64", "int32", "int8", "uint8", "bool",
                        "float8_e4m3fn", "float8_e5m2", "BF16", "I64"}) {
    wharf::DType d;
    EXPECT_TRUE(wharf::package_dtype_from_name(n, &d)) << n;
  }
  wharf::DType d;
  EXPECT_FALSE(wharf::package_dtype_from_name("torch.float32", &d));
}

TEST_F(WharfPackage, ABatchedMethodIsParsedWithItsCapacityAndSlotsInput) {
  add_batch_method();
  wharf::Manifest m;
  wharf::Status st = wharf::parse_manifest(manifest_, "m", &m);
  ASSERT_TRUE(st.ok()) << st.message();
  ASSERT_EQ(m.methods.size(), 3u);
  EXPECT_EQ(m.methods[0].name, "decode_batch");
  EXPECT_EQ(m.methods[0].session_capacity, 8u);
  EXPECT_EQ(m.methods[0].slots_input, 2);
  EXPECT_EQ(m.methods[1].session_capacity, 0u);  // prefill and decode: per session
  EXPECT_EQ(m.methods[2].session_capacity, 0u);
  EXPECT_EQ(m.methods[2].slots_input, -1);
}

TEST_F(WharfPackage, ABatchedMethodLoadsWithItsCapacityAndIsLeftOutWithoutOne) {
  add_batch_method();
  // session_capacity 0: the batched method (listed first) is left out; loading goes on to
  // prefill, which needs the CUDA backend.
  {
    St st(load());
    EXPECT_EQ(st.code(), WHARF_UNSUPPORTED) << st.msg();
    EXPECT_TRUE(st.has("method 'prefill'")) << st.msg();
    EXPECT_FALSE(st.has("decode_batch")) << st.msg();
  }
  // Its capacity: the arena is made (and released with the rest) and the method loaded first.
  capacity_ = 8;
  expect_refused(WHARF_UNSUPPORTED, {"method 'decode_batch'", "CUDA backend"});
}

TEST_F(WharfPackage, ABatchedMethodRefusesAnotherCapacityNamingBoth) {
  add_batch_method();
  for (uint32_t c : {1u, 4u, 9u}) {
    capacity_ = c;
    expect_refused(WHARF_INVALID_ARGUMENT, {"manifest.json: methods[0] ('decode_batch')", "session_capacity 8",
                                            "loaded with session_capacity " + std::to_string(c)});
  }
  // Before any file is read: the method's library need not even exist.
  ASSERT_EQ(::unlink((dir_ + "/methods/decode_batch.so").c_str()), 0);
  capacity_ = 4;
  expect_refused(WHARF_INVALID_ARGUMENT, {"session_capacity 8", "session_capacity 4"});
}

TEST_F(WharfPackage, ABatchedMethodsCapacityAndSlotsInputAreChecked) {
  add_batch_method();
  const std::string base = manifest_;
  for (const char* bad : {"0", "-1", "\"8\"", "1.5", "4294967296"}) {
    manifest_ = base;
    edit("\"session_capacity\": 8", std::string("\"session_capacity\": ") + bad);
    expect_refused(WHARF_INVALID_ARGUMENT, {"methods[0].session_capacity"});
  }
  const std::string slots = "{\"name\": \"slots\", \"dtype\": \"int64\", \"shape\": [\"N\"]}";
  manifest_ = base;
  edit(slots, "{\"name\": \"rows\", \"dtype\": \"int64\", \"shape\": [\"N\"]}");
  expect_refused(WHARF_INVALID_ARGUMENT, {"methods[0].inputs", "session_capacity 8", "no input 'slots'"});
  manifest_ = base;
  edit(slots, "{\"name\": \"slots\", \"dtype\": \"int32\", \"shape\": [\"N\"]}");
  expect_refused(WHARF_INVALID_ARGUMENT, {"methods[0].inputs[2]", "int64 [N]"});
  manifest_ = base;
  edit(slots, "{\"name\": \"slots\", \"dtype\": \"int64\", \"shape\": [\"N\", 1]}");
  expect_refused(WHARF_INVALID_ARGUMENT, {"methods[0].inputs[2]", "2 dimensions"});
  // Per-session methods may have an input named slots: only a batched method's is the rows.
  manifest_ = base;
  edit("\"session_capacity\": 8,", "");
  capacity_ = 0;
  expect_refused(WHARF_UNSUPPORTED, {"method 'decode_batch'", "CUDA backend"});
}

// "pad": "repeat" on a dim: graph buckets may pad runs along it by repeating the last row (the
// exporter marks its prefill's T once each row's mask follows its own cache_position). The
// loader rule: marked dims and a batched method's session dimension may be padded (only the
// latter by default); an unmarked dim (an old package's prefill T) is refused with a message
// that says to re-export the package.
TEST_F(WharfPackage, PadRepeatMarksTheDimsGraphBucketsMayPad) {
  const std::string old_dims = "\"dims\": {\"T\": {\"min\": 1, \"max\": 64}}";
  add_batch_method();
  const std::string old_package = manifest_;
  wharf::Manifest m;
  ASSERT_TRUE(wharf::parse_manifest(old_package, "m", &m).ok());
  ASSERT_EQ(m.methods[1].name, "prefill");
  EXPECT_TRUE(m.methods[1].repeat_dims.empty());
  std::vector<wharf::SymbolicDim> dims = wharf::package_method_dims(m.methods[1], "methods[1]");
  ASSERT_EQ(dims.size(), 1u);
  EXPECT_EQ(dims[0].name, "T");
  EXPECT_EQ(dims[0].inputs, (std::vector<int>{1, 0}));
  EXPECT_FALSE(dims[0].rows_independent);
  EXPECT_NE(dims[0].pad_refusal.find("methods[1].dims.T is not marked \"pad\": \"repeat\""), std::string::npos)
      << dims[0].pad_refusal;
  EXPECT_NE(dims[0].pad_refusal.find("re-export the package"), std::string::npos) << dims[0].pad_refusal;
  // What enabling buckets on it says (the C API's WHARF_UNSUPPORTED).
  wharf::BucketSpec spec;
  wharf::Status st = wharf::resolve_buckets("tiny/prefill", dims, 2, "T", {8}, false, &spec);
  EXPECT_EQ(st.code(), wharf::Code::kUnsupported) << st.message();
  EXPECT_NE(st.message().find("'T' may not be padded: manifest.json's methods[1].dims.T is not marked"),
            std::string::npos)
      << st.message();
  EXPECT_NE(st.message().find("re-export the package with the current exporter"), std::string::npos) << st.message();
  // The batched method's session dimension, marked or not: padded, by default.
  dims = wharf::package_method_dims(m.methods[0], "methods[0]");
  ASSERT_EQ(dims.size(), 1u);
  EXPECT_TRUE(dims[0].rows_independent);
  EXPECT_TRUE(dims[0].padded_by_default);
  EXPECT_TRUE(dims[0].pad_refusal.empty());

  // The current exporter's package: T marked.
  edit(old_dims, "\"dims\": {\"T\": {\"min\": 1, \"max\": 64, \"pad\": \"repeat\"}}");
  const std::string marked = manifest_;
  st = wharf::parse_manifest(marked, "m", &m);
  ASSERT_TRUE(st.ok()) << st.message();
  EXPECT_EQ(m.methods[1].repeat_dims, (std::vector<std::string>{"T"}));
  EXPECT_EQ(m.methods[1].inputs[0].dim_max[1], 64) << "min and max read as before";
  dims = wharf::package_method_dims(m.methods[1], "methods[1]");
  ASSERT_EQ(dims.size(), 1u);
  EXPECT_TRUE(dims[0].rows_independent);
  EXPECT_FALSE(dims[0].padded_by_default) << "a prefill is padded only to declared sizes";
  EXPECT_TRUE(dims[0].pad_refusal.empty());
  ASSERT_TRUE(wharf::resolve_buckets("tiny/prefill", dims, 2, "T", {16, 8}, false, &spec).ok());
  EXPECT_EQ(spec.sizes, (std::vector<int64_t>{8, 16}));
  ASSERT_TRUE(wharf::resolve_buckets("tiny/prefill", dims, 2, "", {}, false, &spec).ok());
  EXPECT_FALSE(spec.enabled()) << "no default buckets for a prefill";
  // The whole package still loads up to its first method.
  capacity_ = 8;
  expect_refused(WHARF_UNSUPPORTED, {"method 'decode_batch'", "CUDA backend"});

  // A rule this loader does not know, or not a string: refused, naming the field.
  manifest_ = marked;
  edit("\"pad\": \"repeat\"", "\"pad\": \"continue\"");
  expect_refused(WHARF_INVALID_ARGUMENT,
                 {"methods[1].dims.T.pad: 'continue' is not a padding rule this loader knows (\"repeat\""});
  manifest_ = marked;
  edit("\"pad\": \"repeat\"", "\"pad\": true");
  expect_refused(WHARF_INVALID_ARGUMENT, {"methods[1].dims.T.pad: a string expected, got a boolean"});
}

}  // namespace

TEST_F(WharfPackage, AliasesNameListedParametersByAnotherName) {
  // A tied weight's checkpoint name mapped to the parameter the methods bind is accepted.
  const std::string params_end = "{\"fqn\": \"lm_head.weight\", \"dtype\": \"F32\", \"shape\": [8, 4]}\n    ]";
  edit(params_end, params_end + ",\n    \"aliases\": {\"model.embed_tokens.weight\": \"lm_head.weight\"}");
  expect_refused(WHARF_UNSUPPORTED, {"method 'prefill'", "CUDA backend"});
}

TEST_F(WharfPackage, AliasesThatNameNoParameterOrAParameterOrNoStringAreRefused) {
  const std::string params_end = "{\"fqn\": \"lm_head.weight\", \"dtype\": \"F32\", \"shape\": [8, 4]}\n    ]";
  const std::string base = manifest_;
  edit(params_end, params_end + ",\n    \"aliases\": {\"tied\": \"missing.weight\"}");
  expect_refused(WHARF_INVALID_ARGUMENT, {"weights.aliases.tied", "'missing.weight' is not a listed parameter"});
  manifest_ = base;
  edit(params_end, params_end + ",\n    \"aliases\": {\"embed.weight\": \"lm_head.weight\"}");
  expect_refused(WHARF_INVALID_ARGUMENT, {"weights.aliases.embed.weight", "'embed.weight' is a listed parameter"});
  manifest_ = base;
  edit(params_end, params_end + ",\n    \"aliases\": {\"tied\": 3}");
  expect_refused(WHARF_INVALID_ARGUMENT, {"weights.aliases.tied", "a string expected"});
  manifest_ = base;
  edit(params_end, params_end + ",\n    \"aliases\": [\"tied\"]");
  expect_refused(WHARF_INVALID_ARGUMENT, {"weights.aliases"});
}

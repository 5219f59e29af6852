// SPDX-License-Identifier: Apache-2.0
// Updates from safetensors files and sharded checkpoints, through the C API on the host
// backend and, where a GPU is visible (the GPU machine runs this suite too), on the CUDA
// backend: the file's pages stream through the pinned staging ring into device slots.
// wharf_container_update_from_file, wharf_weight_store_update_from_file, and
// wharf_constant_map_load_safetensors of an index. Files are built byte by byte here (the
// reference's layout), so the tests do not depend on Wharf's writer.
//
// Rules checked: a full and a partial file update the inactive generation (untouched constants
// keep the active values); a corrupt file, a corrupt shard, a tensor the container does not
// declare or of another shape change nothing (no staged generation, no memory); a sharded
// checkpoint loads and updates as one set; an index may not name a shard outside its
// directory, and must agree with its shards; the file's mapping is gone when the call returns.
// Files are read with pread, not mapped: a file truncated after it was validated, or shrunk
// while it is copied, is an IO_ERROR that changes nothing (a mapping would raise SIGBUS).

#include <sys/stat.h>
#include <unistd.h>

#include <gtest/gtest.h>

#include <atomic>
#include <cstring>
#include <fstream>
#include <sstream>
#include <string>
#include <vector>

#include "common/test_support.h"
#include "core/test_hooks.h"
#include "wharf/wharf.h"

namespace {

using wharf_test::St;

std::string le64(uint64_t n) {
  std::string s(8, '\0');
  for (int i = 0; i < 8; ++i) s[i] = static_cast<char>((n >> (8 * i)) & 0xFF);
  return s;
}

// One tensor of a file: name, safetensors dtype, shape text, bytes.
struct T {
  std::string name, dtype, shape, bytes;
};

// A safetensors image laid out as the reference does: entries and data in the given order,
// offsets contiguous from 0, header padded with spaces to 8 bytes.
std::string st_file(const std::vector<T>& ts, const std::string& metadata = "") {
  std::string h = "{";
  if (!metadata.empty()) h += "\"__metadata__\":" + metadata;
  std::string data;
  for (const T& t : ts) {
    if (h.size() > 1) h += ",";
    h += "\"" + t.name + "\":{\"dtype\":\"" + t.dtype + "\",\"shape\":" + t.shape + ",\"data_offsets\":[" +
         std::to_string(data.size()) + "," + std::to_string(data.size() + t.bytes.size()) + "]}";
    data += t.bytes;
  }
  h += "}";
  h.resize((h.size() + 7) / 8 * 8, ' ');
  return le64(h.size()) + h + data;
}

template <class V>
std::string bytes_of(const std::vector<V>& v) {
  return std::string(reinterpret_cast<const char*>(v.data()), v.size() * sizeof(V));
}

class FileUpdate : public wharf_test::BackendTest {
 protected:
  void SetUp() override {
    static std::atomic<int> counter{0};
    dir_ = ::testing::TempDir() + "wharf_fileupd_" + std::to_string(::getpid()) + "_" + std::to_string(counter++);
    ASSERT_EQ(::mkdir(dir_.c_str(), 0755), 0);
    BackendTest::SetUp();
  }
  void TearDown() override {
    for (wharf_container* c : containers_) wharf_container_free(c);
    wharf_weight_store_free(store_);
    BackendTest::TearDown();
    for (auto it = files_.rbegin(); it != files_.rend(); ++it)
      if (::unlink(it->c_str()) != 0) ::rmdir(it->c_str());
    ::rmdir(dir_.c_str());
  }

  std::string write(const std::string& name, const std::string& bytes) {
    const std::string p = dir_ + "/" + name;
    std::ofstream f(p, std::ios::binary | std::ios::trunc);
    f.write(bytes.data(), static_cast<std::streamsize>(bytes.size()));
    EXPECT_TRUE(f.good()) << p;
    files_.push_back(p);
    return p;
  }
  std::string subdir(const std::string& name) {
    const std::string p = dir_ + "/" + name;
    EXPECT_EQ(::mkdir(p.c_str(), 0755), 0);
    files_.push_back(p);
    return p;
  }

  // The model: "a" F32 [4], "b" BF16 [2, 3], "q" F4 [2, 4] (packed: 4 bytes), "u" U16 [3].
  wharf_container* make_container(const char* name = "m", wharf_weight_store* store = nullptr) {
    static const int64_t sa[] = {4}, sb[] = {2, 3}, sq[] = {2, 4}, su[] = {3};
    const wharf_constant_decl decls[] = {
        {sizeof(wharf_constant_decl), "a", WHARF_DTYPE_F32, 1, sa, WHARF_PLACEMENT_DEVICE, 0},
        {sizeof(wharf_constant_decl), "b", WHARF_DTYPE_BF16, 2, sb, WHARF_PLACEMENT_DEVICE, 0},
        {sizeof(wharf_constant_decl), "q", WHARF_DTYPE_F4, 2, sq, WHARF_PLACEMENT_DEVICE, 0},
        {sizeof(wharf_constant_decl), "u", WHARF_DTYPE_U16, 1, su, WHARF_PLACEMENT_DEVICE, 0},
    };
    wharf_container_options o;
    wharf_container_options_init(&o);
    o.name = name;
    o.constants = decls;
    o.num_constants = 4;
    o.store = store;
    wharf_container* c = nullptr;
    St st(wharf_container_create(rt, &o, &c));
    EXPECT_EQ(st.code(), WHARF_OK) << st.msg();
    containers_.push_back(c);
    return c;
  }

  // A full set of values, all derived from `seed`.
  static std::vector<T> model(int seed) {
    std::vector<float> a = {seed + 0.5f, seed + 1.5f, seed + 2.5f, seed + 3.5f};
    std::vector<uint16_t> b(6), u = {uint16_t(seed), uint16_t(seed + 1), uint16_t(60000 + seed)};
    for (int i = 0; i < 6; ++i) b[i] = uint16_t(0x3f80 + seed * 8 + i);
    std::string q = {char(0x10 + seed), char(0x32 + seed), char(0x54 + seed), char(0x76 + seed)};
    // In the reference's order: F32, BF16, U16, F4.
    return {{"a", "F32", "[4]", bytes_of(a)},
            {"b", "BF16", "[2,3]", bytes_of(b)},
            {"u", "U16", "[3]", bytes_of(u)},
            {"q", "F4", "[2,4]", q}};
  }

  // Reads constant `fqn` of the container's active generation.
  std::string read(wharf_container* c, const char* fqn, size_t bytes) {
    wharf_run* run = nullptr;
    St st(wharf_run_begin(c, nullptr, nullptr, &run));
    EXPECT_EQ(st.code(), WHARF_OK) << st.msg();
    if (!run) return "";
    std::string out(bytes, '\0');
    St rs(wharf_run_read(run, fqn, 0, &out[0], bytes));
    EXPECT_EQ(rs.code(), WHARF_OK) << rs.msg();
    wharf_status_free(wharf_run_end(run));
    return out;
  }

  void expect_model(wharf_container* c, const std::vector<T>& want) {
    for (const T& t : want) EXPECT_EQ(read(c, t.name.c_str(), t.bytes.size()), t.bytes) << t.name;
  }

  uint64_t constant_bytes() {
    wharf_memory_stats ms;
    std::memset(&ms, 0, sizeof ms);
    ms.struct_size = sizeof ms;
    EXPECT_EQ(wharf_runtime_get_memory_stats(rt, &ms), nullptr);
    return ms.current[WHARF_MEM_CONSTANTS];
  }

  // Nothing staged: the container's swap has nothing to publish, the active values stand.
  void expect_unchanged(wharf_container* c, const std::vector<T>& active, uint64_t gen, uint64_t bytes) {
    EXPECT_EQ(wharf_container_generation(c), gen);
    EXPECT_EQ(constant_bytes(), bytes);
    St sw(wharf_container_swap(c));
    EXPECT_EQ(sw.code(), WHARF_FAILED_PRECONDITION) << sw.msg();
    expect_model(c, active);
  }

  // Whether the process still maps `path`.
  static bool mapped(const std::string& path) {
    std::ifstream maps("/proc/self/maps");
    std::string line;
    while (std::getline(maps, line))
      if (line.size() >= path.size() && line.compare(line.size() - path.size(), path.size(), path) == 0) return true;
    return false;
  }

  std::string dir_;
  std::vector<std::string> files_;
  wharf_weight_store* store_ = nullptr;
  std::vector<wharf_container*> containers_;
};

TEST_P(FileUpdate, FullFileUpdatesTheInactiveGenerationAndReleasesTheMapping) {
  wharf_container* c = make_container();
  const std::string p1 = write("v1.safetensors", st_file(model(1)));
  ASSERT_OK(wharf_container_update_from_file(c, p1.c_str(), nullptr));
  EXPECT_FALSE(mapped(p1));  // released when the call returned
  ASSERT_OK(wharf_container_swap(c));
  expect_model(c, model(1));

  const std::string p2 = write("v2.safetensors", st_file(model(2), R"({"format":"pt"})"));
  wharf_update_options o;
  wharf_update_options_init(&o);
  o.require_full = 1;
  ASSERT_OK(wharf_container_update_from_file(c, p2.c_str(), &o));
  EXPECT_FALSE(mapped(p2));
  expect_model(c, model(1));  // not published yet
  ASSERT_OK(wharf_container_swap(c));
  expect_model(c, model(2));
  ASSERT_OK(wharf_container_swap(c));  // rollback still works
  expect_model(c, model(1));
}

TEST_P(FileUpdate, PartialFileUpdatesOnlyItsTensors) {
  wharf_container* c = make_container();
  ASSERT_OK(wharf_container_update_from_file(c, write("v1.safetensors", st_file(model(1))).c_str(), nullptr));
  ASSERT_OK(wharf_container_swap(c));
  const uint64_t before = constant_bytes();

  // Only "b" and "q", in a file of their own.
  const std::vector<T> v2 = model(2);
  const std::string part = write("part.safetensors", st_file({v2[1], v2[3]}));
  ASSERT_OK(wharf_container_update_from_file(c, part.c_str(), nullptr));
  // Copy-on-write: only the two written constants got fresh storage.
  EXPECT_EQ(constant_bytes(), before + v2[1].bytes.size() + v2[3].bytes.size());
  ASSERT_OK(wharf_container_swap(c));
  std::vector<T> want = model(1);
  want[1] = v2[1];
  want[3] = v2[3];
  expect_model(c, want);

  // require_full refuses a partial file, naming what it lacks, and changes nothing.
  wharf_update_options o;
  wharf_update_options_init(&o);
  o.require_full = 1;
  const uint64_t gen = wharf_container_generation(c), bytes = constant_bytes();
  EXPECT_FAILS(wharf_container_update_from_file(c, part.c_str(), &o), WHARF_INVALID_ARGUMENT,
               "require_full: the map has no");
  EXPECT_EQ(wharf_container_generation(c), gen);
  EXPECT_EQ(constant_bytes(), bytes);
}

TEST_P(FileUpdate, CorruptOrMismatchingFilesChangeNothing) {
  wharf_container* c = make_container();
  ASSERT_OK(wharf_container_update_from_file(c, write("v1.safetensors", st_file(model(1))).c_str(), nullptr));
  ASSERT_OK(wharf_container_swap(c));
  const uint64_t gen = wharf_container_generation(c), bytes = constant_bytes();
  const std::string good = st_file(model(2));

  struct Case {
    const char* label;
    std::string bytes;
    wharf_code code;
    std::string fragment;
  };
  std::vector<T> wrong_shape = model(2);
  wrong_shape[0].shape = "[2,2]";
  std::vector<T> unknown = model(2);
  unknown.push_back({"extra", "U8", "[1]", "x"});
  std::vector<T> wrong_dtype = model(2);
  wrong_dtype[2].dtype = "I16";
  const std::vector<Case> cases = {
      {"truncated", good.substr(0, good.size() - 1), WHARF_DATA_CORRUPT, "run past the end of the data section"},
      {"trailing bytes", good + "polyglot", WHARF_DATA_CORRUPT, "belong to no tensor"},
      {"header cut", good.substr(0, 20), WHARF_DATA_CORRUPT, "runs past the end of the file"},
      {"an unknown dtype", st_file({{"a", "Q4_K", "[4]", std::string(16, 'x')}}), WHARF_UNSUPPORTED,
       "unknown dtype 'Q4_K'"},
      {"another shape", st_file(wrong_shape), WHARF_INVALID_ARGUMENT, "'a'"},
      {"another dtype", st_file(wrong_dtype), WHARF_INVALID_ARGUMENT, "'u'"},
      {"a tensor the container does not declare", st_file(unknown), WHARF_NOT_FOUND,
       "'extra' is not declared by container 'm'"},
  };
  for (const Case& k : cases) {
    SCOPED_TRACE(k.label);
    const std::string p = write(std::string("bad") + std::to_string(&k - cases.data()) + ".safetensors", k.bytes);
    EXPECT_FAILS(wharf_container_update_from_file(c, p.c_str(), nullptr), k.code, k.fragment);
    EXPECT_FALSE(mapped(p));
    expect_unchanged(c, model(1), gen, bytes);
  }
  // Update errors say which file they came from.
  EXPECT_FAILS(wharf_container_update_from_file(c, files_.back().c_str(), nullptr), WHARF_NOT_FOUND,
               "updating from '" + files_.back() + "'");
  EXPECT_FAILS(wharf_container_update_from_file(c, (dir_ + "/absent.safetensors").c_str(), nullptr), WHARF_NOT_FOUND,
               "absent.safetensors");
  EXPECT_FAILS(wharf_container_update_from_file(c, dir_.c_str(), nullptr), WHARF_IO_ERROR, "not a regular file");
  EXPECT_FAILS(wharf_container_update_from_file(nullptr, "x", nullptr), WHARF_INVALID_ARGUMENT, "NULL");
  EXPECT_FAILS(wharf_container_update_from_file(c, nullptr, nullptr), WHARF_INVALID_ARGUMENT, "NULL");
  // Bad options are refused before the file is opened.
  wharf_update_options o;
  wharf_update_options_init(&o);
  o.target = static_cast<wharf_update_target>(7);
  EXPECT_FAILS(wharf_container_update_from_file(c, (dir_ + "/absent.safetensors").c_str(), &o), WHARF_INVALID_ARGUMENT,
               "target");
  expect_unchanged(c, model(1), gen, bytes);
}

TEST_P(FileUpdate, InPlaceTargetFromAFile) {
  wharf_container* c = make_container();
  ASSERT_OK(wharf_container_update_from_file(c, write("v1.safetensors", st_file(model(1))).c_str(), nullptr));
  ASSERT_OK(wharf_container_swap(c));
  const uint64_t gen = wharf_container_generation(c);
  wharf_update_options o;
  wharf_update_options_init(&o);
  o.target = WHARF_TARGET_ACTIVE_IN_PLACE;
  ASSERT_OK(wharf_container_update_from_file(c, write("v3.safetensors", st_file(model(3))).c_str(), &o));
  EXPECT_GT(wharf_container_generation(c), gen);
  expect_model(c, model(3));
}

// --- sharded checkpoints ---------------------------------------------------------------------

std::string index_json(const std::vector<std::pair<std::string, std::string>>& weight_map,
                       const std::string& metadata = R"({"total_size":42,"format":"pt","nested":{"x":1}})") {
  std::string s = "{\"metadata\":" + metadata + ",\"weight_map\":{";
  for (size_t i = 0; i < weight_map.size(); ++i)
    s += (i ? ",\"" : "\"") + weight_map[i].first + "\":\"" + weight_map[i].second + "\"";
  return s + "}}";
}

TEST_P(FileUpdate, ShardedCheckpointLoadsAndUpdatesAsOneSet) {
  const std::vector<T> v = model(4);
  write("model-00001-of-00002.safetensors", st_file({v[0], v[3]}));
  subdir("sub");
  write("sub/model-00002-of-00002.safetensors", st_file({v[1], v[2]}, R"({"format":"pt"})"));
  const std::string idx =
      write("model.safetensors.index.json", index_json({{"b", "sub/model-00002-of-00002.safetensors"},
                                                        {"a", "model-00001-of-00002.safetensors"},
                                                        {"u", "sub/model-00002-of-00002.safetensors"},
                                                        {"q", "model-00001-of-00002.safetensors"}}));

  // As one map: the index's order and metadata (strings, numbers as text; nested values left out).
  wharf_constant_map* map = nullptr;
  ASSERT_OK(wharf_constant_map_load_safetensors(idx.c_str(), &map));
  ASSERT_EQ(wharf_constant_map_num_entries(map), 4u);
  const char* names[] = {"b", "a", "u", "q"};
  for (size_t i = 0; i < 4; ++i) {
    const char* fqn = nullptr;
    wharf_tensor_view view{};
    std::memset(&view, 0, sizeof view);
    view.struct_size = sizeof view;
    ASSERT_OK(wharf_constant_map_get_entry(map, i, &fqn, &view));
    EXPECT_STREQ(fqn, names[i]);
  }
  ASSERT_EQ(wharf_constant_map_num_metadata_entries(map), 2u);
  const char *k = nullptr, *val = nullptr;
  ASSERT_OK(wharf_constant_map_get_metadata_entry(map, 0, &k, &val));
  EXPECT_STREQ(k, "total_size");
  EXPECT_STREQ(val, "42");
  wharf_tensor_view view{};
  std::memset(&view, 0, sizeof view);
  view.struct_size = sizeof view;
  ASSERT_OK(wharf_constant_map_find(map, "q", &view));
  EXPECT_EQ(view.dtype, WHARF_DTYPE_F4);
  EXPECT_EQ(std::memcmp(view.data, v[3].bytes.data(), 4), 0);
  wharf_constant_map_free(map);

  // As one update.
  wharf_container* c = make_container();
  wharf_update_options o;
  wharf_update_options_init(&o);
  o.require_full = 1;
  ASSERT_OK(wharf_container_update_from_file(c, idx.c_str(), &o));
  EXPECT_FALSE(mapped(dir_ + "/sub/model-00002-of-00002.safetensors"));
  ASSERT_OK(wharf_container_swap(c));
  expect_model(c, v);
}

TEST_P(FileUpdate, ACorruptShardChangesNothing) {
  wharf_container* c = make_container();
  ASSERT_OK(wharf_container_update_from_file(c, write("v1.safetensors", st_file(model(1))).c_str(), nullptr));
  ASSERT_OK(wharf_container_swap(c));
  const uint64_t gen = wharf_container_generation(c), bytes = constant_bytes();

  const std::vector<T> v = model(5);
  write("s1.safetensors", st_file({v[0], v[1]}));
  const std::string s2 = st_file({v[2], v[3]});
  write("s2.safetensors", s2 + "x");  // one trailing byte: corrupt
  const std::string idx = write(
      "m.safetensors.index.json",
      index_json({{"a", "s1.safetensors"}, {"b", "s1.safetensors"}, {"u", "s2.safetensors"}, {"q", "s2.safetensors"}}));
  EXPECT_FAILS(wharf_container_update_from_file(c, idx.c_str(), nullptr), WHARF_DATA_CORRUPT,
               "shard 's2.safetensors': safetensors file '" + dir_ + "/s2.safetensors': tensor 'q'");
  expect_unchanged(c, model(1), gen, bytes);

  // The same set with the shard repaired goes through whole.
  write("s2.safetensors", s2);
  ASSERT_OK(wharf_container_update_from_file(c, idx.c_str(), nullptr));
  ASSERT_OK(wharf_container_swap(c));
  expect_model(c, v);
}

TEST_P(FileUpdate, IndexMustAgreeWithItsShardsAndStayInItsDirectory) {
  const std::vector<T> v = model(6);
  write("s1.safetensors", st_file({v[0], v[1]}));
  write("s2.safetensors", st_file({v[2], v[3]}));
  const std::vector<std::pair<std::string, std::string>> ok = {
      {"a", "s1.safetensors"}, {"b", "s1.safetensors"}, {"u", "s2.safetensors"}, {"q", "s2.safetensors"}};
  struct Case {
    const char* label;
    std::string json;
    wharf_code code;
    std::string fragment;
  };
  auto with = [&](size_t i, std::string shard) {
    auto m = ok;
    m[i].second = std::move(shard);
    return index_json(m);
  };
  auto without = [&](size_t i) {
    auto m = ok;
    m.erase(m.begin() + static_cast<long>(i));
    return index_json(m);
  };
  const std::vector<Case> cases = {
      {"parent directory", with(0, "../s1.safetensors"), WHARF_DATA_CORRUPT,
       "tensor 'a': shard '../s1.safetensors' has a '..' component"},
      {"parent inside a path", with(0, "x/../../s1.safetensors"), WHARF_DATA_CORRUPT, "has a '..' component"},
      {"absolute path", with(0, dir_ + "/s1.safetensors"), WHARF_DATA_CORRUPT, "is an absolute path"},
      {"empty shard name", with(0, ""), WHARF_DATA_CORRUPT, "is empty, expected a file name"},
      {"a missing shard", with(0, "s9.safetensors"), WHARF_NOT_FOUND, "s9.safetensors"},
      {"a tensor not in its shard",
       index_json({{"a", "s1.safetensors"},
                   {"b", "s1.safetensors"},
                   {"u", "s2.safetensors"},
                   {"q", "s2.safetensors"},
                   {"zz", "s2.safetensors"}}),
       WHARF_DATA_CORRUPT, "tensor 'zz' is listed in shard 's2.safetensors', which does not hold it"},
      {"a tensor listed in the wrong shard", with(1, "s2.safetensors"), WHARF_DATA_CORRUPT,
       "tensor 'b' is listed in shard 's2.safetensors', which does not hold it"},
      {"a tensor of a shard not listed", without(2), WHARF_DATA_CORRUPT,
       "shard 's2.safetensors' holds tensor 'u', which the index does not list"},
      {"no weight_map", R"({"metadata":{}})", WHARF_DATA_CORRUPT, "no \"weight_map\" member"},
      {"weight_map not an object", R"({"weight_map":[]})", WHARF_DATA_CORRUPT, "\"weight_map\" is a JSON array"},
      {"a shard that is not a string", R"({"weight_map":{"a":1}})", WHARF_DATA_CORRUPT,
       "tensor 'a' maps to a JSON number, expected a shard file name"},
      {"duplicate tensor", R"({"weight_map":{"a":"s1.safetensors","a":"s1.safetensors"}})", WHARF_DATA_CORRUPT,
       "duplicate object key 'a'"},
      {"not JSON", "{\"weight_map\":", WHARF_DATA_CORRUPT, "not valid JSON"},
      {"an array", "[]", WHARF_DATA_CORRUPT, "the index is a JSON array, expected an object"},
      {"metadata not an object", R"({"metadata":"x","weight_map":{}})", WHARF_DATA_CORRUPT,
       "\"metadata\" is a JSON string"},
      {"an empty tensor name", R"({"weight_map":{"":"s1.safetensors"}})", WHARF_UNSUPPORTED, "an empty name"},
  };
  wharf_container* c = make_container();
  for (const Case& k : cases) {
    SCOPED_TRACE(k.label);
    const std::string idx = write(std::string("i") + std::to_string(&k - cases.data()) + ".index.json", k.json);
    wharf_constant_map* map = nullptr;
    {
      St st(wharf_constant_map_load_safetensors(idx.c_str(), &map));
      EXPECT_EQ(st.code(), k.code) << st.msg();
      EXPECT_NE(st.msg().find(k.fragment), std::string::npos) << st.msg();
      EXPECT_EQ(map, nullptr);
    }
    EXPECT_FAILS(wharf_container_update_from_file(c, idx.c_str(), nullptr), k.code, k.fragment);
    EXPECT_FALSE(mapped(dir_ + "/s1.safetensors"));
  }
  // The good index loads, and an empty weight_map is an empty map.
  ASSERT_OK(wharf_container_update_from_file(c, write("good.safetensors.index.json", index_json(ok)).c_str(), nullptr));
  wharf_constant_map* map = nullptr;
  ASSERT_OK(wharf_constant_map_load_safetensors(write("empty.index.json", R"({"weight_map":{}})").c_str(), &map));
  EXPECT_EQ(wharf_constant_map_num_entries(map), 0u);
  EXPECT_EQ(wharf_constant_map_num_metadata_entries(map), 0u);
  wharf_constant_map_free(map);
}

// --- weight stores ---------------------------------------------------------------------------

TEST_P(FileUpdate, StoreUpdateFromFileIsAllOrNothingAcrossMembers) {
  ASSERT_OK(wharf_weight_store_create(rt, &store_));
  wharf_container* prefill = make_container("prefill", store_);
  wharf_container* decode = make_container("decode", store_);
  const std::string p1 = write("v1.safetensors", st_file(model(1)));
  ASSERT_OK(wharf_weight_store_update_from_file(store_, p1.c_str(), nullptr));
  EXPECT_FALSE(mapped(p1));
  ASSERT_OK(wharf_weight_store_swap(store_));
  expect_model(prefill, model(1));
  expect_model(decode, model(1));
  const uint64_t bytes = constant_bytes();

  // A corrupt shard set stages nothing anywhere.
  const std::vector<T> v = model(7);
  write("s1.safetensors", st_file({v[0], v[1]}));
  const std::string s2 = st_file({v[2], v[3]});
  write("s2.safetensors", s2.substr(0, s2.size() - 1));
  const std::string idx = write(
      "m.safetensors.index.json",
      index_json({{"a", "s1.safetensors"}, {"b", "s1.safetensors"}, {"u", "s2.safetensors"}, {"q", "s2.safetensors"}}));
  EXPECT_FAILS(wharf_weight_store_update_from_file(store_, idx.c_str(), nullptr), WHARF_DATA_CORRUPT, "s2.safetensors");
  EXPECT_EQ(constant_bytes(), bytes);
  EXPECT_FAILS(wharf_weight_store_swap(store_), WHARF_FAILED_PRECONDITION, "");
  expect_model(prefill, model(1));

  // Repaired: one write per weight, staged in both, published together.
  write("s2.safetensors", s2);
  ASSERT_OK(wharf_weight_store_update_from_file(store_, idx.c_str(), nullptr));
  ASSERT_OK(wharf_weight_store_swap(store_));
  expect_model(prefill, v);
  expect_model(decode, v);
  EXPECT_FAILS(wharf_weight_store_update_from_file(nullptr, idx.c_str(), nullptr), WHARF_INVALID_ARGUMENT, "NULL");
  EXPECT_FAILS(wharf_weight_store_update_from_file(store_, (dir_ + "/absent.safetensors").c_str(), nullptr),
               WHARF_NOT_FOUND, "absent.safetensors");
}

// --- files that shrink (read with pread: an error, never SIGBUS) -----------------------------

// Truncates `path` to `size` bytes when the transfer engine begins the copy: after the file
// was opened and validated and the update planned, before any byte is read. Once.
class TruncateAtCopy {
 public:
  TruncateAtCopy(std::string path, off_t size)
      : path_(std::move(path)), size_(size), hook_([this](const char* point) {
          if (std::strcmp(point, "transfer.copy.begin") == 0 && !done_.exchange(true)) {
            EXPECT_EQ(::truncate(path_.c_str(), size_), 0);
          }
        }) {}
  bool done() const { return done_; }

 private:
  std::string path_;
  off_t size_;
  std::atomic<bool> done_{false};
  wharf::ScopedTestHook hook_;
};

TEST_P(FileUpdate, AFileTruncatedAfterValidationIsAnIoErrorThatChangesNothing) {
  wharf_container* c = make_container();
  ASSERT_OK(wharf_container_update_from_file(c, write("v1.safetensors", st_file(model(1))).c_str(), nullptr));
  ASSERT_OK(wharf_container_swap(c));
  const uint64_t gen = wharf_container_generation(c), bytes = constant_bytes();
  const std::string v2 = st_file(model(2));
  wharf_update_options in_place;
  wharf_update_options_init(&in_place);
  in_place.target = WHARF_TARGET_ACTIVE_IN_PLACE;
  // Into the inactive generation, and in place (checked before anything is overwritten).
  for (const wharf_update_options* o :
       {static_cast<const wharf_update_options*>(nullptr), static_cast<const wharf_update_options*>(&in_place)}) {
    const std::string p = write("v2.safetensors", v2);
    TruncateAtCopy cut(p, off_t(v2.size() - 1));  // the last tensor loses a byte
    St st(wharf_container_update_from_file(c, p.c_str(), o));
    EXPECT_TRUE(cut.done());
    EXPECT_EQ(st.code(), WHARF_IO_ERROR) << st.msg();
    for (const std::string& want :
         {std::string("updating from '") + p + "'", std::string("truncated"), std::string("nothing was copied")})
      EXPECT_NE(st.msg().find(want), std::string::npos) << st.msg() << "\nexpected: " << want;
    expect_unchanged(c, model(1), gen, bytes);
  }
  // A weight store's update: nothing staged in any member.
  ASSERT_OK(wharf_weight_store_create(rt, &store_));
  wharf_container* m1 = make_container("m1", store_);
  wharf_container* m2 = make_container("m2", store_);
  ASSERT_OK(wharf_weight_store_update_from_file(store_, write("s1.safetensors", st_file(model(1))).c_str(), nullptr));
  ASSERT_OK(wharf_weight_store_swap(store_));
  const uint64_t store_bytes = constant_bytes();
  {
    const std::string p = write("s2.safetensors", v2);
    TruncateAtCopy cut(p, 8);  // the header is gone
    St st(wharf_weight_store_update_from_file(store_, p.c_str(), nullptr));
    EXPECT_TRUE(cut.done());
    EXPECT_EQ(st.code(), WHARF_IO_ERROR) << st.msg();
    EXPECT_NE(st.msg().find(p), std::string::npos) << st.msg();
  }
  EXPECT_EQ(constant_bytes(), store_bytes);
  EXPECT_FAILS(wharf_weight_store_swap(store_), WHARF_FAILED_PRECONDITION, "");
  expect_model(m1, model(1));
  expect_model(m2, model(1));
  // A shard of an index, likewise.
  const std::vector<T> v = model(5);
  write("x1.safetensors", st_file({v[0], v[1]}));
  const std::string x2 = st_file({v[2], v[3]});
  const std::string x2_path = write("x2.safetensors", x2);
  const std::string idx = write(
      "x.safetensors.index.json",
      index_json({{"a", "x1.safetensors"}, {"b", "x1.safetensors"}, {"u", "x2.safetensors"}, {"q", "x2.safetensors"}}));
  {
    TruncateAtCopy cut(x2_path, off_t(x2.size() - 2));
    St st(wharf_container_update_from_file(c, idx.c_str(), nullptr));
    EXPECT_EQ(st.code(), WHARF_IO_ERROR) << st.msg();
    EXPECT_NE(st.msg().find("x2.safetensors"), std::string::npos) << st.msg();
  }
  expect_unchanged(c, model(1), gen, store_bytes);
}

// A file that loses its tail while its tensors stream through the ring: the read that runs
// short fails the update with IO_ERROR naming the file, the tensor and the offset; the
// generation being built is dropped (nothing staged, its memory freed) and the process lives.
TEST_P(FileUpdate, AFileShrunkDuringTheCopyIsAnIoErrorThatStagesNothing) {
  // A small ring (128 KiB chunks, 2 threads), so a 2 MiB tensor takes 16 fills.
  wharf_runtime_free(rt);
  rt = nullptr;
  wharf_runtime_options ro;
  wharf_runtime_options_init(&ro);
  ro.backend = GetParam();
  ro.copy_threads = 2;
  ro.staging_bytes = 256 << 10;
  ASSERT_OK(wharf_runtime_create(&ro, &rt));
  constexpr int64_t kFloats = 512 << 10;
  static const int64_t shape[] = {kFloats};
  const wharf_constant_decl d = {sizeof(wharf_constant_decl), "w", WHARF_DTYPE_F32, 1, shape,
                                 WHARF_PLACEMENT_DEVICE,      0};
  wharf_container_options co;
  wharf_container_options_init(&co);
  co.constants = &d;
  co.num_constants = 1;
  wharf_container* c = nullptr;
  ASSERT_OK(wharf_container_create(rt, &co, &c));
  containers_.push_back(c);
  auto values = [](float base) {
    std::vector<float> v(kFloats);
    for (int64_t i = 0; i < kFloats; ++i) v[size_t(i)] = base + float(i);
    return std::vector<T>{{"w", "F32", "[" + std::to_string(kFloats) + "]", bytes_of(v)}};
  };
  ASSERT_OK(wharf_container_update_from_file(c, write("w1.safetensors", st_file(values(1))).c_str(), nullptr));
  ASSERT_OK(wharf_container_swap(c));
  const uint64_t gen = wharf_container_generation(c), bytes = constant_bytes();

  const std::string v2 = st_file(values(1e6f));
  const std::string p = write("w2.safetensors", v2);
  std::atomic<int> fills{0};
  {
    // The fourth fill to start reads after the file lost its second half.
    wharf::ScopedTestHook hook([&](const char* point) {
      if (std::strcmp(point, "transfer.staged.fill") == 0 && fills.fetch_add(1) == 3) {
        EXPECT_EQ(::truncate(p.c_str(), off_t(v2.size() / 2)), 0);
      }
    });
    St st(wharf_container_update_from_file(c, p.c_str(), nullptr));
    EXPECT_EQ(st.code(), WHARF_IO_ERROR) << st.msg();
    for (const std::string& want : {std::string("updating from '") + p + "'", std::string("('w')"),
                                    std::string("at offset"), std::string("shrank while being read")})
      EXPECT_NE(st.msg().find(want), std::string::npos) << st.msg() << "\nexpected: " << want;
  }
  EXPECT_GE(fills.load(), 4);
  expect_unchanged(c, values(1), gen, bytes);
  // The container updates from a whole file afterwards.
  ASSERT_OK(wharf_container_update_from_file(c, write("w3.safetensors", st_file(values(7))).c_str(), nullptr));
  ASSERT_OK(wharf_container_swap(c));
  expect_model(c, values(7));
}

// Sub-byte constants: the container refuses a declaration that is not whole bytes, naming it.
TEST_P(FileUpdate, ContainersRefuseWhatTheyCannotPlace) {
  static const int64_t s3[] = {3};
  const wharf_constant_decl d = {sizeof(wharf_constant_decl), "odd", WHARF_DTYPE_F6_E2M3, 1, s3,
                                 WHARF_PLACEMENT_DEVICE,      0};
  wharf_container_options o;
  wharf_container_options_init(&o);
  o.constants = &d;
  o.num_constants = 1;
  wharf_container* c = nullptr;
  EXPECT_FAILS(wharf_container_create(rt, &o, &c), WHARF_INVALID_ARGUMENT,
               "'odd': shape [3] of F6_E2M3 is 18 bits, not a whole number of bytes");
  EXPECT_EQ(c, nullptr);
  // A strided view of packed elements cannot be put in a map.
  wharf_constant_map* map = nullptr;
  ASSERT_OK(wharf_constant_map_create(&map));
  uint8_t buf[4] = {};
  const int64_t shape[2] = {2, 4}, strides[2] = {1, 2};
  wharf_tensor_view v = {sizeof(wharf_tensor_view), 0, buf, WHARF_DTYPE_F4, WHARF_DEVICE_CPU, 0, 2, shape, strides, 0};
  EXPECT_FAILS(wharf_constant_map_set(map, "t", &v), WHARF_UNSUPPORTED, "not byte-addressable");
  v.strides = nullptr;
  ASSERT_OK(wharf_constant_map_set(map, "t", &v));
  wharf_constant_map_free(map);
}

WHARF_TEST_ON_BACKENDS(FileUpdate);

}  // namespace

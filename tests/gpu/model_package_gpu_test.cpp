// SPDX-License-Identifier: Apache-2.0
// Model packages on the GPU through the public C API, as a C service drives them: a package
// directory built here from the committed tiny decoder (tests/data/models/tiny_decoder:
// tiny_decoder.so = prefill with a dynamic length, tiny_decoder_decode.so = one-token decode,
// tiny_decoder.safetensors, PyTorch's reference.safetensors) with a manifest written here,
// loaded in one call.
//
// Checked: greedy tokens equal PyTorch's; the weights are held once (both methods share the
// store); two sessions interleaved step by step each get the reference; a store update from
// a file + swap mid-conversation reaches both methods (the next logits change) and a rollback
// by the original file brings the reference back in the same conversation; refusals that need
// the compiled methods (input/output counts, an undeclared buffer, a state of another size, a
// parameter the manifest does not list, a shim function Wharf lacks) name the field and leave
// no memory behind.
#include <gtest/gtest.h>

#include <cuda_runtime_api.h>
#include <dirent.h>
#include <sys/stat.h>
#include <unistd.h>

#include <atomic>
#include <cmath>
#include <cstdlib>
#include <cstring>
#include <fstream>
#include <string>
#include <vector>

#define WHARF_EXPERIMENTAL
#include "common/package_fixture.h"
#include "common/test_paths.h"
#include "common/test_support.h"
#include "wharf/wharf.h"

namespace {

using wharf_test::host_i64;
using wharf_test::sized;
using wharf_test::St;
using wharf_test::zero_view;

constexpr int kVocab = 256;

std::string model_dir() {
  if (const char* e = std::getenv("WHARF_MODEL_DIR")) return e;
  return wharf_test::test_data("models/tiny_decoder");
}

bool exists(const std::string& p) {
  struct stat st;
  return ::stat(p.c_str(), &st) == 0;
}

void copy_file(const std::string& from, const std::string& to) {
  std::ifstream in(from, std::ios::binary);
  std::ofstream out(to, std::ios::binary | std::ios::trunc);
  out << in.rdbuf();
  ASSERT_TRUE(in.good() || in.eof()) << from;
  ASSERT_TRUE(out.good()) << to;
}

void remove_all(const std::string& p) {
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

std::string shape_json(const wharf_tensor_view& v) {
  std::string s = "[";
  for (int d = 0; d < v.ndim; ++d) s += (d ? ", " : "") + std::to_string(v.shape[d]);
  return s + "]";
}

class PackageGpu : public ::testing::Test {
 protected:
  void SetUp() override {
    int n = 0;
    if (cudaGetDeviceCount(&n) != cudaSuccess || n == 0) GTEST_SKIP() << "no CUDA device";
    src_ = model_dir();
    if (!exists(src_ + "/tiny_decoder.so") || !exists(src_ + "/tiny_decoder_decode.so"))
      GTEST_SKIP() << "no compiled model at " << src_;
    static std::atomic<int> counter{0};
    base_ = ::testing::TempDir() + "wharf_pkg_gpu_" + std::to_string(::getpid()) + "_" + std::to_string(counter++);
    ASSERT_EQ(::mkdir(base_.c_str(), 0755), 0);
    dir_ = base_ + "/tiny.wharf";
    for (const std::string& d : {dir_, dir_ + "/methods", dir_ + "/weights"}) ASSERT_EQ(::mkdir(d.c_str(), 0755), 0);
    // Copies, not links: a symbolic link out of the package is refused.
    copy_file(src_ + "/tiny_decoder.so", dir_ + "/methods/prefill.so");
    copy_file(src_ + "/tiny_decoder_decode.so", dir_ + "/methods/decode.so");
    copy_file(src_ + "/tiny_decoder.safetensors", dir_ + "/weights/model.safetensors");

    wharf_runtime_options ro;
    wharf_runtime_options_init(&ro);
    ro.backend = WHARF_BACKEND_CUDA;
    ASSERT_OK(wharf_runtime_create(&ro, &rt_));
    ASSERT_OK(wharf_constant_map_load_safetensors((src_ + "/tiny_decoder.safetensors").c_str(), &weights_));
    ASSERT_OK(wharf_constant_map_load_safetensors((src_ + "/reference.safetensors").c_str(), &ref_));
    wharf_tensor_view pv = zero_view(), tv = zero_view(), lv = zero_view();
    ASSERT_OK(wharf_constant_map_find(ref_, "prompt", &pv));
    ASSERT_OK(wharf_constant_map_find(ref_, "tokens", &tv));
    ASSERT_OK(wharf_constant_map_find(ref_, "decode_logits", &lv));
    prompt_.assign(static_cast<const int64_t*>(pv.data), static_cast<const int64_t*>(pv.data) + pv.shape[1]);
    want_.assign(static_cast<const int64_t*>(tv.data), static_cast<const int64_t*>(tv.data) + tv.shape[0]);
    decode_logits_.assign(static_cast<const float*>(lv.data),
                          static_cast<const float*>(lv.data) + lv.shape[0] * kVocab);
    manifest_ = manifest();
  }
  void TearDown() override {
    wharf_constant_map_free(weights_);
    wharf_constant_map_free(ref_);
    wharf_runtime_free(rt_);
    if (!base_.empty()) remove_all(base_);
  }

  // The tiny decoder's manifest: its parameters from the weights file, its KV caches as
  // zero-initialised state, prefill over T tokens (logits of every position) and decode.
  std::string manifest(const std::string& skip_param = "", const std::string& skip_state = "") const {
    std::string params;
    for (size_t i = 0; i < wharf_constant_map_num_entries(weights_); ++i) {
      const char* name = nullptr;
      wharf_tensor_view v = zero_view();
      EXPECT_OK(wharf_constant_map_get_entry(weights_, i, &name, &v));
      if (name == skip_param) continue;
      params += std::string(params.empty() ? "" : ",\n      ") + "{\"fqn\": \"" + name + "\", \"dtype\": \"" +
                wharf_dtype_name(v.dtype) + "\", \"shape\": " + shape_json(v) + "}";
    }
    std::string states;
    for (int l = 0; l < 2; ++l)
      for (const char* kv : {"k_cache", "v_cache"}) {
        const std::string fqn = "layers." + std::to_string(l) + "." + kv;
        if (fqn == skip_state) continue;
        states += std::string(states.empty() ? "" : ",\n    ") + "{\"fqn\": \"" + fqn +
                  "\", \"dtype\": \"float32\", \"shape\": [1, 4, 64, 16], \"initial\": \"zeros\"}";
      }
    return R"({
  "format": "wharf-model-package", "format_version": 1, "name": "tiny", "dtype": "float32", "max_seq_len": 64,
  "weights": {"files": ["weights/model.safetensors"], "parameters": [
      )" + params +
           R"(]},
  "state": [
    )" + states +
           R"(],
  "methods": [
    {"name": "prefill", "file": "methods/prefill.so",
     "inputs": [{"name": "input_ids", "dtype": "int64", "shape": [1, "T"]},
                {"name": "cache_position", "dtype": "int64", "shape": ["T"]}],
     "outputs": [{"name": "logits", "dtype": "float32", "shape": [1, "T", 256]}],
     "dims": {"T": {"min": 1, "max": 64}}},
    {"name": "decode", "file": "methods/decode.so",
     "inputs": [{"name": "input_ids", "dtype": "int64", "shape": [1, 1]},
                {"name": "cache_position", "dtype": "int64", "shape": [1]}],
     "outputs": [{"name": "logits", "dtype": "float32", "shape": [1, 1, 256]}]}
  ]
})";
  }

  void write(const std::string& rel, const std::string& text) {
    std::ofstream f(dir_ + "/" + rel, std::ios::binary | std::ios::trunc);
    f << text;
    ASSERT_TRUE(f.good());
  }

  // Loads the package (the manifest written first); skips when the compiled model cannot load
  // on this machine's C library.
  wharf_status* load(wharf_model_package** out) {
    write("manifest.json", manifest_);
    wharf_model_package_options o;
    wharf_model_package_options_init(&o);
    o.shim_path = std::getenv("WHARF_AOTI_SHIM");
    o.session_capacity = session_capacity_;
    return wharf_model_package_load(rt_, dir_.c_str(), &o, out);
  }

  uint64_t mem(int tag) {
    wharf_memory_stats ms = sized<wharf_memory_stats>();
    EXPECT_OK(wharf_runtime_get_memory_stats(rt_, &ms));
    return ms.current[tag];
  }

  // One step of `method` in `session`: the tokens at positions first.., the last position's
  // logits in *logits, the argmax in *token.
  void step(wharf_model* method, wharf_session* session, const std::vector<int64_t>& ids, int64_t first, int64_t* token,
            std::vector<float>* logits = nullptr) {
    std::vector<int64_t> pos(ids.size());
    for (size_t i = 0; i < pos.size(); ++i) pos[i] = first + int64_t(i);
    wharf_run* run = nullptr;
    ASSERT_OK(wharf_run_begin(wharf_model_container(method), session, nullptr, &run));
    const int64_t ishape[2] = {1, int64_t(ids.size())}, pshape[1] = {int64_t(pos.size())};
    wharf_tensor_view in[2] = {host_i64(ids.data(), 2, ishape), host_i64(pos.data(), 1, pshape)};
    wharf_tensor_view out = zero_view();
    ASSERT_OK(wharf_model_run(method, run, in, 2, &out, 1));
    ASSERT_EQ(out.ndim, 3);
    ASSERT_EQ(out.shape[2], kVocab);
    std::vector<float> last(kVocab);
    const float* l = static_cast<const float*>(out.data) + (out.shape[1] - 1) * kVocab;
    ASSERT_OK(wharf_run_copy(run, last.data(), l, sizeof(float) * kVocab));
    ASSERT_OK(wharf_run_end(run));
    int64_t best = 0;
    for (int i = 1; i < kVocab; ++i)
      if (last[size_t(i)] > last[size_t(best)]) best = i;
    *token = best;
    if (logits) *logits = std::move(last);
  }

  std::string src_, base_, dir_, manifest_;
  uint32_t session_capacity_ = 0;  // wharf_model_package_options.session_capacity
  wharf_runtime* rt_ = nullptr;
  wharf_constant_map* weights_ = nullptr;
  wharf_constant_map* ref_ = nullptr;
  std::vector<int64_t> prompt_, want_;
  std::vector<float> decode_logits_;
};

#define LOAD_OR_SKIP(pkg)                                                                                  \
  do {                                                                                                     \
    St loaded_(load(pkg));                                                                                 \
    if (loaded_.code() != WHARF_OK && loaded_.has("GLIBC"))                                                \
      GTEST_SKIP() << "the compiled model needs a newer C library than this machine's: " << loaded_.msg(); \
    ASSERT_EQ(loaded_.code(), WHARF_OK) << loaded_.msg();                                                  \
  } while (0)

TEST_F(PackageGpu, LoadsInOneCallAndDecodesPyTorchsTokens) {
  wharf_model_package* pkg = nullptr;
  LOAD_OR_SKIP(&pkg);
  EXPECT_STREQ(wharf_model_package_name(pkg), "tiny");
  EXPECT_EQ(wharf_model_package_max_seq_len(pkg), 64u);
  ASSERT_EQ(wharf_model_package_num_methods(pkg), 2u);
  EXPECT_STREQ(wharf_model_package_method_name(pkg, 0), "prefill");
  EXPECT_STREQ(wharf_model_package_method_name(pkg, 1), "decode");
  EXPECT_EQ(wharf_model_package_method_name(pkg, 2), nullptr);
  EXPECT_EQ(wharf_model_package_find_method(pkg, "decode"), 1);
  EXPECT_EQ(wharf_model_package_find_method(pkg, "score"), -1);
  // The manifest's signatures, symbolic dimensions included.
  ASSERT_EQ(wharf_model_package_num_method_inputs(pkg, 0), 2u);
  ASSERT_EQ(wharf_model_package_num_method_outputs(pkg, 1), 1u);
  wharf_model_package_tensor_info ti = sized<wharf_model_package_tensor_info>();
  ASSERT_OK(wharf_model_package_get_method_input(pkg, 0, 0, &ti));
  EXPECT_STREQ(ti.name, "input_ids");
  EXPECT_EQ(ti.dtype, WHARF_DTYPE_I64);
  ASSERT_EQ(ti.ndim, 2);
  EXPECT_EQ(ti.shape[0], 1);
  EXPECT_EQ(ti.shape[1], -1);
  EXPECT_EQ(ti.dim_names[0], nullptr);
  EXPECT_STREQ(ti.dim_names[1], "T");
  EXPECT_EQ(ti.dim_min[1], 1);
  EXPECT_EQ(ti.dim_max[1], 64);
  ASSERT_OK(wharf_model_package_get_method_output(pkg, 1, 0, &ti));
  EXPECT_STREQ(ti.name, "logits");
  EXPECT_EQ(ti.shape[2], kVocab);
  EXPECT_CODE(wharf_model_package_get_method_output(pkg, 1, 1, &ti), WHARF_INVALID_ARGUMENT);
  EXPECT_CODE(wharf_model_package_get_method_input(pkg, 2, 0, &ti), WHARF_INVALID_ARGUMENT);

  // The weights once: both methods' containers share every parameter through the store.
  uint64_t weight_bytes = 0;
  for (size_t i = 0; i < wharf_constant_map_num_entries(weights_); ++i) {
    const char* name = nullptr;
    wharf_tensor_view v = zero_view();
    ASSERT_OK(wharf_constant_map_get_entry(weights_, i, &name, &v));
    uint64_t b = wharf_dtype_size(v.dtype);
    for (int d = 0; d < v.ndim; ++d) b *= uint64_t(v.shape[d]);
    weight_bytes += b;
  }
  EXPECT_EQ(mem(WHARF_MEM_CONSTANTS), weight_bytes);
  wharf_weight_store_stats ss = sized<wharf_weight_store_stats>();
  ASSERT_OK(wharf_weight_store_get_stats(wharf_model_package_store(pkg), &ss));
  EXPECT_EQ(ss.num_unique_constants, wharf_constant_map_num_entries(weights_));
  EXPECT_GT(ss.num_references, ss.num_unique_constants) << "both methods use the store's weights";

  wharf_model *prefill = nullptr, *decode = nullptr, *none = nullptr;
  ASSERT_OK(wharf_model_package_get_method(pkg, "prefill", &prefill));
  ASSERT_OK(wharf_model_package_get_method(pkg, "decode", &decode));
  {
    St st(wharf_model_package_get_method(pkg, "score", &none));
    EXPECT_EQ(st.code(), WHARF_NOT_FOUND);
    EXPECT_TRUE(st.has("no method 'score' (its methods: 'prefill', 'decode')")) << st.msg();
  }
  EXPECT_EQ(wharf_container_num_states(wharf_model_container(prefill)), 4u);
  wharf_session* s = nullptr;
  ASSERT_OK(wharf_model_package_create_session(pkg, nullptr, &s));
  EXPECT_EQ(wharf_session_state_bytes(s), 4u * 4 * 64 * 16 * 4) << "one buffer per state, shared by both methods";
  // The package may go first: the models and the session keep what they use.
  wharf_model_package_free(pkg);
  std::vector<int64_t> got(1);
  step(prefill, s, prompt_, 0, &got[0]);
  for (size_t k = 1; k < want_.size(); ++k) {
    int64_t t = 0;
    step(decode, s, {got.back()}, int64_t(prompt_.size() + k - 1), &t);
    got.push_back(t);
  }
  EXPECT_EQ(got, want_);
  wharf_session_free(s);
  wharf_model_free(prefill);
  wharf_model_free(decode);
  EXPECT_OK(wharf_runtime_synchronize(rt_));
  EXPECT_EQ(mem(WHARF_MEM_CONSTANTS), 0u) << "the weights are freed with their last user";
}

TEST_F(PackageGpu, TwoSessionsInterleavedEachDecodeTheReference) {
  wharf_model_package* pkg = nullptr;
  LOAD_OR_SKIP(&pkg);
  wharf_model *prefill = nullptr, *decode = nullptr;
  ASSERT_OK(wharf_model_package_get_method(pkg, "prefill", &prefill));
  ASSERT_OK(wharf_model_package_get_method(pkg, "decode", &decode));
  wharf_session* s[2] = {nullptr, nullptr};
  for (auto& x : s) ASSERT_OK(wharf_model_package_create_session(pkg, nullptr, &x));
  std::vector<int64_t> got[2];
  for (int c = 0; c < 2; ++c) {
    int64_t t = 0;
    step(prefill, s[c], prompt_, 0, &t);
    got[c].push_back(t);
  }
  for (size_t k = 1; k < want_.size(); ++k)
    for (int c = 0; c < 2; ++c) {
      int64_t t = 0;
      step(decode, s[c], {got[c].back()}, int64_t(prompt_.size() + k - 1), &t);
      got[c].push_back(t);
    }
  EXPECT_EQ(got[0], want_);
  EXPECT_EQ(got[1], want_);
  for (auto& x : s) wharf_session_free(x);
  wharf_model_free(prefill);
  wharf_model_free(decode);
  wharf_model_package_free(pkg);
}

// A package with a state arena (issue 26): each session is one slot of one allocation per
// state, shared by both methods; sessions interleaved step by step each decode the reference
// (the compiled methods bind the session's slot), a session past the capacity is refused, and
// a freed session's slot serves a new conversation from its initial state.
TEST_F(PackageGpu, ArenaSessionsInterleavedEachDecodeTheReference) {
  session_capacity_ = 2;
  const uint64_t state_before = mem(WHARF_MEM_STATE);
  wharf_model_package* pkg = nullptr;
  LOAD_OR_SKIP(&pkg);
  wharf_model *prefill = nullptr, *decode = nullptr;
  ASSERT_OK(wharf_model_package_get_method(pkg, "prefill", &prefill));
  ASSERT_OK(wharf_model_package_get_method(pkg, "decode", &decode));
  const uint64_t one = 4u * 4 * 64 * 16 * 4;  // one session's four states (see the test above)
  wharf_state_arena_stats as = sized<wharf_state_arena_stats>();
  ASSERT_OK(wharf_container_get_state_arena_stats(wharf_model_container(decode), &as));
  EXPECT_EQ(as.num_slots, 2u);
  EXPECT_EQ(as.bytes, 2 * one);
  const uint64_t loaded = mem(WHARF_MEM_STATE);
  EXPECT_GE(loaded - state_before, 2 * one) << "the arena is allocated at load";
  wharf_session* s[2] = {nullptr, nullptr};
  for (auto& x : s) ASSERT_OK(wharf_model_package_create_session(pkg, nullptr, &x));
  EXPECT_EQ(wharf_session_slot(s[0]), 0);
  EXPECT_EQ(wharf_session_slot(s[1]), 1);
  {
    wharf_session* third = nullptr;
    St st(wharf_model_package_create_session(pkg, nullptr, &third));
    EXPECT_EQ(st.code(), WHARF_RESOURCE_EXHAUSTED) << st.msg();
    EXPECT_TRUE(st.has("session_capacity 2")) << st.msg();
  }
  for (int round = 0; round < 2; ++round) {
    std::vector<int64_t> got[2];
    for (int c = 0; c < 2; ++c) {
      int64_t t = 0;
      step(prefill, s[c], prompt_, 0, &t);
      got[c].push_back(t);
    }
    for (size_t k = 1; k < want_.size(); ++k)
      for (int c = 0; c < 2; ++c) {
        int64_t t = 0;
        step(decode, s[c], {got[c].back()}, int64_t(prompt_.size() + k - 1), &t);
        got[c].push_back(t);
      }
    EXPECT_EQ(got[0], want_) << "round " << round;
    EXPECT_EQ(got[1], want_) << "round " << round;
    // A new conversation in the slot of the first: freed, then taken again at once.
    wharf_session_free(s[0]);
    s[0] = nullptr;
    ASSERT_OK(wharf_model_package_create_session(pkg, nullptr, &s[0]));
    EXPECT_EQ(wharf_session_slot(s[0]), 0);
    ASSERT_OK(wharf_session_reset(s[1]));
  }
  EXPECT_EQ(mem(WHARF_MEM_STATE), loaded) << "sessions of the arena and their runs allocate no state";
  for (auto& x : s) wharf_session_free(x);
  wharf_model_free(prefill);
  wharf_model_free(decode);
  wharf_model_package_free(pkg);
}

TEST_F(PackageGpu, AStoreUpdateFromAFileMidConversationReachesBothMethodsAndRollsBack) {
  wharf_model_package* pkg = nullptr;
  LOAD_OR_SKIP(&pkg);
  wharf_model *prefill = nullptr, *decode = nullptr;
  ASSERT_OK(wharf_model_package_get_method(pkg, "prefill", &prefill));
  ASSERT_OK(wharf_model_package_get_method(pkg, "decode", &decode));
  wharf_weight_store* store = wharf_model_package_store(pkg);
  // The update: lm_head.weight negated (every logit changes sign), as a trainer would write it.
  wharf_tensor_view head = zero_view();
  ASSERT_OK(wharf_constant_map_find(weights_, "lm_head.weight", &head));
  std::vector<float> neg(size_t(head.shape[0] * head.shape[1]));
  std::memcpy(neg.data(), head.data, neg.size() * sizeof(float));
  for (float& x : neg) x = -x;
  wharf_tensor_view nv = head;
  nv.data = neg.data();
  nv.flags = 0;
  wharf_constant_map* upd = nullptr;
  ASSERT_OK(wharf_constant_map_create(&upd));
  ASSERT_OK(wharf_constant_map_set(upd, "lm_head.weight", &nv));
  const std::string update_file = base_ + "/update.safetensors";
  ASSERT_OK(wharf_constant_map_save_safetensors(upd, update_file.c_str()));
  wharf_constant_map_free(upd);

  wharf_session* s = nullptr;
  ASSERT_OK(wharf_model_package_create_session(pkg, nullptr, &s));
  std::vector<int64_t> got(1);
  step(prefill, s, prompt_, 0, &got[0]);
  int64_t t = 0;
  step(decode, s, {got.back()}, int64_t(prompt_.size()), &t);
  got.push_back(t);
  const uint64_t g_prefill = wharf_container_generation(wharf_model_container(prefill));
  const uint64_t g_decode = wharf_container_generation(wharf_model_container(decode));
  // Mid-conversation: the update from the file, one swap for both methods.
  ASSERT_OK(wharf_weight_store_update_from_file(store, update_file.c_str(), nullptr));
  ASSERT_OK(wharf_weight_store_swap(store));
  EXPECT_GT(wharf_container_generation(wharf_model_container(prefill)), g_prefill);
  EXPECT_GT(wharf_container_generation(wharf_model_container(decode)), g_decode);
  // The same session's next step: the negated logits of the reference's step.
  const size_t k = got.size();
  std::vector<float> logits;
  step(decode, s, {got.back()}, int64_t(prompt_.size() + k - 1), &t, &logits);
  double err = 0;
  for (int i = 0; i < kVocab; ++i)
    err = std::max(err, double(std::fabs(logits[size_t(i)] + decode_logits_[(k - 1) * kVocab + size_t(i)])));
  EXPECT_LT(err, 2e-3) << "the step after the update should read the negated lm_head";
  // Rollback: the original weights file through the same path; the conversation goes on
  // from where it was (this step again, at the same position) and decodes the reference.
  ASSERT_OK(wharf_weight_store_update_from_file(store, (dir_ + "/weights/model.safetensors").c_str(), nullptr));
  ASSERT_OK(wharf_weight_store_swap(store));
  for (size_t j = k; j < want_.size(); ++j) {
    step(decode, s, {got.back()}, int64_t(prompt_.size() + j - 1), &t);
    got.push_back(t);
  }
  EXPECT_EQ(got, want_);
  wharf_session_free(s);
  wharf_model_free(prefill);
  wharf_model_free(decode);
  wharf_model_package_free(pkg);
}

// Refusals that need the compiled methods; each names the field and leaves no memory behind.
TEST_F(PackageGpu, AManifestThatDoesNotMatchItsMethodsIsRefused) {
  struct Case {
    std::string manifest;
    wharf_code code;
    std::vector<std::string> needles;
  };
  std::string three_inputs = manifest_;
  const std::string decode_inputs = R"({"name": "cache_position", "dtype": "int64", "shape": [1]}])";
  three_inputs.replace(three_inputs.find(decode_inputs), decode_inputs.size(),
                       R"({"name": "cache_position", "dtype": "int64", "shape": [1]},
                {"name": "attention_mask", "dtype": "int64", "shape": [1, 64]}])");
  std::string two_outputs = manifest_;
  const std::string decode_out = R"("outputs": [{"name": "logits", "dtype": "float32", "shape": [1, 1, 256]}])";
  two_outputs.replace(two_outputs.find(decode_out), decode_out.size(),
                      R"("outputs": [{"name": "logits", "dtype": "float32", "shape": [1, 1, 256]},
                 {"name": "hidden", "dtype": "float32", "shape": [1, 1, 64]}])");
  std::string wrong_state = manifest_;
  const std::string cache0 = R"({"fqn": "layers.0.k_cache", "dtype": "float32", "shape": [1, 4, 64, 16])";
  wrong_state.replace(wrong_state.find(cache0), cache0.size(),
                      R"({"fqn": "layers.0.k_cache", "dtype": "float32", "shape": [1, 4, 32, 16])");
  std::string extra_state = manifest_;
  const std::string states_open = "\"state\": [\n    ";
  extra_state.replace(
      extra_state.find(states_open), states_open.size(),
      states_open + R"({"fqn": "wharf_cache.unused", "dtype": "float32", "shape": [2], "initial": "zeros"},
    )");
  const std::vector<Case> cases = {
      {three_inputs, WHARF_INVALID_ARGUMENT, {"methods[1] ('decode').inputs: 3 declared", "takes 2"}},
      {two_outputs, WHARF_INVALID_ARGUMENT, {"methods[1] ('decode').outputs: 2 declared", "returns 1"}},
      {manifest("", "layers.1.v_cache"),
       WHARF_INVALID_ARGUMENT,
       {"methods[0] ('prefill')", "buffer 'layers.1.v_cache'", "is neither a declared state nor a listed parameter"}},
      {wrong_state, WHARF_INVALID_ARGUMENT, {"state 'layers.0.k_cache' is declared F32 [1, 4, 32, 16]"}},
      {extra_state, WHARF_INVALID_ARGUMENT, {"state[0]: state 'wharf_cache.unused' is a buffer of no method"}},
  };
  for (const Case& c : cases) {
    manifest_ = c.manifest;
    wharf_model_package* pkg = nullptr;
    St st(load(&pkg));
    if (st.has("GLIBC")) GTEST_SKIP() << st.msg();
    EXPECT_EQ(st.code(), c.code) << st.msg();
    for (const std::string& n : c.needles) EXPECT_TRUE(st.has(n)) << "'" << n << "' not in: " << st.msg();
    EXPECT_EQ(pkg, nullptr);
    EXPECT_OK(wharf_runtime_synchronize(rt_));
    EXPECT_EQ(mem(WHARF_MEM_CONSTANTS), 0u) << st.msg();
    EXPECT_EQ(mem(WHARF_MEM_STATE), 0u) << st.msg();
  }
}

TEST_F(PackageGpu, AParameterTheManifestDoesNotListIsRefusedNamingIt) {
  // The weight file without lm_head.weight, and the manifest without it: the methods bind it.
  wharf_constant_map* partial = nullptr;
  ASSERT_OK(wharf_constant_map_create(&partial));
  for (size_t i = 0; i < wharf_constant_map_num_entries(weights_); ++i) {
    const char* name = nullptr;
    wharf_tensor_view v = zero_view();
    ASSERT_OK(wharf_constant_map_get_entry(weights_, i, &name, &v));
    if (std::string(name) == "lm_head.weight") continue;
    v.flags = 0;
    ASSERT_OK(wharf_constant_map_set(partial, name, &v));
  }
  ASSERT_OK(wharf_constant_map_save_safetensors(partial, (dir_ + "/weights/model.safetensors").c_str()));
  wharf_constant_map_free(partial);
  manifest_ = manifest("lm_head.weight");
  wharf_model_package* pkg = nullptr;
  St st(load(&pkg));
  if (st.has("GLIBC")) GTEST_SKIP() << st.msg();
  EXPECT_EQ(st.code(), WHARF_INVALID_ARGUMENT) << st.msg();
  EXPECT_TRUE(st.has("methods[0] ('prefill'): the compiled model binds parameter 'lm_head.weight'")) << st.msg();
  EXPECT_TRUE(st.has("which the manifest's weights.parameters does not list")) << st.msg();
  EXPECT_OK(wharf_runtime_synchronize(rt_));
  EXPECT_EQ(mem(WHARF_MEM_CONSTANTS), 0u);
}

TEST_F(PackageGpu, AMethodNeedingAShimFunctionWharfLacksIsUnsupportedNamingIt) {
  copy_file(wharf_test::binary_dir() + "/fakes/missing_shim_model.so", dir_ + "/methods/decode.so");
  wharf_model_package* pkg = nullptr;
  St st(load(&pkg));
  if (st.has("GLIBC")) GTEST_SKIP() << st.msg();
  EXPECT_EQ(st.code(), WHARF_UNSUPPORTED) << st.msg();
  EXPECT_TRUE(st.has("method 'decode'")) << st.msg();
  EXPECT_TRUE(st.has("aoti_torch_")) << st.msg();
  EXPECT_OK(wharf_runtime_synchronize(rt_));
  EXPECT_EQ(mem(WHARF_MEM_CONSTANTS), 0u) << "the prefill method loaded before is gone";
}

}  // namespace

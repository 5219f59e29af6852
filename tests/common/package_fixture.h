// SPDX-License-Identifier: Apache-2.0
// What the GPU tests of model packages share for driving them through the C API: sized
// structs and host int64 views (model_package_gpu_test too), and, for the committed tiny
// Llama package (tests/data/packages/tiny-llama-f32), the fixture PackageLanes: it loads the
// package as lanes (one load each: its prefill, decode and, with an arena, decode_batch, and
// its sessions by a test's id) and runs a lane's methods, reading the logits back with
// wharf_run_copy. One copy, so that graph_bucket_gpu_test and package_batch_gpu_test load,
// skip and read the package alike.
//
// Needs WHARF_EXPERIMENTAL (the arena and graph calls) defined before wharf/wharf.h.
#ifndef WHARF_TESTS_COMMON_PACKAGE_FIXTURE_H_
#define WHARF_TESTS_COMMON_PACKAGE_FIXTURE_H_

#include <gtest/gtest.h>

#include <cuda_runtime_api.h>

#include <cstdint>
#include <cstdlib>
#include <cstring>
#include <fstream>
#include <map>
#include <memory>
#include <sstream>
#include <string>
#include <vector>

#include "common/test_paths.h"
#include "common/test_support.h"
#include "wharf/wharf.h"

namespace wharf_test {

// The committed package's vocabulary, and its decode_batch's session_capacity.
constexpr int kVocab = 256;
constexpr uint32_t kCapacity = 8;

// A C API struct zeroed with its struct_size set: the library reads only the fields that size
// says its caller knows.
template <typename T>
T sized() {
  T v;
  std::memset(&v, 0, sizeof v);
  v.struct_size = sizeof v;
  return v;
}

// An empty view: an output to fill, or an input left NULL on purpose (a batched run's slots).
inline wharf_tensor_view zero_view() { return sized<wharf_tensor_view>(); }

// A contiguous view of int64 host memory: wharf_model_run copies it to the device.
inline wharf_tensor_view host_i64(const int64_t* data, int ndim, const int64_t* shape) {
  wharf_tensor_view v = zero_view();
  v.data = const_cast<int64_t*>(data);
  v.dtype = WHARF_DTYPE_I64;
  v.device_type = WHARF_DEVICE_CPU;
  v.ndim = ndim;
  v.shape = shape;
  return v;
}

inline std::string read_text(const std::string& path) {
  std::ifstream f(path, std::ios::binary);
  std::stringstream s;
  s << f.rdbuf();
  return s.str();
}

inline std::string package_dir() { return test_data("packages/tiny-llama-f32"); }

// One load of the package: its methods and its sessions by a test's conversation id.
struct Lane {
  const char* what = "";
  wharf_model_package* pkg = nullptr;
  wharf_model *prefill = nullptr, *decode = nullptr, *batch = nullptr;
  std::map<int, wharf_session*> s;
  ~Lane() {
    for (auto& kv : s) wharf_session_free(kv.second);
    wharf_model_free(prefill);
    wharf_model_free(decode);
    wharf_model_free(batch);
    wharf_model_package_free(pkg);
  }
};

// How a batched step passes the slots input.
enum class Slots { kEmpty, kRunsOwn };

// Tests of the package on a CUDA runtime `rt_`. Skips without a CUDA device, and, where a
// suite sets `needs_batch_` in its constructor, while the package has no decode_batch.
class PackageLanes : public ::testing::Test {
 protected:
  void SetUp() override {
    int n = 0;
    if (cudaGetDeviceCount(&n) != cudaSuccess || n == 0) GTEST_SKIP() << "no CUDA device";
    dir_ = package_dir();
    has_batch_ = read_text(dir_ + "/manifest.json").find("\"decode_batch\"") != std::string::npos;
    if (needs_batch_ && !has_batch_)
      GTEST_SKIP() << dir_ << " has no decode_batch method yet (wharf_export.py --session-capacity 8 makes it)";
    wharf_runtime_options ro;
    wharf_runtime_options_init(&ro);
    ro.backend = WHARF_BACKEND_CUDA;
    ASSERT_OK(wharf_runtime_create(&ro, &rt_));
  }
  void TearDown() override {
    lanes_.clear();  // before the runtime they were loaded on
    wharf_runtime_free(rt_);
  }

  wharf_status* load(uint32_t capacity, wharf_model_package** out) {
    wharf_model_package_options o;
    wharf_model_package_options_init(&o);
    o.shim_path = std::getenv("WHARF_AOTI_SHIM");
    o.session_capacity = capacity;
    return wharf_model_package_load(rt_, dir_.c_str(), &o, out);
  }

  // Loads a lane: with the arena (its batched method, graphs on it when asked) or without (the
  // per-session buffers). Sets skip_ when the compiled methods need a newer C library.
  Lane* open(const char* what, uint32_t capacity, bool graphs = false) {
    auto l = std::make_unique<Lane>();
    l->what = what;
    St st(load(capacity, &l->pkg));
    if (st.code() != WHARF_OK && st.has("GLIBC")) {
      skip_ = "the compiled methods need a newer C library than this machine's: " + st.msg();
      return nullptr;
    }
    EXPECT_EQ(st.code(), WHARF_OK) << st.msg();
    if (st.code() != WHARF_OK) return nullptr;
    EXPECT_OK(wharf_model_package_get_method(l->pkg, "prefill", &l->prefill));
    EXPECT_OK(wharf_model_package_get_method(l->pkg, "decode", &l->decode));
    if (capacity) {
      EXPECT_OK(wharf_model_package_get_method(l->pkg, "decode_batch", &l->batch));
      if (graphs && l->batch) EXPECT_OK(wharf_model_enable_graphs(l->batch, nullptr));
    }
    lanes_.push_back(std::move(l));
    return lanes_.back().get();
  }

  // Reads a run's logits output [rows, 1, vocab] (device memory) into *logits (row-major rows).
  static void read_logits(wharf_run* run, const wharf_tensor_view& out, size_t rows, std::vector<float>* logits) {
    ASSERT_EQ(out.ndim, 3);
    ASSERT_EQ(out.shape[0], int64_t(rows));
    ASSERT_EQ(out.shape[1], 1);
    ASSERT_EQ(out.shape[2], kVocab);
    if (out.strides) {
      EXPECT_EQ(out.strides[2], 1);
      EXPECT_EQ(out.strides[0], kVocab);
    }
    logits->resize(rows * kVocab);
    ASSERT_OK(wharf_run_copy(run, logits->data(), out.data, logits->size() * sizeof(float)));
  }

  // Prefills `tokens` in session `id` of `l` (the per-session method) at positions `pos`,
  // 0..T-1 when empty; the last position's logits.
  static void prefill(Lane& l, int id, const std::vector<int64_t>& tokens, std::vector<float>* logits,
                      std::vector<int64_t> pos = {}) {
    if (pos.empty()) {
      pos.resize(tokens.size());
      for (size_t i = 0; i < pos.size(); ++i) pos[i] = int64_t(i);
    }
    const int64_t ishape[2] = {1, int64_t(tokens.size())}, pshape[1] = {int64_t(pos.size())};
    wharf_tensor_view in[2] = {host_i64(tokens.data(), 2, ishape), host_i64(pos.data(), 1, pshape)};
    wharf_run* run = nullptr;
    ASSERT_OK(wharf_run_begin(wharf_model_container(l.prefill), l.s.at(id), nullptr, &run));
    wharf_tensor_view out = zero_view();
    ASSERT_OK(wharf_model_run(l.prefill, run, in, 2, &out, 1));
    read_logits(run, out, 1, logits);
    ASSERT_OK(wharf_run_end(run));
  }

  // One token of session `id` of `l` at `position` with the per-session decode method.
  static void decode(Lane& l, int id, int64_t token, int64_t position, std::vector<float>* logits) {
    const int64_t ishape[2] = {1, 1}, pshape[1] = {1};
    wharf_tensor_view in[2] = {host_i64(&token, 2, ishape), host_i64(&position, 1, pshape)};
    wharf_run* run = nullptr;
    ASSERT_OK(wharf_run_begin(wharf_model_container(l.decode), l.s.at(id), nullptr, &run));
    wharf_tensor_view out = zero_view();
    ASSERT_OK(wharf_model_run(l.decode, run, in, 2, &out, 1));
    read_logits(run, out, 1, logits);
    ASSERT_OK(wharf_run_end(run));
  }

  // decode_batch of `l` in `run` (open on n sessions): one token per row at its own position,
  // the logits of every row. A failed run fails the test naming the lane; the run stays open.
  static void run_batch(Lane& l, wharf_run* run, size_t n, const std::vector<int64_t>& tokens,
                        const std::vector<int64_t>& positions, std::vector<float>* logits,
                        Slots slots = Slots::kEmpty) {
    const int64_t ishape[2] = {int64_t(n), 1}, pshape[1] = {int64_t(n)};
    wharf_tensor_view in[3] = {host_i64(tokens.data(), 2, ishape), host_i64(positions.data(), 1, pshape),
                               zero_view()};  // data NULL: Wharf passes the run's slot indices
    if (slots == Slots::kRunsOwn) EXPECT_OK(wharf_run_get_slot_indices(run, &in[2]));
    wharf_tensor_view out = zero_view();
    St st(wharf_model_run(l.batch, run, in, 3, &out, 1));
    EXPECT_EQ(st.code(), WHARF_OK) << l.what << ": " << st.msg();
    if (st.code() == WHARF_OK) read_logits(run, out, n, logits);
  }

  std::string dir_, skip_;
  bool needs_batch_ = false;  // set by a suite whose every test runs decode_batch
  bool has_batch_ = false;
  wharf_runtime* rt_ = nullptr;
  std::vector<std::unique_ptr<Lane>> lanes_;
};

}  // namespace wharf_test

// Opens a lane into `var` (PackageLanes::open's arguments), skipping the test where the
// package cannot load on this machine's C library; any other failure ends the test.
#define OPEN_OR_SKIP(var, ...)                 \
  ::wharf_test::Lane* var = open(__VA_ARGS__); \
  if (!skip_.empty()) GTEST_SKIP() << skip_;   \
  ASSERT_NE(var, nullptr);                     \
  ASSERT_FALSE(HasFailure()) << "loading " << var->what

#endif  // WHARF_TESTS_COMMON_PACKAGE_FIXTURE_H_

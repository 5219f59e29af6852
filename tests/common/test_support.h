// SPDX-License-Identifier: Apache-2.0
// What the C++ tests (tests/unit, tests/gpu) share for calling the C API: the status guard
// St, ASSERT_OK / EXPECT_OK / EXPECT_CODE / EXPECT_FAILS, runtimes made with chosen options,
// float views, declarations and maps, a one-constant Model, the fixture of suites that run
// on the host backend and on CUDA where a GPU is visible, and finishes_within for tests that
// would hang before their fix. One copy, so every suite reports a failed call the same way
// (the expression, then the status's message).
#ifndef WHARF_TESTS_COMMON_TEST_SUPPORT_H_
#define WHARF_TESTS_COMMON_TEST_SUPPORT_H_

#include <gtest/gtest.h>

#include <chrono>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <functional>
#include <future>
#include <string>
#include <utility>

#include "wharf/wharf.h"

namespace wharf_test {

// Owns a wharf_status* (NULL = OK) and frees it. Implicit from the pointer on purpose, so
// `St st = call(...)` and `St st(call(...))` both read naturally.
struct St {
  wharf_status* s;
  St(wharf_status* st) : s(st) {}  // NOLINT: implicit on purpose
  ~St() { wharf_status_free(s); }
  St(const St&) = delete;
  St& operator=(const St&) = delete;
  wharf_code code() const { return wharf_status_code(s); }
  std::string msg() const { return wharf_status_message(s); }  // "" for OK
  bool has(const std::string& needle) const { return msg().find(needle) != std::string::npos; }
};

// The options a test's runtime differs in; zero fields keep the library's defaults.
struct RuntimeConfig {
  uint64_t device_memory_limit = 0;
  uint32_t copy_threads = 0;
  uint64_t staging_bytes = 0;
  int32_t device_index = 0;
};

// A runtime of `backend` with `config`, or null. On failure the reason goes to *why when
// given (a backend this machine may lack), else the calling test fails with it.
inline wharf_runtime* make_runtime(wharf_backend backend, const RuntimeConfig& config = {},
                                   std::string* why = nullptr) {
  wharf_runtime_options o;
  wharf_runtime_options_init(&o);
  o.backend = backend;
  o.device_index = config.device_index;
  o.device_memory_limit = config.device_memory_limit;
  o.copy_threads = config.copy_threads;
  o.staging_bytes = config.staging_bytes;
  wharf_runtime* rt = nullptr;
  St st(wharf_runtime_create(&o, &rt));
  if (st.code() != WHARF_OK) {
    if (why)
      *why = st.msg();
    else
      ADD_FAILURE() << "wharf_runtime_create: " << st.msg();
  }
  return rt;
}

// A contiguous CPU view of float data.
inline wharf_tensor_view f32_view(float* data, int32_t ndim, const int64_t* shape) {
  wharf_tensor_view v;
  std::memset(&v, 0, sizeof v);
  v.struct_size = sizeof v;
  v.data = data;
  v.dtype = WHARF_DTYPE_F32;
  v.device_type = WHARF_DEVICE_CPU;
  v.ndim = ndim;
  v.shape = shape;
  return v;
}

// The declaration of a one-dimensional float constant.
inline wharf_constant_decl f32_decl(const char* fqn, const int64_t* shape, uint32_t flags = 0) {
  wharf_constant_decl d;
  std::memset(&d, 0, sizeof d);
  d.struct_size = sizeof d;
  d.fqn = fqn;
  d.dtype = WHARF_DTYPE_F32;
  d.ndim = 1;
  d.shape = shape;
  d.flags = flags;
  return d;
}

// A map of one one-dimensional float tensor (the caller frees it; `data` must outlive it).
inline wharf_constant_map* map_of(const char* fqn, float* data, const int64_t* shape) {
  wharf_constant_map* map = nullptr;
  EXPECT_EQ(wharf_constant_map_create(&map), nullptr);
  wharf_tensor_view v = f32_view(data, 1, shape);
  EXPECT_EQ(wharf_constant_map_set(map, fqn, &v), nullptr);
  return map;
}

// A model of one [4] float constant "w", loaded with `value` and made active, on a host
// runtime of default options.
struct Model {
  wharf_runtime* rt = make_runtime(WHARF_BACKEND_HOST);
  wharf_container* c = nullptr;
  float data[4];
  int64_t shape[1] = {4};
  explicit Model(float value, const char* name = "m") {
    for (float& x : data) x = value;
    wharf_constant_map* map = map_of("w", data, shape);
    wharf_container_options o;
    wharf_container_options_init(&o);
    o.name = name;
    St st(wharf_container_create_from_map(rt, map, &o, &c));
    EXPECT_EQ(st.code(), WHARF_OK) << st.msg();
    wharf_constant_map_free(map);
  }
  ~Model() {
    wharf_container_free(c);
    wharf_runtime_free(rt);
  }
  Model(const Model&) = delete;
  Model& operator=(const Model&) = delete;
  // The first float of "w", through a run.
  float first() {
    wharf_run* run = nullptr;
    float x = -1;
    if (wharf_status* s = wharf_run_begin(c, nullptr, nullptr, &run)) {
      ADD_FAILURE() << wharf_status_message(s);
      wharf_status_free(s);
      return x;
    }
    EXPECT_EQ(wharf_run_read(run, "w", 0, &x, sizeof x), nullptr);
    EXPECT_EQ(wharf_run_end(run), nullptr);
    return x;
  }
};

// Suites whose every test runs on the host backend and, where a GPU is visible, on CUDA:
// derive (TEST_P), set `config` in the constructor if the defaults do not fit, and
// instantiate with WHARF_TEST_ON_BACKENDS. No host runtime fails the test; no CUDA runtime
// skips it with the reason.
class BackendTest : public ::testing::TestWithParam<wharf_backend> {
 protected:
  void SetUp() override {
    rt = make_runtime(GetParam(), config, &why);
    if (!rt) {
      if (GetParam() == WHARF_BACKEND_HOST) FAIL() << why;
      GTEST_SKIP() << "no CUDA runtime here: " << why;
    }
  }
  void TearDown() override { wharf_runtime_free(rt); }
  // Another runtime like `rt` (null, the reason in `why`, when it cannot be made).
  wharf_runtime* another_runtime() { return make_runtime(GetParam(), config, &why); }

  RuntimeConfig config;
  wharf_runtime* rt = nullptr;
  std::string why;
};

inline std::string backend_name(const ::testing::TestParamInfo<wharf_backend>& info) {
  return info.param == WHARF_BACKEND_CUDA ? "Cuda" : "Host";
}

// A test that would hang before its fix must fail instead: run `fn` on a thread and give
// up (ending the process with a message) if it does not finish in time.
inline void finishes_within(std::chrono::milliseconds limit, const char* what, std::function<void()> fn) {
  auto fut = std::async(std::launch::async, std::move(fn));
  if (fut.wait_for(limit) != std::future_status::ready) {
    std::fprintf(stderr, "FATAL: %s did not finish within %lld ms (deadlock)\n", what,
                 static_cast<long long>(limit.count()));
    std::fflush(stderr);
    std::_Exit(1);
  }
  fut.get();
}

}  // namespace wharf_test

// Test names read as Backends/Suite.Test/Host and .../Cuda.
#define WHARF_TEST_ON_BACKENDS(Suite)                                                                  \
  INSTANTIATE_TEST_SUITE_P(Backends, Suite, ::testing::Values(WHARF_BACKEND_HOST, WHARF_BACKEND_CUDA), \
                           ::wharf_test::backend_name)

// A C API call that must succeed; a failure prints the call and the status's message.
#define ASSERT_OK(expr)                                            \
  do {                                                             \
    ::wharf_test::St st_(expr);                                    \
    ASSERT_EQ(st_.code(), WHARF_OK) << #expr << ": " << st_.msg(); \
  } while (0)
#define EXPECT_OK(expr)                                            \
  do {                                                             \
    ::wharf_test::St st_(expr);                                    \
    EXPECT_EQ(st_.code(), WHARF_OK) << #expr << ": " << st_.msg(); \
  } while (0)
// A C API call that must fail with `want`...
#define EXPECT_CODE(expr, want)                                  \
  do {                                                           \
    ::wharf_test::St st_(expr);                                  \
    EXPECT_EQ(st_.code(), (want)) << #expr << ": " << st_.msg(); \
  } while (0)
// ... and with a message that contains `fragment`.
#define EXPECT_FAILS(expr, want, fragment)                           \
  do {                                                               \
    ::wharf_test::St st_(expr);                                      \
    EXPECT_EQ(st_.code(), (want)) << #expr << ": " << st_.msg();     \
    EXPECT_NE(st_.msg().find(fragment), std::string::npos)           \
        << "message: " << st_.msg() << "\nexpected: " << (fragment); \
  } while (0)

#endif  // WHARF_TESTS_COMMON_TEST_SUPPORT_H_

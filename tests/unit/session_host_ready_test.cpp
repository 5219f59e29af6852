// SPDX-License-Identifier: Apache-2.0
// Issue 11, defect 11: on the host backend the caller's own thread is the "kernel", so a
// run's memory must be ready when wharf_run_begin returns. A session's state is initialised
// on the runtime's stream (a worker thread); before the fix run_begin returned before that
// work ran, and a read through the run's tensor pointer saw zeros instead of the declared
// initial value. Each test first makes the stream slow (a sleeping task enqueued ahead of the
// session's work), so the bad order is forced rather than hoped for.
#include <gtest/gtest.h>

#include <chrono>
#include <cstring>
#include <string>
#include <thread>
#include <vector>

#include "api/handles.h"  // the runtime's stream, to make it slow
#include "common/test_support.h"
#include "wharf/wharf.h"

namespace {

using wharf_test::St;

constexpr auto kSlow = std::chrono::milliseconds(150);

struct SessionHostReadyTest : ::testing::Test {
  wharf_runtime* rt = nullptr;
  wharf_container* c = nullptr;
  int64_t h_shape[1] = {8};
  int64_t kv_shape[1] = {16};
  std::vector<float> init_h = std::vector<float>(8, 0.5f);
  wharf_tensor_view h_init{};

  void SetUp() override {
    wharf_runtime_options o;
    wharf_runtime_options_init(&o);
    o.backend = WHARF_BACKEND_HOST;
    o.copy_threads = 1;
    o.staging_bytes = 1 << 20;
    ASSERT_OK(wharf_runtime_create(&o, &rt));
    h_init = wharf_tensor_view{
        sizeof(wharf_tensor_view), 0, init_h.data(), WHARF_DTYPE_F32, WHARF_DEVICE_CPU, 0, 1, h_shape, nullptr};
    wharf_state_decl states[2] = {{sizeof(wharf_state_decl), "h", WHARF_DTYPE_F32, 1, h_shape, &h_init},
                                  {sizeof(wharf_state_decl), "kv", WHARF_DTYPE_F32, 1, kv_shape, nullptr}};
    wharf_container_options co;
    wharf_container_options_init(&co);
    co.name = "m";
    co.states = states;
    co.num_states = 2;
    wharf_constant_decl cd{sizeof(wharf_constant_decl), "w", WHARF_DTYPE_F32, 1, h_shape, WHARF_PLACEMENT_DEVICE, 0};
    co.constants = &cd;
    co.num_constants = 1;
    ASSERT_OK(wharf_container_create(rt, &co, &c));
    // Runs need active weights: load "w" and swap it in.
    std::vector<float> w(8, 1.0f);
    wharf_tensor_view wv{
        sizeof(wharf_tensor_view), 0, w.data(), WHARF_DTYPE_F32, WHARF_DEVICE_CPU, 0, 1, h_shape, nullptr};
    wharf_constant_map* map = nullptr;
    ASSERT_OK(wharf_constant_map_create(&map));
    ASSERT_OK(wharf_constant_map_set(map, "w", &wv));
    St up(wharf_container_update(c, map, nullptr));
    wharf_constant_map_free(map);
    ASSERT_EQ(up.code(), WHARF_OK) << up.msg();
    ASSERT_OK(wharf_container_swap(c));
  }
  void TearDown() override {
    wharf_container_free(c);
    wharf_runtime_free(rt);
  }

  // Work enqueued on the runtime's stream from now on runs only after kSlow.
  void slow_stream() {
    wharf::Status st = rt->rt->stream().enqueue_host([] { std::this_thread::sleep_for(kSlow); });
    ASSERT_TRUE(st.ok()) << st.message();
  }
  wharf_session* session(bool eager = false) {
    wharf_session_options so;
    wharf_session_options_init(&so);
    so.allocate_eagerly = eager ? 1 : 0;
    wharf_session* s = nullptr;
    St st(wharf_session_create(rt, &c, 1, &so, &s));
    EXPECT_EQ(st.code(), WHARF_OK) << st.msg();
    return s;
  }
  // The state's memory, straight through the run's tensor pointer (no wharf_run_read, no
  // synchronize): what a host "kernel" on the caller's thread sees.
  float* state(wharf_run* run, const char* fqn) {
    wharf_tensor_view v{};
    std::memset(&v, 0, sizeof v);
    St st(wharf_run_get_tensor(run, fqn, &v));
    EXPECT_EQ(st.code(), WHARF_OK) << st.msg();
    return static_cast<float*>(v.data);
  }
};

TEST_F(SessionHostReadyTest, NewSessionStateIsInitialisedWhenRunBeginReturns) {
  wharf_session* s = session();
  slow_stream();
  wharf_run* run = nullptr;
  ASSERT_OK(wharf_run_begin(c, s, nullptr, &run));
  float* h = state(run, "h");
  float* kv = state(run, "kv");
  for (int i = 0; i < 8; ++i) EXPECT_EQ(h[i], 0.5f) << "h[" << i << "] right after run_begin";
  for (int i = 0; i < 16; ++i) kv[i] = 1.0f;  // a host kernel writes; nothing may overwrite it later
  ASSERT_OK(wharf_run_end(run));
  ASSERT_OK(wharf_runtime_synchronize(rt));
  ASSERT_OK(wharf_run_begin(c, s, nullptr, &run));
  for (int i = 0; i < 16; ++i) EXPECT_EQ(state(run, "kv")[i], 1.0f) << "the zero fill ran after the run wrote";
  ASSERT_OK(wharf_run_end(run));
  wharf_session_free(s);
}

TEST_F(SessionHostReadyTest, EagerSessionStateIsInitialisedWhenRunBeginReturns) {
  slow_stream();
  wharf_session* s = session(/*eager=*/true);
  wharf_run* run = nullptr;
  ASSERT_OK(wharf_run_begin(c, s, nullptr, &run));
  float* h = state(run, "h");
  for (int i = 0; i < 8; ++i) EXPECT_EQ(h[i], 0.5f) << "h[" << i << "] right after run_begin";
  ASSERT_OK(wharf_run_end(run));
  wharf_session_free(s);
}

TEST_F(SessionHostReadyTest, ResetIsVisibleToTheNextRunBegin) {
  wharf_session* s = session();
  wharf_run* run = nullptr;
  ASSERT_OK(wharf_run_begin(c, s, nullptr, &run));
  float* h = state(run, "h");
  for (int i = 0; i < 8; ++i) h[i] = 7.0f;
  ASSERT_OK(wharf_run_end(run));
  slow_stream();
  ASSERT_OK(wharf_session_reset(s));
  ASSERT_OK(wharf_run_begin(c, s, nullptr, &run));
  h = state(run, "h");
  for (int i = 0; i < 8; ++i) EXPECT_EQ(h[i], 0.5f) << "h[" << i << "] after reset + run_begin";
  ASSERT_OK(wharf_run_end(run));
  wharf_session_free(s);
}

TEST_F(SessionHostReadyTest, ForkIsVisibleToTheNextRunBegin) {
  wharf_session* s = session();
  wharf_run* run = nullptr;
  ASSERT_OK(wharf_run_begin(c, s, nullptr, &run));
  float* h = state(run, "h");
  for (int i = 0; i < 8; ++i) h[i] = float(i);
  ASSERT_OK(wharf_run_end(run));
  slow_stream();
  wharf_session* f = nullptr;
  ASSERT_OK(wharf_session_fork(s, &f));
  ASSERT_OK(wharf_run_begin(c, f, nullptr, &run));
  float* fh = state(run, "h");
  for (int i = 0; i < 8; ++i) EXPECT_EQ(fh[i], float(i)) << "fork h[" << i << "] right after run_begin";
  ASSERT_OK(wharf_run_end(run));
  // The source, too, must not be written by the host while the fork's copy still reads it.
  slow_stream();
  wharf_session* f2 = nullptr;
  ASSERT_OK(wharf_session_fork(s, &f2));
  ASSERT_OK(wharf_run_begin(c, s, nullptr, &run));
  h = state(run, "h");
  for (int i = 0; i < 8; ++i) h[i] = -1.0f;
  ASSERT_OK(wharf_run_end(run));
  ASSERT_OK(wharf_run_begin(c, f2, nullptr, &run));
  for (int i = 0; i < 8; ++i) EXPECT_EQ(state(run, "h")[i], float(i)) << "fork copied after the source was written";
  ASSERT_OK(wharf_run_end(run));
  wharf_session_free(f2);
  wharf_session_free(f);
  wharf_session_free(s);
}

}  // namespace

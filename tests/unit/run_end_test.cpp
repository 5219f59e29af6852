// SPDX-License-Identifier: Apache-2.0
// A run's end is recorded once (Run::end_event), on the host backend: the event the
// generation's retirement recorded is the one the at_end callbacks see (the graphs' next
// replay orders after it) and the sessions' next runs wait for; pooled events are recorded
// again only once nobody holds them, and are reused then rather than created per run.
#define WHARF_EXPERIMENTAL 1
#include <gtest/gtest.h>

#include <cstring>
#include <memory>
#include <vector>

#include "api/handles.h"
#include "common/test_support.h"
#include "runs/run.h"
#include "wharf/wharf.h"

namespace {

using wharf_test::St;

struct RunEnd : ::testing::TestWithParam<uint32_t> {  // the session capacity (0: no arena)
  wharf_runtime* rt = nullptr;
  wharf_container* c = nullptr;
  int64_t w_shape[1] = {4};
  int64_t h_shape[1] = {8};

  void SetUp() override {
    rt = wharf_test::make_runtime(WHARF_BACKEND_HOST, {0, 1, 1 << 20});
    ASSERT_NE(rt, nullptr);
    wharf_state_decl state{sizeof(wharf_state_decl), "h", WHARF_DTYPE_F32, 1, h_shape, nullptr};
    wharf_constant_decl cd = wharf_test::f32_decl("w", w_shape);
    wharf_container_options co;
    wharf_container_options_init(&co);
    co.name = "c";
    co.constants = &cd;
    co.num_constants = 1;
    co.states = &state;
    co.num_states = 1;
    co.session_capacity = GetParam();
    ASSERT_OK(wharf_container_create(rt, &co, &c));
    float w[4] = {1, 2, 3, 4};
    wharf_constant_map* map = wharf_test::map_of("w", w, w_shape);
    St up(wharf_container_update(c, map, nullptr));
    wharf_constant_map_free(map);
    ASSERT_EQ(up.code(), WHARF_OK) << up.msg();
    ASSERT_OK(wharf_container_swap(c));
  }
  void TearDown() override {
    wharf_container_free(c);
    wharf_runtime_free(rt);
  }
  // Runs `sessions` (one: wharf_run_begin; more: a batched run) and returns the event its
  // end handed to the at_end callbacks; *begun_after: Run::begun_after.
  std::shared_ptr<wharf::Event> run_once(std::vector<wharf_session*> sessions,
                                         const wharf::Event** begun_after = nullptr) {
    wharf_run* run = nullptr;
    St st(sessions.size() == 1 ? wharf_run_begin(c, sessions[0], nullptr, &run)
                               : wharf_run_begin_batch(c, sessions.data(), sessions.size(), nullptr, &run));
    EXPECT_EQ(st.code(), WHARF_OK) << st.msg();
    if (!run) return nullptr;
    auto seen = std::make_shared<std::shared_ptr<wharf::Event>>();
    bool called = false;
    const wharf::Run* r = run->run;
    if (begun_after) *begun_after = r->begun_after();
    run->run->at_end([seen, r, &called] {
      *seen = r->end_event();
      called = true;
    });
    EXPECT_EQ(run->run->end_event(), nullptr);  // recorded at the end only
    EXPECT_OK(wharf_run_end(run));
    EXPECT_TRUE(called);
    // Done before the next run's end looks at the pool (the host stream runs on a thread).
    if (*seen) {
      EXPECT_TRUE((*seen)->synchronize().ok());
    }
    return *seen;
  }
};

TEST_P(RunEnd, TheCallbacksSeeTheEventRecordedAtTheEnd) {
  wharf_session* s = nullptr;
  ASSERT_OK(wharf_session_create(rt, &c, 1, nullptr, &s));
  std::shared_ptr<wharf::Event> e = run_once({s});
  ASSERT_NE(e, nullptr);
  ASSERT_TRUE(e->synchronize().ok());  // recorded on the run's stream
  bool done = false;
  ASSERT_TRUE(e->query(&done).ok());
  EXPECT_TRUE(done);
  // The session's next run begins after it (its only ordering on the host backend).
  EXPECT_NE(run_once({s}), nullptr);
  wharf_session_free(s);
}

TEST_P(RunEnd, TheSessionsNextRunBeginsAfterThatEvent) {
  // What a graph replay relies on to skip its own wait for the set's last holder when that
  // was the previous run of the same session(s).
  wharf_session* s = nullptr;
  ASSERT_OK(wharf_session_create(rt, &c, 1, nullptr, &s));
  const wharf::Event* after = nullptr;
  std::shared_ptr<wharf::Event> e = run_once({s});
  for (int i = 0; i < 3; ++i) {
    std::shared_ptr<wharf::Event> next = run_once({s}, &after);
    EXPECT_EQ(after, e.get()) << "run " << i + 2;
    e = next;
  }
  if (GetParam() >= 2) {
    wharf_session* t = nullptr;
    ASSERT_OK(wharf_session_create(rt, &c, 1, nullptr, &t));
    (void)run_once({t});
    e = run_once({s, t});
    (void)run_once({t, s}, &after);
    EXPECT_EQ(after, e.get());  // both sessions' last operation: one wait
    wharf_session_free(t);
  }
  wharf_session_free(s);
}

TEST_P(RunEnd, AHeldEventIsNotRecordedAgainAndFreeOnesAreReused) {
  wharf_session* s = nullptr;
  ASSERT_OK(wharf_session_create(rt, &c, 1, nullptr, &s));
  // The test holds the first run's event as the graphs hold their last holder's: no later
  // run records it (a record would move what the holder waits for).
  const std::shared_ptr<wharf::Event> held = run_once({s});
  ASSERT_NE(held, nullptr);
  std::vector<std::weak_ptr<wharf::Event>> seen;
  bool reused = false;
  for (int i = 0; i < 6; ++i) {
    std::shared_ptr<wharf::Event> e = run_once({s});
    ASSERT_NE(e, nullptr);
    EXPECT_NE(e, held) << "run " << i + 2;
    for (const auto& w : seen) reused = reused || w.lock() == e;
    seen.push_back(e);
  }
  // Events nobody holds are recorded again, not created per run.
  EXPECT_TRUE(reused);
  wharf_session_free(s);
}

TEST_P(RunEnd, ABatchedRunHandsItsEndToEverySession) {
  if (GetParam() < 2) GTEST_SKIP() << "batched runs need a state arena of 2 slots";
  wharf_session *a = nullptr, *b = nullptr;
  ASSERT_OK(wharf_session_create(rt, &c, 1, nullptr, &a));
  ASSERT_OK(wharf_session_create(rt, &c, 1, nullptr, &b));
  for (int i = 0; i < 3; ++i) {
    EXPECT_NE(run_once({a, b}), nullptr);
    EXPECT_NE(run_once({a}), nullptr);
    EXPECT_NE(run_once({b, a}), nullptr);
  }
  wharf_session_free(a);
  wharf_session_free(b);
}

INSTANTIATE_TEST_SUITE_P(Sessions, RunEnd, ::testing::Values(0u, 2u), [](const auto& info) {
  return info.param ? std::string("Arena") : std::string("OwnBuffers");
});

}  // namespace

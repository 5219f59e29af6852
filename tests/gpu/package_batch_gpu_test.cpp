// SPDX-License-Identifier: Apache-2.0
// Batched decode over a state arena (issue 26) on the GPU, through the public C API as a
// serving loop drives it: the committed tiny Llama package (tests/data/packages/tiny-llama-f32)
// with its batched method decode_batch (session_capacity 8, BATCHED.md) beside the
// per-session prefill and decode.
//
// Every batched row is checked against the same conversation decoded alone with the
// per-session decode method in a second load of the package without an arena (the
// reference): the argmax equal and the logits within 1e-4 (fp32; the maximum is printed);
// and bit for bit against each session run alone through decode_batch itself (N = 1).
// The conversations: 6 sessions prefilled (per-session prefill) to different lengths, then
// 20 batched steps over all of them and over subsets in any order, sessions leaving and
// joining (after their own prefill) between steps, a session forked mid-way continuing in
// both branches in one batch, a reset and a new prefill; the slots input left empty (Wharf
// passes the run's indices) or given as the run's own index tensor; a run of one arena
// session. With graphs, the same schedule replays one graph per bucket of N (the default
// buckets 1, 2, 4, 8: inputs padded) with every row equal to an eager batched run of the
// same steps bit for bit, captured once per bucket and never
// re-pointed while the generation stays (the arena's address is fixed; the slots are an
// input). A swap made while a batched run is open leaves that run on its generation; the
// next step reads the new one (update.safetensors of the package). Refusals name the input.
//
// Randomized schedules (PackageBatchFuzz, eager and with graphs): a seeded PRNG drives 2000
// steps of joins, leaves, forks, resets and batched steps over random subsets of up to 8
// sessions at ragged lengths, every batched row bit for bit its session stepped alone through
// decode_batch on a mirrored second load, with probe steps of every live session showing state
// disturbed while idle. WHARF_BATCH_FUZZ_SEED and WHARF_BATCH_FUZZ_STEPS pick another schedule;
// a failure prints the seed, the step and the last operations to replay it.
//
// Skips without a GPU, and while the committed package has no decode_batch (the exporter's
// --session-capacity 8 makes it).
#include <gtest/gtest.h>

#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <deque>
#include <functional>
#include <iterator>
#include <map>
#include <random>
#include <set>
#include <string>
#include <vector>

#define WHARF_EXPERIMENTAL
#include "common/package_fixture.h"
#include "common/test_support.h"
#include "wharf/wharf.h"

namespace {

using wharf_test::host_i64;
using wharf_test::kCapacity;
using wharf_test::kVocab;
using wharf_test::Lane;
using wharf_test::Slots;
using wharf_test::St;
using wharf_test::zero_view;

constexpr double kTolerance = 1e-4;

int argmax(const float* row) {
  int best = 0;
  for (int i = 1; i < kVocab; ++i)
    if (row[i] > row[best]) best = i;
  return best;
}

class PackageBatch : public wharf_test::PackageLanes {
 protected:
  PackageBatch() { needs_batch_ = true; }

  // The reference: each conversation's step alone, with the per-session decode method or
  // (alone_batched_) with decode_batch over that one session.
  void decode_each(Lane& l, const std::vector<int>& ids, const std::vector<int64_t>& tokens,
                   const std::vector<int64_t>& positions, std::vector<float>* logits) const {
    logits->assign(ids.size() * kVocab, 0.f);
    for (size_t r = 0; r < ids.size(); ++r) {
      std::vector<float> row;
      if (alone_batched_)
        decode_batch(l, {ids[r]}, {tokens[r]}, {positions[r]}, &row, nullptr);
      else
        decode(l, ids[r], tokens[r], positions[r], &row);
      if (::testing::Test::HasFatalFailure()) return;
      std::copy(row.begin(), row.end(), logits->begin() + std::ptrdiff_t(r * kVocab));
    }
  }

  // One batched step of decode_batch over the sessions `ids` (in that order): one token per
  // row at its own position. `mid` runs between wharf_run_begin_batch and the model's run.
  // With `one_session_run`, ids has one element and the run is wharf_run_begin's.
  static void decode_batch(Lane& l, const std::vector<int>& ids, const std::vector<int64_t>& tokens,
                           const std::vector<int64_t>& positions, std::vector<float>* logits, uint64_t* generation,
                           Slots slots = Slots::kEmpty, const std::function<void(wharf_run*)>& mid = {},
                           bool one_session_run = false) {
    const size_t n = ids.size();
    std::vector<wharf_session*> ss;
    for (int id : ids) ss.push_back(l.s.at(id));
    wharf_run* run = nullptr;
    if (one_session_run) {
      ASSERT_EQ(n, 1u);
      ASSERT_OK(wharf_run_begin(wharf_model_container(l.batch), ss[0], nullptr, &run));
    } else {
      ASSERT_OK(wharf_run_begin_batch(wharf_model_container(l.batch), ss.data(), n, nullptr, &run));
    }
    ASSERT_EQ(wharf_run_num_sessions(run), n);
    if (mid) mid(run);
    run_batch(l, run, n, tokens, positions, logits, slots);
    if (generation) *generation = wharf_run_generation(run);
    ASSERT_OK(wharf_run_end(run));
  }

  // The largest |a - b| over rows of logits, each row's argmax equal; fails past kTolerance
  // (with alone_batched_: unless bit for bit equal).
  double compare(const std::vector<float>& want, const std::vector<float>& got, const std::string& what) const {
    EXPECT_EQ(want.size(), got.size()) << what;
    if (alone_batched_ && want.size() == got.size())
      EXPECT_EQ(std::memcmp(want.data(), got.data(), want.size() * sizeof(float)), 0)
          << what << ": not bit-exact with the sessions run alone";
    double worst = 0;
    for (size_t r = 0; r * kVocab < std::min(want.size(), got.size()); ++r) {
      const float* a = want.data() + r * kVocab;
      const float* b = got.data() + r * kVocab;
      EXPECT_EQ(argmax(a), argmax(b)) << what << ", row " << r;
      for (int i = 0; i < kVocab; ++i) worst = std::max(worst, double(std::fabs(a[i] - b[i])));
    }
    EXPECT_LE(worst, kTolerance) << what;
    return worst;
  }

  // The conversations of the file's header on `batched` lanes (each compared with `ref`, and
  // with each other bit for bit). Returns the largest difference from the reference.
  bool alone_batched_ = false;

  double converse(const std::vector<Lane*>& batched, Lane& ref, std::set<size_t>* sizes) {
    std::vector<Lane*> all = batched;
    all.push_back(&ref);
    std::map<int, int64_t> pos;  // each conversation's next position
    double worst = 0;
    std::vector<float> want, got, first;
    auto create = [&](int id) {
      for (Lane* l : all) {
        wharf_session* s = nullptr;
        EXPECT_OK(wharf_model_package_create_session(l->pkg, nullptr, &s));
        l->s[id] = s;
      }
    };
    auto prefill_all = [&](int id, int len) {
      std::vector<int64_t> tokens(static_cast<size_t>(len));
      for (int k = 0; k < len; ++k) tokens[size_t(k)] = (id * 13 + k * 7 + 1) % kVocab;
      prefill(ref, id, tokens, &want);
      for (Lane* l : batched) {
        prefill(*l, id, tokens, &got);
        worst = std::max(worst, compare(want, got, std::string(l->what) + ": prefill of " + std::to_string(id)));
      }
      pos[id] = len;
    };
    int step = 0;
    auto batch_step = [&](const std::vector<int>& ids, Slots slots = Slots::kEmpty) {
      std::vector<int64_t> tokens, positions;
      for (int id : ids) {
        tokens.push_back((id * 37 + step * 11 + 5) % kVocab);  // teacher-forced: every row differs
        positions.push_back(pos.at(id));
      }
      decode_each(ref, ids, tokens, positions, &want);
      for (size_t k = 0; k < batched.size(); ++k) {
        decode_batch(*batched[k], ids, tokens, positions, &got, nullptr, slots);
        const std::string what = std::string(batched[k]->what) + ": step " + std::to_string(step) + " over " +
                                 std::to_string(ids.size()) + " sessions";
        worst = std::max(worst, compare(want, got, what));
        if (k == 0)
          first = got;
        else
          EXPECT_EQ(std::memcmp(first.data(), got.data(), got.size() * sizeof(float)), 0)
              << what << ": not bit-exact with " << batched[0]->what;
      }
      if (sizes) sizes->insert(ids.size());
      for (int id : ids) ++pos[id];
      ++step;
    };
    for (int id = 0; id < 6; ++id) {  // prompts of 3..8 tokens: ragged lengths
      create(id);
      prefill_all(id, 3 + id);
    }
    for (int i = 0; i < 4; ++i) batch_step({0, 1, 2, 3, 4, 5}, i == 1 ? Slots::kRunsOwn : Slots::kEmpty);
    for (int i = 0; i < 4; ++i) batch_step({5, 3, 1});  // a subset, in another order; 0, 2, 4 wait
    // 0 leaves; 6 joins after its own prefill; the others go on where they were.
    for (Lane* l : all) {
      wharf_session_free(l->s.at(0));
      l->s.erase(0);
    }
    create(6);
    prefill_all(6, 5);
    for (int i = 0; i < 4; ++i) batch_step({1, 2, 3, 4, 5, 6}, i == 2 ? Slots::kRunsOwn : Slots::kEmpty);
    // 2 forks into 7 mid-conversation: both branches go on in one batch, fed different tokens.
    for (Lane* l : all) {
      wharf_session* f = nullptr;
      EXPECT_OK(wharf_session_fork(l->s.at(2), &f));
      l->s[7] = f;
    }
    pos[7] = pos.at(2);
    for (int i = 0; i < 4; ++i) batch_step({2, 7, 3, 6});
    // 4 is reset and starts a new conversation.
    for (Lane* l : all) EXPECT_OK(wharf_session_reset(l->s.at(4)));
    prefill_all(4, 4);
    for (int i = 0; i < 4; ++i) batch_step({4, 2, 7, 1, 5, 6});
    EXPECT_EQ(step, 20);
    // The batched method over a run of one arena session.
    {
      const std::vector<int> ids = {3};
      const std::vector<int64_t> tokens = {42}, positions = {pos.at(3)};
      decode_each(ref, ids, tokens, positions, &want);
      for (Lane* l : batched) {
        decode_batch(*l, ids, tokens, positions, &got, nullptr, Slots::kEmpty, {}, /*one_session_run=*/true);
        worst = std::max(worst, compare(want, got, std::string(l->what) + ": a run of one arena session"));
      }
      if (sizes) sizes->insert(1);
    }
    return worst;
  }
};

TEST_F(PackageBatch, LoadsWithItsCapacityIsListedWithoutOneAndRefusesAnother) {
  OPEN_OR_SKIP(ref, "without an arena", 0);
  const int64_t i = wharf_model_package_find_method(ref->pkg, "decode_batch");
  ASSERT_GE(i, 0);
  EXPECT_STREQ(wharf_model_package_method_name(ref->pkg, size_t(i)), "decode_batch");
  ASSERT_EQ(wharf_model_package_num_method_inputs(ref->pkg, size_t(i)), 3u);
  wharf_model* m = nullptr;
  EXPECT_FAILS(wharf_model_package_get_method(ref->pkg, "decode_batch", &m), WHARF_FAILED_PRECONDITION,
               "'decode_batch'");
  EXPECT_FAILS(wharf_model_package_get_method(ref->pkg, "decode_batch", &m), WHARF_FAILED_PRECONDITION,
               "session_capacity 8");
  EXPECT_EQ(m, nullptr);
  wharf_model_package* pkg = nullptr;
  {
    St st(load(4, &pkg));
    EXPECT_EQ(st.code(), WHARF_INVALID_ARGUMENT) << st.msg();
    EXPECT_TRUE(st.has("'decode_batch'") && st.has("session_capacity 8") && st.has("session_capacity 4")) << st.msg();
    EXPECT_EQ(pkg, nullptr);
  }
  OPEN_OR_SKIP(b, "with its arena", kCapacity);
  EXPECT_NE(b->batch, nullptr);
  EXPECT_EQ(wharf_model_num_inputs(b->batch), 3u);
  wharf_state_arena_stats as = wharf_test::sized<wharf_state_arena_stats>();
  ASSERT_OK(wharf_container_get_state_arena_stats(wharf_model_container(b->batch), &as));
  EXPECT_EQ(as.num_slots, kCapacity);
}

TEST_F(PackageBatch, EveryBatchedRowEqualsItsSessionDecodedAlone) {
  OPEN_OR_SKIP(ref, "reference", 0);
  OPEN_OR_SKIP(b, "batched", kCapacity);
  const double worst = converse({b}, *ref, nullptr);
  std::printf("[ PackageBatch ] eager batched rows vs per-session decode: max |diff| %.3g (tolerance %.0e)\n", worst,
              kTolerance);
}

// The issue's bar for fp32: a row of a batched step is bit for bit the step of its session run
// alone (here: decode_batch over that one session, N = 1; the per-session decode method
// attends with another kernel, so it is compared within kTolerance above). Holds when every
// kernel computes a row the same way whatever N is: the shim's GEMV for N <= 8 (its per-row
// sums do not depend on the row count), Inductor's row kernels (compiled once for symbolic N)
// and the slots attention (one program per row).
TEST_F(PackageBatch, EveryBatchedRowIsBitExactWithItsSessionRunAloneThroughTheBatchedMethod) {
  OPEN_OR_SKIP(alone, "each session alone (N = 1)", kCapacity);
  OPEN_OR_SKIP(b, "batched", kCapacity);
  alone_batched_ = true;
  const double worst = converse({b}, *alone, nullptr);
  EXPECT_EQ(worst, 0.0);
  std::printf("[ PackageBatch ] batched rows vs each session alone through decode_batch: max |diff| %.3g\n", worst);
}

TEST_F(PackageBatch, GraphReplaysAreBitExactWithEagerBatchedRunsAndNeverRepointForSessions) {
  OPEN_OR_SKIP(ref, "reference", 0);
  OPEN_OR_SKIP(eager, "eager", kCapacity);
  OPEN_OR_SKIP(graphs, "graphs", kCapacity, /*graphs=*/true);
  std::set<size_t> sizes;
  const double worst = converse({eager, graphs}, *ref, &sizes);
  std::printf("[ PackageBatch ] graph-replayed batched rows vs per-session decode: max |diff| %.3g\n", worst);
  wharf_graph_stats gs = wharf_test::sized<wharf_graph_stats>();
  ASSERT_OK(wharf_model_get_graph_stats(graphs->batch, &gs));
  EXPECT_EQ(gs.capture_failures, 0u) << gs.last_eager_reason;
  EXPECT_EQ(gs.eager_runs, 0u) << gs.last_eager_reason;
  // The default buckets of N (1, 2, 4, 8; graphs/bucket_plan.h): one graph per bucket a size
  // used, and the largest (8), captured first.
  std::set<size_t> buckets = {kCapacity};
  for (size_t n : sizes) {
    size_t b = 1;
    while (b < n) b *= 2;
    buckets.insert(b);
  }
  EXPECT_EQ(gs.captures, buckets.size()) << "one graph per bucket (" << buckets.size() << " buckets)";
  EXPECT_EQ(gs.num_buckets, buckets.size());
  EXPECT_EQ(gs.replays, 21u) << "20 batched steps and a run of one session";
  // The arena's address is fixed and the sessions are an input: one generation, no re-point.
  EXPECT_EQ(gs.repoints, 0u);
  EXPECT_EQ(gs.nodes_repointed, 0u);
}

TEST_F(PackageBatch, RefusalsNameTheInputAndChangeNothing) {
  OPEN_OR_SKIP(ref, "reference", 0);
  OPEN_OR_SKIP(b, "batched", kCapacity);
  for (int id = 0; id < 2; ++id) {
    for (Lane* l : {b, ref}) ASSERT_OK(wharf_model_package_create_session(l->pkg, nullptr, &l->s[id]));
    std::vector<float> logits;
    for (Lane* l : {b, ref}) prefill(*l, id, {1, 2, 3}, &logits);
  }
  wharf_session* ss[2] = {b->s.at(0), b->s.at(1)};
  wharf_run* run = nullptr;
  ASSERT_OK(wharf_run_begin_batch(wharf_model_container(b->batch), ss, 2, nullptr, &run));
  const int64_t tokens[2] = {9, 10}, positions[2] = {3, 3}, ishape[2] = {2, 1}, pshape[1] = {2};
  int64_t foreign_slots[2] = {0, 1};  // the right values in the caller's memory: still refused
  wharf_tensor_view in[3] = {host_i64(tokens, 2, ishape), host_i64(positions, 1, pshape),
                             host_i64(foreign_slots, 1, pshape)};
  wharf_tensor_view out = zero_view();
  EXPECT_FAILS(wharf_model_run(b->batch, run, in, 3, &out, 1), WHARF_INVALID_ARGUMENT, "input 'slots'");
  in[2] = zero_view();
  const int64_t three[2] = {3, 1};
  in[0].shape = three;  // three rows for two sessions
  const int64_t more_tokens[3] = {9, 10, 11};
  in[0].data = const_cast<int64_t*>(more_tokens);
  EXPECT_FAILS(wharf_model_run(b->batch, run, in, 3, &out, 1), WHARF_INVALID_ARGUMENT, "input 'input_ids'");
  ASSERT_OK(wharf_run_end(run));
  // The per-session decode refuses a batched run, naming itself.
  wharf_run* per = nullptr;
  ASSERT_OK(wharf_run_begin_batch(wharf_model_container(b->decode), ss, 2, nullptr, &per));
  EXPECT_FAILS(wharf_model_run(b->decode, per, in, 2, &out, 1), WHARF_UNSUPPORTED, "'tiny-llama-f32/decode'");
  ASSERT_OK(wharf_run_end(per));
  // Nothing was written: the sessions decode as their references do.
  std::vector<float> want, got;
  decode_each(*ref, {0, 1}, {9, 10}, {3, 3}, &want);
  decode_batch(*b, {0, 1}, {9, 10}, {3, 3}, &got, nullptr);
  compare(want, got, "after the refusals");
}

class PackageBatchSwap : public PackageBatch, public ::testing::WithParamInterface<bool> {};

TEST_P(PackageBatchSwap, ABatchedRunKeepsItsGenerationAcrossASwapAndTheNextStepReadsTheNewOne) {
  const bool graphs = GetParam();
  // `ref` follows the batched lane's history (its update after step 2); `ref_old` is never
  // updated (to show the update changes the logits).
  OPEN_OR_SKIP(ref, "reference", 0);
  OPEN_OR_SKIP(ref_old, "reference on the old weights", 0);
  OPEN_OR_SKIP(b, graphs ? "batched with graphs" : "batched", kCapacity, graphs);
  const std::string update = dir_ + "/update.safetensors";
  const std::vector<int> ids = {0, 1, 2};
  std::vector<int64_t> positions;
  std::vector<float> want, got, old;
  for (int id : ids) {
    std::vector<int64_t> prompt;
    for (int k = 0; k < 4 + 2 * id; ++k) prompt.push_back((id * 31 + k * 3 + 2) % kVocab);
    for (Lane* l : {b, ref, ref_old}) {
      ASSERT_OK(wharf_model_package_create_session(l->pkg, nullptr, &l->s[id]));
      prefill(*l, id, prompt, &got);
    }
    positions.push_back(int64_t(prompt.size()));
  }
  auto references = [&](const std::vector<int64_t>& tokens) {
    decode_each(*ref, ids, tokens, positions, &want);
    decode_each(*ref_old, ids, tokens, positions, &old);
  };
  // Step 1 on the old weights (the graph of N = 3 is captured here when enabled).
  std::vector<int64_t> tokens = {7, 8, 9};
  uint64_t g0 = 0, g = 0;
  references(tokens);
  decode_batch(*b, ids, tokens, positions, &got, &g0);
  compare(want, got, "before the swap");
  for (int64_t& p : positions) ++p;
  // Step 2: the update and swap land while the batched run is open; the run keeps its generation.
  tokens = {10, 11, 12};
  wharf_container* c = wharf_model_container(b->batch);
  decode_batch(*b, ids, tokens, positions, &got, &g, Slots::kEmpty, [&](wharf_run* run) {
    EXPECT_EQ(wharf_run_generation(run), g0);
    EXPECT_OK(wharf_weight_store_update_from_file(wharf_model_package_store(b->pkg), update.c_str(), nullptr));
    EXPECT_OK(wharf_weight_store_swap(wharf_model_package_store(b->pkg)));
    EXPECT_GT(wharf_container_generation(c), g0);
  });
  EXPECT_EQ(g, g0);
  references(tokens);
  compare(want, got, "the run open across the swap (old weights)");
  for (int64_t& p : positions) ++p;
  ASSERT_OK(wharf_weight_store_update_from_file(wharf_model_package_store(ref->pkg), update.c_str(), nullptr));
  ASSERT_OK(wharf_weight_store_swap(wharf_model_package_store(ref->pkg)));
  // Step 3: the new generation, the same sessions, none aborted.
  tokens = {13, 14, 15};
  references(tokens);
  decode_batch(*b, ids, tokens, positions, &got, &g);
  EXPECT_GT(g, g0);
  const double worst = compare(want, got, "the step after the swap (new weights)");
  double moved = 0;
  for (size_t i = 0; i < want.size() && i < old.size(); ++i)
    moved = std::max(moved, double(std::fabs(want[i] - old[i])));
  EXPECT_GT(moved, 1e-2) << "update.safetensors should change the logits";
  std::printf("[ PackageBatch ] %s across a swap: max |diff| after it %.3g (the update moved logits by %.3g)\n",
              b->what, worst, moved);
  if (graphs) {
    wharf_graph_stats gs = wharf_test::sized<wharf_graph_stats>();
    ASSERT_OK(wharf_model_get_graph_stats(b->batch, &gs));
    EXPECT_EQ(gs.captures, 2u) << "buckets 8 (the largest, first) and 4 (N = 3); no recapture after a swap";
    EXPECT_EQ(gs.replays, 3u) << gs.last_eager_reason;
    // The store update folded the new generation and pointed a spare graph of each bucket at
    // it before it returned: the step after the swap replays that one, setting no node.
    EXPECT_GE(gs.prepointed_replays, 1u) << "the new generation's graph was pointed by the update (" << gs.repoints
                                         << " re-points, " << gs.prepares << " prepares)";
    EXPECT_EQ(gs.replay_folds, 0u) << "folded by the update, not the step";
  }
}

INSTANTIATE_TEST_SUITE_P(EagerAndGraphs, PackageBatchSwap, ::testing::Bool(),
                         [](const ::testing::TestParamInfo<bool>& i) { return i.param ? "Graphs" : "Eager"; });

// --- Randomized schedules (issue 26: "randomized over thousands of steps") ---

// An unsigned integer from the environment (decimal, or hex with 0x), else `fallback`.
uint64_t env_u64(const char* name, uint64_t fallback) {
  const char* v = std::getenv(name);
  if (!v || !*v) return fallback;
  char* end = nullptr;
  const unsigned long long x = std::strtoull(v, &end, 0);
  if (*end != '\0' || v[0] == '-') {
    ADD_FAILURE() << name << "='" << v << "' is not an unsigned integer; using " << fallback;
    return fallback;
  }
  return uint64_t(x);
}

std::string logit_text(float v) {
  char buf[64];
  std::snprintf(buf, sizeof buf, "%.9g (%a)", double(v), double(v));
  return buf;
}

// The batched lane eager, or replaying graphs (the buckets of N); the reference stays eager.
class PackageBatchFuzz : public PackageBatch, public ::testing::WithParamInterface<bool> {};

// A seeded random schedule of up to 8 sessions (the arena's capacity) over thousands of steps:
// joins (a new session and its own prefill of 1..12 tokens), leaves, forks into a free slot
// (both branches go on, fed their own tokens), resets with a new prefill, and batched steps
// over a random non-empty subset in random order, each row a random token at its session's
// next position; a session reaching max_seq_len 64 leaves or starts over. Every operation is
// mirrored on a second load of the package (the reference) where each row is stepped alone
// through decode_batch (N = 1), and every batched row's logits are compared with it bit for
// bit; now and then, and at the end, every live session takes a probe step alone on both
// lanes, which shows a session whose state another's write disturbed while it sat idle. On the
// reference lane a new session sometimes takes its slot with another slot held around it, so
// the two lanes' slot assignments differ: a row reading any slot but its own differs too.
// WHARF_BATCH_FUZZ_SEED and WHARF_BATCH_FUZZ_STEPS choose another schedule; a failure names
// the seed, the step and the last operations.
TEST_P(PackageBatchFuzz, RandomizedSchedulesOfThousandsOfStepsKeepEverySessionIsolatedAndBitExact) {
  const bool graphs = GetParam();
  OPEN_OR_SKIP(alone, "each session alone (N = 1)", kCapacity);
  OPEN_OR_SKIP(b, graphs ? "batched with graphs" : "batched", kCapacity, graphs);
  const uint64_t seed = env_u64("WHARF_BATCH_FUZZ_SEED", graphs ? 2602 : 2601);
  const uint64_t steps = env_u64("WHARF_BATCH_FUZZ_STEPS", 2000);
  const ::testing::TestInfo* info = ::testing::UnitTest::GetInstance()->current_test_info();
  const std::string test_name = std::string(info->test_suite_name()) + "." + info->name();
  std::printf("[ PackageBatch ] %s: seed %llu, %llu steps (WHARF_BATCH_FUZZ_SEED, WHARF_BATCH_FUZZ_STEPS)\n", b->what,
              static_cast<unsigned long long>(seed), static_cast<unsigned long long>(steps));
  constexpr int64_t kMaxLen = 64;  // the package's max_seq_len: positions 0..63
  constexpr size_t kHistory = 12;  // operations a failure lists
  std::mt19937_64 rng(seed);
  // Drawn by hand (std::uniform_int_distribution and std::shuffle differ between standard
  // libraries), so that a seed replays the same schedule wherever the test is built.
  auto below = [&](uint64_t n) { return rng() % n; };
  std::map<int, int64_t> next;  // the live sessions by id: each one's next position
  std::map<int, int> parent;    // a fork -> the session it branched from, while both live
  int next_id = 0;
  uint64_t step = 0, batched_runs = 0;
  std::deque<std::string> history;
  std::map<std::string, uint64_t> seen;  // what the schedule exercised, for the coverage check
  std::set<size_t> sizes;
  bool told = false;  // a failure printed the context already
  const auto t0 = std::chrono::steady_clock::now();

  auto sid = [](int id) { return "s" + std::to_string(id); };
  auto note = [&](const std::string& op) {
    history.push_back("step " + std::to_string(step) + ": " + op);
    if (history.size() > kHistory) history.pop_front();
  };
  auto context = [&] {
    std::string s = std::string(b->what) + ", seed " + std::to_string(seed) + ", step " + std::to_string(step) +
                    "; replay: WHARF_BATCH_FUZZ_SEED=" + std::to_string(seed) +
                    " WHARF_BATCH_FUZZ_STEPS=" + std::to_string(step + 1) + " ./wharf_gpu_tests --gtest_filter='" +
                    test_name + "'\nthe last operations, oldest first:";
    for (const std::string& h : history) s += "\n  " + h;
    return s;
  };
  auto slots_of = [&](int id) {
    return "slot " + std::to_string(wharf_session_slot(b->s.at(id))) + ", reference slot " +
           std::to_string(wharf_session_slot(alone->s.at(id)));
  };
  // Whether row `got` (the batched lane) is `want` (the reference) bit for bit; else fails naming it.
  auto same = [&](const float* want, const float* got, const std::string& what) {
    if (std::memcmp(want, got, kVocab * sizeof(float)) == 0) return true;
    int i = 0;
    while (i < kVocab && std::memcmp(want + i, got + i, sizeof(float)) == 0) ++i;
    ADD_FAILURE() << what << ": not bit-exact with the session run alone; logit " << i << " is " << logit_text(got[i])
                  << " batched, " << logit_text(want[i]) << " alone\n"
                  << context();
    told = true;
    return false;
  };
  auto prompt = [&]() {
    std::vector<int64_t> tokens(1 + below(12));
    for (int64_t& t : tokens) t = int64_t(below(kVocab));
    return tokens;
  };
  auto prefill_both = [&](int id, const std::vector<int64_t>& tokens) {
    std::vector<float> want, got;
    prefill(*alone, id, tokens, &want);
    prefill(*b, id, tokens, &got);
    if (HasFailure()) return false;
    next[id] = int64_t(tokens.size());
    return same(want.data(), got.data(), "the prefill of " + sid(id));
  };
  // A new session `id` on both lanes, made by `make`; on the reference lane, half the time
  // while another slot is held (then freed), so the lanes' slots differ.
  auto add = [&](int id, const std::function<wharf_status*(Lane&, wharf_session**)>& make) {
    for (Lane* l : {b, alone}) {
      wharf_session* spacer = nullptr;
      if (l == alone && next.size() + 2 <= kCapacity && below(2))
        EXPECT_OK(wharf_model_package_create_session(l->pkg, nullptr, &spacer));
      wharf_session* s = nullptr;
      St st(make(*l, &s));
      wharf_session_free(spacer);
      if (st.code() != WHARF_OK) {
        ADD_FAILURE() << l->what << ": " << st.msg() << "\n" << context();
        told = true;
        return false;
      }
      l->s[id] = s;
    }
    if (wharf_session_slot(b->s.at(id)) != wharf_session_slot(alone->s.at(id))) ++seen["slots differing"];
    history.back() += " (" + slots_of(id) + ")";
    return true;
  };
  auto join = [&]() {
    const int id = next_id++;
    const std::vector<int64_t> tokens = prompt();
    note(sid(id) + " joins with a prompt of " + std::to_string(tokens.size()) + " tokens");
    ++seen["joins"];
    return add(id, [](Lane& l, wharf_session** s) { return wharf_model_package_create_session(l.pkg, nullptr, s); }) &&
           prefill_both(id, tokens);
  };
  auto leave = [&](int id) {
    note(sid(id) + " leaves at position " + std::to_string(next.at(id)) + " (" + slots_of(id) + ")");
    ++seen["leaves"];
    for (Lane* l : {b, alone}) {
      wharf_session_free(l->s.at(id));
      l->s.erase(id);
    }
    next.erase(id);
    for (auto it = parent.begin(); it != parent.end();)
      it = it->first == id || it->second == id ? parent.erase(it) : std::next(it);
    return true;
  };
  auto fork = [&](int from) {
    const int id = next_id++;
    note(sid(from) + " at position " + std::to_string(next.at(from)) + " forks into " + sid(id));
    ++seen["forks"];
    if (!add(id, [from](Lane& l, wharf_session** s) { return wharf_session_fork(l.s.at(from), s); })) return false;
    next[id] = next.at(from);
    parent[id] = from;
    return true;
  };
  auto reset = [&](int id) {
    const std::vector<int64_t> tokens = prompt();
    note(sid(id) + " resets at position " + std::to_string(next.at(id)) + " (" + slots_of(id) + ") and prefills " +
         std::to_string(tokens.size()) + " tokens");
    ++seen["resets"];
    for (Lane* l : {b, alone}) {
      St st(wharf_session_reset(l->s.at(id)));
      if (st.code() != WHARF_OK) {
        ADD_FAILURE() << l->what << ": resetting " << sid(id) << ": " << st.msg() << "\n" << context();
        told = true;
        return false;
      }
    }
    for (auto it = parent.begin(); it != parent.end();)
      it = it->first == id || it->second == id ? parent.erase(it) : std::next(it);
    return prefill_both(id, tokens);
  };
  // Steps sessions `ids` (in that order) one random token each at its next position: on the
  // batched lane in one run (`together`) or one run each, on the reference one run each.
  auto step_rows = [&](const std::vector<int>& ids, bool together, const char* kind) {
    const size_t n = ids.size();
    std::vector<int64_t> tokens(n), positions(n);
    const Slots slots = together && below(8) == 0 ? Slots::kRunsOwn : Slots::kEmpty;
    std::string op = std::string(kind) + " N = " + std::to_string(n) +
                     (slots == Slots::kRunsOwn ? " (the run's own slot tensor)" : "") + ":";
    for (size_t r = 0; r < n; ++r) {
      tokens[r] = int64_t(below(kVocab));
      positions[r] = next.at(ids[r]);
      op += " " + sid(ids[r]) + "@" + std::to_string(positions[r]) + ":" + std::to_string(tokens[r]);
    }
    note(op);
    std::vector<float> got, want, row;
    if (together) {
      decode_batch(*b, ids, tokens, positions, &got, nullptr, slots);
      ++batched_runs;
      sizes.insert(n);
    } else {
      for (size_t r = 0; r < n && !HasFailure(); ++r) {
        decode_batch(*b, {ids[r]}, {tokens[r]}, {positions[r]}, &row, nullptr);
        ++batched_runs;
        sizes.insert(1);
        got.insert(got.end(), row.begin(), row.end());
      }
    }
    if (HasFailure()) return false;
    for (size_t r = 0; r < n; ++r) {
      decode_batch(*alone, {ids[r]}, {tokens[r]}, {positions[r]}, &want, nullptr);
      if (HasFailure()) return false;
      const std::string what = std::string(kind) + " row " + std::to_string(r) + " of " + std::to_string(n) + " (" +
                               sid(ids[r]) + " at position " + std::to_string(positions[r]) + ", token " +
                               std::to_string(tokens[r]) + ", " + slots_of(ids[r]) + ")";
      if (!same(want.data(), got.data() + r * kVocab, what)) return false;
      if (positions[r] == kMaxLen - 1) ++seen["rows at the last position"];
    }
    for (int id : ids) ++next[id];
    if (together) {
      if (n == kCapacity) ++seen["full batches"];
      for (const auto& pc : parent)
        if (std::find(ids.begin(), ids.end(), pc.first) != ids.end() &&
            std::find(ids.begin(), ids.end(), pc.second) != ids.end())
          ++seen["forks stepped with their origin"];
    }
    return true;
  };
  auto probe = [&]() {
    ++seen["probes"];
    std::vector<int> ids;
    for (const auto& e : next)
      if (e.second < kMaxLen) ids.push_back(e.first);
    return ids.empty() || step_rows(ids, /*together=*/false, "probe of every live session alone");
  };

  for (step = 0; step < steps; ++step) {
    std::vector<int> live, ready;  // ready: below max_seq_len
    int full = -1;
    for (const auto& e : next) {
      live.push_back(e.first);
      if (e.second < kMaxLen)
        ready.push_back(e.first);
      else if (full < 0)
        full = e.first;
    }
    auto pick = [&]() { return live[below(live.size())]; };
    const uint64_t op = below(100);
    bool ok = true;
    if (full >= 0) {  // at the end of its cache: it leaves or starts over
      ok = below(2) ? reset(full) : leave(full);
    } else if (live.empty() || (op < 10 && live.size() < kCapacity)) {
      ok = join();
    } else if (op < 16) {
      ok = leave(pick());
    } else if (op < 22 && live.size() < kCapacity) {
      ok = fork(pick());
    } else if (op < 27) {
      ok = reset(pick());
    } else if (op < 30) {
      ok = probe();
    } else {  // a batched step over a random non-empty subset, in random order
      const size_t n = 1 + below(ready.size());
      for (size_t i = 0; i < n; ++i) std::swap(ready[i], ready[i + below(ready.size() - i)]);
      ready.resize(n);
      ++seen["batched steps"];
      ok = step_rows(ready, /*together=*/true, "batch");
    }
    if (!ok || HasFailure()) FAIL() << "stopped at step " << step << (told ? "" : ": " + context());
  }
  if (!probe() || HasFailure()) FAIL() << "stopped at the last probe" << (told ? "" : ": " + context());
  const double seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
  std::string summary;
  for (const auto& e : seen) summary += " " + e.first + " " + std::to_string(e.second) + ";";
  std::printf("[ PackageBatch ] %s: %llu steps bit-exact in %.1f s (%llu batched-lane runs):%s\n", b->what,
              static_cast<unsigned long long>(steps), seconds, static_cast<unsigned long long>(batched_runs),
              summary.c_str());
  // The default schedules' length exercises every operation; a shorter one (a replay) may not.
  if (steps >= 1000) {
    for (const char* what : {"joins", "leaves", "forks", "resets", "probes", "batched steps", "full batches",
                             "forks stepped with their origin", "rows at the last position", "slots differing"})
      EXPECT_GT(seen[what], 0u) << "the schedule never had " << what << " (seed " << seed << ")";
  }
  if (graphs) {
    wharf_graph_stats gs = wharf_test::sized<wharf_graph_stats>();
    ASSERT_OK(wharf_model_get_graph_stats(b->batch, &gs));
    EXPECT_EQ(gs.capture_failures, 0u) << gs.last_eager_reason;
    EXPECT_EQ(gs.eager_runs, 0u) << gs.last_eager_reason;
    EXPECT_EQ(gs.replays, batched_runs) << "every batched-lane run replays a graph";
    std::set<size_t> buckets = {kCapacity};  // the default buckets 1, 2, 4, 8; the largest captured first
    for (size_t n : sizes) {
      size_t bucket = 1;
      while (bucket < n) bucket *= 2;
      buckets.insert(bucket);
    }
    EXPECT_EQ(gs.captures, buckets.size()) << "one capture per bucket, whatever the sessions";
    EXPECT_EQ(gs.repoints, 0u) << "the arena's address is fixed; sessions are an input";
  }
}

INSTANTIATE_TEST_SUITE_P(EagerAndGraphs, PackageBatchFuzz, ::testing::Bool(),
                         [](const ::testing::TestParamInfo<bool>& i) { return i.param ? "Graphs" : "Eager"; });

}  // namespace

// SPDX-License-Identifier: Apache-2.0
// CUDA graphs padded to declared buckets (graphs/bucket_plan.h) on the committed tiny Llama
// package (tests/data/packages/tiny-llama-f32), through the public C API.
//
// Two loads of the package run the same schedule side by side: `eager` (graphs off) and
// `graphs` (graphs on the method under test, with buckets). Every logit of a padded replay
// must equal the eager run's bit for bit, and so must the sessions' state afterwards (read
// with wharf_run_read: the padded rows rewrote the last position with the same values and
// nothing else), and the decode steps that follow. prefill (its T marked "pad": "repeat"):
// lengths 3, 5, 7, 11, 13 from position 0 and mid-conversation padded to buckets {4, 8, 16}
// (the largest captured first), 16 replayed as is, 17 and 20 (past the largest) eager with
// the reason in the stats; no default buckets (exact shapes); a copy of the package without
// the mark (an old export) refused, saying to re-export. decode_batch (session_capacity 8):
// N = 3, 5, 6 over scattered sessions padded to bucket 8, the whole arena (the other
// sessions' slots included) equal to the eager lane's after every step; the default buckets
// (1, 2, 4, 8) when none are declared; refusals of bad declarations naming the value.
//
// Skips without a GPU, and (decode_batch) while the package has no decode_batch.
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <map>
#include <string>
#include <vector>

#include <unistd.h>

#define WHARF_EXPERIMENTAL
#include "common/package_fixture.h"
#include "common/scoped_env.h"
#include "common/test_support.h"
#include "wharf/wharf.h"

namespace {

using wharf_test::kCapacity;
using wharf_test::kVocab;
using wharf_test::Lane;
using wharf_test::St;
using wharf_test::zero_view;

wharf_graph_stats graph_stats(wharf_model* m) {
  wharf_graph_stats gs = wharf_test::sized<wharf_graph_stats>();
  EXPECT_OK(wharf_model_get_graph_stats(m, &gs));
  return gs;
}

std::vector<wharf_graph_bucket_info> graph_buckets(wharf_model* m) {
  std::vector<wharf_graph_bucket_info> out(graph_stats(m).num_buckets);
  for (uint32_t i = 0; i < out.size(); ++i) {
    out[i] = wharf_test::sized<wharf_graph_bucket_info>();
    EXPECT_OK(wharf_model_get_graph_bucket(m, i, &out[i]));
  }
  return out;
}

class GraphBuckets : public wharf_test::PackageLanes {
 protected:
  static wharf_status* enable(wharf_model* m, const char* dim, std::vector<int64_t> sizes) {
    wharf_graph_options o;
    wharf_graph_options_init(&o);
    o.bucket_dim = dim;
    o.bucket_sizes = sizes.empty() ? nullptr : sizes.data();
    o.num_bucket_sizes = uint32_t(sizes.size());
    return wharf_model_enable_graphs(m, &o);
  }

  static void decode_batch(Lane& l, const std::vector<int>& ids, const std::vector<int64_t>& tokens,
                           const std::vector<int64_t>& positions, std::vector<float>* logits) {
    const size_t n = ids.size();
    std::vector<wharf_session*> ss;
    for (int id : ids) ss.push_back(l.s.at(id));
    wharf_run* run = nullptr;
    ASSERT_OK(wharf_run_begin_batch(wharf_model_container(l.batch), ss.data(), n, nullptr, &run));
    run_batch(l, run, n, tokens, positions, logits);
    ASSERT_OK(wharf_run_end(run));
  }

  // Every state of the sessions `ids` of `c`'s runs, read with wharf_run_read: one session's
  // buffers (a run of it) or, batched, the whole arena.
  static std::vector<uint8_t> state_bytes(wharf_container* c, const std::vector<wharf_session*>& ss, bool batched) {
    std::vector<uint8_t> all;
    wharf_run* run = nullptr;
    if (batched)
      EXPECT_OK(wharf_run_begin_batch(c, ss.data(), ss.size(), nullptr, &run));
    else
      EXPECT_OK(wharf_run_begin(c, ss[0], nullptr, &run));
    if (!run) return all;
    for (size_t i = 0; i < wharf_container_num_states(c); ++i) {
      wharf_state_info si = wharf_test::sized<wharf_state_info>();
      EXPECT_OK(wharf_container_get_state_info(c, i, &si));
      const uint64_t bytes = batched ? si.nbytes * kCapacity : si.nbytes;
      std::vector<uint8_t> b(bytes);
      EXPECT_OK(wharf_run_read(run, si.fqn, 0, b.data(), bytes));
      all.insert(all.end(), b.begin(), b.end());
    }
    EXPECT_OK(wharf_run_end(run));
    return all;
  }
};

// Largest absolute difference between two float vectors of one size (for the message when
// they are not bit-equal).
double max_abs_diff(const std::vector<float>& a, const std::vector<float>& b) {
  double d = 0;
  for (size_t i = 0; i < a.size() && i < b.size(); ++i) d = std::max(d, std::fabs(double(a[i]) - double(b[i])));
  return d;
}

// A prefill's tokens padded to buckets of T (the committed package's prefill marks T "pad":
// "repeat": the exporter builds each row's attention mask at its own cache_position, so a
// repeated last token at the last position computes what the real last row computes). Each
// prefill, from position 0 or mid-conversation, replays the graph of the smallest bucket >= T
// with the last token and position repeated, and must equal an unpadded eager prefill of the
// same tokens bit for bit: the last row's logits, the session's whole state afterwards (the
// real positions' keys and values; the padded rows rewrote the last position with the same
// values and nothing else) and the decode steps that follow. 16 runs as is, 17 (past the
// largest bucket) eagerly with the reason in the stats. Lengths and buckets are those the
// exporter's check found bit-equal in PyTorch (reference.json, aoti_prefill_pad: 3 -> 4,
// 5 and 7 -> 8, 13 and 11 -> 16; a GEMM of 1 or 9 rows padded to 2 or 32 differed in the
// last bits there).
TEST_F(GraphBuckets, PaddedPrefillsEqualUnpaddedEagerOnes) {
  OPEN_OR_SKIP(eager, "eager", 0);
  OPEN_OR_SKIP(graphs, "graphs", 0);
  ASSERT_OK(enable(graphs->prefill, "T", {16, 4, 8}));
  struct Case {
    int start, length;
  };
  std::vector<float> want, got;
  int id = 0;
  uint64_t expect_padded = 0, expect_replays = 0, expect_eager = 0;
  auto expect_run = [&](int n) {  // what the graph lane's prefill of n tokens does
    if (n > 16) {
      ++expect_eager;
      return;
    }
    ++expect_replays;
    if (n != 4 && n != 8 && n != 16) ++expect_padded;
  };
  for (const Case c : {Case{0, 3}, Case{0, 5}, Case{0, 7}, Case{0, 13}, Case{6, 5}, Case{6, 11}, Case{0, 16},
                       Case{20, 3}, Case{0, 17}}) {
    ++id;
    std::vector<int64_t> prefix, chunk, pos;
    for (int k = 0; k < c.start; ++k) prefix.push_back((id * 29 + k * 7 + 1) % kVocab);
    for (int k = 0; k < c.length; ++k) {
      chunk.push_back((c.length * 7 + k * 13 + 3 + id) % kVocab);
      pos.push_back(c.start + k);
    }
    const std::string what = "prefill of " + std::to_string(c.length) + " tokens at " + std::to_string(c.start);
    for (Lane* l : {eager, graphs}) {
      ASSERT_OK(wharf_model_package_create_session(l->pkg, nullptr, &l->s[id]));
      if (c.start) prefill(*l, id, prefix, l == eager ? &want : &got);
    }
    if (c.start) {
      EXPECT_EQ(std::memcmp(want.data(), got.data(), want.size() * sizeof(float)), 0)
          << what << ": the prefix's logits differ (max |diff| " << max_abs_diff(want, got) << ")";
      expect_run(c.start);
    }
    expect_run(c.length);
    prefill(*eager, id, chunk, &want, pos);
    prefill(*graphs, id, chunk, &got, pos);
    ASSERT_EQ(want.size(), got.size());
    EXPECT_EQ(std::memcmp(want.data(), got.data(), want.size() * sizeof(float)), 0)
        << what << ": logits differ (max |diff| " << max_abs_diff(want, got) << ")";
    const std::vector<uint8_t> se = state_bytes(wharf_model_container(eager->prefill), {eager->s.at(id)}, false);
    const std::vector<uint8_t> sg = state_bytes(wharf_model_container(graphs->prefill), {graphs->s.at(id)}, false);
    ASSERT_GT(se.size(), 0u);
    EXPECT_TRUE(se == sg) << what << ": the session's state differs from the unpadded eager prefill's";
    // The next decode steps (eager in both lanes) read the state the prefills wrote.
    int64_t token = 0;
    for (int k = 0; k < 2; ++k) {
      token = int64_t(std::max_element(want.begin(), want.end()) - want.begin());
      decode(*eager, id, token, c.start + c.length + k, &want);
      decode(*graphs, id, token, c.start + c.length + k, &got);
      EXPECT_EQ(std::memcmp(want.data(), got.data(), want.size() * sizeof(float)), 0)
          << what << ": decode step " << k << " differs (max |diff| " << max_abs_diff(want, got) << ")";
    }
  }
  const wharf_graph_stats gs = graph_stats(graphs->prefill);
  EXPECT_STREQ(gs.bucket_dim, "T");
  EXPECT_EQ(gs.num_bucket_sizes, 3u);
  EXPECT_EQ(gs.capture_failures, 0u) << gs.last_eager_reason;
  EXPECT_EQ(gs.replays, expect_replays);
  EXPECT_EQ(gs.padded_replays, expect_padded);
  // Past the largest bucket: the prefix of 20 and the prefill of 17 ran eagerly.
  EXPECT_EQ(expect_eager, 2u);
  EXPECT_EQ(gs.eager_runs, expect_eager) << gs.last_eager_reason;
  EXPECT_NE(std::string(gs.last_eager_reason).find("17"), std::string::npos) << gs.last_eager_reason;
  std::vector<int64_t> sizes;
  for (const wharf_graph_bucket_info& b : graph_buckets(graphs->prefill)) sizes.push_back(b.bucket_size);
  // The first prefill (3 tokens, bucket 4) captures the largest bucket first.
  EXPECT_EQ(sizes, (std::vector<int64_t>{16, 4, 8}));
}

// Without declared sizes a prefill gets no buckets (a long prefill is compute-bound: padding it
// to the next power of two could nearly double its work): a graph per exact length, each
// replay bit-exact with the eager prefill.
TEST_F(GraphBuckets, PrefillsDefaultToExactShapesEqualToEager) {
  OPEN_OR_SKIP(eager, "eager", 0);
  OPEN_OR_SKIP(graphs, "graphs", 0);
  ASSERT_OK(enable(graphs->prefill, nullptr, {}));
  std::vector<float> want, got;
  int id = 0;
  for (int t : {3, 5, 3, 7}) {
    ++id;
    std::vector<int64_t> tokens;
    for (int k = 0; k < t; ++k) tokens.push_back((t * 7 + k * 13 + 3 + id) % kVocab);
    for (Lane* l : {eager, graphs}) ASSERT_OK(wharf_model_package_create_session(l->pkg, nullptr, &l->s[id]));
    prefill(*eager, id, tokens, &want);
    prefill(*graphs, id, tokens, &got);
    const std::string what = "prefill of " + std::to_string(t) + " tokens";
    ASSERT_EQ(want.size(), got.size());
    EXPECT_EQ(std::memcmp(want.data(), got.data(), want.size() * sizeof(float)), 0) << what << ": logits differ";
    const std::vector<uint8_t> se = state_bytes(wharf_model_container(eager->prefill), {eager->s.at(id)}, false);
    const std::vector<uint8_t> sg = state_bytes(wharf_model_container(graphs->prefill), {graphs->s.at(id)}, false);
    ASSERT_GT(se.size(), 0u);
    EXPECT_TRUE(se == sg) << what << ": the session's state differs from the eager prefill's";
  }
  const wharf_graph_stats gs = graph_stats(graphs->prefill);
  EXPECT_EQ(gs.num_bucket_sizes, 0u) << "no default buckets for a prefill";
  EXPECT_EQ(gs.padded_replays, 0u);
  EXPECT_EQ(gs.captures, 3u) << "one graph per exact length (3, 5, 7)";
  EXPECT_EQ(gs.replays, 4u) << gs.last_eager_reason;
}

// A package exported before the prefill's masks followed cache_position has no "pad":
// "repeat" on T (padded, its last row's logits were 0.59 of the logit scale off on the H100):
// buckets on its T are refused, saying to re-export it; exact shapes still work. Made here
// from the committed package with the mark removed from its manifest (the methods are the
// same files: the loader decides from the manifest alone).
TEST_F(GraphBuckets, AnOldPackagesPrefillIsRefusedSayingReExport) {
  namespace fs = std::filesystem;
  const fs::path copy = fs::path(::testing::TempDir()) / ("wharf_old_prefill_" + std::to_string(::getpid()));
  struct Remove {  // the copy goes at the end whatever happens (the loaded .so files may be unlinked)
    fs::path p;
    ~Remove() {
      std::error_code e;
      fs::remove_all(p, e);
    }
  } remove{copy};
  std::error_code ec;
  fs::remove_all(copy, ec);
  fs::copy(dir_, copy, fs::copy_options::recursive, ec);
  ASSERT_FALSE(ec) << "copying " << dir_ << ": " << ec.message();
  std::string manifest = wharf_test::read_text(dir_ + "/manifest.json");
  const std::string marked = "\"max\": 64,\n          \"pad\": \"repeat\"";
  const size_t at = manifest.find(marked);
  ASSERT_NE(at, std::string::npos) << "the committed prefill's T is marked \"pad\": \"repeat\"";
  manifest.replace(at, marked.size(), "\"max\": 64");
  {
    std::ofstream f(copy / "manifest.json", std::ios::binary | std::ios::trunc);
    f << manifest;
  }
  dir_ = copy.string();
  OPEN_OR_SKIP(old, "old package", 0);
  EXPECT_FAILS(enable(old->prefill, "T", {8, 16}), WHARF_UNSUPPORTED, "dims.T is not marked \"pad\": \"repeat\"");
  EXPECT_FAILS(enable(old->prefill, "T", {8}), WHARF_UNSUPPORTED, "re-export the package with the current exporter");
  ASSERT_OK(enable(old->prefill, nullptr, {}));
  EXPECT_EQ(graph_stats(old->prefill).num_bucket_sizes, 0u);
  std::vector<float> logits;
  ASSERT_OK(wharf_model_package_create_session(old->pkg, nullptr, &old->s[1]));
  prefill(*old, 1, {5, 6, 7}, &logits);
  EXPECT_EQ(graph_stats(old->prefill).replays, 1u);
}

TEST_F(GraphBuckets, PaddedBatchesEqualEagerOnesAndLeaveOtherSlotsUntouched) {
  if (!has_batch_) GTEST_SKIP() << dir_ << " has no decode_batch method yet";
  OPEN_OR_SKIP(eager, "eager", kCapacity);
  OPEN_OR_SKIP(graphs, "graphs", kCapacity);
  ASSERT_OK(enable(graphs->batch, "N", {8}));
  std::vector<float> want, got;
  std::map<int, int64_t> pos;
  for (int id = 0; id < int(kCapacity); ++id) {
    std::vector<int64_t> tokens;
    for (int k = 0; k < 3 + id; ++k) tokens.push_back((id * 11 + k * 5 + 2) % kVocab);
    for (Lane* l : {eager, graphs}) {
      ASSERT_OK(wharf_model_package_create_session(l->pkg, nullptr, &l->s[id]));
      prefill(*l, id, tokens, &got);
    }
    pos[id] = int64_t(tokens.size());
  }
  auto arena = [&](Lane& l) {
    std::vector<wharf_session*> all;
    for (auto& kv : l.s) all.push_back(kv.second);
    return state_bytes(wharf_model_container(l.batch), all, true);
  };
  ASSERT_TRUE(arena(*eager) == arena(*graphs)) << "the lanes start alike";
  // Each session's slot in the graph lane's arena (a batched run's slot indices, in id order).
  std::vector<int64_t> slot(kCapacity, -1);
  {
    std::vector<wharf_session*> all;
    for (int id = 0; id < int(kCapacity); ++id) all.push_back(graphs->s.at(id));
    wharf_run* run = nullptr;
    ASSERT_OK(wharf_run_begin_batch(wharf_model_container(graphs->batch), all.data(), all.size(), nullptr, &run));
    wharf_tensor_view v = zero_view();
    ASSERT_OK(wharf_run_get_slot_indices(run, &v));
    ASSERT_OK(wharf_run_copy(run, slot.data(), v.data, slot.size() * sizeof(int64_t)));
    ASSERT_OK(wharf_run_end(run));
  }
  int step = 0;
  for (const std::vector<int>& ids : std::vector<std::vector<int>>{
           {6, 4, 2}, {0, 7, 3, 5, 1}, {1, 2, 3, 4, 5, 6}, {5, 0, 3}, {7, 6, 5, 4, 3}, {2, 4, 6, 0, 1, 3}}) {
    std::vector<int64_t> tokens, positions;
    for (int id : ids) {
      tokens.push_back((id * 37 + step * 11 + 5) % kVocab);
      positions.push_back(pos.at(id));
    }
    const std::vector<uint8_t> before = arena(*graphs);
    decode_batch(*eager, ids, tokens, positions, &want);
    decode_batch(*graphs, ids, tokens, positions, &got);
    const std::string what = "step " + std::to_string(step) + " over " + std::to_string(ids.size()) + " sessions";
    ASSERT_EQ(want.size(), got.size()) << what;
    EXPECT_EQ(std::memcmp(want.data(), got.data(), want.size() * sizeof(float)), 0) << what << ": logits differ";
    const std::vector<uint8_t> after_e = arena(*eager), after_g = arena(*graphs);
    EXPECT_TRUE(after_e == after_g) << what << ": the arenas differ";
    // The rows not in the batch are untouched (the padded rows repeat the last session's).
    ASSERT_EQ(before.size(), after_g.size());
    size_t changed_outside = 0;
    {
      wharf_container* c = wharf_model_container(graphs->batch);
      size_t off = 0;
      for (size_t i = 0; i < wharf_container_num_states(c); ++i) {
        wharf_state_info si = wharf_test::sized<wharf_state_info>();
        ASSERT_OK(wharf_container_get_state_info(c, i, &si));
        for (int id = 0; id < int(kCapacity); ++id) {
          bool in = false;
          for (int x : ids) in = in || x == id;
          const size_t at = off + size_t(slot[size_t(id)]) * si.nbytes;
          if (!in && std::memcmp(before.data() + at, after_g.data() + at, si.nbytes) != 0) ++changed_outside;
        }
        off += si.nbytes * kCapacity;
      }
    }
    EXPECT_EQ(changed_outside, 0u) << what << ": a slot outside the batch was written";
    for (int id : ids) ++pos[id];
    ++step;
  }
  const wharf_graph_stats gs = graph_stats(graphs->batch);
  EXPECT_EQ(gs.capture_failures, 0u) << gs.last_eager_reason;
  EXPECT_EQ(gs.eager_runs, 0u) << gs.last_eager_reason;
  EXPECT_EQ(gs.captures, 1u) << "one bucket, 8";
  EXPECT_EQ(gs.replays, 6u);
  EXPECT_EQ(gs.padded_replays, 6u);
  EXPECT_EQ(gs.repoints, 0u) << "sessions are an input";
}

TEST_F(GraphBuckets, BatchesUseTheDefaultBucketsWhenNoneAreDeclared) {
  if (!has_batch_) GTEST_SKIP() << dir_ << " has no decode_batch method yet";
  OPEN_OR_SKIP(eager, "eager", kCapacity);
  OPEN_OR_SKIP(graphs, "graphs", kCapacity);
  ASSERT_OK(wharf_model_enable_graphs(graphs->batch, nullptr));
  std::vector<float> want, got;
  for (int id = 0; id < 6; ++id)
    for (Lane* l : {eager, graphs}) {
      ASSERT_OK(wharf_model_package_create_session(l->pkg, nullptr, &l->s[id]));
      prefill(*l, id, {1, 2, 3, int64_t(id)}, &got);
    }
  int64_t p = 4;
  for (const std::vector<int>& ids : std::vector<std::vector<int>>{{0, 1, 2}, {3}, {0, 1, 2, 3, 4}, {5, 4}}) {
    std::vector<int64_t> tokens(ids.size(), 9), positions(ids.size(), p);
    decode_batch(*eager, ids, tokens, positions, &want);
    decode_batch(*graphs, ids, tokens, positions, &got);
    EXPECT_EQ(std::memcmp(want.data(), got.data(), want.size() * sizeof(float)), 0) << ids.size() << " sessions";
    ++p;
    // Every session steps once per loop so positions stay equal across them.
    for (int id = 0; id < 6; ++id) {
      bool in = false;
      for (int x : ids) in = in || x == id;
      if (in) continue;
      decode_batch(*eager, {id}, {9}, {p - 1}, &want);
      decode_batch(*graphs, {id}, {9}, {p - 1}, &got);
      EXPECT_EQ(std::memcmp(want.data(), got.data(), want.size() * sizeof(float)), 0) << "session " << id;
    }
  }
  const wharf_graph_stats gs = graph_stats(graphs->batch);
  EXPECT_STREQ(gs.bucket_dim, "N");
  EXPECT_EQ(gs.num_bucket_sizes, 4u) << "1, 2, 4, 8";
  EXPECT_EQ(gs.eager_runs, 0u) << gs.last_eager_reason;
  std::vector<int64_t> sizes;
  uint64_t pool = 0;
  for (const wharf_graph_bucket_info& b : graph_buckets(graphs->batch)) {
    sizes.push_back(b.bucket_size);
    pool += b.pool_bytes;
  }
  // N = 3, 1, 5, 2 (and 1s): buckets 4, 1, 8, 2, the largest (8) first.
  EXPECT_EQ(sizes, (std::vector<int64_t>{8, 4, 1, 2}));
  std::printf("[ GraphBuckets ] decode_batch default buckets 8, 4, 1, 2: pool %llu bytes in all (stats: %llu)\n",
              (unsigned long long)pool, (unsigned long long)gs.pool_bytes);
}

TEST_F(GraphBuckets, BadDeclarationsAreRefusedNamingTheValue) {
  if (!has_batch_) GTEST_SKIP() << dir_ << " has no decode_batch method yet";
  OPEN_OR_SKIP(l, "package", kCapacity);
  EXPECT_FAILS(enable(l->batch, "T", {8}), WHARF_INVALID_ARGUMENT, "'T'");
  EXPECT_FAILS(enable(l->batch, "N", {0}), WHARF_INVALID_ARGUMENT, "size 0");
  EXPECT_FAILS(enable(l->batch, "N", {8, 8}), WHARF_INVALID_ARGUMENT, "given twice");
  EXPECT_FAILS(enable(l->batch, "N", {9}), WHARF_INVALID_ARGUMENT, "past the dimension's max 8");
  EXPECT_FAILS(enable(l->decode, "T", {8}), WHARF_INVALID_ARGUMENT, "declares none");
  // A prefill's T is padded to declared sizes (PaddedPrefillsEqualUnpaddedEagerOnes), within its max.
  EXPECT_FAILS(enable(l->prefill, "T", {8, 128}), WHARF_INVALID_ARGUMENT, "past the dimension's max 64");
  EXPECT_FAILS(enable(l->prefill, "N", {8}), WHARF_INVALID_ARGUMENT, "declares 'T'");
  wharf_graph_options o;
  wharf_graph_options_init(&o);
  o.num_bucket_sizes = 2;
  EXPECT_FAILS(wharf_model_enable_graphs(l->batch, &o), WHARF_INVALID_ARGUMENT, "bucket_sizes is NULL");
  const int64_t eight = 8;
  o.bucket_sizes = &eight;
  o.num_bucket_sizes = 1;
  o.exact_shapes = 1;
  EXPECT_FAILS(wharf_model_enable_graphs(l->batch, &o), WHARF_INVALID_ARGUMENT, "exact shapes");
  {  // WHARF_GRAPHS_LEGACY_REPLAY is 0 or 1 (any other value used to mean 1)
    wharf_test::ScopedEnv env("WHARF_GRAPHS_LEGACY_REPLAY", "yes");
    EXPECT_FAILS(enable(l->batch, "N", {8}), WHARF_INVALID_ARGUMENT, "WHARF_GRAPHS_LEGACY_REPLAY='yes'");
  }
  // A refused declaration enables nothing: a good one goes through after it.
  ASSERT_OK(enable(l->batch, "N", {8}));
  const wharf_graph_stats gs = graph_stats(l->batch);
  EXPECT_EQ(gs.num_bucket_sizes, 1u);
  // The per-session decode has no dimension: exact shapes, no default.
  ASSERT_OK(wharf_model_enable_graphs(l->decode, nullptr));
  EXPECT_STREQ(graph_stats(l->decode).bucket_dim, "");
}

}  // namespace

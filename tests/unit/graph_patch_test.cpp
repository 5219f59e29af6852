// SPDX-License-Identifier: Apache-2.0
// PatchPlan (src/graphs/patch_plan.h): finding the parameters of captured graph nodes that
// hold bound addresses, and rewriting only what a new binding changes, over fake nodes.
#include <gtest/gtest.h>

#include <cstdint>
#include <cstring>
#include <map>
#include <vector>

#include "graphs/patch_plan.h"

namespace wharf {
namespace {

// A node whose parameters are the given values, each `size` bytes (8 for pointers).
NodeImage node(std::vector<std::pair<uint64_t, uint32_t>> params) {
  NodeImage n;
  for (auto [value, size] : params) {
    NodeImage::Param p;
    p.offset = uint32_t(n.bytes.size());
    p.size = size;
    n.bytes.resize(n.bytes.size() + size, 0);
    std::memcpy(n.bytes.data() + p.offset, &value, size < 8 ? size : 8);
    n.params.push_back(p);
  }
  return n;
}

uint64_t word(const NodeImage& n, size_t param) {
  uint64_t v = 0;
  std::memcpy(&v, n.bytes.data() + n.params[param].offset, 8);
  return v;
}

// Applies the plan's images to a fake executable graph (node -> image).
struct FakeExec {
  std::map<uint32_t, NodeImage> nodes;
  int calls = 0;
  Status apply(uint32_t n, const NodeImage& img) {
    ++calls;
    nodes[n] = img;
    return Status::Ok();
  }
};

const uint64_t A = 0x7f0000001000, B = 0x7f0000100000, C = 0x7f0000200000;

TEST(GraphPatch, FindsPointersInsideRangesOnly) {
  std::vector<NodeImage> nodes;
  nodes.push_back(node({{A, 8}, {64, 4}, {B + 256, 8}, {C + 4096, 8}}));  // C + 4096: one past C's end
  nodes.push_back(node({{7, 8}, {12345678, 8}}));                         // no pointers at all
  PatchPlan plan;
  ASSERT_TRUE(PatchPlan::build(std::move(nodes), {{A, 4096, "a"}, {B, 4096, "b"}, {C, 4096, "c"}}, &plan).ok());
  ASSERT_EQ(plan.patches().size(), 2u);
  EXPECT_EQ(plan.patches()[0].range, 0u);
  EXPECT_EQ(plan.patches()[0].delta, 0u);
  EXPECT_EQ(plan.patches()[1].range, 1u);
  EXPECT_EQ(plan.patches()[1].delta, 256u);
  EXPECT_EQ(plan.num_patched_nodes(), 1u);
}

TEST(GraphPatch, ScansWordsOfStructParameters) {
  // A 24-byte struct parameter holding a pointer in its second word (cuBLASLt-style params).
  NodeImage n;
  n.bytes.resize(24, 0);
  const uint64_t p = B + 8;
  std::memcpy(n.bytes.data() + 8, &p, 8);
  n.params.push_back({0, 24});
  PatchPlan plan;
  ASSERT_TRUE(PatchPlan::build({n}, {{B, 64, "b"}}, &plan).ok());
  ASSERT_EQ(plan.patches().size(), 1u);
  EXPECT_EQ(plan.patches()[0].at, 8u);
  EXPECT_EQ(plan.patches()[0].delta, 8u);
}

TEST(GraphPatch, RepointRewritesOnlyChangedRanges) {
  std::vector<NodeImage> nodes;
  nodes.push_back(node({{A + 16, 8}, {B, 8}}));
  nodes.push_back(node({{B + 32, 8}}));
  nodes.push_back(node({{C, 8}}));
  PatchPlan plan;
  ASSERT_TRUE(PatchPlan::build(std::move(nodes), {{A, 64, "a"}, {B, 64, "b"}, {C, 64, "c"}}, &plan).ok());
  FakeExec exec;
  auto apply = [&](uint32_t n, const NodeImage& img) { return exec.apply(n, img); };
  size_t applied = 99;
  // The capture's own binding: nothing to do.
  ASSERT_TRUE(plan.repoint({A, B, C}, apply, &applied).ok());
  EXPECT_EQ(applied, 0u);
  EXPECT_EQ(exec.calls, 0);
  // B moves: nodes 0 and 1 (each once), not node 2.
  const uint64_t B2 = 0x7f0000900000;
  ASSERT_TRUE(plan.repoint({A, B2, C}, apply, &applied).ok());
  EXPECT_EQ(applied, 2u);
  EXPECT_EQ(exec.calls, 2);
  EXPECT_EQ(word(exec.nodes[0], 0), A + 16);
  EXPECT_EQ(word(exec.nodes[0], 1), B2);
  EXPECT_EQ(word(exec.nodes[1], 0), B2 + 32);
  EXPECT_EQ(exec.nodes.count(2), 0u);
  // The same binding again: nothing.
  ASSERT_TRUE(plan.repoint({A, B2, C}, apply, &applied).ok());
  EXPECT_EQ(applied, 0u);
  // Back to the capture's binding (a rollback): the captured values again.
  ASSERT_TRUE(plan.repoint({A, B, C}, apply, &applied).ok());
  EXPECT_EQ(applied, 2u);
  EXPECT_EQ(word(exec.nodes[1], 0), B + 32);
}

TEST(GraphPatch, FailedApplyForcesAFullRewriteNextTime) {
  std::vector<NodeImage> nodes;
  nodes.push_back(node({{A, 8}}));
  nodes.push_back(node({{B, 8}}));
  PatchPlan plan;
  ASSERT_TRUE(PatchPlan::build(std::move(nodes), {{A, 64, "a"}, {B, 64, "b"}}, &plan).ok());
  int calls = 0;
  Status st = plan.repoint({A + 4096, B + 4096}, [&](uint32_t, const NodeImage&) {
    ++calls;
    return DeviceError("injected");
  });
  EXPECT_EQ(st.code(), Code::kDeviceError);
  EXPECT_EQ(calls, 1);
  // Same bases: the graph may hold anything, so every patched node is applied again.
  FakeExec exec;
  size_t applied = 0;
  ASSERT_TRUE(plan.repoint(
                      {A + 4096, B + 4096}, [&](uint32_t n, const NodeImage& i) { return exec.apply(n, i); }, &applied)
                  .ok());
  EXPECT_EQ(applied, 2u);
  EXPECT_EQ(word(exec.nodes[0], 0), A + 4096);
  EXPECT_EQ(word(exec.nodes[1], 0), B + 4096);
}

TEST(GraphPatch, OverlappingRangesAreRefused) {
  PatchPlan plan;
  Status st = PatchPlan::build({node({{A, 8}})}, {{A, 128, "constant 'x'"}, {A + 64, 128, "state 'y'"}}, &plan);
  EXPECT_EQ(st.code(), Code::kInvalidArgument);
  EXPECT_NE(st.message().find("constant 'x' and state 'y' share memory"), std::string::npos) << st.message();
  // Adjacent ranges are fine, and an empty range never matches.
  EXPECT_TRUE(
      PatchPlan::build({node({{A + 128, 8}})}, {{A, 128, "x"}, {A + 128, 128, "y"}, {A, 0, "empty"}}, &plan).ok());
  ASSERT_EQ(plan.patches().size(), 1u);
  EXPECT_EQ(plan.patches()[0].range, 1u);
}

TEST(GraphPatch, WrongNumberOfBasesIsRefused) {
  PatchPlan plan;
  ASSERT_TRUE(PatchPlan::build({node({{A, 8}})}, {{A, 8, "a"}}, &plan).ok());
  EXPECT_EQ(plan.repoint({A, B}, [](uint32_t, const NodeImage&) { return Status::Ok(); }).code(),
            Code::kInvalidArgument);
}

// cost() counts the patches repoint() would rewrite: none for the current bases, those of
// the moved ranges otherwise, every one once the graph's values are unknown.
TEST(GraphPatch, CostCountsThePatchesARepointWouldRewrite) {
  std::vector<NodeImage> nodes;
  nodes.push_back(node({{A, 8}, {B, 8}}));
  nodes.push_back(node({{B + 8, 8}}));
  nodes.push_back(node({{C, 8}}));
  PatchPlan plan;
  ASSERT_TRUE(PatchPlan::build(std::move(nodes), {{A, 64, "a"}, {B, 64, "b"}, {C, 64, "c"}}, &plan).ok());
  EXPECT_EQ(plan.cost({A, B, C}), 0u);
  EXPECT_EQ(plan.cost({A, B + 4096, C}), 2u);
  EXPECT_EQ(plan.cost({A + 4096, B + 4096, C + 4096}), 4u);
  EXPECT_EQ(plan.cost({A, B}), SIZE_MAX);
  (void)plan.repoint({A, B + 4096, C}, [](uint32_t, const NodeImage&) { return DeviceError("injected"); });
  EXPECT_EQ(plan.cost({A, B + 4096, C}), 4u) << "after a failed apply every patch is rewritten";
}

// Two executable graphs of one captured graph (ModelGraphs' current one and its spare): a
// replay takes the one pointing at its bases (no node set), else the cheapest to re-point,
// never one a prepare is setting; a prepare takes the least recently used, never the one
// serving now.
TEST(GraphPatch, ChoosingTheExecutableGraphForABinding) {
  std::vector<NodeImage> nodes;
  nodes.push_back(node({{A, 8}}));  // a constant
  nodes.push_back(node({{B, 8}}));  // a folded block
  nodes.push_back(node({{B + 8, 8}}));
  nodes.push_back(node({{C, 8}}));  // a session's state
  const std::vector<GraphRange> ranges = {{A, 64, "a"}, {B, 64, "b"}, {C, 64, "c"}};
  PatchPlan serving, spare;
  ASSERT_TRUE(PatchPlan::build(nodes, ranges, &serving).ok());
  ASSERT_TRUE(PatchPlan::build(nodes, ranges, &spare).ok());
  auto ok = [](uint32_t, const NodeImage&) { return Status::Ok(); };
  const uint64_t A2 = A + 0x100000, B2 = B + 0x100000, C2 = C + 0x100000;
  // Generation 1 (A, B) with session C; a prepare points the spare at generation 2 (A2, B2).
  ASSERT_TRUE(spare.repoint({A2, B2, C}, ok).ok());
  std::vector<ExecCandidate> execs = {{&serving, false, 7}, {&spare, false, 0}};
  size_t cost = 99;
  // A run begun before the swap: generation 1, the serving graph, nothing to set.
  EXPECT_EQ(choose_exec(execs, {A, B, C}, &cost), 0);
  EXPECT_EQ(cost, 0u);
  // A run after the swap: the spare, nothing to set.
  EXPECT_EQ(choose_exec(execs, {A2, B2, C}, &cost), 1);
  EXPECT_EQ(cost, 0u);
  // After the swap in another session: the spare needs only the state's node.
  EXPECT_EQ(choose_exec(execs, {A2, B2, C2}, &cost), 1);
  EXPECT_EQ(cost, 1u);
  // Generation 1 in another session: the serving graph needs the state's node only.
  EXPECT_EQ(choose_exec(execs, {A, B, C2}, &cost), 0);
  EXPECT_EQ(cost, 1u);
  // A third generation: both need every constant and folded node; equals go to the most
  // recently used (the spare stays pointed at generation 2).
  EXPECT_EQ(choose_exec(execs, {A + 64, B + 64, C}, &cost), 0);
  EXPECT_EQ(cost, 3u);
  // Busy (a prepare is setting it): never chosen, even when it would cost nothing.
  execs[1].busy = true;
  EXPECT_EQ(choose_exec(execs, {A2, B2, C}, &cost), 0);
  EXPECT_EQ(cost, 3u);
  // Not instantiated: never chosen; nothing usable: -1.
  execs[1] = {nullptr, false, 0};
  EXPECT_EQ(choose_exec(execs, {A2, B2, C}, &cost), 0);
  execs[0].busy = true;
  EXPECT_EQ(choose_exec(execs, {A2, B2, C}, &cost), -1);

  // The spare a prepare points: the one not instantiated yet beside the only one serving.
  EXPECT_EQ(choose_spare({{&serving, false, 3}, {nullptr, false, 0}}), 1);
  // The least recently used of two, whichever index it has.
  EXPECT_EQ(choose_spare({{&serving, false, 3}, {&spare, false, 9}}), 0);
  EXPECT_EQ(choose_spare({{&serving, false, 9}, {&spare, false, 3}}), 1);
  // Never the one serving now, nor a busy one.
  EXPECT_EQ(choose_spare({{&serving, false, 9}, {&spare, true, 3}}), -1);
  EXPECT_EQ(choose_spare({{&serving, false, 9}}), -1);
  // Neither replayed yet (just captured and prepared): the first is the one serving.
  EXPECT_EQ(choose_spare({{&serving, false, 0}, {&spare, false, 0}}), 1);
}

}  // namespace
}  // namespace wharf

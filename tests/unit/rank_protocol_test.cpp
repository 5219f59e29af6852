// SPDX-License-Identifier: Apache-2.0
// The bytes of a group update spanning processes (src/replicas/rank_protocol.h), pinned to
// tests/data/rank_plan.golden.hex. tools/sender/test_wharf_sender.py checks the Python
// sender's encoding against the same file, so the two sides cannot drift apart unnoticed.
#include <gtest/gtest.h>

#include <cstddef>
#include <fstream>
#include <sstream>
#include <string>
#include <vector>

#include "common/test_paths.h"
#include "replicas/rank_protocol.h"

namespace {

using namespace wharf;

// The golden plan: a device weight, a bf16 vector with an odd byte count, and a scalar.
std::vector<RankPlanEntry> golden_entries() {
  return {{"embed", DType::kF32, {64, 32}, 64 * 32 * 4},
          {"layers.0.norm", DType::kBF16, {3}, 6},
          {"scale", DType::kU8, {}, 1}};
}

std::vector<unsigned char> read_hex(const std::string& path) {
  std::ifstream in(path);
  EXPECT_TRUE(in.good()) << path;
  std::vector<unsigned char> out;
  std::string tok;
  while (in >> tok) {
    if (tok[0] == '#') {
      std::string rest;
      std::getline(in, rest);
      continue;
    }
    out.push_back(static_cast<unsigned char>(std::stoul(tok, nullptr, 16)));
  }
  return out;
}

TEST(RankProtocol, ThePlanEncodesAsTheGoldenBytes) {
  const std::vector<unsigned char> golden = read_hex(wharf_test::test_data("rank_plan.golden.hex"));
  const std::vector<unsigned char> got = encode_rank_plan(golden_entries());
  EXPECT_EQ(got, golden);
  EXPECT_EQ(got.size() % 8, 0u);
  std::vector<RankPlanEntry> back;
  ASSERT_TRUE(decode_rank_plan(golden.data(), golden.size(), 3, &back).ok());
  ASSERT_EQ(back.size(), 3u);
  for (size_t k = 0; k < 3; ++k) {
    EXPECT_EQ(back[k].fqn, golden_entries()[k].fqn);
    EXPECT_EQ(back[k].dtype, golden_entries()[k].dtype);
    EXPECT_EQ(back[k].shape, golden_entries()[k].shape);
    EXPECT_EQ(back[k].nbytes, golden_entries()[k].nbytes);
  }
}

TEST(RankProtocol, AMalformedPlanIsDataCorruptNotACrash) {
  const std::vector<unsigned char> plan = encode_rank_plan(golden_entries());
  std::vector<RankPlanEntry> out;
  for (size_t cut = 0; cut < plan.size(); ++cut) {
    Status st = decode_rank_plan(plan.data(), cut, 3, &out);
    EXPECT_EQ(st.code(), Code::kDataCorrupt) << "cut at " << cut;
  }
  EXPECT_EQ(decode_rank_plan(plan.data(), plan.size(), 2, &out).code(), Code::kDataCorrupt) << "bytes left over";
  std::vector<unsigned char> huge = plan;
  huge[12] = 200;  // entry 0's ndim
  EXPECT_EQ(decode_rank_plan(huge.data(), huge.size(), 3, &out).code(), Code::kDataCorrupt);
}

TEST(RankProtocol, HeaderLayoutAndVoteAreTheDocumentedOnes) {
  EXPECT_EQ(sizeof(RankHeader), 1024u);
  EXPECT_EQ(offsetof(RankHeader, code), 0u);
  EXPECT_EQ(offsetof(RankHeader, count), 4u);
  EXPECT_EQ(offsetof(RankHeader, total_bytes), 8u);
  EXPECT_EQ(offsetof(RankHeader, plan_bytes), 16u);
  EXPECT_EQ(offsetof(RankHeader, text), 24u);
  EXPECT_EQ(kRankChunkBytes, 4u << 20);
  EXPECT_EQ(encode_vote(2, 4, Status::Ok()), uint64_t(4) << 32);
  EXPECT_EQ(encode_vote(1, 4, DataCorrupt("x")), (uint64_t(1) << 32) | 11u);
  // The minimum names the lowest failing rank.
  EXPECT_LT(encode_vote(3, 4, Busy("x")), encode_vote(0, 4, Status::Ok()));
}

}  // namespace

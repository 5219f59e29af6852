// SPDX-License-Identifier: Apache-2.0
// The CUDA graph functions of wharf.h (experimental tier) on what a host can check: argument
// refusals and the versioned structs. Capture and replay are tested on the GPU
// (tests/gpu/model_graph_gpu_test.cpp).
#include <gtest/gtest.h>

#include <cstring>
#include <string>

#define WHARF_EXPERIMENTAL
#include "common/test_support.h"
#include "wharf/wharf.h"

namespace {

using wharf_test::St;

TEST(GraphApi, NullModelsAreRefused) {
  wharf_graph_options o;
  wharf_graph_options_init(&o);
  EXPECT_EQ(o.struct_size, sizeof(wharf_graph_options));
  EXPECT_EQ(o.max_buckets, 0u);
  EXPECT_EQ(o.max_pool_bytes, 0u);
  EXPECT_EQ(o.bucket_dim, nullptr);
  EXPECT_EQ(o.bucket_sizes, nullptr);
  EXPECT_EQ(o.num_bucket_sizes, 0u);
  EXPECT_EQ(o.exact_shapes, 0u);
  St enable(wharf_model_enable_graphs(nullptr, &o));
  EXPECT_EQ(enable.code(), WHARF_INVALID_ARGUMENT);
  EXPECT_NE(enable.msg().find("wharf_model_enable_graphs"), std::string::npos) << enable.msg();
  wharf_graph_stats s;
  std::memset(&s, 0, sizeof s);
  s.struct_size = sizeof s;
  St stats(wharf_model_get_graph_stats(nullptr, &s));
  EXPECT_EQ(stats.code(), WHARF_INVALID_ARGUMENT);
  wharf_graph_bucket_info b;
  std::memset(&b, 0, sizeof b);
  b.struct_size = sizeof b;
  St bucket(wharf_model_get_graph_bucket(nullptr, 0, &b));
  EXPECT_EQ(bucket.code(), WHARF_INVALID_ARGUMENT);
}

TEST(GraphApi, StructsFollowTheSizeRules) {
  // An older caller's smaller options struct is filled up to its size only.
  struct Older {
    uint32_t struct_size;
    uint32_t max_buckets;
  } older;
  std::memset(&older, 0xab, sizeof older);
  wharf_graph_options_init_sized(reinterpret_cast<wharf_graph_options*>(&older), sizeof older);
  EXPECT_EQ(older.struct_size, sizeof older);
  EXPECT_EQ(older.max_buckets, 0u);
  // The reason buffer has a fixed size (ABI); the fields appended for buckets come after it
  // and after the options' and bucket info's earlier fields.
  EXPECT_EQ(offsetof(wharf_graph_stats, last_eager_reason) + 256, offsetof(wharf_graph_stats, padded_replays));
  EXPECT_GT(offsetof(wharf_graph_stats, bucket_dim), offsetof(wharf_graph_stats, padded_replays));
  EXPECT_GT(offsetof(wharf_graph_options, bucket_dim), offsetof(wharf_graph_options, max_concurrent_runs));
  EXPECT_GT(offsetof(wharf_graph_options, exact_shapes), offsetof(wharf_graph_options, num_bucket_sizes));
  EXPECT_EQ(offsetof(wharf_graph_bucket_info, shapes) + 128, offsetof(wharf_graph_bucket_info, bucket_size));
  EXPECT_EQ(offsetof(wharf_graph_bucket_info, bucket_size) + 8, offsetof(wharf_graph_bucket_info, bind_fold_ms));
  EXPECT_EQ(offsetof(wharf_graph_bucket_info, instantiate_ms) + 8, sizeof(wharf_graph_bucket_info));
  EXPECT_EQ(offsetof(wharf_graph_options, struct_size), 0u);
  EXPECT_EQ(offsetof(wharf_graph_stats, struct_size), 0u);
  // The replay phases' host times are appended after the bucket fields (a caller built
  // before them states the smaller size, 440 bytes on LP64, and gets that much).
  EXPECT_GT(offsetof(wharf_graph_stats, select_ns), offsetof(wharf_graph_stats, num_bucket_sizes));
  if (sizeof(void*) == 8) {
    EXPECT_EQ(offsetof(wharf_graph_stats, select_ns), 440u);
  }
  // The preparation counters are appended after them (a caller built before states 488 bytes).
  if (sizeof(void*) == 8) {
    EXPECT_EQ(offsetof(wharf_graph_stats, release_ns), 480u);
    EXPECT_EQ(offsetof(wharf_graph_stats, replay_folds), 488u);
  }
  EXPECT_EQ(offsetof(wharf_graph_stats, prepare_ns) + 8, sizeof(wharf_graph_stats));
}

}  // namespace

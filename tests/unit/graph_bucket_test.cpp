// SPDX-License-Identifier: Apache-2.0
// Graph buckets on the host (graphs/bucket_plan.h, graphs/gather.h): the default sizes, a
// declaration resolved against a method's dimensions, the bucket a size picks, the padding
// plan of each input (the gather kernel's index math, run here by its host reference) and the
// output views of a padded run. The GPU side: tests/gpu/graph_bucket_gpu_test.cpp.
#include <gtest/gtest.h>

#include <cstdint>
#include <vector>

#include "graphs/bucket_plan.h"
#include "graphs/gather.h"

namespace wharf {
namespace {

TensorMeta meta(DType d, std::vector<int64_t> shape) {
  TensorMeta m;
  m.dtype = d;
  m.shape = std::move(shape);
  return m;
}

// prefill: input_ids [1, T], cache_position [T], logits [1, 1, V] (no T). rows_independent:
// as the loader marks a package's prefill T that its manifest marks "pad": "repeat" (the
// exporter's, whose rows' masks are at their own cache_position); padded only to declared
// sizes, never by default.
SymbolicDim prefill_t(int64_t max = 64, bool rows_independent = true) {
  SymbolicDim d;
  d.name = "T";
  d.min = 1;
  d.max = max;
  d.inputs = {1, 0};
  d.outputs = {-1};
  d.rows_independent = rows_independent;
  return d;
}

// decode_batch: input_ids [N, 1], cache_position [N], slots [N], logits [N, 1, V].
SymbolicDim batch_n(int64_t max = 8) {
  SymbolicDim d;
  d.name = "N";
  d.min = 1;
  d.max = max;
  d.inputs = {0, 0, 0};
  d.outputs = {0};
  d.rows_independent = true;
  d.padded_by_default = true;
  return d;
}

// Only a dimension whose rows are independent is padded. A T not marked so (an old package's
// prefill: padding it changed its last row's logits on the H100) is refused when named, with
// the loader's reason when it gave one, and never a default; a marked T is padded to the sizes
// declared for it, and is not a default either (only a session dimension is).
TEST(GraphBuckets, OnlyADimensionOfIndependentRowsIsPadded) {
  BucketSpec spec;
  Status st = resolve_buckets("m", {prefill_t(64, false)}, 2, "T", {8, 16}, false, &spec);
  EXPECT_EQ(st.code(), Code::kUnsupported) << st.message();
  EXPECT_NE(st.message().find("'T' may not be padded: it is neither a batched method's session dimension nor "
                              "marked \"pad\": \"repeat\""),
            std::string::npos)
      << st.message();
  SymbolicDim old_prefill = prefill_t(64, false);
  old_prefill.pad_refusal = "the loader's reason";
  st = resolve_buckets("m", {old_prefill}, 2, "T", {8}, false, &spec);
  EXPECT_EQ(st.code(), Code::kUnsupported) << st.message();
  EXPECT_NE(st.message().find("'T' may not be padded: the loader's reason"), std::string::npos) << st.message();
  EXPECT_FALSE(spec.enabled());
  ASSERT_TRUE(resolve_buckets("m", {prefill_t(64, false)}, 2, "", {}, false, &spec).ok());
  EXPECT_FALSE(spec.enabled()) << "no default padding of an unmarked dimension";
  // Sizes without a name skip it too: nothing else to pad.
  EXPECT_EQ(resolve_buckets("m", {prefill_t(64, false)}, 2, "", {8}, false, &spec).code(), Code::kInvalidArgument);
  ASSERT_TRUE(resolve_buckets("m", {prefill_t(64, false), batch_n()}, 3, "", {}, false, &spec).ok());
  EXPECT_EQ(spec.dim, "N") << "the session dimension is the default";
  // Marked: padded to declared sizes, named or not; no default set.
  ASSERT_TRUE(resolve_buckets("m", {prefill_t()}, 2, "T", {8, 16}, false, &spec).ok());
  EXPECT_EQ(spec.sizes, (std::vector<int64_t>{8, 16}));
  ASSERT_TRUE(resolve_buckets("m", {prefill_t()}, 2, "", {4}, false, &spec).ok());
  EXPECT_EQ(spec.dim, "T");
  ASSERT_TRUE(resolve_buckets("m", {prefill_t()}, 2, "", {}, false, &spec).ok());
  EXPECT_FALSE(spec.enabled()) << "a prefill's T has no default buckets (exact shapes)";
}

TEST(GraphBuckets, DefaultSizesArePowersOfTwoUpToTheMaxAndTheMax) {
  EXPECT_EQ(default_bucket_sizes(1, 8), (std::vector<int64_t>{1, 2, 4, 8}));
  EXPECT_EQ(default_bucket_sizes(1, 1000), (std::vector<int64_t>{1, 2, 4, 8, 16, 32, 64, 128, 256, 512, 1000}));
  EXPECT_EQ(default_bucket_sizes(3, 20), (std::vector<int64_t>{4, 8, 16, 20}));
  EXPECT_EQ(default_bucket_sizes(0, 1), (std::vector<int64_t>{1}));
  EXPECT_EQ(default_bucket_sizes(5, 5), (std::vector<int64_t>{5}));
  EXPECT_TRUE(default_bucket_sizes(1, 0).empty());
  EXPECT_TRUE(default_bucket_sizes(1, -1).empty());
  const std::vector<int64_t> big = default_bucket_sizes(1, INT64_MAX);
  EXPECT_EQ(big.size(), 64u);  // 2^0 .. 2^62, then the max: no overflow
  EXPECT_EQ(big.back(), INT64_MAX);
}

TEST(GraphBuckets, ChoosesTheSmallestBucketThatFits) {
  const std::vector<int64_t> s = {8, 16};
  EXPECT_EQ(choose_bucket(s, 1), 0);
  EXPECT_EQ(choose_bucket(s, 3), 0);
  EXPECT_EQ(choose_bucket(s, 8), 0);
  EXPECT_EQ(choose_bucket(s, 9), 1);
  EXPECT_EQ(choose_bucket(s, 16), 1);
  EXPECT_EQ(choose_bucket(s, 17), -1);
  EXPECT_EQ(choose_bucket({}, 1), -1);
}

TEST(GraphBuckets, DeclarationsResolveAgainstTheMethodsDimensions) {
  BucketSpec spec;
  // Declared, in any order: sorted.
  ASSERT_TRUE(resolve_buckets("m", {prefill_t()}, 2, "T", {16, 8}, false, &spec).ok());
  EXPECT_EQ(spec.dim, "T");
  EXPECT_EQ(spec.sizes, (std::vector<int64_t>{8, 16}));
  EXPECT_EQ(spec.inputs, (std::vector<int>{1, 0}));
  EXPECT_FALSE(spec.defaulted);
  // The only paddable dimension, unnamed.
  ASSERT_TRUE(resolve_buckets("m", {batch_n()}, 3, "", {3}, false, &spec).ok());
  EXPECT_EQ(spec.dim, "N");
  EXPECT_EQ(spec.sizes, (std::vector<int64_t>{3}));
  // Nothing declared: the default set of the dimension's max.
  ASSERT_TRUE(resolve_buckets("m", {batch_n()}, 3, "", {}, false, &spec).ok());
  EXPECT_TRUE(spec.defaulted);
  EXPECT_EQ(spec.sizes, (std::vector<int64_t>{1, 2, 4, 8}));
  EXPECT_EQ(spec.outputs, (std::vector<int>{0}));
  // Exact shapes asked for, or nothing to pad: no buckets.
  ASSERT_TRUE(resolve_buckets("m", {batch_n()}, 3, "", {}, true, &spec).ok());
  EXPECT_FALSE(spec.enabled());
  ASSERT_TRUE(resolve_buckets("m", {}, 2, "", {}, false, &spec).ok());
  EXPECT_FALSE(spec.enabled());
  SymbolicDim no_max = batch_n(-1);
  ASSERT_TRUE(resolve_buckets("m", {no_max}, 3, "", {}, false, &spec).ok());
  EXPECT_FALSE(spec.enabled()) << "no default without a max";
  ASSERT_TRUE(resolve_buckets("m", {no_max}, 3, "N", {1 << 20}, false, &spec).ok());
  EXPECT_EQ(spec.sizes, (std::vector<int64_t>{1 << 20}));
}

TEST(GraphBuckets, BadDeclarationsAreRefusedNamingTheValue) {
  BucketSpec spec;
  auto refused = [&](const std::vector<SymbolicDim>& dims, size_t inputs, const std::string& dim,
                     const std::vector<int64_t>& sizes, bool exact, const std::string& needle) {
    Status st = resolve_buckets("my-model", dims, inputs, dim, sizes, exact, &spec);
    EXPECT_EQ(st.code(), Code::kInvalidArgument) << needle;
    EXPECT_NE(st.message().find(needle), std::string::npos) << st.message();
    EXPECT_NE(st.message().find("'my-model'"), std::string::npos) << st.message();
    EXPECT_FALSE(spec.enabled());
  };
  refused({prefill_t()}, 2, "X", {8}, false, "'X'");
  refused({prefill_t()}, 2, "X", {8}, false, "declares 'T'");
  refused({}, 2, "T", {8}, false, "declares none");
  refused({prefill_t()}, 2, "T", {0, 8}, false, "size 0");
  refused({prefill_t()}, 2, "T", {8, 8}, false, "given twice");
  refused({prefill_t(64)}, 2, "T", {8, 128}, false, "past the dimension's max 64");
  refused({prefill_t()}, 2, "T", {8}, true, "exact shapes");
  refused({}, 2, "", {8}, false, "0 dimensions");
  SymbolicDim second = batch_n();
  second.name = "M";
  second.inputs = {-1, 0};
  refused({prefill_t(), second}, 2, "", {8}, false, "2 dimensions");
  SymbolicDim twice = prefill_t();
  twice.inputs = {-2, 0};  // input_ids [T, T]
  refused({twice}, 2, "T", {8}, false, "cannot be padded");
  SymbolicDim output_only = prefill_t();
  output_only.inputs = {-1, -1};
  refused({output_only}, 2, "T", {8}, false, "cannot be padded");
  SymbolicDim many = batch_n();
  many.inputs.assign(kMaxGatherInputs + 1, 0);
  refused({many}, kMaxGatherInputs + 1, "N", {8}, false, "at most 16");
  // The default quietly skips what cannot be padded (exact shapes then).
  ASSERT_TRUE(resolve_buckets("m", {twice}, 2, "", {}, false, &spec).ok());
  EXPECT_FALSE(spec.enabled());
}

TEST(GraphBuckets, TheRunSizeIsTheInputsCommonOne) {
  BucketSpec spec;
  ASSERT_TRUE(resolve_buckets("m", {batch_n()}, 3, "N", {8}, false, &spec).ok());
  int64_t n = 0;
  ASSERT_TRUE(
      run_size(spec, std::vector<TensorMeta>{meta(DType::kI64, {3, 1}), meta(DType::kI64, {3}), meta(DType::kI64, {3})},
               &n)
          .ok());
  EXPECT_EQ(n, 3);
  Status st = run_size(
      spec, std::vector<TensorMeta>{meta(DType::kI64, {3, 1}), meta(DType::kI64, {4}), meta(DType::kI64, {3})}, &n);
  EXPECT_EQ(st.code(), Code::kFailedPrecondition);
  EXPECT_NE(st.message().find("inputs 0 and 1 disagree on 'N' (3 and 4)"), std::string::npos) << st.message();
  st = run_size(spec,
                std::vector<TensorMeta>{meta(DType::kI64, {0, 1}), meta(DType::kI64, {0}), meta(DType::kI64, {0})}, &n);
  EXPECT_NE(st.message().find("no last row"), std::string::npos) << st.message();
  st = run_size(spec, std::vector<TensorMeta>{meta(DType::kI64, {}), meta(DType::kI64, {3}), meta(DType::kI64, {3})},
                &n);
  EXPECT_NE(st.message().find("has 0 dimensions"), std::string::npos) << st.message();
}

// Pads `real` (int64 values) of input i to bucket b with the host gather; the padded values.
std::vector<int64_t> pad(const BucketSpec& spec, size_t i, const TensorMeta& real, const std::vector<int64_t>& values,
                         int64_t b) {
  const TensorMeta bm = bucket_meta(spec, i, real, b);
  std::vector<int64_t> out(bm.numel(), -999);
  GatherInput g = gather_geometry(spec, i, real, b);
  g.src = values.data();
  g.dst = out.data();
  gather_narrow(&g);
  EXPECT_GE(g.unit, 8u);  // whole int64s (16 where a row is 16 aligned bytes)
  gather_host(g);
  return out;
}

TEST(GraphBuckets, PaddingRepeatsTheLastRowAlongTheDimension) {
  BucketSpec spec;
  ASSERT_TRUE(resolve_buckets("m", {prefill_t()}, 2, "T", {8, 16}, false, &spec).ok());
  // prefill at T = 5 in bucket 8: the last token and the last position repeated.
  EXPECT_EQ(pad(spec, 0, meta(DType::kI64, {1, 5}), {11, 12, 13, 14, 15}, 8),
            (std::vector<int64_t>{11, 12, 13, 14, 15, 15, 15, 15}));
  EXPECT_EQ(pad(spec, 1, meta(DType::kI64, {5}), {7, 8, 9, 10, 11}, 8),
            (std::vector<int64_t>{7, 8, 9, 10, 11, 11, 11, 11}));
  EXPECT_EQ(bucket_meta(spec, 0, meta(DType::kI64, {1, 5}), 8).shape, (std::vector<int64_t>{1, 8}));
  // Exactly the bucket's size: a plain copy.
  EXPECT_EQ(pad(spec, 1, meta(DType::kI64, {8}), {0, 1, 2, 3, 4, 5, 6, 7}, 8),
            (std::vector<int64_t>{0, 1, 2, 3, 4, 5, 6, 7}));
  // decode_batch N = 3 in bucket 8: rows (token, position, slot) of the last session repeated.
  ASSERT_TRUE(resolve_buckets("m", {batch_n()}, 3, "N", {8}, false, &spec).ok());
  EXPECT_EQ(pad(spec, 0, meta(DType::kI64, {3, 1}), {5, 6, 7}, 8), (std::vector<int64_t>{5, 6, 7, 7, 7, 7, 7, 7}));
  EXPECT_EQ(pad(spec, 2, meta(DType::kI64, {3}), {6, 4, 2}, 8), (std::vector<int64_t>{6, 4, 2, 2, 2, 2, 2, 2}));
  // A dimension inside: [2, T, 2] with T = 2 in bucket 3, each outer block padded on its own.
  SymbolicDim mid;
  mid.name = "T";
  mid.max = 4;
  mid.inputs = {1};
  mid.rows_independent = true;
  ASSERT_TRUE(resolve_buckets("m", {mid}, 1, "T", {3}, false, &spec).ok());
  EXPECT_EQ(pad(spec, 0, meta(DType::kI64, {2, 2, 2}), {1, 2, 3, 4, 5, 6, 7, 8}, 3),
            (std::vector<int64_t>{1, 2, 3, 4, 3, 4, 5, 6, 7, 8, 7, 8}));
}

TEST(GraphBuckets, InputsWithoutTheDimensionAreCopiedWhole) {
  SymbolicDim d = prefill_t();
  d.inputs = {1, -1};  // a second input of fixed shape
  BucketSpec spec;
  ASSERT_TRUE(resolve_buckets("m", {d}, 2, "T", {8}, false, &spec).ok());
  const GatherInput g = gather_geometry(spec, 1, meta(DType::kF32, {4, 3}), 8);
  EXPECT_EQ(g.rows, 1u);
  EXPECT_EQ(g.bucket_rows, 1u);
  EXPECT_EQ(g.row_units, 48u);
  EXPECT_EQ(bucket_meta(spec, 1, meta(DType::kF32, {4, 3}), 8).shape, (std::vector<int64_t>{4, 3}));
  // Sub-byte rows cannot be padded row by row.
  EXPECT_EQ(gather_geometry(spec, 0, meta(DType::kF4, {1, 3}), 8).row_units, 0u);
}

TEST(GraphBuckets, UnitsAreTheWidestTheAddressesAndRowsAllow) {
  alignas(16) char buf[64];
  EXPECT_EQ(gather_unit(32, buf, buf + 16), 16u);
  EXPECT_EQ(gather_unit(24, buf, buf + 16), 8u);
  EXPECT_EQ(gather_unit(32, buf + 4, buf), 4u);
  EXPECT_EQ(gather_unit(6, buf, buf), 2u);
  EXPECT_EQ(gather_unit(32, buf + 1, buf), 1u);
  GatherInput g;
  g.row_units = 24;
  g.src = buf;
  g.dst = buf + 32;
  gather_narrow(&g);
  EXPECT_EQ(g.unit, 8u);
  EXPECT_EQ(g.row_units, 3u);
}

TEST(GraphBuckets, OutputsWithTheDimensionAreViewsOfTheRealRows) {
  BucketSpec spec;
  ASSERT_TRUE(resolve_buckets("m", {batch_n()}, 3, "N", {8}, false, &spec).ok());
  const TensorMeta v = output_view(spec, 0, meta(DType::kF32, {8, 1, 256}), 3);
  EXPECT_EQ(v.shape, (std::vector<int64_t>{3, 1, 256}));
  EXPECT_EQ(v.strides, (std::vector<int64_t>{256, 256, 1}));
  EXPECT_TRUE(v.contiguous());
  // Full bucket: the tensor as it is.
  EXPECT_TRUE(output_view(spec, 0, meta(DType::kF32, {8, 1, 256}), 8).strides.empty());
  // A dimension inside ([1, T, V] logits of every position): a strided view.
  SymbolicDim d = prefill_t();
  d.outputs = {1};
  ASSERT_TRUE(resolve_buckets("m", {d}, 2, "T", {16}, false, &spec).ok());
  const TensorMeta w = output_view(spec, 0, meta(DType::kF32, {2, 16, 4}), 13);
  EXPECT_EQ(w.shape, (std::vector<int64_t>{2, 13, 4}));
  EXPECT_EQ(w.strides, (std::vector<int64_t>{64, 4, 1}));
  EXPECT_FALSE(w.contiguous());
  // prefill's last-position logits have no T: unchanged.
  ASSERT_TRUE(resolve_buckets("m", {prefill_t()}, 2, "T", {16}, false, &spec).ok());
  EXPECT_EQ(output_view(spec, 0, meta(DType::kF32, {1, 1, 256}), 13).shape, (std::vector<int64_t>{1, 1, 256}));
}

}  // namespace
}  // namespace wharf

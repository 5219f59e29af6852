#include <gtest/gtest.h>

#include "core/dtype.h"
#include "core/status.h"
#include "core/tensor.h"

namespace wharf {
namespace {

TEST(Status, OkAndContext) {
  Status ok;
  EXPECT_TRUE(ok.ok());
  EXPECT_TRUE(ok.with_context("x").ok());
  Status e = NotFound("constant 'a'");
  EXPECT_EQ(e.code(), Code::kNotFound);
  Status c = e.with_context("loading 'f'");
  EXPECT_EQ(c.code(), Code::kNotFound);
  EXPECT_EQ(c.message(), "loading 'f': constant 'a'");
  EXPECT_STREQ(code_name(Code::kDataCorrupt), "DATA_CORRUPT");
}

TEST(DType, SizesAndNames) {
  const struct { DType d; size_t size; const char* name; } cases[] = {
      {DType::kF32, 4, "F32"},     {DType::kF16, 2, "F16"},        {DType::kBF16, 2, "BF16"},
      {DType::kF64, 8, "F64"},     {DType::kF8E4M3, 1, "F8_E4M3"}, {DType::kF8E5M2, 1, "F8_E5M2"},
      {DType::kI8, 1, "I8"},       {DType::kU8, 1, "U8"},          {DType::kI16, 2, "I16"},
      {DType::kI32, 4, "I32"},     {DType::kI64, 8, "I64"},        {DType::kBool, 1, "BOOL"},
  };
  for (const auto& c : cases) {
    EXPECT_EQ(dtype_size(c.d), c.size) << c.name;
    EXPECT_STREQ(dtype_name(c.d), c.name);
    ASSERT_TRUE(dtype_from_name(c.name).has_value());
    EXPECT_EQ(*dtype_from_name(c.name), c.d);
  }
  EXPECT_EQ(dtype_size(static_cast<DType>(99)), 0u);
  EXPECT_EQ(dtype_name(static_cast<DType>(-1)), nullptr);
  EXPECT_FALSE(dtype_from_name("f32").has_value());  // names are case-sensitive
}

TEST(TensorMeta, ValidateAndSizes) {
  TensorMeta m;
  m.dtype = DType::kBF16;
  m.shape = {4, 8};
  ASSERT_TRUE(m.validate("t").ok());
  EXPECT_EQ(m.numel(), 32u);
  EXPECT_EQ(m.nbytes(), 64u);
  EXPECT_TRUE(m.contiguous());
  m.strides = {8, 1};
  EXPECT_TRUE(m.contiguous());
  m.strides = {1, 4};  // transposed view
  EXPECT_FALSE(m.contiguous());
  EXPECT_EQ(m.extent_bytes(), uint64_t((3 * 1 + 7 * 4 + 1) * 2));

  TensorMeta scalar;
  EXPECT_TRUE(scalar.validate("s").ok());
  EXPECT_EQ(scalar.numel(), 1u);

  TensorMeta neg;
  neg.shape = {2, -1};
  Status st = neg.validate("constant 'x'");
  EXPECT_EQ(st.code(), Code::kInvalidArgument);
  EXPECT_NE(st.message().find("constant 'x'"), std::string::npos);
  EXPECT_NE(st.message().find("[2, -1]"), std::string::npos);

  TensorMeta huge;
  huge.shape = {int64_t(1) << 40, int64_t(1) << 40};
  EXPECT_EQ(huge.validate("h").code(), Code::kInvalidArgument);

  TensorMeta rank;
  rank.shape.assign(9, 1);
  EXPECT_EQ(rank.validate("r").code(), Code::kInvalidArgument);

  TensorMeta bad_strides;
  bad_strides.shape = {2, 2};
  bad_strides.strides = {1};
  EXPECT_EQ(bad_strides.validate("b").code(), Code::kInvalidArgument);
}

}  // namespace
}  // namespace wharf

// SPDX-License-Identifier: Apache-2.0
// Methods compiled over a whole state arena (issue 26), the host-checkable rules of
// models/model_batch.cpp: which compiled state buffers bind the whole arena, and how a
// run's inputs are checked (the slots input is the run's own, the batch dimensions its N).
// The compiled methods themselves run in tests/gpu/package_batch_gpu_test.cpp.
#include <gtest/gtest.h>

#include <cstdint>
#include <string>
#include <vector>

#include "models/model.h"

namespace wharf {
namespace {

StateInit decl() {  // 64 bytes per session
  StateInit d;
  d.fqn = "cache.key_0";
  d.dtype = DType::kF32;
  d.shape = {1, 2, 4, 2};
  return d;
}

Status classify(uint64_t bytes, uint32_t capacity, bool required, StateBinding* out) {
  return classify_state_binding("manifest.json: methods[2] ('decode_batch')", decl(), bytes, capacity, required, out);
}

TEST(ModelBatch, AStateBufferOfOneSessionOrOfTheWholeArena) {
  StateBinding b = StateBinding::kWholeArena;
  ASSERT_TRUE(classify(64, 8, false, &b).ok());
  EXPECT_EQ(b, StateBinding::kSession);
  ASSERT_TRUE(classify(64, 0, false, &b).ok());
  EXPECT_EQ(b, StateBinding::kSession);
  ASSERT_TRUE(classify(8 * 64, 8, false, &b).ok());
  EXPECT_EQ(b, StateBinding::kWholeArena);
  // A batched method binds the arena even when it holds one session.
  ASSERT_TRUE(classify(64, 1, true, &b).ok());
  EXPECT_EQ(b, StateBinding::kWholeArena);
  ASSERT_TRUE(classify(64, 1, false, &b).ok());
  EXPECT_EQ(b, StateBinding::kSession);
}

TEST(ModelBatch, AnyOtherSizeIsRefusedNamingTheStateAndBothSizes) {
  StateBinding b;
  Status st = classify(128, 8, false, &b);
  EXPECT_EQ(st.code(), Code::kInvalidArgument);
  for (const char* n : {"methods[2] ('decode_batch')", "'cache.key_0'", "64 bytes per session", "128 bytes", "512"})
    EXPECT_NE(st.message().find(n), std::string::npos) << n << " not in: " << st.message();
  // Without an arena, only one session's size fits.
  st = classify(8 * 64, 0, false, &b);
  EXPECT_EQ(st.code(), Code::kInvalidArgument) << st.message();
  // A batched method whose buffer is one session's, or of another capacity.
  for (uint64_t bytes : {uint64_t(64), uint64_t(4 * 64)}) {
    st = classify(bytes, 8, true, &b);
    EXPECT_EQ(st.code(), Code::kInvalidArgument);
    EXPECT_NE(st.message().find("state arena of 8 sessions"), std::string::npos) << st.message();
    EXPECT_NE(st.message().find("512 bytes"), std::string::npos) << st.message();
  }
  st = classify(8 * 64, 0, true, &b);
  EXPECT_EQ(st.code(), Code::kInvalidArgument) << st.message();
}

struct Inputs {
  std::vector<int64_t> ids, pos;
  int64_t slots_data[3] = {5, 1, 6};  // stands for the run's index buffer
  std::vector<int64_t> slots_shape{3};
  BoundTensor slots;
  BatchInputs spec;
  std::vector<std::string> names{"input_ids", "cache_position", "slots"};
  std::vector<ModelTensor> in;

  Inputs() {
    slots.data = slots_data;
    slots.dtype = DType::kI64;
    slots.shape = &slots_shape;
    slots.nbytes = sizeof slots_data;
    slots.device_type = DeviceType::kCuda;
    slots.read_only = true;
    spec.slots = 2;
    spec.batch_dims = {0, 0, 0};
    in.resize(3);
    in[0].meta.dtype = DType::kI64;
    in[0].meta.shape = {3, 1};
    in[1].meta.dtype = DType::kI64;
    in[1].meta.shape = {3};
    ids = {7, 8, 9};
    pos = {4, 10, 2};
    in[0].data = ids.data();
    in[1].data = pos.data();
  }
  Status resolve(std::vector<ModelTensor>* out) const {
    return resolve_batch_inputs("pkg/decode_batch", names, spec, slots, in, out);
  }
};

TEST(ModelBatch, AnEmptySlotsViewIsFilledWithTheRunsOwnIndices) {
  Inputs t;
  std::vector<ModelTensor> out;
  ASSERT_TRUE(t.resolve(&out).ok());
  ASSERT_EQ(out.size(), 3u);
  EXPECT_EQ(out[0].data, t.ids.data());
  EXPECT_EQ(out[1].data, t.pos.data());
  EXPECT_EQ(out[2].data, t.slots_data);
  EXPECT_EQ(out[2].meta.dtype, DType::kI64);
  EXPECT_EQ(out[2].meta.shape, std::vector<int64_t>{3});
  EXPECT_EQ(out[2].meta.device_type, DeviceType::kCuda);
  EXPECT_TRUE(out[2].meta.contiguous());
}

TEST(ModelBatch, TheRunsOwnSlotIndicesAreAcceptedAsGiven) {
  Inputs t;
  t.in[2].data = t.slots_data;
  t.in[2].meta.dtype = DType::kI64;
  t.in[2].meta.shape = {3};
  t.in[2].meta.device_type = DeviceType::kCpu;  // whatever the caller wrote, the run's tensor is passed
  std::vector<ModelTensor> out;
  ASSERT_TRUE(t.resolve(&out).ok());
  EXPECT_EQ(out[2].data, t.slots_data);
  EXPECT_EQ(out[2].meta.device_type, DeviceType::kCuda);
  // The same pointer with another shape or dtype is not the run's tensor.
  t.in[2].meta.shape = {2};
  Status st = t.resolve(&out);
  EXPECT_EQ(st.code(), Code::kInvalidArgument);
  EXPECT_NE(st.message().find("'slots'"), std::string::npos) << st.message();
  t.in[2].meta.shape = {3};
  t.in[2].meta.dtype = DType::kI32;
  EXPECT_EQ(t.resolve(&out).code(), Code::kInvalidArgument);
}

TEST(ModelBatch, AnyOtherSlotIndicesAreRefusedNamingTheInput) {
  Inputs t;
  int64_t mine[3] = {5, 1, 6};  // equal values, another buffer: isolation is not the caller's to claim
  t.in[2].data = mine;
  t.in[2].meta.dtype = DType::kI64;
  t.in[2].meta.shape = {3};
  std::vector<ModelTensor> out;
  Status st = t.resolve(&out);
  EXPECT_EQ(st.code(), Code::kInvalidArgument);
  for (const char* n : {"'pkg/decode_batch'", "input 'slots'", "wharf_run_get_slot_indices", "empty view"})
    EXPECT_NE(st.message().find(n), std::string::npos) << n << " not in: " << st.message();
  EXPECT_TRUE(out.empty()) << "a refused call gives nothing";
}

TEST(ModelBatch, EveryBatchDimensionMustCountTheRunsSessions) {
  Inputs t;
  std::vector<ModelTensor> out;
  t.in[0].meta.shape = {4, 1};  // one row more than the run has sessions
  Status st = t.resolve(&out);
  EXPECT_EQ(st.code(), Code::kInvalidArgument);
  for (const char* n : {"input 'input_ids'", "[4, 1]", "dimension 0", "3 in this run"})
    EXPECT_NE(st.message().find(n), std::string::npos) << n << " not in: " << st.message();
  t.in[0].meta.shape = {3, 1};
  t.in[1].meta.shape = {};  // a scalar has no batch dimension
  st = t.resolve(&out);
  EXPECT_EQ(st.code(), Code::kInvalidArgument);
  EXPECT_NE(st.message().find("input 'cache_position'"), std::string::npos) << st.message();
  // An input without a batch dimension is not checked.
  t.spec.batch_dims = {0, -1, 0};
  EXPECT_TRUE(t.resolve(&out).ok());
}

}  // namespace
}  // namespace wharf

// SPDX-License-Identifier: Apache-2.0
// The model functions of the C API (experimental tier) on a machine without a GPU: what they
// refuse and how. The GPU suite (tests/gpu/model_gpu_test.cpp, model_api_gpu_test.cpp) runs
// real compiled models.
#include <gtest/gtest.h>

#include <cstring>
#include <string>

#define WHARF_EXPERIMENTAL
#include "common/test_support.h"
#include "wharf/wharf.h"

namespace {

using wharf_test::St;

TEST(ModelApi, HostBackendAndBadArgumentsAreRefusedCleanly) {
  wharf_runtime_options ro;
  wharf_runtime_options_init(&ro);
  ro.backend = WHARF_BACKEND_HOST;
  wharf_runtime* rt = nullptr;
  ASSERT_EQ(wharf_runtime_create(&ro, &rt), nullptr);
  wharf_constant_map* weights = nullptr;
  ASSERT_EQ(wharf_constant_map_create(&weights), nullptr);
  wharf_model* m = reinterpret_cast<wharf_model*>(0x1);
  St host(wharf_model_load(rt, "model.so", weights, nullptr, &m));
  EXPECT_EQ(host.code(), WHARF_UNSUPPORTED) << host.msg();
  EXPECT_NE(host.msg().find("CUDA"), std::string::npos) << host.msg();
  EXPECT_EQ(m, nullptr);
  St nul(wharf_model_load(rt, nullptr, weights, nullptr, &m));
  EXPECT_EQ(nul.code(), WHARF_INVALID_ARGUMENT);
  // Options follow the struct_size rules: a newer caller's unknown non-zero field is refused.
  struct Bigger {
    wharf_model_options o;
    uint64_t future;
  } big;
  std::memset(&big, 0, sizeof big);
  wharf_model_options_init_sized(&big.o, sizeof big);
  EXPECT_EQ(big.o.struct_size, sizeof(wharf_model_options));  // the library's size: it wrote no further
  big.o.struct_size = sizeof big;                             // as a newer header would
  big.future = 7;
  St newer(wharf_model_load(rt, "model.so", weights, &big.o, &m));
  EXPECT_EQ(newer.code(), WHARF_UNSUPPORTED) << newer.msg();
  EXPECT_NE(newer.msg().find("wharf_model_options"), std::string::npos) << newer.msg();
  // NULL-safe queries.
  EXPECT_EQ(wharf_model_container(nullptr), nullptr);
  EXPECT_EQ(wharf_model_num_inputs(nullptr), 0u);
  EXPECT_EQ(wharf_model_input_name(nullptr, 0), nullptr);
  wharf_model_free(nullptr);
  St run(wharf_model_run(nullptr, nullptr, nullptr, 0, nullptr, 0));
  EXPECT_EQ(run.code(), WHARF_INVALID_ARGUMENT);
  wharf_constant_map_free(weights);
  wharf_runtime_free(rt);
}

}  // namespace

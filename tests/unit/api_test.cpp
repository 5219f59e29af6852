// SPDX-License-Identifier: Apache-2.0
// The C API: handles, versioned structs, error conversion and ownership rules.
#include <gtest/gtest.h>

#include <cstring>
#include <mutex>
#include <string>
#include <vector>

#include "common/test_support.h"
#include "wharf/wharf.h"

namespace {

using wharf_test::map_of;
using wharf_test::St;

wharf_runtime* host_runtime(uint64_t limit = 0) { return wharf_test::make_runtime(WHARF_BACKEND_HOST, {limit}); }

TEST(CApi, StatusBasics) {
  EXPECT_EQ(wharf_status_code(nullptr), WHARF_OK);
  EXPECT_STREQ(wharf_status_message(nullptr), "");
  wharf_status_free(nullptr);
  EXPECT_STREQ(wharf_code_name(WHARF_OUT_OF_MEMORY), "OUT_OF_MEMORY");
  EXPECT_STREQ(wharf_code_name(static_cast<wharf_code>(1000)), "UNKNOWN");
}

TEST(CApi, Versions) {
  EXPECT_EQ(wharf_abi_version(), uint32_t(WHARF_ABI_VERSION));
  std::string v = std::to_string(WHARF_VERSION_MAJOR) + "." + std::to_string(WHARF_VERSION_MINOR) + "." +
                  std::to_string(WHARF_VERSION_PATCH);
  EXPECT_EQ(v, wharf_version());
}

TEST(CApi, RuntimeOptionsStructSize) {
  wharf_runtime_options o;
  wharf_runtime_options_init(&o);
  EXPECT_EQ(o.struct_size, sizeof(o));
  EXPECT_EQ(o.backend, WHARF_BACKEND_AUTO);
  wharf_runtime* rt = nullptr;
  // A caller built against an older header: only the fields up to backend are read, the
  // rest (a garbage device_memory_limit here) take their defaults.
  o.backend = WHARF_BACKEND_HOST;
  o.device_memory_limit = 123;
  o.struct_size = offsetof(wharf_runtime_options, device_index);
  {
    St st(wharf_runtime_create(&o, &rt));
    ASSERT_EQ(st.code(), WHARF_OK) << st.msg();
  }
  wharf_memory_stats ms;
  std::memset(&ms, 0, sizeof(ms));
  ms.struct_size = sizeof(ms);
  // The limit was not applied: a big constant map load path isn't needed, accounting says 0.
  ASSERT_EQ(wharf_status_code(wharf_runtime_get_memory_stats(rt, &ms)), WHARF_OK);
  wharf_runtime_free(rt);

  o.struct_size = 2;
  St st(wharf_runtime_create(&o, &rt));
  EXPECT_EQ(st.code(), WHARF_INVALID_ARGUMENT);
  EXPECT_NE(st.msg().find("struct_size"), std::string::npos);
  EXPECT_EQ(rt, nullptr);
}

TEST(CApi, RuntimeCreateRejectsBadValues) {
  wharf_runtime_options o;
  wharf_runtime_options_init(&o);
  o.backend = static_cast<wharf_backend>(9);
  wharf_runtime* rt = nullptr;
  St st(wharf_runtime_create(&o, &rt));
  EXPECT_EQ(st.code(), WHARF_INVALID_ARGUMENT);
  EXPECT_NE(st.msg().find("backend"), std::string::npos);
  St st2(wharf_runtime_create(nullptr, nullptr));
  EXPECT_EQ(st2.code(), WHARF_INVALID_ARGUMENT);
}

TEST(CApi, DeviceInfoAndMemoryStatsPrefix) {
  wharf_runtime* rt = host_runtime();
  EXPECT_EQ(wharf_runtime_backend(rt), WHARF_BACKEND_HOST);
  wharf_device_info info;
  std::memset(&info, 0, sizeof(info));
  info.struct_size = sizeof(info);
  ASSERT_EQ(wharf_status_code(wharf_runtime_get_device_info(rt, &info)), WHARF_OK);
  EXPECT_STREQ(info.name, "host");
  EXPECT_GT(info.total_memory, 0u);

  // An older, shorter output struct: nothing past its struct_size is written.
  std::vector<unsigned char> raw(sizeof(wharf_memory_stats), 0xAB);
  auto* ms = reinterpret_cast<wharf_memory_stats*>(raw.data());
  ms->struct_size = offsetof(wharf_memory_stats, device_current);
  ASSERT_EQ(wharf_status_code(wharf_runtime_get_memory_stats(rt, ms)), WHARF_OK);
  EXPECT_EQ(ms->struct_size, offsetof(wharf_memory_stats, device_current));
  EXPECT_EQ(ms->current[WHARF_MEM_CONSTANTS], 0u);
  EXPECT_EQ(raw[offsetof(wharf_memory_stats, device_current)], 0xAB);

  EXPECT_EQ(wharf_status_code(wharf_runtime_synchronize(rt)), WHARF_OK);
  wharf_runtime_reset_peak(rt);
  wharf_runtime_reset_peak(nullptr);
  wharf_runtime_free(rt);
}

TEST(CApi, ConstantMapSetFindEntry) {
  wharf_constant_map* map = nullptr;
  ASSERT_EQ(wharf_status_code(wharf_constant_map_create(&map)), WHARF_OK);
  std::vector<float> a(6, 1.0f), b(4, 2.0f);
  int64_t shape_a[2] = {2, 3}, shape_b[1] = {4}, strides_a[2] = {1, 2};
  wharf_tensor_view va{
      sizeof(wharf_tensor_view), 0, a.data(), WHARF_DTYPE_F32, WHARF_DEVICE_CPU, 0, 2, shape_a, strides_a};
  wharf_tensor_view vb{
      sizeof(wharf_tensor_view), 0, b.data(), WHARF_DTYPE_F32, WHARF_DEVICE_CPU, 0, 1, shape_b, nullptr};
  ASSERT_EQ(wharf_status_code(wharf_constant_map_set(map, "layers.0.w", &va)), WHARF_OK);
  ASSERT_EQ(wharf_status_code(wharf_constant_map_set(map, "layers.0.b", &vb)), WHARF_OK);
  // The map copied shape and strides: changing the caller's arrays changes nothing.
  shape_a[0] = 99;
  strides_a[0] = 99;
  wharf_tensor_view out{};
  out.struct_size = sizeof out;
  ASSERT_EQ(wharf_status_code(wharf_constant_map_find(map, "layers.0.w", &out)), WHARF_OK);
  EXPECT_EQ(out.data, a.data());
  EXPECT_EQ(out.shape[0], 2);
  EXPECT_EQ(out.strides[0], 1);
  EXPECT_EQ(wharf_constant_map_num_entries(map), 2u);
  const char* name = nullptr;
  ASSERT_EQ(wharf_status_code(wharf_constant_map_get_entry(map, 1, &name, &out)), WHARF_OK);
  EXPECT_STREQ(name, "layers.0.b");
  EXPECT_EQ(out.strides, nullptr);

  St nf(wharf_constant_map_find(map, "nope", &out));
  EXPECT_EQ(nf.code(), WHARF_NOT_FOUND);
  EXPECT_NE(nf.msg().find("'nope'"), std::string::npos);
  St oob(wharf_constant_map_get_entry(map, 2, &name, &out));
  EXPECT_EQ(oob.code(), WHARF_INVALID_ARGUMENT);
  wharf_constant_map_free(map);
}

TEST(CApi, ConstantMapRejectsBadViewsWithoutChange) {
  wharf_constant_map* map = nullptr;
  ASSERT_EQ(wharf_status_code(wharf_constant_map_create(&map)), WHARF_OK);
  float x[4] = {0};
  int64_t shape[2] = {2, 2}, neg[2] = {2, -2};
  struct Case {
    const char* name;
    wharf_tensor_view v{};
    wharf_code code;
    const char* needle;
  } cases[] = {
      {"nulldata",
       {sizeof(wharf_tensor_view), 0, nullptr, WHARF_DTYPE_F32, WHARF_DEVICE_CPU, 0, 2, shape, nullptr},
       WHARF_INVALID_ARGUMENT,
       "null data"},
      {"baddtype",
       {sizeof(wharf_tensor_view), 0, x, static_cast<wharf_dtype>(42), WHARF_DEVICE_CPU, 0, 2, shape, nullptr},
       WHARF_INVALID_ARGUMENT,
       "dtype"},
      {"baddev",
       {sizeof(wharf_tensor_view), 0, x, WHARF_DTYPE_F32, static_cast<wharf_device_type>(5), 0, 2, shape, nullptr},
       WHARF_INVALID_ARGUMENT,
       "device type"},
      {"rank",
       {sizeof(wharf_tensor_view), 0, x, WHARF_DTYPE_F32, WHARF_DEVICE_CPU, 0, 9, shape, nullptr},
       WHARF_INVALID_ARGUMENT,
       "ndim"},
      {"noshape",
       {sizeof(wharf_tensor_view), 0, x, WHARF_DTYPE_F32, WHARF_DEVICE_CPU, 0, 2, nullptr, nullptr},
       WHARF_INVALID_ARGUMENT,
       "shape"},
      {"negdim",
       {sizeof(wharf_tensor_view), 0, x, WHARF_DTYPE_F32, WHARF_DEVICE_CPU, 0, 2, neg, nullptr},
       WHARF_INVALID_ARGUMENT,
       "negative"},
  };
  for (const auto& c : cases) {
    St st(wharf_constant_map_set(map, c.name, &c.v));
    EXPECT_EQ(st.code(), c.code) << c.name;
    EXPECT_NE(st.msg().find(std::string("'") + c.name + "'"), std::string::npos) << st.msg();
    EXPECT_NE(st.msg().find(c.needle), std::string::npos) << st.msg();
  }
  EXPECT_EQ(wharf_constant_map_num_entries(map), 0u);
  wharf_tensor_view ok{sizeof(wharf_tensor_view), 0, x, WHARF_DTYPE_F32, WHARF_DEVICE_CPU, 0, 2, shape, nullptr};
  St empty(wharf_constant_map_set(map, "", &ok));
  EXPECT_EQ(empty.code(), WHARF_INVALID_ARGUMENT);
  St nullname(wharf_constant_map_set(map, nullptr, &ok));
  EXPECT_EQ(nullname.code(), WHARF_INVALID_ARGUMENT);
  // Zero elements need no data.
  int64_t zero[1] = {0};
  wharf_tensor_view z{sizeof(wharf_tensor_view), 0, nullptr, WHARF_DTYPE_F32, WHARF_DEVICE_CPU, 0, 1, zero, nullptr};
  St zs(wharf_constant_map_set(map, "empty", &z));
  EXPECT_EQ(zs.code(), WHARF_OK) << zs.msg();
  wharf_constant_map_free(map);
}

std::mutex g_log_mu;
std::vector<std::string> g_log_lines;
void capture_log(wharf_log_level level, const char* message, void* user) {
  std::lock_guard<std::mutex> lock(g_log_mu);
  g_log_lines.push_back(std::to_string(int(level)) + ":" + message + ":" + static_cast<const char*>(user));
}

TEST(CApi, LogCallbackReceivesRuntimeChoice) {
  static const char tag[] = "mine";
  wharf_log_set_callback(capture_log, WHARF_LOG_DEBUG, const_cast<char*>(tag));
  wharf_runtime_options o;
  wharf_runtime_options_init(&o);  // AUTO logs which backend it chose
  wharf_runtime* rt = nullptr;
  St st(wharf_runtime_create(&o, &rt));
  ASSERT_EQ(st.code(), WHARF_OK);
  wharf_runtime_free(rt);
  wharf_log_set_callback(nullptr, WHARF_LOG_WARN, nullptr);
  std::lock_guard<std::mutex> lock(g_log_mu);
  bool found = false;
  for (const auto& l : g_log_lines)
    if (l.find("backend AUTO chose") != std::string::npos && l.find(":mine") != std::string::npos) found = true;
  EXPECT_TRUE(found);
}

TEST(CApi, DtypeFunctions) {
  EXPECT_EQ(wharf_dtype_size(WHARF_DTYPE_F64), 8u);
  EXPECT_EQ(wharf_dtype_size(static_cast<wharf_dtype>(77)), 0u);
  EXPECT_EQ(wharf_dtype_name(static_cast<wharf_dtype>(77)), nullptr);
  wharf_dtype d;
  St ok(wharf_dtype_from_name("BF16", &d));
  EXPECT_EQ(ok.code(), WHARF_OK);
  EXPECT_EQ(d, WHARF_DTYPE_BF16);
}

// Statuses made by callers, version numbers, references the caller gives up.

TEST(AbiStatus, CreateCopiesTheMessageAndOkIsNull) {
  EXPECT_EQ(wharf_status_create(WHARF_OK, "fine"), nullptr);
  std::string msg = "budget of 4 bytes exceeded";
  wharf_status* s = wharf_status_create(WHARF_RESOURCE_EXHAUSTED, msg.c_str());
  msg.assign("overwritten");
  EXPECT_EQ(wharf_status_code(s), WHARF_RESOURCE_EXHAUSTED);
  EXPECT_STREQ(wharf_status_message(s), "budget of 4 bytes exceeded");
  wharf_status_free(s);
  St empty(wharf_status_create(WHARF_NOT_FOUND, nullptr));
  EXPECT_EQ(empty.code(), WHARF_NOT_FOUND);
  EXPECT_EQ(empty.msg(), "");
  St unknown(wharf_status_create(static_cast<wharf_code>(99), "from the future"));
  EXPECT_EQ(unknown.code(), WHARF_INTERNAL);
  EXPECT_TRUE(unknown.has("99") && unknown.has("from the future")) << unknown.msg();
}

TEST(AbiVersion, NumberEncodesMajorMinorPatch) {
  EXPECT_EQ(WHARF_VERSION_NUMBER, WHARF_VERSION_MAJOR * 10000 + WHARF_VERSION_MINOR * 100 + WHARF_VERSION_PATCH);
  EXPECT_EQ(wharf_version_number(), uint32_t(WHARF_VERSION_NUMBER));
  EXPECT_GE(wharf_version_number(), 300u);  // this test uses 0.3 functions
  const std::string v = wharf_version();
  EXPECT_EQ(v, std::to_string(WHARF_VERSION_MAJOR) + "." + std::to_string(WHARF_VERSION_MINOR) + "." +
                   std::to_string(WHARF_VERSION_PATCH));
}

TEST(AbiContracts, FreeReleasesTheCallersReference) {
  wharf_runtime* rt = wharf_test::make_runtime(WHARF_BACKEND_HOST);
  float x[4] = {4, 4, 4, 4};
  int64_t shape[1] = {4};
  wharf_constant_map* map = map_of("w", x, shape);
  wharf_container* c = nullptr;
  ASSERT_OK(wharf_container_create_from_map(rt, map, nullptr, &c));
  wharf_constant_map_free(map);
  wharf_runtime_free(rt);  // the container keeps the runtime alive
  wharf_run* run = nullptr;
  ASSERT_OK(wharf_run_begin(c, nullptr, nullptr, &run));
  float got = 0;
  ASSERT_OK(wharf_run_read(run, "w", 0, &got, sizeof got));
  EXPECT_EQ(got, 4);
  wharf_container_free(c);  // the open run keeps the container alive
  ASSERT_OK(wharf_run_read(run, "w", 0, &got, sizeof got));
  ASSERT_OK(wharf_run_end(run));
}

}  // namespace

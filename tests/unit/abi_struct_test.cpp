// SPDX-License-Identifier: Apache-2.0
// The C ABI's growth rules (wharf.h, "Structs", "Experimental tier"): sized inits,
// struct_size checks (field boundaries, zero bytes past the library's size, array strides),
// output structs written only as far as the caller's size, and tensor views with strides and
// byte offsets. What objects do with these structs is tested in their own files.
#define WHARF_EXPERIMENTAL 1
#include <gtest/gtest.h>

#include <cstddef>
#include <cstring>
#include <string>
#include <vector>

#include "common/test_support.h"
#include "wharf/wharf.h"

namespace {

using wharf_test::f32_decl;
using wharf_test::f32_view;
using wharf_test::map_of;
using wharf_test::Model;
using wharf_test::St;

wharf_runtime* host_runtime() { return wharf_test::make_runtime(WHARF_BACKEND_HOST); }

// --- sized inits ---------------------------------------------------------------------------

template <class T>
struct Guarded {
  T o;
  unsigned char canary[64];
};

template <class T, class Init>
void expect_sized_init_stays_inside(Init init, size_t size) {
  Guarded<T> g;
  std::memset(&g, 0xAB, sizeof g);
  init(&g.o, size);
  const auto* bytes = reinterpret_cast<const unsigned char*>(&g);
  for (size_t i = size; i < sizeof g; ++i) ASSERT_EQ(bytes[i], 0xAB) << "byte " << i << " written past " << size;
  EXPECT_EQ(g.o.struct_size, size < sizeof(T) ? size : sizeof(T));
}

TEST(AbiInit, SizedInitsWriteNoBytePastTheCallersStruct) {
  for (size_t size : {sizeof(uint32_t), size_t(16), sizeof(wharf_runtime_options)})
    expect_sized_init_stays_inside<wharf_runtime_options>(wharf_runtime_options_init_sized, size);
  for (size_t size : {size_t(32), sizeof(wharf_update_options)})
    expect_sized_init_stays_inside<wharf_update_options>(wharf_update_options_init_sized, size);
  for (size_t size : {size_t(16), sizeof(wharf_session_options)})
    expect_sized_init_stays_inside<wharf_session_options>(wharf_session_options_init_sized, size);
  for (size_t size : {size_t(32), sizeof(wharf_container_options)})
    expect_sized_init_stays_inside<wharf_container_options>(wharf_container_options_init_sized, size);
  // Below the struct_size field itself: nothing is written.
  Guarded<wharf_update_options> g;
  std::memset(&g, 0xAB, sizeof g);
  wharf_update_options_init_sized(&g.o, 2);
  EXPECT_EQ(reinterpret_cast<unsigned char*>(&g)[0], 0xAB);
  wharf_update_options_init_sized(nullptr, sizeof g.o);  // no-op
}

TEST(AbiInit, MacrosFillDefaultsAndTheHeadersSize) {
  wharf_update_options u;
  wharf_update_options_init(&u);
  EXPECT_EQ(u.struct_size, sizeof u);
  EXPECT_EQ(u.target, WHARF_TARGET_INACTIVE);
  EXPECT_EQ(u.wait_stream, nullptr);
  EXPECT_EQ(u.in_place_max_wait_ms, 1000u);
  wharf_runtime_options r;
  wharf_runtime_options_init(&r);
  EXPECT_EQ(r.struct_size, sizeof r);
  EXPECT_EQ(r.backend, WHARF_BACKEND_AUTO);
  wharf_session_options s;
  wharf_session_options_init(&s);
  EXPECT_EQ(s.struct_size, sizeof s);
  EXPECT_EQ(s.max_state_bytes, 0u);
}

// --- struct_size of input structs ---------------------------------------------------------

// A caller built against a newer header: its update options have a field this library
// does not know.
struct NewerUpdateOptions {
  wharf_update_options o;
  uint64_t future_field;
};

TEST(AbiStructSize, LargerStructWithNonZeroUnknownFieldIsRefused) {
  Model m(1);
  float fresh[4] = {2, 2, 2, 2};
  wharf_constant_map* map = map_of("w", fresh, m.shape);
  NewerUpdateOptions n;
  std::memset(&n, 0, sizeof n);
  wharf_update_options_init_sized(&n.o, sizeof n.o);
  n.o.struct_size = sizeof n;
  n.future_field = 7;
  St st(wharf_container_update(m.c, map, &n.o));
  EXPECT_EQ(st.code(), WHARF_UNSUPPORTED) << st.msg();
  EXPECT_TRUE(st.has("wharf_update_options")) << st.msg();
  EXPECT_TRUE(st.has("byte " + std::to_string(offsetof(NewerUpdateOptions, future_field)))) << st.msg();
  EXPECT_EQ(wharf_container_has_staged(m.c), 0);  // nothing changed

  // Zeros past the library's size are fine: the caller asked for nothing new.
  n.future_field = 0;
  ASSERT_OK(wharf_container_update(m.c, map, &n.o));
  ASSERT_OK(wharf_container_swap(m.c));
  EXPECT_EQ(m.first(), 2);
  wharf_constant_map_free(map);
}

TEST(AbiStructSize, EveryOptionsStructRefusesUnknownNonZeroBytes) {
  wharf_runtime* rt = nullptr;
  struct {
    wharf_runtime_options o;
    uint32_t future;
  } r;
  std::memset(&r, 0, sizeof r);
  wharf_runtime_options_init(&r.o);
  r.o.backend = WHARF_BACKEND_HOST;
  r.o.struct_size = sizeof r;
  r.future = 1;
  St rs(wharf_runtime_create(&r.o, &rt));
  EXPECT_EQ(rs.code(), WHARF_UNSUPPORTED);
  EXPECT_TRUE(rs.has("wharf_runtime_options: byte 40")) << rs.msg();
  EXPECT_EQ(rt, nullptr);
  r.future = 0;
  ASSERT_OK(wharf_runtime_create(&r.o, &rt));

  struct {
    wharf_container_options o;
    unsigned char future[8];
  } c;
  std::memset(&c, 0, sizeof c);
  wharf_container_options_init(&c.o);
  c.o.struct_size = sizeof c;
  c.future[3] = 1;
  wharf_container* container = nullptr;
  St cs(wharf_container_create(rt, &c.o, &container));
  EXPECT_EQ(cs.code(), WHARF_UNSUPPORTED);
  EXPECT_TRUE(cs.has("wharf_container_options: byte " + std::to_string(sizeof c.o + 3))) << cs.msg();

  struct {
    wharf_session_options o;
    uint64_t future;
  } s;
  std::memset(&s, 0, sizeof s);
  wharf_session_options_init(&s.o);
  s.o.struct_size = sizeof s;
  s.future = 1;
  int64_t shape[1] = {4};
  wharf_constant_decl d = f32_decl("w", shape);
  wharf_container_options_init(&c.o);
  c.o.constants = &d;
  c.o.num_constants = 1;
  ASSERT_OK(wharf_container_create(rt, &c.o, &container));
  wharf_session* session = nullptr;
  St ss(wharf_session_create(rt, &container, 1, &s.o, &session));
  EXPECT_EQ(ss.code(), WHARF_UNSUPPORTED);
  EXPECT_TRUE(ss.has("wharf_session_options")) << ss.msg();
  wharf_container_free(container);
  wharf_runtime_free(rt);
}

TEST(AbiStructSize, SizeEndingInsideAFieldIsRefused) {
  wharf_runtime_options o;
  wharf_runtime_options_init(&o);
  o.backend = WHARF_BACKEND_HOST;
  wharf_runtime* rt = nullptr;
  // Half of device_memory_limit.
  o.struct_size = offsetof(wharf_runtime_options, device_memory_limit) + 4;
  St half(wharf_runtime_create(&o, &rt));
  EXPECT_EQ(half.code(), WHARF_INVALID_ARGUMENT);
  EXPECT_TRUE(half.has("wharf_runtime_options")) << half.msg();
  EXPECT_TRUE(half.has("inside field 'device_memory_limit'")) << half.msg();
  EXPECT_EQ(rt, nullptr);
  // Implausible sizes.
  o.struct_size = 5000;
  St huge(wharf_runtime_create(&o, &rt));
  EXPECT_EQ(huge.code(), WHARF_INVALID_ARGUMENT);
  o.struct_size = 2;
  St tiny(wharf_runtime_create(&o, &rt));
  EXPECT_EQ(tiny.code(), WHARF_INVALID_ARGUMENT);
  EXPECT_TRUE(tiny.has("struct_size")) << tiny.msg();

  // Update options cut inside the fold pointer: half a pointer is never read.
  Model m(1);
  float fresh[4] = {3, 3, 3, 3};
  wharf_constant_map* map = map_of("w", fresh, m.shape);
  wharf_update_options u;
  wharf_update_options_init(&u);
  u.struct_size = offsetof(wharf_update_options, fold) + 4;
  St fold(wharf_container_update(m.c, map, &u));
  EXPECT_EQ(fold.code(), WHARF_INVALID_ARGUMENT);
  EXPECT_TRUE(fold.has("inside field 'fold'")) << fold.msg();
  u.struct_size = offsetof(wharf_update_options, wait_stream) + 4;
  St wait(wharf_container_update(m.c, map, &u));
  EXPECT_EQ(wait.code(), WHARF_INVALID_ARGUMENT);
  EXPECT_TRUE(wait.has("inside field 'wait_stream'")) << wait.msg();
  EXPECT_EQ(wharf_container_has_staged(m.c), 0);

  // A size ending on a field boundary is fine: the fields past it take their defaults.
  u.struct_size = 32;
  u.wait_stream = reinterpret_cast<void*>(0x1);  // not covered: ignored
  ASSERT_OK(wharf_container_update(m.c, map, &u));
  ASSERT_OK(wharf_container_swap(m.c));
  EXPECT_EQ(m.first(), 3);
  wharf_constant_map_free(map);
}

// --- output structs --------------------------------------------------------------------------

TEST(AbiStructSize, OutputStructsAreWrittenOnlyAsFarAsTheCallersSize) {
  wharf_runtime* rt = host_runtime();
  std::vector<unsigned char> raw(sizeof(wharf_memory_stats) + 16, 0xAB);
  auto* ms = reinterpret_cast<wharf_memory_stats*>(raw.data());
  ms->struct_size = uint32_t(raw.size());  // a newer caller's, larger struct
  ASSERT_OK(wharf_runtime_get_memory_stats(rt, ms));
  EXPECT_EQ(ms->struct_size, raw.size());
  EXPECT_EQ(raw[sizeof(wharf_memory_stats)], 0xAB);  // nothing past the library's struct
  ms->struct_size = offsetof(wharf_memory_stats, device_current) + 3;
  St cut(wharf_runtime_get_memory_stats(rt, ms));
  EXPECT_EQ(cut.code(), WHARF_INVALID_ARGUMENT);
  EXPECT_TRUE(cut.has("device_current")) << cut.msg();
  wharf_runtime_free(rt);
}

// --- tensor views and declarations (struct_size first, as every struct) ------------------

TEST(AbiTensorView, SizeMustBeSetPrefixesAreReadAndNewerFieldsRefused) {
  wharf_constant_map* map = nullptr;
  ASSERT_OK(wharf_constant_map_create(&map));
  float x[4] = {1, 2, 3, 4};
  int64_t shape[1] = {4};
  wharf_tensor_view v = f32_view(x, 1, shape);
  ASSERT_OK(wharf_constant_map_set(map, "full", &v));
  // An input view must say its size: 0 is refused, naming the struct.
  v.struct_size = 0;
  St zero(wharf_constant_map_set(map, "zero", &v));
  EXPECT_EQ(zero.code(), WHARF_INVALID_ARGUMENT);
  EXPECT_TRUE(zero.has("constant 'zero'") && zero.has("struct_size 0") && zero.has("wharf_tensor_view")) << zero.msg();
  // A prefix that stops before byte_offset: byte_offset takes its default (0), whatever
  // sits there.
  v.struct_size = offsetof(wharf_tensor_view, byte_offset);
  v.byte_offset = 8;
  ASSERT_OK(wharf_constant_map_set(map, "prefix", &v));
  wharf_tensor_view found{};
  std::memset(&found, 0, sizeof found);
  ASSERT_OK(wharf_constant_map_find(map, "prefix", &found));
  EXPECT_EQ(found.data, static_cast<void*>(x));
  v.byte_offset = 0;
  // Cut inside byte_offset.
  v.struct_size = offsetof(wharf_tensor_view, byte_offset) + 4;
  St cut(wharf_constant_map_set(map, "cut", &v));
  EXPECT_EQ(cut.code(), WHARF_INVALID_ARGUMENT);
  EXPECT_TRUE(cut.has("constant 'cut'") && cut.has("byte_offset")) << cut.msg();
  // Flags: WHARF_VIEW_READ_ONLY is accepted on an input (it is only read); bits this
  // library does not know are refused.
  v.struct_size = sizeof v;
  v.flags = WHARF_VIEW_READ_ONLY;
  ASSERT_OK(wharf_constant_map_set(map, "ro", &v));
  v.flags = 0x10;
  St bits(wharf_constant_map_set(map, "bits", &v));
  EXPECT_EQ(bits.code(), WHARF_UNSUPPORTED);
  EXPECT_TRUE(bits.has("constant 'bits'") && bits.has("flags 16")) << bits.msg();
  // A newer caller's view with a non-zero field this library does not know.
  struct {
    wharf_tensor_view v;
    uint64_t future;
  } newer;
  std::memset(&newer, 0, sizeof newer);
  newer.v = f32_view(x, 1, shape);
  newer.v.struct_size = sizeof newer;
  newer.future = 1;
  St nz(wharf_constant_map_set(map, "newer", &newer.v));
  EXPECT_EQ(nz.code(), WHARF_UNSUPPORTED);
  EXPECT_TRUE(nz.has("wharf_tensor_view") && nz.has("byte " + std::to_string(sizeof(wharf_tensor_view)))) << nz.msg();
  newer.future = 0;
  ASSERT_OK(wharf_constant_map_set(map, "newer", &newer.v));
  EXPECT_EQ(wharf_constant_map_num_entries(map), 4u);
  wharf_constant_map_free(map);
}

TEST(AbiLayout, EveryStructBeginsWithStructSize) {
  EXPECT_EQ(offsetof(wharf_tensor_view, struct_size), 0u);
  EXPECT_EQ(offsetof(wharf_constant_decl, struct_size), 0u);
  EXPECT_EQ(offsetof(wharf_state_decl, struct_size), 0u);
  EXPECT_EQ(offsetof(wharf_runtime_options, struct_size), 0u);
  EXPECT_EQ(offsetof(wharf_container_options, struct_size), 0u);
  EXPECT_EQ(offsetof(wharf_update_options, struct_size), 0u);
  EXPECT_EQ(offsetof(wharf_session_options, struct_size), 0u);
  EXPECT_EQ(offsetof(wharf_device_info, struct_size), 0u);
  EXPECT_EQ(offsetof(wharf_memory_stats, struct_size), 0u);
  EXPECT_EQ(offsetof(wharf_constant_info, struct_size), 0u);
  EXPECT_EQ(offsetof(wharf_state_info, struct_size), 0u);
  EXPECT_EQ(offsetof(wharf_weight_store_stats, struct_size), 0u);
  EXPECT_EQ(offsetof(wharf_model_options, struct_size), 0u);
  EXPECT_EQ(offsetof(wharf_offloader_options, struct_size), 0u);
  EXPECT_EQ(offsetof(wharf_offloader_budget, struct_size), 0u);
  EXPECT_EQ(offsetof(wharf_replica_group_stats, struct_size), 0u);
#if UINTPTR_MAX == 0xFFFFFFFFFFFFFFFFu
  // The 0.3 layouts on LP64, as the bindings declare them (rust/src/sys.rs checks the same).
  EXPECT_EQ(sizeof(wharf_tensor_view), 56u);
  EXPECT_EQ(offsetof(wharf_tensor_view, flags), 4u);
  EXPECT_EQ(offsetof(wharf_tensor_view, data), 8u);
  EXPECT_EQ(offsetof(wharf_tensor_view, byte_offset), 48u);
  EXPECT_EQ(sizeof(wharf_constant_decl), 40u);
  EXPECT_EQ(offsetof(wharf_constant_decl, fqn), 8u);
  EXPECT_EQ(offsetof(wharf_constant_decl, flags), 36u);
  EXPECT_EQ(sizeof(wharf_state_decl), 40u);
  EXPECT_EQ(offsetof(wharf_state_decl, initial), 32u);
#endif
}

TEST(AbiTensorView, ByteOffsetAndStridesTravelAndUpdatesSayWhatTheyNeed) {
  wharf_constant_map* map = nullptr;
  ASSERT_OK(wharf_constant_map_create(&map));
  float buf[8] = {0, 0, 1, 2, 3, 4, 5, 6};
  int64_t shape[1] = {4}, strides[1] = {2};
  wharf_tensor_view v = f32_view(buf, 1, shape);
  v.byte_offset = 2 * sizeof(float);
  ASSERT_OK(wharf_constant_map_set(map, "w", &v));
  wharf_tensor_view out{};
  std::memset(&out, 0, sizeof out);  // struct_size 0: the 0.3 layout
  ASSERT_OK(wharf_constant_map_find(map, "w", &out));
  EXPECT_EQ(out.data, static_cast<void*>(buf + 2));
  EXPECT_EQ(out.byte_offset, 0u);
  EXPECT_EQ(out.struct_size, sizeof out);
  // NULL data with an offset is refused.
  wharf_tensor_view bad = f32_view(nullptr, 1, shape);
  bad.byte_offset = 4;
  St nul(wharf_constant_map_set(map, "bad", &bad));
  EXPECT_EQ(nul.code(), WHARF_INVALID_ARGUMENT);

  // A strided view is carried (and saved contiguous) but an update refuses it, naming it.
  wharf_constant_map* strided = nullptr;
  ASSERT_OK(wharf_constant_map_create(&strided));
  wharf_tensor_view s = f32_view(buf, 1, shape);
  s.strides = strides;
  ASSERT_OK(wharf_constant_map_set(strided, "w", &s));
  ASSERT_OK(wharf_constant_map_find(strided, "w", &out));
  ASSERT_NE(out.strides, nullptr);
  EXPECT_EQ(out.strides[0], 2);
  Model m(9);
  St st(wharf_container_update(m.c, strided, nullptr));
  EXPECT_EQ(st.code(), WHARF_INVALID_ARGUMENT);
  EXPECT_TRUE(st.has("'w'") && st.has("contiguous")) << st.msg();
  // The offset view updates fine.
  ASSERT_OK(wharf_container_update(m.c, map, nullptr));
  ASSERT_OK(wharf_container_swap(m.c));
  EXPECT_EQ(m.first(), 1);
  wharf_constant_map_free(strided);
  wharf_constant_map_free(map);
}

TEST(AbiTensorView, RunTensorFillsStridesAndTheCallersSize) {
  float data[6] = {1, 2, 3, 4, 5, 6};
  int64_t shape[2] = {2, 3};
  wharf_runtime* rt = host_runtime();
  wharf_constant_map* map = nullptr;
  ASSERT_OK(wharf_constant_map_create(&map));
  wharf_tensor_view v = f32_view(data, 2, shape);
  ASSERT_OK(wharf_constant_map_set(map, "w", &v));
  wharf_container* c = nullptr;
  ASSERT_OK(wharf_container_create_from_map(rt, map, nullptr, &c));
  wharf_constant_map_free(map);
  wharf_run* run = nullptr;
  ASSERT_OK(wharf_run_begin(c, nullptr, nullptr, &run));
  wharf_tensor_view out{};
  std::memset(&out, 0xEE, sizeof out);  // garbage, struct_size included: the 0.3 layout
  ASSERT_OK(wharf_run_get_tensor(run, "w", &out));
  EXPECT_EQ(out.struct_size, sizeof out);
  ASSERT_EQ(out.ndim, 2);
  ASSERT_NE(out.strides, nullptr);
  EXPECT_EQ(out.strides[0], 3);
  EXPECT_EQ(out.strides[1], 1);
  EXPECT_EQ(out.byte_offset, 0u);
  // Every stated size below the 0.3 layout is garbage (no header had a smaller view), also
  // where it falls on a field boundary: the whole 0.3 layout is written. Before, a size of 8
  // or 16 (an uninitialised view's luck) was trusted and `data` left as it was: a fold
  // callback with uninitialised views read a null pointer now and then (CI, session 9).
  const void* expected_data = nullptr;
  {
    wharf_tensor_view ref{};
    ASSERT_OK(wharf_run_get_tensor(run, "w", &ref));
    expected_data = ref.data;
  }
  std::vector<uint32_t> sizes;
  for (uint32_t n = 0; n <= sizeof(wharf_tensor_view) + 8; ++n) sizes.push_back(n);
  for (uint32_t n : {1001u, 4095u, 4096u, 4097u, 0xEEEEEEEEu, 0xFFFFFFFFu, 0x80000000u}) sizes.push_back(n);
  for (uint32_t n : sizes) {
    std::memset(&out, 0, sizeof out);
    out.struct_size = n;
    ASSERT_OK(wharf_run_get_tensor(run, "w", &out));
    EXPECT_EQ(out.struct_size, sizeof out) << "stated " << n;
    EXPECT_EQ(out.data, expected_data) << "stated " << n;
    EXPECT_EQ(out.ndim, 2) << "stated " << n;
    EXPECT_NE(out.strides, nullptr) << "stated " << n;
  }
  ASSERT_OK(wharf_run_end(run));
  wharf_container_free(c);
  wharf_runtime_free(rt);
}

TEST(AbiDeclArrays, ElementSizeComesFromTheFirstElementAndMustAgree) {
  wharf_runtime* rt = host_runtime();
  int64_t shape[1] = {4};
  // Positional declarations, struct_size first.
  wharf_constant_decl decls[2] = {
      {sizeof(wharf_constant_decl), "a", WHARF_DTYPE_F32, 1, shape, WHARF_PLACEMENT_DEVICE, 0},
      {sizeof(wharf_constant_decl), "b", WHARF_DTYPE_F32, 1, shape, WHARF_PLACEMENT_DEVICE, 0}};
  wharf_container_options o;
  wharf_container_options_init(&o);
  o.constants = decls;
  o.num_constants = 2;
  wharf_container* c = nullptr;
  ASSERT_OK(wharf_container_create(rt, &o, &c));
  EXPECT_EQ(wharf_container_find_constant(c, "b"), 1);
  wharf_container_free(c);
  // A first element without its size: refused, naming it.
  decls[0].struct_size = 0;
  St unset(wharf_container_create(rt, &o, &c));
  EXPECT_EQ(unset.code(), WHARF_INVALID_ARGUMENT);
  EXPECT_TRUE(unset.has("constant declaration 0") && unset.has("struct_size 0")) << unset.msg();

  // Disagreeing sizes in one array.
  wharf_constant_decl mixed[2] = {f32_decl("a", shape), f32_decl("b", shape)};
  mixed[1].struct_size = 0;
  o.constants = mixed;
  St st(wharf_container_create(rt, &o, &c));
  EXPECT_EQ(st.code(), WHARF_INVALID_ARGUMENT);
  EXPECT_TRUE(st.has("constant declaration 1") && st.has("element 0")) << st.msg();

  // A newer caller's declarations: larger elements, read at their own stride.
  struct NewerDecl {
    wharf_constant_decl d;
    uint64_t future;
  } newer[2];
  std::memset(newer, 0, sizeof newer);
  newer[0].d = f32_decl("a", shape);
  newer[1].d = f32_decl("b", shape);
  newer[0].d.struct_size = newer[1].d.struct_size = sizeof(NewerDecl);
  o.constants = &newer[0].d;
  ASSERT_OK(wharf_container_create(rt, &o, &c));
  wharf_constant_info info;
  info.struct_size = sizeof info;
  ASSERT_OK(wharf_container_get_constant_info(c, 1, &info));
  EXPECT_STREQ(info.fqn, "b");
  wharf_container_free(c);
  newer[1].future = 5;
  St nz(wharf_container_create(rt, &o, &c));
  EXPECT_EQ(nz.code(), WHARF_UNSUPPORTED);
  EXPECT_TRUE(nz.has("constant declaration 1: byte " + std::to_string(sizeof(wharf_constant_decl)))) << nz.msg();

  // State declarations and their initial views follow the same rules.
  float init[4] = {1, 1, 1, 1};
  wharf_tensor_view iv = f32_view(init, 1, shape);
  iv.struct_size = 2;  // cuts struct_size itself
  wharf_state_decl sd;
  std::memset(&sd, 0, sizeof sd);
  sd.struct_size = sizeof sd;
  sd.fqn = "h";
  sd.dtype = WHARF_DTYPE_F32;
  sd.ndim = 1;
  sd.shape = shape;
  sd.initial = &iv;
  wharf_container_options_init(&o);
  o.states = &sd;
  o.num_states = 1;
  St sv(wharf_container_create(rt, &o, &c));
  EXPECT_EQ(sv.code(), WHARF_INVALID_ARGUMENT);
  EXPECT_TRUE(sv.has("initial value of state 'h'")) << sv.msg();
  iv.struct_size = sizeof iv;
  ASSERT_OK(wharf_container_create(rt, &o, &c));
  EXPECT_EQ(wharf_container_num_states(c), 1u);
  wharf_container_free(c);
  wharf_runtime_free(rt);
}

}  // namespace

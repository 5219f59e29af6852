// SPDX-License-Identifier: Apache-2.0
// Slabs (Container::allocate_and_copy, docs/decisions.md): the small constants one update
// copies from pageable memory or a file (device placement, at most 4 MiB, a multiple of 256
// bytes, a container without a weight store) share allocations of at most 16 MiB, back to back
// in map order, so that the transfer engine carries each slab's bytes in one DMA per staging
// block instead of one per constant. What must not change: the values, copy-on-write
// (constants an update leaves out keep their storage), rollback, exact accounting (no
// padding), all-or-nothing on failure (out of memory inside a slab, a cancelled copy). What
// does: a slab goes back to the device when its last constant goes. Every test runs on the
// host backend and, where a GPU is visible, on CUDA, where the merged DMAs are real copies.
#define WHARF_EXPERIMENTAL
#include <gtest/gtest.h>

#include <unistd.h>

#include <cstdio>
#include <cstring>
#include <string>
#include <thread>
#include <vector>

#include "common/test_support.h"
#include "wharf/wharf.h"

namespace {

using wharf_test::St;

constexpr uint64_t KiB = 1024, MiB = 1024 * 1024;
constexpr uint64_t kSlabBytes = 16 * MiB;  // Container's kSlabBytes

// Float tensors in pageable memory, each filled with a pattern of (its index, a version), and
// a map over them.
struct Tensors {
  std::vector<std::string> names;
  std::vector<uint64_t> bytes;
  std::vector<int64_t> shapes;
  std::vector<std::vector<float>> data;
  wharf_constant_map* map = nullptr;

  Tensors(const std::vector<std::string>& n, const std::vector<uint64_t>& b, int version) : names(n), bytes(b) {
    EXPECT_EQ(wharf_constant_map_create(&map), nullptr);
    shapes.resize(names.size());
    for (size_t i = 0; i < names.size(); ++i) {
      shapes[i] = int64_t(bytes[i] / 4);
      data.emplace_back(size_t(shapes[i]));
      for (size_t k = 0; k < data[i].size(); ++k) data[i][k] = float(version * 1000000 + int(i) * 1000 + int(k % 997));
    }
    for (size_t i = 0; i < names.size(); ++i) {
      const wharf_tensor_view v = wharf_test::f32_view(data[i].data(), 1, &shapes[i]);
      St st(wharf_constant_map_set(map, names[i].c_str(), &v));
      EXPECT_EQ(st.code(), WHARF_OK) << st.msg();
    }
  }
  ~Tensors() { wharf_constant_map_free(map); }
  Tensors(const Tensors&) = delete;
  Tensors& operator=(const Tensors&) = delete;
  uint64_t total() const {
    uint64_t t = 0;
    for (uint64_t b : bytes) t += b;
    return t;
  }
};

class Slabs : public wharf_test::BackendTest {
 protected:
  // A 16 MiB ring of 4 MiB chunks in blocks of two: slabs cross chunk and block boundaries.
  Slabs() { config = {0, 3, 16 * MiB}; }

  uint64_t constants_bytes(wharf_runtime* r) {
    wharf_memory_stats ms;
    std::memset(&ms, 0, sizeof ms);
    ms.struct_size = sizeof ms;
    St st(wharf_runtime_get_memory_stats(r, &ms));
    return ms.current[WHARF_MEM_CONSTANTS];
  }
  wharf_container* load(wharf_runtime* r, const Tensors& t) {
    wharf_container_options o;
    wharf_container_options_init(&o);
    o.name = "m";
    wharf_container* c = nullptr;
    St st(wharf_container_create_from_map(r, t.map, &o, &c));
    EXPECT_EQ(st.code(), WHARF_OK) << st.msg();
    return c;
  }
  // Checks every byte of `names` (of the expected tensors `t`, by name) through one run, and
  // returns their device addresses.
  std::vector<const char*> check(wharf_container* c, const std::vector<const Tensors*>& t) {
    std::vector<const char*> where;
    wharf_run* run = nullptr;
    St st(wharf_run_begin(c, nullptr, nullptr, &run));
    EXPECT_EQ(st.code(), WHARF_OK) << st.msg();
    if (!run) return where;
    for (const Tensors* ts : t)
      for (size_t i = 0; i < ts->names.size(); ++i) {
        std::vector<float> got(ts->data[i].size(), -1.0f);
        St rd(wharf_run_read(run, ts->names[i].c_str(), 0, got.data(), ts->bytes[i]));
        EXPECT_EQ(rd.code(), WHARF_OK) << rd.msg();
        EXPECT_TRUE(got == ts->data[i]) << ts->names[i] << " does not hold the bytes last written to it";
        wharf_tensor_view v{};
        std::memset(&v, 0, sizeof v);
        v.struct_size = sizeof v;
        St gt(wharf_run_get_tensor(run, ts->names[i].c_str(), &v));
        EXPECT_EQ(gt.code(), WHARF_OK) << gt.msg();
        where.push_back(static_cast<const char*>(v.data));
      }
    EXPECT_EQ(wharf_run_end(run), nullptr);
    return where;
  }
};

std::vector<std::string> numbered(const char* prefix, size_t n) {
  std::vector<std::string> out;
  for (size_t i = 0; i < n; ++i) out.push_back(prefix + std::to_string(i));
  return out;
}

// The bench's mix of small tensors (0.5-4 MiB), and two that keep their own allocation: one
// of 400 bytes (not a multiple of 256) and one above 4 MiB. Loaded, then updated whole: each
// time the small ones lie back to back in map order, in slabs of at most 16 MiB, every byte
// arrives, and the accounting is exactly the constants' bytes.
TEST_P(Slabs, SmallConstantsOfOneUpdateLieBackToBackInSlabs) {
  const double mib[] = {0.5, 1, 2, 4, 0.75, 3, 1.5, 2.5};
  std::vector<std::string> names;
  std::vector<uint64_t> sizes;
  for (size_t i = 0; i < 20; ++i) {
    names.push_back("blocks." + std::to_string(i) + ".norm");
    sizes.push_back(uint64_t(mib[i % 8] * double(MiB)));
    if (i == 6) {
      names.push_back("odd");
      sizes.push_back(400);
    }
    if (i == 13) {
      names.push_back("big");
      sizes.push_back(4 * MiB + 256);
    }
  }
  // The packed constants, in map order, lie back to back within a slab; a new slab begins
  // when the next one would pass 16 MiB.
  auto verify = [&](wharf_container* c, const Tensors& t) {
    const std::vector<const char*> where = check(c, {&t});
    ASSERT_EQ(where.size(), names.size());
    EXPECT_EQ(constants_bytes(rt), t.total()) << "slabs are the constants' bytes, no padding";
    uint64_t in_slab = 0;
    size_t prev = SIZE_MAX, slabs = 0;
    for (size_t i = 0; i < names.size(); ++i) {
      if (names[i] == "odd" || names[i] == "big") continue;
      if (prev == SIZE_MAX || in_slab + sizes[i] > kSlabBytes) {
        ++slabs;
        in_slab = 0;
      } else {
        EXPECT_EQ(where[i], where[prev] + sizes[prev]) << names[i] << " does not follow " << names[prev];
      }
      in_slab += sizes[i];
      prev = i;
    }
    EXPECT_EQ(slabs, 3u);
  };
  Tensors v1(names, sizes, 1), v2(names, sizes, 2);
  wharf_container* c = load(rt, v1);
  ASSERT_NE(c, nullptr);
  {
    SCOPED_TRACE("loaded");
    verify(c, v1);
  }
  ASSERT_OK(wharf_container_update(c, v2.map, nullptr));
  ASSERT_OK(wharf_container_swap(c));
  ASSERT_OK(wharf_runtime_synchronize(rt));
  ASSERT_OK(wharf_container_free_inactive(c));
  {
    SCOPED_TRACE("updated");
    verify(c, v2);
  }
  wharf_container_free(c);
}

// Copy-on-write and rollback over a slab: an update of one of its constants leaves the
// others where they are; the slab stays allocated, whole, while any of its constants lives
// (the documented cost), and goes when the last one is replaced and its generation freed.
TEST_P(Slabs, ASlabStaysUntilItsLastConstantGoes) {
  const std::vector<std::string> abc = {"a", "b", "c"};
  const std::vector<uint64_t> sizes(3, 64 * KiB);
  Tensors v1(abc, sizes, 1);
  wharf_container* c = load(rt, v1);
  const std::vector<const char*> first = check(c, {&v1});
  ASSERT_EQ(first.size(), 3u);
  EXPECT_EQ(first[1], first[0] + 64 * KiB);
  EXPECT_EQ(first[2], first[1] + 64 * KiB);
  EXPECT_EQ(constants_bytes(rt), 192 * KiB);

  Tensors b2({"b"}, {64 * KiB}, 2);
  ASSERT_OK(wharf_container_update(c, b2.map, nullptr));
  EXPECT_EQ(constants_bytes(rt), 256 * KiB) << "copy-on-write: only b's bytes are new";
  ASSERT_OK(wharf_container_swap(c));
  Tensors a1({"a"}, {64 * KiB}, 1), c1({"c"}, {64 * KiB}, 1);
  // Tensors number their patterns by position: a1 and c1 must match v1's a and c.
  a1.data[0] = v1.data[0];
  c1.data[0] = v1.data[2];
  const std::vector<const char*> after = check(c, {&a1, &b2, &c1});
  ASSERT_EQ(after.size(), 3u);
  EXPECT_EQ(after[0], first[0]) << "a kept its storage";
  EXPECT_EQ(after[2], first[2]) << "c kept its storage";
  ASSERT_OK(wharf_container_swap(c));  // roll back to v1, whole
  check(c, {&v1});
  ASSERT_OK(wharf_container_swap(c));
  ASSERT_OK(wharf_runtime_synchronize(rt));  // the runs above have ended on the device too
  ASSERT_OK(wharf_container_free_inactive(c));
  EXPECT_EQ(constants_bytes(rt), 256 * KiB) << "the slab stays while a and c live in it";

  Tensors ac3({"a", "c"}, {64 * KiB, 64 * KiB}, 3);
  ASSERT_OK(wharf_container_update(c, ac3.map, nullptr));
  ASSERT_OK(wharf_container_swap(c));
  ASSERT_OK(wharf_runtime_synchronize(rt));
  ASSERT_OK(wharf_container_free_inactive(c));
  EXPECT_EQ(constants_bytes(rt), 192 * KiB) << "the first slab went with its last constant";
  Tensors a3({"a"}, {64 * KiB}, 3), c3({"c"}, {64 * KiB}, 3);
  a3.data[0] = ac3.data[0];
  c3.data[0] = ac3.data[1];
  const std::vector<const char*> last = check(c, {&a3, &b2, &c3});
  ASSERT_EQ(last.size(), 3u);
  EXPECT_EQ(last[2], last[0] + 64 * KiB) << "a and c of one update share a new slab";
  wharf_container_free(c);
  EXPECT_EQ(constants_bytes(rt), 0u);
}

// Out of memory inside an update of two slabs: the first slab fits, the second does not.
// The update fails naming the constants that did not fit, nothing is staged, every byte it
// allocated is released, and the active weights are untouched.
TEST_P(Slabs, OutOfMemoryInsideASlabChangesNothing) {
  // 8 x 4 MiB = two slabs of 16 MiB; room for the model and 20 MiB more.
  wharf_runtime* r = wharf_test::make_runtime(GetParam(), {52 * MiB, 3, 16 * MiB}, &why);
  ASSERT_NE(r, nullptr) << why;
  const std::vector<std::string> names = numbered("k", 8);
  const std::vector<uint64_t> sizes(8, 4 * MiB);
  Tensors v1(names, sizes, 1), v2(names, sizes, 2);
  wharf_container* c = load(r, v1);
  const uint64_t before = constants_bytes(r);
  EXPECT_EQ(before, 32 * MiB);
  St st(wharf_container_update(c, v2.map, nullptr));
  EXPECT_EQ(st.code(), WHARF_OUT_OF_MEMORY) << st.msg();
  EXPECT_NE(st.msg().find("constants 'k4' to 'k7'"), std::string::npos) << "what did not fit: " << st.msg();
  EXPECT_EQ(constants_bytes(r), before) << "the failed update's slab and slots were released";
  EXPECT_EQ(wharf_container_has_staged(c), 0);
  EXPECT_CODE(wharf_container_swap(c), WHARF_FAILED_PRECONDITION);
  check(c, {&v1});
  // Half of it fits: one slab.
  Tensors half(std::vector<std::string>(names.begin(), names.begin() + 4), std::vector<uint64_t>(4, 4 * MiB), 3);
  ASSERT_OK(wharf_container_update(c, half.map, nullptr));
  ASSERT_OK(wharf_container_swap(c));
  EXPECT_EQ(constants_bytes(r), 48 * MiB);
  wharf_container_free(c);
  wharf_runtime_free(r);
}

int32_t cancel_first(uint64_t done, uint64_t total, void* user) {
  auto* seen = static_cast<std::vector<uint64_t>*>(user);
  seen->push_back(done);
  return done < total ? 1 : 0;
}

// Cancelled mid-copy (the first progress call, at most 64 MiB in) while slabs are being
// filled: nothing staged, nothing left allocated, and the next update goes through.
TEST_P(Slabs, CancelledMidCopyChangesNothing) {
  const std::vector<std::string> names = numbered("s", 40);
  const std::vector<uint64_t> sizes(40, 2 * MiB);  // 80 MiB in 5 slabs
  Tensors v1(names, sizes, 1), v2(names, sizes, 2);
  wharf_container* c = load(rt, v1);
  const uint64_t before = constants_bytes(rt);
  std::vector<uint64_t> seen;
  wharf_update_options o;
  wharf_update_options_init(&o);
  o.progress = cancel_first;
  o.progress_user = &seen;
  St st(wharf_container_update(c, v2.map, &o));
  EXPECT_EQ(st.code(), WHARF_CANCELLED) << st.msg();
  ASSERT_FALSE(seen.empty());
  EXPECT_LT(seen.back(), v2.total()) << "cancelled mid-copy, not at the end";
  EXPECT_EQ(constants_bytes(rt), before);
  EXPECT_EQ(wharf_container_has_staged(c), 0);
  check(c, {&v1});
  ASSERT_OK(wharf_container_update(c, v2.map, nullptr));
  ASSERT_OK(wharf_container_swap(c));
  check(c, {&v2});
  wharf_container_free(c);
}

// From a file: the small tensors of wharf_container_update_from_file are read with pread
// into the ring and packed into slabs like pageable sources.
TEST_P(Slabs, AnUpdateFromAFilePacksItsSmallTensors) {
  const std::vector<std::string> names = numbered("f", 9);  // 13.5 MiB: one slab
  std::vector<uint64_t> sizes;
  for (size_t i = 0; i < names.size(); ++i) sizes.push_back((i % 3 + 1) * 768 * KiB);
  Tensors v1(names, sizes, 1), v2(names, sizes, 2);
  const std::string path = ::testing::TempDir() + "wharf_slab_test_" + std::to_string(::getpid()) +
                           (GetParam() == WHARF_BACKEND_CUDA ? "_cuda" : "_host") + ".safetensors";
  ASSERT_OK(wharf_constant_map_save_safetensors(v2.map, path.c_str()));
  wharf_container* c = load(rt, v1);
  ASSERT_OK(wharf_container_update_from_file(c, path.c_str(), nullptr));
  ASSERT_OK(wharf_container_swap(c));
  ASSERT_OK(wharf_runtime_synchronize(rt));
  ASSERT_OK(wharf_container_free_inactive(c));
  const std::vector<const char*> where = check(c, {&v2});
  ASSERT_EQ(where.size(), names.size());
  for (size_t i = 1; i < names.size(); ++i) EXPECT_EQ(where[i], where[i - 1] + sizes[i - 1]) << names[i];
  EXPECT_EQ(constants_bytes(rt), v2.total());
  wharf_container_free(c);
  ::unlink(path.c_str());
}

WHARF_TEST_ON_BACKENDS(Slabs);

}  // namespace

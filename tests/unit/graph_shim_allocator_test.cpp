// SPDX-License-Identifier: Apache-2.0
// wharf_aoti_set_allocator (src/models/aoti/shim_host.h): while installed on a thread, the
// CUDA tensors the shim allocates come from the caller and go back to it when the last handle
// goes; the graphs' pool and per-generation folded constants stand on it. No GPU is needed:
// with an allocator installed the shim makes no CUDA call for the allocation. Skipped when
// libwharf_aoti_shim.so is not built or cannot be loaded here.
#include <dlfcn.h>
#include <unistd.h>
#include <gtest/gtest.h>

#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <string>
#include <vector>

#include "common/scoped_env.h"
#include "common/test_paths.h"
#include "models/aoti/shim_host.h"

namespace {

using H = void*;

struct Shim {
  void* lib = nullptr;
  int32_t (*empty)(int64_t, const int64_t*, const int64_t*, int32_t, int32_t, int32_t, H*) = nullptr;
  int32_t (*del)(H) = nullptr;
  int32_t (*data_ptr)(H, void**) = nullptr;
  int32_t (*new_handle)(H, H*) = nullptr;
  wharf_aoti_set_allocator_fn set_allocator = nullptr;
  const char* (*last_error)() = nullptr;
  std::string why;
};

const Shim& shim() {
  static Shim s = [] {
    Shim r;
    r.lib = wharf_test::open_aoti_shim(&r.why);
    if (!r.lib) return r;
    r.empty = reinterpret_cast<decltype(r.empty)>(dlsym(r.lib, "aoti_torch_empty_strided"));
    r.del = reinterpret_cast<decltype(r.del)>(dlsym(r.lib, "aoti_torch_delete_tensor_object"));
    r.data_ptr = reinterpret_cast<decltype(r.data_ptr)>(dlsym(r.lib, "aoti_torch_get_data_ptr"));
    r.new_handle = reinterpret_cast<decltype(r.new_handle)>(dlsym(r.lib, "aoti_torch_new_tensor_handle"));
    r.set_allocator = reinterpret_cast<wharf_aoti_set_allocator_fn>(dlsym(r.lib, "wharf_aoti_set_allocator"));
    r.last_error = reinterpret_cast<decltype(r.last_error)>(dlsym(r.lib, "wharf_aoti_last_error"));
    if (!r.empty || !r.del || !r.data_ptr || !r.new_handle || !r.set_allocator || !r.last_error)
      r.why = "an entry point is missing (wharf_aoti_set_allocator must be exported)";
    return r;
  }();
  return s;
}

// A fake allocator: hands out addresses from a host array it owns and records the calls.
struct Fake {
  std::vector<char> memory = std::vector<char>(1 << 16);
  size_t used = 0;
  std::vector<uint64_t> allocs;
  std::vector<std::pair<void*, uint64_t>> frees;
  bool fail = false;
  static int32_t alloc(uint64_t bytes, void** out, void* user) {
    Fake* f = static_cast<Fake*>(user);
    if (f->fail) return 1;
    f->allocs.push_back(bytes);
    *out = f->memory.data() + f->used;
    f->used += (bytes + 255) / 256 * 256;
    return 0;
  }
  static void free(void* p, uint64_t bytes, void* user) { static_cast<Fake*>(user)->frees.push_back({p, bytes}); }
};

constexpr int32_t kF32 = 6, kCuda = 1;

TEST(GraphShimAllocator, AllocationsComeFromAndReturnToTheInstalledAllocator) {
  const Shim& s = shim();
  if (!s.lib || !s.why.empty()) GTEST_SKIP() << "libwharf_aoti_shim.so not usable here: " << s.why;
  Fake fake;
  const wharf_aoti_allocator a{sizeof(wharf_aoti_allocator), &Fake::alloc, &Fake::free, &fake};
  s.set_allocator(&a);
  const int64_t sizes[2] = {3, 5};
  H t = nullptr;
  ASSERT_EQ(s.empty(2, sizes, nullptr, kF32, kCuda, 0, &t), 0) << s.last_error();
  ASSERT_EQ(fake.allocs, std::vector<uint64_t>{60});
  void* p = nullptr;
  ASSERT_EQ(s.data_ptr(t, &p), 0);
  EXPECT_EQ(p, fake.memory.data());
  // A second handle shares the storage: it goes back only when the last handle does.
  H t2 = nullptr;
  ASSERT_EQ(s.new_handle(t, &t2), 0);
  ASSERT_EQ(s.del(t), 0);
  EXPECT_TRUE(fake.frees.empty());
  ASSERT_EQ(s.del(t2), 0);
  ASSERT_EQ(fake.frees.size(), 1u);
  EXPECT_EQ(fake.frees[0].first, fake.memory.data());
  EXPECT_EQ(fake.frees[0].second, 60u);
  // A refusal fails the shim call with a reason; nothing is handed out.
  fake.fail = true;
  H t3 = reinterpret_cast<H>(0x1);
  EXPECT_EQ(s.empty(2, sizes, nullptr, kF32, kCuda, 0, &t3), 1);
  EXPECT_NE(std::string(s.last_error()).find("Wharf's allocator"), std::string::npos) << s.last_error();
  EXPECT_EQ(fake.frees.size(), 1u);
  // Uninstalled: host tensors never used it, and it is not called again.
  s.set_allocator(nullptr);
  fake.fail = false;
  H h = nullptr;
  ASSERT_EQ(s.empty(2, sizes, nullptr, kF32, /*cpu*/ 0, 0, &h), 0) << s.last_error();
  ASSERT_EQ(s.del(h), 0);
  EXPECT_EQ(fake.allocs.size(), 1u);
}

TEST(GraphShimAllocator, HostTensorsIgnoreTheAllocator) {
  const Shim& s = shim();
  if (!s.lib || !s.why.empty()) GTEST_SKIP() << "libwharf_aoti_shim.so not usable here: " << s.why;
  Fake fake;
  const wharf_aoti_allocator a{sizeof(wharf_aoti_allocator), &Fake::alloc, &Fake::free, &fake};
  s.set_allocator(&a);
  const int64_t sizes[1] = {16};
  H h = nullptr;
  ASSERT_EQ(s.empty(1, sizes, nullptr, kF32, /*cpu*/ 0, 0, &h), 0) << s.last_error();
  ASSERT_EQ(s.del(h), 0);
  s.set_allocator(nullptr);
  EXPECT_TRUE(fake.allocs.empty());
  EXPECT_TRUE(fake.frees.empty());
}

// The shim's GEMM modes (WHARF_AOTI_GEMV, WHARF_AOTI_GEMV_PDL) are read when it loads; it has no
// caller to fail then, so a value it does not know is said on stderr, naming the variable, and
// the default applies (before, atoi guessed: "on" read as 0). In a fresh process (the shim
// reads them once): a death test of the threadsafe style re-runs this binary for it.
TEST(ShimEnvironment, AnUnknownGemmModeIsSaidAndTheDefaultApplies) {
  bool built = false;
  for (const char* rel : {"/libwharf_aoti_shim.so", "/../libwharf_aoti_shim.so"})
    built |= access((wharf_test::binary_dir() + rel).c_str(), R_OK) == 0;
  if (!built) GTEST_SKIP() << "libwharf_aoti_shim.so is not built here (no CUDA)";
  GTEST_FLAG_SET(death_test_style, "threadsafe");
  wharf_test::ScopedEnv env({{"WHARF_AOTI_GEMV", "9"}, {"WHARF_AOTI_GEMV_PDL", "on"}});
  EXPECT_EXIT(
      {
        std::string why;
        void* lib = wharf_test::open_aoti_shim(&why);
        auto gemv =
            lib ? reinterpret_cast<wharf_aoti_gemm_use_gemv_fn>(dlsym(lib, "wharf_aoti_gemm_use_gemv")) : nullptr;
        auto pdl = lib ? reinterpret_cast<wharf_aoti_gemm_use_pdl_fn>(dlsym(lib, "wharf_aoti_gemm_use_pdl")) : nullptr;
        std::fprintf(stderr, "%s\n", why.c_str());
        std::_Exit(gemv && pdl ? 10 * gemv(1) + pdl(0) : 99);  // the modes in force: 1 and 0
      },
      ::testing::ExitedWithCode(10),
      "WHARF_AOTI_GEMV='9' in the environment is not 0, 1, 2 or 3; using 1.*"
      "WHARF_AOTI_GEMV_PDL='on' in the environment is not 0 or 1; using 0");
}

}  // namespace

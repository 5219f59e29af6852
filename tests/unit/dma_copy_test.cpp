// SPDX-License-Identifier: Apache-2.0
// copy_to_dma_buffer and its streaming-store variants (device/dma_copy.h): every byte equal to
// memcpy's result and nothing outside the destination written, for every misalignment of
// source and destination within a cache line, every small size (the head, vector loop and
// tail of each variant) and large odd sizes.
#include "device/dma_copy.h"

#include <gtest/gtest.h>

#include <cstdint>
#include <cstring>
#include <string>
#include <vector>

namespace wharf {
namespace {

using CopyFn = void (*)(void*, const void*, size_t) noexcept;

constexpr size_t kGuard = 64;  // guard bytes on each side of the destination
constexpr unsigned char kGuardByte = 0xA5;

// Bytes that differ at every offset, none equal to the guard byte, so a misplaced, skipped
// or extra byte shows.
std::vector<unsigned char> pattern(size_t n) {
  std::vector<unsigned char> v(n);
  uint64_t x = 0x9e3779b97f4a7c15ull;
  for (size_t i = 0; i < n; ++i) {
    x ^= x << 13;
    x ^= x >> 7;
    x ^= x << 17;
    v[i] = static_cast<unsigned char>(x);
    if (v[i] == kGuardByte) v[i] = 0;
  }
  return v;
}

// A buffer aligned to 64 bytes (the variants' alignment logic works within a cache line),
// with room for a 63-byte misalignment and the guards.
struct Aligned {
  explicit Aligned(size_t n) : raw(n + 64 + 2 * kGuard + 64) {
    const uintptr_t p = reinterpret_cast<uintptr_t>(raw.data());
    base = raw.data() + ((64 - (p & 63)) & 63);
  }
  std::vector<unsigned char> raw;
  unsigned char* base;
};

// Copies n bytes from src (misaligned by `s_off` from a 64-byte boundary) into a destination
// misaligned by `d_off`, and checks the bytes and the guards. Returns an empty string, or
// what differed.
std::string check_one(CopyFn fn, const std::vector<unsigned char>& data, Aligned& src, Aligned& dst, size_t n,
                      size_t s_off, size_t d_off) {
  unsigned char* const s = src.base + s_off;
  std::memcpy(s, data.data(), n);
  unsigned char* const region = dst.base + d_off;  // guard, n bytes, guard
  std::memset(region, kGuardByte, n + 2 * kGuard);
  unsigned char* const d = region + kGuard;
  fn(d, s, n);
  auto where = [&](const char* what, size_t i) {
    return std::string(what) + " byte " + std::to_string(i) + " (n " + std::to_string(n) + ", src offset " +
           std::to_string(s_off) + ", dst offset " + std::to_string(d_off) + ")";
  };
  for (size_t i = 0; i < kGuard; ++i)
    if (region[i] != kGuardByte) return where("guard before the destination was written:", i);
  if (std::memcmp(d, data.data(), n) != 0) {
    size_t i = 0;
    while (d[i] == data[i]) ++i;
    return where("destination differs from the source at", i);
  }
  for (size_t i = 0; i < kGuard; ++i)
    if (d[n + i] != kGuardByte) return where("guard after the destination was written:", i);
  if (std::memcmp(s, data.data(), n) != 0) return where("the source changed", 0);
  return {};
}

// The routine under test: the dispatcher, or one variant (skipped where the CPU lacks it).
enum class Variant { kDispatch, kSse2, kAvx2 };

class DmaCopy : public ::testing::TestWithParam<Variant> {
 protected:
  void SetUp() override {
    switch (GetParam()) {
      case Variant::kDispatch:
        fn_ = &copy_to_dma_buffer;
        return;
#ifdef WHARF_DMA_COPY_X86
      case Variant::kSse2:
        fn_ = &dma_copy::stream_sse2;
        return;
      case Variant::kAvx2:
        if (!dma_copy::cpu_has_avx2()) GTEST_SKIP() << "this CPU has no AVX2";
        fn_ = &dma_copy::stream_avx2;
        return;
#else
      default:
        GTEST_SKIP() << "streaming-store variants exist on x86-64 only (copy_to_dma_buffer is memcpy here)";
#endif
    }
  }
  CopyFn fn_ = nullptr;
};

// Every size 0..300 (head, whole vectors and tail of every length for 16- and 32-byte stores;
// the dispatcher's memcpy below the threshold) at every source and destination offset 0..63.
TEST_P(DmaCopy, EverySmallSizeAtEveryAlignmentEqualsMemcpy) {
  constexpr size_t kMax = 300;
  const std::vector<unsigned char> data = pattern(kMax);
  Aligned src(kMax), dst(kMax);
  for (size_t n = 0; n <= kMax; ++n)
    for (size_t s_off = 0; s_off < 64; ++s_off)
      for (size_t d_off = 0; d_off < 64; ++d_off) {
        const std::string err = check_one(fn_, data, src, dst, n, s_off, d_off);
        ASSERT_TRUE(err.empty()) << err;
      }
}

// copy_to_dma_buffer switches to streaming stores at kStreamMinBytes: both sides of it, at
// every destination offset and a few source offsets.
TEST_P(DmaCopy, SizesAroundTheStreamingThresholdEqualMemcpy) {
  const size_t t = dma_copy::kStreamMinBytes;
  const std::vector<unsigned char> data = pattern(t + 200);
  Aligned src(t + 200), dst(t + 200);
  for (size_t n : {t - 129, t - 1, t, t + 1, t + 31, t + 63, t + 64, t + 127, t + 200})
    for (size_t s_off : {0, 1, 15, 16, 31, 32, 33, 63})
      for (size_t d_off = 0; d_off < 64; ++d_off) {
        const std::string err = check_one(fn_, data, src, dst, n, s_off, d_off);
        ASSERT_TRUE(err.empty()) << err;
      }
}

// Large copies of odd sizes, as staging pieces are (a tensor's bytes within a chunk).
TEST_P(DmaCopy, LargeOddSizesEqualMemcpy) {
  constexpr size_t MiB = 1 << 20;
  constexpr size_t kMax = 4 * MiB + 129;
  const std::vector<unsigned char> data = pattern(kMax);
  Aligned src(kMax), dst(kMax);
  for (size_t n : {size_t(65537), MiB - 1, MiB + 7, 3 * MiB + 33, kMax})
    for (size_t s_off : {0, 1, 17, 32, 63})
      for (size_t d_off : {0, 1, 16, 31, 32, 48, 63}) {
        const std::string err = check_one(fn_, data, src, dst, n, s_off, d_off);
        ASSERT_TRUE(err.empty()) << err;
      }
}

INSTANTIATE_TEST_SUITE_P(Variants, DmaCopy, ::testing::Values(Variant::kDispatch, Variant::kSse2, Variant::kAvx2),
                         [](const ::testing::TestParamInfo<Variant>& i) {
                           return std::string(i.param == Variant::kDispatch ? "Dispatch"
                                              : i.param == Variant::kSse2   ? "Sse2"
                                                                            : "Avx2");
                         });

TEST(StagingCopy, Names) {
  EXPECT_EQ(parse_staging_copy("stream"), StagingCopy::kStream);
  EXPECT_EQ(parse_staging_copy("memcpy"), StagingCopy::kMemcpy);
  EXPECT_FALSE(parse_staging_copy(""));
  EXPECT_FALSE(parse_staging_copy("Stream"));
  EXPECT_FALSE(parse_staging_copy("memcpy "));
  EXPECT_STREQ(staging_copy_name(StagingCopy::kStream), "stream");
  EXPECT_STREQ(staging_copy_name(StagingCopy::kMemcpy), "memcpy");
}

}  // namespace
}  // namespace wharf

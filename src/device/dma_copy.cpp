// SPDX-License-Identifier: Apache-2.0
#include "device/dma_copy.h"

#include <cstdint>
#include <cstring>

#if defined(__x86_64__)
#include <immintrin.h>
#endif

namespace wharf {

#if defined(__x86_64__)
namespace dma_copy {
namespace {

// The bytes before dst reaches a cache line boundary (at most n), copied plainly, as are
// those after the last whole vector: every streaming store is then aligned (they require
// 16 / 32 bytes) and each line is written whole by consecutive stores, so a write-combining
// buffer leaves as one full-line write, never a partial one. Loads may be unaligned.
size_t head_bytes(const void* dst, size_t n) {
  const size_t head = (64 - (reinterpret_cast<uintptr_t>(dst) & 63)) & 63;
  return head < n ? head : n;
}

}  // namespace

void stream_sse2(void* dst, const void* src, size_t n) noexcept {
  char* d = static_cast<char*>(dst);
  const char* s = static_cast<const char*>(src);
  const size_t head = head_bytes(d, n);
  std::memcpy(d, s, head);
  d += head, s += head, n -= head;
  // One line an iteration.
  for (; n >= 64; d += 64, s += 64, n -= 64) {
    const __m128i a = _mm_loadu_si128(reinterpret_cast<const __m128i*>(s));
    const __m128i b = _mm_loadu_si128(reinterpret_cast<const __m128i*>(s + 16));
    const __m128i c = _mm_loadu_si128(reinterpret_cast<const __m128i*>(s + 32));
    const __m128i e = _mm_loadu_si128(reinterpret_cast<const __m128i*>(s + 48));
    _mm_stream_si128(reinterpret_cast<__m128i*>(d), a);
    _mm_stream_si128(reinterpret_cast<__m128i*>(d + 16), b);
    _mm_stream_si128(reinterpret_cast<__m128i*>(d + 32), c);
    _mm_stream_si128(reinterpret_cast<__m128i*>(d + 48), e);
  }
  for (; n >= 16; d += 16, s += 16, n -= 16)
    _mm_stream_si128(reinterpret_cast<__m128i*>(d), _mm_loadu_si128(reinterpret_cast<const __m128i*>(s)));
  std::memcpy(d, s, n);
  // Streaming stores are weakly ordered: they may sit in write-combining buffers after later
  // stores are visible. The chunk is handed to another thread (an atomic) and then to the DMA
  // engine, which reads memory, not this core's buffers: the fence makes every byte visible
  // before anything this thread does next.
  _mm_sfence();
}

// Compiled for AVX2 alone (the library's baseline flags stay SSE2); called only where the CPU
// has it.
__attribute__((target("avx2"))) void stream_avx2(void* dst, const void* src, size_t n) noexcept {
  char* d = static_cast<char*>(dst);
  const char* s = static_cast<const char*>(src);
  const size_t head = head_bytes(d, n);
  std::memcpy(d, s, head);
  d += head, s += head, n -= head;
  // Two lines an iteration.
  for (; n >= 128; d += 128, s += 128, n -= 128) {
    const __m256i a = _mm256_loadu_si256(reinterpret_cast<const __m256i*>(s));
    const __m256i b = _mm256_loadu_si256(reinterpret_cast<const __m256i*>(s + 32));
    const __m256i c = _mm256_loadu_si256(reinterpret_cast<const __m256i*>(s + 64));
    const __m256i e = _mm256_loadu_si256(reinterpret_cast<const __m256i*>(s + 96));
    _mm256_stream_si256(reinterpret_cast<__m256i*>(d), a);
    _mm256_stream_si256(reinterpret_cast<__m256i*>(d + 32), b);
    _mm256_stream_si256(reinterpret_cast<__m256i*>(d + 64), c);
    _mm256_stream_si256(reinterpret_cast<__m256i*>(d + 96), e);
  }
  for (; n >= 32; d += 32, s += 32, n -= 32)
    _mm256_stream_si256(reinterpret_cast<__m256i*>(d), _mm256_loadu_si256(reinterpret_cast<const __m256i*>(s)));
  std::memcpy(d, s, n);
  _mm_sfence();  // as in stream_sse2: the DMA engine must see every byte
}

bool cpu_has_avx2() noexcept {
  __builtin_cpu_init();  // may run before the constructors that would initialise it
  return __builtin_cpu_supports("avx2");
}

}  // namespace dma_copy
#endif

void copy_to_dma_buffer(void* dst, const void* src, size_t n) noexcept {
#if defined(__x86_64__)
  if (n < dma_copy::kStreamMinBytes) {
    std::memcpy(dst, src, n);
    return;
  }
  using Fn = void (*)(void*, const void*, size_t) noexcept;
  static const Fn fn = dma_copy::cpu_has_avx2() ? &dma_copy::stream_avx2 : &dma_copy::stream_sse2;
  fn(dst, src, n);
#else
  std::memcpy(dst, src, n);
#endif
}

std::optional<StagingCopy> parse_staging_copy(std::string_view s) {
  if (s == "stream") return StagingCopy::kStream;
  if (s == "memcpy") return StagingCopy::kMemcpy;
  return std::nullopt;
}

const char* staging_copy_name(StagingCopy c) { return c == StagingCopy::kMemcpy ? "memcpy" : "stream"; }

}  // namespace wharf

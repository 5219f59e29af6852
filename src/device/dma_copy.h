/* SPDX-License-Identifier: Apache-2.0 */
// Host copies into memory that a DMA engine reads next (the transfer engine's pinned staging
// chunks). A plain memcpy into lines that are not in the cache first reads each destination
// line (read-for-ownership) and leaves it in the cache, where nobody on the host reads it
// again; glibc writes around the cache only above a threshold of tens of MiB on servers,
// larger than a staging chunk. Non-temporal (streaming) stores skip that read: per staged
// byte DRAM sees the source read, the ring written and the DMA's read, not also the ring
// read. (Where the ring stays in the last-level cache, the DMA could read it from there
// after a memcpy, which is why memcpy stays the default: measured on the H100 host, whose
// 300 MiB L3 held the (then) 96 MiB ring, streaming stores lost 5-10% of the pageable rows.
// WHARF_STAGING_COPY=stream selects them, for hosts whose cache cannot hold the ring.)
#pragma once

#include <cstddef>
#include <optional>
#include <string_view>

namespace wharf {

// Copies n bytes from src to dst (which must not overlap), like memcpy, for any alignment of
// either. From dma_copy::kStreamMinBytes on, the bulk is written with non-temporal stores
// (x86-64: AVX2 where the CPU has it, else SSE2; other CPUs: memcpy), and every byte is
// visible to other threads and to devices reading memory when the call returns.
void copy_to_dma_buffer(void* dst, const void* src, size_t n) noexcept;

// How the transfer engine's staging threads copy pageable sources into the pinned ring:
// `memcpy` (the default) with memcpy, `stream` with copy_to_dma_buffer.
// WHARF_STAGING_COPY=memcpy|stream picks it for A/B measurements (docs/performance.md), read
// when a runtime makes its transfer engine (device/transfer_env.h).
enum class StagingCopy { kStream, kMemcpy };

// "memcpy" or "stream"; nullopt for anything else.
std::optional<StagingCopy> parse_staging_copy(std::string_view s);
const char* staging_copy_name(StagingCopy c);

// The variants copy_to_dma_buffer picks from, named for tests and bench/staging_copy_bench.
namespace dma_copy {

// Below this, copy_to_dma_buffer is a memcpy: streaming stores pay off only once a copy is
// larger than what the caches absorb anyway, and the fence after them costs tens of cycles.
constexpr size_t kStreamMinBytes = 4096;

#if defined(__x86_64__)
#define WHARF_DMA_COPY_X86 1
// Copy n bytes of any size and alignment: plain copies up to dst's next 64-byte boundary
// and after the last whole vector, non-temporal stores in between, then a fence.
// SSE2 (every x86-64 CPU): 16-byte stores.
void stream_sse2(void* dst, const void* src, size_t n) noexcept;
// AVX2: 32-byte stores; only on a CPU with AVX2 (cpu_has_avx2()).
void stream_avx2(void* dst, const void* src, size_t n) noexcept;
bool cpu_has_avx2() noexcept;
#endif

}  // namespace dma_copy
}  // namespace wharf

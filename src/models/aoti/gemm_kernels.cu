// SPDX-License-Identifier: Apache-2.0
#include <cuda_bf16.h>
#include <cuda_fp16.h>

#include <algorithm>
#include <atomic>
#include <cstring>
#include <type_traits>

#include "models/aoti/gemm_kernels.h"
#include "models/aoti/shim_internal.h"

namespace wharf_aoti {
namespace {

struct Box {
  int64_t n1, n2;      // sizes of the inner two dimensions
  int64_t d0, d1, d2;  // dst strides
  int64_t s0, s1, s2;  // src strides
};

__device__ inline float to_float(float v) { return v; }
__device__ inline float to_float(__half v) { return __half2float(v); }
__device__ inline float to_float(__nv_bfloat16 v) { return __bfloat162float(v); }
template <class T>
__device__ inline T from_float(float v);
template <>
__device__ inline float from_float<float>(float v) {
  return v;
}
template <>
__device__ inline __half from_float<__half>(float v) {
  return __float2half_rn(v);
}
template <>
__device__ inline __nv_bfloat16 from_float<__nv_bfloat16>(float v) {
  return __float2bfloat16_rn(v);
}

template <class T>
__global__ void strided_copy(T* dst, const T* src, Box box, int64_t total, float scale, bool exact) {
  for (int64_t e = blockIdx.x * int64_t(blockDim.x) + threadIdx.x; e < total; e += int64_t(gridDim.x) * blockDim.x) {
    const int64_t j = e % box.n2;
    const int64_t rest = e / box.n2;
    const int64_t i = rest % box.n1;
    const int64_t b = rest / box.n1;
    T* out = dst + b * box.d0 + i * box.d1 + j * box.d2;
    if (!src) {
      *out = from_float<T>(0.0f);
      continue;
    }
    const T v = src[b * box.s0 + i * box.s1 + j * box.s2];
    *out = exact ? v : from_float<T>(scale * to_float(v));
  }
}

template <class T>
cudaError_t launch(void* dst, const void* src, const Box& box, int64_t total, float scale, cudaStream_t stream) {
  const int threads = 256;
  int64_t blocks = (total + threads - 1) / threads;
  if (blocks > 4096) blocks = 4096;  // grid-stride beyond that
  strided_copy<T><<<unsigned(blocks), threads, 0, stream>>>(static_cast<T*>(dst), static_cast<const T*>(src), box,
                                                            total, scale, scale == 1.0f);
  return cudaGetLastError();
}

// ---- the decode GEMV: out[m, n] = alpha * x[m, :] . w[n, :] + beta * self[m, n] ----------
//
// Memory-bound: the weight is read once from HBM, the activation (m <= 8 rows, from L1/L2)
// once per block. A block of up to 256 threads owns kRows consecutive weight rows; its
// threads stride along K with 16-byte loads (two steps in flight), each keeping M x kRows
// float32 partial sums in registers, so an activation load serves kRows weight rows and a
// weight load serves M activation rows. The sums are reduced across the warp
// (reduce-scatter: one value per lane group), then across warps in shared memory, and the
// threads owning a result apply alpha, beta * self and the single rounding to T.
constexpr int kGemvThreads = 256;
constexpr int kGemvRows = 4;  // weight rows per block (kGemvRows * M <= 32)

// A 16-byte weight load that does not allocate in L1 (read once; keeps L1 for x).
__device__ inline uint4 load_stream(const uint4* p) {
  uint4 v;
  asm("ld.global.nc.L1::no_allocate.v4.u32 {%0, %1, %2, %3}, [%4];"
      : "=r"(v.x), "=r"(v.y), "=r"(v.z), "=r"(v.w)
      : "l"(p));
  return v;
}

// Programmatic dependent launch (sm_90; launch_gemv's `pdl`): a GEMV launched with it may
// start while the previous kernel in the stream finishes. It must not read what that kernel
// writes (x, self: any input but the weight might be its output) nor write out before
// griddepcontrol.wait, which returns once the previous kernel has completed and its memory is
// visible (at once without PDL). Before the wait it only prefetches weight lines into L2, a
// hint that reads nothing architecturally (L2 is the point of coherence: a line the previous
// kernel still writes is read after the wait with its final bytes). After the wait it lets
// the next PDL launch (another GEMV) start: that one waits for this one in turn.
__device__ __forceinline__ void pdl_wait_then_release() {
#if defined(__CUDA_ARCH__) && __CUDA_ARCH__ >= 900
  asm volatile("griddepcontrol.wait;" ::: "memory");
  asm volatile("griddepcontrol.launch_dependents;" ::: "memory");
#endif
}
__device__ __forceinline__ void prefetch_l2(const void* p) { asm volatile("prefetch.global.L2 [%0];" ::"l"(p)); }

// The current device's compute capability major (cached per device; 0 where unknown).
int device_major() {
  static std::atomic<int> majors[64];  // per device; 0: not asked yet
  int device = 0;
  if (cudaGetDevice(&device) != cudaSuccess || device < 0 || device >= 64) return 0;
  int major = majors[device].load(std::memory_order_relaxed);
  if (major == 0) {
    if (cudaDeviceGetAttribute(&major, cudaDevAttrComputeCapabilityMajor, device) != cudaSuccess) return 0;
    majors[device].store(major, std::memory_order_relaxed);
  }
  return major;
}

// Launches a GEMV kernel with its one by-value parameter: a plain launch, or with args.pdl on sm_90
// through cudaLaunchKernelEx with programmatic stream serialization (still a parameter
// array: graph capture records it as a kernel node that re-pointing can read).
template <class Kernel>
cudaError_t launch_kernel(Kernel kernel, dim3 grid, dim3 block, const GemvArgs& args, cudaStream_t stream) {
  if (!args.pdl || device_major() < 9) {  // PDL is an sm_90 feature: elsewhere a plain launch
    GemvArgs a = args;
    a.pdl = 0;
    kernel<<<grid, block, 0, stream>>>(a);
    return cudaGetLastError();
  }
  const GemvArgs& a = args;
  cudaLaunchAttribute attr;
  std::memset(&attr, 0, sizeof attr);
  attr.id = cudaLaunchAttributeProgrammaticStreamSerialization;
  attr.val.programmaticStreamSerializationAllowed = 1;
  cudaLaunchConfig_t config;
  std::memset(&config, 0, sizeof config);
  config.gridDim = grid;
  config.blockDim = block;
  config.stream = stream;
  config.attrs = &attr;
  config.numAttrs = 1;
  return cudaLaunchKernelEx(&config, kernel, a);
}

// The 16 bytes of a vector as floats (16 / sizeof(T) of them).
template <class T>
__device__ inline void unpack(const uint4& v, float* f) {
  const T* e = reinterpret_cast<const T*>(&v);
#pragma unroll
  for (int i = 0; i < int(16 / sizeof(T)); ++i) f[i] = to_float(e[i]);
}

// Sums each of C values (C a power of two <= 32) over the warp. On return v[0] of lane l
// holds the total of value l / (32 / C) (lanes with l % (32 / C) == 0 own distinct ones).
// Each round (H values kept of 2H, partner lane ^ Off) a lane keeps the half its lane bit
// selects and adds the partner's copy of it: C - 1 shuffles in all rather than 5 C, then
// plain butterfly steps over the lanes that hold the same value.
template <int C, int H = C / 2, int Off = 16>
__device__ __forceinline__ void warp_reduce_scatter(float (&v)[C], int lane) {
  if constexpr (H >= 1) {
    const bool upper = (lane & Off) != 0;
#pragma unroll
    for (int i = 0; i < H; ++i) {
      const float send = upper ? v[i] : v[i + H];
      const float keep = upper ? v[i + H] : v[i];
      v[i] = keep + __shfl_xor_sync(0xffffffffu, send, Off);
    }
    warp_reduce_scatter<C, H / 2, Off / 2>(v, lane);
  } else {
#pragma unroll
    for (int off = Off; off > 0; off /= 2) v[0] += __shfl_xor_sync(0xffffffffu, v[0], off);
  }
}

template <class T, int M, bool Vec>
__global__ void __launch_bounds__(kGemvThreads) gemv(GemvArgs a) {
  constexpr int R = kGemvRows, C = M * R;
  const T* x = static_cast<const T*>(a.x);
  const T* w = static_cast<const T*>(a.w);
  const int64_t n0 = int64_t(blockIdx.x) * R;
  // Rows past n read the last row (valid memory); their sums are discarded.
  const T* wr[R];
#pragma unroll
  for (int r = 0; r < R; ++r) wr[r] = w + (n0 + r < a.n ? n0 + r : a.n - 1) * a.ldw;
  if (Vec && a.pdl) {  // the first two steps' lines of the block's rows
    const int64_t nvec = a.k / (16 / int64_t(sizeof(T)));
#pragma unroll
    for (int r = 0; r < R; ++r)
      for (int64_t v = threadIdx.x; v < nvec && v < 2 * int64_t(blockDim.x); v += blockDim.x)
        prefetch_l2(reinterpret_cast<const uint4*>(wr[r]) + v);
  }
  pdl_wait_then_release();
  float acc[C];
#pragma unroll
  for (int c = 0; c < C; ++c) acc[c] = 0.0f;
  const int tid = threadIdx.x, threads = blockDim.x;
  int64_t p0 = 0;  // the scalar part starts here
  if constexpr (Vec) {
    constexpr int V = 16 / sizeof(T);
    const int64_t nvec = a.k / V;
    auto step = [&](const uint4(&wv)[R], int64_t v) {
      float wf[R][V];
#pragma unroll
      for (int r = 0; r < R; ++r) unpack<T>(wv[r], wf[r]);
#pragma unroll
      for (int i = 0; i < M; ++i) {
        if (i < a.m) {
          float xf[V];
          unpack<T>(__ldg(reinterpret_cast<const uint4*>(x + i * a.ldx) + v), xf);
#pragma unroll
          for (int r = 0; r < R; ++r)
#pragma unroll
            for (int e = 0; e < V; ++e) acc[i * R + r] = fmaf(xf[e], wf[r][e], acc[i * R + r]);
        }
      }
    };
    int64_t v = tid;
    for (; v + threads < nvec; v += 2 * int64_t(threads)) {  // two steps' loads in flight
      uint4 w0[R], w1[R];
#pragma unroll
      for (int r = 0; r < R; ++r) {
        w0[r] = load_stream(reinterpret_cast<const uint4*>(wr[r]) + v);
        w1[r] = load_stream(reinterpret_cast<const uint4*>(wr[r]) + v + threads);
      }
      step(w0, v);
      step(w1, v + threads);
    }
    if (v < nvec) {
      uint4 w0[R];
#pragma unroll
      for (int r = 0; r < R; ++r) w0[r] = load_stream(reinterpret_cast<const uint4*>(wr[r]) + v);
      step(w0, v);
    }
    p0 = nvec * V;
  }
  // The scalar part: K's tail past the last whole vector, or all of K when the operands are
  // not 16-byte aligned (or x's elements are strided).
  for (int64_t p = p0 + tid; p < a.k; p += threads) {
    float wf[R];
#pragma unroll
    for (int r = 0; r < R; ++r) wf[r] = to_float(wr[r][p]);
#pragma unroll
    for (int i = 0; i < M; ++i) {
      if (i < a.m) {
        const float xv = to_float(x[i * a.ldx + p * a.sxk]);
#pragma unroll
        for (int r = 0; r < R; ++r) acc[i * R + r] = fmaf(xv, wf[r], acc[i * R + r]);
      }
    }
  }

  const int lane = tid & 31, warp = tid >> 5, warps = threads >> 5;
  warp_reduce_scatter<C>(acc, lane);
  __shared__ float partial[kGemvThreads / 32][32];
  constexpr int group = 32 / C;
  if (lane % group == 0) partial[warp][lane / group] = acc[0];
  __syncthreads();
  if (tid < C) {
    const int i = tid / R, r = tid % R;
    const int64_t j = n0 + r;
    if (i < a.m && j < a.n) {
      float sum = 0.0f;
      for (int q = 0; q < warps; ++q) sum += partial[q][tid];
      float out = a.alpha * sum;
      if (a.self) out = fmaf(a.beta, to_float(static_cast<const T*>(a.self)[i * a.self_sm + j * a.self_sn]), out);
      static_cast<T*>(a.out)[i * a.out_sm + j * a.out_sn] = from_float<T>(out);
    }
  }
}

// Half types with 5 to 8 activation rows: eight multiply-adds per weight element would make
// the FMA kernel compute-bound on H200, so the products go to the tensor cores
// (mma.sync.m16n8k16, float32 accumulation) as cuBLASLt's do. A warp owns 16 weight rows
// (A, 16 x 16 per mma) against the activation rows as B's 8 columns (rows past m are
// zeros); a block's warps split K in tiles of 32. Each lane loads 16 bytes of weight row
// g = lane / 4 and of row g + 8 at k0 + 8 (lane % 4), and 16 bytes of activation row g at the
// same k: a k order the A and B fragments share (logical k 2t + e of the first mma is
// physical 8t + e, 2t + 8 + e is 8t + 2 + e; the second mma takes 8t + 4..7), so the three
// loads are exactly the two mmas' fragments, with no shuffling. K's tail past the last tile
// is added by the thread writing each result.
constexpr int kMmaTile = 32;   // k per tile (two m16n8k16)
constexpr int kMmaUnroll = 4;  // tiles in flight per warp

template <class T>
__device__ __forceinline__ void mma_16816(float (&c)[4], uint32_t a0, uint32_t a1, uint32_t a2, uint32_t a3,
                                          uint32_t b0, uint32_t b1) {
#if defined(__CUDA_ARCH__) && __CUDA_ARCH__ >= 800
  if constexpr (std::is_same_v<T, __nv_bfloat16>)
    asm("mma.sync.aligned.m16n8k16.row.col.f32.bf16.bf16.f32 {%0, %1, %2, %3}, {%4, %5, %6, %7}, {%8, %9}, "
        "{%0, %1, %2, %3};"
        : "+f"(c[0]), "+f"(c[1]), "+f"(c[2]), "+f"(c[3])
        : "r"(a0), "r"(a1), "r"(a2), "r"(a3), "r"(b0), "r"(b1));
  else
    asm("mma.sync.aligned.m16n8k16.row.col.f32.f16.f16.f32 {%0, %1, %2, %3}, {%4, %5, %6, %7}, {%8, %9}, "
        "{%0, %1, %2, %3};"
        : "+f"(c[0]), "+f"(c[1]), "+f"(c[2]), "+f"(c[3])
        : "r"(a0), "r"(a1), "r"(a2), "r"(a3), "r"(b0), "r"(b1));
#else
  __trap();  // launched only on sm_80 and later (gemv_route)
#endif
}

template <class T>
__global__ void __launch_bounds__(kGemvThreads) gemv_mma(GemvArgs a) {
  const int lane = threadIdx.x & 31, warp = threadIdx.x >> 5, warps = blockDim.x >> 5;
  const int g = lane >> 2, t = lane & 3;
  const int64_t n0 = int64_t(blockIdx.x) * 16;
  const T* w = static_cast<const T*>(a.w);
  const T* x = static_cast<const T*>(a.x);
  // Rows past n read the last row (valid memory); their results are discarded.
  const T* row_lo = w + (n0 + g < a.n ? n0 + g : a.n - 1) * a.ldw + 8 * t;
  const T* row_hi = w + (n0 + g + 8 < a.n ? n0 + g + 8 : a.n - 1) * a.ldw + 8 * t;
  const bool has_x = g < a.m;
  const T* xrow = x + (has_x ? g : 0) * a.ldx + 8 * t;
  float c[4] = {0.0f, 0.0f, 0.0f, 0.0f};
  const int64_t tiles = a.k / kMmaTile;
  if (a.pdl) {  // the first iteration's tiles
#pragma unroll
    for (int u = 0; u < kMmaUnroll; ++u) {
      const int64_t tile = warp + int64_t(u) * warps;
      if (tile < tiles) {
        prefetch_l2(row_lo + tile * kMmaTile);
        prefetch_l2(row_hi + tile * kMmaTile);
      }
    }
  }
  pdl_wait_then_release();
  const uint4 zero = make_uint4(0, 0, 0, 0);
  for (int64_t t0 = warp; t0 < tiles; t0 += int64_t(warps) * kMmaUnroll) {
    uint4 lo[kMmaUnroll], hi[kMmaUnroll], xv[kMmaUnroll];
#pragma unroll
    for (int u = 0; u < kMmaUnroll; ++u) {
      const int64_t tile = t0 + int64_t(u) * warps;  // the same for the whole warp
      if (tile < tiles) {
        const int64_t k0 = tile * kMmaTile;
        lo[u] = load_stream(reinterpret_cast<const uint4*>(row_lo + k0));
        hi[u] = load_stream(reinterpret_cast<const uint4*>(row_hi + k0));
        xv[u] = has_x ? __ldg(reinterpret_cast<const uint4*>(xrow + k0)) : zero;
      } else {
        lo[u] = hi[u] = xv[u] = zero;
      }
    }
#pragma unroll
    for (int u = 0; u < kMmaUnroll; ++u) {
      mma_16816<T>(c, lo[u].x, hi[u].x, lo[u].y, hi[u].y, xv[u].x, xv[u].y);
      mma_16816<T>(c, lo[u].z, hi[u].z, lo[u].w, hi[u].w, xv[u].z, xv[u].w);
    }
  }
  // c[j] is (weight row g + 8 (j / 2), activation row 2t + j % 2): summed over the warps.
  __shared__ float partial[kGemvThreads / 32][128];
#pragma unroll
  for (int j = 0; j < 4; ++j) partial[warp][lane * 4 + j] = c[j];
  __syncthreads();
  if (threadIdx.x < 128) {
    const int q = threadIdx.x >> 2, j = threadIdx.x & 3;
    const int64_t i = 2 * (q & 3) + (j & 1), r = (q >> 2) + 8 * (j >> 1);
    const int64_t col = n0 + r;
    if (i < a.m && col < a.n) {
      float sum = 0.0f;
      for (int v = 0; v < warps; ++v) sum += partial[v][threadIdx.x];
      const T* wr = w + col * a.ldw;
      const T* xr = x + i * a.ldx;
      for (int64_t p = tiles * kMmaTile; p < a.k; ++p) sum = fmaf(to_float(xr[p]), to_float(wr[p]), sum);
      float out = a.alpha * sum;
      if (a.self) out = fmaf(a.beta, to_float(static_cast<const T*>(a.self)[i * a.self_sm + col * a.self_sn]), out);
      static_cast<T*>(a.out)[i * a.out_sm + col * a.out_sn] = from_float<T>(out);
    }
  }
}

// The current device's SM count, and how many blocks of Threads threads of Kernel it keeps
// resident per SM (cached per device; 0 where the runtime cannot say).
int sm_count() {
  static std::atomic<int> counts[64];  // 0: not asked yet
  int device = 0;
  if (cudaGetDevice(&device) != cudaSuccess || device < 0 || device >= 64) return 0;
  int n = counts[device].load(std::memory_order_relaxed);
  if (n == 0) {
    if (cudaDeviceGetAttribute(&n, cudaDevAttrMultiProcessorCount, device) != cudaSuccess) return 0;
    counts[device].store(n, std::memory_order_relaxed);
  }
  return n;
}
template <auto Kernel, int Threads>
int resident_per_sm() {
  static std::atomic<int> counts[64];  // per device; 0: not asked yet
  int device = 0;
  if (cudaGetDevice(&device) != cudaSuccess || device < 0 || device >= 64) return 0;
  int n = counts[device].load(std::memory_order_relaxed);
  if (n == 0) {
    if (cudaOccupancyMaxActiveBlocksPerMultiprocessor(&n, Kernel, Threads, 0) != cudaSuccess || n < 1) return 0;
    counts[device].store(n, std::memory_order_relaxed);
  }
  return n;
}

// Warps per block of the tensor-core kernel (a tuned rule, with gemv_route's): they split K
// for the block's 16 rows, at least 4 (the 128 results of a block are written by its first
// 128 threads) and no more than K's tiles. 8 when all blocks fit on the device at once with
// 8; else 4, so that twice as many blocks are resident: the H200 run's 8192 x 8192 at M 8 was
// 512 blocks on 396 slots of 8 warps (3 per SM), a second round of 116 blocks streaming
// 256 KiB each with most of the device idle, 1.15x cuBLASLt's time.
int mma_warps(int64_t tiles, int64_t blocks, int sms, int resident8) {
  const int most = int(std::clamp<int64_t>(tiles, 4, kGemvThreads / 32));
  if (most < 8 || sms <= 0 || resident8 <= 0) return most;
  return blocks <= int64_t(sms) * resident8 ? 8 : 4;
}

template <class T>
cudaError_t launch_gemv_mma(const GemvArgs& a, cudaStream_t stream) {
  const int64_t tiles = a.k / kMmaTile;
  const unsigned blocks = unsigned((a.n + 15) / 16);
  const int warps = mma_warps(tiles, blocks, sm_count(), resident_per_sm<gemv_mma<T>, kGemvThreads>());
  return launch_kernel(gemv_mma<T>, dim3(blocks), dim3(unsigned(warps * 32)), a, stream);
}

// Lanes per column group of gemv_kn (the columns a block owns are lanes x 16 bytes): the
// widest group (64 bytes of a row per group and K row, 128 for float32) that still gives at
// least kKnMinBlocks blocks, else 2 lanes (32 bytes, one sector). GPT-2's widths (768 to
// 6400 columns) get 2 lanes: more blocks matter more than longer row segments there.
constexpr int kKnMaxCols = 32;         // columns per block: G <= 4 lanes of 8 half or 8 of 4 float32
constexpr int64_t kKnMinBlocks = 264;  // 2 per SM of an H100/H200 (132 SMs)
int kn_lanes(int element_size, int64_t n) {
  const int v = 16 / element_size;
  const int widest = element_size == 4 ? 8 : 4;  // G * V <= kKnMaxCols (32)
  for (int g = widest; g > 2; g /= 2)
    if ((n + int64_t(g) * v - 1) / (int64_t(g) * v) >= kKnMinBlocks) return g;
  return 2;
}

// ---- the decode GEMV against a row-major [K, N] mat2 (GPT-2's Conv1D weight) ---------------
//
// out[m, n] = alpha * sum_p x[m, p] * w[p, n] + beta * self[m, n], w's rows contiguous along N.
// Threads run across N: a group of G = blockDim.x lanes owns NT = G * V consecutive columns
// (V = 16 bytes of elements per lane, one 16-byte load per K row), and the blockDim.y groups
// of a block split K (group y takes rows y, y + blockDim.y, ...; U rows' loads in flight per
// lane: 8, or 4 for 5 to 8 activation rows, whose M x V sums take the registers). x[i, p] is
// the same for all lanes of a group: a broadcast read through L1. Each lane keeps M x V
// float32 sums; the groups' sums are reduced with a fixed-order warp butterfly, then across
// warps in shared memory in warp order: deterministic, no atomics.
constexpr int kKnMaxThreads = 512;

// Threads per block of gemv_kn (a tuned rule, with kn_lanes): 256, or 512 when there are
// fewer blocks than SMs (GPT-2's 768 columns are 48 blocks): K rows are then the only
// parallelism left, and a block's loads in flight per round trip are what sets the time
// (3072 x 768 with 256 threads and 4 loads each was 6 round trips for 4.7 MB).
int kn_threads(int64_t blocks, int sms) { return sms > 0 && blocks < sms ? kKnMaxThreads : kGemvThreads; }

template <class T, int M, bool Vec>
__global__ void __launch_bounds__(kKnMaxThreads) gemv_kn(GemvArgs a) {
  constexpr int V = 16 / sizeof(T);
  constexpr int U = M <= 4 ? 8 : 4;
  const T* x = static_cast<const T*>(a.x);
  const T* w = static_cast<const T*>(a.w);
  const int G = blockDim.x, KG = blockDim.y, NT = G * V;
  const int64_t c0 = int64_t(blockIdx.x) * NT + int64_t(threadIdx.x) * V;  // this lane's first column
  const bool whole = Vec && c0 + V <= a.n;                                 // V columns, one 16-byte load
  if (whole && a.pdl) {                                                    // the first iteration's rows
#pragma unroll
    for (int u = 0; u < U; ++u) {
      const int64_t p = threadIdx.y + int64_t(u) * blockDim.y;
      if (p < a.k) prefetch_l2(w + p * a.ldw + c0);
    }
  }
  pdl_wait_then_release();
  float acc[M][V];
#pragma unroll
  for (int i = 0; i < M; ++i)
#pragma unroll
    for (int e = 0; e < V; ++e) acc[i][e] = 0.0f;
  for (int64_t p0 = threadIdx.y; p0 < a.k; p0 += int64_t(KG) * U) {
    uint4 wv[U];
    if (whole) {
#pragma unroll
      for (int u = 0; u < U; ++u) {
        const int64_t p = p0 + int64_t(u) * KG;
        wv[u] = p < a.k ? load_stream(reinterpret_cast<const uint4*>(w + p * a.ldw + c0)) : make_uint4(0, 0, 0, 0);
      }
    }
#pragma unroll
    for (int u = 0; u < U; ++u) {
      const int64_t p = p0 + int64_t(u) * KG;
      if (p < a.k) {
        float wf[V];
        if (whole) {
          unpack<T>(wv[u], wf);
        } else {  // the last columns, or a misaligned w: element loads
#pragma unroll
          for (int e = 0; e < V; ++e) wf[e] = c0 + e < a.n ? to_float(w[p * a.ldw + c0 + e]) : 0.0f;
        }
#pragma unroll
        for (int i = 0; i < M; ++i) {
          if (i < a.m) {
            const float xv = to_float(x[i * a.ldx + p * a.sxk]);
#pragma unroll
            for (int e = 0; e < V; ++e) acc[i][e] = fmaf(xv, wf[e], acc[i][e]);
          }
        }
      }
    }
  }
  // Lanes l and l ^ off (off >= G) own the same columns: a butterfly over them leaves every
  // lane with its columns' warp total (the same bits in each: additions commute).
  const int tid = threadIdx.y * G + threadIdx.x, lane = tid & 31, warp = tid >> 5;
#pragma unroll
  for (int i = 0; i < M; ++i)
#pragma unroll
    for (int e = 0; e < V; ++e)
      for (int off = 16; off >= G; off >>= 1) acc[i][e] += __shfl_xor_sync(0xffffffffu, acc[i][e], off);
  __shared__ float partial[kKnMaxThreads / 32][M][kKnMaxCols];
  if (lane < G) {
#pragma unroll
    for (int i = 0; i < M; ++i)
#pragma unroll
      for (int e = 0; e < V; ++e) partial[warp][i][lane * V + e] = acc[i][e];
  }
  __syncthreads();
  const int warps = (G * KG) >> 5;
  for (int r = tid; r < M * NT; r += G * KG) {
    const int i = r / NT, col = r % NT;
    const int64_t j = int64_t(blockIdx.x) * NT + col;
    if (i < a.m && j < a.n) {
      float sum = 0.0f;
      for (int q = 0; q < warps; ++q) sum += partial[q][i][col];
      float out = a.alpha * sum;
      if (a.self) out = fmaf(a.beta, to_float(static_cast<const T*>(a.self)[i * a.self_sm + j * a.self_sn]), out);
      static_cast<T*>(a.out)[i * a.out_sm + j * a.out_sn] = from_float<T>(out);
    }
  }
}

template <class T, int M>
cudaError_t launch_gemv_kn_m(const GemvArgs& a, bool vec, cudaStream_t stream) {
  constexpr int V = 16 / sizeof(T);
  const int G = kn_lanes(int(sizeof(T)), a.n);
  const unsigned blocks = unsigned((a.n + int64_t(G) * V - 1) / (int64_t(G) * V));
  const dim3 block(unsigned(G), unsigned(kn_threads(blocks, sm_count()) / G));
  return vec ? launch_kernel(gemv_kn<T, M, true>, dim3(blocks), block, a, stream)
             : launch_kernel(gemv_kn<T, M, false>, dim3(blocks), block, a, stream);
}

template <class T>
cudaError_t launch_gemv_kn_t(const GemvArgs& a, bool vec, cudaStream_t stream) {
  if (a.m <= 1) return launch_gemv_kn_m<T, 1>(a, vec, stream);
  if (a.m <= 2) return launch_gemv_kn_m<T, 2>(a, vec, stream);
  if (a.m <= 4) return launch_gemv_kn_m<T, 4>(a, vec, stream);
  return launch_gemv_kn_m<T, 8>(a, vec, stream);
}

template <class T, int M>
cudaError_t launch_gemv_m(const GemvArgs& a, bool vec, cudaStream_t stream) {
  const int64_t units = vec ? a.k / int64_t(16 / sizeof(T)) : a.k;  // loads per weight row
  int threads = int(std::min<int64_t>(kGemvThreads, (std::max<int64_t>(units, 1) + 31) / 32 * 32));
  const unsigned blocks = unsigned((a.n + kGemvRows - 1) / kGemvRows);
  return vec ? launch_kernel(gemv<T, M, true>, dim3(blocks), dim3(unsigned(threads)), a, stream)
             : launch_kernel(gemv<T, M, false>, dim3(blocks), dim3(unsigned(threads)), a, stream);
}

template <class T>
cudaError_t launch_gemv_t(const GemvArgs& a, bool vec, cudaStream_t stream) {
  if (a.m <= 1) return launch_gemv_m<T, 1>(a, vec, stream);
  if (a.m <= 2) return launch_gemv_m<T, 2>(a, vec, stream);
  if (a.m <= 4) return launch_gemv_m<T, 4>(a, vec, stream);
  return launch_gemv_m<T, 8>(a, vec, stream);
}

// Whether the device has mma.sync for half types (compute capability 8.0 or later).
bool device_has_mma() { return device_major() >= 8; }

// The measured choices of the nn.Linear path, in one place (H200, bfloat16, shim_gemm_bench,
// bench/results/2026-11-26-h200-session5/run2; rerun it to retune; the launch shapes'
// rules are mma_warps and kn_lanes above):
// - float16/bfloat16 with 5 to 8 rows take the tensor-core kernel: the FMA kernel does 8
//   multiply-adds per weight element and is compute-bound (M 8: 1.4x slower at 2048 x 2048,
//   1.7-2.5x from 4096 x 4096 up).
// - Against cuBLASLt at M 8 the tensor-core kernel is faster up to kMmaMaxWeightElements
//   (2048 x 2048: 6.61 vs 9.34 us; 4096 x 4096: 13.01 vs 13.37) and slower above (8192 x 8192
//   1.15x, 4096 x 14336 1.09x, 14336 x 4096 1.03x, LM heads 1.03-1.08x). It stays the default
//   there all the same: cuBLASLt's bfloat16 kernels on Hopper pass their parameters as one
//   buffer that graph re-pointing cannot read, so a model whose GEMMs go there runs eagerly
//   under graphs (far more than the few percent). Mode 3 sends those shapes to cuBLASLt, for
//   runs without graphs.
constexpr int64_t kMmaMaxWeightElements = int64_t(4096) * 4096;

}  // namespace

GemvRoute gemv_route(int32_t dtype, const GemvArgs& a, int32_t mode) {
  const bool half = dtype == kF16 || dtype == kBF16;
  if (!half || a.m < 5 || mode == 2 || a.k < kMmaTile || !gemv_vectorizable(dtype, a) || !device_has_mma())
    return GemvRoute::kFma;
  if (mode == 3 && a.k * a.n > kMmaMaxWeightElements) return GemvRoute::kCublasLt;
  return GemvRoute::kMma;
}

bool gemv_vectorizable(int32_t dtype, const GemvArgs& a) {
  const uint64_t es = element_size(dtype);
  auto aligned = [](const void* p) { return reinterpret_cast<uintptr_t>(p) % 16 == 0; };
  return (a.sxk == 1 || a.k == 1) && aligned(a.x) && aligned(a.w) && (a.m == 1 || uint64_t(a.ldx) * es % 16 == 0) &&
         (a.n == 1 || uint64_t(a.ldw) * es % 16 == 0);
}

cudaError_t launch_gemv(int32_t dtype, const GemvArgs& a, int32_t mode, cudaStream_t stream) {
  if (a.m < 1 || a.m > kGemvMaxM || a.n < 1 || a.k < 1 || (a.n + kGemvRows - 1) / kGemvRows > INT32_MAX)
    return cudaErrorInvalidValue;
  const GemvRoute route = gemv_route(dtype, a, mode);
  if (route == GemvRoute::kCublasLt) return cudaErrorNotSupported;
  if (route == GemvRoute::kMma)
    return dtype == kBF16 ? launch_gemv_mma<__nv_bfloat16>(a, stream) : launch_gemv_mma<__half>(a, stream);
  const bool vec = gemv_vectorizable(dtype, a);
  switch (dtype) {
    case kF32:
      return launch_gemv_t<float>(a, vec, stream);
    case kF16:
      return launch_gemv_t<__half>(a, vec, stream);
    case kBF16:
      return launch_gemv_t<__nv_bfloat16>(a, vec, stream);
    default:
      return cudaErrorInvalidValue;
  }
}

bool gemv_kn_vectorizable(int32_t dtype, const GemvArgs& a) {
  const uint64_t es = element_size(dtype);
  return reinterpret_cast<uintptr_t>(a.w) % 16 == 0 && (a.k == 1 || uint64_t(a.ldw) * es % 16 == 0);
}

cudaError_t launch_gemv_kn(int32_t dtype, const GemvArgs& a, cudaStream_t stream) {
  if (a.m < 1 || a.m > kGemvMaxM || a.n < 1 || a.k < 1 || a.n / 8 > INT32_MAX) return cudaErrorInvalidValue;
  const bool vec = gemv_kn_vectorizable(dtype, a);
  switch (dtype) {
    case kF32:
      return launch_gemv_kn_t<float>(a, vec, stream);
    case kF16:
      return launch_gemv_kn_t<__half>(a, vec, stream);
    case kBF16:
      return launch_gemv_kn_t<__nv_bfloat16>(a, vec, stream);
    default:
      return cudaErrorInvalidValue;
  }
}

cudaError_t launch_strided_copy(int32_t dtype, void* dst, const int64_t dst_strides[3], const void* src,
                                const int64_t src_strides[3], const int64_t sizes[3], float scale,
                                cudaStream_t stream) {
  const int64_t total = sizes[0] * sizes[1] * sizes[2];
  if (total == 0) return cudaSuccess;
  Box box{sizes[1], sizes[2], dst_strides[0], dst_strides[1], dst_strides[2], 0, 0, 0};
  if (src) {
    box.s0 = src_strides[0];
    box.s1 = src_strides[1];
    box.s2 = src_strides[2];
  }
  switch (dtype) {
    case kF32:
      return launch<float>(dst, src, box, total, scale, stream);
    case kF16:
      return launch<__half>(dst, src, box, total, scale, stream);
    case kBF16:
      return launch<__nv_bfloat16>(dst, src, box, total, scale, stream);
    default:
      return cudaErrorInvalidValue;
  }
}

}  // namespace wharf_aoti

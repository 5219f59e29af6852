// SPDX-License-Identifier: Apache-2.0
#include <cuda_bf16.h>
#include <cuda_fp16.h>

#include <algorithm>

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

template <class T, int M>
cudaError_t launch_gemv_m(const GemvArgs& a, bool vec, cudaStream_t stream) {
  const int64_t units = vec ? a.k / int64_t(16 / sizeof(T)) : a.k;  // loads per weight row
  int threads = int(std::min<int64_t>(kGemvThreads, (std::max<int64_t>(units, 1) + 31) / 32 * 32));
  const unsigned blocks = unsigned((a.n + kGemvRows - 1) / kGemvRows);
  if (vec)
    gemv<T, M, true><<<blocks, threads, 0, stream>>>(a);
  else
    gemv<T, M, false><<<blocks, threads, 0, stream>>>(a);
  return cudaGetLastError();
}

template <class T>
cudaError_t launch_gemv_t(const GemvArgs& a, bool vec, cudaStream_t stream) {
  if (a.m <= 1) return launch_gemv_m<T, 1>(a, vec, stream);
  if (a.m <= 2) return launch_gemv_m<T, 2>(a, vec, stream);
  if (a.m <= 4) return launch_gemv_m<T, 4>(a, vec, stream);
  return launch_gemv_m<T, 8>(a, vec, stream);
}

}  // namespace

bool gemv_vectorizable(int32_t dtype, const GemvArgs& a) {
  const uint64_t es = element_size(dtype);
  auto aligned = [](const void* p) { return reinterpret_cast<uintptr_t>(p) % 16 == 0; };
  return (a.sxk == 1 || a.k == 1) && aligned(a.x) && aligned(a.w) && (a.m == 1 || uint64_t(a.ldx) * es % 16 == 0) &&
         (a.n == 1 || uint64_t(a.ldw) * es % 16 == 0);
}

cudaError_t launch_gemv(int32_t dtype, const GemvArgs& a, cudaStream_t stream) {
  if (a.m < 1 || a.m > kGemvMaxM || a.n < 1 || a.k < 1 || (a.n + kGemvRows - 1) / kGemvRows > INT32_MAX)
    return cudaErrorInvalidValue;
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

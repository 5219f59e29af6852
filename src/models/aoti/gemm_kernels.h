/* SPDX-License-Identifier: Apache-2.0 */
// The shim's own kernels for its GEMM fallbacks (gemm.cpp): a strided, broadcasting, scaling
// element copy, used to materialise addmm's `self` into `out` before a GEMM that accumulates
// onto it (beta * self), to make a copy of an operand whose layout cuBLASLt cannot read, and
// to write beta * self (or zeros) when K is 0; and the decode GEMV that replaces cuBLASLt
// for a few activation rows against an nn.Linear weight.
#pragma once

#include <cuda_runtime_api.h>

#include <cstdint>

namespace wharf_aoti {

// dst[b][i][j] = scale * src[b][i][j] over the box sizes[0] x sizes[1] x sizes[2], both
// addressed with element strides (src strides may be 0: broadcast); src == nullptr writes
// zeros. With scale == 1 the elements are copied bit for bit; otherwise the product is
// computed in float. dtype: PyTorch's code of float32, float16 or bfloat16 (anything else
// returns cudaErrorInvalidValue). Launched on `stream`; returns the launch's error.
cudaError_t launch_strided_copy(int32_t dtype, void* dst, const int64_t dst_strides[3], const void* src,
                                const int64_t src_strides[3], const int64_t sizes[3], float scale, cudaStream_t stream);

// out[i, j] = alpha * sum_p x[i, p] * w[j, p] (+ beta * self[i, j]) for i < m <= kGemvMaxM,
// j < n, p < k (all >= 1): w's rows are contiguous along k (an nn.Linear weight [n, k], which
// mat2 = weight.t() views with strides (1, ldw)). Element strides; self == nullptr: no self
// term (beta ignored), else self's strides may be 0 (broadcast). out's elements must not
// overlap, and neither x nor w may share memory with out; self may be out itself (each
// element is read and written by one thread). Products accumulate in float32 (sums split
// across threads, then a tree: not PyTorch's order), with FMA, or for float16/bfloat16 with
// 5 to 8 rows on the tensor cores (mma with float32 accumulation); alpha and beta apply in
// float32, and the result is rounded to the dtype once. All 8-byte pointers and integers are passed as
// the kernel's one by-value parameter (graph re-pointing finds the pointers in it).
constexpr int64_t kGemvMaxM = 8;
struct GemvArgs {
  const void* x;
  const void* w;
  const void* self;
  void* out;
  int64_t m, n, k;
  int64_t ldx, sxk;  // x[i, p] at x[i * ldx + p * sxk]
  int64_t ldw;       // w[j, p] at w[j * ldw + p] (launch_gemv_kn: w[p, j] at w[p * ldw + j])
  int64_t self_sm, self_sn;
  int64_t out_sm, out_sn;
  float alpha, beta;
  int32_t pdl;  // 1: launched with programmatic dependent launch (prefetches weight lines before its wait)
  int32_t pad = 0;
};
// Whether launch_gemv uses 16-byte loads (else element loads, slower): x and w 16-byte
// aligned, x's elements contiguous, and their row strides multiples of 16 bytes. K need not
// be a multiple of the vector (the tail is read element by element).
bool gemv_vectorizable(int32_t dtype, const GemvArgs& a);
// Which kernel serves an nn.Linear-layout GEMV, by the shim's GEMV mode (1 on; 2 float16/
// bfloat16 with 5 to 8 rows on the FMA kernel rather than the tensor cores; 3 as 1 but
// those rows above a measured weight size on cuBLASLt): every tuned rule is in this function
// and the table above it (gemm_kernels.cu).
enum class GemvRoute { kFma, kMma, kCublasLt };
GemvRoute gemv_route(int32_t dtype, const GemvArgs& a, int32_t mode);
// Enqueues the GEMV on `stream` (no allocation, no synchronisation; a kernel launch whose
// parameters graph capture records as an array; with a.pdl set, a programmatic dependent
// launch: the kernel may start while the stream's previous kernel finishes and waits for it
// before reading x or self or writing out). dtype: float32, float16 or bfloat16; mode as
// for gemv_route. Returns the launch's error (cudaErrorInvalidValue for arguments out of
// range, cudaErrorNotSupported, launching nothing, where gemv_route says kCublasLt).
cudaError_t launch_gemv(int32_t dtype, const GemvArgs& a, int32_t mode, cudaStream_t stream);

// The same product against a row-major mat2 [k, n] (GPT-2's Conv1D weight, strides (ldw, 1)):
// w[p, j] at w[p * ldw + j], GemvArgs otherwise as above. Threads run across n with 16-byte
// loads along a row of w; K is split across a block's threads and their float32 sums reduced
// in a fixed order (deterministic). Element loads where w's start or row stride is not a
// multiple of 16 bytes (gemv_kn_vectorizable) and for the last columns when n is not a
// multiple of the vector; x is read element by element with any strides. A plain kernel
// launch, no allocation. Returns the launch's error (cudaErrorInvalidValue out of range).
bool gemv_kn_vectorizable(int32_t dtype, const GemvArgs& a);
cudaError_t launch_gemv_kn(int32_t dtype, const GemvArgs& a, cudaStream_t stream);

}  // namespace wharf_aoti

// SPDX-License-Identifier: Apache-2.0
// The AOTInductor shim's GEMM fallback against cuBLASLt called directly, for decode-like
// shapes: out[1, N] = x[1, K] @ W^T with W an nn.Linear weight [N, K] (row-major) in
// bfloat16, K = N = 2048, 4096, 8192 (and aoti_torch_cuda_addmm_out with a bias [N]).
//
//   shim_gemm_bench [--reps R]
//
// The baseline is what a hand-written runtime does: descriptors made once, the heuristic's
// first choice, a preallocated 32 MiB workspace, one cublasLtMatmul per GEMM. The shim gets
// AtenTensorHandles and does its whole per-call work (argument checks, layout choice,
// descriptors on the stack, the cached heuristic lookup, workspace if the algorithm needs
// one). Each GEMM reads one of several weight copies in turn (together > 256 MiB), so W
// comes from HBM as in a decode step rather than from L2. Columns: GPU time per GEMM (R
// GEMMs back to back between two events, median of 5 runs) and host time per call (the same
// loop's enqueue time on the CPU), for each side; then the shim's GPU time over the
// baseline's. The shim's result is checked against the baseline's (within 1%: both run
// cuBLASLt's first choice for the same problem) before timing.
#include <cublasLt.h>
#include <cuda_runtime_api.h>
#include <dlfcn.h>
#include <unistd.h>

#include <cmath>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <string>
#include <vector>

#include "bench_common.h"

namespace {

using H = void*;
constexpr int32_t kBF16 = 15, kCuda = 1;

[[noreturn]] void die(const std::string& what) {
  std::fprintf(stderr, "shim_gemm_bench: %s\n", what.c_str());
  std::exit(2);
}

std::string self_dir() {
  char buf[4096];
  ssize_t n = readlink("/proc/self/exe", buf, sizeof buf - 1);
  if (n <= 0) return ".";
  buf[n] = 0;
  std::string s(buf);
  return s.substr(0, s.rfind('/'));
}

void* open_first(const std::vector<std::string>& paths, const char* what) {
  std::string tried;
  for (const std::string& p : paths) {
    if (void* h = dlopen(p.c_str(), RTLD_NOW | RTLD_LOCAL)) return h;
    const char* e = dlerror();
    tried += " " + p + ": " + (e ? e : "?") + ";";
  }
  die(std::string("cannot load ") + what + ":" + tried);
}

template <class F>
F sym(void* lib, const char* name) {
  void* p = dlsym(lib, name);
  if (!p) die(std::string("missing symbol ") + name);
  return reinterpret_cast<F>(p);
}

struct Shim {
  int32_t (*from_blob)(void*, int64_t, const int64_t*, const int64_t*, int64_t, int32_t, int32_t, int32_t, H*);
  int32_t (*del)(H);
  int32_t (*guard)(void*, int32_t, void**);
  int32_t (*unguard)(void*);
  int32_t (*mm_out)(H, H, H);
  int32_t (*addmm_out)(H, H, H, H, double, double);
  const char* (*last_error)();
};

struct Lt {
  decltype(&cublasLtCreate) Create;
  decltype(&cublasLtMatmul) Matmul;
  decltype(&cublasLtMatmulDescCreate) DescCreate;
  decltype(&cublasLtMatmulDescSetAttribute) DescSet;
  decltype(&cublasLtMatrixLayoutCreate) LayoutCreate;
  decltype(&cublasLtMatmulPreferenceCreate) PrefCreate;
  decltype(&cublasLtMatmulPreferenceSetAttribute) PrefSet;
  decltype(&cublasLtMatmulAlgoGetHeuristic) Heuristic;
};

void lt_ok(cublasStatus_t s, const char* what) {
  if (s != CUBLAS_STATUS_SUCCESS) die(std::string(what) + ": cublasStatus " + std::to_string(int(s)));
}

struct Timing {
  double gpu_us, host_us;
};

// R calls of `call(i)` back to back on `stream`, 5 times: the median GPU and host time per call.
template <class F>
Timing time_calls(cudaStream_t stream, int reps, F&& call) {
  cudaEvent_t e0, e1;
  CUDA_OK(cudaEventCreate(&e0));
  CUDA_OK(cudaEventCreate(&e1));
  for (int i = 0; i < 20; ++i) call(i);  // warm-up: heuristic caches, pool growth
  CUDA_OK(cudaStreamSynchronize(stream));
  std::vector<double> gpu, host;
  for (int run = 0; run < 5; ++run) {
    CUDA_OK(cudaEventRecord(e0, stream));
    auto t0 = bench::Clock::now();
    for (int i = 0; i < reps; ++i) call(i);
    host.push_back(bench::us_since(t0) / reps);
    CUDA_OK(cudaEventRecord(e1, stream));
    CUDA_OK(cudaEventSynchronize(e1));
    float ms = 0;
    CUDA_OK(cudaEventElapsedTime(&ms, e0, e1));
    gpu.push_back(ms * 1000.0 / reps);
  }
  cudaEventDestroy(e0);
  cudaEventDestroy(e1);
  return {bench::median(gpu), bench::median(host)};
}

}  // namespace

int main(int argc, char** argv) {
  int reps = 200;
  for (int i = 1; i < argc; ++i) {
    if (std::strcmp(argv[i], "--reps") == 0 && i + 1 < argc)
      reps = std::atoi(argv[++i]);
    else
      die(std::string("usage: shim_gemm_bench [--reps R] (unknown argument ") + argv[i] + ")");
  }
  int ndev = 0;
  if (cudaGetDeviceCount(&ndev) != cudaSuccess || ndev == 0) die("no CUDA device");
  CUDA_OK(cudaSetDevice(0));

  std::vector<std::string> shim_paths;
  if (const char* env = std::getenv("WHARF_AOTI_SHIM"))
    if (*env) shim_paths.push_back(env);
  shim_paths.push_back(self_dir() + "/libwharf_aoti_shim.so");
  shim_paths.push_back(self_dir() + "/../libwharf_aoti_shim.so");
  void* shim_lib = open_first(shim_paths, "libwharf_aoti_shim.so");
  Shim shim{sym<decltype(Shim::from_blob)>(shim_lib, "aoti_torch_create_tensor_from_blob"),
            sym<decltype(Shim::del)>(shim_lib, "aoti_torch_delete_tensor_object"),
            sym<decltype(Shim::guard)>(shim_lib, "aoti_torch_create_cuda_stream_guard"),
            sym<decltype(Shim::unguard)>(shim_lib, "aoti_torch_delete_cuda_stream_guard"),
            sym<decltype(Shim::mm_out)>(shim_lib, "aoti_torch_cuda_mm_out"),
            sym<decltype(Shim::addmm_out)>(shim_lib, "aoti_torch_cuda_addmm_out"),
            sym<decltype(Shim::last_error)>(shim_lib, "wharf_aoti_last_error")};

  std::vector<std::string> lt_paths;
  if (const char* env = std::getenv("WHARF_CUBLASLT_LIBRARY"))
    if (*env) lt_paths.push_back(env);
  lt_paths.push_back("libcublasLt.so." + std::to_string(CUBLAS_VER_MAJOR));
  lt_paths.push_back("/usr/local/cuda/lib64/libcublasLt.so." + std::to_string(CUBLAS_VER_MAJOR));
  void* lt_lib = open_first(lt_paths, "cuBLASLt");
  Lt lt{sym<decltype(Lt::Create)>(lt_lib, "cublasLtCreate"),
        sym<decltype(Lt::Matmul)>(lt_lib, "cublasLtMatmul"),
        sym<decltype(Lt::DescCreate)>(lt_lib, "cublasLtMatmulDescCreate"),
        sym<decltype(Lt::DescSet)>(lt_lib, "cublasLtMatmulDescSetAttribute"),
        sym<decltype(Lt::LayoutCreate)>(lt_lib, "cublasLtMatrixLayoutCreate"),
        sym<decltype(Lt::PrefCreate)>(lt_lib, "cublasLtMatmulPreferenceCreate"),
        sym<decltype(Lt::PrefSet)>(lt_lib, "cublasLtMatmulPreferenceSetAttribute"),
        sym<decltype(Lt::Heuristic)>(lt_lib, "cublasLtMatmulAlgoGetHeuristic")};
  cublasLtHandle_t handle;
  lt_ok(lt.Create(&handle), "cublasLtCreate");

  cudaStream_t stream;
  CUDA_OK(cudaStreamCreateWithFlags(&stream, cudaStreamNonBlocking));
  void* guard = nullptr;
  if (shim.guard(stream, 0, &guard) != 0) die(std::string("stream guard: ") + shim.last_error());
  const size_t ws_bytes = 32u << 20;
  void* workspace = nullptr;
  CUDA_OK(cudaMalloc(&workspace, ws_bytes));

  cudaDeviceProp prop;
  CUDA_OK(cudaGetDeviceProperties(&prop, 0));
  std::printf("shim_gemm_bench: %s, bf16, M = 1, out = x @ W^T (W [N, K] row-major), %d GEMMs per timing\n", prop.name,
              reps);
  std::printf("%-6s %-6s | %12s %12s | %12s %12s %8s | %12s %12s\n", "K", "N", "direct us", "direct host", "shim mm us",
              "shim host", "ratio", "addmm us", "addmm host");

  for (int64_t size : {2048, 4096, 8192}) {
    const int64_t K = size, N = size;
    const size_t w_bytes = size_t(N * K) * 2;
    const int copies = int(std::max<size_t>(1, (256u << 20) / w_bytes + 1));
    std::vector<void*> w(static_cast<size_t>(copies));
    for (void*& p : w) {
      CUDA_OK(cudaMalloc(&p, w_bytes));
      CUDA_OK(cudaMemset(p, 0x3c, w_bytes));  // bf16 0x3c3c ~ 0.0115
    }
    void *x, *bias, *out_direct, *out_shim;
    CUDA_OK(cudaMalloc(&x, size_t(K) * 2));
    CUDA_OK(cudaMemset(x, 0x3f, size_t(K) * 2));  // ~0.75
    CUDA_OK(cudaMalloc(&bias, size_t(N) * 2));
    CUDA_OK(cudaMemset(bias, 0x3f, size_t(N) * 2));
    CUDA_OK(cudaMalloc(&out_direct, size_t(N) * 2));
    CUDA_OK(cudaMalloc(&out_shim, size_t(N) * 2));

    // Direct: out^T [N, 1] = W [N, K] (stored K x N column-major, transposed) x x^T [K, 1].
    cublasLtMatmulDesc_t desc;
    lt_ok(lt.DescCreate(&desc, CUBLAS_COMPUTE_32F, CUDA_R_32F), "desc");
    const int32_t t = CUBLAS_OP_T, nop = CUBLAS_OP_N;
    lt_ok(lt.DescSet(desc, CUBLASLT_MATMUL_DESC_TRANSA, &t, sizeof t), "transa");
    lt_ok(lt.DescSet(desc, CUBLASLT_MATMUL_DESC_TRANSB, &nop, sizeof nop), "transb");
    cublasLtMatrixLayout_t la, lb, ld;
    lt_ok(lt.LayoutCreate(&la, CUDA_R_16BF, uint64_t(K), uint64_t(N), K), "layout a");
    lt_ok(lt.LayoutCreate(&lb, CUDA_R_16BF, uint64_t(K), 1, K), "layout b");
    lt_ok(lt.LayoutCreate(&ld, CUDA_R_16BF, uint64_t(N), 1, N), "layout d");
    cublasLtMatmulPreference_t pref;
    lt_ok(lt.PrefCreate(&pref), "pref");
    const uint64_t ws = ws_bytes;
    lt_ok(lt.PrefSet(pref, CUBLASLT_MATMUL_PREF_MAX_WORKSPACE_BYTES, &ws, sizeof ws), "pref ws");
    cublasLtMatmulHeuristicResult_t result;
    int found = 0;
    lt_ok(lt.Heuristic(handle, desc, la, lb, ld, ld, pref, 1, &result, &found), "heuristic");
    if (found == 0) die("no cuBLASLt algorithm");
    const float one = 1, zero = 0;
    auto direct = [&](int i) {
      lt_ok(lt.Matmul(handle, desc, &one, w[size_t(i % copies)], la, x, lb, &zero, out_direct, ld, out_direct, ld,
                      &result.algo, workspace, ws_bytes, stream),
            "cublasLtMatmul");
    };

    // The shim: the handles a compiled model passes (x [1, K], W^T as a [K, N] view with
    // strides (1, K), out [1, N], bias [N]).
    const int64_t xs[2] = {1, K}, xst[2] = {K, 1}, wts[2] = {K, N}, wtst[2] = {1, K}, os[2] = {1, N}, ost[2] = {N, 1},
                  bs[1] = {N}, bst[1] = {1};
    H hx, hout, hbias;
    std::vector<H> hw(static_cast<size_t>(copies));
    if (shim.from_blob(x, 2, xs, xst, 0, kBF16, kCuda, 0, &hx) ||
        shim.from_blob(out_shim, 2, os, ost, 0, kBF16, kCuda, 0, &hout) ||
        shim.from_blob(bias, 1, bs, bst, 0, kBF16, kCuda, 0, &hbias))
      die(std::string("from_blob: ") + shim.last_error());
    for (int c = 0; c < copies; ++c)
      if (shim.from_blob(w[size_t(c)], 2, wts, wtst, 0, kBF16, kCuda, 0, &hw[size_t(c)]))
        die(std::string("from_blob: ") + shim.last_error());
    auto via_shim = [&](int i) {
      if (shim.mm_out(hout, hx, hw[size_t(i % copies)]) != 0) die(std::string("mm_out: ") + shim.last_error());
    };
    auto via_addmm = [&](int i) {
      if (shim.addmm_out(hout, hbias, hx, hw[size_t(i % copies)], 1.0, 1.0) != 0)
        die(std::string("addmm_out: ") + shim.last_error());
    };

    direct(0);
    via_shim(0);
    CUDA_OK(cudaStreamSynchronize(stream));
    std::vector<uint16_t> a(static_cast<size_t>(N)), b(static_cast<size_t>(N));
    CUDA_OK(cudaMemcpy(a.data(), out_direct, a.size() * 2, cudaMemcpyDeviceToHost));
    CUDA_OK(cudaMemcpy(b.data(), out_shim, b.size() * 2, cudaMemcpyDeviceToHost));
    auto value = [](uint16_t v) {
      const uint32_t bits = uint32_t(v) << 16;
      float f;
      std::memcpy(&f, &bits, 4);
      return f;
    };
    for (size_t i = 0; i < a.size(); ++i)
      if (!(std::fabs(value(a[i]) - value(b[i])) <= 0.01f * std::fabs(value(a[i]))))
        die("the shim's result differs from cuBLASLt's for K = N = " + std::to_string(size) + " at " +
            std::to_string(i) + ": " + std::to_string(value(b[i])) + " vs " + std::to_string(value(a[i])));

    const Timing td = time_calls(stream, reps, direct);
    const Timing ts = time_calls(stream, reps, via_shim);
    const Timing tb = time_calls(stream, reps, via_addmm);
    std::printf("%-6lld %-6lld | %12.2f %12.2f | %12.2f %12.2f %8.3f | %12.2f %12.2f\n", (long long)K, (long long)N,
                td.gpu_us, td.host_us, ts.gpu_us, ts.host_us, ts.gpu_us / td.gpu_us, tb.gpu_us, tb.host_us);

    for (H h : hw) shim.del(h);
    shim.del(hx);
    shim.del(hout);
    shim.del(hbias);
    CUDA_OK(cudaStreamSynchronize(stream));
    for (void* p : w) CUDA_OK(cudaFree(p));
    CUDA_OK(cudaFree(x));
    CUDA_OK(cudaFree(bias));
    CUDA_OK(cudaFree(out_direct));
    CUDA_OK(cudaFree(out_shim));
  }
  shim.unguard(guard);
  CUDA_OK(cudaFree(workspace));
  return 0;
}

// SPDX-License-Identifier: Apache-2.0
// The AOTInductor shim's GEMM fallback for decode shapes against cuBLASLt called directly
// and against the memory bound: out[M, N] = x[M, K] @ W^T with W an nn.Linear weight [N, K]
// (row-major), M = 1 and 8, (K, N) = (2048, 2048), (4096, 4096), (8192, 8192), (4096, 14336),
// (14336, 4096), a Llama-3.2-1B layer's (2048, 512) (k/v_proj), (2048, 8192) (gate/up) and
// (8192, 2048) (down), and LM heads (2048, 128256), (4096, 128256); then out = x @ W with W a
// row-major [K, N] weight (GPT-2's Conv1D; layout "KN"): GPT-2's (768, 2304), (768, 768),
// (768, 3072), (3072, 768), GPT-2 XL's (1600, 6400), (6400, 1600), and (4096, 4096).
//
//   shim_gemm_bench [--reps R] [--dtype bf16|f16|f32] [--m M[,M...]] [--csv PATH]
//
// --csv writes the rows also as CSV (what scripts/gpu-run.sh collects).
//
//   shim_gemm_bench --probe-graph [--dtype bf16|f16|f32] [--csv PATH]
//
// instead asks, for bfloat16, float16 and float32 at M = 16, 32, 64, 128 and (N, K) = (2048,
// 2048), (8192, 2048), (2048, 8192), (128256, 2048), which cuBLASLt algorithms CUDA graphs can
// re-point (wharf_aoti_gemm_probe: the eager choice, the heuristic's 16 candidates and the
// search per algorithm ID, each captured and read) and what the shim's graph choice costs:
// the GPU time of one GEMM (median of 50, each run alone behind a gate so the host's enqueue
// is not timed) with the eager choice, the graph choice and the fastest qualifying one. The
// eager and graph results are checked against the exact product (within 1%); a wrong one is
// named in the row, listed at the end, and the exit status is 1.
//
// Rows: "bound" is the weight's bytes over the device's copy bandwidth (a 1 GiB
// device-to-device cudaMemcpyAsync, read plus write bytes over its time): what a kernel that
// only streams the weight can approach. "cuBLASLt" is what a hand-written runtime does:
// descriptors made once, the heuristic's first choice, a preallocated 32 MiB workspace, one
// cublasLtMatmul per GEMM. "shim Lt" is aoti_torch_cuda_mm_out with the GEMV path switched
// off (wharf_aoti_gemm_use_gemv(0): the shim's per-call work around the same cuBLASLt call),
// "GEMV" with it on (the shim's own kernel, src/models/aoti/gemm_kernels.cu), "addmm" the
// GEMV with a bias [N] (aoti_torch_cuda_addmm_out), "FMA only" the GEMV for float16/bfloat16
// with 5 to 8 rows on the FMA kernel instead of the tensor cores (wharf_aoti_gemm_use_gemv(2)), "PDL" the GEMV
// launched with programmatic dependent launch (wharf_aoti_gemm_use_pdl(1): back to back, each GEMV may start
// and prefetch its weight into L2 while the previous one finishes). Each GEMM reads one of
// several weight copies in turn (together > 256 MiB), so W comes from HBM as in a decode step rather than from L2.
// Times are GPU microseconds per GEMM (R GEMMs back to back between two events): the median of 7 runs with [min, max];
// "%bound" is bound / time; "host" is the shim's enqueue time per call on the CPU. The GEMV's and the shim's results
// are checked against cuBLASLt's (within 1%) before timing, and the path each took is checked with
// wharf_aoti_gemm_stats.
#include <cublasLt.h>
#include <cuda_runtime_api.h>
#include <dlfcn.h>
#include <unistd.h>

#include <atomic>
#include <cmath>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <memory>
#include <string>
#include <thread>
#include <utility>
#include <vector>

#include "bench_common.h"
#include "models/aoti/shim_host.h"

namespace {

using H = void*;
constexpr int32_t kF16 = 5, kF32 = 6, kBF16 = 15, kCuda = 1;

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
  void (*gemm_stats)(void*);
  int32_t (*use_gemv)(int32_t);
  int32_t (*use_pdl)(int32_t);
};

struct Stats {
  uint32_t struct_size = sizeof(Stats);
  uint64_t gemv = 0, gemv_elementwise = 0, cublaslt = 0, gemv_kn = 0;
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
  double gpu_us, min_us, max_us, host_us;
};

// R calls of `call(i)` back to back on `stream`, 7 times: the median (and extremes) of the GPU
// time per call, the median host time per call.
template <class F>
Timing time_calls(cudaStream_t stream, int reps, F&& call) {
  cudaEvent_t e0, e1;
  CUDA_OK(cudaEventCreate(&e0));
  CUDA_OK(cudaEventCreate(&e1));
  for (int i = 0; i < 20; ++i) call(i);  // warm-up: heuristic caches, pool growth
  CUDA_OK(cudaStreamSynchronize(stream));
  std::vector<double> gpu, host;
  for (int run = 0; run < 7; ++run) {
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
  return {bench::median(gpu), *std::min_element(gpu.begin(), gpu.end()), *std::max_element(gpu.begin(), gpu.end()),
          bench::median(host)};
}

// Device-to-device copy bandwidth in bytes/s (read plus write), median of 7 copies of 1 GiB.
double copy_bandwidth(cudaStream_t stream) {
  const size_t bytes = size_t(1) << 30;
  void *a, *b;
  CUDA_OK(cudaMalloc(&a, bytes));
  CUDA_OK(cudaMalloc(&b, bytes));
  CUDA_OK(cudaMemset(a, 1, bytes));
  cudaEvent_t e0, e1;
  CUDA_OK(cudaEventCreate(&e0));
  CUDA_OK(cudaEventCreate(&e1));
  std::vector<double> bw;
  for (int i = 0; i < 8; ++i) {
    CUDA_OK(cudaEventRecord(e0, stream));
    CUDA_OK(cudaMemcpyAsync(b, a, bytes, cudaMemcpyDeviceToDevice, stream));
    CUDA_OK(cudaEventRecord(e1, stream));
    CUDA_OK(cudaEventSynchronize(e1));
    float ms = 0;
    CUDA_OK(cudaEventElapsedTime(&ms, e0, e1));
    if (i > 0) bw.push_back(2.0 * double(bytes) / (ms * 1e-3));  // the first warms up
  }
  cudaEventDestroy(e0);
  cudaEventDestroy(e1);
  CUDA_OK(cudaFree(a));
  CUDA_OK(cudaFree(b));
  return bench::median(bw);
}

float to_f32(int32_t dtype, const unsigned char* p) {
  if (dtype == kF32) {
    float f;
    std::memcpy(&f, p, 4);
    return f;
  }
  uint16_t h;
  std::memcpy(&h, p, 2);
  if (dtype == kBF16) {
    const uint32_t bits = uint32_t(h) << 16;
    float f;
    std::memcpy(&f, &bits, 4);
    return f;
  }
  const int sign = h >> 15, exp = (h >> 10) & 31, mant = h & 1023;
  const float v = exp == 0 ? std::ldexp(float(mant), -24) : std::ldexp(float(1024 + mant), exp - 25);
  return sign ? -v : v;
}

// ---- --probe-graph: which cuBLASLt algorithms CUDA graphs can re-point, and their cost ----

// Blocks the stream until released: the events around a timed GEMM then measure its GPU time,
// not the host's enqueue time (a decode-sized GEMM runs shorter than cublasLtMatmul's host
// call).
void CUDART_CB wait_gate(void* gate) {
  auto* g = static_cast<std::atomic<int>*>(gate);
  while (g->load(std::memory_order_acquire) == 0) std::this_thread::yield();
}

// GPU microseconds of one call(i), median of `runs` runs, each gated.
template <class F>
double time_gated(cudaStream_t stream, int runs, F&& call) {
  cudaEvent_t e0, e1;
  CUDA_OK(cudaEventCreate(&e0));
  CUDA_OK(cudaEventCreate(&e1));
  for (int i = 0; i < 3; ++i) call(i);  // warm-up
  std::vector<double> us;
  std::atomic<int> gate{0};
  for (int r = 0; r < runs; ++r) {
    gate.store(0);
    CUDA_OK(cudaLaunchHostFunc(stream, wait_gate, &gate));
    CUDA_OK(cudaEventRecord(e0, stream));
    call(r);
    CUDA_OK(cudaEventRecord(e1, stream));
    gate.store(1, std::memory_order_release);
    CUDA_OK(cudaEventSynchronize(e1));
    float ms = 0;
    CUDA_OK(cudaEventElapsedTime(&ms, e0, e1));
    us.push_back(ms * 1000.0);
  }
  cudaEventDestroy(e0);
  cudaEventDestroy(e1);
  return bench::median(us);
}

// Selects CUDA device 0 and loads the shim: $WHARF_AOTI_SHIM, else beside this binary (the
// GPU bundle), else the build folder. Exits naming what failed.
void* open_shim_on_device0() {
  int ndev = 0;
  if (cudaGetDeviceCount(&ndev) != cudaSuccess || ndev == 0) die("no CUDA device");
  CUDA_OK(cudaSetDevice(0));
  std::vector<std::string> shim_paths;
  if (const char* env = std::getenv("WHARF_AOTI_SHIM"))
    if (*env) shim_paths.push_back(env);
  shim_paths.push_back(self_dir() + "/libwharf_aoti_shim.so");
  shim_paths.push_back(self_dir() + "/../libwharf_aoti_shim.so");
  return open_first(shim_paths, "libwharf_aoti_shim.so");
}

int probe_graph_main(const std::vector<int32_t>& dtypes, const std::string& csv_path) {
  void* shim_lib = open_shim_on_device0();
  auto from_blob = sym<decltype(Shim::from_blob)>(shim_lib, "aoti_torch_create_tensor_from_blob");
  auto del = sym<decltype(Shim::del)>(shim_lib, "aoti_torch_delete_tensor_object");
  auto guard_fn = sym<decltype(Shim::guard)>(shim_lib, "aoti_torch_create_cuda_stream_guard");
  auto unguard = sym<decltype(Shim::unguard)>(shim_lib, "aoti_torch_delete_cuda_stream_guard");
  auto mm_out = sym<decltype(Shim::mm_out)>(shim_lib, "aoti_torch_cuda_mm_out");
  auto last_error = sym<decltype(Shim::last_error)>(shim_lib, "wharf_aoti_last_error");
  auto graph_algos = sym<wharf_aoti_gemm_graph_algos_fn>(shim_lib, "wharf_aoti_gemm_graph_algos");
  auto probe = sym<wharf_aoti_gemm_probe_fn>(shim_lib, "wharf_aoti_gemm_probe");

  std::vector<std::string> lt_paths;
  if (const char* env = std::getenv("WHARF_CUBLASLT_LIBRARY"))
    if (*env) lt_paths.push_back(env);
  lt_paths.push_back("libcublasLt.so." + std::to_string(CUBLAS_VER_MAJOR));
  lt_paths.push_back("/usr/local/cuda/lib64/libcublasLt.so." + std::to_string(CUBLAS_VER_MAJOR));
  void* lt_lib = open_first(lt_paths, "cuBLASLt");
  auto Create = sym<decltype(&cublasLtCreate)>(lt_lib, "cublasLtCreate");
  auto Matmul = sym<decltype(&cublasLtMatmul)>(lt_lib, "cublasLtMatmul");
  auto DescCreate = sym<decltype(&cublasLtMatmulDescCreate)>(lt_lib, "cublasLtMatmulDescCreate");
  auto DescDestroy = sym<decltype(&cublasLtMatmulDescDestroy)>(lt_lib, "cublasLtMatmulDescDestroy");
  auto DescSet = sym<decltype(&cublasLtMatmulDescSetAttribute)>(lt_lib, "cublasLtMatmulDescSetAttribute");
  auto LayoutCreate = sym<decltype(&cublasLtMatrixLayoutCreate)>(lt_lib, "cublasLtMatrixLayoutCreate");
  auto LayoutDestroy = sym<decltype(&cublasLtMatrixLayoutDestroy)>(lt_lib, "cublasLtMatrixLayoutDestroy");
  cublasLtHandle_t handle;
  lt_ok(Create(&handle), "cublasLtCreate");

  cudaStream_t stream;
  CUDA_OK(cudaStreamCreateWithFlags(&stream, cudaStreamNonBlocking));
  void* guard = nullptr;
  if (guard_fn(stream, 0, &guard) != 0) die(std::string("stream guard: ") + last_error());
  const size_t ws_bytes = 32u << 20;
  void* workspace = nullptr;
  CUDA_OK(cudaMalloc(&workspace, ws_bytes));
  cudaDeviceProp prop;
  CUDA_OK(cudaGetDeviceProperties(&prop, 0));
  constexpr int kRuns = 50;
  std::printf(
      "shim_gemm_bench --probe-graph: %s, out [M, N] = x [M, K] @ W^T (W [N, K] row-major, what the shim gives "
      "cuBLASLt as D^T = W x^T)\n"
      "cands: the eager choice and the heuristic's list + the search per other algorithm ID; params: list indices "
      "whose kernels take a "
      "parameter array (R: also re-pointable, what qualifies); chosen: the shim's graph algorithm (list index, "
      "h = heuristic list, i = ID search, algo id); times: GPU us of one GEMM, median of %d (weights rotated "
      "beyond L2), default = list index 0 (the shim's eager choice), best = fastest qualifying\n",
      prop.name, kRuns);
  std::printf("%-4s %-4s %-6s %-5s | %-9s | %-34s | %-4s | %-13s %-13s | %8s %8s %8s | %6s %6s | %8s | %s\n", "dt", "M",
              "N", "K", "cands", "params (heuristic list)", "ids", "chosen", "best", "default", "chosen", "best",
              "ch/def", "bst/df", "probe", "results");
  FILE* csv = nullptr;
  if (!csv_path.empty()) {
    csv = std::fopen(csv_path.c_str(), "w");
    if (!csv) die("cannot write " + csv_path);
    std::fprintf(csv,
                 "device,dtype,m,n,k,heuristic,candidates,heuristic_params,heuristic_repointable,ids_qualifying,"
                 "chosen,chosen_source,chosen_algo_id,default_us,chosen_us,best_us,best_index,best_algo_id,probe_ms,"
                 "results\n");
  }
  std::string failures;  // results that were wrong (reported at the end; exit status 1)
  const int64_t ms[] = {16, 32, 64, 128};
  const std::pair<int64_t, int64_t> nks[] = {{2048, 2048}, {8192, 2048}, {2048, 8192}, {128256, 2048}};
  for (int32_t dtype : dtypes) {
    const cudaDataType_t ctype = dtype == kF32 ? CUDA_R_32F : dtype == kF16 ? CUDA_R_16F : CUDA_R_16BF;
    const size_t es = dtype == kF32 ? 4 : 2;
    const char* dname = dtype == kF32 ? "f32" : dtype == kF16 ? "f16" : "bf16";
    for (const auto& nk : nks)
      for (int64_t M : ms) {
        const int64_t N = nk.first, K = nk.second;
        const size_t w_bytes = size_t(N * K) * es;
        const int copies = int(std::max<size_t>(1, (256u << 20) / w_bytes + 1));
        std::vector<void*> w(static_cast<size_t>(copies));
        for (void*& p : w) {
          CUDA_OK(cudaMalloc(&p, w_bytes));
          CUDA_OK(cudaMemset(p, 0x3c, w_bytes));
        }
        void *x, *out_default, *out_graph;
        CUDA_OK(cudaMalloc(&x, size_t(M * K) * es));
        CUDA_OK(cudaMemset(x, dtype == kF16 ? 0x1f : 0x3f, size_t(M * K) * es));
        CUDA_OK(cudaMalloc(&out_default, size_t(M * N) * es));
        CUDA_OK(cudaMalloc(&out_graph, size_t(M * N) * es));
        // cudaMemset runs on the legacy default stream, which the GEMMs' non-blocking stream
        // does not wait for: without this, a large GEMM read W while it was still being
        // filled (the "eager BAD: [0] 0" of f32 N = 128256 in session 6 was this bench's race).
        CUDA_OK(cudaDeviceSynchronize());
        const int64_t xs[2] = {M, K}, xst[2] = {K, 1}, wts[2] = {K, N}, wtst[2] = {1, K}, os[2] = {M, N},
                      ost[2] = {N, 1};
        H hx, hw, hd, hg;
        if (from_blob(x, 2, xs, xst, 0, dtype, kCuda, 0, &hx) ||
            from_blob(w[0], 2, wts, wtst, 0, dtype, kCuda, 0, &hw) ||
            from_blob(out_default, 2, os, ost, 0, dtype, kCuda, 0, &hd) ||
            from_blob(out_graph, 2, os, ost, 0, dtype, kCuda, 0, &hg))
          die(std::string("from_blob: ") + last_error());
        // The shim's eager result (graph algorithms off), then the probe's (its chosen algorithm).
        const int32_t previous = graph_algos(0);
        if (mm_out(hd, hx, hw) != 0) die(std::string("mm_out: ") + last_error());
        graph_algos(previous);
        auto rep = std::make_unique<wharf_aoti_gemm_probe_t>();
        rep->struct_size = sizeof(wharf_aoti_gemm_probe_t);
        if (probe(hg, hx, hw, 1u, rep.get()) != 0) die(std::string("wharf_aoti_gemm_probe: ") + last_error());
        CUDA_OK(cudaStreamSynchronize(stream));
        std::vector<unsigned char> a(size_t(M * N) * es), b(a.size());
        CUDA_OK(cudaMemcpy(a.data(), out_default, a.size(), cudaMemcpyDeviceToHost));
        CUDA_OK(cudaMemcpy(b.data(), out_graph, b.size(), cudaMemcpyDeviceToHost));
        // Every element is K * x * w (the buffers are filled with one value each): each result
        // is checked against it (within 1%), so a wrong one is named rather than only a mismatch.
        unsigned char xv[4], wv[4];
        std::memset(xv, dtype == kF16 ? 0x1f : 0x3f, sizeof xv);
        std::memset(wv, 0x3c, sizeof wv);
        const float expect = float(K) * to_f32(dtype, xv) * to_f32(dtype, wv);
        std::string check;
        for (int which = 0; which < 2; ++which) {
          const std::vector<unsigned char>& r = which == 0 ? a : b;
          for (size_t i = 0; i < size_t(M * N); ++i) {
            const float v = to_f32(dtype, &r[i * es]);
            if (!(std::fabs(v - expect) <= 0.01f * std::fabs(expect))) {
              char msg[96];
              std::snprintf(msg, sizeof msg, "%s%s BAD: [%zu] %.4g, expected %.4g", check.empty() ? "" : "; ",
                            which == 0 ? "eager" : "graph", i, double(v), double(expect));
              check += msg;
              break;
            }
          }
        }
        if (!check.empty())
          failures += std::string(dname) + " M " + std::to_string(M) + " N " + std::to_string(N) + " K " +
                      std::to_string(K) + ": " + check + "\n";
        if (rep->m != N || rep->n != M || rep->k != K || !rep->transa || rep->transb)
          die("the shim oriented the problem unexpectedly (m " + std::to_string(rep->m) + ", n " +
              std::to_string(rep->n) + ", transa " + std::to_string(rep->transa) + ")");

        // Each candidate run directly, as the shim runs it: D^T [N, M] = W (K x N stored, T) x^T (K x M).
        cublasLtMatmulDesc_t desc;
        lt_ok(DescCreate(&desc, CUBLAS_COMPUTE_32F, CUDA_R_32F), "desc");
        const int32_t t = CUBLAS_OP_T, nop = CUBLAS_OP_N;
        lt_ok(DescSet(desc, CUBLASLT_MATMUL_DESC_TRANSA, &t, sizeof t), "transa");
        lt_ok(DescSet(desc, CUBLASLT_MATMUL_DESC_TRANSB, &nop, sizeof nop), "transb");
        cublasLtMatrixLayout_t la, lb, ld;
        lt_ok(LayoutCreate(&la, ctype, uint64_t(K), uint64_t(N), rep->lda), "layout a");
        lt_ok(LayoutCreate(&lb, ctype, uint64_t(K), uint64_t(M), rep->ldb), "layout b");
        lt_ok(LayoutCreate(&ld, ctype, uint64_t(N), uint64_t(M), rep->ldd), "layout d");
        const float one = 1, zero = 0;
        auto time_candidate = [&](int idx) {
          cublasLtMatmulAlgo_t algo;
          std::memcpy(&algo, rep->candidates[idx].algo, sizeof algo);
          return time_gated(stream, kRuns, [&](int i) {
            lt_ok(Matmul(handle, desc, &one, w[size_t(i % copies)], la, x, lb, &zero, out_graph, ld, out_graph, ld,
                         &algo, workspace, ws_bytes, stream),
                  "cublasLtMatmul");
          });
        };
        auto qualifies = [&](int i) {
          const uint32_t f = rep->candidates[i].flags;
          return (f & WHARF_AOTI_PROBE_PARAMS) && (f & WHARF_AOTI_PROBE_REPOINTABLE);
        };
        std::string params, hp, hr;
        int ids_q = 0;
        for (int i = 0; i < rep->count; ++i) {
          const uint32_t f = rep->candidates[i].flags;
          if (i < rep->heuristic && (f & WHARF_AOTI_PROBE_PARAMS)) {
            params += (params.empty() ? "" : ",") + std::to_string(i) + (qualifies(i) ? "R" : "");
            hp += (hp.empty() ? "" : " ") + std::to_string(i);
            if (qualifies(i)) hr += (hr.empty() ? "" : " ") + std::to_string(i);
          }
          if (i >= rep->heuristic && qualifies(i)) ++ids_q;
        }
        if (params.empty()) params = "none";
        if (params.size() > 34) params = params.substr(0, 31) + "...";
        const double t_default = time_candidate(0);
        double t_chosen = -1, t_best = -1;
        int best = -1;
        for (int i = 0; i < rep->count; ++i) {
          if (!qualifies(i)) continue;
          const double us = i == 0 ? t_default : time_candidate(i);
          if (i == rep->chosen) t_chosen = us;
          if (best < 0 || us < t_best) {
            best = i;
            t_best = us;
          }
        }
        char chosen[32] = "none", bestc[32] = "-", tc[16] = "-", tb[16] = "-", rc[16] = "-", rb[16] = "-";
        if (rep->chosen >= 0) {
          const auto& c = rep->candidates[rep->chosen];
          std::snprintf(chosen, sizeof chosen, "%d%s id%d", rep->chosen, c.source ? "i" : "h", c.algo_id);
          std::snprintf(tc, sizeof tc, "%.2f", t_chosen);
          std::snprintf(rc, sizeof rc, "%.3f", t_chosen / t_default);
        }
        if (best >= 0) {
          const auto& c = rep->candidates[best];
          std::snprintf(bestc, sizeof bestc, "%d%s id%d", best, c.source ? "i" : "h", c.algo_id);
          std::snprintf(tb, sizeof tb, "%.2f", t_best);
          std::snprintf(rb, sizeof rb, "%.3f", t_best / t_default);
        }
        char cands[16];
        std::snprintf(cands, sizeof cands, "%d+%d", rep->heuristic, rep->count - rep->heuristic);
        std::printf(
            "%-4s %-4lld %-6lld %-5lld | %-9s | %-34s | %-4d | %-13s %-13s | %8.2f %8s %8s | %6s %6s | %6.1fms | %s\n",
            dname, (long long)M, (long long)N, (long long)K, cands, params.c_str(), ids_q, chosen, bestc, t_default, tc,
            tb, rc, rb, rep->probe_us / 1000, check.empty() ? "ok" : check.c_str());
        std::fflush(stdout);
        if (csv)
          std::fprintf(
              csv, "\"%s\",%s,%lld,%lld,%lld,%d,%d,\"%s\",\"%s\",%d,%d,%d,%d,%.3f,%.3f,%.3f,%d,%d,%.2f,\"%s\"\n",
              prop.name, dname, (long long)M, (long long)N, (long long)K, rep->heuristic, rep->count, hp.c_str(),
              hr.c_str(), ids_q, rep->chosen, rep->chosen >= 0 ? rep->candidates[rep->chosen].source : -1,
              rep->chosen >= 0 ? rep->candidates[rep->chosen].algo_id : -1, t_default, t_chosen, t_best, best,
              best >= 0 ? rep->candidates[best].algo_id : -1, rep->probe_us / 1000,
              check.empty() ? "ok" : check.c_str());
        LayoutDestroy(la);
        LayoutDestroy(lb);
        LayoutDestroy(ld);
        DescDestroy(desc);
        for (H h : {hx, hw, hd, hg}) del(h);
        CUDA_OK(cudaStreamSynchronize(stream));
        for (void* p : w) CUDA_OK(cudaFree(p));
        CUDA_OK(cudaFree(x));
        CUDA_OK(cudaFree(out_default));
        CUDA_OK(cudaFree(out_graph));
      }
  }
  if (csv && std::fclose(csv) != 0) die("writing " + csv_path + " failed");
  unguard(guard);
  CUDA_OK(cudaFree(workspace));
  if (!failures.empty()) {
    std::fprintf(stderr, "shim_gemm_bench --probe-graph: wrong results:\n%s", failures.c_str());
    return 1;
  }
  return 0;
}
}  // namespace

int main(int argc, char** argv) {
  for (int i = 1; i < argc; ++i)
    if (std::string(argv[i]) == "--probe-graph") {
      std::vector<int32_t> dtypes = {kBF16, kF16, kF32};
      std::string csv_path;
      for (int j = 1; j < argc; ++j) {
        const std::string arg = argv[j];
        if (arg == "--probe-graph") continue;
        if (arg == "--dtype" && j + 1 < argc) {
          const std::string d = argv[++j];
          dtypes = {d == "bf16" ? kBF16 : d == "f16" ? kF16 : d == "f32" ? kF32 : -1};
          if (dtypes[0] < 0) die("--probe-graph: unknown dtype " + d);
        } else if (arg == "--csv" && j + 1 < argc) {
          csv_path = argv[++j];
        } else {
          die("usage: shim_gemm_bench --probe-graph [--dtype bf16|f16|f32] [--csv PATH] (unknown argument " + arg +
              ")");
        }
      }
      return probe_graph_main(dtypes, csv_path);
    }
  int reps = 200;
  int32_t dtype = kBF16;
  std::vector<int64_t> ms = {1, 8};
  std::string csv_path;
  auto usage = [](const std::string& why) {
    die("usage: shim_gemm_bench [--reps R] [--dtype bf16|f16|f32] [--m M[,M...]] [--csv PATH] (" + why + ")");
  };
  for (int i = 1; i < argc; ++i) {
    const std::string arg = argv[i];
    if (arg == "--reps" && i + 1 < argc) {
      reps = std::atoi(argv[++i]);
      if (reps < 1) usage("--reps must be at least 1");
    } else if (arg == "--dtype" && i + 1 < argc) {
      const std::string d = argv[++i];
      dtype = d == "bf16" ? kBF16 : d == "f16" ? kF16 : d == "f32" ? kF32 : -1;
      if (dtype < 0) usage("unknown dtype " + d);
    } else if (arg == "--csv" && i + 1 < argc) {
      csv_path = argv[++i];
    } else if (arg == "--m" && i + 1 < argc) {
      ms.clear();
      for (const char* p = argv[++i]; *p;) {
        char* end = nullptr;
        const long v = std::strtol(p, &end, 10);
        if (end == p || v < 1 || v > 64) usage("--m takes rows from 1 to 64");
        ms.push_back(v);
        p = *end == ',' ? end + 1 : end;
        if (*end && *end != ',') usage("--m takes a comma-separated list");
      }
    } else {
      usage("unknown argument " + arg);
    }
  }
  const cudaDataType_t ctype = dtype == kF32 ? CUDA_R_32F : dtype == kF16 ? CUDA_R_16F : CUDA_R_16BF;
  const size_t es = dtype == kF32 ? 4 : 2;
  const char* dname = dtype == kF32 ? "f32" : dtype == kF16 ? "f16" : "bf16";
  void* shim_lib = open_shim_on_device0();
  Shim shim{sym<decltype(Shim::from_blob)>(shim_lib, "aoti_torch_create_tensor_from_blob"),
            sym<decltype(Shim::del)>(shim_lib, "aoti_torch_delete_tensor_object"),
            sym<decltype(Shim::guard)>(shim_lib, "aoti_torch_create_cuda_stream_guard"),
            sym<decltype(Shim::unguard)>(shim_lib, "aoti_torch_delete_cuda_stream_guard"),
            sym<decltype(Shim::mm_out)>(shim_lib, "aoti_torch_cuda_mm_out"),
            sym<decltype(Shim::addmm_out)>(shim_lib, "aoti_torch_cuda_addmm_out"),
            sym<decltype(Shim::last_error)>(shim_lib, "wharf_aoti_last_error"),
            sym<decltype(Shim::gemm_stats)>(shim_lib, "wharf_aoti_gemm_stats"),
            sym<decltype(Shim::use_gemv)>(shim_lib, "wharf_aoti_gemm_use_gemv"),
            sym<decltype(Shim::use_pdl)>(shim_lib, "wharf_aoti_gemm_use_pdl")};

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
  const double copy_bw = copy_bandwidth(stream);
  std::printf(
      "shim_gemm_bench: %s, %s, out = x @ W^T (W [N, K] row-major), %d GEMMs per timing, "
      "copy bandwidth %.0f GB/s (read + write)\n",
      prop.name, dname, reps, copy_bw * 1e-9);
  std::printf("times: GPU us per GEMM, median [min, max] of 7; %%bound = bound / time\n");
  std::printf("%-2s %-2s %-6s %-6s | %7s | %-24s %5s | %8s | %-24s %5s %6s | %8s %5s | %8s | %8s | %6s %6s\n", "M", "W",
              "K", "N", "bound", "cuBLASLt", "%bnd", "shim Lt", "GEMV", "%bnd", "/Lt", "PDL", "%bnd", "addmm",
              "FMA only", "host", "Lthost");

  FILE* csv = nullptr;
  if (!csv_path.empty()) {
    csv = std::fopen(csv_path.c_str(), "w");
    if (!csv) die("cannot write " + csv_path);
    std::fprintf(csv,
                 "device,dtype,layout,m,k,n,copy_gbps,bound_us,cublaslt_us,cublaslt_min_us,cublaslt_max_us,"
                 "shim_cublaslt_us,gemv_us,gemv_min_us,gemv_max_us,gemv_pdl_us,addmm_gemv_us,gemv_fma_only_us,"
                 "gemv_host_us,shim_cublaslt_host_us\n");
  }
  struct Shape {
    int64_t k, n;
    bool kn;  // W a row-major [K, N] (Conv1D) rather than an nn.Linear weight [N, K]
  };
  const Shape shapes[] = {{2048, 2048, false},   {4096, 4096, false},   {8192, 8192, false}, {4096, 14336, false},
                          {14336, 4096, false},  {2048, 512, false},    {2048, 8192, false}, {8192, 2048, false},
                          {2048, 128256, false}, {4096, 128256, false}, {768, 2304, true},   {768, 768, true},
                          {768, 3072, true},     {3072, 768, true},     {1600, 6400, true},  {6400, 1600, true},
                          {4096, 4096, true}};
  for (int64_t M : ms)
    for (const Shape& shape : shapes) {
      const int64_t K = shape.k, N = shape.n;
      const bool kn = shape.kn;
      const size_t w_bytes = size_t(N * K) * es;
      const int copies = int(std::max<size_t>(1, (256u << 20) / w_bytes + 1));
      std::vector<void*> w(static_cast<size_t>(copies));
      for (void*& p : w) {
        CUDA_OK(cudaMalloc(&p, w_bytes));
        CUDA_OK(cudaMemset(p, 0x3c, w_bytes));  // bf16 0x3c3c ~ 0.0115, f16 ~ 1.06, f32 ~ 0.0115
      }
      void *x, *bias, *out_direct, *out_shim;
      CUDA_OK(cudaMalloc(&x, size_t(M * K) * es));
      CUDA_OK(cudaMemset(x, dtype == kF16 ? 0x1f : 0x3f, size_t(M * K) * es));  // ~0.75 (f16 ~0.0068)
      CUDA_OK(cudaMalloc(&bias, size_t(N) * es));
      CUDA_OK(cudaMemset(bias, 0x3f, size_t(N) * es));
      CUDA_OK(cudaMalloc(&out_direct, size_t(M * N) * es));
      CUDA_OK(cudaMalloc(&out_shim, size_t(M * N) * es));
      CUDA_OK(cudaDeviceSynchronize());  // the memsets above ran on the legacy stream (see --probe-graph)

      // Direct: out^T [N, M] = W [N, K] (stored K x N column-major, transposed) x x^T [K, M]; a
      // row-major [K, N] W is N x K column-major, used as is.
      cublasLtMatmulDesc_t desc;
      lt_ok(lt.DescCreate(&desc, CUBLAS_COMPUTE_32F, CUDA_R_32F), "desc");
      const int32_t t = CUBLAS_OP_T, nop = CUBLAS_OP_N;
      lt_ok(lt.DescSet(desc, CUBLASLT_MATMUL_DESC_TRANSA, kn ? &nop : &t, sizeof t), "transa");
      lt_ok(lt.DescSet(desc, CUBLASLT_MATMUL_DESC_TRANSB, &nop, sizeof nop), "transb");
      cublasLtMatrixLayout_t la, lb, ld;
      if (kn)
        lt_ok(lt.LayoutCreate(&la, ctype, uint64_t(N), uint64_t(K), N), "layout a");
      else
        lt_ok(lt.LayoutCreate(&la, ctype, uint64_t(K), uint64_t(N), K), "layout a");
      lt_ok(lt.LayoutCreate(&lb, ctype, uint64_t(K), uint64_t(M), K), "layout b");
      lt_ok(lt.LayoutCreate(&ld, ctype, uint64_t(N), uint64_t(M), N), "layout d");
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

      // The shim: the handles a compiled model passes (x [M, K], W^T as a [K, N] view with
      // strides (1, K), or the row-major [K, N] W with strides (N, 1), out [M, N], bias [N]).
      const int64_t xs[2] = {M, K}, xst[2] = {K, 1}, wts[2] = {K, N}, os[2] = {M, N}, ost[2] = {N, 1}, bs[1] = {N},
                    bst[1] = {1};
      const int64_t wtst[2] = {kn ? N : 1, kn ? 1 : K};
      H hx, hout, hbias;
      std::vector<H> hw(static_cast<size_t>(copies));
      if (shim.from_blob(x, 2, xs, xst, 0, dtype, kCuda, 0, &hx) ||
          shim.from_blob(out_shim, 2, os, ost, 0, dtype, kCuda, 0, &hout) ||
          shim.from_blob(bias, 1, bs, bst, 0, dtype, kCuda, 0, &hbias))
        die(std::string("from_blob: ") + shim.last_error());
      for (int c = 0; c < copies; ++c)
        if (shim.from_blob(w[size_t(c)], 2, wts, wtst, 0, dtype, kCuda, 0, &hw[size_t(c)]))
          die(std::string("from_blob: ") + shim.last_error());
      auto via_shim = [&](int i) {
        if (shim.mm_out(hout, hx, hw[size_t(i % copies)]) != 0) die(std::string("mm_out: ") + shim.last_error());
      };
      auto via_addmm = [&](int i) {
        if (shim.addmm_out(hout, hbias, hx, hw[size_t(i % copies)], 1.0, 1.0) != 0)
          die(std::string("addmm_out: ") + shim.last_error());
      };

      // The shim's result against cuBLASLt's on each path, and the path taken.
      std::vector<unsigned char> a(size_t(M * N) * es), b(a.size());
      direct(0);
      CUDA_OK(cudaStreamSynchronize(stream));
      CUDA_OK(cudaMemcpy(a.data(), out_direct, a.size(), cudaMemcpyDeviceToHost));
      for (int gemv = 0; gemv < 3; ++gemv) {  // cuBLASLt, the GEMV, the GEMV with PDL
        shim.use_gemv(gemv == 0 ? 0 : 1);
        shim.use_pdl(gemv == 2 ? 1 : 0);
        Stats before, after;
        shim.gemm_stats(&before);
        CUDA_OK(cudaMemsetAsync(out_shim, 0, b.size(), stream));  // ordered before the GEMM
        via_shim(0);
        CUDA_OK(cudaStreamSynchronize(stream));
        shim.gemm_stats(&after);
        shim.use_pdl(0);
        const bool took_gemv = after.gemv == before.gemv + 1 && after.gemv_elementwise == before.gemv_elementwise &&
                               after.gemv_kn == before.gemv_kn + (kn ? 1 : 0);
        if (took_gemv != (gemv >= 1 && M <= 8))
          die("M = " + std::to_string(M) + ", K = " + std::to_string(K) + ", N = " + std::to_string(N) +
              (gemv ? ": the vectorized GEMV did not run" : ": the GEMV ran while switched off"));
        CUDA_OK(cudaMemcpy(b.data(), out_shim, b.size(), cudaMemcpyDeviceToHost));
        for (size_t i = 0; i < size_t(M * N); ++i) {
          const float va = to_f32(dtype, &a[i * es]), vb = to_f32(dtype, &b[i * es]);
          if (!(std::fabs(va - vb) <= 0.01f * std::fabs(va)))
            die(std::string(gemv ? "the GEMV's" : "the shim's cuBLASLt") + " result differs from cuBLASLt's for M = " +
                std::to_string(M) + ", K = " + std::to_string(K) + ", N = " + std::to_string(N) + " at " +
                std::to_string(i) + ": " + std::to_string(vb) + " vs " + std::to_string(va));
        }
      }

      const double bound_us = double(w_bytes) / copy_bw * 1e6;
      const Timing td = time_calls(stream, reps, direct);
      shim.use_gemv(0);
      const Timing ts = time_calls(stream, reps, via_shim);
      shim.use_gemv(1);
      const Timing tg = time_calls(stream, reps, via_shim);
      shim.use_pdl(1);
      const Timing tp = time_calls(stream, reps, via_shim);
      shim.use_pdl(0);
      const Timing tb = time_calls(stream, reps, via_addmm);
      // float16/bfloat16 with 5 to 8 rows: the FMA kernel instead of the tensor cores.
      const bool has_mma = !kn && dtype != kF32 && M >= 5 && M <= 8;
      Timing tf = tg;
      if (has_mma) {
        shim.use_gemv(2);
        tf = time_calls(stream, reps, via_shim);
        shim.use_gemv(1);
      }
      char lt_col[64], gemv_col[64];
      std::snprintf(lt_col, sizeof lt_col, "%.2f [%.2f, %.2f]", td.gpu_us, td.min_us, td.max_us);
      std::snprintf(gemv_col, sizeof gemv_col, "%.2f [%.2f, %.2f]", tg.gpu_us, tg.min_us, tg.max_us);
      char fma_col[32] = "-";
      if (has_mma) std::snprintf(fma_col, sizeof fma_col, "%.2f", tf.gpu_us);
      std::printf(
          "%-2lld %-2s %-6lld %-6lld | %7.2f | %-24s %4.0f%% | %8.2f | %-24s %4.0f%% %6.3f | %8.2f %4.0f%% | %8.2f | "
          "%8s | "
          "%6.2f %6.2f\n",
          (long long)M, kn ? "KN" : "NK", (long long)K, (long long)N, bound_us, lt_col, 100.0 * bound_us / td.gpu_us,
          ts.gpu_us, gemv_col, 100.0 * bound_us / tg.gpu_us, tg.gpu_us / td.gpu_us, tp.gpu_us,
          100.0 * bound_us / tp.gpu_us, tb.gpu_us, fma_col, tg.host_us, ts.host_us);
      std::fflush(stdout);
      if (csv)
        std::fprintf(
            csv, "\"%s\",%s,%s,%lld,%lld,%lld,%.1f,%.3f,%.3f,%.3f,%.3f,%.3f,%.3f,%.3f,%.3f,%.3f,%.3f,%.3f,%.3f,%.3f\n",
            prop.name, dname, kn ? "KN" : "NK", (long long)M, (long long)K, (long long)N, copy_bw * 1e-9, bound_us,
            td.gpu_us, td.min_us, td.max_us, ts.gpu_us, tg.gpu_us, tg.min_us, tg.max_us, tp.gpu_us, tb.gpu_us,
            tf.gpu_us, tg.host_us, ts.host_us);

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
  if (csv && std::fclose(csv) != 0) die("writing " + csv_path + " failed");
  shim.unguard(guard);
  CUDA_OK(cudaFree(workspace));
  return 0;
}

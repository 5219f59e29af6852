// SPDX-License-Identifier: Apache-2.0
// The aten GEMM fallbacks of AOTInductor-compiled models, over cuBLASLt:
// aoti_torch_cuda_mm_out, _addmm_out, _bmm_out and _baddbmm_out (PyTorch 2.11's C signatures,
// torch/csrc/inductor/aoti_torch/generated/c_shim_cuda.h). Without max_autotune Inductor
// emits every matmul of a model as one of these (docs/aoti-compile.md).
//
// cuBLASLt is opened with dlopen at the first GEMM, not linked: the shim (and every model
// that needs no GEMM fallback) loads where cuBLAS is not installed, and a model that needs
// one fails that call with the loader's reason. Looked for as $WHARF_CUBLASLT_LIBRARY, else
// libcublasLt.so.<the major compiled against> on the loader path, then in the CUDA toolkit.
//
// Numerics follow PyTorch's defaults: float32 in float32 (CUBLAS_COMPUTE_32F: no TF32),
// float16 and bfloat16 with float32 accumulation (split-K partitions summed in float32 too)
// and float32 alpha/beta: a half result is rounded once.
//
// Concurrency: one cuBLASLt handle per device for the process (cuBLASLt handles carry no
// stream and may be shared by threads); the stream is the calling thread's current one (the
// model's stream guard) and is passed to each call; the workspace an algorithm needs is
// allocated stream-ordered on that stream for that call and freed after it, so calls on
// different streams never share one. The heuristic's choice is cached per problem (shape,
// layouts, alignments, dtype, device, epilogue).
//
// CUDA graphs: Wharf's graphs re-point weights by rewriting kernel parameters, which needs a
// parameter array; cuBLASLt launches some kernels (bfloat16 on Hopper) with one opaque
// buffer instead. Calls made for a graph (wharf_aoti_gemm_graph_algos: under Wharf's
// allocator, or on a capturing stream) run an algorithm probed to launch re-pointable kernels
// (probe_graph_algo), cached per problem beside the heuristic's choice.
#include <cublasLt.h>
#include <cuda.h>
#include <dlfcn.h>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <cstddef>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <mutex>
#include <shared_mutex>
#include <string>
#include <type_traits>
#include <unordered_map>
#include <utility>
#include <vector>

#include "core/text.h"
#include "models/aoti/gemm_kernels.h"
#include "models/aoti/shim_host.h"
#include "models/aoti/shim_internal.h"

namespace wharf_aoti {
namespace {

// ---- cuBLASLt, opened at the first GEMM ---------------------------------------------------

struct LtApi {
  void* lib = nullptr;
  std::string path;
  decltype(&cublasLtCreate) Create = nullptr;
  decltype(&cublasLtMatmul) Matmul = nullptr;
  decltype(&cublasLtMatmulDescInit_internal) MatmulDescInit = nullptr;
  decltype(&cublasLtMatmulDescSetAttribute) MatmulDescSetAttribute = nullptr;
  decltype(&cublasLtMatrixLayoutInit_internal) MatrixLayoutInit = nullptr;
  decltype(&cublasLtMatrixLayoutSetAttribute) MatrixLayoutSetAttribute = nullptr;
  decltype(&cublasLtMatmulPreferenceInit_internal) PreferenceInit = nullptr;
  decltype(&cublasLtMatmulPreferenceSetAttribute) PreferenceSetAttribute = nullptr;
  decltype(&cublasLtMatmulAlgoGetHeuristic) AlgoGetHeuristic = nullptr;
  decltype(&cublasLtGetStatusName) GetStatusName = nullptr;
  decltype(&cublasLtGetVersion) GetVersion = nullptr;
  // Optional (the graph probe's search by algorithm ID; absent: the heuristic's list only).
  decltype(&cublasLtMatmulAlgoGetIds) AlgoGetIds = nullptr;
  decltype(&cublasLtMatmulAlgoInit) AlgoInit = nullptr;
  decltype(&cublasLtMatmulAlgoConfigGetAttribute) AlgoConfigGet = nullptr;

  std::string error(cublasStatus_t s) const {
    return std::string(GetStatusName ? GetStatusName(s) : "cublasStatus") + " (" + std::to_string(int(s)) + ")";
  }
};

constexpr int kMaxDevices = 64;

std::mutex g_lt_mu;                       // opening the library, creating handles
std::atomic<const LtApi*> g_lt{nullptr};  // kept for the process's life once opened
std::atomic<cublasLtHandle_t> g_handles[kMaxDevices];

std::string versioned_name() { return "libcublasLt.so." + std::to_string(CUBLAS_VER_MAJOR); }

// Opens cuBLASLt once (a failure is not remembered: a later call retries). The library and
// its handles are never closed: a model may call a GEMM until the process ends, and at exit
// cuBLASLt's own destructors may already have run before ours.
AOTITorchError lt_api(const LtApi** out) {
  if (const LtApi* api = g_lt.load(std::memory_order_acquire)) {
    *out = api;
    return kOk;
  }
  std::lock_guard<std::mutex> lock(g_lt_mu);
  if (const LtApi* api = g_lt.load(std::memory_order_acquire)) {
    *out = api;
    return kOk;
  }
  std::vector<std::string> candidates;
  const char* env = std::getenv("WHARF_CUBLASLT_LIBRARY");
  if (env && *env) {
    candidates.push_back(env);
  } else {
    candidates.push_back(versioned_name());
    if (const char* home = std::getenv("CUDA_HOME"))
      if (*home) candidates.push_back(std::string(home) + "/lib64/" + versioned_name());
    candidates.push_back("/usr/local/cuda/lib64/" + versioned_name());
    candidates.push_back("/usr/local/cuda-" + std::to_string(CUDART_VERSION / 1000) + "." +
                         std::to_string(CUDART_VERSION % 1000 / 10) + "/lib64/" + versioned_name());
  }
  std::string tried;
  void* lib = nullptr;
  std::string path;
  for (const std::string& c : candidates) {
    dlerror();
    // RTLD_LOCAL: cuBLAS's symbols stay out of the global scope the model resolves in.
    lib = dlopen(c.c_str(), RTLD_NOW | RTLD_LOCAL);
    if (lib) {
      path = c;
      break;
    }
    const char* why = dlerror();
    tried += std::string(tried.empty() ? " " : "; ") + wharf::quote_path(c) + ": " + (why ? why : "not found");
  }
  if (!lib)
    return fail("cuBLASLt (needed by the model's aten GEMM fallbacks) could not be loaded:" + tried +
                " (install the CUDA " + std::to_string(CUBLAS_VER_MAJOR) +
                " cuBLAS library, or point WHARF_CUBLASLT_LIBRARY at " + versioned_name() + ")");
  auto api = std::make_unique<LtApi>();
  api->lib = lib;
  api->path = path;
  bool ok = true;
  std::string missing;
  auto resolve = [&](const char* name, auto* fn) {
    void* sym = dlsym(lib, name);
    if (!sym) {
      ok = false;
      missing += std::string(" ") + name;
    }
    *fn = reinterpret_cast<std::remove_pointer_t<decltype(fn)>>(sym);
  };
  resolve("cublasLtCreate", &api->Create);
  resolve("cublasLtMatmul", &api->Matmul);
  resolve("cublasLtMatmulDescInit_internal", &api->MatmulDescInit);
  resolve("cublasLtMatmulDescSetAttribute", &api->MatmulDescSetAttribute);
  resolve("cublasLtMatrixLayoutInit_internal", &api->MatrixLayoutInit);
  resolve("cublasLtMatrixLayoutSetAttribute", &api->MatrixLayoutSetAttribute);
  resolve("cublasLtMatmulPreferenceInit_internal", &api->PreferenceInit);
  resolve("cublasLtMatmulPreferenceSetAttribute", &api->PreferenceSetAttribute);
  resolve("cublasLtMatmulAlgoGetHeuristic", &api->AlgoGetHeuristic);
  resolve("cublasLtGetStatusName", &api->GetStatusName);
  resolve("cublasLtGetVersion", &api->GetVersion);
  api->AlgoGetIds = reinterpret_cast<decltype(api->AlgoGetIds)>(dlsym(lib, "cublasLtMatmulAlgoGetIds"));
  api->AlgoInit = reinterpret_cast<decltype(api->AlgoInit)>(dlsym(lib, "cublasLtMatmulAlgoInit"));
  api->AlgoConfigGet =
      reinterpret_cast<decltype(api->AlgoConfigGet)>(dlsym(lib, "cublasLtMatmulAlgoConfigGetAttribute"));
  if (!ok) {
    dlclose(lib);
    return fail("cuBLASLt library " + wharf::quote_path(path) + " lacks" + missing + " (cuBLAS " +
                std::to_string(CUBLAS_VER_MAJOR) + ".x is needed)");
  }
  const size_t version = api->GetVersion();
  if (version / 10000 != size_t(CUBLAS_VER_MAJOR)) {
    dlclose(lib);
    return fail("cuBLASLt library " + wharf::quote_path(path) + " is version " + std::to_string(version) +
                ", the shim was built for " + std::to_string(CUBLAS_VER_MAJOR) + ".x");
  }
  const LtApi* released = api.release();
  g_lt.store(released, std::memory_order_release);
  *out = released;
  return kOk;
}

AOTITorchError lt_handle(const LtApi& api, int device, cublasLtHandle_t* out) {
  if (device < 0 || device >= kMaxDevices) return fail("CUDA device " + std::to_string(device) + " is out of range");
  if (cublasLtHandle_t h = g_handles[device].load(std::memory_order_acquire)) {
    *out = h;
    return kOk;
  }
  std::lock_guard<std::mutex> lock(g_lt_mu);
  cublasLtHandle_t h = g_handles[device].load(std::memory_order_acquire);
  if (!h) {
    cublasStatus_t s = api.Create(&h);
    if (s != CUBLAS_STATUS_SUCCESS)
      return fail("cublasLtCreate on CUDA device " + std::to_string(device) + ": " + api.error(s));
    g_handles[device].store(h, std::memory_order_release);
  }
  *out = h;
  return kOk;
}

// ---- the heuristic's choice, cached per problem -------------------------------------------

constexpr uint64_t kMaxWorkspace = 32ull << 20;  // cuBLAS's recommendation for Hopper
// Split-K partial sums are added in float32 in the workspace, never in D's type: INPLACE and
// OUTPUT_TYPE add them in bfloat16/float16 (in D, or in the workspace), rounding a half
// result once per partition instead of once (seen on H200: 3.6875 for 3.65625 in an addmm
// with k 10, what three bfloat16 partial sums give). NONE (no split) is always allowed.
constexpr uint32_t kReductionSchemes = CUBLASLT_REDUCTION_SCHEME_COMPUTE_TYPE;
constexpr size_t kMaxCachedProblems = 1 << 16;

// Everything cuBLASLt's choice depends on. Zero-filled before use, compared bytewise.
struct ProblemKey {
  int32_t device, dtype, transa, transb, bias, pad;
  int64_t m, n, k, lda, ldb, ldd, batch, stride_a, stride_b, stride_d;
  uint32_t align_a, align_b, align_d, align_bias;
  bool operator==(const ProblemKey& o) const { return std::memcmp(this, &o, sizeof o) == 0; }
};
static_assert(std::has_unique_object_representations_v<ProblemKey>, "ProblemKey has padding");
struct ProblemHash {
  size_t operator()(const ProblemKey& k) const {
    uint64_t h = 1469598103934665603ull;  // FNV-1a
    const unsigned char* p = reinterpret_cast<const unsigned char*>(&k);
    for (size_t i = 0; i < sizeof k; ++i) h = (h ^ p[i]) * 1099511628211ull;
    return size_t(h);
  }
};
struct Choice {
  cublasLtMatmulAlgo_t algo;
  size_t workspace;
  bool none;      // the heuristic found no algorithm
  uint8_t graph;  // 0: the heuristic's first; 1: a probed graph algorithm; 2: none qualified
};
// run_gemm's answer when cuBLASLt has no algorithm with the bias epilogue (nothing was
// enqueued, no error recorded).
constexpr AOTITorchError kNoBiasAlgorithm = 2;

std::shared_mutex g_cache_mu;
std::unordered_map<ProblemKey, Choice, ProblemHash> g_cache;
std::unordered_map<ProblemKey, Choice, ProblemHash> g_graph_cache;  // calls made for graphs

// One probe at a time (probes are once per problem): the probe streams, the graph cache's
// misses (checked again under it, so a problem is probed and logged once).
std::mutex g_probe_mu;
cudaStream_t g_probe_streams[kMaxDevices];  // created at a device's first probe, never destroyed

// A mode from the environment, read when the shim loads: one digit among `allowed`. The
// shim has no caller to fail at load, so any other value is said on stderr, naming the
// variable, and the default applies (it was atoi's guess: "abc" read as 0).
int32_t mode_from_env(const char* name, const char* allowed, int32_t fallback) {
  const char* v = std::getenv(name);
  if (!v || !*v) return fallback;
  if (v[1] == '\0' && std::strchr(allowed, v[0])) return int32_t(v[0] - '0');
  std::string one_of;
  for (const char* a = allowed; *a; ++a) one_of += std::string(one_of.empty() ? "" : a[1] ? ", " : " or ") + *a;
  std::fprintf(stderr, "[wharf warn] %s=%s in the environment is not %s; using %d\n", name,
               wharf::quote_name(v).c_str(), one_of.c_str(), int(fallback));
  return fallback;
}

// wharf_aoti_gemm_graph_algos: 0 never, 1 under Wharf's allocator or capture, 2 always.
int32_t graph_algos_of(int32_t v) { return v == 0 || v == 2 ? v : 1; }
std::atomic<int32_t> g_graph_algos{mode_from_env("WHARF_AOTI_GEMM_GRAPH_ALGOS", "012", 1)};
std::atomic<uint64_t> g_graph_algo_calls{0}, g_graph_fallback_calls{0};

// wharf_aoti_gemm_probe's request, for the calling thread's one call.
struct ProbeRequest {
  uint32_t flags = 0;
  wharf_aoti_gemm_probe_t* report = nullptr;
  bool ran = false;
};
thread_local ProbeRequest* t_probe = nullptr;

// Which path served each call (wharf_aoti_gemm_stats), the GEMV path's mode
// (wharf_aoti_gemm_use_gemv: 0 off, 1 on, 2 on without the tensor-core variant, 3 on with
// float16/bfloat16 of 5 to 8 rows above a measured size on cuBLASLt; WHARF_AOTI_GEMV=0, 2 or
// 3 in the environment starts it so) and whether GEMVs use programmatic dependent launch
// (wharf_aoti_gemm_use_pdl; WHARF_AOTI_GEMV_PDL=1).
std::atomic<uint64_t> g_gemv_calls{0}, g_gemv_elementwise_calls{0}, g_gemv_kn_calls{0}, g_cublaslt_calls{0};
int32_t gemv_mode_of(int32_t v) { return v == 0 || v == 2 || v == 3 ? v : 1; }
std::atomic<int32_t> g_gemv_mode{mode_from_env("WHARF_AOTI_GEMV", "0123", 1)};
std::atomic<int32_t> g_gemv_pdl{mode_from_env("WHARF_AOTI_GEMV_PDL", "01", 0)};

// ---- operands ---------------------------------------------------------------------------

cudaDataType_t cuda_type(int32_t dtype) {
  return dtype == kF32 ? CUDA_R_32F : dtype == kF16 ? CUDA_R_16F : CUDA_R_16BF;
}
const char* dtype_name(int32_t dtype) {
  switch (dtype) {
    case kF32:
      return "float32";
    case kF16:
      return "float16";
    case kBF16:
      return "bfloat16";
    case kF64:
      return "float64";
    case kI32:
      return "int32";
    case kI64:
      return "int64";
    case kI8:
      return "int8";
    case kU8:
      return "uint8";
    default:
      return "an unsupported dtype";
  }
}

std::string shape(const WharfAotiTensor& t) {
  std::string s = "[";
  for (size_t i = 0; i < t.sizes.size(); ++i) s += (i ? ", " : "") + std::to_string(t.sizes[i]);
  s += "] strides [";
  for (size_t i = 0; i < t.strides.size(); ++i) s += (i ? ", " : "") + std::to_string(t.strides[i]);
  return s + "]";
}

// A batch of logical matrices [rows, cols] at data + b * sb + i * sr + j * sc (elements).
struct View {
  char* data;
  int64_t rows, cols, sr, sc, sb;
  View transposed() const { return View{data, cols, rows, sc, sr, sb}; }
};

// How cuBLASLt reads a logical matrix: column-major storage of (stored_rows x stored_cols)
// with leading dimension ld, used as is (N) or transposed (T).
struct Layout {
  bool ok = false;
  bool trans = false;
  int64_t stored_rows = 0, stored_cols = 0, ld = 0;
};

Layout blas_layout(const View& v) {
  Layout l;
  const int64_t r = v.rows, c = v.cols;
  if ((v.sr == 1 || r == 1) && (c == 1 || v.sc >= std::max<int64_t>(1, r))) {
    l.ok = true;
    l.trans = false;
    l.stored_rows = r;
    l.stored_cols = c;
    l.ld = c == 1 ? std::max<int64_t>(1, r) : v.sc;
  } else if ((v.sc == 1 || c == 1) && (r == 1 || v.sr >= std::max<int64_t>(1, c))) {
    l.ok = true;
    l.trans = true;
    l.stored_rows = c;
    l.stored_cols = r;
    l.ld = r == 1 ? std::max<int64_t>(1, c) : v.sr;
  }
  return l;
}

uint32_t alignment(const void* p, int64_t batch, int64_t batch_stride_bytes) {
  uint64_t a = reinterpret_cast<uintptr_t>(p);
  if (batch > 1) a |= uint64_t(batch_stride_bytes);
  uint32_t al = 256;
  while (al > 1 && (a % al) != 0) al /= 2;
  return al;
}

// A scoped current device.
class DeviceScope {
 public:
  AOTITorchError enter(int device) {
    if (cudaGetDevice(&previous_) != cudaSuccess) previous_ = -1;
    if (previous_ != device) {
      cudaError_t e = cudaSetDevice(device);
      if (e != cudaSuccess) return cuda_fail(e, "cudaSetDevice(" + std::to_string(device) + ")");
      restore_ = true;
    }
    return kOk;
  }
  ~DeviceScope() {
    if (restore_ && previous_ >= 0) cudaSetDevice(previous_);
  }

 private:
  int previous_ = -1;
  bool restore_ = false;
};

struct Gemm {
  const char* fn;
  int32_t dtype;
  int device;
  int64_t batch, m, n, k;
  View a, b, d;  // d = alpha * a @ b + beta * d (+ bias along n)
  float alpha, beta;
  const void* bias = nullptr;  // contiguous [n], added by the epilogue (beta is then 0)
};

// A contiguous copy of an operand whose layout cuBLASLt cannot read (row-major, batches
// packed). `keep` owns the copy until the GEMM is enqueued (freed stream-ordered after it).
AOTITorchError contiguous_copy(const Gemm& g, View* v, std::shared_ptr<Storage>* keep) {
  const size_t es = element_size(g.dtype);
  const uint64_t bytes = uint64_t(g.batch) * uint64_t(v->rows) * uint64_t(v->cols) * es;
  if (allocate(bytes, kCuda, g.device, keep) != kOk) return kFail;
  const int64_t sizes[3] = {g.batch, v->rows, v->cols};
  const int64_t dst_strides[3] = {v->rows * v->cols, v->cols, 1};
  const int64_t src_strides[3] = {g.batch > 1 ? v->sb : 0, v->sr, v->sc};
  cudaError_t e =
      launch_strided_copy(g.dtype, (*keep)->base, dst_strides, v->data, src_strides, sizes, 1.0f, current_stream());
  if (e != cudaSuccess) return cuda_fail(e, std::string(g.fn) + ": copying an operand to a contiguous buffer");
  *v = View{static_cast<char*>((*keep)->base), v->rows, v->cols, v->cols, 1, v->rows * v->cols};
  return kOk;
}

// ---- the graph probe: an algorithm whose kernels graph re-pointing can read -------------

// Whether this call is made for a CUDA graph (wharf_aoti_gemm_graph_algos).
bool wants_graph_algo(cudaStream_t stream) {
  const int32_t mode = g_graph_algos.load(std::memory_order_relaxed);
  if (mode != 1) return mode == 2;
  if (wharf_allocator_installed()) return true;
  if (stream == nullptr || stream == cudaStreamLegacy) return false;  // never captured
  cudaStreamCaptureStatus st = cudaStreamCaptureStatusNone;
  if (cudaStreamIsCapturing(stream, &st) != cudaSuccess) {
    (void)cudaGetLastError();
    return false;
  }
  return st == cudaStreamCaptureStatusActive;
}

// The driver functions that read a captured kernel node (src/graphs/model_graphs.cpp reads
// them the same way).
struct NodeDriver {
  CUresult (*kernel_get)(CUgraphNode, CUDA_KERNEL_NODE_PARAMS*) = nullptr;
  CUresult (*func_param)(CUfunction, size_t, size_t*, size_t*) = nullptr;
  CUresult (*kernel_param)(CUkernel, size_t, size_t*, size_t*) = nullptr;
};
const NodeDriver& node_driver() {
  static const NodeDriver d = [] {
    NodeDriver r;
    auto get = [](const char* name, unsigned version, void** fn) {
      cudaDriverEntryPointQueryResult q = cudaDriverEntryPointSymbolNotFound;
      if (cudaGetDriverEntryPointByVersion(name, fn, version, cudaEnableDefault, &q) != cudaSuccess ||
          q != cudaDriverEntryPointSuccess) {
        (void)cudaGetLastError();
        *fn = nullptr;
      }
    };
    get("cuGraphKernelNodeGetParams", 12000, reinterpret_cast<void**>(&r.kernel_get));
    get("cuFuncGetParamInfo", 12040, reinterpret_cast<void**>(&r.func_param));
    get("cuKernelGetParamInfo", 12040, reinterpret_cast<void**>(&r.kernel_param));
    return r;
  }();
  return d;
}

// The calling thread in relaxed capture mode for a scope: the probe may run while this
// thread captures another stream (ThreadLocal mode forbids "unsafe" calls on it).
class RelaxedCaptureMode {
 public:
  RelaxedCaptureMode() { (void)cudaThreadExchangeStreamCaptureMode(&mode_); }
  ~RelaxedCaptureMode() { (void)cudaThreadExchangeStreamCaptureMode(&mode_); }
  RelaxedCaptureMode(const RelaxedCaptureMode&) = delete;
  RelaxedCaptureMode& operator=(const RelaxedCaptureMode&) = delete;

 private:
  cudaStreamCaptureMode mode_ = cudaStreamCaptureModeRelaxed;
};

// What one call captured into a throw-away graph.
struct CapturedCall {
  bool ok = false;      // the call and its capture succeeded
  bool params = true;   // every kernel node has a parameter array, every node a type graphs re-point
  bool layouts = true;  // every kernel's parameter layout was read
  struct Kernel {
    const void* fn = nullptr;
    std::vector<std::vector<unsigned char>> params;  // each parameter's bytes
  };
  std::vector<Kernel> kernels;
};

// The problem as the probe sees it: descriptors, the operands' addresses, alpha and beta.
struct ProbeProblem {
  const LtApi* api;
  cublasLtHandle_t handle;
  // cuBLASLt's functions take these non-const; the probe only reads them.
  cublasLtMatmulDescOpaque_t* desc;
  cublasLtMatrixLayoutOpaque_t *la, *lb, *ld;
  const void *a, *b, *bias;
  void* d;
  float alpha, beta;
  cudaDataType_t type;
  uint64_t d_bytes;  // D's extent (a scratch D of this size is written when candidates are timed)
};

// Captures one call of `algo` into a graph on `stream` (not executed: the addresses are only
// recorded, so moved operands need no memory) and reads its nodes.
CapturedCall capture_call(const ProbeProblem& p, const cublasLtMatmulAlgo_t& algo, size_t workspace,
                          const int64_t shift[4], cudaStream_t stream) {
  CapturedCall c;
  cublasLtMatmulDescOpaque_t desc = *p.desc;  // the bias address lives in the descriptor
  const char* bias = static_cast<const char*>(p.bias) + shift[3];
  if (p.bias && p.api->MatmulDescSetAttribute(&desc, CUBLASLT_MATMUL_DESC_BIAS_POINTER, &bias, sizeof bias) !=
                    CUBLAS_STATUS_SUCCESS)
    return c;
  // Never dereferenced (nothing runs): a device address of the right alignment.
  void* ws = workspace ? reinterpret_cast<void*>(reinterpret_cast<uintptr_t>(p.d) & ~uintptr_t(255)) : nullptr;
  if (cudaStreamBeginCapture(stream, cudaStreamCaptureModeRelaxed) != cudaSuccess) {
    (void)cudaGetLastError();
    return c;
  }
  const cublasStatus_t st =
      p.api->Matmul(p.handle, &desc, &p.alpha, static_cast<const char*>(p.a) + shift[0], p.la,
                    static_cast<const char*>(p.b) + shift[1], p.lb, &p.beta, static_cast<char*>(p.d) + shift[2], p.ld,
                    static_cast<char*>(p.d) + shift[2], p.ld, &algo, ws, workspace, stream);
  cudaGraph_t graph = nullptr;
  const cudaError_t e = cudaStreamEndCapture(stream, &graph);
  (void)cudaGetLastError();
  std::unique_ptr<CUgraph_st, cudaError_t (*)(cudaGraph_t)> owned(graph, cudaGraphDestroy);
  if (st != CUBLAS_STATUS_SUCCESS || e != cudaSuccess || !graph) return c;
  size_t n = 0;
  if (cudaGraphGetNodes(graph, nullptr, &n) != cudaSuccess) return c;
  std::vector<cudaGraphNode_t> nodes(n);
  if (n && cudaGraphGetNodes(graph, nodes.data(), &n) != cudaSuccess) return c;
  const NodeDriver& drv = node_driver();
  for (cudaGraphNode_t node : nodes) {
    cudaGraphNodeType type;
    if (cudaGraphNodeGetType(node, &type) != cudaSuccess) return c;
    if (type == cudaGraphNodeTypeMemcpy || type == cudaGraphNodeTypeMemset || type == cudaGraphNodeTypeEmpty ||
        type == cudaGraphNodeTypeEventRecord || type == cudaGraphNodeTypeWaitEvent)
      continue;  // what graphs re-point (memcpy, memset) or holds no address
    if (type != cudaGraphNodeTypeKernel || !drv.kernel_get) {
      c.params = false;
      continue;
    }
    CUDA_KERNEL_NODE_PARAMS kp;
    std::memset(&kp, 0, sizeof kp);
    if (drv.kernel_get(reinterpret_cast<CUgraphNode>(node), &kp) != CUDA_SUCCESS) return c;
    CapturedCall::Kernel k;
    k.fn = kp.func ? static_cast<const void*>(kp.func) : static_cast<const void*>(kp.kern);
    if (!kp.kernelParams || kp.extra || !(kp.func || (kp.kern && drv.kernel_param))) {
      c.params = false;
      c.kernels.push_back(std::move(k));
      continue;
    }
    if (!drv.func_param) c.layouts = false;
    for (size_t i = 0; c.layouts; ++i) {
      size_t off = 0, size = 0;
      const CUresult r = kp.func ? drv.func_param(kp.func, i, &off, &size) : drv.kernel_param(kp.kern, i, &off, &size);
      if (r == CUDA_ERROR_INVALID_VALUE) break;
      if (r != CUDA_SUCCESS || !kp.kernelParams[i]) {
        c.layouts = false;
        break;
      }
      const unsigned char* v = static_cast<const unsigned char*>(kp.kernelParams[i]);
      k.params.emplace_back(v, v + size);
    }
    c.kernels.push_back(std::move(k));
  }
  c.ok = true;
  return c;
}

// Whether `moved` (the operands at base + shift) differs from `base` only in whole 8-byte
// words of parameters of 8 bytes or more (the words re-pointing scans), each by one operand's
// shift, and every operand's address appears: then rewriting those words is exactly a call
// on the new addresses. An address encoded any other way, or not passed at all (read from
// memory the call prepared), fails this.
bool repointable(const CapturedCall& base, const CapturedCall& moved, const int64_t shift[4], bool with_bias) {
  if (base.kernels.size() != moved.kernels.size()) return false;
  bool seen[4] = {false, false, false, !with_bias};
  for (size_t n = 0; n < base.kernels.size(); ++n) {
    const CapturedCall::Kernel &x = base.kernels[n], &y = moved.kernels[n];
    if (x.fn != y.fn || x.params.size() != y.params.size()) return false;
    for (size_t i = 0; i < x.params.size(); ++i) {
      const std::vector<unsigned char>&u = x.params[i], &v = y.params[i];
      if (u.size() != v.size()) return false;
      const size_t words = u.size() >= 8 ? u.size() / 8 * 8 : 0;
      if (std::memcmp(u.data() + words, v.data() + words, u.size() - words) != 0) return false;
      for (size_t o = 0; o < words; o += 8) {
        uint64_t wu, wv;
        std::memcpy(&wu, u.data() + o, 8);
        std::memcpy(&wv, v.data() + o, 8);
        if (wu == wv) continue;
        const int64_t delta = int64_t(wv - wu);
        bool matched = false;
        for (int j = 0; j < 4 && !matched; ++j)
          if (delta == shift[j] && (j < 3 || with_bias)) matched = seen[j] = true;
        if (!matched) return false;
      }
    }
  }
  return seen[0] && seen[1] && seen[2] && seen[3];
}

// GPU time per call of each candidate in `which` (time_us; 0 where it failed): a warm-up,
// then 5 calls between two events, on the probe stream, reading the real A and B (their
// values do not matter) and writing a scratch D and workspace (the caller's D is untouched).
// Allowed while this thread captures another stream: the thread is in relaxed mode and the
// probe stream is not captured. False if the scratch memory or events could not be had.
bool time_candidates(const ProbeProblem& p, const std::vector<size_t>& which, cudaStream_t stream,
                     std::vector<wharf_aoti_gemm_probe_candidate_t>* cands) {
  constexpr int kCalls = 5;
  uint64_t ws_bytes = 0;
  for (size_t i : which) ws_bytes = std::max<uint64_t>(ws_bytes, (*cands)[i].workspace);
  void *d = nullptr, *ws = nullptr;
  std::vector<cudaEvent_t> events(2 * which.size(), nullptr);
  bool ok = cudaMallocAsync(&d, std::max<uint64_t>(p.d_bytes, 1), stream) == cudaSuccess &&
            (ws_bytes == 0 || cudaMallocAsync(&ws, ws_bytes, stream) == cudaSuccess);
  for (cudaEvent_t& e : events) ok = ok && cudaEventCreate(&e) == cudaSuccess;
  std::vector<char> ran(which.size(), 0);
  for (size_t j = 0; ok && j < which.size(); ++j) {
    wharf_aoti_gemm_probe_candidate_t& c = (*cands)[which[j]];
    cublasLtMatmulAlgo_t algo;
    std::memcpy(&algo, c.algo, sizeof algo);
    auto call = [&] {
      return p.api->Matmul(p.handle, p.desc, &p.alpha, p.a, p.la, p.b, p.lb, &p.beta, d, p.ld, d, p.ld, &algo, ws,
                           c.workspace, stream) == CUBLAS_STATUS_SUCCESS;
    };
    if (!call()) continue;  // the warm-up: kernels loaded
    bool all = cudaEventRecord(events[2 * j], stream) == cudaSuccess;
    for (int r = 0; all && r < kCalls; ++r) all = call();
    ran[j] = all && cudaEventRecord(events[2 * j + 1], stream) == cudaSuccess;
  }
  ok = ok && cudaStreamSynchronize(stream) == cudaSuccess;
  for (size_t j = 0; ok && j < which.size(); ++j) {
    float ms = 0;
    if (ran[j] && cudaEventElapsedTime(&ms, events[2 * j], events[2 * j + 1]) == cudaSuccess)
      (*cands)[which[j]].time_us = double(ms) * 1000.0 / kCalls;
  }
  for (cudaEvent_t e : events)
    if (e) cudaEventDestroy(e);
  if (d) cudaFreeAsync(d, stream);
  if (ws) cudaFreeAsync(ws, stream);
  (void)cudaGetLastError();
  return ok;
}

struct Probe {
  std::vector<wharf_aoti_gemm_probe_candidate_t> candidates;
  int heuristic = 0;
  int chosen = -1;
  bool layouts = true;  // parameter layouts could be read (else PARAMS alone qualifies)
};

// The graph algorithm of a problem: cuBLASLt's candidates (the eager choice, the heuristic's
// list; then, if none qualifies or `exhaustive`, a search limited to each other algorithm ID)
// captured one by one
// on the device's probe stream in relaxed mode, each kept or not by what its nodes show.
// `all`: classify every listed candidate (for the report), not stop at the first that
// qualifies. Runs under g_probe_mu.
AOTITorchError probe_graph_algo(const ProbeProblem& p, int device, cublasLtMatmulPreferenceOpaque_t pref,
                                const Choice& eager, bool all, bool exhaustive, Probe* out) {
  cudaStream_t& stream = g_probe_streams[device];
  if (!stream) {
    RelaxedCaptureMode relaxed;
    cudaError_t e = cudaStreamCreateWithFlags(&stream, cudaStreamNonBlocking);
    if (e != cudaSuccess) {
      stream = nullptr;
      return cuda_fail(e, "creating the cuBLASLt graph probe's stream on CUDA device " + std::to_string(device));
    }
  }
  RelaxedCaptureMode relaxed;
  // Distinct, 256-byte-preserving moves of A, B, D and the bias.
  static const int64_t kNone[4] = {0, 0, 0, 0};
  static const int64_t kShift[4] = {int64_t(1) << 20, int64_t(2) << 20, int64_t(4) << 20, int64_t(8) << 20};
  auto classify = [&](wharf_aoti_gemm_probe_candidate_t* c) {
    cublasLtMatmulAlgo_t algo;
    std::memcpy(&algo, c->algo, sizeof algo);
    const CapturedCall base = capture_call(p, algo, c->workspace, kNone, stream);
    c->kernel_nodes = base.ok ? int32_t(base.kernels.size()) : -1;
    c->flags = 0;
    if (!base.ok || !base.params) return;
    c->flags |= WHARF_AOTI_PROBE_PARAMS;
    if (!base.layouts) {
      out->layouts = false;
      return;
    }
    const CapturedCall moved = capture_call(p, algo, c->workspace, kShift, stream);
    if (moved.ok && moved.params && moved.layouts && repointable(base, moved, kShift, p.bias != nullptr))
      c->flags |= WHARF_AOTI_PROBE_REPOINTABLE;
  };
  auto qualifies = [&](const wharf_aoti_gemm_probe_candidate_t& c) {
    return (c.flags & WHARF_AOTI_PROBE_PARAMS) && ((c.flags & WHARF_AOTI_PROBE_REPOINTABLE) || !out->layouts);
  };
  auto add = [&](const cublasLtMatmulHeuristicResult_t& r, int32_t source) {
    wharf_aoti_gemm_probe_candidate_t c;
    std::memset(&c, 0, sizeof c);
    static_assert(sizeof c.algo == sizeof r.algo, "cublasLtMatmulAlgo_t is 8 words");
    std::memcpy(c.algo, &r.algo, sizeof r.algo);
    c.workspace = r.workspaceSize;
    c.source = source;
    c.algo_id = -1;
    size_t written = 0;
    if (p.api->AlgoConfigGet)
      (void)p.api->AlgoConfigGet(&r.algo, CUBLASLT_ALGO_CONFIG_ID, &c.algo_id, sizeof c.algo_id, &written);
    c.kernel_nodes = -1;
    out->candidates.push_back(c);
  };
  // Classifies candidates[from..], choosing the first that qualifies (every one: `every`).
  auto walk = [&](size_t from, bool every) {
    for (size_t i = from; i < out->candidates.size(); ++i) {
      if (out->chosen >= 0 && !every) return;
      classify(&out->candidates[i]);
      if (out->chosen < 0 && qualifies(out->candidates[i])) out->chosen = int(i);
    }
  };

  constexpr int kListed = 16;
  cublasLtMatmulHeuristicResult_t results[kListed];
  std::memset(results, 0, sizeof results);
  int found = 0;
  cublasStatus_t hs =
      p.api->AlgoGetHeuristic(p.handle, p.desc, p.la, p.lb, p.ld, p.ld, &pref, kListed, results, &found);
  if (hs != CUBLAS_STATUS_SUCCESS && hs != CUBLAS_STATUS_NOT_SUPPORTED)
    return fail("cublasLtMatmulAlgoGetHeuristic (16 candidates for the graph probe): " + p.api->error(hs));
  if (!eager.none) {  // the eager choice first (the list's first, usually; not always)
    cublasLtMatmulHeuristicResult_t r;
    std::memset(&r, 0, sizeof r);
    r.algo = eager.algo;
    r.workspaceSize = eager.workspace;
    add(r, 0);
  }
  for (int i = 0; hs == CUBLAS_STATUS_SUCCESS && i < found; ++i)
    if (results[i].state == CUBLAS_STATUS_SUCCESS && results[i].workspaceSize <= kMaxWorkspace &&
        (eager.none || std::memcmp(&results[i].algo, &eager.algo, sizeof eager.algo) != 0))
      add(results[i], 0);
  out->heuristic = int(out->candidates.size());
  walk(0, all);
  if ((out->chosen >= 0 && !exhaustive) || !p.api->AlgoGetIds || !p.api->AlgoInit || out->candidates.empty())
    return kOk;

  // Other algorithm IDs, each through the heuristic limited to it (which configures tiles,
  // stages and split-K for this problem), two configurations per ID at most.
  constexpr int kMaxIds = 128;
  int ids[kMaxIds];
  int nids = 0;
  if (p.api->AlgoGetIds(p.handle, CUBLAS_COMPUTE_32F, CUDA_R_32F, p.type, p.type, p.type, p.type, kMaxIds, ids,
                        &nids) != CUBLAS_STATUS_SUCCESS)
    return kOk;
  cublasLtMatmulPreferenceOpaque_t limited = pref;
  const uint32_t search = CUBLASLT_SEARCH_LIMITED_BY_ALGO_ID;
  if (p.api->PreferenceSetAttribute(&limited, CUBLASLT_MATMUL_PREF_SEARCH_MODE, &search, sizeof search) !=
      CUBLAS_STATUS_SUCCESS)
    return kOk;
  const size_t listed = out->candidates.size();
  for (int i = 0; i < nids && out->candidates.size() < WHARF_AOTI_PROBE_MAX_CANDIDATES; ++i) {
    bool tried = false;
    for (size_t j = 0; j < listed; ++j) tried = tried || out->candidates[j].algo_id == ids[i];
    if (tried) continue;
    cublasLtMatmulHeuristicResult_t r[2];
    std::memset(r, 0, sizeof r);
    bool init = true;
    for (auto& x : r)
      init = init && p.api->AlgoInit(p.handle, CUBLAS_COMPUTE_32F, CUDA_R_32F, p.type, p.type, p.type, p.type, ids[i],
                                     &x.algo) == CUBLAS_STATUS_SUCCESS;
    int got = 0;
    if (!init || p.api->AlgoGetHeuristic(p.handle, p.desc, p.la, p.lb, p.ld, p.ld, &limited, 2, r, &got) !=
                     CUBLAS_STATUS_SUCCESS)
      continue;
    for (int j = 0; j < got && out->candidates.size() < WHARF_AOTI_PROBE_MAX_CANDIDATES; ++j)
      if (r[j].state == CUBLAS_STATUS_SUCCESS && r[j].workspaceSize <= kMaxWorkspace) add(r[j], 1);
  }
  // The IDs come in no order of speed: on H100 (bfloat16, M 16 to 128) the first that
  // qualified ran 3 to 41 times slower than the heuristic's first, the fastest 1.0 to 1.6
  // times. So every one that qualifies is timed and the fastest kept.
  const bool none_listed = out->chosen < 0;
  walk(listed, true);
  if (!none_listed) return kOk;
  out->chosen = -1;
  std::vector<size_t> timed;
  for (size_t i = listed; i < out->candidates.size(); ++i)
    if (qualifies(out->candidates[i])) timed.push_back(i);
  if (timed.empty()) return kOk;
  out->chosen = int(timed[0]);  // if timing fails: the first that qualifies
  if (timed.size() > 1 && time_candidates(p, timed, stream, &out->candidates)) {
    double best = 0;
    for (size_t i : timed) {
      const double t = out->candidates[i].time_us;
      if (t > 0 && (best == 0 || t < best)) {
        best = t;
        out->chosen = int(i);
      }
    }
  }
  return kOk;
}

AOTITorchError run_gemm(Gemm g) {
  const LtApi* api = nullptr;
  if (lt_api(&api) != kOk) return kFail;
  cublasLtHandle_t handle = nullptr;
  if (lt_handle(*api, g.device, &handle) != kOk) return kFail;
  const size_t es = element_size(g.dtype);

  // D must be column-major for cuBLASLt: a row-major out is computed as out^T = b^T a^T (as
  // PyTorch does; the bias epilogue needs it, its vector runs along D's rows).
  auto usable = [&](const Layout& l) {
    return l.ok && !l.trans && (g.batch <= 1 || g.d.sb >= l.ld * (l.stored_cols - 1) + l.stored_rows);
  };
  bool transpose = g.bias != nullptr || g.d.sc == 1;
  Layout dl = blas_layout(transpose ? g.d.transposed() : g.d);
  if (!usable(dl) && !g.bias) {
    transpose = !transpose;
    dl = blas_layout(transpose ? g.d.transposed() : g.d);
  }
  if (!usable(dl))  // gemm_op checked writable(): not reached
    return fail(std::string(g.fn) + ": internal error: cuBLASLt cannot write the output's layout (rows " +
                std::to_string(g.d.rows) + ", cols " + std::to_string(g.d.cols) + ", strides " +
                std::to_string(g.d.sr) + ", " + std::to_string(g.d.sc) + ", batch stride " + std::to_string(g.d.sb) +
                ")");
  if (transpose) {
    const View a = g.b.transposed(), b = g.a.transposed();
    g.a = a;
    g.b = b;
    g.d = g.d.transposed();
    std::swap(g.m, g.n);
  }

  std::shared_ptr<Storage> keep_a, keep_b;
  Layout al = blas_layout(g.a);
  if (!al.ok || (g.batch > 1 && g.a.sb == 0)) {
    if (contiguous_copy(g, &g.a, &keep_a) != kOk) return kFail;
    al = blas_layout(g.a);
  }
  Layout bl = blas_layout(g.b);
  if (!bl.ok || (g.batch > 1 && g.b.sb == 0)) {
    if (contiguous_copy(g, &g.b, &keep_b) != kOk) return kFail;
    bl = blas_layout(g.b);
  }

  ProblemKey key;
  std::memset(&key, 0, sizeof key);
  key.device = g.device;
  key.dtype = g.dtype;
  key.transa = al.trans;
  key.transb = bl.trans;
  key.bias = g.bias != nullptr;
  key.m = g.m;
  key.n = g.n;
  key.k = g.k;
  key.lda = al.ld;
  key.ldb = bl.ld;
  key.ldd = dl.ld;
  key.batch = g.batch;
  key.stride_a = g.batch > 1 ? g.a.sb : 0;
  key.stride_b = g.batch > 1 ? g.b.sb : 0;
  key.stride_d = g.batch > 1 ? g.d.sb : 0;
  key.align_a = alignment(g.a.data, g.batch, key.stride_a * int64_t(es));
  key.align_b = alignment(g.b.data, g.batch, key.stride_b * int64_t(es));
  key.align_d = alignment(g.d.data, g.batch, key.stride_d * int64_t(es));
  key.align_bias = g.bias ? alignment(g.bias, 1, 0) : 0;

  // Descriptors live on the stack (the *Init functions allocate nothing).
  auto what = [&] {  // built on failure only: no allocation per call
    return std::string(g.fn) + " (" + dtype_name(g.dtype) + ", m " + std::to_string(g.m) + ", n " +
           std::to_string(g.n) + ", k " + std::to_string(g.k) + ", batch " + std::to_string(g.batch) + ")";
  };
  auto check = [&](cublasStatus_t s, const char* step) -> AOTITorchError {
    if (s == CUBLAS_STATUS_SUCCESS) return kOk;
    return fail(what() + ": " + step + ": " + api->error(s));
  };
  cublasLtMatmulDescOpaque_t desc;
  if (check(api->MatmulDescInit(&desc, sizeof desc, CUBLAS_COMPUTE_32F, CUDA_R_32F), "cublasLtMatmulDescInit"))
    return kFail;
  const int32_t ta = al.trans ? CUBLAS_OP_T : CUBLAS_OP_N, tb = bl.trans ? CUBLAS_OP_T : CUBLAS_OP_N;
  if (check(api->MatmulDescSetAttribute(&desc, CUBLASLT_MATMUL_DESC_TRANSA, &ta, sizeof ta), "setting TRANSA") ||
      check(api->MatmulDescSetAttribute(&desc, CUBLASLT_MATMUL_DESC_TRANSB, &tb, sizeof tb), "setting TRANSB"))
    return kFail;
  if (g.bias) {
    const int32_t epilogue = CUBLASLT_EPILOGUE_BIAS;
    const int32_t bias_type = cuda_type(g.dtype);
    if (check(api->MatmulDescSetAttribute(&desc, CUBLASLT_MATMUL_DESC_EPILOGUE, &epilogue, sizeof epilogue),
              "setting the bias epilogue") ||
        check(api->MatmulDescSetAttribute(&desc, CUBLASLT_MATMUL_DESC_BIAS_POINTER, &g.bias, sizeof g.bias),
              "setting the bias pointer") ||
        check(api->MatmulDescSetAttribute(&desc, CUBLASLT_MATMUL_DESC_BIAS_DATA_TYPE, &bias_type, sizeof bias_type),
              "setting the bias type"))
      return kFail;
  }
  const cudaDataType_t type = cuda_type(g.dtype);
  cublasLtMatrixLayoutOpaque_t la, lb, ld;
  auto layout = [&](cublasLtMatrixLayoutOpaque_t* l, const Layout& x, int64_t stride, const char* name) {
    if (check(api->MatrixLayoutInit(l, sizeof *l, type, uint64_t(x.stored_rows), uint64_t(x.stored_cols), x.ld), name))
      return kFail;
    if (g.batch > 1) {
      const int32_t count = int32_t(g.batch);
      if (check(api->MatrixLayoutSetAttribute(l, CUBLASLT_MATRIX_LAYOUT_BATCH_COUNT, &count, sizeof count), name) ||
          check(api->MatrixLayoutSetAttribute(l, CUBLASLT_MATRIX_LAYOUT_STRIDED_BATCH_OFFSET, &stride, sizeof stride),
                name))
        return kFail;
    }
    return kOk;
  };
  if (g.batch > INT32_MAX) return fail(what() + ": more batches than cuBLASLt takes");
  if (layout(&la, al, key.stride_a, "layout of A") || layout(&lb, bl, key.stride_b, "layout of B") ||
      layout(&ld, dl, key.stride_d, "layout of D"))
    return kFail;

  auto make_pref = [&](cublasLtMatmulPreferenceOpaque_t* pref) -> AOTITorchError {
    if (check(api->PreferenceInit(pref, sizeof *pref), "cublasLtMatmulPreferenceInit")) return kFail;
    const uint64_t ws = kMaxWorkspace;
    if (check(api->PreferenceSetAttribute(pref, CUBLASLT_MATMUL_PREF_MAX_WORKSPACE_BYTES, &ws, sizeof ws),
              "setting the workspace limit") ||
        check(api->PreferenceSetAttribute(pref, CUBLASLT_MATMUL_PREF_MIN_ALIGNMENT_A_BYTES, &key.align_a,
                                          sizeof key.align_a),
              "setting A's alignment") ||
        check(api->PreferenceSetAttribute(pref, CUBLASLT_MATMUL_PREF_MIN_ALIGNMENT_B_BYTES, &key.align_b,
                                          sizeof key.align_b),
              "setting B's alignment") ||
        check(api->PreferenceSetAttribute(pref, CUBLASLT_MATMUL_PREF_MIN_ALIGNMENT_C_BYTES, &key.align_d,
                                          sizeof key.align_d),
              "setting C's alignment") ||
        check(api->PreferenceSetAttribute(pref, CUBLASLT_MATMUL_PREF_MIN_ALIGNMENT_D_BYTES, &key.align_d,
                                          sizeof key.align_d),
              "setting D's alignment") ||
        check(api->PreferenceSetAttribute(pref, CUBLASLT_MATMUL_PREF_REDUCTION_SCHEME_MASK, &kReductionSchemes,
                                          sizeof kReductionSchemes),
              "setting the split-K reduction schemes"))
      return kFail;
    return kOk;
  };
  auto lookup = [&](const std::unordered_map<ProblemKey, Choice, ProblemHash>& cache, Choice* out) {
    std::shared_lock<std::shared_mutex> lock(g_cache_mu);
    auto it = cache.find(key);
    if (it == cache.end()) return false;
    *out = it->second;
    return true;
  };
  auto remember = [&](std::unordered_map<ProblemKey, Choice, ProblemHash>* cache, const Choice& c) {
    std::unique_lock<std::shared_mutex> lock(g_cache_mu);
    if (cache->size() >= kMaxCachedProblems) cache->clear();  // many dynamic shapes: start over
    cache->emplace(key, c);
  };

  // The heuristic's first: the eager choice and, for graphs, the first candidate probed (a
  // graph runs what an eager call runs wherever that can be re-pointed: the same bits).
  auto eager_choice = [&](Choice* out) -> AOTITorchError {
    if (lookup(g_cache, out)) return kOk;
    cublasLtMatmulPreferenceOpaque_t pref;
    if (make_pref(&pref)) return kFail;
    cublasLtMatmulHeuristicResult_t result;
    std::memset(&result, 0, sizeof result);
    int found = 0;
    const cublasStatus_t hs = api->AlgoGetHeuristic(handle, &desc, &la, &lb, &ld, &ld, &pref, 1, &result, &found);
    if (hs != CUBLAS_STATUS_SUCCESS && hs != CUBLAS_STATUS_NOT_SUPPORTED)
      return check(hs, "cublasLtMatmulAlgoGetHeuristic");
    *out = Choice{result.algo, result.workspaceSize, hs != CUBLAS_STATUS_SUCCESS || found == 0, 0};
    remember(&g_cache, *out);
    return kOk;
  };
  Choice choice;
  ProbeRequest* const request = t_probe;
  const bool for_graph = request != nullptr || wants_graph_algo(current_stream());
  if (!for_graph && eager_choice(&choice)) return kFail;
  if (for_graph && (request || !lookup(g_graph_cache, &choice))) {
    // Probed once per problem (again only for wharf_aoti_gemm_probe, which keeps nothing).
    std::lock_guard<std::mutex> probe_lock(g_probe_mu);
    if (request || !lookup(g_graph_cache, &choice)) {
      Choice eager;
      if (eager_choice(&eager)) return kFail;
      cublasLtMatmulPreferenceOpaque_t pref;
      if (make_pref(&pref)) return kFail;
      const auto t0 = std::chrono::steady_clock::now();
      const uint64_t d_elems = uint64_t(key.stride_d) * uint64_t(g.batch > 1 ? g.batch - 1 : 0) +
                               uint64_t(dl.ld) * uint64_t(dl.stored_cols - 1) + uint64_t(dl.stored_rows);
      ProbeProblem pp{api,      handle, &desc,    &la,     &lb,    &ld,  g.a.data,
                      g.b.data, g.bias, g.d.data, g.alpha, g.beta, type, d_elems * es};
      Probe probe;
      if (probe_graph_algo(pp, g.device, pref, eager, request != nullptr, request && (request->flags & 1u), &probe) !=
          kOk)
        return kFail;
      if (probe.chosen >= 0) {
        const wharf_aoti_gemm_probe_candidate_t& c = probe.candidates[size_t(probe.chosen)];
        std::memcpy(&choice.algo, c.algo, sizeof choice.algo);
        choice.workspace = c.workspace;
        choice.none = false;
        choice.graph = 1;
      } else if (!probe.candidates.empty()) {
        // None qualifies: the heuristic's first (a capture then fails, the run stays eager).
        const wharf_aoti_gemm_probe_candidate_t& c = probe.candidates[0];
        std::memcpy(&choice.algo, c.algo, sizeof choice.algo);
        choice.workspace = c.workspace;
        choice.none = false;
        choice.graph = 2;
      } else {
        std::memset(&choice.algo, 0, sizeof choice.algo);
        choice.workspace = 0;
        choice.none = true;
        choice.graph = 2;
      }
      if (request) {
        request->ran = true;
        wharf_aoti_gemm_probe_t* r = request->report;
        if (r) {
          r->transa = ta == CUBLAS_OP_T;
          r->transb = tb == CUBLAS_OP_T;
          r->m = g.m;
          r->n = g.n;
          r->k = g.k;
          r->lda = al.ld;
          r->ldb = bl.ld;
          r->ldd = dl.ld;
          r->heuristic = probe.heuristic;
          r->count = int32_t(probe.candidates.size());
          r->chosen = probe.chosen;
          r->probe_us = std::chrono::duration<double, std::micro>(std::chrono::steady_clock::now() - t0).count();
          std::memcpy(r->candidates, probe.candidates.data(),
                      probe.candidates.size() * sizeof(wharf_aoti_gemm_probe_candidate_t));
        }
      } else {
        remember(&g_graph_cache, choice);
        if (choice.graph == 2 && !choice.none)
          note(what() + ": no cuBLASLt algorithm launches kernels that CUDA graphs can re-point (" +
               std::to_string(probe.candidates.size()) +
               " candidates probed: parameters passed as one buffer, or addresses not passed as plain words); "
               "the heuristic's first runs, and a graph capturing this GEMM fails");
      }
    }
  }
  std::shared_ptr<Storage> workspace;
  if (choice.workspace > 0 && allocate(choice.workspace, kCuda, g.device, &workspace) != kOk) return kFail;
  const float alpha = g.alpha, beta = g.beta;
  g_cublaslt_calls.fetch_add(1, std::memory_order_relaxed);
  if (choice.graph == 1) g_graph_algo_calls.fetch_add(1, std::memory_order_relaxed);
  if (choice.graph == 2) g_graph_fallback_calls.fetch_add(1, std::memory_order_relaxed);
  return check(api->Matmul(handle, &desc, &alpha, g.a.data, &la, g.b.data, &lb, &beta, g.d.data, &ld, g.d.data, &ld,
                           &choice.algo, workspace ? workspace->base : nullptr, choice.workspace, current_stream()),
               "cublasLtMatmul");
}

// ---- argument checks shared by the four functions ----------------------------------------

AOTITorchError check_tensor(const char* fn, const char* name, const WharfAotiTensor* t, size_t rank) {
  if (!t) return fail(std::string(fn) + ": " + name + " is NULL");
  if (t->device_type != kCuda)
    return fail(std::string(fn) + ": " + name + " is not a CUDA tensor (device type " + std::to_string(t->device_type) +
                ")");
  if (t->dtype != kF32 && t->dtype != kF16 && t->dtype != kBF16)
    return fail(std::string(fn) + ": " + name + " is " + dtype_name(t->dtype) + " (code " + std::to_string(t->dtype) +
                "); float32, float16 and bfloat16 are supported");
  if (rank != size_t(-1) && t->sizes.size() != rank)
    return fail(std::string(fn) + ": " + name + " has " + std::to_string(t->sizes.size()) + " dimensions, " +
                std::to_string(rank) + " expected (" + shape(*t) + ")");
  for (size_t i = 0; i < t->sizes.size(); ++i)
    if (t->sizes[i] < 0 || t->strides[i] < 0)
      return fail(std::string(fn) + ": " + name + " has a negative size or stride (" + shape(*t) + ")");
  if (!t->storage) return fail(std::string(fn) + ": " + name + " has no storage");
  return kOk;
}

AOTITorchError same_kind(const char* fn, const WharfAotiTensor& out, const WharfAotiTensor& t, const char* name) {
  if (t.dtype != out.dtype)
    return fail(std::string(fn) + ": " + name + " is " + dtype_name(t.dtype) + " but out is " + dtype_name(out.dtype));
  if (t.device_index != out.device_index)
    return fail(std::string(fn) + ": " + name + " is on CUDA device " + std::to_string(t.device_index) +
                " but out on " + std::to_string(out.device_index));
  return kOk;
}

// `self` of addmm/baddbmm seen as [batch, m, n] with broadcast (stride 0) dimensions, or an
// error if it does not broadcast to that shape (PyTorch's rule: align trailing dimensions).
AOTITorchError broadcast_strides(const char* fn, const WharfAotiTensor& self, const int64_t shape3[3],
                                 int64_t strides3[3]) {
  const size_t rank = self.sizes.size();
  if (rank > 3) return fail(std::string(fn) + ": self has " + std::to_string(rank) + " dimensions");
  for (int i = 0; i < 3; ++i) {
    const int src = int(rank) - 3 + i;
    if (src < 0) {
      strides3[i] = 0;
      continue;
    }
    const int64_t size = self.sizes[size_t(src)];
    if (size == shape3[i]) {
      strides3[i] = shape3[i] == 1 ? 0 : self.strides[size_t(src)];
    } else if (size == 1) {
      strides3[i] = 0;
    } else {
      return fail(std::string(fn) + ": self " + shape(self) + " does not broadcast to the output's [" +
                  (shape3[0] == 1 && rank < 3 ? "" : std::to_string(shape3[0]) + ", ") + std::to_string(shape3[1]) +
                  ", " + std::to_string(shape3[2]) + "]");
    }
  }
  return kOk;
}

bool same_view(const WharfAotiTensor& a, const WharfAotiTensor& b) {
  return a.storage == b.storage && a.offset == b.offset && a.sizes == b.sizes && a.strides == b.strides;
}

// Whether two tensors' storages may share memory (the same storage, or storages over the
// same base pointer: views made from one blob).
bool shares_memory(const WharfAotiTensor& a, const WharfAotiTensor& b) {
  return a.storage == b.storage || (a.storage->base != nullptr && a.storage->base == b.storage->base);
}

// Whether two elements of t may share memory: false when, with the dimensions sorted by
// stride, each stride exceeds the extent of the smaller ones (sufficient, and what every
// layout Inductor allocates satisfies). t is a GEMM's out (2 or 3 dimensions, checked):
// no allocation (the GEMV path asks on every call).
bool overlapping(const WharfAotiTensor& t) {
  std::pair<int64_t, int64_t> dims[3];  // (stride, size)
  size_t count = 0;
  for (size_t i = 0; i < t.sizes.size(); ++i) {
    if (t.sizes[i] == 0) return false;
    if (t.sizes[i] > 1) {
      if (count == 3) return true;  // not reached (rank checked): say "may overlap"
      dims[count++] = {t.strides[i], t.sizes[i]};
    }
  }
  for (size_t i = 1; i < count; ++i)  // insertion sort of at most 3
    for (size_t j = i; j > 0 && dims[j] < dims[j - 1]; --j) std::swap(dims[j], dims[j - 1]);
  int64_t extent = 0;  // max offset reachable with the smaller-stride dimensions
  for (size_t i = 0; i < count; ++i) {
    if (dims[i].first <= extent) return true;
    extent += dims[i].first * (dims[i].second - 1);
  }
  return false;
}

// Whether cuBLASLt can write D in place: column-major in one of the two orientations, and
// batches that do not overlap.
bool writable(const View& d, int64_t batch) {
  for (const View& v : {d, d.transposed()}) {
    const Layout l = blas_layout(v);
    if (l.ok && !l.trans && (batch <= 1 || d.sb >= l.ld * (l.stored_cols - 1) + l.stored_rows)) return true;
  }
  return false;
}

// out = beta * broadcast(self) + alpha * batch1 @ batch2, over [batch, m, k] x [batch, k, n].
// self == nullptr: mm/bmm (beta 0).
AOTITorchError gemm_op(const char* fn, WharfAotiTensor* out, const WharfAotiTensor* self, const WharfAotiTensor* m1,
                       const WharfAotiTensor* m2, double beta, double alpha, bool batched) {
  const size_t rank = batched ? 3 : 2;
  if (check_tensor(fn, "out", out, rank) || check_tensor(fn, batched ? "batch1" : "mat1", m1, rank) ||
      check_tensor(fn, batched ? "batch2" : "mat2", m2, rank))
    return kFail;
  if (self && check_tensor(fn, "self", self, size_t(-1))) return kFail;
  if (same_kind(fn, *out, *m1, batched ? "batch1" : "mat1") || same_kind(fn, *out, *m2, batched ? "batch2" : "mat2") ||
      (self && same_kind(fn, *out, *self, "self")))
    return kFail;
  const size_t o = batched ? 1 : 0;
  const int64_t batch = batched ? m1->sizes[0] : 1;
  const int64_t m = m1->sizes[o], k = m1->sizes[o + 1], n = m2->sizes[o + 1];
  if (m2->sizes[o] != k || (batched && m2->sizes[0] != batch))
    return fail(std::string(fn) + ": the operands' shapes do not multiply: " + shape(*m1) + " @ " + shape(*m2));
  if (out->sizes[o] != m || out->sizes[o + 1] != n || (batched && out->sizes[0] != batch))
    return fail(std::string(fn) + ": out is " + shape(*out) + ", the product is [" +
                (batched ? std::to_string(batch) + ", " : "") + std::to_string(m) + ", " + std::to_string(n) + "]");
  const int64_t shape3[3] = {batch, m, n};
  int64_t self3[3] = {0, 0, 0};
  if (self && broadcast_strides(fn, *self, shape3, self3) != kOk) return kFail;
  if (batch == 0 || m == 0 || n == 0) return kOk;

  DeviceScope scope;
  if (scope.enter(out->device_index) != kOk) return kFail;
  const cudaStream_t stream = current_stream();
  const int64_t out3[3] = {batched ? out->strides[0] : 0, out->strides[o], out->strides[o + 1]};
  const bool with_self = self && beta != 0.0;
  const bool self_is_out = with_self && same_view(*self, *out);
  if (k == 0) {
    // No products: out = beta * self, or zeros (in place when out is self: each element is
    // read and written by the same thread).
    if (!self_is_out && with_self && shares_memory(*self, *out))
      return fail(std::string(fn) + ": self " + shape(*self) + " overlaps out " + shape(*out) +
                  " without being the same view");
    cudaError_t e = launch_strided_copy(out->dtype, out->data(), out3, with_self ? self->data() : nullptr,
                                        self_is_out ? out3 : self3, shape3, with_self ? float(beta) : 0.0f, stream);
    if (e != cudaSuccess) return cuda_fail(e, std::string(fn) + ": writing beta * self into out (k is 0)");
    return kOk;
  }

  // Decode: a few activation rows against an nn.Linear weight (mat2 = weight.t(), strides
  // (1, ldw)) or a row-major [K, N] weight (GPT-2's Conv1D, strides (ldw, 1)) run the shim's
  // GEMV kernels, memory-bound at the weight's bytes, where cuBLASLt launches kernels graph
  // capture cannot re-point (bfloat16 on Hopper) and its heuristic's choice for m <= 8 reads
  // the weight no faster. Not when an input shares out's memory (other than self being out)
  // or out's elements overlap: the GEMM path stages those.
  const int32_t gemv_mode = g_gemv_mode.load(std::memory_order_relaxed);
  const bool linear = m2->strides[0] == 1 || k == 1, row_major = !linear && (m2->strides[1] == 1 || n == 1);
  if (!batched && m <= kGemvMaxM && (linear || row_major) && gemv_mode != 0 && !t_probe && !shares_memory(*m1, *out) &&
      !shares_memory(*m2, *out) && (!with_self || self_is_out || !shares_memory(*self, *out)) && !overlapping(*out)) {
    GemvArgs ga;
    ga.x = m1->data();
    ga.w = m2->data();
    ga.self = with_self ? self->data() : nullptr;
    ga.out = out->data();
    ga.m = m;
    ga.n = n;
    ga.k = k;
    ga.ldx = m1->strides[0];
    ga.sxk = m1->strides[1];
    ga.ldw = linear ? m2->strides[1] : m2->strides[0];
    ga.self_sm = self_is_out ? out3[1] : self3[1];
    ga.self_sn = self_is_out ? out3[2] : self3[2];
    ga.out_sm = out3[1];
    ga.out_sn = out3[2];
    ga.alpha = float(alpha);
    ga.beta = float(beta);
    ga.pdl = g_gemv_pdl.load(std::memory_order_relaxed);
    ga.pad = 0;
    // Mode 3 sends some shapes to cuBLASLt (gemv_route): those go on below.
    if (!linear || gemv_route(out->dtype, ga, gemv_mode) != GemvRoute::kCublasLt) {
      const cudaError_t e =
          linear ? launch_gemv(out->dtype, ga, gemv_mode, stream) : launch_gemv_kn(out->dtype, ga, stream);
      if (e != cudaSuccess) return cuda_fail(e, std::string(fn) + ": launching the GEMV kernel");
      g_gemv_calls.fetch_add(1, std::memory_order_relaxed);
      if (!linear) g_gemv_kn_calls.fetch_add(1, std::memory_order_relaxed);
      if (!(linear ? gemv_vectorizable(out->dtype, ga) : gemv_kn_vectorizable(out->dtype, ga)))
        g_gemv_elementwise_calls.fetch_add(1, std::memory_order_relaxed);
      return kOk;
    }
  }

  // Where the GEMM writes: out itself, or (when cuBLASLt cannot write out's layout, or an
  // input shares out's memory other than as self) a contiguous buffer copied into out after.
  Gemm g;
  g.fn = fn;
  g.dtype = out->dtype;
  g.device = out->device_index;
  g.batch = batch;
  g.m = m;
  g.n = n;
  g.k = k;
  g.a = View{m1->data(), m, k, m1->strides[o], m1->strides[o + 1], batched ? m1->strides[0] : 0};
  g.b = View{m2->data(), k, n, m2->strides[o], m2->strides[o + 1], batched ? m2->strides[0] : 0};
  g.d = View{out->data(), m, n, out3[1], out3[2], out3[0]};
  const bool direct = writable(g.d, batch) && !shares_memory(*m1, *out) && !shares_memory(*m2, *out) &&
                      (!with_self || self_is_out || !shares_memory(*self, *out));
  std::shared_ptr<Storage> staging;
  if (!direct) {
    if (overlapping(*out))
      return fail(std::string(fn) + ": out " + shape(*out) + " has elements that share memory (cannot be written)");
    const uint64_t bytes = uint64_t(batch) * uint64_t(m) * uint64_t(n) * element_size(out->dtype);
    if (allocate(bytes, kCuda, out->device_index, &staging) != kOk) return kFail;
    g.d = View{static_cast<char*>(staging->base), m, n, n, 1, m * n};
  }
  const int64_t d3[3] = {batched ? g.d.sb : 0, g.d.sr, g.d.sc};
  // The cuBLASLt bias epilogue: a contiguous row of n added to every row of a row-major
  // output, beta 1, no batches, 16-byte aligned.
  const Layout row = blas_layout(g.d.transposed());
  const bool bias_epilogue = with_self && !self_is_out && !batched && beta == 1.0 && self3[1] == 0 &&
                             (self3[2] == 1 || n == 1) && row.ok && !row.trans &&
                             reinterpret_cast<uintptr_t>(self->data()) % 16 == 0;
  if (with_self && !bias_epilogue && (!self_is_out || !direct)) {
    // self copied into D as is; the GEMM then reads it as C with beta (PyTorch's order).
    cudaError_t e =
        launch_strided_copy(out->dtype, g.d.data, d3, self->data(), self_is_out ? out3 : self3, shape3, 1.0f, stream);
    if (e != cudaSuccess) return cuda_fail(e, std::string(fn) + ": copying self into the output");
  }
  g.alpha = float(alpha);
  g.beta = with_self && !bias_epilogue ? float(beta) : 0.0f;
  if (bias_epilogue) g.bias = self->data();
  AOTITorchError rc = run_gemm(g);
  if (rc == kNoBiasAlgorithm) {
    // No epilogue algorithm for this problem: self into D, then the plain GEMM with beta.
    cudaError_t e = launch_strided_copy(out->dtype, g.d.data, d3, self->data(), self3, shape3, 1.0f, stream);
    if (e != cudaSuccess) return cuda_fail(e, std::string(fn) + ": copying self into the output");
    g.bias = nullptr;
    g.beta = float(beta);
    rc = run_gemm(g);
  }
  if (rc != kOk) return kFail;
  if (!direct) {
    cudaError_t e = launch_strided_copy(out->dtype, out->data(), out3, g.d.data, d3, shape3, 1.0f, stream);
    if (e != cudaSuccess) return cuda_fail(e, std::string(fn) + ": copying the result into out");
  }
  return kOk;
}

}  // namespace
}  // namespace wharf_aoti

using namespace wharf_aoti;

SHIM_API void wharf_aoti_gemm_stats(wharf_aoti_gemm_stats_t* out) {
  if (!out || out->struct_size < offsetof(wharf_aoti_gemm_stats_t, gemv_kn)) return;
  out->gemv = g_gemv_calls.load(std::memory_order_relaxed);
  out->gemv_elementwise = g_gemv_elementwise_calls.load(std::memory_order_relaxed);
  out->cublaslt = g_cublaslt_calls.load(std::memory_order_relaxed);
  if (out->struct_size >= offsetof(wharf_aoti_gemm_stats_t, graph_algo))
    out->gemv_kn = g_gemv_kn_calls.load(std::memory_order_relaxed);
  if (out->struct_size >= sizeof(wharf_aoti_gemm_stats_t)) {
    out->graph_algo = g_graph_algo_calls.load(std::memory_order_relaxed);
    out->graph_fallback = g_graph_fallback_calls.load(std::memory_order_relaxed);
  }
}

SHIM_API int32_t wharf_aoti_gemm_graph_algos(int32_t mode) {
  return g_graph_algos.exchange(graph_algos_of(mode), std::memory_order_relaxed);
}

SHIM_API int32_t wharf_aoti_gemm_probe(AtenTensorHandle out, AtenTensorHandle mat1, AtenTensorHandle mat2,
                                       uint32_t flags, wharf_aoti_gemm_probe_t* report) {
  return guarded("wharf_aoti_gemm_probe", [&]() -> AOTITorchError {
    if (report) {
      if (report->struct_size < sizeof(wharf_aoti_gemm_probe_t))
        return fail("wharf_aoti_gemm_probe: report->struct_size is " + std::to_string(report->struct_size) + ", " +
                    std::to_string(sizeof(wharf_aoti_gemm_probe_t)) + " expected");
      const uint32_t size = report->struct_size;
      std::memset(report, 0, sizeof *report);
      report->struct_size = size;
      report->chosen = -1;
    }
    ProbeRequest request;
    request.flags = flags;
    request.report = report;
    struct Scope {
      explicit Scope(ProbeRequest* r) { t_probe = r; }
      ~Scope() { t_probe = nullptr; }
      Scope(const Scope&) = delete;
      Scope& operator=(const Scope&) = delete;
    } scope(&request);
    if (gemm_op("wharf_aoti_gemm_probe", out, nullptr, mat1, mat2, 0.0, 1.0, false) != kOk) return kFail;
    if (!request.ran) return fail("wharf_aoti_gemm_probe: the product is empty or k is 0 (cuBLASLt is not called)");
    return kOk;
  });
}

SHIM_API int32_t wharf_aoti_gemm_use_gemv(int32_t enabled) {
  return g_gemv_mode.exchange(gemv_mode_of(enabled), std::memory_order_relaxed);
}

SHIM_API int32_t wharf_aoti_gemm_use_pdl(int32_t enabled) {
  return g_gemv_pdl.exchange(enabled == 1 ? 1 : 0, std::memory_order_relaxed);
}

SHIM_API AOTITorchError aoti_torch_cuda_mm_out(AtenTensorHandle out, AtenTensorHandle self, AtenTensorHandle mat2) {
  return guarded("aoti_torch_cuda_mm_out",
                 [&] { return gemm_op("aoti_torch_cuda_mm_out", out, nullptr, self, mat2, 0.0, 1.0, false); });
}

SHIM_API AOTITorchError aoti_torch_cuda_addmm_out(AtenTensorHandle out, AtenTensorHandle self, AtenTensorHandle mat1,
                                                  AtenTensorHandle mat2, double beta, double alpha) {
  return guarded("aoti_torch_cuda_addmm_out",
                 [&] { return gemm_op("aoti_torch_cuda_addmm_out", out, self, mat1, mat2, beta, alpha, false); });
}

SHIM_API AOTITorchError aoti_torch_cuda_bmm_out(AtenTensorHandle out, AtenTensorHandle self, AtenTensorHandle mat2) {
  return guarded("aoti_torch_cuda_bmm_out",
                 [&] { return gemm_op("aoti_torch_cuda_bmm_out", out, nullptr, self, mat2, 0.0, 1.0, true); });
}

SHIM_API AOTITorchError aoti_torch_cuda_baddbmm_out(AtenTensorHandle out, AtenTensorHandle self,
                                                    AtenTensorHandle batch1, AtenTensorHandle batch2, double beta,
                                                    double alpha) {
  return guarded("aoti_torch_cuda_baddbmm_out",
                 [&] { return gemm_op("aoti_torch_cuda_baddbmm_out", out, self, batch1, batch2, beta, alpha, true); });
}

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
#include <cublasLt.h>
#include <dlfcn.h>

#include <algorithm>
#include <atomic>
#include <cstddef>
#include <cstdint>
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
  bool none;  // the heuristic found no algorithm
};
// run_gemm's answer when cuBLASLt has no algorithm with the bias epilogue (nothing was
// enqueued, no error recorded).
constexpr AOTITorchError kNoBiasAlgorithm = 2;

std::shared_mutex g_cache_mu;
std::unordered_map<ProblemKey, Choice, ProblemHash> g_cache;

// Which path served each call (wharf_aoti_gemm_stats), the GEMV path's mode
// (wharf_aoti_gemm_use_gemv: 0 off, 1 on, 2 on without the tensor-core variant, 3 on with
// float16/bfloat16 of 5 to 8 rows above a measured size on cuBLASLt; WHARF_AOTI_GEMV=0, 2 or
// 3 in the environment starts it so) and whether GEMVs use programmatic dependent launch
// (wharf_aoti_gemm_use_pdl; WHARF_AOTI_GEMV_PDL=1).
std::atomic<uint64_t> g_gemv_calls{0}, g_gemv_elementwise_calls{0}, g_gemv_kn_calls{0}, g_cublaslt_calls{0};
int32_t gemv_mode_of(int32_t v) { return v == 0 || v == 2 || v == 3 ? v : 1; }
std::atomic<int32_t> g_gemv_mode{[] {
  const char* v = std::getenv("WHARF_AOTI_GEMV");
  return v && *v ? gemv_mode_of(int32_t(std::atoi(v))) : 1;
}()};
std::atomic<int32_t> g_gemv_pdl{[] {
  const char* v = std::getenv("WHARF_AOTI_GEMV_PDL");
  return v && std::strcmp(v, "1") == 0 ? 1 : 0;
}()};

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

  Choice choice;
  bool cached = false;
  {
    std::shared_lock<std::shared_mutex> lock(g_cache_mu);
    auto it = g_cache.find(key);
    if (it != g_cache.end()) {
      choice = it->second;
      cached = true;
    }
  }
  if (!cached) {
    cublasLtMatmulPreferenceOpaque_t pref;
    if (check(api->PreferenceInit(&pref, sizeof pref), "cublasLtMatmulPreferenceInit")) return kFail;
    const uint64_t ws = kMaxWorkspace;
    if (check(api->PreferenceSetAttribute(&pref, CUBLASLT_MATMUL_PREF_MAX_WORKSPACE_BYTES, &ws, sizeof ws),
              "setting the workspace limit") ||
        check(api->PreferenceSetAttribute(&pref, CUBLASLT_MATMUL_PREF_MIN_ALIGNMENT_A_BYTES, &key.align_a,
                                          sizeof key.align_a),
              "setting A's alignment") ||
        check(api->PreferenceSetAttribute(&pref, CUBLASLT_MATMUL_PREF_MIN_ALIGNMENT_B_BYTES, &key.align_b,
                                          sizeof key.align_b),
              "setting B's alignment") ||
        check(api->PreferenceSetAttribute(&pref, CUBLASLT_MATMUL_PREF_MIN_ALIGNMENT_C_BYTES, &key.align_d,
                                          sizeof key.align_d),
              "setting C's alignment") ||
        check(api->PreferenceSetAttribute(&pref, CUBLASLT_MATMUL_PREF_MIN_ALIGNMENT_D_BYTES, &key.align_d,
                                          sizeof key.align_d),
              "setting D's alignment") ||
        check(api->PreferenceSetAttribute(&pref, CUBLASLT_MATMUL_PREF_REDUCTION_SCHEME_MASK, &kReductionSchemes,
                                          sizeof kReductionSchemes),
              "setting the split-K reduction schemes"))
      return kFail;
    cublasLtMatmulHeuristicResult_t result;
    std::memset(&result, 0, sizeof result);
    int found = 0;
    const cublasStatus_t hs = api->AlgoGetHeuristic(handle, &desc, &la, &lb, &ld, &ld, &pref, 1, &result, &found);
    if (hs != CUBLAS_STATUS_SUCCESS && hs != CUBLAS_STATUS_NOT_SUPPORTED)
      return check(hs, "cublasLtMatmulAlgoGetHeuristic");
    choice = Choice{result.algo, result.workspaceSize, hs != CUBLAS_STATUS_SUCCESS || found == 0};
    std::unique_lock<std::shared_mutex> lock(g_cache_mu);
    if (g_cache.size() >= kMaxCachedProblems) g_cache.clear();  // many dynamic shapes: start over
    g_cache.emplace(key, choice);
  }
  if (choice.none) {
    if (g.bias) return kNoBiasAlgorithm;  // the caller adds the bias itself
    return fail(what() + ": cuBLASLt has no algorithm for this problem");
  }

  std::shared_ptr<Storage> workspace;
  if (choice.workspace > 0 && allocate(choice.workspace, kCuda, g.device, &workspace) != kOk) return kFail;
  const float alpha = g.alpha, beta = g.beta;
  g_cublaslt_calls.fetch_add(1, std::memory_order_relaxed);
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
  if (!batched && m <= kGemvMaxM && (linear || row_major) && gemv_mode != 0 && !shares_memory(*m1, *out) &&
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
  if (out->struct_size >= sizeof(wharf_aoti_gemm_stats_t))
    out->gemv_kn = g_gemv_kn_calls.load(std::memory_order_relaxed);
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

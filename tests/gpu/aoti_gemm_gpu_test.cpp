// SPDX-License-Identifier: Apache-2.0
// The shim library's aten GEMM fallbacks (aoti_torch_cuda_mm_out, _addmm_out, _bmm_out,
// _baddbmm_out; src/models/aoti/gemm.cpp), called through PyTorch 2.11's C signatures on
// tensors made with the shim's own tensor functions, as a compiled model calls them.
// The inputs are multiples of 1/8 in [-2, 2]: every product and partial sum is exact in
// float32, so the reference (computed here in double) is exact, a float32 result must equal
// it, and a float16/bfloat16 result must be it rounded (within one unit in the last place).
#include <cuda.h>
#include <cuda_runtime_api.h>
#include <dlfcn.h>
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <cstdlib>
#include <cstring>
#include <memory>
#include <random>
#include <string>
#include <thread>
#include <type_traits>
#include <vector>

#include "common/test_paths.h"
#include "models/aoti/shim_host.h"

namespace {

using H = void*;  // AtenTensorHandle

constexpr int32_t kF32 = 6, kF16 = 5, kBF16 = 15, kF64 = 7, kI32 = 3, kCpu = 0, kCuda = 1;

struct Shim {
  void* lib = nullptr;
  int32_t (*empty_strided)(int64_t, const int64_t*, const int64_t*, int32_t, int32_t, int32_t, H*) = nullptr;
  int32_t (*reinterpret)(H, int64_t, const int64_t*, const int64_t*, int64_t, H*) = nullptr;
  int32_t (*from_blob)(void*, int64_t, const int64_t*, const int64_t*, int64_t, int32_t, int32_t, int32_t,
                       H*) = nullptr;
  int32_t (*del)(H) = nullptr;
  int32_t (*data_ptr)(H, void**) = nullptr;
  int32_t (*guard)(void*, int32_t, void**) = nullptr;
  int32_t (*unguard)(void*) = nullptr;
  int32_t (*current_stream)(int32_t, void**) = nullptr;
  int32_t (*mm_out)(H, H, H) = nullptr;
  int32_t (*addmm_out)(H, H, H, H, double, double) = nullptr;
  int32_t (*bmm_out)(H, H, H) = nullptr;
  int32_t (*baddbmm_out)(H, H, H, H, double, double) = nullptr;
  const char* (*last_error)() = nullptr;
  struct Stats {
    uint32_t struct_size = sizeof(Stats);
    uint64_t gemv = 0, gemv_elementwise = 0, cublaslt = 0, gemv_kn = 0, graph_algo = 0, graph_fallback = 0;
  };
  void (*gemm_stats)(Stats*) = nullptr;
  int32_t (*use_gemv)(int32_t) = nullptr;
  int32_t (*use_pdl)(int32_t) = nullptr;
  wharf_aoti_gemm_graph_algos_fn graph_algos = nullptr;
  wharf_aoti_gemm_probe_fn probe = nullptr;
  wharf_aoti_set_allocator_fn set_allocator = nullptr;
  std::string error;
};

// $WHARF_AOTI_SHIM, else beside the test binary (the GPU bundle), else the build folder.
const Shim& shim() {
  static Shim s = [] {
    Shim r;
    r.lib = wharf_test::open_aoti_shim(&r.error);
    if (!r.lib) return r;
    auto get = [&](const char* name, auto* fn) {
      *fn = reinterpret_cast<std::remove_pointer_t<decltype(fn)>>(dlsym(r.lib, name));
      if (!*fn) r.error += std::string("missing ") + name + "; ";
    };
    get("aoti_torch_empty_strided", &r.empty_strided);
    get("aoti_torch__reinterpret_tensor", &r.reinterpret);
    get("aoti_torch_create_tensor_from_blob", &r.from_blob);
    get("aoti_torch_delete_tensor_object", &r.del);
    get("aoti_torch_get_data_ptr", &r.data_ptr);
    get("aoti_torch_create_cuda_stream_guard", &r.guard);
    get("aoti_torch_delete_cuda_stream_guard", &r.unguard);
    get("aoti_torch_get_current_cuda_stream", &r.current_stream);
    get("aoti_torch_cuda_mm_out", &r.mm_out);
    get("aoti_torch_cuda_addmm_out", &r.addmm_out);
    get("aoti_torch_cuda_bmm_out", &r.bmm_out);
    get("aoti_torch_cuda_baddbmm_out", &r.baddbmm_out);
    get("wharf_aoti_last_error", &r.last_error);
    get("wharf_aoti_gemm_stats", &r.gemm_stats);
    get("wharf_aoti_gemm_use_gemv", &r.use_gemv);
    get("wharf_aoti_gemm_use_pdl", &r.use_pdl);
    get("wharf_aoti_gemm_graph_algos", &r.graph_algos);
    get("wharf_aoti_gemm_probe", &r.probe);
    get("wharf_aoti_set_allocator", &r.set_allocator);
    return r;
  }();
  return s;
}

// ---- host encodings of the three dtypes (values here are exact in each) ----------------

uint16_t to_half(double v) {
  if (std::isnan(v)) return 0x7e00;
  if (v == 0) return std::signbit(v) ? 0x8000 : 0;
  const uint16_t sign = v < 0 ? 0x8000 : 0;
  int e = 0;
  const double m = std::frexp(std::fabs(v), &e);  // v = m * 2^e, m in [0.5, 1)
  const int exp = e - 1 + 15;
  if (exp <= 0 || exp >= 31) {
    ADD_FAILURE() << "test value " << v << " is not a normal float16";
    return 0;
  }
  const uint16_t mant = uint16_t(std::lround((m * 2 - 1) * 1024));
  return uint16_t(sign | (exp << 10) | mant);
}
double from_half(uint16_t h) {
  const int sign = h >> 15, exp = (h >> 10) & 31, mant = h & 1023;
  double v;
  if (exp == 0)
    v = std::ldexp(mant, -24);
  else if (exp == 31)
    v = mant ? NAN : INFINITY;
  else
    v = std::ldexp(1024 + mant, exp - 25);
  return sign ? -v : v;
}
uint16_t to_bf16(double v) {
  const float f = float(v);
  uint32_t bits;
  std::memcpy(&bits, &f, 4);
  return uint16_t(bits >> 16);  // exact for the values used
}
double from_bf16(uint16_t b) {
  const uint32_t bits = uint32_t(b) << 16;
  float f;
  std::memcpy(&f, &bits, 4);
  return f;
}
// The calling thread's shim stream: the tests copy on it, ordered with the shim's
// stream-ordered allocations and GEMMs.
cudaStream_t shim_stream() {
  void* s = nullptr;
  shim().current_stream(0, &s);
  return static_cast<cudaStream_t>(s);
}

size_t esize(int32_t dtype) { return dtype == kF32 ? 4 : 2; }
const char* dname(int32_t dtype) { return dtype == kF32 ? "f32" : dtype == kF16 ? "f16" : "bf16"; }

// A strided view over device storage, made by the shim, with the host's copy of the storage.
struct Tensor {
  int32_t dtype = kF32;
  std::vector<int64_t> sizes, strides;
  int64_t offset = 0;
  std::vector<double> storage;  // host values of the whole storage
  H handle = nullptr;
  void* base = nullptr;  // device storage
  Tensor() = default;
  Tensor(const Tensor&) = delete;
  Tensor& operator=(const Tensor&) = delete;
  ~Tensor() {
    if (handle) shim().del(handle);
  }
  double at(int64_t i, int64_t j, int64_t b = 0) const {
    const size_t r = sizes.size();
    int64_t idx = offset;
    if (r == 3) idx += b * strides[0] + i * strides[1] + j * strides[2];
    if (r == 2) idx += i * strides[0] + j * strides[1];
    if (r == 1) idx += j * strides[0];
    return storage[size_t(idx)];
  }
  void upload() {
    std::vector<unsigned char> bytes(storage.size() * esize(dtype));
    for (size_t i = 0; i < storage.size(); ++i) {
      if (dtype == kF32) {
        float f = float(storage[i]);
        std::memcpy(&bytes[i * 4], &f, 4);
      } else {
        uint16_t h = dtype == kF16 ? to_half(storage[i]) : to_bf16(storage[i]);
        std::memcpy(&bytes[i * 2], &h, 2);
      }
    }
    ASSERT_EQ(cudaMemcpyAsync(base, bytes.data(), bytes.size(), cudaMemcpyHostToDevice, shim_stream()), cudaSuccess);
    ASSERT_EQ(cudaStreamSynchronize(shim_stream()), cudaSuccess);
  }
  std::vector<double> download() const {
    std::vector<unsigned char> bytes(storage.size() * esize(dtype));
    EXPECT_EQ(cudaMemcpyAsync(bytes.data(), base, bytes.size(), cudaMemcpyDeviceToHost, shim_stream()), cudaSuccess);
    EXPECT_EQ(cudaStreamSynchronize(shim_stream()), cudaSuccess);
    std::vector<double> out(storage.size());
    for (size_t i = 0; i < out.size(); ++i) {
      if (dtype == kF32) {
        float f;
        std::memcpy(&f, &bytes[i * 4], 4);
        out[i] = f;
      } else {
        uint16_t h;
        std::memcpy(&h, &bytes[i * 2], 2);
        out[i] = dtype == kF16 ? from_half(h) : from_bf16(h);
      }
    }
    return out;
  }
};

// Random multiples of 1/8 in [-2, 2] over the whole storage, uploaded. Strides default to
// row-major; `offset` elements precede the view.
std::unique_ptr<Tensor> make(int32_t dtype, std::vector<int64_t> sizes, std::vector<int64_t> strides = {},
                             int64_t offset = 0, uint32_t seed = 1) {
  auto t = std::make_unique<Tensor>();
  t->dtype = dtype;
  t->sizes = sizes;
  if (strides.empty()) {
    strides.assign(sizes.size(), 1);
    for (size_t i = sizes.size(); i-- > 1;) strides[i - 1] = strides[i] * std::max<int64_t>(1, sizes[i]);
  }
  t->strides = strides;
  t->offset = offset;
  int64_t span = offset + 1;
  for (size_t i = 0; i < sizes.size(); ++i) span += (std::max<int64_t>(sizes[i], 1) - 1) * strides[i];
  std::mt19937 rng(seed);
  std::uniform_int_distribution<int> dist(-16, 16);
  t->storage.resize(size_t(span));
  for (double& v : t->storage) v = dist(rng) / 8.0;
  H base = nullptr;
  const int64_t flat = span;
  const int64_t one = 1;
  EXPECT_EQ(shim().empty_strided(1, &flat, &one, dtype, kCuda, 0, &base), 0) << shim().last_error();
  if (!base) return t;
  EXPECT_EQ(shim().data_ptr(base, &t->base), 0);
  EXPECT_EQ(shim().reinterpret(base, int64_t(sizes.size()), sizes.data(), strides.data(), offset, &t->handle), 0);
  shim().del(base);  // the view keeps the storage
  t->upload();
  return t;
}

// Whether `got` is `want` rounded to the dtype (float32: exactly, the inputs make it exact).
bool close(int32_t dtype, double got, double want) {
  if (std::isnan(got) || std::isnan(want)) return false;
  if (dtype == kF32) return got == want;
  if (want == 0) return got == 0;
  const int bits = dtype == kF16 ? 10 : 7;
  const double ulp = std::ldexp(1.0, std::ilogb(want) - bits);
  return std::fabs(got - want) <= ulp;
}

struct Case {
  int64_t batch, m, k, n;
};

// Checks out = beta * self + alpha * a @ b (self == nullptr: no term) element by element,
// and that the storage around out's view is untouched.
void expect_product(const Tensor& out, const std::vector<double>& before, const Tensor* self, const Tensor& a,
                    const Tensor& b, double beta, double alpha, const Case& c, const std::string& what) {
  const std::vector<double> got = out.download();
  std::vector<char> in_view(got.size(), 0);
  int bad = 0;
  const bool batched = out.sizes.size() == 3;
  for (int64_t bi = 0; bi < c.batch; ++bi)
    for (int64_t i = 0; i < c.m; ++i)
      for (int64_t j = 0; j < c.n; ++j) {
        double acc = 0;
        for (int64_t p = 0; p < c.k; ++p) acc += a.at(i, p, bi) * b.at(p, j, bi);
        double want = alpha * acc;
        if (self && beta != 0) {
          const size_t r = self->sizes.size();
          // broadcast: size-1 (or missing) dimensions index 0
          const int64_t sb = r == 3 && self->sizes[0] > 1 ? bi : 0;
          const int64_t si = r >= 2 && self->sizes[r - 2] > 1 ? i : 0;
          const int64_t sj = r >= 1 && self->sizes[r - 1] > 1 ? j : 0;
          double s = 0;
          if (r == 0)
            s = self->storage[size_t(self->offset)];
          else if (r == 1)
            s = self->at(0, sj);
          else
            s = self->at(si, sj, sb);
          want += beta * s;
        }
        const int64_t idx = out.offset + (batched ? bi * out.strides[0] + i * out.strides[1] + j * out.strides[2]
                                                  : i * out.strides[0] + j * out.strides[1]);
        in_view[size_t(idx)] = 1;
        if (!close(out.dtype, got[size_t(idx)], want) && bad++ < 5)
          ADD_FAILURE() << what << ": out[" << bi << "][" << i << "][" << j << "] = " << got[size_t(idx)]
                        << ", expected " << want;
      }
  for (size_t e = 0; e < got.size(); ++e)
    if (!in_view[e] && !(got[e] == before[e]) && bad++ < 5)
      ADD_FAILURE() << what << ": storage element " << e << " outside out's view changed";
  EXPECT_EQ(bad, 0) << what << ": " << bad << " wrong elements";
}

// ---- which path a GEMM took ----------------------------------------------------------------

Shim::Stats stats() {
  Shim::Stats st;
  shim().gemm_stats(&st);
  return st;
}

// The path a call took, from the counters' change across it.
struct PathCheck {
  Shim::Stats before = stats();
  // Expects exactly one GEMV call (elementwise: with element loads; kn: the kernel for a
  // row-major [K, N] mat2), and no cuBLASLt call.
  void expect_gemv(bool elementwise, const std::string& what, bool kn = false) const {
    const Shim::Stats now = stats();
    EXPECT_EQ(now.gemv - before.gemv, 1u) << what << ": not served by the GEMV kernel";
    EXPECT_EQ(now.gemv_kn - before.gemv_kn, kn ? 1u : 0u)
        << what << (kn ? ": not the row-major [K, N] kernel" : ": the row-major [K, N] kernel ran");
    EXPECT_EQ(now.gemv_elementwise - before.gemv_elementwise, elementwise ? 1u : 0u)
        << what << (elementwise ? ": expected element loads" : ": expected 16-byte loads");
    EXPECT_EQ(now.cublaslt, before.cublaslt) << what << ": cuBLASLt ran";
  }
  void expect_cublaslt(const std::string& what) const {
    const Shim::Stats now = stats();
    EXPECT_EQ(now.gemv, before.gemv) << what << ": the GEMV kernel ran";
    EXPECT_GE(now.cublaslt - before.cublaslt, 1u) << what << ": cuBLASLt did not run";
  }
};

// Sets one of the shim's process-wide switches for a scope and restores the previous value
// (the tests run one at a time).
class ShimSwitch {
 public:
  using Setter = int32_t (*)(int32_t);
  ShimSwitch(Setter Shim::*setter, int32_t value) : setter_(setter), previous_((shim().*setter)(value)) {}
  ~ShimSwitch() { (shim().*setter_)(previous_); }
  ShimSwitch(const ShimSwitch&) = delete;
  ShimSwitch& operator=(const ShimSwitch&) = delete;

 private:
  Setter Shim::*setter_;
  int32_t previous_;
};

// The GEMV path's mode: 0 off, 1 on, 2 on without the tensor-core variant.
struct GemvSwitch : ShimSwitch {
  explicit GemvSwitch(int32_t mode) : ShimSwitch(&Shim::use_gemv, mode) {}
};

// When cuBLASLt calls use the graph algorithm: 0 never, 1 under Wharf's allocator or
// capture, 2 always.
struct GraphAlgos : ShimSwitch {
  explicit GraphAlgos(int32_t mode) : ShimSwitch(&Shim::graph_algos, mode) {}
};

// GEMVs launched with programmatic dependent launch (1) or plainly (0).
struct PdlSwitch : ShimSwitch {
  explicit PdlSwitch(int32_t on) : ShimSwitch(&Shim::use_pdl, on) {}
};

// A weight [n, k] (rows ldw apart, `offset` elements in) seen as mat2 = weight.t(): [k, n]
// with strides (1, ldw), what Inductor passes for nn.Linear.
std::unique_ptr<Tensor> linear_weight_t(int32_t dtype, int64_t k, int64_t n, int64_t ldw, int64_t offset,
                                        uint32_t seed) {
  return make(dtype, {k, n}, {1, ldw}, offset, seed);
}

class AotiGemmGpu : public ::testing::Test {
 protected:
  void SetUp() override {
    int n = 0;
    if (cudaGetDeviceCount(&n) != cudaSuccess || n == 0) GTEST_SKIP() << "no CUDA device";
    ASSERT_NE(shim().lib, nullptr) << "libwharf_aoti_shim.so not loaded: " << shim().error;
    ASSERT_TRUE(shim().error.empty()) << shim().error;
    ASSERT_EQ(cudaSetDevice(0), cudaSuccess);
    ASSERT_EQ(cudaStreamCreateWithFlags(&stream_, cudaStreamNonBlocking), cudaSuccess);
    ASSERT_EQ(shim().guard(stream_, 0, &guard_), 0) << shim().last_error();
  }
  void TearDown() override {
    if (guard_) shim().unguard(guard_);
    if (stream_) {
      EXPECT_EQ(cudaStreamSynchronize(stream_), cudaSuccess);
      cudaStreamDestroy(stream_);
    }
  }
  void sync() { ASSERT_EQ(cudaStreamSynchronize(stream_), cudaSuccess); }

  cudaStream_t stream_ = nullptr;
  void* guard_ = nullptr;
};

const int32_t kDtypes[] = {kF32, kBF16, kF16};

// mat1 [m, k] as row-major, a transposed view, rows padded at an offset, and with no unit
// stride (copied to a contiguous buffer first).
std::vector<std::pair<std::vector<int64_t>, int64_t>> layouts(int64_t r, int64_t c) {
  return {{{c, 1}, 0}, {{1, r}, 0}, {{c + 3, 1}, 5}, {{2 * c, 2}, 1}};
}

TEST_F(AotiGemmGpu, MmMatchesTheReferenceForEveryDtypeLayoutAndOddSize) {
  const Case cases[] = {{1, 1, 1, 1},    {1, 1, 4097, 7}, {1, 7, 33, 4097},
                        {1, 4097, 5, 9}, {1, 64, 64, 64}, {1, 1, 2048, 256}};
  uint32_t seed = 1;
  for (int32_t dtype : kDtypes)
    for (const Case& c : cases)
      for (const auto& la : layouts(c.m, c.k))
        for (const auto& lb : layouts(c.k, c.n))
          for (int out_layout = 0; out_layout < 3; ++out_layout) {
            if (c.m * c.n > 40000 && out_layout == 2) continue;  // keep the big ones short
            auto a = make(dtype, {c.m, c.k}, la.first, la.second, seed++);
            auto b = make(dtype, {c.k, c.n}, lb.first, lb.second, seed++);
            std::vector<int64_t> os = out_layout == 0   ? std::vector<int64_t>{c.n, 1}
                                      : out_layout == 1 ? std::vector<int64_t>{1, c.m}
                                                        : std::vector<int64_t>{c.n + 4, 1};
            auto out = make(dtype, {c.m, c.n}, os, out_layout == 2 ? 2 : 0, seed++);
            const std::vector<double> before = out->storage;
            const std::string what =
                std::string("mm ") + dname(dtype) + " m" + std::to_string(c.m) + " k" + std::to_string(c.k) + " n" +
                std::to_string(c.n) + " a(" + std::to_string(la.first[0]) + "," + std::to_string(la.first[1]) + ") b(" +
                std::to_string(lb.first[0]) + "," + std::to_string(lb.first[1]) + ") out" + std::to_string(out_layout);
            ASSERT_EQ(shim().mm_out(out->handle, a->handle, b->handle), 0) << what << ": " << shim().last_error();
            sync();
            expect_product(*out, before, nullptr, *a, *b, 0, 1, c, what);
            if (HasFailure()) return;
          }
}

TEST_F(AotiGemmGpu, AddmmBroadcastsSelfWithBetaAndAlpha) {
  struct SelfKind {
    const char* name;
    std::vector<int64_t> sizes, strides;
    int64_t offset;
  };
  const int64_t m = 7, k = 33, n = 65;
  const SelfKind kinds[] = {
      {"bias [n]", {n}, {1}, 0},  // the epilogue when beta is 1
      {"bias [n] misaligned", {n}, {1}, 1},
      {"[m, n]", {m, n}, {n, 1}, 0},
      {"[m, n] column-major", {m, n}, {1, m}, 0},
      {"[m, 1]", {m, 1}, {1, 1}, 0},
      {"[1, n]", {1, n}, {n, 1}, 0},
      {"[m, n] expanded row", {m, n}, {0, 1}, 0},
      {"scalar", {}, {}, 3},
  };
  const std::pair<double, double> scales[] = {{1, 1}, {0.5, 2}, {-1, 0.25}};
  uint32_t seed = 100;
  for (bool gemv : {false, true}) {  // m 7 with an nn.Linear weight: cuBLASLt, then the GEMV
    GemvSwitch path(gemv ? 1 : 0);
    for (int32_t dtype : kDtypes)
      for (const SelfKind& sk : kinds)
        for (const auto& s : scales)
          for (bool col_out : {false, true}) {
            auto a = make(dtype, {m, k}, {}, 0, seed++);
            auto b = make(dtype, {k, n}, {1, k}, 0, seed++);  // nn.Linear's weight.t()
            auto self = make(dtype, sk.sizes, sk.strides, sk.offset, seed++);
            auto out = make(dtype, {m, n}, col_out ? std::vector<int64_t>{1, m} : std::vector<int64_t>{}, 0, seed++);
            const std::vector<double> before = out->storage;
            const std::string what = std::string("addmm ") + dname(dtype) + " self " + sk.name + " beta " +
                                     std::to_string(s.first) + " alpha " + std::to_string(s.second) +
                                     (col_out ? " column-major out" : "");
            ASSERT_EQ(shim().addmm_out(out->handle, self->handle, a->handle, b->handle, s.first, s.second), 0)
                << what << ": " << shim().last_error();
            sync();
            expect_product(*out, before, self.get(), *a, *b, s.first, s.second, Case{1, m, k, n},
                           what + (gemv ? " (GEMV)" : " (cuBLASLt)"));
            if (HasFailure()) return;
          }
  }
}

// On cuBLASLt, then on the [K, N] GEMV (5 rows against a row-major mat2).
TEST_F(AotiGemmGpu, AddmmBetaZeroIgnoresSelfEvenNan) {
  for (int32_t gemv : {0, 1})
    for (int32_t dtype : kDtypes) {
      GemvSwitch path(gemv);
      auto a = make(dtype, {5, 9}, {}, 0, 1);
      auto b = make(dtype, {9, 3}, {}, 0, 2);
      auto self = make(dtype, {3}, {}, 0, 3);
      for (double& v : self->storage) v = NAN;
      self->upload();
      auto out = make(dtype, {5, 3}, {}, 0, 4);
      const std::vector<double> before = out->storage;
      ASSERT_EQ(shim().addmm_out(out->handle, self->handle, a->handle, b->handle, 0.0, 1.0), 0) << shim().last_error();
      sync();
      expect_product(*out, before, nullptr, *a, *b, 0, 1, Case{1, 5, 9, 3},
                     std::string("beta 0 ") + dname(dtype) + (gemv ? " (GEMV)" : " (cuBLASLt)"));
    }
}

// A half result is rounded once: cuBLASLt's split-K partitions are summed in float32 (on H200
// bfloat16 k 10 gave 3.6875 for 3.65625, three partial sums each rounded to bfloat16, before
// the shim restricted the reduction schemes). k 2048 over a 6 x 4 output invites split-K.
// On cuBLASLt, then on the [K, N] GEMV (6 rows against a row-major mat2).
TEST_F(AotiGemmGpu, AddmmInPlaceWhenSelfIsOut) {
  for (int32_t gemv : {0, 1})
    for (int32_t dtype : kDtypes)
      for (int64_t k : {10, 2048}) {
        GemvSwitch path(gemv);
        auto a = make(dtype, {6, k}, {}, 0, 5);
        auto b = make(dtype, {k, 4}, {}, 0, 6);
        auto out = make(dtype, {6, 4}, {}, 0, 7);
        const std::vector<double> before = out->storage;
        // out is also self: the reference reads self's values from before the call.
        Tensor self_values;
        self_values.dtype = dtype;
        self_values.sizes = out->sizes;
        self_values.strides = out->strides;
        self_values.storage = before;
        ASSERT_EQ(shim().addmm_out(out->handle, out->handle, a->handle, b->handle, 0.5, 2.0), 0) << shim().last_error();
        sync();
        expect_product(
            *out, before, &self_values, *a, *b, 0.5, 2.0, Case{1, 6, k, 4},
            std::string("in place ") + dname(dtype) + " k " + std::to_string(k) + (gemv ? " (GEMV)" : " (cuBLASLt)"));
      }
}

TEST_F(AotiGemmGpu, BmmAndBaddbmmOverBatchesWithTransposedAndBroadcastOperands) {
  const int64_t B = 3, m = 5, k = 17, n = 9;
  uint32_t seed = 300;
  for (int32_t dtype : kDtypes) {
    struct L {
      const char* name;
      std::vector<int64_t> a, b, out;
    };
    const L ls[] = {
        {"contiguous", {m * k, k, 1}, {k * n, n, 1}, {m * n, n, 1}},
        {"transposed batch1", {m * k, 1, m}, {k * n, n, 1}, {m * n, n, 1}},
        {"broadcast batch2", {m * k, k, 1}, {0, n, 1}, {m * n, n, 1}},
        {"interleaved out [m, B, n]", {m * k, k, 1}, {k * n, 1, k}, {n, B * n, 1}},
        {"column-major out", {m * k, k, 1}, {k * n, n, 1}, {m * n, 1, m}},
    };
    for (const L& l : ls) {
      auto a = make(dtype, {B, m, k}, l.a, 0, seed++);
      auto b = make(dtype, {B, k, n}, l.b, 0, seed++);
      auto out = make(dtype, {B, m, n}, l.out, 0, seed++);
      std::vector<double> before = out->storage;
      std::string what = std::string("bmm ") + dname(dtype) + " " + l.name;
      ASSERT_EQ(shim().bmm_out(out->handle, a->handle, b->handle), 0) << what << ": " << shim().last_error();
      sync();
      expect_product(*out, before, nullptr, *a, *b, 0, 1, Case{B, m, k, n}, what);

      auto self = make(dtype, {n}, {}, 0, seed++);
      out->upload();
      ASSERT_EQ(shim().baddbmm_out(out->handle, self->handle, a->handle, b->handle, 0.5, 2.0), 0)
          << what << ": " << shim().last_error();
      sync();
      expect_product(*out, before, self.get(), *a, *b, 0.5, 2.0, Case{B, m, k, n}, "baddbmm, " + what);
      auto self3 = make(dtype, {B, m, n}, {}, 0, seed++);
      ASSERT_EQ(shim().baddbmm_out(out->handle, self3->handle, a->handle, b->handle, 1.0, 1.0), 0)
          << what << ": " << shim().last_error();
      sync();
      expect_product(*out, before, self3.get(), *a, *b, 1.0, 1.0, Case{B, m, k, n}, "baddbmm [B, m, n], " + what);
      if (HasFailure()) return;
    }
  }
}

TEST_F(AotiGemmGpu, EmptyKGivesBetaTimesSelfOrZerosAndEmptyOutputsDoNothing) {
  for (int32_t dtype : kDtypes) {
    auto a = make(dtype, {4, 0}, {1, 1}, 0, 1);
    auto b = make(dtype, {0, 6}, {6, 1}, 0, 2);
    auto out = make(dtype, {4, 6}, {}, 0, 3);
    std::vector<double> before = out->storage;
    ASSERT_EQ(shim().mm_out(out->handle, a->handle, b->handle), 0) << shim().last_error();
    sync();
    expect_product(*out, before, nullptr, *a, *b, 0, 1, Case{1, 4, 0, 6}, std::string("mm k=0 ") + dname(dtype));
    auto self = make(dtype, {6}, {}, 0, 4);
    ASSERT_EQ(shim().addmm_out(out->handle, self->handle, a->handle, b->handle, 0.5, 3.0), 0) << shim().last_error();
    sync();
    expect_product(*out, before, self.get(), *a, *b, 0.5, 3.0, Case{1, 4, 0, 6},
                   std::string("addmm k=0 ") + dname(dtype));
    // m = 0: nothing to write, success.
    auto a0 = make(dtype, {0, 5}, {5, 1}, 0, 5);
    auto b0 = make(dtype, {5, 6}, {}, 0, 6);
    auto out0 = make(dtype, {0, 6}, {6, 1}, 0, 7);
    EXPECT_EQ(shim().mm_out(out0->handle, a0->handle, b0->handle), 0) << shim().last_error();
  }
}

// float32 is computed in float32, not TF32 (PyTorch's default): 1 + 2^-12 is not a TF32
// value (10 mantissa bits: it reads as 1), while every partial sum j * (1 + 2^-12), j <= 64,
// is exact in float32 in any summation order (at most 19 significant bits). So float32 gives
// 64 + 2^-6 and TF32 64. (1 + 2^-20 would not do: partial sums from 16 on lose the 2^-20.)
TEST_F(AotiGemmGpu, Float32IsNotComputedInTf32) {
  const int64_t s = 64;
  auto a = make(kF32, {s, s}, {}, 0, 1);
  auto b = make(kF32, {s, s}, {}, 0, 2);
  for (double& v : a->storage) v = 1 + std::ldexp(1.0, -12);
  for (double& v : b->storage) v = 1;
  a->upload();
  b->upload();
  auto out = make(kF32, {s, s}, {}, 0, 3);
  ASSERT_EQ(shim().mm_out(out->handle, a->handle, b->handle), 0) << shim().last_error();
  sync();
  const std::vector<double> got = out->download();
  EXPECT_EQ(got[0], 64 + std::ldexp(1.0, -6));
  EXPECT_EQ(got[got.size() - 1], 64 + std::ldexp(1.0, -6));
}

// ---- the GEMV path (m <= 8, mat2 an nn.Linear weight's transposed view) -------------------

// Mode 1: float16/bfloat16 with 5 to 8 aligned rows on the tensor cores; mode 2: the same
// on the FMA kernel.
TEST_F(AotiGemmGpu, GemvMatchesTheReferenceForEveryDtypeRowCountAndOddSize) {
  for (int32_t mode : {1, 2}) {
    GemvSwitch on(mode);
    struct Shape {
      int64_t k, n, ldw;  // ldw: the weight's row stride (>= k)
    };
    // K 1 and 7: no whole vector for half types; 4097: rows misaligned (element loads); 4100
    // in rows of 4104: 16-byte loads and a tail of 4 (bfloat16/float16) or 0 (float32); n 1,
    // 7, 4097, 130 (not a multiple of the rows a block owns).
    // 256 x 7000: 438 blocks of 16 rows, more than an H100/H200 keeps resident with 8 warps
    // (3 per SM): the tensor-core kernel with 4 warps per block (mma_warps).
    const Shape shapes[] = {{1, 1, 1},      {7, 7, 7},         {4097, 7, 4097}, {4100, 9, 4104},
                            {64, 4097, 64}, {2048, 130, 2048}, {256, 7000, 256}};
    struct XLayout {
      const char* name;
      bool padded;          // rows a multiple of 8 elements apart, 8 more than k rounded up
      int64_t offset, sxk;  // elements before the view; x's element stride
    };
    const XLayout xls[] = {{"contiguous", false, 0, 1},
                           {"rows padded, 16-byte offset", true, 8, 1},
                           {"offset by one element", false, 1, 1},
                           {"strided elements", false, 0, 2}};
    uint32_t seed = 500;
    int combo = 0;
    for (int32_t dtype : kDtypes)
      for (const Shape& sh : shapes)
        for (int64_t m = mode == 1 ? 1 : 5; m <= 8; ++m)
          for (const XLayout& xl : xls) {
            if (mode == 2 && dtype == kF32) continue;  // the same kernel as mode 1
            const int64_t ldx = xl.padded ? (sh.k + 7) / 8 * 8 + 8 : sh.k * xl.sxk;
            auto x = make(dtype, {m, sh.k}, {ldx, xl.sxk}, xl.offset, seed++);
            auto w = linear_weight_t(dtype, sh.k, sh.n, sh.ldw, 0, seed++);
            const int out_layout = combo++ % 3;  // row-major, column-major, padded rows at an offset
            std::vector<int64_t> os = out_layout == 0   ? std::vector<int64_t>{sh.n, 1}
                                      : out_layout == 1 ? std::vector<int64_t>{1, m}
                                                        : std::vector<int64_t>{sh.n + 3, 1};
            auto out = make(dtype, {m, sh.n}, os, out_layout == 2 ? 5 : 0, seed++);
            const std::vector<double> before = out->storage;
            // 16-byte loads unless an operand's start or row stride is not a multiple of 16
            // bytes, or x's elements are strided (the storage itself is 256-byte aligned).
            const int64_t es = int64_t(esize(dtype));
            const bool vector = xl.offset * es % 16 == 0 && (xl.sxk == 1 || sh.k == 1) &&
                                (m == 1 || ldx * es % 16 == 0) && (sh.n == 1 || sh.ldw * es % 16 == 0);
            const std::string what = std::string("gemv mode ") + std::to_string(mode) + " " + dname(dtype) + " m" +
                                     std::to_string(m) + " k" + std::to_string(sh.k) + " n" + std::to_string(sh.n) +
                                     " ldw" + std::to_string(sh.ldw) + " x " + xl.name + " out" +
                                     std::to_string(out_layout);
            PathCheck path;
            ASSERT_EQ(shim().mm_out(out->handle, x->handle, w->handle), 0) << what << ": " << shim().last_error();
            sync();
            path.expect_gemv(!vector, what);
            expect_product(*out, before, nullptr, *x, *w, 0, 1, Case{1, m, sh.k, sh.n}, what);
            if (HasFailure()) return;
          }
  }
}

// A row-major mat2 [K, N] (GPT-2's Conv1D weight, strides (ldw, 1)) with at most 8 rows takes
// the [K, N] GEMV kernel: every dtype and row count, K and N odd, rows padded, misaligned.
TEST_F(AotiGemmGpu, GemvRowMajorWeightMatchesTheReference) {
  GemvSwitch on(1);
  struct Shape {
    int64_t k, n, ldw, offset;  // w[p, j] at offset + p * ldw + j
  };
  // n 1 (rows 8 apart), 7, 9, 130: the last columns past a whole vector; ldw 7, 9 and 99 (rows
  // not 16-byte multiples) or offset 1: element loads; ldw 104: rows padded; k up to 4097;
  // 768 x 2304: GPT-2's c_attn.
  const Shape shapes[] = {{5, 1, 8, 0},       {7, 7, 7, 0},     {33, 130, 130, 0}, {4097, 9, 9, 0},
                          {64, 100, 104, 0},  {64, 99, 99, 0},  {40, 64, 64, 1},   {768, 2304, 2304, 0},
                          {3, 4097, 4097, 0}, {1030, 24, 24, 0}};
  struct XLayout {
    const char* name;
    int64_t offset, sxk;
  };
  const XLayout xls[] = {{"contiguous", 0, 1}, {"offset by one element", 1, 1}, {"strided elements", 0, 3}};
  uint32_t seed = 900;
  int combo = 0;
  for (int32_t dtype : kDtypes)
    for (const Shape& sh : shapes)
      for (int64_t m = 1; m <= 8; ++m)
        for (const XLayout& xl : xls) {
          if (sh.k * sh.n > 200000 && (m % 3 != 1 || xl.sxk != 1)) continue;  // keep the big one short
          auto x = make(dtype, {m, sh.k}, {sh.k * xl.sxk, xl.sxk}, xl.offset, seed++);
          auto w = make(dtype, {sh.k, sh.n}, {sh.ldw, 1}, sh.offset, seed++);
          const int out_layout = combo++ % 3;
          std::vector<int64_t> os = out_layout == 0   ? std::vector<int64_t>{sh.n, 1}
                                    : out_layout == 1 ? std::vector<int64_t>{1, m}
                                                      : std::vector<int64_t>{sh.n + 3, 1};
          auto out = make(dtype, {m, sh.n}, os, out_layout == 2 ? 5 : 0, seed++);
          const std::vector<double> before = out->storage;
          const int64_t es = int64_t(esize(dtype));
          const bool vector = sh.offset * es % 16 == 0 && sh.ldw * es % 16 == 0;  // x does not matter
          const std::string what = std::string("gemv [K, N] ") + dname(dtype) + " m" + std::to_string(m) + " k" +
                                   std::to_string(sh.k) + " n" + std::to_string(sh.n) + " ldw" +
                                   std::to_string(sh.ldw) + " offset " + std::to_string(sh.offset) + " x " + xl.name +
                                   " out" + std::to_string(out_layout);
          PathCheck path;
          ASSERT_EQ(shim().mm_out(out->handle, x->handle, w->handle), 0) << what << ": " << shim().last_error();
          sync();
          path.expect_gemv(!vector, what, true);
          expect_product(*out, before, nullptr, *x, *w, 0, 1, Case{1, m, sh.k, sh.n}, what);
          if (HasFailure()) return;
        }
}

// Both weight layouts: nn.Linear's weight.t() and a row-major [K, N] (GPT-2's Conv1D).
TEST_F(AotiGemmGpu, GemvAddmmAppliesSelfBetaAndAlphaAndIgnoresSelfAtBetaZero) {
  GemvSwitch on(1);
  struct SelfKind {
    const char* name;
    std::vector<int64_t> sizes, strides;
    int64_t offset;
  };
  uint32_t seed = 700;
  for (bool kn : {false, true})
    for (int32_t dtype : kDtypes)
      for (int64_t m : {1, 3, 8}) {
        // 520 (Linear) and 72 columns (Conv1D): 16-byte loads for every dtype.
        const int64_t k = 520, n = kn ? 72 : 67;
        auto weight = [&](uint32_t sd) {
          return kn ? make(dtype, {k, n}, {}, 0, sd) : linear_weight_t(dtype, k, n, k, 0, sd);
        };
        const SelfKind kinds[] = {
            {"bias [n]", {n}, {1}, 0},     {"[m, n]", {m, n}, {n, 1}, 0},
            {"[m, 1]", {m, 1}, {1, 1}, 0}, {"[m, n] column-major", {m, n}, {1, m}, 0},
            {"scalar", {}, {}, 2},
        };
        for (const SelfKind& sk : kinds)
          for (const auto& s : {std::pair<double, double>{1, 1}, {0.5, 2}, {-1, 0.25}}) {
            auto x = make(dtype, {m, k}, {}, 0, seed++);
            auto w = weight(seed++);
            auto self = make(dtype, sk.sizes, sk.strides, sk.offset, seed++);
            auto out = make(dtype, {m, n}, {}, 0, seed++);
            const std::vector<double> before = out->storage;
            const std::string what = std::string(kn ? "gemv [K, N] addmm " : "gemv addmm ") + dname(dtype) + " m" +
                                     std::to_string(m) + " self " + sk.name + " beta " + std::to_string(s.first) +
                                     " alpha " + std::to_string(s.second);
            PathCheck path;
            ASSERT_EQ(shim().addmm_out(out->handle, self->handle, x->handle, w->handle, s.first, s.second), 0)
                << what << ": " << shim().last_error();
            sync();
            path.expect_gemv(false, what, kn);
            expect_product(*out, before, self.get(), *x, *w, s.first, s.second, Case{1, m, k, n}, what);
            if (HasFailure()) return;
          }
        // beta 0: self is not read (NaN stays out of the result).
        auto x = make(dtype, {m, k}, {}, 0, seed++);
        auto w = weight(seed++);
        auto nan_self = make(dtype, {n}, {}, 0, seed++);
        for (double& v : nan_self->storage) v = NAN;
        nan_self->upload();
        auto out = make(dtype, {m, n}, {}, 0, seed++);
        const std::vector<double> before = out->storage;
        PathCheck path;
        ASSERT_EQ(shim().addmm_out(out->handle, nan_self->handle, x->handle, w->handle, 0.0, 1.5), 0)
            << shim().last_error();
        sync();
        path.expect_gemv(false, "beta 0", kn);
        expect_product(*out, before, nullptr, *x, *w, 0, 1.5, Case{1, m, k, n},
                       std::string(kn ? "gemv [K, N] beta 0 " : "gemv beta 0 ") + dname(dtype));
        // self is out: in place.
        auto inplace = make(dtype, {m, n}, {}, 0, seed++);
        Tensor self_values;
        self_values.dtype = dtype;
        self_values.sizes = inplace->sizes;
        self_values.strides = inplace->strides;
        self_values.storage = inplace->storage;
        PathCheck path2;
        ASSERT_EQ(shim().addmm_out(inplace->handle, inplace->handle, x->handle, w->handle, 0.5, 2.0), 0)
            << shim().last_error();
        sync();
        path2.expect_gemv(false, "in place", kn);
        expect_product(*inplace, self_values.storage, &self_values, *x, *w, 0.5, 2.0, Case{1, m, k, n},
                       std::string(kn ? "gemv [K, N] in place " : "gemv in place ") + dname(dtype));
        if (HasFailure()) return;
      }
}

// float32 on the GEMV path is float32 too: 1 + 2^-12 summed 64 times is 64 + 2^-6.
TEST_F(AotiGemmGpu, GemvFloat32IsExactFloat32) {
  GemvSwitch on(1);
  for (int64_t m : {1, 8}) {
    auto x = make(kF32, {m, 64}, {}, 0, 1);
    auto w = linear_weight_t(kF32, 64, 16, 64, 0, 2);
    for (double& v : x->storage) v = 1 + std::ldexp(1.0, -12);
    for (double& v : w->storage) v = 1;
    x->upload();
    w->upload();
    auto out = make(kF32, {m, 16}, {}, 0, 3);
    PathCheck path;
    ASSERT_EQ(shim().mm_out(out->handle, x->handle, w->handle), 0) << shim().last_error();
    sync();
    path.expect_gemv(false, "float32");
    for (double v : out->download()) EXPECT_EQ(v, 64 + std::ldexp(1.0, -6)) << "m " << m;
  }
}

// What does not take the GEMV path: more than 8 rows, a mat2 with no unit stride, bmm, the
// path switched off (and a row-major mat2, a Conv1D weight, that does: the [K, N] kernel).
TEST_F(AotiGemmGpu, GemvIsNotTakenOutsideItsCases) {
  GemvSwitch on(1);
  for (int32_t dtype : kDtypes) {
    const int64_t k = 64, n = 24;
    {
      auto x = make(dtype, {9, k}, {}, 0, 1);
      auto w = linear_weight_t(dtype, k, n, k, 0, 2);
      auto out = make(dtype, {9, n}, {}, 0, 3);
      const std::vector<double> before = out->storage;
      PathCheck path;
      ASSERT_EQ(shim().mm_out(out->handle, x->handle, w->handle), 0) << shim().last_error();
      sync();
      path.expect_cublaslt("m 9");
      expect_product(*out, before, nullptr, *x, *w, 0, 1, Case{1, 9, k, n}, std::string("m 9 ") + dname(dtype));
    }
    {
      auto x = make(dtype, {4, k}, {}, 0, 4);
      auto w = make(dtype, {k, n}, {}, 0, 5);  // row-major [k, n]
      auto out = make(dtype, {4, n}, {}, 0, 6);
      const std::vector<double> before = out->storage;
      PathCheck path;
      ASSERT_EQ(shim().mm_out(out->handle, x->handle, w->handle), 0) << shim().last_error();
      sync();
      path.expect_gemv(false, "row-major mat2", true);
      expect_product(*out, before, nullptr, *x, *w, 0, 1, Case{1, 4, k, n},
                     std::string("row-major mat2 ") + dname(dtype));
    }
    {
      auto x = make(dtype, {4, k}, {}, 0, 13);
      auto w = make(dtype, {k, n}, {2 * n, 2}, 0, 14);  // no unit stride
      auto out = make(dtype, {4, n}, {}, 0, 15);
      const std::vector<double> before = out->storage;
      PathCheck path;
      ASSERT_EQ(shim().mm_out(out->handle, x->handle, w->handle), 0) << shim().last_error();
      sync();
      path.expect_cublaslt("mat2 without a unit stride");
      expect_product(*out, before, nullptr, *x, *w, 0, 1, Case{1, 4, k, n},
                     std::string("mat2 without a unit stride ") + dname(dtype));
    }
    {
      auto x = make(dtype, {9, k}, {}, 0, 16);
      auto w = make(dtype, {k, n}, {}, 0, 17);  // row-major [K, N], 9 rows
      auto out = make(dtype, {9, n}, {}, 0, 18);
      const std::vector<double> before = out->storage;
      PathCheck path;
      ASSERT_EQ(shim().mm_out(out->handle, x->handle, w->handle), 0) << shim().last_error();
      sync();
      path.expect_cublaslt("row-major mat2, m 9");
      expect_product(*out, before, nullptr, *x, *w, 0, 1, Case{1, 9, k, n},
                     std::string("row-major mat2 m 9 ") + dname(dtype));
    }
    {
      auto x = make(dtype, {1, 4, k}, {}, 0, 7);
      auto w = make(dtype, {1, k, n}, {k * n, 1, k}, 0, 8);
      auto out = make(dtype, {1, 4, n}, {}, 0, 9);
      const std::vector<double> before = out->storage;
      PathCheck path;
      ASSERT_EQ(shim().bmm_out(out->handle, x->handle, w->handle), 0) << shim().last_error();
      sync();
      path.expect_cublaslt("bmm");
      expect_product(*out, before, nullptr, *x, *w, 0, 1, Case{1, 4, k, n}, std::string("bmm ") + dname(dtype));
    }
    {
      GemvSwitch off(0);
      auto x = make(dtype, {2, k}, {}, 0, 10);
      auto w = linear_weight_t(dtype, k, n, k, 0, 11);
      auto out = make(dtype, {2, n}, {}, 0, 12);
      const std::vector<double> before = out->storage;
      PathCheck path;
      ASSERT_EQ(shim().mm_out(out->handle, x->handle, w->handle), 0) << shim().last_error();
      sync();
      path.expect_cublaslt("switched off");
      expect_product(*out, before, nullptr, *x, *w, 0, 1, Case{1, 2, k, n},
                     std::string("switched off ") + dname(dtype));
    }
    if (HasFailure()) return;
  }
}

// The driver functions graph re-pointing uses (src/graphs/model_graphs.cpp does the same).
struct GraphDriver {
  CUresult (*kernel_get)(CUgraphNode, CUDA_KERNEL_NODE_PARAMS*) = nullptr;
  CUresult (*kernel_set)(CUgraphExec, CUgraphNode, const CUDA_KERNEL_NODE_PARAMS*) = nullptr;
  CUresult (*func_param)(CUfunction, size_t, size_t*, size_t*) = nullptr;
  CUresult (*kernel_param)(CUkernel, size_t, size_t*, size_t*) = nullptr;
};
const GraphDriver& graph_driver() {
  static const GraphDriver d = [] {
    GraphDriver r;
    auto get = [](const char* name, unsigned version, void** fn) {
      cudaDriverEntryPointQueryResult q = cudaDriverEntryPointSymbolNotFound;
      if (cudaGetDriverEntryPointByVersion(name, fn, version, cudaEnableDefault, &q) != cudaSuccess ||
          q != cudaDriverEntryPointSuccess)
        *fn = nullptr;
    };
    get("cuGraphKernelNodeGetParams", 12000, reinterpret_cast<void**>(&r.kernel_get));
    get("cuGraphExecKernelNodeSetParams", 12000, reinterpret_cast<void**>(&r.kernel_set));
    get("cuFuncGetParamInfo", 12040, reinterpret_cast<void**>(&r.func_param));
    get("cuKernelGetParamInfo", 12040, reinterpret_cast<void**>(&r.kernel_param));
    return r;
  }();
  return d;
}

// A GEMV captured into a CUDA graph is one kernel node with a parameter array (not one
// buffer): graph re-pointing finds the weight's address at the offsets the driver reports
// and sets a new one with cuGraphExecKernelNodeSetParams; the replay then reads the new
// weight. Then the same through addmm with a bias.
TEST_F(AotiGemmGpu, GemvCapturedInAGraphIsRepointedToANewWeight) {
  GemvSwitch on(1);
  const GraphDriver& drv = graph_driver();
  ASSERT_TRUE(drv.kernel_get && drv.kernel_set && drv.func_param) << "the driver lacks the graph functions";
  for (int32_t pdl : {0, 1})       // plain launches, then programmatic dependent launch
    for (bool kn : {false, true})  // nn.Linear's weight.t(), then a row-major [K, N] (Conv1D)
      for (int32_t dtype : kDtypes)
        for (int64_t m : {2, 8})  // 8: the tensor-core kernel for float16/bfloat16 (Linear)
          for (bool with_bias : {false, true}) {
            PdlSwitch pdl_switch(pdl);
            const int64_t k = 4096, n = kn ? 304 : 300;
            auto x = make(dtype, {m, k}, {}, 0, 21);
            auto w1 = kn ? make(dtype, {k, n}, {}, 0, 22) : linear_weight_t(dtype, k, n, k, 0, 22);
            auto w2 = kn ? make(dtype, {k, n}, {}, 0, 23) : linear_weight_t(dtype, k, n, k, 0, 23);
            auto bias = make(dtype, {n}, {}, 0, 24);
            auto out = make(dtype, {m, n}, {}, 0, 25);
            const std::vector<double> before = out->storage;
            const std::string what = std::string(with_bias ? "addmm " : "mm ") + (kn ? "[K, N] " : "") + dname(dtype) +
                                     " m" + std::to_string(m) + (pdl ? " PDL" : "");
            PathCheck path;
            ASSERT_EQ(cudaStreamBeginCapture(stream_, cudaStreamCaptureModeThreadLocal), cudaSuccess);
            const int32_t rc = with_bias ? shim().addmm_out(out->handle, bias->handle, x->handle, w1->handle, 1.0, 1.0)
                                         : shim().mm_out(out->handle, x->handle, w1->handle);
            cudaGraph_t graph = nullptr;
            ASSERT_EQ(cudaStreamEndCapture(stream_, &graph), cudaSuccess);
            ASSERT_EQ(rc, 0) << what << ": " << shim().last_error();
            path.expect_gemv(false, what + " captured", kn);
            size_t count = 0;
            ASSERT_EQ(cudaGraphGetNodes(graph, nullptr, &count), cudaSuccess);
            ASSERT_EQ(count, 1u) << what << ": the GEMV is one kernel node";
            cudaGraphNode_t node = nullptr;
            ASSERT_EQ(cudaGraphGetNodes(graph, &node, &count), cudaSuccess);
            cudaGraphNodeType type;
            ASSERT_EQ(cudaGraphNodeGetType(node, &type), cudaSuccess);
            ASSERT_EQ(type, cudaGraphNodeTypeKernel);
            cudaGraphExec_t exec = nullptr;
            ASSERT_EQ(cudaGraphInstantiate(&exec, graph, 0), cudaSuccess);
            ASSERT_EQ(cudaGraphLaunch(exec, stream_), cudaSuccess);
            sync();
            expect_product(*out, before, with_bias ? bias.get() : nullptr, *x, *w1, 1, 1, Case{1, m, k, n},
                           what + " replay");

            CUDA_KERNEL_NODE_PARAMS p;
            std::memset(&p, 0, sizeof p);
            ASSERT_EQ(drv.kernel_get(reinterpret_cast<CUgraphNode>(node), &p), CUDA_SUCCESS);
            ASSERT_NE(p.kernelParams, nullptr) << what << ": parameters not passed as an array";
            ASSERT_EQ(p.extra, nullptr) << what << ": parameters passed as one buffer";
            // Every 8-byte word of every parameter of 8 bytes or more that holds w1's address gets w2's.
            std::vector<std::vector<unsigned char>> values;
            int replaced = 0;
            for (size_t i = 0;; ++i) {
              size_t off = 0, size = 0;
              CUresult r =
                  p.func ? drv.func_param(p.func, i, &off, &size)
                         : (drv.kernel_param ? drv.kernel_param(p.kern, i, &off, &size) : CUDA_ERROR_INVALID_VALUE);
              if (r == CUDA_ERROR_INVALID_VALUE) break;
              ASSERT_EQ(r, CUDA_SUCCESS);
              std::vector<unsigned char> v(size);
              std::memcpy(v.data(), p.kernelParams[i], size);
              for (size_t o = 0; size >= 8 && o + 8 <= size; o += 8) {
                void* word = nullptr;
                std::memcpy(&word, v.data() + o, 8);
                if (word == w1->base) {
                  std::memcpy(v.data() + o, &w2->base, 8);
                  ++replaced;
                }
              }
              values.push_back(std::move(v));
            }
            ASSERT_EQ(replaced, 1) << what << ": the weight's address appears " << replaced
                                   << " times in the parameters";
            std::vector<void*> args;
            for (auto& v : values) args.push_back(v.data());
            CUDA_KERNEL_NODE_PARAMS np = p;
            np.kernelParams = args.data();
            np.extra = nullptr;
            ASSERT_EQ(drv.kernel_set(reinterpret_cast<CUgraphExec>(exec), reinterpret_cast<CUgraphNode>(node), &np),
                      CUDA_SUCCESS);
            ASSERT_EQ(cudaGraphLaunch(exec, stream_), cudaSuccess);
            sync();
            expect_product(*out, before, with_bias ? bias.get() : nullptr, *x, *w2, 1, 1, Case{1, m, k, n},
                           what + " replay re-pointed to a new weight");
            cudaGraphExecDestroy(exec);
            cudaGraphDestroy(graph);
            if (HasFailure()) return;
          }
}

// The GEMV kernels reduce their float32 sums in a fixed order (no atomics): on values whose
// sums round, repeated calls, a call with programmatic dependent launch and a CUDA graph's
// replays of it give the same bits (graph tests compare replays with eager runs), for both
// weight layouts.
TEST_F(AotiGemmGpu, GemvResultsAreBitwiseRepeatableEagerAndInAGraph) {
  GemvSwitch on(1);
  std::mt19937 rng(5);
  std::uniform_real_distribution<double> mag(0.25, 1.0);  // normal in every dtype
  for (bool kn : {false, true})
    for (int32_t dtype : kDtypes)
      for (int64_t m : {1, 5, 8}) {
        const int64_t k = 3000, n = kn ? 2304 : 2048;
        auto x = make(dtype, {m, k}, {}, 0, 1);
        auto w = kn ? make(dtype, {k, n}, {}, 0, 2) : linear_weight_t(dtype, k, n, k, 0, 2);
        for (Tensor* t : {x.get(), w.get()}) {
          for (double& v : t->storage) v = (rng() & 1 ? -1 : 1) * mag(rng);
          t->upload();
        }
        auto out = make(dtype, {m, n}, {}, 0, 3);
        const std::string what = std::string(kn ? "[K, N] " : "Linear ") + dname(dtype) + " m" + std::to_string(m);
        ASSERT_EQ(shim().mm_out(out->handle, x->handle, w->handle), 0) << what << ": " << shim().last_error();
        sync();
        const std::vector<double> first = out->download();
        PathCheck path;
        ASSERT_EQ(shim().mm_out(out->handle, x->handle, w->handle), 0) << what << ": " << shim().last_error();
        sync();
        path.expect_gemv(false, what, kn);
        EXPECT_TRUE(out->download() == first) << what << ": a second call gave other bits";
        PdlSwitch pdl(1);  // the same kernels launched with programmatic dependent launch
        ASSERT_EQ(shim().mm_out(out->handle, x->handle, w->handle), 0) << what << ": " << shim().last_error();
        sync();
        EXPECT_TRUE(out->download() == first) << what << ": a call with PDL gave other bits";
        ASSERT_EQ(cudaStreamBeginCapture(stream_, cudaStreamCaptureModeThreadLocal), cudaSuccess);
        const int32_t rc = shim().mm_out(out->handle, x->handle, w->handle);
        cudaGraph_t graph = nullptr;
        ASSERT_EQ(cudaStreamEndCapture(stream_, &graph), cudaSuccess);
        ASSERT_EQ(rc, 0) << what << ": " << shim().last_error();
        cudaGraphExec_t exec = nullptr;
        ASSERT_EQ(cudaGraphInstantiate(&exec, graph, 0), cudaSuccess);
        for (int replay = 0; replay < 2; ++replay) {
          out->upload();  // overwrite the result with the initial values
          ASSERT_EQ(cudaGraphLaunch(exec, stream_), cudaSuccess);
          sync();
          EXPECT_TRUE(out->download() == first) << what << ": replay " << replay << " gave other bits";
        }
        cudaGraphExecDestroy(exec);
        cudaGraphDestroy(graph);
        if (HasFailure()) return;
      }
}

// With programmatic dependent launch a GEMV may start before the stream's previous kernel
// ends, and must wait for it before reading x. A chain mid = x @ W1, out = mid @ W2 (the second
// GEMV reads what the first writes; W1 a permutation, so mid is x's columns exactly, over a
// weight large enough that the first GEMV runs for microseconds) checks mid and out
// against the reference, eagerly and from a graph replay (mid and out reset to stale values
// first), for both weight layouts.
TEST_F(AotiGemmGpu, GemvWithProgrammaticDependentLaunchWaitsForItsInput) {
  GemvSwitch on(1);
  PdlSwitch pdl(1);
  for (bool kn : {false, true})
    for (int32_t dtype : kDtypes)
      for (int64_t m : {1, 8}) {
        const int64_t k = 8192, h = 2048, n = 520;
        auto perm = [&](int64_t j) { return (j * 7 + 3) % k; };  // injective on j < h (7 and k coprime)
        auto x = make(dtype, {m, k}, {}, 0, 31);
        auto w1 = kn ? make(dtype, {k, h}, {}, 0, 32) : linear_weight_t(dtype, k, h, k, 0, 32);
        for (double& v : w1->storage) v = 0;
        for (int64_t j = 0; j < h; ++j)
          w1->storage[size_t(w1->offset + perm(j) * w1->strides[0] + j * w1->strides[1])] = 1;
        w1->upload();
        auto w2 = kn ? make(dtype, {h, n}, {}, 0, 33) : linear_weight_t(dtype, h, n, h, 0, 33);
        auto mid = make(dtype, {m, h}, {}, 0, 34);  // random: stale values if read too early
        auto out = make(dtype, {m, n}, {}, 0, 35);
        Tensor want_mid;  // x's columns perm(j)
        want_mid.dtype = dtype;
        want_mid.sizes = mid->sizes;
        want_mid.strides = mid->strides;
        want_mid.storage.resize(mid->storage.size());
        for (int64_t i = 0; i < m; ++i)
          for (int64_t j = 0; j < h; ++j) want_mid.storage[size_t(i * h + j)] = x->at(i, perm(j));
        const std::vector<double> out_before = out->storage;
        const std::string what = std::string(kn ? "[K, N] " : "Linear ") + dname(dtype) + " m" + std::to_string(m);
        auto check = [&](const std::string& how) {
          EXPECT_TRUE(mid->download() == want_mid.storage) << what << " " << how << ": mid is not x's columns";
          expect_product(*out, out_before, nullptr, want_mid, *w2, 0, 1, Case{1, m, h, n}, what + " " + how);
        };
        auto chain = [&] {
          return shim().mm_out(mid->handle, x->handle, w1->handle) == 0 &&
                 shim().mm_out(out->handle, mid->handle, w2->handle) == 0;
        };
        ASSERT_TRUE(chain()) << what << ": " << shim().last_error();
        sync();
        check("eager");
        mid->upload();  // stale values again
        out->upload();
        ASSERT_EQ(cudaStreamBeginCapture(stream_, cudaStreamCaptureModeThreadLocal), cudaSuccess);
        const bool ok = chain();
        cudaGraph_t graph = nullptr;
        ASSERT_EQ(cudaStreamEndCapture(stream_, &graph), cudaSuccess);
        ASSERT_TRUE(ok) << what << ": " << shim().last_error();
        size_t count = 0;
        ASSERT_EQ(cudaGraphGetNodes(graph, nullptr, &count), cudaSuccess);
        EXPECT_EQ(count, 2u) << what << ": two kernel nodes expected";
        cudaGraphExec_t exec = nullptr;
        ASSERT_EQ(cudaGraphInstantiate(&exec, graph, 0), cudaSuccess);
        ASSERT_EQ(cudaGraphLaunch(exec, stream_), cudaSuccess);
        sync();
        check("graph replay");
        cudaGraphExecDestroy(exec);
        cudaGraphDestroy(graph);
        if (HasFailure()) return;
      }
}

// Reads a captured graph's kernel nodes: each must take a parameter array (what graph
// re-pointing reads). Returns the nodes' parameters and their layout readers via `kernels`.
struct KernelNode {
  cudaGraphNode_t node = nullptr;
  CUDA_KERNEL_NODE_PARAMS params;
};
void kernel_nodes(cudaGraph_t graph, const std::string& what, std::vector<KernelNode>* out) {
  const GraphDriver& drv = graph_driver();
  ASSERT_TRUE(drv.kernel_get) << "the driver lacks cuGraphKernelNodeGetParams";
  size_t count = 0;
  ASSERT_EQ(cudaGraphGetNodes(graph, nullptr, &count), cudaSuccess);
  std::vector<cudaGraphNode_t> nodes(count);
  ASSERT_EQ(cudaGraphGetNodes(graph, nodes.data(), &count), cudaSuccess);
  for (cudaGraphNode_t node : nodes) {
    cudaGraphNodeType type;
    ASSERT_EQ(cudaGraphNodeGetType(node, &type), cudaSuccess);
    if (type != cudaGraphNodeTypeKernel) continue;
    KernelNode k;
    k.node = node;
    std::memset(&k.params, 0, sizeof k.params);
    ASSERT_EQ(drv.kernel_get(reinterpret_cast<CUgraphNode>(node), &k.params), CUDA_SUCCESS);
    ASSERT_NE(k.params.kernelParams, nullptr) << what << ": a kernel node passes no parameter array";
    ASSERT_EQ(k.params.extra, nullptr) << what << ": a kernel node passes its parameters as one buffer";
    out->push_back(k);
  }
  ASSERT_FALSE(out->empty()) << what << ": no kernel node captured";
}

// Rewrites, in every kernel node of `exec`, each 8-byte parameter word inside [from, from +
// bytes) to the same offset from `to` (what src/graphs' patch plan does); returns how many.
int repoint(cudaGraphExec_t exec, const std::vector<KernelNode>& kernels, const void* from, uint64_t bytes,
            const void* to) {
  const GraphDriver& drv = graph_driver();
  int replaced = 0;
  for (const KernelNode& k : kernels) {
    std::vector<std::vector<unsigned char>> values;
    for (size_t i = 0;; ++i) {
      size_t off = 0, size = 0;
      const CUresult r = k.params.func ? drv.func_param(k.params.func, i, &off, &size)
                                       : (drv.kernel_param ? drv.kernel_param(k.params.kern, i, &off, &size)
                                                           : CUDA_ERROR_INVALID_VALUE);
      if (r == CUDA_ERROR_INVALID_VALUE) break;
      EXPECT_EQ(r, CUDA_SUCCESS);
      if (r != CUDA_SUCCESS) return -1;
      std::vector<unsigned char> v(size);
      std::memcpy(v.data(), k.params.kernelParams[i], size);
      for (size_t o = 0; size >= 8 && o + 8 <= size; o += 8) {
        uint64_t word = 0;
        std::memcpy(&word, v.data() + o, 8);
        const uint64_t base = reinterpret_cast<uint64_t>(from);
        if (word - base < bytes) {
          const uint64_t moved = reinterpret_cast<uint64_t>(to) + (word - base);
          std::memcpy(v.data() + o, &moved, 8);
          ++replaced;
        }
      }
      values.push_back(std::move(v));
    }
    std::vector<void*> args;
    for (auto& v : values) args.push_back(v.data());
    CUDA_KERNEL_NODE_PARAMS np = k.params;
    np.kernelParams = args.data();
    np.extra = nullptr;
    EXPECT_EQ(drv.kernel_set(reinterpret_cast<CUgraphExec>(exec), reinterpret_cast<CUgraphNode>(k.node), &np),
              CUDA_SUCCESS);
  }
  return replaced;
}

// A GEMM past the GEMV's rows (M 32: cuBLASLt) captured into a CUDA graph runs the shim's graph
// algorithm (cuBLASLt's bfloat16 kernels on Hopper that the heuristic picks first pass one
// parameter buffer, which made decode_batch at N = 32..128 run eagerly): every kernel node
// takes a parameter array, the replay gives the eager call's bits, and re-pointing the
// weight's words in the parameters (as src/graphs does after a swap) makes the replay read
// the new weight. Exact inputs: any algorithm gives the reference's bits.
TEST_F(AotiGemmGpu, CublasLtGemmCapturedInAGraphTakesAParameterArrayAndIsRepointed) {
  const GraphDriver& drv = graph_driver();
  ASSERT_TRUE(drv.kernel_get && drv.kernel_set && drv.func_param) << "the driver lacks the graph functions";
  GraphAlgos mode(1);
  uint32_t seed = 1300;
  for (int32_t dtype : kDtypes)
    for (int64_t m : {32, 16}) {
      const int64_t k = 2048, n = 2048;
      const std::string what = std::string("mm ") + dname(dtype) + " m" + std::to_string(m);
      auto x = make(dtype, {m, k}, {}, 0, seed++);
      auto w1 = linear_weight_t(dtype, k, n, k, 0, seed++);
      auto w2 = linear_weight_t(dtype, k, n, k, 0, seed++);
      auto out = make(dtype, {m, n}, {}, 0, seed++);
      const std::vector<double> before = out->storage;
      {
        PathCheck path;
        ASSERT_EQ(shim().mm_out(out->handle, x->handle, w1->handle), 0) << what << ": " << shim().last_error();
        sync();
        path.expect_cublaslt(what + " eager");
        EXPECT_EQ(stats().graph_algo, path.before.graph_algo) << what << ": an eager call ran the graph algorithm";
      }
      expect_product(*out, before, nullptr, *x, *w1, 0, 1, Case{1, m, k, n}, what + " eager");
      const std::vector<double> eager = out->download();

      const Shim::Stats s0 = stats();
      ASSERT_EQ(cudaStreamBeginCapture(stream_, cudaStreamCaptureModeThreadLocal), cudaSuccess);
      const int32_t rc = shim().mm_out(out->handle, x->handle, w1->handle);
      cudaGraph_t graph = nullptr;
      ASSERT_EQ(cudaStreamEndCapture(stream_, &graph), cudaSuccess) << what;
      ASSERT_EQ(rc, 0) << what << ": " << shim().last_error();
      std::unique_ptr<CUgraph_st, cudaError_t (*)(cudaGraph_t)> own_graph(graph, cudaGraphDestroy);
      const Shim::Stats s1 = stats();
      EXPECT_EQ(s1.graph_algo - s0.graph_algo, 1u) << what << ": the capture did not run the graph algorithm";
      EXPECT_EQ(s1.graph_fallback, s0.graph_fallback) << what << ": no graph algorithm qualified";
      std::vector<KernelNode> kernels;
      kernel_nodes(graph, what, &kernels);
      if (HasFailure()) return;
      cudaGraphExec_t exec = nullptr;
      ASSERT_EQ(cudaGraphInstantiate(&exec, graph, 0), cudaSuccess);
      std::unique_ptr<CUgraphExec_st, cudaError_t (*)(cudaGraphExec_t)> own_exec(exec, cudaGraphExecDestroy);
      out->upload();  // the initial values again
      ASSERT_EQ(cudaGraphLaunch(exec, stream_), cudaSuccess);
      sync();
      EXPECT_TRUE(out->download() == eager) << what << ": the replay's bits differ from the eager call's";

      const uint64_t w_bytes = uint64_t(n * k) * esize(dtype);
      EXPECT_GE(repoint(exec, kernels, w1->base, w_bytes, w2->base), 1) << what << ": the weight's address not found";
      out->upload();
      ASSERT_EQ(cudaGraphLaunch(exec, stream_), cudaSuccess);
      sync();
      expect_product(*out, before, nullptr, *x, *w2, 0, 1, Case{1, m, k, n}, what + " replay re-pointed");
      if (HasFailure()) return;
    }
}

// The graph algorithm is also chosen under Wharf's allocator (its warm-up before a capture
// installs one: the probe and the kernels' first launch happen outside the capture) and in
// mode 2 for every call, where eager calls and replays then agree bit for bit on inputs
// whose sums round (in mode 1 too where the eager algorithm qualifies); mode 0 never chooses
// it.
TEST_F(AotiGemmGpu, GraphAlgorithmUnderWharfsAllocatorAndInEveryCallInMode2) {
  struct Arena {
    char* base = nullptr;
    uint64_t used = 0, bytes = 64ull << 20;
    static int32_t alloc(uint64_t n, void** out, void* user) {
      auto* a = static_cast<Arena*>(user);
      if (a->used + n > a->bytes) return 1;
      *out = a->base + a->used;
      a->used += (n + 255) / 256 * 256;
      return 0;
    }
  } arena;
  ASSERT_EQ(cudaMalloc(reinterpret_cast<void**>(&arena.base), arena.bytes), cudaSuccess);
  std::unique_ptr<char, cudaError_t (*)(void*)> own_arena(arena.base, cudaFree);
  const int64_t m = 32, k = 2048, n = 2048;
  std::mt19937 rng(7);
  std::uniform_real_distribution<double> mag(0.25, 1.0);
  for (int32_t dtype : kDtypes) {
    const std::string what = std::string("mm ") + dname(dtype);
    auto x = make(dtype, {m, k}, {}, 0, 1401);
    auto w = linear_weight_t(dtype, k, n, k, 0, 1402);
    for (Tensor* t : {x.get(), w.get()}) {
      for (double& v : t->storage) v = (rng() & 1 ? -1 : 1) * mag(rng);  // sums that round
      t->upload();
    }
    auto out = make(dtype, {m, n}, {}, 0, 1403);
    {
      GraphAlgos mode(1);
      const Shim::Stats s0 = stats();
      wharf_aoti_allocator a{sizeof(wharf_aoti_allocator), &Arena::alloc, nullptr, &arena};
      shim().set_allocator(&a);
      const int32_t rc = shim().mm_out(out->handle, x->handle, w->handle);
      shim().set_allocator(nullptr);
      ASSERT_EQ(rc, 0) << what << ": " << shim().last_error();
      sync();
      EXPECT_EQ(stats().graph_algo - s0.graph_algo, 1u) << what << ": under the allocator";
    }
    {
      GraphAlgos mode(0);
      const Shim::Stats s0 = stats();
      ASSERT_EQ(cudaStreamBeginCapture(stream_, cudaStreamCaptureModeThreadLocal), cudaSuccess);
      const int32_t rc = shim().mm_out(out->handle, x->handle, w->handle);
      cudaGraph_t graph = nullptr;
      ASSERT_EQ(cudaStreamEndCapture(stream_, &graph), cudaSuccess);
      cudaGraphDestroy(graph);
      ASSERT_EQ(rc, 0) << what << ": " << shim().last_error();
      const Shim::Stats s1 = stats();
      EXPECT_EQ(s1.graph_algo, s0.graph_algo) << what << ": mode 0 ran the graph algorithm";
      EXPECT_EQ(s1.graph_fallback, s0.graph_fallback) << what << ": mode 0 looked for one";
      EXPECT_EQ(s1.cublaslt - s0.cublaslt, 1u) << what;
    }
    // Mode 1: where the eager call's algorithm can be re-pointed (the probe chooses candidate
    // 0: float32 on H100), a replay gives an eager call's bits, as before graph algorithms.
    auto replay_bits = [&](std::vector<double>* bits) {
      ASSERT_EQ(cudaStreamBeginCapture(stream_, cudaStreamCaptureModeThreadLocal), cudaSuccess);
      const int32_t rc = shim().mm_out(out->handle, x->handle, w->handle);
      cudaGraph_t graph = nullptr;
      ASSERT_EQ(cudaStreamEndCapture(stream_, &graph), cudaSuccess);
      ASSERT_EQ(rc, 0) << what << ": " << shim().last_error();
      std::unique_ptr<CUgraph_st, cudaError_t (*)(cudaGraph_t)> own_graph(graph, cudaGraphDestroy);
      cudaGraphExec_t exec = nullptr;
      ASSERT_EQ(cudaGraphInstantiate(&exec, graph, 0), cudaSuccess);
      std::unique_ptr<CUgraphExec_st, cudaError_t (*)(cudaGraphExec_t)> own_exec(exec, cudaGraphExecDestroy);
      out->upload();
      ASSERT_EQ(cudaGraphLaunch(exec, stream_), cudaSuccess);
      sync();
      *bits = out->download();
    };
    {
      GraphAlgos mode(1);
      auto rep = std::make_unique<wharf_aoti_gemm_probe_t>();
      rep->struct_size = sizeof(wharf_aoti_gemm_probe_t);
      ASSERT_EQ(shim().probe(out->handle, x->handle, w->handle, 0, rep.get()), 0)
          << what << ": " << shim().last_error();
      ASSERT_EQ(shim().mm_out(out->handle, x->handle, w->handle), 0) << what << ": " << shim().last_error();
      sync();
      const std::vector<double> eager = out->download();
      if (rep->chosen == 0) {
        std::vector<double> replayed;
        replay_bits(&replayed);
        if (HasFatalFailure()) return;
        EXPECT_TRUE(replayed == eager) << what << ": the eager algorithm qualifies, yet the replay's bits differ";
      }
      if (dtype == kF32) EXPECT_EQ(rep->chosen, 0) << what << ": float32's eager algorithm did not qualify";
    }
    GraphAlgos mode(2);
    const Shim::Stats s0 = stats();
    ASSERT_EQ(shim().mm_out(out->handle, x->handle, w->handle), 0) << what << ": " << shim().last_error();
    sync();
    EXPECT_EQ(stats().graph_algo - s0.graph_algo, 1u) << what << ": an eager call in mode 2";
    const std::vector<double> eager = out->download();
    std::vector<double> replayed;
    replay_bits(&replayed);
    if (HasFatalFailure()) return;
    EXPECT_TRUE(replayed == eager) << what << ": mode 2's eager call and replay differ";
    if (HasFailure()) return;
  }
}

// wharf_aoti_gemm_probe reports cuBLASLt's candidates and its choice (which takes a
// parameter array and is re-pointable), computes the product with it, also for rows the
// GEMV would serve, and refuses a report of the wrong size.
TEST_F(AotiGemmGpu, ProbeReportsCandidatesAndComputesTheProduct) {
  uint32_t seed = 1500;
  for (int32_t dtype : kDtypes)
    for (int64_t m : {32, 4}) {
      const int64_t k = 512, n = 768;
      const std::string what = std::string("probe ") + dname(dtype) + " m" + std::to_string(m);
      auto x = make(dtype, {m, k}, {}, 0, seed++);
      auto w = linear_weight_t(dtype, k, n, k, 0, seed++);
      auto out = make(dtype, {m, n}, {}, 0, seed++);
      const std::vector<double> before = out->storage;
      auto rep = std::make_unique<wharf_aoti_gemm_probe_t>();
      rep->struct_size = sizeof(wharf_aoti_gemm_probe_t);
      PathCheck path;
      ASSERT_EQ(shim().probe(out->handle, x->handle, w->handle, 0, rep.get()), 0)
          << what << ": " << shim().last_error();
      sync();
      path.expect_cublaslt(what);
      expect_product(*out, before, nullptr, *x, *w, 0, 1, Case{1, m, k, n}, what);
      EXPECT_EQ(rep->m, n) << what << ": a row-major out is computed as out^T";
      EXPECT_EQ(rep->n, m) << what;
      EXPECT_EQ(rep->k, k) << what;
      EXPECT_GE(rep->heuristic, 1) << what;
      EXPECT_GE(rep->count, rep->heuristic) << what;
      ASSERT_GE(rep->chosen, 0) << what << ": no candidate qualified (" << rep->count << " probed)";
      ASSERT_LT(rep->chosen, rep->count) << what;
      const wharf_aoti_gemm_probe_candidate_t& c = rep->candidates[rep->chosen];
      EXPECT_EQ(c.flags, WHARF_AOTI_PROBE_PARAMS | WHARF_AOTI_PROBE_REPOINTABLE) << what;
      EXPECT_GE(c.kernel_nodes, 1) << what;
      // The heuristic's list in its order; past it (none there qualified) the fastest of those
      // that qualify, each timed.
      const uint32_t both = WHARF_AOTI_PROBE_PARAMS | WHARF_AOTI_PROBE_REPOINTABLE;
      for (int i = 0; i < std::min(rep->chosen, rep->heuristic); ++i)
        EXPECT_NE(rep->candidates[i].flags, both)
            << what << ": candidate " << i << " of the heuristic's list qualifies ahead of the chosen " << rep->chosen;
      if (c.source == 1) {
        EXPECT_GT(c.time_us, 0.0) << what << ": the chosen candidate was not timed";
        for (int i = rep->heuristic; i < rep->count; ++i)
          if (rep->candidates[i].flags == both && rep->candidates[i].time_us > 0)
            EXPECT_LE(c.time_us, rep->candidates[i].time_us) << what << ": candidate " << i << " was faster";
      }
      if (HasFailure()) return;
    }
  auto x = make(kBF16, {32, 64}, {}, 0, 1);
  auto w = linear_weight_t(kBF16, 64, 64, 64, 0, 2);
  auto out = make(kBF16, {32, 64}, {}, 0, 3);
  wharf_aoti_gemm_probe_t small;
  std::memset(&small, 0, sizeof small);
  small.struct_size = 64;
  EXPECT_EQ(shim().probe(out->handle, x->handle, w->handle, 0, &small), 1);
  EXPECT_NE(std::string(shim().last_error()).find("struct_size is 64"), std::string::npos) << shim().last_error();
}

// Mode 3: float16/bfloat16 with 5 to 8 rows go to cuBLASLt above the measured weight size
// (K x N over 4096 x 4096), keep the tensor-core GEMV up to it; mode 1 keeps the GEMV for
// both, and float32 (the FMA kernel) is not affected.
TEST_F(AotiGemmGpu, GemvMode3SendsLargeHalfBatchesToCublasLt) {
  uint32_t seed = 1100;
  for (int32_t mode : {1, 3}) {
    GemvSwitch on(mode);
    for (int32_t dtype : kDtypes)
      for (int64_t n : {4096, 4104}) {  // K 4096: at the limit, then above it
        const int64_t m = 8, k = 4096;
        auto x = make(dtype, {m, k}, {}, 0, seed++);
        auto w = linear_weight_t(dtype, k, n, k, 0, seed++);
        auto out = make(dtype, {m, n}, {}, 0, seed++);
        const std::vector<double> before = out->storage;
        const std::string what =
            std::string("mode ") + std::to_string(mode) + " " + dname(dtype) + " n" + std::to_string(n);
        PathCheck path;
        ASSERT_EQ(shim().mm_out(out->handle, x->handle, w->handle), 0) << what << ": " << shim().last_error();
        sync();
        if (mode == 3 && dtype != kF32 && n > 4096)
          path.expect_cublaslt(what);
        else
          path.expect_gemv(false, what);
        expect_product(*out, before, nullptr, *x, *w, 0, 1, Case{1, m, k, n}, what);
        if (HasFailure()) return;
      }
  }
}

TEST_F(AotiGemmGpu, ConcurrentCallsOnSeveralStreamsFromSeveralThreads) {
  constexpr int kThreads = 8, kIterations = 12;
  std::vector<std::thread> threads;
  std::vector<std::string> errors(kThreads);
  for (int t = 0; t < kThreads; ++t)
    threads.emplace_back([t, &errors] {
      cudaSetDevice(0);
      cudaStream_t stream = nullptr;
      if (cudaStreamCreateWithFlags(&stream, cudaStreamNonBlocking) != cudaSuccess) {
        errors[size_t(t)] = "cudaStreamCreate failed";
        return;
      }
      void* guard = nullptr;
      shim().guard(stream, 0, &guard);  // this thread's current stream
      for (int it = 0; it < kIterations; ++it) {
        const int32_t dtype = kDtypes[(t + it) % 3];
        const int64_t m = 1 + (t * 7 + it) % 40, k = 64 + 32 * (it % 5), n = 96 + 8 * t;
        auto a = make(dtype, {m, k}, {}, 0, uint32_t(t * 1000 + it));
        auto b = make(dtype, {k, n}, {1, k}, 0, uint32_t(t * 1000 + it + 500));
        auto bias = make(dtype, {n}, {}, 0, uint32_t(t * 77 + it));
        auto out = make(dtype, {m, n}, {}, 0, 9);
        const std::vector<double> before = out->storage;
        if (shim().addmm_out(out->handle, bias->handle, a->handle, b->handle, 1.0, 1.0) != 0) {
          errors[size_t(t)] = shim().last_error();
          break;
        }
        if (cudaStreamSynchronize(stream) != cudaSuccess) {
          errors[size_t(t)] = "stream synchronize failed";
          break;
        }
        expect_product(*out, before, bias.get(), *a, *b, 1, 1, Case{1, m, k, n},
                       "thread " + std::to_string(t) + " iteration " + std::to_string(it));
      }
      shim().unguard(guard);
      cudaStreamDestroy(stream);
    });
  for (auto& th : threads) th.join();
  for (int t = 0; t < kThreads; ++t) EXPECT_EQ(errors[size_t(t)], "") << "thread " << t;
}

TEST_F(AotiGemmGpu, BadArgumentsFailWithAReasonAndLeaveOutUnchanged) {
  auto a = make(kBF16, {4, 8}, {}, 0, 1);
  auto b = make(kBF16, {8, 3}, {}, 0, 2);
  auto b_wrong_k = make(kBF16, {7, 3}, {}, 0, 3);
  auto b_f32 = make(kF32, {8, 3}, {}, 0, 4);
  auto out = make(kBF16, {4, 3}, {}, 0, 5);
  auto out_wrong = make(kBF16, {4, 5}, {}, 0, 6);
  auto bias_wrong = make(kBF16, {5}, {}, 0, 7);
  auto a3 = make(kBF16, {2, 4, 8}, {}, 0, 8);
  auto out_overlap = make(kBF16, {4, 3}, {0, 1}, 0, 9);  // every row is one row of memory
  const std::vector<double> before = out->storage;
  auto expect_refused = [](int32_t rc, const char* fragment) {
    EXPECT_EQ(rc, 1) << fragment;
    const std::string msg = shim().last_error();
    EXPECT_NE(msg.find("aoti_torch_cuda_"), std::string::npos) << msg;
    EXPECT_NE(msg.find(fragment), std::string::npos) << msg;
  };
  expect_refused(shim().mm_out(out->handle, a->handle, b_wrong_k->handle), "do not multiply");
  expect_refused(shim().mm_out(out_wrong->handle, a->handle, b->handle), "out is [4, 5]");
  expect_refused(shim().mm_out(out->handle, a->handle, b_f32->handle), "float32 but out is bfloat16");
  expect_refused(shim().addmm_out(out->handle, bias_wrong->handle, a->handle, b->handle, 1, 1), "does not broadcast");
  expect_refused(shim().mm_out(out->handle, a3->handle, b->handle), "has 3 dimensions, 2 expected");
  expect_refused(shim().mm_out(nullptr, a->handle, b->handle), "out is NULL");
  expect_refused(shim().bmm_out(out->handle, a->handle, b->handle), "has 2 dimensions, 3 expected");
  expect_refused(shim().mm_out(out_overlap->handle, a->handle, b->handle), "share memory");

  // Unsupported dtypes (float64, int32) and a host tensor.
  for (int32_t dtype : {kF64, kI32}) {
    H t = nullptr;
    const int64_t sz[2] = {2, 2};
    ASSERT_EQ(shim().empty_strided(2, sz, nullptr, dtype, kCuda, 0, &t), 0);
    EXPECT_EQ(shim().mm_out(t, t, t), 1);
    EXPECT_NE(std::string(shim().last_error()).find("float32, float16 and bfloat16 are supported"), std::string::npos)
        << shim().last_error();
    shim().del(t);
  }
  std::vector<float> host(4);
  H ht = nullptr;
  const int64_t sz[2] = {2, 2};
  ASSERT_EQ(shim().from_blob(host.data(), 2, sz, nullptr, 0, kF32, kCpu, 0, &ht), 0);
  EXPECT_EQ(shim().mm_out(ht, ht, ht), 1);
  EXPECT_NE(std::string(shim().last_error()).find("not a CUDA tensor"), std::string::npos) << shim().last_error();
  shim().del(ht);

  sync();
  EXPECT_EQ(out->download(), before) << "a refused call wrote out";
}

}  // namespace

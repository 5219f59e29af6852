// SPDX-License-Identifier: Apache-2.0
// The shim library's aten GEMM fallbacks (aoti_torch_cuda_mm_out, _addmm_out, _bmm_out,
// _baddbmm_out; src/models/aoti/gemm.cpp), called through PyTorch 2.11's C signatures on
// tensors made with the shim's own tensor functions, as a compiled model calls them.
// The inputs are multiples of 1/8 in [-2, 2]: every product and partial sum is exact in
// float32, so the reference (computed here in double) is exact, a float32 result must equal
// it, and a float16/bfloat16 result must be it rounded (within one unit in the last place).
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
  std::string error;
};

// $WHARF_AOTI_SHIM, else beside the test binary (the GPU bundle), else the build folder.
const Shim& shim() {
  static Shim s = [] {
    Shim r;
    std::vector<std::string> paths;
    if (const char* env = std::getenv("WHARF_AOTI_SHIM"))
      if (*env) paths.push_back(env);
    paths.push_back(wharf_test::binary_dir() + "/libwharf_aoti_shim.so");
    paths.push_back(wharf_test::binary_dir() + "/../libwharf_aoti_shim.so");
    for (const std::string& p : paths) {
      r.lib = dlopen(p.c_str(), RTLD_NOW | RTLD_LOCAL);
      if (r.lib) break;
      const char* e = dlerror();
      r.error += p + ": " + (e ? e : "?") + "; ";
    }
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
          expect_product(*out, before, self.get(), *a, *b, s.first, s.second, Case{1, m, k, n}, what);
          if (HasFailure()) return;
        }
}

TEST_F(AotiGemmGpu, AddmmBetaZeroIgnoresSelfEvenNan) {
  for (int32_t dtype : kDtypes) {
    auto a = make(dtype, {5, 9}, {}, 0, 1);
    auto b = make(dtype, {9, 3}, {}, 0, 2);
    auto self = make(dtype, {3}, {}, 0, 3);
    for (double& v : self->storage) v = NAN;
    self->upload();
    auto out = make(dtype, {5, 3}, {}, 0, 4);
    const std::vector<double> before = out->storage;
    ASSERT_EQ(shim().addmm_out(out->handle, self->handle, a->handle, b->handle, 0.0, 1.0), 0) << shim().last_error();
    sync();
    expect_product(*out, before, nullptr, *a, *b, 0, 1, Case{1, 5, 9, 3}, std::string("beta 0 ") + dname(dtype));
  }
}

// A half result is rounded once: cuBLASLt's split-K partitions are summed in float32 (on H200
// bfloat16 k 10 gave 3.6875 for 3.65625, three partial sums each rounded to bfloat16, before
// the shim restricted the reduction schemes). k 2048 over a 6 x 4 output invites split-K.
TEST_F(AotiGemmGpu, AddmmInPlaceWhenSelfIsOut) {
  for (int32_t dtype : kDtypes)
    for (int64_t k : {10, 2048}) {
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
      expect_product(*out, before, &self_values, *a, *b, 0.5, 2.0, Case{1, 6, k, 4},
                     std::string("in place ") + dname(dtype) + " k " + std::to_string(k));
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

// SPDX-License-Identifier: Apache-2.0
// AOTInductor models executed by Wharf on the GPU: the tiny decoder compiled without libtorch
// (tests/data/models/tiny_decoder, docs/aoti-compile.md) against PyTorch's own outputs for
// the same model, then a hot weight update in the middle of a conversation.
//
// The model files are found in $WHARF_MODEL_DIR, else in models/tiny_decoder of the test
// data (tests/common/test_paths.h: $WHARF_TEST_DATA, which the GPU bundle sets, or the source tree). Every test skips
// with a reason when no GPU is visible or the compiled model cannot be loaded on this machine's C library (it was built
// on the GPU machine).
#include <gtest/gtest.h>

#include <cuda_runtime_api.h>

#include <algorithm>
#include <cmath>
#include <cstdlib>
#include <cstring>
#include <fstream>
#include <memory>
#include <string>
#include <sys/stat.h>
#include <thread>
#include <unistd.h>
#include <vector>

#include "common/test_paths.h"
#include "constants/constant_map.h"
#include "constants/weight_store.h"
#include "device/runtime.h"
#include "io/zip_archive.h"
#include "models/model.h"
#include "runs/run.h"
#include "sessions/session.h"

namespace wharf {
namespace {

bool exists(const std::string& p) {
  struct stat st;
  return ::stat(p.c_str(), &st) == 0;
}

std::string model_dir() {
  if (const char* e = std::getenv("WHARF_MODEL_DIR")) return e;
  return wharf_test::test_data("models/tiny_decoder");
}

constexpr int kVocab = 256, kLayers = 2, kHeads = 4, kMaxSeq = 64, kHeadDim = 16;

// Device memory for the test's inputs.
struct DeviceBuffer {
  void* p = nullptr;
  explicit DeviceBuffer(size_t bytes) { EXPECT_EQ(cudaMalloc(&p, bytes), cudaSuccess); }
  ~DeviceBuffer() { cudaFree(p); }
};

class ModelGpu : public ::testing::Test {
 protected:
  void SetUp() override {
    int n = 0;
    if (cudaGetDeviceCount(&n) != cudaSuccess || n == 0) GTEST_SKIP() << "no CUDA device";
    dir_ = model_dir();
    if (!exists(dir_ + "/tiny_decoder.so")) GTEST_SKIP() << "no compiled model at " << dir_;
    RuntimeOptions ro;
    ro.backend = 1;  // CUDA
    ASSERT_TRUE(Runtime::create(ro, &rt_).ok());
    Status st = ConstantMap::load_safetensors(dir_ + "/tiny_decoder.safetensors", &weights_);
    ASSERT_TRUE(st.ok()) << st.message();
    // The KV caches start as zeros (the model's buffers; PyTorch's reference starts so too).
    for (int l = 0; l < kLayers; ++l)
      for (const char* kv : {"k_cache", "v_cache"}) {
        zeros_.emplace_back(size_t(kHeads) * kMaxSeq * kHeadDim, 0.0f);
        TensorMeta m;
        m.dtype = DType::kF32;
        m.shape = {1, kHeads, kMaxSeq, kHeadDim};
        ASSERT_TRUE(weights_->set("layers." + std::to_string(l) + "." + kv, m, zeros_.back().data()).ok());
      }
    std::unique_ptr<ConstantMap> ref;
    st = ConstantMap::load_safetensors(dir_ + "/reference.safetensors", &ref);
    ASSERT_TRUE(st.ok()) << st.message();
    auto copy = [&](const char* name, auto* out) {
      const MapEntry* e = ref->find(name);
      ASSERT_NE(e, nullptr) << name;
      using T = typename std::remove_reference_t<decltype(*out)>::value_type;
      out->resize(e->meta.nbytes() / sizeof(T));
      std::memcpy(out->data(), e->data, e->meta.nbytes());
    };
    copy("prompt", &prompt_);
    copy("tokens", &tokens_);
    copy("prefill_logits", &prefill_logits_);
    copy("decode_logits", &decode_logits_);
  }

  Status load(std::shared_ptr<Model>* out) {
    ModelOptions mo;
    if (const char* shim = std::getenv("WHARF_AOTI_SHIM")) mo.shim_path = shim;
    Status st = Model::load(rt_, dir_ + "/tiny_decoder.so", *weights_, mo, out);
    return st;
  }

  // One step: tokens at positions [pos, pos + n) -> logits [1, n, vocab] on the host.
  Status step(Model& m, wharf::Run& run, const std::vector<int64_t>& toks, int64_t pos, std::vector<float>* logits) {
    const size_t n = toks.size();
    DeviceBuffer dt(n * 8), dp(n * 8);
    std::vector<int64_t> positions(n);
    for (size_t i = 0; i < n; ++i) positions[i] = pos + int64_t(i);
    cudaStream_t s = static_cast<cudaStream_t>(run.stream().native_handle());
    cudaMemcpyAsync(dt.p, toks.data(), n * 8, cudaMemcpyHostToDevice, s);
    cudaMemcpyAsync(dp.p, positions.data(), n * 8, cudaMemcpyHostToDevice, s);
    ModelTensor t, p;
    t.data = dt.p;
    t.meta.dtype = DType::kI64;
    t.meta.shape = {1, int64_t(n)};
    t.meta.device_type = DeviceType::kCuda;
    p.data = dp.p;
    p.meta.dtype = DType::kI64;
    p.meta.shape = {int64_t(n)};
    p.meta.device_type = DeviceType::kCuda;
    std::vector<ModelTensor> outs;
    WHARF_RETURN_IF_ERROR(m.run(run, {t, p}, &outs));
    if (outs.size() != 1) return Internal("expected one output, got " + std::to_string(outs.size()));
    if (outs[0].meta.shape != std::vector<int64_t>{1, int64_t(n), kVocab})
      return Internal("logits shape " + shape_string(outs[0].meta.shape));
    logits->resize(n * kVocab);
    cudaMemcpyAsync(logits->data(), outs[0].data, logits->size() * 4, cudaMemcpyDeviceToHost, s);
    if (cudaStreamSynchronize(s) != cudaSuccess) return DeviceError("step");
    return Status::Ok();
  }

  static int argmax(const float* v) {
    int best = 0;
    for (int i = 1; i < kVocab; ++i)
      if (v[i] > v[best]) best = i;
    return best;
  }

  std::string dir_;
  std::shared_ptr<Runtime> rt_;
  std::unique_ptr<ConstantMap> weights_;
  std::vector<std::vector<float>> zeros_;
  std::vector<int64_t> prompt_, tokens_;
  std::vector<float> prefill_logits_, decode_logits_;
};

#define SKIP_IF_UNLOADABLE(st)                                                                              \
  do {                                                                                                      \
    if (!(st).ok() && (st).message().find("GLIBC") != std::string::npos)                                    \
      GTEST_SKIP() << "the compiled model needs a newer C library than this machine's: " << (st).message(); \
  } while (0)

TEST_F(ModelGpu, PrefillAndDecodeMatchPyTorch) {
  std::shared_ptr<Model> m;
  Status st = load(&m);
  SKIP_IF_UNLOADABLE(st);
  ASSERT_TRUE(st.ok()) << st.message();
  EXPECT_EQ(m->num_inputs(), 2u);
  EXPECT_EQ(m->num_outputs(), 1u);
  EXPECT_EQ(m->container()->decls().size(), 21u);  // parameters; folded constants are the model's
  EXPECT_EQ(m->container()->states().size(), 4u);  // the KV caches: session state
  std::shared_ptr<Session> session;
  ASSERT_TRUE(Session::create(rt_, {m->container()}, SessionOptions{}, &session).ok());

  std::unique_ptr<wharf::Run> run;
  ASSERT_TRUE(Run::begin(m->container(), session, nullptr, &run).ok());
  std::vector<float> logits;
  st = step(*m, *run, prompt_, 0, &logits);
  ASSERT_TRUE(st.ok()) << st.message();
  double max_err = 0;
  for (size_t i = 0; i < logits.size(); ++i)
    max_err = std::max(max_err, double(std::fabs(logits[i] - prefill_logits_[i])));
  EXPECT_LT(max_err, 2e-3) << "prefill logits differ from PyTorch's";
  int next = argmax(&logits[(prompt_.size() - 1) * kVocab]);
  EXPECT_EQ(next, tokens_[0]);
  ASSERT_TRUE(run->end().ok());

  // Greedy decoding, one run per step, the session carrying the KV caches.
  int64_t pos = int64_t(prompt_.size());
  for (size_t k = 1; k < tokens_.size(); ++k) {
    ASSERT_TRUE(Run::begin(m->container(), session, nullptr, &run).ok());
    st = step(*m, *run, {int64_t(next)}, pos++, &logits);
    ASSERT_TRUE(st.ok()) << st.message();
    double err = 0;
    for (int i = 0; i < kVocab; ++i)
      err = std::max(err, double(std::fabs(logits[i] - decode_logits_[(k - 1) * kVocab + i])));
    EXPECT_LT(err, 2e-3) << "decode step " << k;
    next = argmax(logits.data());
    EXPECT_EQ(next, tokens_[k]) << "decode step " << k;
    ASSERT_TRUE(run->end().ok());
  }
}

// Mid-conversation: fork the conversation, begin a run on one branch, update lm_head from
// pageable CPU memory (x2) and swap. The run begun before the swap finishes on the old
// weights (PyTorch's logits); the other branch, run after the swap, carries the same KV
// state and gets exactly twice those logits (lm_head is linear; doubling is exact in fp32).
TEST_F(ModelGpu, HotUpdateMidConversationKeepsTheStateAndOldRuns) {
  std::shared_ptr<Model> m;
  Status st = load(&m);
  SKIP_IF_UNLOADABLE(st);
  ASSERT_TRUE(st.ok()) << st.message();
  std::shared_ptr<Session> a;
  ASSERT_TRUE(Session::create(rt_, {m->container()}, SessionOptions{}, &a).ok());
  std::unique_ptr<wharf::Run> run;
  ASSERT_TRUE(Run::begin(m->container(), a, nullptr, &run).ok());
  std::vector<float> logits;
  ASSERT_TRUE(step(*m, *run, prompt_, 0, &logits).ok());
  ASSERT_TRUE(run->end().ok());
  std::shared_ptr<Session> b;
  ASSERT_TRUE(a->fork(&b).ok());
  const uint64_t gen_before = m->container()->generation();

  std::unique_ptr<wharf::Run> old_run;
  ASSERT_TRUE(Run::begin(m->container(), a, nullptr, &old_run).ok());
  const MapEntry* head = weights_->find("lm_head.weight");
  ASSERT_NE(head, nullptr);
  std::vector<float> doubled(head->meta.nbytes() / 4);
  std::memcpy(doubled.data(), head->data, head->meta.nbytes());
  for (float& x : doubled) x *= 2;
  ConstantMap update;
  ASSERT_TRUE(update.set("lm_head.weight", head->meta, doubled.data()).ok());
  st = m->container()->update(update, UpdateOptions{});
  ASSERT_TRUE(st.ok()) << st.message();
  ASSERT_TRUE(m->container()->swap().ok());
  EXPECT_GT(m->container()->generation(), gen_before);

  std::vector<float> old_logits, new_logits;
  st = step(*m, *old_run, {tokens_[0]}, int64_t(prompt_.size()), &old_logits);
  ASSERT_TRUE(st.ok()) << st.message();
  ASSERT_TRUE(old_run->end().ok());
  double err = 0;
  for (int i = 0; i < kVocab; ++i) err = std::max(err, double(std::fabs(old_logits[i] - decode_logits_[i])));
  EXPECT_LT(err, 2e-3) << "the run begun before the swap did not finish on the old weights";

  std::unique_ptr<wharf::Run> new_run;
  ASSERT_TRUE(Run::begin(m->container(), b, nullptr, &new_run).ok());
  st = step(*m, *new_run, {tokens_[0]}, int64_t(prompt_.size()), &new_logits);
  ASSERT_TRUE(st.ok()) << st.message();
  ASSERT_TRUE(new_run->end().ok());
  for (int i = 0; i < kVocab; ++i) ASSERT_EQ(new_logits[i], 2 * old_logits[i]) << "logit " << i;
}

TEST_F(ModelGpu, ErrorsNameWhatIsWrongAndChangeNothing) {
  // A weight missing: NOT_FOUND naming it.
  std::unique_ptr<ConstantMap> partial(new ConstantMap());
  for (size_t i = 0; i < weights_->size(); ++i)
    if (weights_->entry(i).fqn != "norm.weight")
      ASSERT_TRUE(partial->set(weights_->entry(i).fqn, weights_->entry(i).meta, weights_->entry(i).data).ok());
  ModelOptions mo;
  if (const char* shim = std::getenv("WHARF_AOTI_SHIM")) mo.shim_path = shim;
  std::shared_ptr<Model> m;
  Status st = Model::load(rt_, dir_ + "/tiny_decoder.so", *partial, mo, &m);
  SKIP_IF_UNLOADABLE(st);
  EXPECT_EQ(st.code(), Code::kNotFound) << st.message();
  EXPECT_NE(st.message().find("norm.weight"), std::string::npos) << st.message();
  // A wrong shape: INVALID_ARGUMENT with both sizes.
  std::vector<float> small(8);
  TensorMeta sm;
  sm.dtype = DType::kF32;
  sm.shape = {8};
  ASSERT_TRUE(partial->set("norm.weight", sm, small.data()).ok());
  st = Model::load(rt_, dir_ + "/tiny_decoder.so", *partial, mo, &m);
  EXPECT_EQ(st.code(), Code::kInvalidArgument) << st.message();
  EXPECT_NE(st.message().find("norm.weight"), std::string::npos) << st.message();
  // A library that is not a model.
  st = Model::load(rt_, "libwharf_aoti_shim.so", *weights_, mo, &m);
  EXPECT_NE(st.code(), Code::kOk);
  // Wrong input count.
  ASSERT_TRUE(load(&m).ok());
  std::shared_ptr<Session> s;
  ASSERT_TRUE(Session::create(rt_, {m->container()}, SessionOptions{}, &s).ok());
  std::unique_ptr<wharf::Run> run;
  ASSERT_TRUE(Run::begin(m->container(), s, nullptr, &run).ok());
  std::vector<ModelTensor> outs;
  st = m->run(*run, {}, &outs);
  EXPECT_EQ(st.code(), Code::kInvalidArgument) << st.message();
  ASSERT_TRUE(run->end().ok());
}

}  // namespace
}  // namespace wharf

namespace wharf {
namespace {

// Two conversations decode at the same time on two streams from two threads: each run gets
// its own model instance bound to its own session, and both follow PyTorch's tokens.
TEST_F(ModelGpu, TwoConversationsOnTwoStreamsAtOnce) {
  std::shared_ptr<Model> m;
  Status st = load(&m);
  SKIP_IF_UNLOADABLE(st);
  ASSERT_TRUE(st.ok()) << st.message();
  auto conversation = [&](std::vector<int>* got) {
    cudaStream_t s = nullptr;
    ASSERT_EQ(cudaStreamCreateWithFlags(&s, cudaStreamNonBlocking), cudaSuccess);
    std::shared_ptr<Session> session;
    ASSERT_TRUE(Session::create(rt_, {m->container()}, SessionOptions{}, &session).ok());
    std::vector<float> logits;
    std::unique_ptr<wharf::Run> run;
    ASSERT_TRUE(wharf::Run::begin(m->container(), session, s, &run).ok());
    Status r = step(*m, *run, prompt_, 0, &logits);
    ASSERT_TRUE(r.ok()) << r.message();
    int next = argmax(&logits[(prompt_.size() - 1) * kVocab]);
    got->push_back(next);
    ASSERT_TRUE(run->end().ok());
    for (size_t k = 1; k < tokens_.size(); ++k) {
      ASSERT_TRUE(wharf::Run::begin(m->container(), session, s, &run).ok());
      r = step(*m, *run, {int64_t(next)}, int64_t(prompt_.size() + k - 1), &logits);
      ASSERT_TRUE(r.ok()) << r.message();
      next = argmax(logits.data());
      got->push_back(next);
      ASSERT_TRUE(run->end().ok());
    }
    cudaStreamSynchronize(s);
    cudaStreamDestroy(s);
  };
  std::vector<int> a, b;
  std::thread ta([&] { conversation(&a); });
  std::thread tb([&] { conversation(&b); });
  ta.join();
  tb.join();
  std::vector<int> want(tokens_.begin(), tokens_.end());
  EXPECT_EQ(a, want);
  EXPECT_EQ(b, want);
}

}  // namespace
}  // namespace wharf

namespace wharf {
namespace {

// Two methods of one model compiled separately (prefill: the dynamic-length forward; decode:
// tiny_decoder_decode.so, exported for one token by tools/aoti/compile_decode_method.py) over
// one weight store: one copy of the weights, one session serving both methods' state (the
// KV caches carry from prefill into decode), and a store update reaching both at once.
TEST_F(ModelGpu, TwoMethodsOverOneWeightStoreShareWeightsAndState) {
  const std::string decode_so = dir_ + "/tiny_decoder_decode.so";
  ASSERT_TRUE(exists(decode_so)) << "missing " << decode_so << " (tools/aoti/compile_decode_method.py)";
  auto store = std::make_shared<WeightStore>(rt_);
  ModelOptions mo;
  if (const char* shim = std::getenv("WHARF_AOTI_SHIM")) mo.shim_path = shim;
  mo.store = store;
  mo.name = "prefill";
  std::shared_ptr<Model> prefill, decode;
  Status st = Model::load(rt_, dir_ + "/tiny_decoder.so", *weights_, mo, &prefill);
  SKIP_IF_UNLOADABLE(st);
  ASSERT_TRUE(st.ok()) << st.message();
  const uint64_t one = rt_->device().accounting().snapshot().current[int(MemTag::kConstants)];
  mo.name = "decode";
  st = Model::load(rt_, decode_so, *weights_, mo, &decode);
  ASSERT_TRUE(st.ok()) << st.message();
  EXPECT_EQ(rt_->device().accounting().snapshot().current[int(MemTag::kConstants)], one)
      << "the second method should take the store's weights, not a copy";
  // One conversation: prefill with one method, decode with the other, on one session.
  std::shared_ptr<Session> s;
  ASSERT_TRUE(Session::create(rt_, {prefill->container(), decode->container()}, SessionOptions{}, &s).ok());
  std::unique_ptr<wharf::Run> run;
  ASSERT_TRUE(wharf::Run::begin(prefill->container(), s, nullptr, &run).ok());
  std::vector<float> logits;
  ASSERT_TRUE(step(*prefill, *run, prompt_, 0, &logits).ok());
  int next = argmax(&logits[(prompt_.size() - 1) * kVocab]);
  ASSERT_TRUE(run->end().ok());
  std::vector<int> got{next};
  for (size_t k = 1; k < tokens_.size(); ++k) {
    ASSERT_TRUE(wharf::Run::begin(decode->container(), s, nullptr, &run).ok());
    st = step(*decode, *run, {int64_t(next)}, int64_t(prompt_.size() + k - 1), &logits);
    ASSERT_TRUE(st.ok()) << st.message();
    next = argmax(logits.data());
    got.push_back(next);
    ASSERT_TRUE(run->end().ok());
  }
  EXPECT_EQ(got, std::vector<int>(tokens_.begin(), tokens_.end()));
  // A store update of lm_head reaches both methods with one swap.
  const MapEntry* head = weights_->find("lm_head.weight");
  std::vector<float> zero(head->meta.nbytes() / 4, 0.0f);
  ConstantMap update;
  ASSERT_TRUE(update.set("lm_head.weight", head->meta, zero.data()).ok());
  ASSERT_TRUE(store->update(update, UpdateOptions{}).ok());
  ASSERT_TRUE(store->swap().ok());
  for (auto* m : {prefill.get(), decode.get()}) {
    std::shared_ptr<Session> fresh;
    ASSERT_TRUE(Session::create(rt_, {m->container()}, SessionOptions{}, &fresh).ok());
    ASSERT_TRUE(wharf::Run::begin(m->container(), fresh, nullptr, &run).ok());
    // The decode method takes one token; prefill the prompt.
    const std::vector<int64_t> toks = m == decode.get() ? std::vector<int64_t>{prompt_[0]} : prompt_;
    st = step(*m, *run, toks, 0, &logits);
    ASSERT_TRUE(st.ok()) << st.message();
    ASSERT_TRUE(run->end().ok());
    for (float x : logits) ASSERT_EQ(x, 0.0f) << "a zero lm_head gives zero logits";
  }
}

}  // namespace
}  // namespace wharf

namespace wharf {
namespace {

// The decode method loaded from its `.pt2` package (aoti_compile_and_package's output, as
// tools/aoti/compile_decode_method.py keeps it) runs exactly as the `.so` extracted from it.
TEST_F(ModelGpu, APt2PackageLoadsAndRunsAsItsLibrary) {
  const std::string pkg = dir_ + "/tiny_decoder_decode.pt2", so = dir_ + "/tiny_decoder_decode.so";
  ASSERT_TRUE(exists(pkg)) << "missing " << pkg << " (tools/aoti/compile_decode_method.py)";
  ModelOptions mo;
  if (const char* shim = std::getenv("WHARF_AOTI_SHIM")) mo.shim_path = shim;
  std::shared_ptr<Model> from_pkg, from_so;
  Status st = Model::load(rt_, pkg, *weights_, mo, &from_pkg);
  SKIP_IF_UNLOADABLE(st);
  ASSERT_TRUE(st.ok()) << st.message();
  ASSERT_TRUE(Model::load(rt_, so, *weights_, mo, &from_so).ok());
  std::vector<std::vector<float>> logits(2);
  int k = 0;
  for (Model* m : {from_pkg.get(), from_so.get()}) {
    std::shared_ptr<Session> s;
    ASSERT_TRUE(Session::create(rt_, {m->container()}, SessionOptions{}, &s).ok());
    std::unique_ptr<wharf::Run> run;
    ASSERT_TRUE(wharf::Run::begin(m->container(), s, nullptr, &run).ok());
    st = step(*m, *run, {prompt_[0]}, 0, &logits[size_t(k++)]);
    ASSERT_TRUE(st.ok()) << st.message();
    ASSERT_TRUE(run->end().ok());
  }
  ASSERT_EQ(logits[0].size(), logits[1].size());
  float worst = 0;
  for (size_t i = 0; i < logits[0].size(); ++i) worst = std::max(worst, std::fabs(logits[0][i] - logits[1][i]));
  EXPECT_LE(worst, 1e-5f) << "the package's model and its library computed different logits";
  EXPECT_EQ(argmax(logits[0].data()), argmax(logits[1].data()));
}

// A `.pt2` package holding `so` as its model library: a stored ZIP, as
// aoti_compile_and_package writes (local header and data, central directory, end record).
void write_package(const std::string& path, const std::string& so) {
  auto le = [](uint64_t v, int bytes) {
    std::string s(size_t(bytes), '\0');
    for (int i = 0; i < bytes; ++i) s[size_t(i)] = char((v >> (8 * i)) & 0xFF);
    return s;
  };
  const std::string name = "pkg/data/aotinductor/model/model.wrapper.so";
  const uint32_t crc = io::crc32(reinterpret_cast<const uint8_t*>(so.data()), so.size());
  std::string out = le(0x04034b50, 4) + le(20, 2) + le(0, 2) + le(0, 2) + le(0, 4) + le(crc, 4) + le(so.size(), 4) +
                    le(so.size(), 4) + le(name.size(), 2) + le(0, 2) + name + so;
  const std::string cd = le(0x02014b50, 4) + le(20, 2) + le(20, 2) + le(0, 2) + le(0, 2) + le(0, 4) + le(crc, 4) +
                         le(so.size(), 4) + le(so.size(), 4) + le(name.size(), 2) + le(0, 2) + le(0, 2) + le(0, 2) +
                         le(0, 2) + le(0, 4) + le(0, 4) + name;
  const uint64_t cd_off = out.size();
  out +=
      cd + le(0x06054b50, 4) + le(0, 2) + le(0, 2) + le(1, 2) + le(1, 2) + le(cd.size(), 4) + le(cd_off, 4) + le(0, 2);
  std::ofstream(path, std::ios::binary) << out;
}

std::string read_bytes(const std::string& path) {
  std::ifstream f(path, std::ios::binary);
  return std::string(std::istreambuf_iterator<char>(f), {});
}

// Issue 21: every load gets the library it names. Two different packages loaded side by
// side (the decode method's package, then one made here around the prefill library) used to
// share the first one's code: both were opened as /proc/self/fd/<n> of a memory file closed
// at once, the second got the same n, and the dynamic loader matched the loaded object by
// that name. Likewise a `.so` replaced by rename at the same path while the old one is
// loaded. The prefill method takes the whole prompt and must match PyTorch's logits; the
// decode method (exported for one token) run in its place would not.
TEST_F(ModelGpu, TwoDifferentPackagesAndARenameReplacedLibraryEachRunTheirOwnCode) {
  const std::string decode_pkg = dir_ + "/tiny_decoder_decode.pt2";
  ASSERT_TRUE(exists(decode_pkg)) << "missing " << decode_pkg << " (tools/aoti/compile_decode_method.py)";
  const std::string tmp = ::testing::TempDir() + "wharf_two_packages_" + std::to_string(::getpid());
  const std::string prefill_pkg = tmp + "_prefill.pt2", so = tmp + "_model.so";
  const std::string prefill_pkg2 = tmp + "_prefill2.pt2";
  struct Unlink {
    std::vector<std::string> paths;
    ~Unlink() {
      for (const std::string& p : paths) ::unlink(p.c_str());
    }
  } cleanup{{prefill_pkg, prefill_pkg2, so, so + ".new"}};
  write_package(prefill_pkg, read_bytes(dir_ + "/tiny_decoder.so"));
  { std::ofstream(so, std::ios::binary) << read_bytes(dir_ + "/tiny_decoder_decode.so"); }
  ModelOptions mo;
  if (const char* shim = std::getenv("WHARF_AOTI_SHIM")) mo.shim_path = shim;

  // The decode method's first token matches the prefill's first position; the prefill
  // method's logits match PyTorch's at every position of the prompt.
  auto expect_decode = [&](Model& m, const char* what) {
    std::shared_ptr<Session> s;
    ASSERT_TRUE(Session::create(rt_, {m.container()}, SessionOptions{}, &s).ok());
    std::unique_ptr<wharf::Run> run;
    ASSERT_TRUE(wharf::Run::begin(m.container(), s, nullptr, &run).ok());
    std::vector<float> logits;
    Status st = step(m, *run, {prompt_[0]}, 0, &logits);
    ASSERT_TRUE(st.ok()) << what << ": " << st.message();
    ASSERT_TRUE(run->end().ok());
    double err = 0;
    for (int i = 0; i < kVocab; ++i)
      err = std::max(err, double(std::fabs(logits[size_t(i)] - prefill_logits_[size_t(i)])));
    EXPECT_LT(err, 2e-3) << what;
  };
  auto expect_prefill = [&](Model& m, const char* what) {
    std::shared_ptr<Session> s;
    ASSERT_TRUE(Session::create(rt_, {m.container()}, SessionOptions{}, &s).ok());
    std::unique_ptr<wharf::Run> run;
    ASSERT_TRUE(wharf::Run::begin(m.container(), s, nullptr, &run).ok());
    std::vector<float> logits;
    Status st = step(m, *run, prompt_, 0, &logits);
    ASSERT_TRUE(st.ok()) << what << " (the prefill method takes the whole prompt): " << st.message();
    ASSERT_TRUE(run->end().ok());
    double err = 0;
    for (size_t i = 0; i < logits.size(); ++i) err = std::max(err, double(std::fabs(logits[i] - prefill_logits_[i])));
    EXPECT_LT(err, 2e-3) << what << ": prefill logits differ from PyTorch's";
  };

  std::shared_ptr<Model> decode, prefill;
  Status st = Model::load(rt_, decode_pkg, *weights_, mo, &decode);
  SKIP_IF_UNLOADABLE(st);
  ASSERT_TRUE(st.ok()) << st.message();
  st = Model::load(rt_, prefill_pkg, *weights_, mo, &prefill);
  ASSERT_TRUE(st.ok()) << st.message();
  expect_prefill(*prefill, "the prefill package loaded beside the decode package");
  expect_decode(*decode, "the decode package");

  // A `.so` replaced by rename while the old one is loaded.
  std::shared_ptr<Model> old_so, new_so;
  ASSERT_TRUE(Model::load(rt_, so, *weights_, mo, &old_so).ok());
  { std::ofstream(so + ".new", std::ios::binary) << read_bytes(dir_ + "/tiny_decoder.so"); }
  ASSERT_EQ(::rename((so + ".new").c_str(), so.c_str()), 0);
  st = Model::load(rt_, so, *weights_, mo, &new_so);
  ASSERT_TRUE(st.ok()) << st.message();
  expect_prefill(*new_so, "the .so loaded after its file was replaced by the prefill library");
  expect_decode(*old_so, "the .so loaded before");

  // Freed models' libraries stay loaded (AOTInductor's never unload): the next package is
  // still its own.
  decode.reset();
  prefill.reset();
  write_package(prefill_pkg2, read_bytes(dir_ + "/tiny_decoder.so"));
  ASSERT_TRUE(Model::load(rt_, decode_pkg, *weights_, mo, &decode).ok());
  ASSERT_TRUE(Model::load(rt_, prefill_pkg2, *weights_, mo, &prefill).ok());
  expect_prefill(*prefill, "a prefill package loaded after the first two were freed");
  expect_decode(*decode, "the decode package loaded again");
}

}  // namespace
}  // namespace wharf

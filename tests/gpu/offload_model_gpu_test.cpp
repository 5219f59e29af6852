// SPDX-License-Identifier: Apache-2.0
// Offloaded layers of an AOTInductor-compiled model, with the offload points inside the
// compiled code: tests/data/models/offload_tiny (tools/aoti/compile_offload_model.py) calls
// the custom ops wharf::offload_wait / wharf::offload_issued at its 6 layer boundaries, which
// libwharf_aoti_shim.so maps to the run's offloader. Outputs with k of N layers offloaded
// equal the resident model's exactly and PyTorch's within rounding; a hot update of an
// offloaded layer mid-conversation changes later outputs only.
//
// The model files are found in $WHARF_OFFLOAD_MODEL_DIR, else in models/offload_tiny of the
// test data (tests/common/test_paths.h: $WHARF_TEST_DATA, which the GPU bundle sets, or the
// source tree). Every test skips with a reason when no GPU is visible or the
// compiled model cannot be loaded on this machine's C library (it was built on the GPU machine).
#define WHARF_EXPERIMENTAL 1
#include <gtest/gtest.h>

#include <cuda_runtime_api.h>

#include <algorithm>
#include <cmath>
#include <cstdlib>
#include <random>
#include <cstring>
#include <memory>
#include <string>
#include <sys/stat.h>
#include <vector>

#include "common/test_paths.h"
#include "constants/constant_map.h"
#include "device/runtime.h"
#include "graph_test_support.h"
#include "graphs/model_graphs.h"
#include "models/model.h"
#include "offload/offloader.h"
#include "runs/run.h"
#include "sessions/session.h"
#include "wharf/wharf.h"

namespace wharf {
namespace {

bool exists(const std::string& p) {
  struct stat st;
  return ::stat(p.c_str(), &st) == 0;
}

std::string data_dir(const char* env, const std::string& name) {
  if (const char* e = std::getenv(env)) return e;
  return wharf_test::test_data("models/" + name);
}

constexpr int kLayers = 6, kBatch = 4, kDim = 64, kSteps = 6, kUpdateAfter = 3, kUpdatedLayer = 3;
constexpr size_t kStepElems = size_t(kBatch) * kDim;

// Runs `rows` x kDim floats of host input `x` through model m in `run`; the output, of the
// same shape, copied to the host.
wharf::Status run_rows(wharf::Model& m, wharf::Run& run, const float* x, int64_t rows, std::vector<float>* out) {
  wharf::ModelTensor in;
  in.data = const_cast<float*>(x);
  in.meta.dtype = wharf::DType::kF32;
  in.meta.shape = {rows, kDim};
  in.meta.device_type = wharf::DeviceType::kCpu;
  std::vector<wharf::ModelTensor> outs;
  WHARF_RETURN_IF_ERROR(m.run(run, {in}, &outs));
  if (outs.size() != 1 || outs[0].meta.shape != std::vector<int64_t>{rows, kDim})
    return wharf::Internal("unexpected outputs: " + std::to_string(outs.size()) + ", the first of shape " +
                           (outs.empty() ? std::string("-") : wharf::shape_string(outs[0].meta.shape)));
  const size_t n = size_t(rows) * kDim;
  out->assign(n, 0.0f);
  cudaStream_t cs = static_cast<cudaStream_t>(run.stream().native_handle());
  if (cudaMemcpyAsync(out->data(), outs[0].data, n * 4, cudaMemcpyDeviceToHost, cs) != cudaSuccess ||
      cudaStreamSynchronize(cs) != cudaSuccess)
    return wharf::DeviceError("reading the output");
  return wharf::Status::Ok();
}

#define SKIP_IF_UNLOADABLE(st)                                                                              \
  do {                                                                                                      \
    if (!(st).ok() && (st).message().find("GLIBC") != std::string::npos)                                    \
      GTEST_SKIP() << "the compiled model needs a newer C library than this machine's: " << (st).message(); \
  } while (0)

class OffloadModelGpu : public ::testing::Test {
 protected:
  void SetUp() override {
    int n = 0;
    if (cudaGetDeviceCount(&n) != cudaSuccess || n == 0) GTEST_SKIP() << "no CUDA device";
    dir_ = data_dir("WHARF_OFFLOAD_MODEL_DIR", "offload_tiny");
    if (!exists(dir_ + "/offload_tiny.so")) GTEST_SKIP() << "no compiled model at " << dir_;
    RuntimeOptions ro;
    ro.backend = 1;  // CUDA
    ASSERT_TRUE(Runtime::create(ro, &rt_).ok());
    Status st = ConstantMap::load_safetensors(dir_ + "/offload_tiny.safetensors", &weights_);
    ASSERT_TRUE(st.ok()) << st.message();
    st = ConstantMap::load_safetensors(dir_ + "/reference.safetensors", &ref_);
    ASSERT_TRUE(st.ok()) << st.message();
    for (const char* name : {"x", "out", "out_updated"}) {
      const MapEntry* e = ref_->find(name);
      ASSERT_NE(e, nullptr) << name;
      ASSERT_EQ(e->meta.nbytes(), kSteps * kStepElems * sizeof(float)) << name;
    }
  }

  const float* ref(const char* name, int step) const {
    return static_cast<const float*>(ref_->find(name)->data) + size_t(step) * kStepElems;
  }

  // Loads the model; `offload` null: resident.
  Status load(std::shared_ptr<const OffloaderConfig> offload, std::shared_ptr<Model>* out) {
    ModelOptions mo;
    if (const char* shim = std::getenv("WHARF_AOTI_SHIM")) mo.shim_path = shim;
    mo.offload = std::move(offload);
    return Model::load(rt_, dir_ + "/offload_tiny.so", *weights_, mo, out);
  }

  // One conversation step in its own run: input x of reference step `t` (host memory, copied
  // by the model loader), output on the host.
  Status step(Model& m, const std::shared_ptr<Session>& s, int t, std::vector<float>* out) {
    std::unique_ptr<wharf::Run> run;
    WHARF_RETURN_IF_ERROR(wharf::Run::begin(m.container(), s, nullptr, &run));
    WHARF_RETURN_IF_ERROR(step_in(m, *run, t, out));
    return run->end();
  }
  Status step_in(Model& m, wharf::Run& run, int t, std::vector<float>* out) {
    return run_rows(m, run, ref("x", t), kBatch, out);
  }

  // The whole conversation on a fresh session; outputs per step.
  Status conversation(Model& m, std::vector<std::vector<float>>* outs) {
    std::shared_ptr<Session> s;
    WHARF_RETURN_IF_ERROR(Session::create(rt_, {m.container()}, SessionOptions{}, &s));
    outs->assign(kSteps, {});
    for (int t = 0; t < kSteps; ++t) WHARF_RETURN_IF_ERROR(step(m, s, t, &(*outs)[size_t(t)]));
    return Status::Ok();
  }

  double max_err(const std::vector<float>& got, const float* want) const {
    double e = 0;
    for (size_t i = 0; i < kStepElems; ++i) e = std::max(e, double(std::fabs(got[i] - want[i])));
    return e;
  }

  uint64_t tag_bytes(MemTag t) { return rt_->device().accounting().snapshot().current[size_t(t)]; }

  // The update of the reference: layer 3's w1 and w2 replaced.
  Status updated_layer(ConstantMap* map) {
    for (const char* w : {"w1", "w2"}) {
      const std::string fqn = "layers." + std::to_string(kUpdatedLayer) + "." + w + ".weight";
      const MapEntry* e = ref_->find("update." + fqn);
      if (!e) return NotFound("update." + fqn + " is not in the reference");
      WHARF_RETURN_IF_ERROR(map->set(fqn, e->meta, e->data));
    }
    return Status::Ok();
  }

  std::string dir_;
  std::shared_ptr<Runtime> rt_;
  std::unique_ptr<ConstantMap> weights_, ref_;
};

std::shared_ptr<OffloaderConfig> offload_config(uint32_t group_size, uint32_t k, uint32_t cap) {
  auto c = std::make_shared<OffloaderConfig>();
  c->group_size = group_size;
  c->prefetch_step = k;
  c->slot_capacity = cap;
  return c;
}

TEST_F(OffloadModelGpu, KOfNOffloadedEqualsResidentAndPyTorch) {
  std::shared_ptr<Model> resident;
  Status st = load(nullptr, &resident);
  SKIP_IF_UNLOADABLE(st);
  ASSERT_TRUE(st.ok()) << st.message();
  EXPECT_EQ(resident->offloader(), nullptr);
  std::vector<std::vector<float>> want;
  // Without an offloader the model's offload ops are identities: PyTorch's outputs.
  st = conversation(*resident, &want);
  ASSERT_TRUE(st.ok()) << st.message();
  for (int t = 0; t < kSteps; ++t) EXPECT_LT(max_err(want[size_t(t)], ref("out", t)), 1e-4) << "resident, step " << t;

  struct Case {
    uint32_t group_size, k, cap, offloaded;
  };
  // Layers 1, 3, 5 (3 of 6) through 2 slots; every layer through 3 slots, 2 ahead; every layer, 1 slot.
  for (const Case c : {Case{2, 1, 2, 3}, Case{0, 2, 3, 6}, Case{0, 1, 1, 6}}) {
    SCOPED_TRACE("group_size " + std::to_string(c.group_size) + ", prefetch_step " + std::to_string(c.k) +
                 ", slot_capacity " + std::to_string(c.cap));
    const uint64_t offload_before = tag_bytes(MemTag::kOffload);
    std::shared_ptr<Model> m;
    st = load(offload_config(c.group_size, c.k, c.cap), &m);
    ASSERT_TRUE(st.ok()) << st.message();
    ASSERT_NE(m->offloader(), nullptr);
    EXPECT_EQ(m->offloader()->num_offloaded_layers(), c.offloaded);
    EXPECT_EQ(m->offloader()->slot_capacity(), c.cap);
    EXPECT_EQ(tag_bytes(MemTag::kOffload) - offload_before, uint64_t(c.cap) * m->offloader()->slot_bytes());
    // The offloaded parameters live in pinned host memory, the others on the device.
    size_t host_placed = 0;
    for (const ConstantDecl& d : m->container()->decls()) host_placed += d.placement == Placement::kHost;
    EXPECT_EQ(host_placed, size_t(c.offloaded) * 3);  // norm, w1, w2
    std::vector<std::vector<float>> got;
    st = conversation(*m, &got);
    ASSERT_TRUE(st.ok()) << st.message();
    for (int t = 0; t < kSteps; ++t) {
      EXPECT_EQ(got[size_t(t)], want[size_t(t)]) << "step " << t << ": offloaded differs from resident";
      EXPECT_LT(max_err(got[size_t(t)], ref("out", t)), 1e-4) << "step " << t;
    }
  }
}

// Mid-conversation: after 3 steps, layer 3 (offloaded) is updated from host memory and
// swapped. The conversation forked before the update and run on a run begun before the swap
// finishes on the old weights (PyTorch's step 3 without the update); the conversation
// continued after the swap follows PyTorch's updated conversation; earlier outputs are those
// of the original weights.
TEST_F(OffloadModelGpu, HotUpdateOfAnOffloadedLayerMidConversation) {
  std::shared_ptr<Model> m;
  Status st = load(offload_config(2, 1, 2), &m);
  SKIP_IF_UNLOADABLE(st);
  ASSERT_TRUE(st.ok()) << st.message();
  ASSERT_TRUE(m->offloader()->is_offloaded_layer(kUpdatedLayer));
  std::shared_ptr<Session> s;
  ASSERT_TRUE(Session::create(rt_, {m->container()}, SessionOptions{}, &s).ok());
  std::vector<float> out;
  for (int t = 0; t < kUpdateAfter; ++t) {
    st = step(*m, s, t, &out);
    ASSERT_TRUE(st.ok()) << st.message();
    EXPECT_LT(max_err(out, ref("out", t)), 1e-4) << "step " << t;
    EXPECT_LT(max_err(out, ref("out_updated", t)), 1e-4) << "step " << t;
  }
  std::shared_ptr<Session> branch;
  ASSERT_TRUE(s->fork(&branch).ok());
  std::unique_ptr<wharf::Run> old_run;
  ASSERT_TRUE(wharf::Run::begin(m->container(), branch, nullptr, &old_run).ok());

  const uint64_t device_before = rt_->device().accounting().snapshot().device_current;
  ConstantMap update;
  ASSERT_TRUE(updated_layer(&update).ok());
  st = m->container()->update(update, UpdateOptions{});
  ASSERT_TRUE(st.ok()) << st.message();
  ASSERT_TRUE(m->container()->swap().ok());
  // Offloaded weights are written with host copies only: no device memory for them.
  EXPECT_EQ(rt_->device().accounting().snapshot().device_current, device_before);

  st = step_in(*m, *old_run, kUpdateAfter, &out);
  ASSERT_TRUE(st.ok()) << st.message();
  ASSERT_TRUE(old_run->end().ok());
  EXPECT_LT(max_err(out, ref("out", kUpdateAfter)), 1e-4) << "the run begun before the swap saw new weights";
  EXPECT_GT(max_err(out, ref("out_updated", kUpdateAfter)), 1e-3) << "the update changes nothing: a vacuous test";

  for (int t = kUpdateAfter; t < kSteps; ++t) {
    st = step(*m, s, t, &out);
    ASSERT_TRUE(st.ok()) << st.message();
    EXPECT_LT(max_err(out, ref("out_updated", t)), 1e-4) << "step " << t << " after the swap";
  }
}

// The model level through the C API: load with offload options, the model's offloader and
// its budget, one step equal to PyTorch's.
TEST_F(OffloadModelGpu, CApiLoadsAnOffloadedModel) {
  wharf_runtime_options ro;
  wharf_runtime_options_init(&ro);
  ro.backend = WHARF_BACKEND_CUDA;
  wharf_runtime* rt = nullptr;
  ASSERT_EQ(wharf_runtime_create(&ro, &rt), nullptr);
  wharf_constant_map* w = nullptr;
  ASSERT_EQ(wharf_constant_map_load_safetensors((dir_ + "/offload_tiny.safetensors").c_str(), &w), nullptr);
  wharf_offloader_options oo;
  wharf_offloader_options_init(&oo);
  oo.group_size = 2;
  oo.slot_capacity = 2;
  oo.step_compute_us = 1'000'000;  // a second: the copies fit
  oo.refuse_if_exposed = 1;
  wharf_model_options mo;
  wharf_model_options_init(&mo);
  mo.shim_path = std::getenv("WHARF_AOTI_SHIM");
  mo.offload = &oo;
  wharf_model* model = nullptr;
  wharf_status* st = wharf_model_load(rt, (dir_ + "/offload_tiny.so").c_str(), w, &mo, &model);
  if (st && std::string(wharf_status_message(st)).find("GLIBC") != std::string::npos) {
    wharf_status_free(st);
    wharf_constant_map_free(w);
    wharf_runtime_free(rt);
    GTEST_SKIP() << "the compiled model needs a newer C library";
  }
  ASSERT_EQ(st, nullptr) << wharf_status_message(st);
  wharf_offloader* off = nullptr;
  ASSERT_EQ(wharf_model_get_offloader(model, &off), nullptr);
  ASSERT_NE(off, nullptr);
  EXPECT_EQ(wharf_offloader_num_layers(off), uint32_t(kLayers));
  EXPECT_EQ(wharf_offloader_num_layer_constants(off, 1), 3u);
  EXPECT_EQ(wharf_offloader_num_layer_constants(off, 2), 0u);
  wharf_offloader_budget b;
  std::memset(&b, 0, sizeof b);
  b.struct_size = sizeof b;
  ASSERT_EQ(wharf_offloader_get_budget(off, &b), nullptr);
  EXPECT_EQ(b.num_offloaded_layers, 3u);
  EXPECT_EQ(b.bytes_per_step, 3u * (kDim + 2u * kDim * 128u) * 4u);
  EXPECT_EQ(b.h2d_source, WHARF_H2D_MEASURED);
  EXPECT_GT(b.h2d_bytes_per_second, 1'000'000'000u);
  EXPECT_EQ(b.exposed_us, 0.0);

  wharf_session* s = nullptr;
  wharf_container* c = wharf_model_container(model);
  ASSERT_EQ(wharf_session_create(rt, &c, 1, nullptr, &s), nullptr);
  wharf_run* run = nullptr;
  ASSERT_EQ(wharf_run_begin(c, s, nullptr, &run), nullptr);
  int64_t shape[2] = {kBatch, kDim};
  wharf_tensor_view in{sizeof(wharf_tensor_view),
                       0,
                       const_cast<float*>(ref("x", 0)),
                       WHARF_DTYPE_F32,
                       WHARF_DEVICE_CPU,
                       0,
                       2,
                       shape,
                       nullptr};
  wharf_tensor_view outv{};
  std::memset(&outv, 0, sizeof outv);
  outv.struct_size = sizeof outv;
  st = wharf_model_run(model, run, &in, 1, &outv, 1);
  ASSERT_EQ(st, nullptr) << wharf_status_message(st);
  std::vector<float> out(kStepElems);
  ASSERT_EQ(wharf_run_copy(run, out.data(), outv.data, kStepElems * 4), nullptr);
  EXPECT_LT(max_err(out, ref("out", 0)), 1e-4);
  EXPECT_EQ(wharf_run_end(run), nullptr);
  wharf_session_free(s);
  wharf_offloader_free(off);
  wharf_model_free(model);
  wharf_constant_map_free(w);
  wharf_runtime_free(rt);
}

// A model that folds constants at run time (the tiny decoder) cannot be offloaded: the fold
// would read offloaded weights from slots at bind time.
TEST_F(OffloadModelGpu, AModelThatFoldsConstantsIsRefused) {
  const std::string tiny = data_dir("WHARF_MODEL_DIR", "tiny_decoder");
  if (!exists(tiny + "/tiny_decoder.so")) GTEST_SKIP() << "no tiny decoder at " << tiny;
  std::unique_ptr<ConstantMap> w;
  ASSERT_TRUE(ConstantMap::load_safetensors(tiny + "/tiny_decoder.safetensors", &w).ok());
  ModelOptions mo;
  if (const char* shim = std::getenv("WHARF_AOTI_SHIM")) mo.shim_path = shim;
  mo.offload = offload_config(0, 1, 1);
  std::shared_ptr<Model> m;
  const uint64_t offload_before = tag_bytes(MemTag::kOffload);
  Status st = Model::load(rt_, tiny + "/tiny_decoder.so", *w, mo, &m);
  SKIP_IF_UNLOADABLE(st);
  EXPECT_EQ(st.code(), Code::kUnsupported) << st.message();
  EXPECT_NE(st.message().find("use_runtime_constant_folding"), std::string::npos) << st.message();
  EXPECT_EQ(m, nullptr);
  EXPECT_EQ(tag_bytes(MemTag::kOffload), offload_before);
}

// ---- CUDA graphs of an offloaded model (graphs/model_graphs.h; docs/decisions.md, "Graphs of
// offloaded models") -----------------------------------------------------------------------
//
// Two copies of the offloaded model side by side, each over its own container loaded from the
// same weights: `eager` (graphs off) and `graph` (graphs on), given the same updates, swaps
// and rollbacks and the same inputs in sessions that mirror each other. A replay (the
// offloaded layers copied into its set's own ring by the graph's copy nodes, their sources
// re-pointed to the run's generation) must give the eager run's outputs bit for bit.

std::string graph_text(const GraphStats& s) {
  std::string b;
  for (const auto& x : s.buckets)
    b += " [set " + std::to_string(x.set) + " " + x.shapes + ": " + std::to_string(x.nodes) + " nodes, " +
         std::to_string(x.patched_nodes) + " patched, " + std::to_string(x.patches) + " patches]";
  return "graph stats: captures " + std::to_string(s.captures) + ", capture failures " +
         std::to_string(s.capture_failures) + ", replays " + std::to_string(s.replays) + ", repoints " +
         std::to_string(s.repoints) + " (" + std::to_string(s.nodes_repointed) + " nodes), eager runs " +
         std::to_string(s.eager_runs) + ", last eager reason '" + s.last_eager_reason + "'" + b;
}

// The eager model and the one replaying from CUDA graphs, loaded alike with offloaded layers,
// and what the graph fixtures below do with the pair. A fixture supplies its runtime, its
// loader, its loaded weights and how one step of both runs (both_in).
class EagerGraphPair {
 protected:
  virtual ~EagerGraphPair() = default;
  virtual const std::shared_ptr<Runtime>& pair_runtime() const = 0;
  virtual Status load(std::shared_ptr<const OffloaderConfig> offload, std::shared_ptr<Model>* out) = 0;
  virtual const ConstantMap& loaded_weights() const = 0;
  // Step `t` of both models in the given runs; the outputs must be equal bit for bit.
  virtual void both_in(wharf::Run& re, wharf::Run& rg, int t, const std::string& context,
                       std::vector<float>* out = nullptr) = 0;

  // Both models with `offload`; graphs enabled on `graph_` with `go`.
  void load_both(std::shared_ptr<const OffloaderConfig> offload, const GraphOptions& go) {
    Status st = load(offload, &eager_);
    if (!st.ok() && st.message().find("GLIBC") != std::string::npos) {
      skipped_ = true;
      GTEST_SKIP() << "the compiled model needs a newer C library than this machine's: " << st.message();
    }
    ASSERT_TRUE(st.ok()) << st.message();
    st = load(offload, &graph_);
    ASSERT_TRUE(st.ok()) << st.message();
    ASSERT_NE(graph_->offloader(), nullptr);
    st = graph_->enable_graphs(go);
    ASSERT_TRUE(st.ok()) << st.message();
  }

  GraphStats stats() {
    GraphStats s;
    EXPECT_TRUE(graph_->graph_stats(&s).ok());
    return s;
  }

  void sessions(std::shared_ptr<Session>* se, std::shared_ptr<Session>* sg) {
    ASSERT_TRUE(Session::create(pair_runtime(), {eager_->container()}, SessionOptions{}, se).ok());
    ASSERT_TRUE(Session::create(pair_runtime(), {graph_->container()}, SessionOptions{}, sg).ok());
  }

  // Step `t` of both models, each in a fresh run of its session.
  void both(const std::shared_ptr<Session>& se, const std::shared_ptr<Session>& sg, int t, const std::string& context,
            std::vector<float>* out = nullptr) {
    std::unique_ptr<wharf::Run> re, rg;
    ASSERT_TRUE(wharf::Run::begin(eager_->container(), se, nullptr, &re).ok());
    ASSERT_TRUE(wharf::Run::begin(graph_->container(), sg, nullptr, &rg).ok());
    ASSERT_NO_FATAL_FAILURE(both_in(*re, *rg, t, context, out));
    ASSERT_TRUE(re->end().ok());
    ASSERT_TRUE(rg->end().ok());
  }

  // The same update to both containers: the offloaded layer `layer`'s w1 scaled by `scale`
  // from the loaded weights, into the inactive generation and swapped, or in place.
  void update_both(int layer, float scale, bool in_place, const std::string& context) {
    wharf_test::scaled_update_both(loaded_weights(), "layers." + std::to_string(layer) + ".w1.weight", scale, in_place,
                                   *eager_, *graph_, context, &kept_);
  }

  bool skipped_ = false;
  std::shared_ptr<Model> eager_, graph_;
  std::vector<std::unique_ptr<std::vector<float>>> kept_;
};

class OffloadModelGraphGpu : public OffloadModelGpu, public EagerGraphPair {
 protected:
  const std::shared_ptr<Runtime>& pair_runtime() const override { return rt_; }
  Status load(std::shared_ptr<const OffloaderConfig> offload, std::shared_ptr<Model>* out) override {
    return OffloadModelGpu::load(std::move(offload), out);
  }
  const ConstantMap& loaded_weights() const override { return *weights_; }
  void load_both(std::shared_ptr<const OffloaderConfig> offload, const GraphOptions& go = GraphOptions()) {
    EagerGraphPair::load_both(std::move(offload), go);
  }

  void both_in(wharf::Run& re, wharf::Run& rg, int t, const std::string& context,
               std::vector<float>* out = nullptr) override {
    std::vector<float> oe, og;
    Status st = step_in(*eager_, re, t % kSteps, &oe);
    ASSERT_TRUE(st.ok()) << context << ": eager: " << st.message();
    st = step_in(*graph_, rg, t % kSteps, &og);
    ASSERT_TRUE(st.ok()) << context << ": graph: " << st.message() << "; " << graph_text(stats());
    ASSERT_EQ(oe.size(), og.size());
    ASSERT_EQ(std::memcmp(oe.data(), og.data(), oe.size() * 4), 0)
        << context << ": the replay's outputs differ from the eager run's; " << graph_text(stats());
    if (out) *out = std::move(oe);
  }
  void rollback_both(const std::string& context) {
    for (Model* m : {eager_.get(), graph_.get()}) {
      Status st = m->container()->swap();
      ASSERT_TRUE(st.ok()) << context << ": " << st.message();
    }
  }
};

// The conversation through replays, each equal to the eager run's bit for bit (and to
// PyTorch's within rounding); after the capturing run every step is a replay, none eager; the
// set's ring is one more ring of slots (tag offload), and the offloader keeps no generation.
TEST_F(OffloadModelGraphGpu, ReplaysEqualEagerRunsBitForBit) {
  // 3 of 6 layers through 2 slots; every layer through 3 slots, 2 ahead; every layer, 1 slot.
  for (const auto& c : {offload_config(2, 1, 2), offload_config(0, 2, 3), offload_config(0, 1, 1)}) {
    SCOPED_TRACE("group_size " + std::to_string(c->group_size) + ", prefetch_step " + std::to_string(c->prefetch_step) +
                 ", slot_capacity " + std::to_string(c->slot_capacity));
    eager_.reset();
    graph_.reset();
    const uint64_t offload_before = tag_bytes(MemTag::kOffload);
    ASSERT_NO_FATAL_FAILURE(load_both(c));
    if (skipped_) return;
    const uint64_t ring = graph_->offloader()->ring_bytes();
    EXPECT_EQ(tag_bytes(MemTag::kOffload) - offload_before, 2 * ring);  // the two models' pools
    std::shared_ptr<Session> se, sg;
    ASSERT_NO_FATAL_FAILURE(sessions(&se, &sg));
    for (int t = 0; t < kSteps; ++t) {
      std::vector<float> out;
      ASSERT_NO_FATAL_FAILURE(both(se, sg, t, "step " + std::to_string(t), &out));
      EXPECT_LT(max_err(out, ref("out", t)), 1e-4) << "step " << t;
    }
    GraphStats s = stats();
    EXPECT_EQ(s.captures, 1u) << graph_text(s);
    EXPECT_EQ(s.capture_failures, 0u) << graph_text(s);
    EXPECT_EQ(s.replays, uint64_t(kSteps)) << graph_text(s);
    EXPECT_EQ(s.eager_runs, 0u) << graph_text(s);
    ASSERT_EQ(s.buckets.size(), 1u) << graph_text(s);
    // Every offloaded constant (norm, w1, w2 of each offloaded layer) is copied once a run: a
    // memcpy node whose source is a patch.
    EXPECT_GE(s.buckets[0].patches, 3u * graph_->offloader()->num_offloaded_layers())
        << "the copy nodes' sources are not in the plan: " << graph_text(s);
    EXPECT_EQ(tag_bytes(MemTag::kOffload) - offload_before, 3 * ring) << "a set of graphs has one ring of its own";
    EXPECT_EQ(graph_->offloader()->captured_storage(), 0u) << "a re-pointed capture keeps no generation";
    EXPECT_FALSE(graph_->offloader()->held());
  }
}

// 100 steps, each after a random one of: an update of an offloaded layer into the inactive
// generation and a swap, an in-place update, a rollback, a switch to another pair of sessions
// (new or earlier), or nothing. Every step replays and equals the eager run bit for bit; a
// run begun before a swap finishes on its generation.
TEST_F(OffloadModelGraphGpu, ReplaysFollowUpdatesSwapsRollbacksAndSessions) {
  ASSERT_NO_FATAL_FAILURE(load_both(offload_config(2, 1, 2)));
  if (skipped_) return;
  const std::vector<int> offloaded = {1, 3, 5};
  std::vector<std::pair<std::shared_ptr<Session>, std::shared_ptr<Session>>> pairs(1);
  ASSERT_NO_FATAL_FAILURE(sessions(&pairs[0].first, &pairs[0].second));
  size_t cur = 0;
  std::mt19937 rng(25);
  int swaps = 0, in_place = 0, rollbacks = 0, switches = 0;
  for (int i = 0; i < 100; ++i) {
    std::string action = "nothing";
    switch (rng() % 5) {
      case 0: {
        const int layer = offloaded[rng() % offloaded.size()];
        const float scale = 0.5f + float(rng() % 100) / 100.0f;
        action = "update of layer " + std::to_string(layer) + " x" + std::to_string(scale) + " and swap";
        ASSERT_NO_FATAL_FAILURE(update_both(layer, scale, false, action));
        ++swaps;
        break;
      }
      case 1: {
        const int layer = offloaded[rng() % offloaded.size()];
        const float scale = 0.5f + float(rng() % 100) / 100.0f;
        action = "in-place update of layer " + std::to_string(layer) + " x" + std::to_string(scale);
        ASSERT_NO_FATAL_FAILURE(update_both(layer, scale, true, action));
        ++in_place;
        break;
      }
      case 2:
        if (swaps == 0) break;  // nothing to roll back to yet
        action = "rollback";
        ASSERT_NO_FATAL_FAILURE(rollback_both(action));
        ++rollbacks;
        break;
      case 3:
        action = "session switch";
        if (pairs.size() < 4 && rng() % 2 == 0) {
          pairs.emplace_back();
          ASSERT_NO_FATAL_FAILURE(sessions(&pairs.back().first, &pairs.back().second));
          cur = pairs.size() - 1;
        } else {
          cur = (cur + 1) % pairs.size();
        }
        ++switches;
        break;
      default:
        break;
    }
    const std::string context = "step " + std::to_string(i) + " after " + action;
    ASSERT_NO_FATAL_FAILURE(both(pairs[cur].first, pairs[cur].second, i, context));
  }
  EXPECT_GT(swaps, 0);
  EXPECT_GT(in_place, 0);
  EXPECT_GT(rollbacks, 0);
  EXPECT_GT(switches, 0);
  // A run begun before an update and swap finishes on the generation it pinned; the same
  // step from the same state (a fork) after the swap reads the update.
  std::shared_ptr<Session> fe, fg;
  ASSERT_TRUE(pairs[cur].first->fork(&fe).ok());
  ASSERT_TRUE(pairs[cur].second->fork(&fg).ok());
  std::unique_ptr<wharf::Run> re, rg;
  ASSERT_TRUE(wharf::Run::begin(eager_->container(), pairs[cur].first, nullptr, &re).ok());
  ASSERT_TRUE(wharf::Run::begin(graph_->container(), pairs[cur].second, nullptr, &rg).ok());
  ASSERT_NO_FATAL_FAILURE(update_both(3, 3.0f, false, "the update under an open run"));
  std::vector<float> before_swap, after_swap;
  ASSERT_NO_FATAL_FAILURE(both_in(*re, *rg, 100, "a run begun before the swap", &before_swap));
  ASSERT_TRUE(re->end().ok());
  ASSERT_TRUE(rg->end().ok());
  ASSERT_NO_FATAL_FAILURE(both(fe, fg, 100, "the same step after the swap", &after_swap));
  EXPECT_NE(before_swap, after_swap) << "the update changes nothing: a vacuous test";
  GraphStats s = stats();
  EXPECT_EQ(s.eager_runs, 0u) << graph_text(s);
  EXPECT_EQ(s.replays, 102u) << graph_text(s);
  EXPECT_EQ(s.captures, 1u) << graph_text(s);
  EXPECT_GT(s.repoints, 0u) << "swaps and session switches re-point: " << graph_text(s);
}

// Two runs open at once replay from two sets of graphs, each with a ring of its own: the
// second run's replay does not wait for, or write into, the first's slots.
TEST_F(OffloadModelGraphGpu, ConcurrentRunsReplayFromTheirOwnSetsAndRings) {
  const uint64_t offload_before = tag_bytes(MemTag::kOffload);
  ASSERT_NO_FATAL_FAILURE(load_both(offload_config(0, 1, 2)));
  if (skipped_) return;
  const uint64_t ring = graph_->offloader()->ring_bytes();
  std::shared_ptr<Session> se1, sg1, se2, sg2;
  ASSERT_NO_FATAL_FAILURE(sessions(&se1, &sg1));
  ASSERT_NO_FATAL_FAILURE(sessions(&se2, &sg2));
  for (int t = 0; t < 3; ++t) {
    std::unique_ptr<wharf::Run> re1, rg1, re2, rg2;
    ASSERT_TRUE(wharf::Run::begin(eager_->container(), se1, nullptr, &re1).ok());
    ASSERT_TRUE(wharf::Run::begin(graph_->container(), sg1, nullptr, &rg1).ok());
    ASSERT_TRUE(wharf::Run::begin(eager_->container(), se2, nullptr, &re2).ok());
    ASSERT_TRUE(wharf::Run::begin(graph_->container(), sg2, nullptr, &rg2).ok());
    ASSERT_NO_FATAL_FAILURE(both_in(*re1, *rg1, t, "first run, step " + std::to_string(t)));
    ASSERT_NO_FATAL_FAILURE(both_in(*re2, *rg2, t + 2, "second run, step " + std::to_string(t)));
    for (auto* r : {re1.get(), rg1.get(), re2.get(), rg2.get()}) ASSERT_TRUE(r->end().ok());
  }
  GraphStats s = stats();
  EXPECT_EQ(s.eager_runs, 0u) << graph_text(s);
  EXPECT_EQ(s.replays, 6u) << graph_text(s);
  ASSERT_EQ(s.buckets.size(), 2u) << graph_text(s);
  EXPECT_NE(s.buckets[0].set, s.buckets[1].set) << graph_text(s);
  EXPECT_EQ(tag_bytes(MemTag::kOffload) - offload_before, 4 * ring) << "two pools and a ring per set";
}

// A capture that fails (an uncapturable call) leaves the run eager with the reason, nothing
// half-captured, and the offloader released and usable: the eager runs that follow are right.
TEST_F(OffloadModelGraphGpu, AFailedCaptureRunsEagerlyAndLeavesTheOffloaderUsable) {
  GraphOptions go;
  go.test_break_capture = true;
  const uint64_t offload_before = tag_bytes(MemTag::kOffload);
  ASSERT_NO_FATAL_FAILURE(load_both(offload_config(2, 1, 2), go));
  if (skipped_) return;
  std::shared_ptr<Session> se, sg;
  ASSERT_NO_FATAL_FAILURE(sessions(&se, &sg));
  for (int t = 0; t < 3; ++t) ASSERT_NO_FATAL_FAILURE(both(se, sg, t, "step " + std::to_string(t)));
  GraphStats s = stats();
  EXPECT_EQ(s.captures, 0u) << graph_text(s);
  EXPECT_EQ(s.capture_failures, 1u) << graph_text(s);
  EXPECT_EQ(s.replays, 0u) << graph_text(s);
  EXPECT_EQ(s.eager_runs, 3u) << graph_text(s);
  EXPECT_NE(s.last_eager_reason.find("capturing a graph for inputs"), std::string::npos) << graph_text(s);
  EXPECT_EQ(s.pool_bytes, 0u) << graph_text(s);
  EXPECT_EQ(tag_bytes(MemTag::kOffload) - offload_before, 2 * graph_->offloader()->ring_bytes())
      << "the failed capture's ring stayed allocated";
  EXPECT_FALSE(graph_->offloader()->held());
}

// While another run holds the offloader (a caller's lease), a run that would capture cannot:
// it runs eagerly, which answers BUSY as without graphs; the shape is not marked failed, and
// the next run captures it and replays.
TEST_F(OffloadModelGraphGpu, ABusyOffloaderDelaysTheCaptureWithoutFailingIt) {
  ASSERT_NO_FATAL_FAILURE(load_both(offload_config(2, 1, 2)));
  if (skipped_) return;
  std::shared_ptr<Session> sg, other;
  ASSERT_TRUE(Session::create(rt_, {graph_->container()}, SessionOptions{}, &sg).ok());
  ASSERT_TRUE(Session::create(rt_, {graph_->container()}, SessionOptions{}, &other).ok());
  std::unique_ptr<wharf::Run> holder;
  ASSERT_TRUE(wharf::Run::begin(graph_->container(), other, nullptr, &holder).ok());
  ASSERT_TRUE(graph_->offloader()->begin(*holder).ok());
  std::vector<float> out;
  Status st = step(*graph_, sg, 0, &out);
  EXPECT_EQ(st.code(), Code::kBusy) << st.message();
  GraphStats s = stats();
  EXPECT_EQ(s.capture_failures, 0u) << graph_text(s);
  EXPECT_EQ(s.eager_runs, 1u) << graph_text(s);
  EXPECT_NE(s.last_eager_reason.find("must wait"), std::string::npos) << graph_text(s);
  ASSERT_TRUE(holder->end().ok());  // ends its offloading too
  std::shared_ptr<Session> se;
  ASSERT_TRUE(Session::create(rt_, {eager_->container()}, SessionOptions{}, &se).ok());
  for (int t = 0; t < 2; ++t) ASSERT_NO_FATAL_FAILURE(both(se, sg, t, "step " + std::to_string(t)));
  s = stats();
  EXPECT_EQ(s.captures, 1u) << graph_text(s);
  EXPECT_EQ(s.replays, 2u) << graph_text(s);
}

// ---- Graphs of several input shapes of an offloaded model (issue 25) ----------------------
//
// tests/data/models/offload_tiny_dyn (tools/aoti/compile_offload_model.py --dynamic-rows): the
// same model with the input's rows dynamic (1..16). A set of graphs holds a graph per exact
// input shape, all bound to the set's one ring of offload slots: the ring holds layer weights
// (slot_bytes does not depend on the rows) and the set's replays never overlap, so its graphs
// can share it. Its reference is one conversation whose row counts alternate 2, 4, 8, 2, 4, 8
// (x.step{t}.rows{R}, out..., out_updated...: layer 3 updated after step 2). Skipped, saying
// so, until the model's files are there ($WHARF_OFFLOAD_DYN_MODEL_DIR, else the test data).

// Named OffloadModelGraphGpu* so that scripts/gpu-run.sh runs it with the other graph suites
// (memcheck without API-error reports: the plan probes kernel parameters with cuFuncGetParamInfo).
class OffloadModelGraphGpuShapes : public ::testing::Test, public EagerGraphPair {
 protected:
  static constexpr int kSeqSteps = 6;

  void SetUp() override {
    int n = 0;
    if (cudaGetDeviceCount(&n) != cudaSuccess || n == 0) GTEST_SKIP() << "no CUDA device";
    dir_ = data_dir("WHARF_OFFLOAD_DYN_MODEL_DIR", "offload_tiny_dyn");
    if (!exists(dir_ + "/offload_tiny_dyn.so"))
      GTEST_SKIP() << "no dynamic-rows model at " << dir_
                   << " (made by tools/aoti/compile_offload_model.py --dynamic-rows on the GPU machine)";
    RuntimeOptions ro;
    ro.backend = 1;  // CUDA
    ASSERT_TRUE(Runtime::create(ro, &rt_).ok());
    Status st = ConstantMap::load_safetensors(dir_ + "/offload_tiny_dyn.safetensors", &weights_);
    ASSERT_TRUE(st.ok()) << st.message();
    st = ConstantMap::load_safetensors(dir_ + "/reference.safetensors", &ref_);
    ASSERT_TRUE(st.ok()) << st.message();
    const MapEntry* r = ref_->find("rows");
    ASSERT_NE(r, nullptr) << "the reference has no row sequence";
    ASSERT_EQ(r->meta.dtype, DType::kI64);
    ASSERT_EQ(r->meta.nbytes(), kSeqSteps * sizeof(int64_t));
    rows_.assign(static_cast<const int64_t*>(r->data), static_cast<const int64_t*>(r->data) + kSeqSteps);
    ASSERT_EQ(rows_, (std::vector<int64_t>{2, 4, 8, 2, 4, 8}));
    for (int t = 0; t < kSeqSteps; ++t)
      for (const char* what : {"x", "out", "out_updated"}) {
        const MapEntry* e = ref_->find(ref_name(what, t));
        ASSERT_NE(e, nullptr) << ref_name(what, t);
        ASSERT_EQ(e->meta.shape, (std::vector<int64_t>{rows_[size_t(t)], kDim})) << ref_name(what, t);
      }
  }

  std::string ref_name(const char* what, int t) const {
    return std::string(what) + ".step" + std::to_string(t) + ".rows" + std::to_string(rows_[size_t(t)]);
  }
  const float* ref(const char* what, int t) const {
    return static_cast<const float*>(ref_->find(ref_name(what, t))->data);
  }
  size_t elems(int t) const { return size_t(rows_[size_t(t)]) * kDim; }
  double max_err(const std::vector<float>& got, const float* want) const {
    double e = 0;
    for (size_t i = 0; i < got.size(); ++i) e = std::max(e, double(std::fabs(got[i] - want[i])));
    return e;
  }
  uint64_t tag_bytes(MemTag t) { return rt_->device().accounting().snapshot().current[size_t(t)]; }

  const std::shared_ptr<Runtime>& pair_runtime() const override { return rt_; }
  const ConstantMap& loaded_weights() const override { return *weights_; }
  Status load(std::shared_ptr<const OffloaderConfig> offload, std::shared_ptr<Model>* out) override {
    ModelOptions mo;
    if (const char* shim = std::getenv("WHARF_AOTI_SHIM")) mo.shim_path = shim;
    mo.offload = std::move(offload);
    return Model::load(rt_, dir_ + "/offload_tiny_dyn.so", *weights_, mo, out);
  }
  // Both models offloaded alike; graphs of exact shapes on `graph_`.
  void load_both(std::shared_ptr<const OffloaderConfig> offload) {
    GraphOptions go;
    go.exact_shapes = true;
    EagerGraphPair::load_both(std::move(offload), go);
  }

  // Reference step t's input (its row count) through model m in `run`; the output on the host.
  Status step_in(Model& m, wharf::Run& run, int t, std::vector<float>* out) {
    return run_rows(m, run, ref("x", t), rows_[size_t(t)], out);
  }
  void both_in(wharf::Run& re, wharf::Run& rg, int t, const std::string& context,
               std::vector<float>* out = nullptr) override {
    std::vector<float> oe, og;
    Status st = step_in(*eager_, re, t, &oe);
    ASSERT_TRUE(st.ok()) << context << ": eager: " << st.message();
    st = step_in(*graph_, rg, t, &og);
    ASSERT_TRUE(st.ok()) << context << ": graph: " << st.message() << "; " << graph_text(stats());
    ASSERT_EQ(oe.size(), og.size());
    ASSERT_EQ(std::memcmp(oe.data(), og.data(), oe.size() * 4), 0)
        << context << " (" << rows_[size_t(t)] << " rows): the replay's outputs differ from the eager run's; "
        << graph_text(stats());
    if (out) *out = std::move(oe);
  }
  // The reference's update (layer 3's w1 and w2) into both containers' inactive generation, swapped.
  void reference_update_both() {
    ConstantMap u;
    for (const char* w : {"w1", "w2"}) {
      const std::string fqn = "layers." + std::to_string(kUpdatedLayer) + "." + w + ".weight";
      const MapEntry* e = ref_->find("update." + fqn);
      ASSERT_NE(e, nullptr) << "update." << fqn;
      ASSERT_TRUE(u.set(fqn, e->meta, e->data).ok());
    }
    for (Model* m : {eager_.get(), graph_.get()}) {
      Status st = m->container()->update(u, UpdateOptions{});
      ASSERT_TRUE(st.ok()) << st.message();
      ASSERT_TRUE(m->container()->swap().ok());
    }
  }
  std::string dir_;
  std::vector<int64_t> rows_;
  std::shared_ptr<Runtime> rt_;
  std::unique_ptr<ConstantMap> weights_, ref_;
};

// Runs of 2, 4 and 8 rows alternate on one set of graphs: a graph per shape, captured once,
// all copying the offloaded layers into the set's one ring. Every run equals the eager run bit
// for bit and PyTorch's within rounding, through the reference's update and swap of an
// offloaded layer (layer 3), a rollback, and an in-place update of another (layer 1).
TEST_F(OffloadModelGraphGpuShapes, ShapesAlternatingShareTheSetsRingBitForBit) {
  const uint64_t offload_before = tag_bytes(MemTag::kOffload);
  ASSERT_NO_FATAL_FAILURE(load_both(offload_config(2, 1, 2)));  // layers 1, 3, 5 through 2 slots
  if (skipped_) return;
  ASSERT_TRUE(graph_->offloader()->is_offloaded_layer(kUpdatedLayer));
  ASSERT_TRUE(graph_->offloader()->is_offloaded_layer(1));
  const uint64_t ring = graph_->offloader()->ring_bytes();
  int runs = 0;

  // The reference conversation: steps 0-2 on the loaded weights, the update and swap, 3-5.
  std::shared_ptr<Session> se, sg;
  ASSERT_NO_FATAL_FAILURE(sessions(&se, &sg));
  for (int t = 0; t < kSeqSteps; ++t) {
    if (t == kUpdateAfter) ASSERT_NO_FATAL_FAILURE(reference_update_both());
    std::vector<float> out;
    ASSERT_NO_FATAL_FAILURE(both(se, sg, t, "step " + std::to_string(t), &out));
    ++runs;
    EXPECT_LT(max_err(out, ref("out_updated", t)), 1e-4) << "step " << t;
    if (t < kUpdateAfter) EXPECT_LT(max_err(out, ref("out", t)), 1e-4) << "step " << t;
  }
  EXPECT_GT(max_err(std::vector<float>(ref("out", kUpdateAfter), ref("out", kUpdateAfter) + elems(kUpdateAfter)),
                    ref("out_updated", kUpdateAfter)),
            1e-3)
      << "the update changes nothing: a vacuous test";
  GraphStats s = stats();
  EXPECT_EQ(s.captures, 3u) << "one capture per shape: " << graph_text(s);

  // Rolled back: the conversation again, on fresh sessions, is PyTorch's without the update.
  for (Model* m : {eager_.get(), graph_.get()}) ASSERT_TRUE(m->container()->swap().ok());
  ASSERT_NO_FATAL_FAILURE(sessions(&se, &sg));
  for (int t = 0; t < kSeqSteps; ++t) {
    std::vector<float> out;
    ASSERT_NO_FATAL_FAILURE(both(se, sg, t, "after the rollback, step " + std::to_string(t), &out));
    ++runs;
    EXPECT_LT(max_err(out, ref("out", t)), 1e-4) << "after the rollback, step " << t;
  }

  // An in-place update of layer 1, then the shapes in another order (8, 2, 4, ...) on the same
  // sessions: equal to the eager runs.
  ASSERT_NO_FATAL_FAILURE(update_both(1, 0.75f, true, "the in-place update of layer 1"));
  for (int t : {2, 0, 1, 5, 3, 4}) {
    ASSERT_NO_FATAL_FAILURE(both(se, sg, t, "after an in-place update, reference input " + std::to_string(t)));
    ++runs;
  }

  s = stats();
  EXPECT_EQ(s.captures, 3u) << "one capture per shape: " << graph_text(s);
  EXPECT_EQ(s.capture_failures, 0u) << graph_text(s);
  EXPECT_EQ(s.replays, uint64_t(runs)) << graph_text(s);
  EXPECT_EQ(s.eager_runs, 0u) << graph_text(s);
  ASSERT_EQ(s.buckets.size(), 3u) << graph_text(s);
  for (const auto& b : s.buckets) {
    EXPECT_EQ(b.set, s.buckets[0].set) << "one set holds the three shapes: " << graph_text(s);
    EXPECT_EQ(b.size, -1) << "exact shapes: " << graph_text(s);
    EXPECT_GE(b.patches, 3u * graph_->offloader()->num_offloaded_layers())
        << "a graph's copy nodes are not in its plan: " << graph_text(s);
  }
  EXPECT_NE(s.buckets[0].shapes, s.buckets[1].shapes) << graph_text(s);
  EXPECT_NE(s.buckets[1].shapes, s.buckets[2].shapes) << graph_text(s);
  EXPECT_NE(s.buckets[0].shapes, s.buckets[2].shapes) << graph_text(s);
  EXPECT_EQ(tag_bytes(MemTag::kOffload) - offload_before, 3 * ring)
      << "the two models' pools and one ring for the set's three graphs";
  EXPECT_EQ(graph_->offloader()->captured_storage(), 0u);
  EXPECT_FALSE(graph_->offloader()->held());
}

// Two runs open at once, each alternating shapes: two sets, each with a graph per shape and
// a ring of its own; every run equals the eager run bit for bit.
TEST_F(OffloadModelGraphGpuShapes, ConcurrentSetsEachHoldTheirShapesAndRing) {
  const uint64_t offload_before = tag_bytes(MemTag::kOffload);
  ASSERT_NO_FATAL_FAILURE(load_both(offload_config(0, 1, 2)));  // every layer through 2 slots
  if (skipped_) return;
  const uint64_t ring = graph_->offloader()->ring_bytes();
  std::shared_ptr<Session> se1, sg1, se2, sg2;
  ASSERT_NO_FATAL_FAILURE(sessions(&se1, &sg1));
  ASSERT_NO_FATAL_FAILURE(sessions(&se2, &sg2));
  for (int t = 0; t < kSeqSteps; ++t) {
    std::unique_ptr<wharf::Run> re1, rg1, re2, rg2;
    ASSERT_TRUE(wharf::Run::begin(eager_->container(), se1, nullptr, &re1).ok());
    ASSERT_TRUE(wharf::Run::begin(graph_->container(), sg1, nullptr, &rg1).ok());
    ASSERT_TRUE(wharf::Run::begin(eager_->container(), se2, nullptr, &re2).ok());
    ASSERT_TRUE(wharf::Run::begin(graph_->container(), sg2, nullptr, &rg2).ok());
    // The second run one shape ahead of the first: the two open runs differ in shape.
    ASSERT_NO_FATAL_FAILURE(both_in(*re1, *rg1, t, "first run, step " + std::to_string(t)));
    ASSERT_NO_FATAL_FAILURE(both_in(*re2, *rg2, (t + 1) % kSeqSteps, "second run, step " + std::to_string(t)));
    for (auto* r : {re1.get(), rg1.get(), re2.get(), rg2.get()}) ASSERT_TRUE(r->end().ok());
  }
  GraphStats s = stats();
  EXPECT_EQ(s.eager_runs, 0u) << graph_text(s);
  EXPECT_EQ(s.capture_failures, 0u) << graph_text(s);
  EXPECT_EQ(s.replays, 2u * kSeqSteps) << graph_text(s);
  EXPECT_EQ(s.captures, 6u) << "three shapes in each of two sets: " << graph_text(s);
  ASSERT_EQ(s.buckets.size(), 6u) << graph_text(s);
  std::vector<uint32_t> sets;
  for (const auto& b : s.buckets)
    if (std::find(sets.begin(), sets.end(), b.set) == sets.end()) sets.push_back(b.set);
  EXPECT_EQ(sets.size(), 2u) << graph_text(s);
  EXPECT_EQ(tag_bytes(MemTag::kOffload) - offload_before, 4 * ring) << "two pools and a ring per set";
  EXPECT_FALSE(graph_->offloader()->held());
}

}  // namespace
}  // namespace wharf

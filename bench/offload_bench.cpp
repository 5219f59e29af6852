// SPDX-License-Identifier: Apache-2.0
// offload_bench: the step time of a model whose layers are partly offloaded to pinned host
// memory (Wharf's offloader, lease-level API), beside the bound prefetch can at best reach,
// max(compute time, offloaded bytes / pinned H2D bandwidth), both measured in the same run.
//
// The model: --layers N (16) layers, each a weight of --layer-mib MiB (32) of F32 read by one
// kernel (bench/offload_bench_kernels.cu) doing `work` dependent FMAs per element; `work` is
// calibrated so that a layer computes for --compute-ratio (1.0) times its weight's pinned H2D
// copy time. A step: wharf_run_begin, wharf_run_begin_offload, then per layer
// wharf_run_wait_offload (or wharf_run_get_tensor for a resident layer), the kernel,
// wharf_run_mark_offload_issued; wharf_run_end_offload, wharf_run_end; timed with CUDA events on
// the run's stream. Configurations: 0, N/4, N/2 and N layers offloaded (vLLM's group
// selection: group_size 4, 2, every layer), prefetch_step --prefetch (1), --slots (2) slots.
//
//   compute   the resident step (0 offloaded) in the same run
//   copy      k x layer bytes copied pinned -> device on one stream (cudaMemcpyAsync), timed
//   bound     max(compute, copy); ratio = step / bound (target <= 1.10)
//   device    Wharf's device accounting after loading (constants + slot pool), and the
//             device memory the configuration took per cudaMemGetInfo; saved = resident - this
//   budget    the offloader's own estimate at creation (step_compute_us = the measured compute
//             time, h2d measured by the offloader): the copy time prefetch cannot hide
// Plus the N/2 configuration captured into a CUDA graph and replayed. Medians of --reps (7)
// steps after 2 warm-up steps, with min and max.
//
// --model DIR (tests/data/models/offload_tiny; "-": found as model_bench finds its model)
// measures the compiled offloaded model instead: its 6 layers call wharf::offload_wait /
// offload_issued at their boundaries; resident, 3 of 6 layers offloaded (2 slots) and 6 of 6
// (3 slots, 2 ahead), each run eagerly and replayed from CUDA graphs (wharf_model_enable_graphs:
// the layers' copies are graph nodes into the set's own ring). Per configuration: the step
// (wharf_run_begin, wharf_model_run with a host input, wharf_run_end; blocks of 200 steps,
// the stream synchronised after each block), the host time of those three calls, and the step
// right after an update and swap of an offloaded layer (layers.1.w1.weight; the graph
// re-points its copy nodes) beside the step after it, each synchronised. Graph rows also print
// their replays and eager runs (wharf_model_get_graph_stats).
//
// usage: offload_bench [--layers N] [--layer-mib M] [--compute-ratio R] [--prefetch K]
//                      [--slots S] [--reps N] [--csv PATH]
//        offload_bench --model DIR [--reps N]
#include <cuda_runtime.h>

#include <algorithm>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <string>
#include <sys/stat.h>
#include <vector>

#define WHARF_EXPERIMENTAL 1
#include "bench_common.h"
#include "offload_bench_kernels.h"
#include "wharf/wharf.h"

namespace {

using namespace bench;

struct Params {
  int layers = 16;
  double layer_mib = 32;
  double compute_ratio = 1.0;
  uint32_t prefetch = 1, slots = 2;
  int reps = 7;
  const char* csv = nullptr;
  int64_t elems = 0;  // per layer
  int work = 0;
};

struct Stat {
  double median = 0, min = 0, max = 0;
};
Stat stat_of(const std::vector<double>& v) {
  Stat s;
  s.median = median(v);
  s.min = *std::min_element(v.begin(), v.end());
  s.max = *std::max_element(v.begin(), v.end());
  return s;
}

std::string wname(int L) { return "layers." + std::to_string(L) + ".w"; }

uint64_t device_current(wharf_runtime* rt) {
  wharf_memory_stats ms;
  std::memset(&ms, 0, sizeof ms);
  ms.struct_size = sizeof ms;
  wharf_ok(wharf_runtime_get_memory_stats(rt, &ms), "memory stats");
  return ms.device_current;
}

// A loaded configuration: its container (offloaded layers host-placed), offloader, and memory.
struct Config {
  std::string name;
  uint32_t group_size = 0;  // 0 with offload: every layer
  bool offload = false;
  wharf_container* c = nullptr;
  wharf_offloader* off = nullptr;
  std::vector<int64_t> index;  // per layer: constant index
  uint32_t offloaded = 0;
  uint64_t wharf_device = 0, mgi_device = 0;
  wharf_offloader_budget budget{};
  Stat step_ms, copy_ms;
  double bound_ms = 0, ratio = 0;
};

bool offloaded_layer(const Config& cf, int L) {
  return cf.offload && (cf.group_size == 0 || uint32_t(L) % cf.group_size == cf.group_size - 1);
}

void load(wharf_runtime* rt, const Params& p, const void* host_w, uint64_t compute_us, Config* cf) {
  const uint64_t free0 = free_device_bytes();
  const uint64_t dev0 = device_current(rt);
  std::vector<std::string> names;
  std::vector<wharf_constant_decl> decls(size_t(p.layers));
  for (int L = 0; L < p.layers; ++L) names.push_back(wname(L));
  for (int L = 0; L < p.layers; ++L) {
    wharf_constant_decl& d = decls[size_t(L)];
    std::memset(&d, 0, sizeof d);
    d.struct_size = sizeof d;
    d.fqn = names[size_t(L)].c_str();
    d.dtype = WHARF_DTYPE_F32;
    d.ndim = 1;
    d.shape = &p.elems;
    d.placement = offloaded_layer(*cf, L) ? WHARF_PLACEMENT_HOST : WHARF_PLACEMENT_DEVICE;
  }
  wharf_container_options co;
  wharf_container_options_init(&co);
  co.name = cf->name.c_str();
  co.constants = decls.data();
  co.num_constants = decls.size();
  wharf_ok(wharf_container_create(rt, &co, &cf->c), "container create");
  wharf_constant_map* m = nullptr;
  wharf_ok(wharf_constant_map_create(&m), "map create");
  for (int L = 0; L < p.layers; ++L) {
    wharf_tensor_view v{sizeof(wharf_tensor_view),
                        0,
                        const_cast<void*>(host_w),
                        WHARF_DTYPE_F32,
                        WHARF_DEVICE_CPU,
                        0,
                        1,
                        &p.elems,
                        nullptr};
    wharf_ok(wharf_constant_map_set(m, names[size_t(L)].c_str(), &v), "map set");
  }
  wharf_ok(wharf_container_update(cf->c, m, nullptr), "update");
  wharf_ok(wharf_container_swap(cf->c), "swap");
  wharf_constant_map_free(m);
  for (int L = 0; L < p.layers; ++L)
    cf->index.push_back(wharf_container_find_constant(cf->c, names[size_t(L)].c_str()));
  if (cf->offload) {
    wharf_offloader_options oo;
    wharf_offloader_options_init(&oo);
    oo.group_size = cf->group_size;
    oo.prefetch_step = p.prefetch;
    oo.slot_capacity = p.slots;
    oo.step_compute_us = compute_us;
    wharf_ok(wharf_offloader_create(cf->c, &oo, &cf->off), "offloader create");
    std::memset(&cf->budget, 0, sizeof cf->budget);
    cf->budget.struct_size = sizeof cf->budget;
    wharf_ok(wharf_offloader_get_budget(cf->off, &cf->budget), "budget");
    cf->offloaded = cf->budget.num_offloaded_layers;
  }
  CUDA_OK(cudaDeviceSynchronize());
  cf->wharf_device = device_current(rt) - dev0;
  cf->mgi_device = free0 - free_device_bytes();
}

void unload(Config* cf) {
  wharf_offloader_free(cf->off);
  wharf_container_free(cf->c);
  cf->off = nullptr;
  cf->c = nullptr;
  CUDA_OK(cudaDeviceSynchronize());
}

// Enqueues one step's layers in run `r` (whose stream is `s`; it may be capturing).
void layers(const Params& p, Config& cf, wharf_run* r, cudaStream_t s, float* h) {
  if (cf.off) wharf_ok(wharf_run_begin_offload(r, cf.off), "offload begin");
  for (int L = 0; L < p.layers; ++L) {
    wharf_tensor_view v;
    std::memset(&v, 0, sizeof v);
    v.struct_size = sizeof v;
    if (cf.off && wharf_offloader_num_layer_constants(cf.off, uint32_t(L)) > 0) {
      wharf_ok(wharf_run_wait_offload(r, cf.off, uint32_t(L), &v, 1), "offload wait");
    } else {
      wharf_ok(wharf_run_get_tensor_at(r, size_t(cf.index[size_t(L)]), &v), "run tensor");
    }
    CUDA_OK(offload_bench::launch_layer(s, h, static_cast<const float*>(v.data), p.elems, p.work));
    if (cf.off) wharf_ok(wharf_run_mark_offload_issued(r, cf.off, uint32_t(L)), "offload issued");
  }
  if (cf.off) wharf_ok(wharf_run_end_offload(r, cf.off), "offload end");
}

// One step: a run on `s` and its layers.
void step(const Params& p, Config& cf, cudaStream_t s, float* h) {
  wharf_run* r = nullptr;
  wharf_ok(wharf_run_begin(cf.c, nullptr, s, &r), "run begin");
  layers(p, cf, r, s, h);
  wharf_ok(wharf_run_end(r), "run end");
}

// Milliseconds of each of `reps` calls of f (which enqueues on s), after 2 warm-ups.
template <class F>
std::vector<double> time_ms(cudaStream_t s, int reps, F&& f) {
  cudaEvent_t a, b;
  CUDA_OK(cudaEventCreate(&a));
  CUDA_OK(cudaEventCreate(&b));
  std::vector<double> v;
  for (int i = 0; i < reps + 2; ++i) {
    CUDA_OK(cudaEventRecord(a, s));
    f();
    CUDA_OK(cudaEventRecord(b, s));
    CUDA_OK(cudaEventSynchronize(b));
    float ms = 0;
    CUDA_OK(cudaEventElapsedTime(&ms, a, b));
    if (i >= 2) v.push_back(ms);
  }
  CUDA_OK(cudaEventDestroy(a));
  CUDA_OK(cudaEventDestroy(b));
  return v;
}

// ---- --model: the compiled offloaded model, eager and from graphs ----------------------------

struct ModelRow {
  std::string config, mode;
  Spread step_us, host_us, swap_us, next_us;
  uint64_t replays = 0, eager = 0;
  std::string reason;
};

// One configuration of the compiled model: `offload` null = resident.
ModelRow model_row(wharf_runtime* rt, const std::string& dir, const wharf_constant_map* weights,
                   const wharf_offloader_options* offload, bool graphs, const std::string& config, int reps,
                   cudaStream_t s) {
  ModelRow row;
  row.config = config;
  row.mode = graphs ? "graph" : "eager";
  wharf_model_options mo;
  wharf_model_options_init(&mo);
  mo.shim_path = std::getenv("WHARF_AOTI_SHIM");
  mo.offload = offload;
  wharf_model* m = nullptr;
  wharf_ok(wharf_model_load(rt, (dir + "/offload_tiny.so").c_str(), weights, &mo, &m), "model load");
  if (graphs) wharf_ok(wharf_model_enable_graphs(m, nullptr), "enable graphs");
  wharf_container* c = wharf_model_container(m);
  wharf_session* sess = nullptr;
  wharf_ok(wharf_session_create(rt, &c, 1, nullptr, &sess), "session");
  const int64_t shape[2] = {4, 64};
  std::vector<float> x(4 * 64);
  for (size_t i = 0; i < x.size(); ++i) x[i] = 0.01f * float(i % 97) - 0.4f;
  wharf_tensor_view in = tensor_view(x.data(), WHARF_DTYPE_F32, WHARF_DEVICE_CPU, 2, shape);
  // One step; returns its host time (begin + model run + end).
  auto step = [&] {
    const auto t0 = Clock::now();
    wharf_run* r = nullptr;
    wharf_ok(wharf_run_begin(c, sess, s, &r), "run begin");
    wharf_tensor_view out;
    std::memset(&out, 0, sizeof out);
    out.struct_size = sizeof out;
    wharf_ok(wharf_model_run(m, r, &in, 1, &out, 1), "model run");
    wharf_ok(wharf_run_end(r), "run end");
    return us_since(t0);
  };
  for (int i = 0; i < 20; ++i) step();  // instances, the capture, the allocator
  CUDA_OK(cudaStreamSynchronize(s));
  const int block = 200;
  std::vector<double> wall, host;
  for (int rep = 0; rep < reps; ++rep) {
    double h = 0;
    const auto t0 = Clock::now();
    for (int i = 0; i < block; ++i) h += step();
    CUDA_OK(cudaStreamSynchronize(s));
    wall.push_back(us_since(t0) / block);
    host.push_back(h / block);
  }
  row.step_us = spread(wall);
  row.host_us = spread(host);
  // After an update and swap of an offloaded layer (resident: the same constant on the
  // device): the next step, then the one after it, each synchronised.
  wharf_tensor_view w;
  std::memset(&w, 0, sizeof w);
  w.struct_size = sizeof w;
  wharf_ok(wharf_constant_map_find(weights, "layers.1.w1.weight", &w), "find layers.1.w1.weight");
  std::vector<float> values(static_cast<const float*>(w.data),
                            static_cast<const float*>(w.data) + size_t(w.shape[0] * w.shape[1]));
  wharf_tensor_view v = tensor_view(values.data(), WHARF_DTYPE_F32, WHARF_DEVICE_CPU, 2, w.shape);
  wharf_constant_map* upd = nullptr;
  wharf_ok(wharf_constant_map_create(&upd), "map");
  wharf_ok(wharf_constant_map_set(upd, "layers.1.w1.weight", &v), "map set");
  std::vector<double> after, next;
  for (int rep = 0; rep < 20; ++rep) {
    wharf_ok(wharf_container_update(c, upd, nullptr), "update");
    wharf_ok(wharf_container_swap(c), "swap");
    auto t0 = Clock::now();
    step();
    CUDA_OK(cudaStreamSynchronize(s));
    after.push_back(us_since(t0));
    t0 = Clock::now();
    step();
    CUDA_OK(cudaStreamSynchronize(s));
    next.push_back(us_since(t0));
  }
  row.swap_us = spread(after);
  row.next_us = spread(next);
  if (graphs) {
    wharf_graph_stats gs;
    std::memset(&gs, 0, sizeof gs);
    gs.struct_size = sizeof gs;
    wharf_ok(wharf_model_get_graph_stats(m, &gs), "graph stats");
    row.replays = gs.replays;
    row.eager = gs.eager_runs;
    row.reason = gs.last_eager_reason;
  }
  wharf_constant_map_free(upd);
  wharf_session_free(sess);
  wharf_model_free(m);
  return row;
}

int model_mode(std::string dir, int reps) {
  if (dir == "-") {
    struct stat st;
    dir = ::stat("models/offload_tiny/offload_tiny.so", &st) == 0 ? "models/offload_tiny"
                                                                  : "tests/data/models/offload_tiny";
  }
  wharf_runtime_options ro;
  wharf_runtime_options_init(&ro);
  ro.backend = WHARF_BACKEND_CUDA;
  wharf_runtime* rt = nullptr;
  wharf_ok(wharf_runtime_create(&ro, &rt), "runtime");
  wharf_constant_map* weights = nullptr;
  wharf_ok(wharf_constant_map_load_safetensors((dir + "/offload_tiny.safetensors").c_str(), &weights), "weights");
  cudaStream_t s;
  CUDA_OK(cudaStreamCreateWithFlags(&s, cudaStreamNonBlocking));
  struct Cfg {
    const char* name;
    bool offload;
    uint32_t group_size, k, cap;
  };
  const Cfg cfgs[] = {
      {"resident", false, 0, 0, 0}, {"3 of 6, 2 slots", true, 2, 1, 2}, {"6 of 6, 3 slots", true, 0, 2, 3}};
  std::vector<ModelRow> rows;
  for (const Cfg& cf : cfgs) {
    wharf_offloader_options oo;
    wharf_offloader_options_init(&oo);
    oo.group_size = cf.group_size;
    oo.prefetch_step = cf.k;
    oo.slot_capacity = cf.cap;
    for (bool graphs : {false, true})
      rows.push_back(model_row(rt, dir, weights, cf.offload ? &oo : nullptr, graphs, cf.name, reps, s));
  }
  cudaDeviceProp prop;
  CUDA_OK(cudaGetDeviceProperties(&prop, 0));
  std::printf(
      "offload_bench --model on %s: %s (6 layers, input [4, 64] F32 from host memory), medians of %d blocks "
      "of 200 steps [min, max]; after swap: 20 updates of layers.1.w1.weight + swap\n",
      prop.name, dir.c_str(), reps);
  std::printf("%-16s %-6s %24s %24s %24s %24s %9s %6s\n", "config", "mode", "step us", "host us", "after swap us",
              "next step us", "replays", "eager");
  auto cell = [](const Spread& x) {
    char b[64];
    std::snprintf(b, sizeof b, "%.1f [%.1f, %.1f]", x.med, x.lo, x.hi);
    return std::string(b);
  };
  for (const ModelRow& r : rows) {
    std::printf("%-16s %-6s %24s %24s %24s %24s", r.config.c_str(), r.mode.c_str(), cell(r.step_us).c_str(),
                cell(r.host_us).c_str(), cell(r.swap_us).c_str(), cell(r.next_us).c_str());
    if (r.mode == "graph")
      std::printf(" %9llu %6llu%s%s\n", (unsigned long long)r.replays, (unsigned long long)r.eager,
                  r.reason.empty() ? "" : "  last eager: ", r.reason.c_str());
    else
      std::printf(" %9s %6s\n", "-", "-");
  }
  for (size_t i = 0; i + 1 < rows.size(); i += 2)
    std::printf("%-16s graph / eager step: %.2fx, host %.2fx\n", rows[i].config.c_str(),
                rows[i + 1].step_us.med / rows[i].step_us.med, rows[i + 1].host_us.med / rows[i].host_us.med);
  CUDA_OK(cudaStreamDestroy(s));
  wharf_constant_map_free(weights);
  wharf_runtime_free(rt);
  return 0;
}

}  // namespace

int main(int argc, char** argv) {
  Params p;
  for (int i = 1; i < argc; ++i)
    if (!std::strcmp(argv[i], "--model") && i + 1 < argc) {
      std::string dir = argv[i + 1];
      int reps = 7;
      for (int j = 1; j < argc; ++j)
        if (!std::strcmp(argv[j], "--reps") && j + 1 < argc) reps = std::max(1, std::atoi(argv[j + 1]));
      return model_mode(dir, reps);
    }
  for (int i = 1; i < argc; ++i) {
    auto is = [&](const char* f) { return !std::strcmp(argv[i], f) && i + 1 < argc; };
    if (is("--layers"))
      p.layers = std::atoi(argv[++i]);
    else if (is("--layer-mib"))
      p.layer_mib = std::atof(argv[++i]);
    else if (is("--compute-ratio"))
      p.compute_ratio = std::atof(argv[++i]);
    else if (is("--prefetch"))
      p.prefetch = uint32_t(std::atoi(argv[++i]));
    else if (is("--slots"))
      p.slots = uint32_t(std::atoi(argv[++i]));
    else if (is("--reps"))
      p.reps = std::atoi(argv[++i]);
    else if (is("--csv"))
      p.csv = argv[++i];
    else {
      std::fprintf(stderr,
                   "usage: offload_bench [--layers N] [--layer-mib M] [--compute-ratio R] [--prefetch K] "
                   "[--slots S] [--reps N] [--csv PATH]\n       offload_bench --model DIR|- [--reps N]\n");
      return 1;
    }
  }
  if (p.layers < 4 || p.layer_mib <= 0 || p.reps < 1 || p.compute_ratio <= 0) {
    std::fprintf(stderr, "offload_bench: --layers >= 4, --layer-mib > 0, --compute-ratio > 0, --reps >= 1\n");
    return 1;
  }
  p.elems = int64_t(p.layer_mib * double(1 << 20)) / 4;
  const uint64_t layer_bytes = uint64_t(p.elems) * 4;

  wharf_runtime_options ro;
  wharf_runtime_options_init(&ro);
  ro.backend = WHARF_BACKEND_CUDA;
  wharf_runtime* rt = nullptr;
  wharf_ok(wharf_runtime_create(&ro, &rt), "runtime");
  cudaStream_t s;
  CUDA_OK(cudaStreamCreateWithFlags(&s, cudaStreamNonBlocking));
  float* h = nullptr;
  float* dev_w = nullptr;
  void* pinned = nullptr;
  CUDA_OK(cudaMalloc(&h, layer_bytes));
  CUDA_OK(cudaMalloc(&dev_w, layer_bytes));
  CUDA_OK(cudaMallocHost(&pinned, layer_bytes));
  std::vector<float> host_w(size_t(p.elems), 1.0f);
  touch(pinned, layer_bytes, 0);
  CUDA_OK(cudaMemsetAsync(h, 0, layer_bytes, s));
  CUDA_OK(cudaMemcpyAsync(dev_w, host_w.data(), layer_bytes, cudaMemcpyHostToDevice, s));

  // Copy time of one layer (pinned -> device), then `work` so a layer computes for
  // compute_ratio times that.
  auto copies = [&](uint32_t count) {
    return [&, count] {
      for (uint32_t i = 0; i < count; ++i)
        CUDA_OK(cudaMemcpyAsync(dev_w, pinned, layer_bytes, cudaMemcpyHostToDevice, s));
    };
  };
  const double layer_copy_ms = median(time_ms(s, p.reps, copies(1)));
  const int probe = 256;
  p.work = probe;
  const double probe_ms =
      median(time_ms(s, p.reps, [&] { CUDA_OK(offload_bench::launch_layer(s, h, dev_w, p.elems, probe)); }));
  p.work = std::max(1, int(double(probe) * layer_copy_ms * p.compute_ratio / probe_ms));
  const double layer_ms =
      median(time_ms(s, p.reps, [&] { CUDA_OK(offload_bench::launch_layer(s, h, dev_w, p.elems, p.work)); }));
  const double h2d_gbs = double(layer_bytes) / (layer_copy_ms * 1e6);

  std::vector<Config> cfgs(4);
  cfgs[0].name = "resident";
  cfgs[1].name = "N/4 offloaded";
  cfgs[1].offload = true, cfgs[1].group_size = 4;
  cfgs[2].name = "N/2 offloaded";
  cfgs[2].offload = true, cfgs[2].group_size = 2;
  cfgs[3].name = "N offloaded";
  cfgs[3].offload = true, cfgs[3].group_size = 0;

  double compute_ms = 0;
  Stat graph_ms;
  double graph_bound = 0;
  for (Config& cf : cfgs) {
    load(rt, p, host_w.data(), uint64_t(compute_ms * 1000), &cf);
    cf.step_ms = stat_of(time_ms(s, p.reps, [&] { step(p, cf, s, h); }));
    if (!cf.offload) compute_ms = cf.step_ms.median;
    cf.copy_ms = cf.offloaded ? stat_of(time_ms(s, p.reps, copies(cf.offloaded))) : Stat{};
    cf.bound_ms = std::max(compute_ms, cf.copy_ms.median);
    cf.ratio = cf.step_ms.median / cf.bound_ms;
    if (cf.group_size == 2) {
      // One step's layers captured into a CUDA graph (the run around the capture), replayed.
      wharf_run* r = nullptr;
      wharf_ok(wharf_run_begin(cf.c, nullptr, s, &r), "run begin");
      CUDA_OK(cudaStreamBeginCapture(s, cudaStreamCaptureModeThreadLocal));
      layers(p, cf, r, s, h);
      cudaGraph_t graph = nullptr;
      CUDA_OK(cudaStreamEndCapture(s, &graph));
      wharf_ok(wharf_run_end(r), "run end");
      cudaGraphExec_t exec = nullptr;
      CUDA_OK(cudaGraphInstantiate(&exec, graph, 0));
      graph_ms = stat_of(time_ms(s, p.reps, [&] { CUDA_OK(cudaGraphLaunch(exec, s)); }));
      graph_bound = cf.bound_ms;
      CUDA_OK(cudaStreamSynchronize(s));
      CUDA_OK(cudaGraphExecDestroy(exec));
      CUDA_OK(cudaGraphDestroy(graph));
    }
    unload(&cf);
  }

  cudaDeviceProp prop;
  CUDA_OK(cudaGetDeviceProperties(&prop, 0));
  std::printf(
      "offload_bench on %s: %d layers x %.1f MiB F32 (%.1f MiB), %d FMA/element (%.3f ms/layer compute, "
      "%.3f ms/layer pinned H2D = %.1f GB/s), prefetch_step %u, slot_capacity %u, medians of %d steps "
      "[min, max]\n",
      prop.name, p.layers, p.layer_mib, p.layer_mib * p.layers, p.work, layer_ms, layer_copy_ms, h2d_gbs, p.prefetch,
      p.slots, p.reps);
  std::printf("%-16s %9s %26s %10s %10s %10s %7s %11s %22s %12s\n", "config", "offloaded", "step ms", "compute ms",
              "copy ms", "bound ms", "ratio", "device MiB", "saved MiB (wharf/mgi)", "budget exp.");
  const Config& res = cfgs[0];
  for (const Config& cf : cfgs) {
    char step[64], budget[32];
    std::snprintf(step, sizeof step, "%.3f [%.3f, %.3f]", cf.step_ms.median, cf.step_ms.min, cf.step_ms.max);
    if (cf.offload)
      std::snprintf(budget, sizeof budget, "%.3f ms", cf.budget.exposed_us / 1000);
    else
      std::snprintf(budget, sizeof budget, "-");
    char saved[48];
    std::snprintf(saved, sizeof saved, "%.1f / %.1f", (double(res.wharf_device) - double(cf.wharf_device)) / (1 << 20),
                  (double(res.mgi_device) - double(cf.mgi_device)) / (1 << 20));
    std::printf("%-16s %6u/%-2d %26s %10.3f %10.3f %10.3f %7.3f %11.1f %22s %12s\n", cf.name.c_str(), cf.offloaded,
                p.layers, step, compute_ms, cf.copy_ms.median, cf.bound_ms, cf.ratio,
                double(cf.wharf_device) / (1 << 20), saved, budget);
  }
  char gstep[64];
  std::snprintf(gstep, sizeof gstep, "%.3f [%.3f, %.3f]", graph_ms.median, graph_ms.min, graph_ms.max);
  std::printf("%-16s %6u/%-2d %26s %10.3f %10.3f %10.3f %7.3f\n", "N/2 graph replay", cfgs[2].offloaded, p.layers,
              gstep, compute_ms, cfgs[2].copy_ms.median, graph_bound, graph_ms.median / graph_bound);
  double worst = graph_ms.median / graph_bound;
  for (int i = 1; i < 3; ++i) worst = std::max(worst, cfgs[size_t(i)].ratio);
  std::printf(
      "target: step <= 1.10 x max(compute, copy) for 0, N/4, N/2 offloaded (and the graph replay): worst %.3f, %s\n",
      worst, worst <= 1.10 ? "met" : "NOT met");

  if (p.csv) {
    FILE* f = std::fopen(p.csv, "w");
    if (f) {
      std::fprintf(f,
                   "config,offloaded,layers,step_ms_median,step_ms_min,step_ms_max,compute_ms,copy_ms,bound_ms,ratio,"
                   "device_bytes_wharf,device_bytes_mgi,budget_exposed_us,budget_h2d_bytes_per_second\n");
      for (const Config& cf : cfgs)
        std::fprintf(f, "\"%s\",%u,%d,%.4f,%.4f,%.4f,%.4f,%.4f,%.4f,%.4f,%llu,%llu,%.1f,%llu\n", cf.name.c_str(),
                     cf.offloaded, p.layers, cf.step_ms.median, cf.step_ms.min, cf.step_ms.max, compute_ms,
                     cf.copy_ms.median, cf.bound_ms, cf.ratio, (unsigned long long)cf.wharf_device,
                     (unsigned long long)cf.mgi_device, cf.budget.exposed_us,
                     (unsigned long long)cf.budget.h2d_bytes_per_second);
      std::fprintf(f, "\"N/2 graph replay\",%u,%d,%.4f,%.4f,%.4f,%.4f,%.4f,%.4f,%.4f,,,,\n", cfgs[2].offloaded,
                   p.layers, graph_ms.median, graph_ms.min, graph_ms.max, compute_ms, cfgs[2].copy_ms.median,
                   graph_bound, graph_ms.median / graph_bound);
      std::fclose(f);
    }
  }
  CUDA_OK(cudaStreamSynchronize(s));
  CUDA_OK(cudaStreamDestroy(s));
  CUDA_OK(cudaFree(h));
  CUDA_OK(cudaFree(dev_w));
  CUDA_OK(cudaFreeHost(pinned));
  wharf_runtime_free(rt);
  return 0;
}

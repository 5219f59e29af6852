// SPDX-License-Identifier: Apache-2.0
// model_bench: the committed tiny decoder (AOTInductor, no libtorch) executed by Wharf.
//
// Measures, in one run: a decode step (run begin, wharf_model_run, reading the logits' last
// row, run end), the run overhead alone (begin + end, no model), and decode throughput with
// N conversations on N streams against one, and the first step after a hot update and swap
// (instance rebind and refold) beside the step after it. Then the same figures with CUDA graphs
// (wharf_model_enable_graphs, a second load of the model): the step, its host time (begin +
// model run + end: what the calling thread spends), its GPU time (events around the model
// run), the first step after an update and swap (the update folded the new generation and
// pointed the spare graph at it: what the swaps left on the serving path is printed under
// it, with the update's time beside the eager model's) and two conversations alternating (a
// re-point per step). tools/aoti/bench_torch.py measures PyTorch
// eager and PyTorch's own AOTInductor runner on the same model and weights and prints them
// beside these figures (gpu-run runs both).
// --legacy-ab adds the host time per graph step of the replay path before buckets
// (WHARF_GRAPHS_LEGACY_REPLAY=1 on a third load) beside the current one, measured in
// alternating blocks, with device and host inputs, and begin / model run / end apart.
// --package DIR measures capturing every graph bucket of a package method instead (see
// package_capture below).
// --kernel-time adds, as a phase of its own after the other figures, a model run's GPU time
// against the GPU time of its kernels (CUPTI; kernel_timer.h), eager and replayed: for the tiny
// decoder's step, or with --package for each bucket size (kernel_time_tiny and
// kernel_time_package below). --kernel-time-only runs that phase alone.
//   model_bench [--model DIR] [--csv FILE] [--legacy-ab] [--kernel-time | --kernel-time-only]
//   model_bench --package DIR [--method NAME] [--buckets A,B,...] [--capacity S] [--csv FILE]
//               [--kernel-time]
#include <cuda_runtime_api.h>

#include <algorithm>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <string>
#include <sys/stat.h>
#include <thread>
#include <vector>

#define WHARF_EXPERIMENTAL
#include "bench_common.h"
#include "kernel_timer.h"

using namespace bench;

namespace {

constexpr int kVocab = 256;

struct Ctx {
  wharf_runtime* rt = nullptr;
  wharf_model* model = nullptr;
  wharf_container* c = nullptr;
  // Optional per-step measurements: host time of begin + model run + end, and the GPU time
  // of the model run (events on the stream around it).
  std::vector<double>* host_us = nullptr;
  std::vector<double>* gpu_us = nullptr;
  // Optional: the host time of begin, model run and end apart.
  std::vector<double>* part_us[3] = {nullptr, nullptr, nullptr};
  // Inputs from host memory (what a Go, Rust or Java service passes) instead of device memory.
  bool host_inputs = false;
  cudaEvent_t ev0 = nullptr, ev1 = nullptr;
};

// One decode step of `session` on `stream` (token `tok` at position `pos`); returns the
// argmax. Inputs are written into `d_in` (3 int64 on the device).
int64_t step(Ctx& x, wharf_session* s, cudaStream_t stream, int64_t* d_in, float* h_last, int64_t tok, int64_t pos) {
  auto t_begin = Clock::now();
  wharf_run* run = nullptr;
  wharf_ok(wharf_run_begin(x.c, s, stream, &run), "run_begin");
  double host_us = us_since(t_begin);
  const double begin_us = host_us;
  // Token at d_in[0], position at d_in[2]: each input 16-byte aligned, as the model was
  // compiled to expect (a misaligned input makes it copy).
  int64_t host[3] = {tok, 0, pos};
  if (x.host_inputs)
    d_in = host;  // wharf_model_run copies host inputs itself
  else
    CUDA_OK(cudaMemcpyAsync(d_in, host, sizeof host, cudaMemcpyHostToDevice, stream));
  const int64_t tshape[2] = {1, 1}, pshape[1] = {1};
  wharf_tensor_view in[2];
  std::memset(in, 0, sizeof in);
  in[0].struct_size = in[1].struct_size = sizeof in[0];
  in[0].data = d_in;
  in[0].dtype = in[1].dtype = WHARF_DTYPE_I64;
  in[0].device_type = in[1].device_type = x.host_inputs ? WHARF_DEVICE_CPU : WHARF_DEVICE_CUDA;
  in[0].ndim = 2;
  in[0].shape = tshape;
  in[1].data = d_in + 2;
  in[1].ndim = 1;
  in[1].shape = pshape;
  wharf_tensor_view out;
  std::memset(&out, 0, sizeof out);
  out.struct_size = sizeof out;
  if (x.gpu_us) CUDA_OK(cudaEventRecord(x.ev0, stream));
  auto t_run = Clock::now();
  wharf_ok(wharf_model_run(x.model, run, in, 2, &out, 1), "model_run");
  const double run_us = us_since(t_run);
  host_us += run_us;
  if (x.gpu_us) CUDA_OK(cudaEventRecord(x.ev1, stream));
  CUDA_OK(cudaMemcpyAsync(h_last, out.data, kVocab * sizeof(float), cudaMemcpyDeviceToHost, stream));
  CUDA_OK(cudaStreamSynchronize(stream));
  auto t_end = Clock::now();
  wharf_ok(wharf_run_end(run), "run_end");
  const double end_us = us_since(t_end);
  host_us += end_us;
  if (x.host_us) x.host_us->push_back(host_us);
  const double parts[3] = {begin_us, run_us, end_us};
  for (int i = 0; i < 3; ++i)
    if (x.part_us[i]) x.part_us[i]->push_back(parts[i]);
  if (x.gpu_us) {
    float ms = 0;
    CUDA_OK(cudaEventElapsedTime(&ms, x.ev0, x.ev1));
    x.gpu_us->push_back(ms * 1e3);
  }
  int64_t best = 0;
  for (int i = 1; i < kVocab; ++i)
    if (h_last[i] > h_last[best]) best = i;
  return best;
}

using Stats = Spread;
inline Spread stats(const std::vector<double>& v) { return spread(v); }

// `steps` decode steps in one conversation; each step's latency in microseconds. The
// session is reset every 48 steps (the model's cache holds 64 positions).
std::vector<double> decode(Ctx& x, cudaStream_t stream, int steps) {
  wharf_session* s = nullptr;
  wharf_ok(wharf_session_create(x.rt, &x.c, 1, nullptr, &s), "session");
  int64_t* d_in = nullptr;
  CUDA_OK(cudaMalloc(reinterpret_cast<void**>(&d_in), 3 * sizeof(int64_t)));
  std::vector<float> last(kVocab);
  std::vector<double> us;
  int64_t tok = 1;
  for (int i = 0; i < steps; ++i) {
    if (i % 48 == 0) {
      wharf_ok(wharf_session_reset(s), "reset");
      tok = 1;
    }
    auto t0 = Clock::now();
    tok = step(x, s, stream, d_in, last.data(), tok, i % 48);
    us.push_back(us_since(t0));
  }
  CUDA_OK(cudaFree(d_in));
  wharf_session_free(s);
  return us;
}

double mean(const std::vector<double>& v) {
  double sum = 0;
  for (double x : v) sum += x;
  return v.empty() ? 0 : sum / double(v.size());
}

wharf_graph_stats graph_stats(wharf_model* m) {
  wharf_graph_stats gs;
  std::memset(&gs, 0, sizeof gs);
  gs.struct_size = sizeof gs;
  wharf_ok(wharf_model_get_graph_stats(m, &gs), "graph stats");
  return gs;
}

// Where the host time of a graph step goes: `steps` steps of one conversation, their begin,
// wharf_model_run and end (means, microseconds), wharf_model_run split by the library's replay
// phases and the end by the graphs' release (wharf_graph_stats, the difference over these
// steps). What wharf_model_run spends outside the phases is the C API and the model's checks.
struct Breakdown {
  double begin = 0, run = 0, end = 0;
  double select = 0, bind = 0, wait = 0, inputs = 0, launch = 0, outputs = 0, release = 0;
  double total() const { return begin + run + end; }
  double outside() const { return run - (select + bind + wait + inputs + launch + outputs); }
};

Breakdown host_breakdown(Ctx& g, cudaStream_t stream, int steps, bool host_inputs) {
  const wharf_graph_stats a = graph_stats(g.model);
  std::vector<double> parts[3];
  for (int i = 0; i < 3; ++i) g.part_us[i] = &parts[i];
  g.host_inputs = host_inputs;
  decode(g, stream, steps);
  g.host_inputs = false;
  for (int i = 0; i < 3; ++i) g.part_us[i] = nullptr;
  const wharf_graph_stats z = graph_stats(g.model);
  Breakdown b;
  b.begin = mean(parts[0]);
  b.run = mean(parts[1]);
  b.end = mean(parts[2]);
  const double n = double(z.replays - a.replays);
  if (n <= 0) return b;
  auto per = [n](uint64_t from, uint64_t to) { return double(to - from) / n / 1e3; };
  b.select = per(a.select_ns, z.select_ns);
  b.bind = per(a.bind_check_ns + a.repoint_ns + a.fold_ns, z.bind_check_ns + z.repoint_ns + z.fold_ns);
  b.wait = per(a.wait_ns, z.wait_ns);
  b.inputs = per(a.inputs_ns, z.inputs_ns);
  b.launch = per(a.launch_ns, z.launch_ns);
  b.outputs = per(a.outputs_ns, z.outputs_ns);
  b.release = per(a.release_ns, z.release_ns);
  return b;
}

void print_breakdown(const char* what, const Breakdown& b) {
  std::printf("  %s, means: %.2f us = begin %.2f + model run %.2f + end %.2f\n", what, b.total(), b.begin, b.run,
              b.end);
  std::printf(
      "    model run: select %.2f, bind %.2f, wait %.2f, inputs %.2f, launch %.2f, outputs %.2f; "
      "outside the graphs (C API, model) %.2f\n",
      b.select, b.bind, b.wait, b.inputs, b.launch, b.outputs, b.outside());
  std::printf("    end: releasing the graphs %.2f; the rest (generation, session, callbacks) %.2f\n", b.release,
              b.end - b.release);
}

// Runs per kernel-time row (each loop of measure_kernel_time).
constexpr int kKernelTimeRuns = 200;

// Says in `row.note` when a graph row's runs did not all replay (graph stats before and after).
void note_eager_runs(KernelTimeRow& row, const wharf_graph_stats& a, const wharf_graph_stats& z) {
  if (z.eager_runs == a.eager_runs) return;
  row.note += std::string(row.note.empty() ? "" : "; ") + std::to_string(z.eager_runs - a.eager_runs) +
              " runs executed eagerly: " + z.last_eager_reason;
}

// Appends the kernel-time rows to model_bench's CSV (written before this phase).
void append_kernel_time_csv(const std::string& csv, const std::vector<KernelTimeRow>& rows) {
  if (csv.empty()) return;
  if (FILE* f = std::fopen(csv.c_str(), "a")) {
    write_kernel_time_csv(f, rows);
    std::fclose(f);
  }
}

// --kernel-time: the tiny decoder's model run (token and position from device memory, one
// conversation at position 16), eager and with graphs, against its kernels' GPU time. Its own
// two loads of the model, made after the tracer is on, so the graph is captured while CUPTI
// records; `weights` as main made them (caches included).
void kernel_time_tiny(wharf_runtime* rt, const std::string& dir, wharf_constant_map* weights, const std::string& csv) {
  ActivityTracer& t = ActivityTracer::get();
  if (!t.ok() || !t.enable()) {
    std::printf("kernel time: %s\n", t.why().c_str());
    return;
  }
  cudaStream_t stream;
  CUDA_OK(cudaStreamCreateWithFlags(&stream, cudaStreamNonBlocking));
  int64_t* d_in = nullptr;
  CUDA_OK(cudaMalloc(reinterpret_cast<void**>(&d_in), 3 * sizeof(int64_t)));
  const int64_t host[3] = {1, 0, 16};
  CUDA_OK(cudaMemcpy(d_in, host, sizeof host, cudaMemcpyHostToDevice));
  const int64_t tshape[2] = {1, 1}, pshape[1] = {1};
  wharf_tensor_view in[2] = {tensor_view(d_in, WHARF_DTYPE_I64, WHARF_DEVICE_CUDA, 2, tshape),
                             tensor_view(d_in + 2, WHARF_DTYPE_I64, WHARF_DEVICE_CUDA, 1, pshape)};
  std::vector<KernelTimeRow> rows;
  for (const bool graphs : {false, true}) {
    wharf_model* m = nullptr;
    wharf_ok(wharf_model_load(rt, (dir + "/tiny_decoder.so").c_str(), weights, nullptr, &m), "model_load");
    if (graphs) wharf_ok(wharf_model_enable_graphs(m, nullptr), "enable_graphs");
    wharf_container* c = wharf_model_container(m);
    wharf_session* s = nullptr;
    wharf_ok(wharf_session_create(rt, &c, 1, nullptr, &s), "session");
    wharf_run* run = nullptr;
    wharf_tensor_view out;
    std::memset(&out, 0, sizeof out);
    out.struct_size = sizeof out;
    const RunHooks h{[&] { wharf_ok(wharf_run_begin(c, s, stream, &run), "run_begin"); },
                     [&] { wharf_ok(wharf_model_run(m, run, in, 2, &out, 1), "model_run"); },
                     [&] { wharf_ok(wharf_run_end(run), "run_end"); }};
    wharf_graph_stats a{};
    if (graphs) {
      h.begin();  // the capture, before the stats are read
      h.run();
      h.end();
      a = graph_stats(m);
    }
    rows.push_back(measure_kernel_time(t, stream, h, kKernelTimeRuns, graphs ? "graph" : "eager", 1));
    if (graphs) note_eager_runs(rows.back(), a, graph_stats(m));
    wharf_session_free(s);
    wharf_model_free(m);
  }
  t.disable();
  CUDA_OK(cudaFree(d_in));
  CUDA_OK(cudaStreamDestroy(stream));
  print_kernel_time("kernel time: tiny decoder, decode step (wharf_model_run), eager and graph replay", rows);
  append_kernel_time_csv(csv, rows);
}

// --package DIR --kernel-time: package_capture's method and bucket sizes, each size run
// eagerly, then (graphs enabled with the same buckets) replayed, against its kernels' GPU
// time. A load of its own after the tracer is on (graphs captured while CUPTI records); the
// inputs package_capture passes (tokens 1; decode_batch at position 0 in sessions 0..b-1,
// prefill at positions 0..b-1 of one session), here from device memory.
void kernel_time_package(const std::string& dir, const std::string& method, const std::string& dim,
                         const std::vector<int64_t>& sizes, uint32_t capacity, const std::string& csv) {
  ActivityTracer& t = ActivityTracer::get();
  if (!t.ok() || !t.enable()) {
    std::printf("kernel time: %s\n", t.why().c_str());
    return;
  }
  wharf_runtime* rt = nullptr;
  wharf_runtime_options ro;
  wharf_runtime_options_init(&ro);
  ro.backend = WHARF_BACKEND_CUDA;
  wharf_ok(wharf_runtime_create(&ro, &rt), "runtime");
  wharf_model_package_options po;
  wharf_model_package_options_init(&po);
  po.shim_path = std::getenv("WHARF_AOTI_SHIM");
  po.session_capacity = capacity;
  wharf_model_package* pkg = nullptr;
  wharf_ok(wharf_model_package_load(rt, dir.c_str(), &po, &pkg), "package load");
  wharf_model* m = nullptr;
  wharf_ok(wharf_model_package_get_method(pkg, method.c_str(), &m), "get_method");
  const bool batched = method == "decode_batch";
  const int64_t most = sizes.back();
  std::vector<wharf_session*> ss(batched ? size_t(most) : 1);
  for (auto& x : ss) wharf_ok(wharf_model_package_create_session(pkg, nullptr, &x), "session");
  wharf_container* c = wharf_model_container(m);
  cudaStream_t stream;
  CUDA_OK(cudaStreamCreateWithFlags(&stream, cudaStreamNonBlocking));
  int64_t *d_tok = nullptr, *d_pos = nullptr;
  CUDA_OK(cudaMalloc(reinterpret_cast<void**>(&d_tok), size_t(most) * 8));
  CUDA_OK(cudaMalloc(reinterpret_cast<void**>(&d_pos), size_t(most) * 8));
  {
    std::vector<int64_t> tok(size_t(most), 1), pos(size_t(most), 0);
    if (!batched)
      for (int64_t i = 0; i < most; ++i) pos[size_t(i)] = i;
    CUDA_OK(cudaMemcpy(d_tok, tok.data(), tok.size() * 8, cudaMemcpyHostToDevice));
    CUDA_OK(cudaMemcpy(d_pos, pos.data(), pos.size() * 8, cudaMemcpyHostToDevice));
  }
  const size_t n_in = wharf_model_num_inputs(m);
  std::vector<KernelTimeRow> rows;
  auto measure = [&](int64_t b, bool graphs) {
    const int64_t ishape[2] = {batched ? b : 1, batched ? 1 : b}, pshape[1] = {b};
    wharf_tensor_view in[3] = {tensor_view(d_tok, WHARF_DTYPE_I64, WHARF_DEVICE_CUDA, 2, ishape),
                               tensor_view(d_pos, WHARF_DTYPE_I64, WHARF_DEVICE_CUDA, 1, pshape),
                               tensor_view(nullptr, WHARF_DTYPE_I64, WHARF_DEVICE_CUDA, 1, pshape)};  // slots
    wharf_run* run = nullptr;
    wharf_tensor_view out;
    std::memset(&out, 0, sizeof out);
    out.struct_size = sizeof out;
    const RunHooks h{[&] {
                       if (batched)
                         wharf_ok(wharf_run_begin_batch(c, ss.data(), size_t(b), stream, &run), "run_begin_batch");
                       else
                         wharf_ok(wharf_run_begin(c, ss[0], stream, &run), "run_begin");
                     },
                     [&] { wharf_ok(wharf_model_run(m, run, in, n_in, &out, 1), "model_run"); },
                     [&] { wharf_ok(wharf_run_end(run), "run_end"); }};
    wharf_graph_stats a{};
    if (graphs) {
      h.begin();  // the capture (the first run of any size captures the largest too)
      h.run();
      h.end();
      a = graph_stats(m);
    }
    rows.push_back(measure_kernel_time(t, stream, h, kKernelTimeRuns, graphs ? "graph" : "eager", (long long)b));
    if (graphs) note_eager_runs(rows.back(), a, graph_stats(m));
  };
  for (int64_t b : sizes) measure(b, false);
  wharf_graph_options go;
  wharf_graph_options_init(&go);
  if (!dim.empty()) {
    go.bucket_dim = dim.c_str();
    go.bucket_sizes = sizes.data();
    go.num_bucket_sizes = uint32_t(sizes.size());
  }
  wharf_ok(wharf_model_enable_graphs(m, &go), "enable_graphs");
  for (int64_t b : sizes) measure(b, true);
  t.disable();
  const std::string title = std::string("kernel time: package ") + wharf_model_package_name(pkg) + ", method " +
                            method + " (wharf_model_run), eager and graph replay per size";
  print_kernel_time(title.c_str(), rows);
  append_kernel_time_csv(csv, rows);
  CUDA_OK(cudaFree(d_tok));
  CUDA_OK(cudaFree(d_pos));
  CUDA_OK(cudaStreamDestroy(stream));
  for (auto* x : ss) wharf_session_free(x);
  wharf_model_free(m);
  wharf_model_package_free(pkg);
  wharf_runtime_free(rt);
}

// --package DIR: what capturing every bucket of a package method costs (issue 25: capture
// time and pool bytes for all buckets). Loads the package (--capacity S for a batched method),
// enables graphs on --method (default decode_batch when the package has it at S, else
// prefill) with --buckets a,b,... (default: the library's default set of the method's
// dimension), then per bucket size, smallest first: the first run (the capture; the first
// one captures the largest bucket too) and 20 replays (step time with the logits read back).
// Prints each graph's capture time in parts, nodes and pool bytes, and the totals.
int package_capture(const std::string& dir, std::string method, const std::string& buckets_arg, uint32_t capacity,
                    const std::string& csv, bool kernel_time) {
  wharf_runtime* rt = nullptr;
  wharf_runtime_options ro;
  wharf_runtime_options_init(&ro);
  ro.backend = WHARF_BACKEND_CUDA;
  wharf_ok(wharf_runtime_create(&ro, &rt), "runtime");
  wharf_model_package_options po;
  wharf_model_package_options_init(&po);
  po.shim_path = std::getenv("WHARF_AOTI_SHIM");
  po.session_capacity = capacity;
  wharf_model_package* pkg = nullptr;
  auto t_load = Clock::now();
  wharf_ok(wharf_model_package_load(rt, dir.c_str(), &po, &pkg), "package load");
  const double load_s = seconds_since(t_load);
  if (method.empty())
    method = capacity && wharf_model_package_find_method(pkg, "decode_batch") >= 0 ? "decode_batch" : "prefill";
  const int64_t mi = wharf_model_package_find_method(pkg, method.c_str());
  if (mi < 0) {
    std::fprintf(stderr, "model_bench: the package has no method '%s'\n", method.c_str());
    return 2;
  }
  wharf_model* m = nullptr;
  wharf_ok(wharf_model_package_get_method(pkg, method.c_str(), &m), "get_method");
  const bool batched = method == "decode_batch";
  // The method's dimension: input 0's symbolic one (input_ids [1, T] or [N, 1]).
  wharf_model_package_tensor_info ti;
  std::memset(&ti, 0, sizeof ti);
  ti.struct_size = sizeof ti;
  wharf_ok(wharf_model_package_get_method_input(pkg, size_t(mi), 0, &ti), "method input");
  std::string dim;
  int64_t lo = 1, hi = -1;
  for (int d = 0; d < ti.ndim; ++d)
    if (ti.dim_names && ti.dim_names[d]) {
      dim = ti.dim_names[d];
      lo = ti.dim_min[d];
      hi = ti.dim_max[d];
    }
  std::vector<int64_t> sizes;
  for (size_t at = 0; at < buckets_arg.size();) {
    size_t comma = buckets_arg.find(',', at);
    if (comma == std::string::npos) comma = buckets_arg.size();
    sizes.push_back(std::strtoll(buckets_arg.substr(at, comma - at).c_str(), nullptr, 10));
    at = comma + 1;
  }
  wharf_graph_options go;
  wharf_graph_options_init(&go);
  if (!sizes.empty()) {
    go.bucket_dim = dim.empty() ? nullptr : dim.c_str();
    go.bucket_sizes = sizes.data();
    go.num_bucket_sizes = uint32_t(sizes.size());
  } else if (!dim.empty() && hi >= 1) {
    // The library's default set (graphs/bucket_plan.cpp): powers of two up to the max, and the max.
    int64_t p = 1;
    while (p < std::max<int64_t>(lo, 1)) p *= 2;
    for (; p <= hi; p *= 2) sizes.push_back(p);
    if (sizes.empty() || sizes.back() != hi) sizes.push_back(hi);
  } else {
    sizes.push_back(1);  // no dimension: one shape
  }
  std::sort(sizes.begin(), sizes.end());
  wharf_ok(wharf_model_enable_graphs(m, &go), "enable_graphs");
  const int64_t most = sizes.back();
  std::vector<wharf_session*> ss(batched ? size_t(most) : 1);
  for (auto& x : ss) wharf_ok(wharf_model_package_create_session(pkg, nullptr, &x), "session");
  wharf_container* c = wharf_model_container(m);
  std::vector<float> logits;
  std::vector<double> first_ms, step_us;
  // One step at size b: returns its wall time in microseconds (logits read back).
  auto step = [&](int64_t b) {
    std::vector<int64_t> tokens(size_t(b), 1), pos(size_t(b), 0), slots;
    if (!batched)
      for (int64_t i = 0; i < b; ++i) pos[size_t(i)] = i;
    const int64_t ishape[2] = {batched ? b : 1, batched ? 1 : b}, pshape[1] = {b};
    wharf_tensor_view in[3];
    std::memset(in, 0, sizeof in);
    for (auto& v : in) v.struct_size = sizeof v;
    in[0].data = tokens.data();
    in[1].data = pos.data();
    in[0].dtype = in[1].dtype = WHARF_DTYPE_I64;
    in[0].device_type = in[1].device_type = WHARF_DEVICE_CPU;
    in[0].ndim = 2;
    in[0].shape = ishape;
    in[1].ndim = 1;
    in[1].shape = pshape;  // in[2] (slots): an empty view, Wharf passes the run's slots
    const size_t n_in = wharf_model_num_inputs(m);
    auto t0 = Clock::now();
    wharf_run* run = nullptr;
    if (batched)
      wharf_ok(wharf_run_begin_batch(c, ss.data(), size_t(b), nullptr, &run), "run_begin_batch");
    else
      wharf_ok(wharf_run_begin(c, ss[0], nullptr, &run), "run_begin");
    wharf_tensor_view out;
    std::memset(&out, 0, sizeof out);
    out.struct_size = sizeof out;
    wharf_ok(wharf_model_run(m, run, in, n_in, &out, 1), "model_run");
    uint64_t elems = 1;
    for (int d = 0; d < out.ndim; ++d) elems *= uint64_t(out.shape[d]);
    logits.resize(elems);
    wharf_ok(wharf_run_copy(run, logits.data(), out.data, elems * sizeof(float)), "read logits");
    wharf_ok(wharf_run_end(run), "run_end");
    return us_since(t0);
  };
  std::printf("package %s, method %s, dimension '%s' (%lld..%lld), %zu buckets; package load %.2f s\n",
              wharf_model_package_name(pkg), method.c_str(), dim.c_str(), (long long)lo, (long long)hi, sizes.size(),
              load_s);
  auto t_all = Clock::now();
  for (int64_t b : sizes) first_ms.push_back(step(b) / 1e3);
  const double all_s = seconds_since(t_all);
  for (int64_t b : sizes) {
    std::vector<double> us;
    for (int i = 0; i < 20; ++i) us.push_back(step(b));
    step_us.push_back(median(us));
  }
  wharf_graph_stats gs;
  std::memset(&gs, 0, sizeof gs);
  gs.struct_size = sizeof gs;
  wharf_ok(wharf_model_get_graph_stats(m, &gs), "graph stats");
  std::printf("%-8s %12s %12s  %s\n", "size", "first run", "replay step", "");
  for (size_t i = 0; i < sizes.size(); ++i)
    std::printf("%-8lld %9.1f ms %9.1f us\n", (long long)sizes[i], first_ms[i], step_us[i]);
  const double capture_total = print_graph_buckets(m, gs.num_buckets);
  std::printf(
      "all buckets: %llu captures in %.1f ms (first runs of every size: %.2f s), pool %llu bytes (%.3f GiB), "
      "folded %llu bytes, %llu eager runs%s%s\n",
      (unsigned long long)gs.captures, capture_total, all_s, (unsigned long long)gs.pool_bytes,
      double(gs.pool_bytes) / double(1ull << 30), (unsigned long long)gs.folded_bytes,
      (unsigned long long)gs.eager_runs, gs.last_eager_reason[0] ? "; last eager reason: " : "", gs.last_eager_reason);
  if (!csv.empty())
    if (FILE* f = std::fopen(csv.c_str(), "w")) {
      std::fprintf(f, "metric,median,min,max\n");
      std::fprintf(f, "graph_capture_all_buckets_ms,%.3f,,\n", capture_total);
      std::fprintf(f, "graph_pool_bytes_all_buckets,%llu,,\n", (unsigned long long)gs.pool_bytes);
      for (size_t i = 0; i < sizes.size(); ++i)
        std::fprintf(f, "graph_replay_step_us_%lld,%.3f,,\n", (long long)sizes[i], step_us[i]);
      std::fclose(f);
    }
  for (auto* x : ss) wharf_session_free(x);
  wharf_model_free(m);
  wharf_model_package_free(pkg);
  wharf_runtime_free(rt);
  if (kernel_time) kernel_time_package(dir, method, dim, sizes, capacity, csv);
  return 0;
}

}  // namespace

int main(int argc, char** argv) {
  std::string dir, csv, package, method, bucket_sizes;
  bool legacy_ab = false, kernel_time = false, kernel_time_only = false;
  uint32_t capacity = 0;
  for (int i = 1; i < argc; ++i) {
    if (!std::strcmp(argv[i], "--model") && i + 1 < argc)
      dir = argv[++i];
    else if (!std::strcmp(argv[i], "--csv") && i + 1 < argc)
      csv = argv[++i];
    else if (!std::strcmp(argv[i], "--legacy-ab"))
      legacy_ab = true;
    else if (!std::strcmp(argv[i], "--kernel-time"))
      kernel_time = true;
    else if (!std::strcmp(argv[i], "--kernel-time-only"))
      kernel_time = kernel_time_only = true;
    else if (!std::strcmp(argv[i], "--package") && i + 1 < argc)
      package = argv[++i];
    else if (!std::strcmp(argv[i], "--method") && i + 1 < argc)
      method = argv[++i];
    else if (!std::strcmp(argv[i], "--buckets") && i + 1 < argc)
      bucket_sizes = argv[++i];
    else if (!std::strcmp(argv[i], "--capacity") && i + 1 < argc)
      capacity = uint32_t(std::strtoul(argv[++i], nullptr, 10));
  }
  if (!package.empty()) return package_capture(package, method, bucket_sizes, capacity, csv, kernel_time);
  if (dir.empty()) {
    struct stat st;
    dir = ::stat("models/tiny_decoder/tiny_decoder.so", &st) == 0 ? "models/tiny_decoder"
                                                                  : "tests/data/models/tiny_decoder";
  }
  Ctx x;
  wharf_runtime_options ro;
  wharf_runtime_options_init(&ro);
  ro.backend = WHARF_BACKEND_CUDA;
  wharf_ok(wharf_runtime_create(&ro, &x.rt), "runtime");
  wharf_constant_map* weights = nullptr;
  wharf_ok(wharf_constant_map_load_safetensors((dir + "/tiny_decoder.safetensors").c_str(), &weights), "weights");
  const int64_t cache_shape[4] = {1, 4, 64, 16};
  std::vector<float> zeros(4 * 64 * 16, 0.0f);
  for (const char* name : {"layers.0.k_cache", "layers.0.v_cache", "layers.1.k_cache", "layers.1.v_cache"}) {
    wharf_tensor_view v;
    std::memset(&v, 0, sizeof v);
    v.struct_size = sizeof v;
    v.data = zeros.data();
    v.dtype = WHARF_DTYPE_F32;
    v.device_type = WHARF_DEVICE_CPU;
    v.ndim = 4;
    v.shape = cache_shape;
    wharf_ok(wharf_constant_map_set(weights, name, &v), "cache");
  }
  if (kernel_time_only) {
    kernel_time_tiny(x.rt, dir, weights, csv);
    wharf_constant_map_free(weights);
    wharf_runtime_free(x.rt);
    return 0;
  }
  wharf_ok(wharf_model_load(x.rt, (dir + "/tiny_decoder.so").c_str(), weights, nullptr, &x.model), "model_load");
  x.c = wharf_model_container(x.model);

  cudaStream_t s0;
  CUDA_OK(cudaStreamCreateWithFlags(&s0, cudaStreamNonBlocking));
  decode(x, s0, 48);  // warm-up: instances, folding, allocator
  const int steps = 480;
  Stats one = stats(decode(x, s0, steps));

  // Run overhead: begin + end with no work (a session, as the model's runs have).
  wharf_session* s = nullptr;
  wharf_ok(wharf_session_create(x.rt, &x.c, 1, nullptr, &s), "session");
  std::vector<double> ov;
  for (int i = 0; i < 2000; ++i) {
    auto t0 = Clock::now();
    wharf_run* run = nullptr;
    wharf_ok(wharf_run_begin(x.c, s, s0, &run), "run_begin");
    wharf_ok(wharf_run_end(run), "run_end");
    ov.push_back(us_since(t0));
  }
  CUDA_OK(cudaStreamSynchronize(s0));
  wharf_session_free(s);
  Stats overhead = stats(ov);

  // N conversations on N streams from N threads: aggregate steps per second.
  const int n = 4;
  std::vector<cudaStream_t> streams(n);
  for (auto& st : streams) CUDA_OK(cudaStreamCreateWithFlags(&st, cudaStreamNonBlocking));
  for (int i = 0; i < n; ++i) decode(x, streams[i], 8);  // an instance per conversation
  auto t0 = Clock::now();
  std::vector<std::thread> ts;
  for (int i = 0; i < n; ++i) ts.emplace_back([&, i] { decode(x, streams[i], steps / 4); });
  for (auto& t : ts) t.join();
  const double par = n * (steps / 4) / seconds_since(t0);
  const double seq = 1e6 / one.med;

  // The first step after a hot update and swap: the run's generation is new, so a model
  // instance is rebound to it and AOTInductor refolds the model's folded constants (its
  // container marks them stale on every rebind; docs/decisions.md). Beside it, the step
  // that follows (bound and folded). The update (norm.weight from pageable host memory) is
  // timed apart (the graphs' figure below adds their preparation to it); the swap is not.
  std::vector<double> after_swap, next_step, eager_update;
  {
    wharf_tensor_view w;
    std::memset(&w, 0, sizeof w);
    w.struct_size = sizeof w;
    wharf_ok(wharf_constant_map_find(weights, "norm.weight", &w), "find norm.weight");
    const int64_t dim = w.shape[0];
    std::vector<float> host(static_cast<const float*>(w.data), static_cast<const float*>(w.data) + dim);
    wharf_constant_map* upd = nullptr;
    wharf_ok(wharf_constant_map_create(&upd), "map");
    wharf_tensor_view v = w;
    v.data = host.data();
    v.strides = nullptr;
    v.shape = &dim;
    wharf_ok(wharf_constant_map_set(upd, "norm.weight", &v), "map set");
    wharf_session* ss = nullptr;
    wharf_ok(wharf_session_create(x.rt, &x.c, 1, nullptr, &ss), "session");
    int64_t* d_in = nullptr;
    CUDA_OK(cudaMalloc(reinterpret_cast<void**>(&d_in), 3 * sizeof(int64_t)));
    std::vector<float> last(kVocab);
    for (int r = 0; r < 40; ++r) {
      wharf_ok(wharf_session_reset(ss), "reset");
      auto t1 = Clock::now();
      wharf_ok(wharf_container_update(x.c, upd, nullptr), "update");
      eager_update.push_back(us_since(t1));
      wharf_ok(wharf_container_swap(x.c), "swap");
      t1 = Clock::now();
      int64_t tok = step(x, ss, s0, d_in, last.data(), 1, 0);
      after_swap.push_back(us_since(t1));
      t1 = Clock::now();
      step(x, ss, s0, d_in, last.data(), tok, 1);
      next_step.push_back(us_since(t1));
    }
    CUDA_OK(cudaFree(d_in));
    wharf_session_free(ss);
    wharf_constant_map_free(upd);
  }
  const Stats first = stats(after_swap), second = stats(next_step);

  // The same with CUDA graphs: a second load of the model (its own container), graphs on.
  Ctx g = x;
  wharf_ok(wharf_model_load(x.rt, (dir + "/tiny_decoder.so").c_str(), weights, nullptr, &g.model), "model_load");
  g.c = wharf_model_container(g.model);
  wharf_ok(wharf_model_enable_graphs(g.model, nullptr), "enable_graphs");
  CUDA_OK(cudaEventCreate(&g.ev0));
  CUDA_OK(cudaEventCreate(&g.ev1));
  x.ev0 = g.ev0;
  x.ev1 = g.ev1;
  decode(g, s0, 48);  // capture (first step) and warm-up
  std::vector<double> e_host, e_gpu, g_host, g_gpu;
  x.host_us = &e_host;
  x.gpu_us = &e_gpu;
  decode(x, s0, steps);
  x.host_us = x.gpu_us = nullptr;
  g.host_us = &g_host;
  g.gpu_us = &g_gpu;
  const Stats g_one = stats(decode(g, s0, steps));
  g.host_us = g.gpu_us = nullptr;
  // The host time of a step in parts (docs/performance.md: reading the breakdown).
  const Breakdown bd_device = host_breakdown(g, s0, steps, false), bd_host = host_breakdown(g, s0, steps, true);
  // The first step after an update and swap with graphs: the update folded the generation's
  // constants and pointed the spare graph at it before returning (docs/decisions.md,
  // "Preparing for a swap"), so the step replays with neither; the stats before and after say
  // what was left on the serving path, and the update's time what the preparation added.
  std::vector<double> g_after_swap, g_next_step, alternating, g_update;
  wharf_graph_stats swap0, swap1;
  {
    wharf_tensor_view w;
    std::memset(&w, 0, sizeof w);
    w.struct_size = sizeof w;
    wharf_ok(wharf_constant_map_find(weights, "norm.weight", &w), "find norm.weight");
    const int64_t dim = w.shape[0];
    std::vector<float> host(static_cast<const float*>(w.data), static_cast<const float*>(w.data) + dim);
    wharf_constant_map* upd = nullptr;
    wharf_ok(wharf_constant_map_create(&upd), "map");
    wharf_tensor_view v = w;
    v.data = host.data();
    v.strides = nullptr;
    v.shape = &dim;
    wharf_ok(wharf_constant_map_set(upd, "norm.weight", &v), "map set");
    wharf_session *sa = nullptr, *sb = nullptr;
    wharf_ok(wharf_session_create(x.rt, &g.c, 1, nullptr, &sa), "session");
    wharf_ok(wharf_session_create(x.rt, &g.c, 1, nullptr, &sb), "session");
    int64_t* d_in = nullptr;
    CUDA_OK(cudaMalloc(reinterpret_cast<void**>(&d_in), 3 * sizeof(int64_t)));
    std::vector<float> last(kVocab);
    swap0 = graph_stats(g.model);
    for (int r = 0; r < 40; ++r) {
      wharf_ok(wharf_session_reset(sa), "reset");
      auto t1 = Clock::now();
      wharf_ok(wharf_container_update(g.c, upd, nullptr), "update");
      g_update.push_back(us_since(t1));
      wharf_ok(wharf_container_swap(g.c), "swap");
      t1 = Clock::now();
      int64_t tok = step(g, sa, s0, d_in, last.data(), 1, 0);
      g_after_swap.push_back(us_since(t1));
      t1 = Clock::now();
      step(g, sa, s0, d_in, last.data(), tok, 1);
      g_next_step.push_back(us_since(t1));
    }
    swap1 = graph_stats(g.model);
    // Two conversations alternating step by step: every step re-points the KV caches.
    wharf_ok(wharf_session_reset(sa), "reset");
    wharf_ok(wharf_session_reset(sb), "reset");
    int64_t ta = 1, tb = 2;
    for (int i = 0; i < 96; ++i) {
      auto t1 = Clock::now();
      if (i % 2 == 0)
        ta = step(g, sa, s0, d_in, last.data(), ta, i / 2 % 48);
      else
        tb = step(g, sb, s0, d_in, last.data(), tb, i / 2 % 48);
      alternating.push_back(us_since(t1));
    }
    CUDA_OK(cudaFree(d_in));
    wharf_session_free(sa);
    wharf_session_free(sb);
    wharf_constant_map_free(upd);
  }
  // Four conversations on four streams with graphs (a set of graphs per concurrent run).
  {
    std::vector<std::thread> gts;
    for (int i = 0; i < n; ++i) gts.emplace_back([&, i] { decode(g, streams[i], 8); });  // sets captured
    for (auto& t : gts) t.join();
  }
  auto tg = Clock::now();
  {
    std::vector<std::thread> gts;
    for (int i = 0; i < n; ++i) gts.emplace_back([&, i] { decode(g, streams[i], steps / 4); });
    for (auto& t : gts) t.join();
  }
  const double g_par = n * (steps / 4) / seconds_since(tg);
  const double g_seq = 1e6 / g_one.med;
  wharf_graph_stats gs;
  std::memset(&gs, 0, sizeof gs);
  gs.struct_size = sizeof gs;
  wharf_ok(wharf_model_get_graph_stats(g.model, &gs), "graph stats");
  const Stats e_h = stats(e_host), e_g = stats(e_gpu), g_h = stats(g_host), g_g = stats(g_gpu);
  std::vector<wharf_graph_bucket_info> buckets(gs.num_buckets);
  for (uint32_t i = 0; i < gs.num_buckets; ++i) {
    std::memset(&buckets[i], 0, sizeof buckets[i]);
    buckets[i].struct_size = sizeof buckets[i];
    wharf_ok(wharf_model_get_graph_bucket(g.model, i, &buckets[i]), "graph bucket");
  }
  const Stats g_first = stats(g_after_swap), g_second = stats(g_next_step), alt = stats(alternating);

  std::printf("model_bench: tiny decoder (AOTInductor, no libtorch), %d decode steps, one token each\n", steps);
  std::printf("%-46s %10s %10s %10s\n", "", "median", "min", "max");
  std::printf("%-46s %8.1f us %8.1f us %8.1f us\n", "wharf decode step (begin+model+read+end)", one.med, one.lo,
              one.hi);
  std::printf("%-46s %8.2f us %8.2f us %8.2f us\n", "wharf run overhead (begin+end, no work)", overhead.med,
              overhead.lo, overhead.hi);
  std::printf("%-46s %8.0f /s  (1 conversation: %.0f /s, %.2fx)\n", "4 conversations on 4 streams, steps", par, seq,
              par / seq);
  std::printf("%-46s %8.1f us %8.1f us %8.1f us\n", "first step after update+swap (rebind+refold)", first.med, first.lo,
              first.hi);
  std::printf("%-46s %8.1f us %8.1f us %8.1f us\n", "the step after it", second.med, second.lo, second.hi);
  std::printf("%-46s %10s %10s %10s\n", "CUDA graphs (wharf_model_enable_graphs)", "median", "min", "max");
  std::printf("%-46s %8.1f us %8.1f us %8.1f us  (eager %.1f us, %.2fx)\n", "graph decode step (begin+model+read+end)",
              g_one.med, g_one.lo, g_one.hi, one.med, one.med / g_one.med);
  std::printf("%-46s %8.2f us %8.2f us %8.2f us  (eager %.2f us)\n", "host time per step: begin+model run+end", g_h.med,
              g_h.lo, g_h.hi, e_h.med);
  print_breakdown("device inputs", bd_device);
  print_breakdown("host inputs", bd_host);
  std::printf("%-46s %8.2f us %8.2f us %8.2f us  (eager %.2f us, %.2fx)\n", "GPU time of the model run (events)",
              g_g.med, g_g.lo, g_g.hi, e_g.med, g_g.med / e_g.med);
  std::printf("%-46s %8.1f us %8.1f us %8.1f us\n", "first step after update+swap (re-point+fold)", g_first.med,
              g_first.lo, g_first.hi);
  {
    // What the swaps left on the serving path, and what preparing moved into the update.
    const Stats eu = stats(eager_update), gu = stats(g_update);
    const uint64_t nswaps = uint64_t(g_after_swap.size());
    const uint64_t prepares = swap1.prepares - swap0.prepares;
    std::printf(
        "  %llu swaps: serving path %llu re-points (%llu nodes), %llu folds, %llu pre-pointed replays; update "
        "%.1f us median (eager model %.1f us), of which preparing %.1f us per update (%llu folds, %llu failed)\n",
        (unsigned long long)nswaps, (unsigned long long)(swap1.repoints - swap0.repoints),
        (unsigned long long)(swap1.nodes_repointed - swap0.nodes_repointed),
        (unsigned long long)(swap1.replay_folds - swap0.replay_folds),
        (unsigned long long)(swap1.prepointed_replays - swap0.prepointed_replays), gu.med, eu.med,
        prepares ? double(swap1.prepare_ns - swap0.prepare_ns) / double(prepares) / 1e3 : 0.0,
        (unsigned long long)(swap1.prepare_folds - swap0.prepare_folds),
        (unsigned long long)(swap1.prepare_failures - swap0.prepare_failures));
  }
  std::printf("%-46s %8.1f us %8.1f us %8.1f us\n", "the step after it", g_second.med, g_second.lo, g_second.hi);
  std::printf("%-46s %8.1f us %8.1f us %8.1f us\n", "two conversations alternating, per step", alt.med, alt.lo, alt.hi);
  std::printf("%-46s %8.0f /s  (1 conversation: %.0f /s, %.2fx)\n", "4 conversations on 4 streams, graphs", g_par,
              g_seq, g_par / g_seq);
  std::printf(
      "graphs: %u bucket(s), %llu captures, %llu replays, %llu re-points (%llu nodes), %llu eager runs, "
      "%llu folds, pool %llu bytes, folded %llu bytes%s%s\n",
      gs.num_buckets, (unsigned long long)gs.captures, (unsigned long long)gs.replays, (unsigned long long)gs.repoints,
      (unsigned long long)gs.nodes_repointed, (unsigned long long)gs.eager_runs, (unsigned long long)gs.folds,
      (unsigned long long)gs.pool_bytes, (unsigned long long)gs.folded_bytes,
      gs.last_eager_reason[0] ? "; last eager reason: " : "", gs.last_eager_reason);
  const double steady = gs.replays > gs.repoints ? double(gs.bind_check_ns) / double(gs.replays - gs.repoints) : 0;
  std::printf(
      "graphs host time: binding a replay %.2f us (no change), %.2f us per re-point (%.2f us per node set), "
      "%.1f us per fold of a new generation in a replay (%llu), %.1f us per update preparing one (%llu, %llu "
      "pre-pointed replays)\n",
      steady / 1e3, gs.repoints ? double(gs.repoint_ns) / double(gs.repoints) / 1e3 : 0.0,
      gs.nodes_repointed ? double(gs.repoint_ns) / double(gs.nodes_repointed) / 1e3 : 0.0,
      gs.replay_folds ? double(gs.fold_ns) / double(gs.replay_folds) / 1e3 : 0.0, (unsigned long long)gs.replay_folds,
      gs.prepares ? double(gs.prepare_ns) / double(gs.prepares) / 1e3 : 0.0, (unsigned long long)gs.prepares,
      (unsigned long long)gs.prepointed_replays);
  for (const wharf_graph_bucket_info& b : buckets)
    std::printf(
        "  graph [%s] set %u: %llu nodes, %llu re-pointable (%llu words), pool +%llu bytes, captured in %.1f ms\n",
        b.shapes, b.set, (unsigned long long)b.nodes, (unsigned long long)b.patched_nodes,
        (unsigned long long)b.patches, (unsigned long long)b.pool_bytes, b.capture_ms);

  // A/B of the replay path: the current one (g) against the one before buckets (a third load
  // with WHARF_GRAPHS_LEGACY_REPLAY=1 at enable time), in alternating blocks on one stream.
  struct AbRow {
    const char* name;
    Ctx* c;
    bool host;
    std::vector<double> total, parts[3];
  };
  std::vector<AbRow> ab;
  Ctx l = x;
  l.model = nullptr;
  if (legacy_ab) {
    wharf_ok(wharf_model_load(x.rt, (dir + "/tiny_decoder.so").c_str(), weights, nullptr, &l.model), "model_load");
    l.c = wharf_model_container(l.model);
    ::setenv("WHARF_GRAPHS_LEGACY_REPLAY", "1", 1);
    wharf_ok(wharf_model_enable_graphs(l.model, nullptr), "enable_graphs (legacy replay path)");
    ::unsetenv("WHARF_GRAPHS_LEGACY_REPLAY");
    l.host_us = l.gpu_us = nullptr;
    decode(l, s0, 48);  // capture and warm-up
    g.host_us = g.gpu_us = nullptr;
    ab = {{"graph host/step, device inputs: current", &g, false, {}, {}},
          {"graph host/step, device inputs: legacy", &l, false, {}, {}},
          {"graph host/step, host inputs: current", &g, true, {}, {}},
          {"graph host/step, host inputs: legacy", &l, true, {}, {}}};
    for (int block = 0; block < 8; ++block)
      for (AbRow& r : ab) {
        r.c->host_inputs = r.host;
        r.c->host_us = &r.total;
        for (int i = 0; i < 3; ++i) r.c->part_us[i] = &r.parts[i];
        decode(*r.c, s0, steps / 8);
        r.c->host_inputs = false;
        r.c->host_us = nullptr;
        for (int i = 0; i < 3; ++i) r.c->part_us[i] = nullptr;
      }
    std::printf("%-46s %10s %10s %10s  (medians: begin / model run / end)\n",
                "A/B: replay path (WHARF_GRAPHS_LEGACY_REPLAY)", "median", "min", "max");
    for (const AbRow& r : ab) {
      const Stats t = stats(r.total);
      std::printf("%-46s %8.2f us %8.2f us %8.2f us  (%.2f / %.2f / %.2f us)\n", r.name, t.med, t.lo, t.hi,
                  median(r.parts[0]), median(r.parts[1]), median(r.parts[2]));
    }
  }
  if (!csv.empty()) {
    if (FILE* f = std::fopen(csv.c_str(), "w")) {
      std::fprintf(f, "metric,median_us,min_us,max_us\n");
      std::fprintf(f, "wharf_decode_step,%.3f,%.3f,%.3f\n", one.med, one.lo, one.hi);
      std::fprintf(f, "wharf_run_overhead,%.3f,%.3f,%.3f\n", overhead.med, overhead.lo, overhead.hi);
      std::fprintf(f, "wharf_4_streams_steps_per_s,%.1f,,\n", par);
      std::fprintf(f, "wharf_1_stream_steps_per_s,%.1f,,\n", seq);
      std::fprintf(f, "wharf_first_step_after_swap,%.3f,%.3f,%.3f\n", first.med, first.lo, first.hi);
      std::fprintf(f, "wharf_step_after_that,%.3f,%.3f,%.3f\n", second.med, second.lo, second.hi);
      std::fprintf(f, "wharf_eager_host_per_step,%.3f,%.3f,%.3f\n", e_h.med, e_h.lo, e_h.hi);
      std::fprintf(f, "wharf_eager_gpu_per_step,%.3f,%.3f,%.3f\n", e_g.med, e_g.lo, e_g.hi);
      std::fprintf(f, "wharf_graph_decode_step,%.3f,%.3f,%.3f\n", g_one.med, g_one.lo, g_one.hi);
      std::fprintf(f, "wharf_graph_host_per_step,%.3f,%.3f,%.3f\n", g_h.med, g_h.lo, g_h.hi);
      const std::pair<const char*, const Breakdown*> bds[2] = {{"device_inputs", &bd_device},
                                                               {"host_inputs", &bd_host}};
      for (const auto& [key, b] : bds) {
        const std::pair<const char*, double> parts[] = {
            {"begin", b->begin},     {"model_run", b->run},     {"end", b->end},        {"select", b->select},
            {"bind", b->bind},       {"wait", b->wait},         {"inputs", b->inputs},  {"launch", b->launch},
            {"outputs", b->outputs}, {"outside", b->outside()}, {"release", b->release}};
        for (const auto& [part, us] : parts) std::fprintf(f, "wharf_graph_host_mean_%s_%s,%.3f,,\n", key, part, us);
      }
      std::fprintf(f, "wharf_graph_gpu_per_step,%.3f,%.3f,%.3f\n", g_g.med, g_g.lo, g_g.hi);
      std::fprintf(f, "wharf_graph_first_step_after_swap,%.3f,%.3f,%.3f\n", g_first.med, g_first.lo, g_first.hi);
      std::fprintf(f, "wharf_graph_step_after_that,%.3f,%.3f,%.3f\n", g_second.med, g_second.lo, g_second.hi);
      const Stats eu = stats(eager_update), gu = stats(g_update);
      std::fprintf(f, "wharf_update_norm_weight,%.3f,%.3f,%.3f\n", eu.med, eu.lo, eu.hi);
      std::fprintf(f, "wharf_graph_update_norm_weight_with_prepare,%.3f,%.3f,%.3f\n", gu.med, gu.lo, gu.hi);
      std::fprintf(f, "wharf_graph_alternating_sessions_step,%.3f,%.3f,%.3f\n", alt.med, alt.lo, alt.hi);
      std::fprintf(f, "wharf_graph_4_streams_steps_per_s,%.1f,,\n", g_par);
      const char* ab_keys[4] = {
          "wharf_graph_host_per_step_device_inputs", "wharf_graph_legacy_host_per_step_device_inputs",
          "wharf_graph_host_per_step_host_inputs", "wharf_graph_legacy_host_per_step_host_inputs"};
      for (size_t i = 0; i < ab.size() && i < 4; ++i) {
        const Stats t = stats(ab[i].total);
        std::fprintf(f, "%s,%.3f,%.3f,%.3f\n", ab_keys[i], t.med, t.lo, t.hi);
      }
      std::fclose(f);
    }
  }
  for (auto& st : streams) cudaStreamDestroy(st);
  cudaStreamDestroy(s0);
  cudaEventDestroy(g.ev0);
  cudaEventDestroy(g.ev1);
  wharf_model_free(g.model);
  wharf_model_free(l.model);
  wharf_model_free(x.model);
  if (kernel_time) kernel_time_tiny(x.rt, dir, weights, csv);  // after every other figure
  wharf_constant_map_free(weights);
  wharf_runtime_free(x.rt);
  return 0;
}

// SPDX-License-Identifier: Apache-2.0
// package_bench: a Wharf model package (tools/export/wharf_export.py) loaded and run by Wharf,
// the Wharf side of the real-model benchmark (bench/real_models/run.sh puts it beside
// transformers eager, torch.compile(mode="reduce-overhead") and the HBM roofline, measured
// by bench/real_models/hf_baselines.py on the same GPU in the same run).
//
// Measures:
//   load_s        wharf_model_package_load: manifest checks, the weights read from the
//                 package's files into the weight store, every method loaded
//   prefill_us    the prefill method over --prefill tokens at positions 0..T-1 (a reset
//                 session each time): run begin, wharf_model_run, stream synchronize, run end
//   decode_us     the decode method for one token at the next position (positions --prefill,
//                 --prefill+1, ...): run begin, wharf_model_run, synchronize, run end
// Inputs are device buffers written once (the token is fixed, as in hf_baselines.py: no
// argmax round trip in the step). Medians with min and max. --graphs: the decode method
// replays a CUDA graph (wharf_model_enable_graphs; captured at the first warm-up step).
//   package_bench PACKAGE_DIR [--prefill 512] [--steps 200] [--csv FILE] [--graphs]
#include <cuda_runtime_api.h>

#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <string>
#include <vector>

#define WHARF_EXPERIMENTAL
#include "bench_common.h"

using namespace bench;

namespace {

wharf_tensor_view i64_view(int64_t* data, int32_t ndim, const int64_t* shape) {
  return tensor_view(data, WHARF_DTYPE_I64, WHARF_DEVICE_CUDA, ndim, shape);
}

// One run of `model` over `session`: begin, run, synchronize the run's stream, end.
void run_once(wharf_model* model, wharf_session* session, cudaStream_t stream, const wharf_tensor_view* in) {
  wharf_run* run = nullptr;
  wharf_ok(wharf_run_begin(wharf_model_container(model), session, stream, &run), "run_begin");
  wharf_tensor_view out;
  std::memset(&out, 0, sizeof out);
  out.struct_size = sizeof out;
  wharf_ok(wharf_model_run(model, run, in, 2, &out, 1), "model_run");
  CUDA_OK(cudaStreamSynchronize(stream));
  wharf_ok(wharf_run_end(run), "run_end");
}

}  // namespace

int main(int argc, char** argv) {
  if (argc < 2) {
    std::fprintf(stderr, "usage: package_bench PACKAGE_DIR [--prefill N] [--steps N] [--csv FILE] [--graphs]\n");
    return 2;
  }
  std::string dir = argv[1], csv;
  int64_t prefill = 512;
  int steps = 200;
  bool graphs = false;
  for (int i = 2; i < argc; i += 2) {
    std::string a = argv[i];
    if (a == "--graphs") {
      graphs = true;
      --i;
    } else if (i + 1 >= argc) {
      std::fprintf(stderr, "package_bench: %s needs a value\n", a.c_str());
      return 2;
    } else if (a == "--prefill") {
      prefill = std::atoll(argv[i + 1]);
    } else if (a == "--steps") {
      steps = std::atoi(argv[i + 1]);
    } else if (a == "--csv") {
      csv = argv[i + 1];
    } else {
      std::fprintf(stderr, "package_bench: unknown option %s\n", a.c_str());
      return 2;
    }
  }

  wharf_runtime_options ro;
  wharf_runtime_options_init(&ro);
  ro.backend = WHARF_BACKEND_CUDA;
  wharf_runtime* rt = nullptr;
  wharf_ok(wharf_runtime_create(&ro, &rt), "runtime_create");

  auto t0 = Clock::now();
  wharf_model_package* pkg = nullptr;
  wharf_ok(wharf_model_package_load(rt, dir.c_str(), nullptr, &pkg), "model_package_load");
  double load_s = seconds_since(t0);
  uint64_t max_seq = wharf_model_package_max_seq_len(pkg);
  if (max_seq && uint64_t(prefill) + uint64_t(steps) + 16 > max_seq) {
    std::fprintf(stderr, "package_bench: prefill %lld + %d steps do not fit max_seq_len %llu\n", (long long)prefill,
                 steps, (unsigned long long)max_seq);
    return 2;
  }
  wharf_model *pre = nullptr, *dec = nullptr;
  wharf_ok(wharf_model_package_get_method(pkg, "prefill", &pre), "get_method prefill");
  wharf_ok(wharf_model_package_get_method(pkg, "decode", &dec), "get_method decode");
  if (graphs) wharf_ok(wharf_model_enable_graphs(dec, nullptr), "enable_graphs decode");
  wharf_session* session = nullptr;
  wharf_ok(wharf_model_package_create_session(pkg, nullptr, &session), "create_session");

  cudaStream_t stream;
  CUDA_OK(cudaStreamCreateWithFlags(&stream, cudaStreamNonBlocking));
  std::vector<int64_t> ids(static_cast<size_t>(prefill)), pos(static_cast<size_t>(prefill));
  for (int64_t i = 0; i < prefill; ++i) {
    ids[size_t(i)] = (i * 7919 + 13) % 1000;  // any tokens below every vocabulary's size
    pos[size_t(i)] = i;
  }
  int64_t *d_ids = nullptr, *d_pos = nullptr, *d_tok = nullptr, *d_step = nullptr;
  CUDA_OK(cudaMalloc(reinterpret_cast<void**>(&d_ids), ids.size() * 8));
  CUDA_OK(cudaMalloc(reinterpret_cast<void**>(&d_pos), pos.size() * 8));
  CUDA_OK(cudaMalloc(reinterpret_cast<void**>(&d_tok), 8));
  CUDA_OK(cudaMalloc(reinterpret_cast<void**>(&d_step), size_t(steps + 16) * 8));
  CUDA_OK(cudaMemcpy(d_ids, ids.data(), ids.size() * 8, cudaMemcpyHostToDevice));
  CUDA_OK(cudaMemcpy(d_pos, pos.data(), pos.size() * 8, cudaMemcpyHostToDevice));
  const int64_t tok = 11;
  CUDA_OK(cudaMemcpy(d_tok, &tok, 8, cudaMemcpyHostToDevice));
  std::vector<int64_t> step_pos(size_t(steps + 16));
  for (size_t i = 0; i < step_pos.size(); ++i) step_pos[i] = prefill + int64_t(i);
  CUDA_OK(cudaMemcpy(d_step, step_pos.data(), step_pos.size() * 8, cudaMemcpyHostToDevice));

  const int64_t ids_shape[2] = {1, prefill}, pos_shape[1] = {prefill}, tok_shape[2] = {1, 1}, one[1] = {1};
  wharf_tensor_view pin[2] = {i64_view(d_ids, 2, ids_shape), i64_view(d_pos, 1, pos_shape)};

  std::vector<double> pre_us;
  for (int r = 0; r < 13; ++r) {
    wharf_ok(wharf_session_reset(session), "session_reset");
    CUDA_OK(cudaDeviceSynchronize());
    auto t = Clock::now();
    run_once(pre, session, stream, pin);
    if (r >= 3) pre_us.push_back(us_since(t));  // 3 warm-up prefills
  }
  std::vector<double> dec_us;
  for (int i = 0; i < steps + 10; ++i) {
    wharf_tensor_view din[2] = {i64_view(d_tok, 2, tok_shape), i64_view(d_step + i, 1, one)};
    auto t = Clock::now();
    run_once(dec, session, stream, din);
    if (i >= 10) dec_us.push_back(us_since(t));  // 10 warm-up steps
  }
  Spread p = spread(pre_us), d = spread(dec_us);
  std::printf("package %s (%s)\n", wharf_model_package_name(pkg), dir.c_str());
  std::printf("  load                 %10.3f s\n", load_s);
  std::printf("  prefill %5lld tokens  %10.1f us (min %.1f, max %.1f, n %zu)\n", (long long)prefill, p.med, p.lo, p.hi,
              p.n);
  std::printf("  decode step%s %10.1f us (min %.1f, max %.1f, n %zu)\n", graphs ? " (graph)" : "        ", d.med, d.lo,
              d.hi, d.n);
  if (graphs) {
    wharf_graph_stats gs;
    std::memset(&gs, 0, sizeof gs);
    gs.struct_size = sizeof gs;
    wharf_ok(wharf_model_get_graph_stats(dec, &gs), "graph stats");
    std::printf("  graphs: %llu replays, %llu eager runs, pool %llu bytes%s%s\n", (unsigned long long)gs.replays,
                (unsigned long long)gs.eager_runs, (unsigned long long)gs.pool_bytes,
                gs.last_eager_reason[0] ? ", last eager reason: " : "", gs.last_eager_reason);
  }
  if (!csv.empty()) {
    FILE* f = std::fopen(csv.c_str(), "w");
    if (!f) {
      std::perror(csv.c_str());
      return 2;
    }
    std::fprintf(f, "metric,median,min,max,n\n");
    std::fprintf(f, "load_s,%.4f,%.4f,%.4f,1\n", load_s, load_s, load_s);
    std::fprintf(f, "prefill_us,%.1f,%.1f,%.1f,%zu\n", p.med, p.lo, p.hi, p.n);
    std::fprintf(f, "decode_us,%.1f,%.1f,%.1f,%zu\n", d.med, d.lo, d.hi, d.n);
    std::fclose(f);
  }
  CUDA_OK(cudaFree(d_ids));
  CUDA_OK(cudaFree(d_pos));
  CUDA_OK(cudaFree(d_tok));
  CUDA_OK(cudaFree(d_step));
  CUDA_OK(cudaStreamDestroy(stream));
  wharf_session_free(session);
  wharf_model_free(pre);
  wharf_model_free(dec);
  wharf_model_package_free(pkg);
  wharf_runtime_free(rt);
  return 0;
}

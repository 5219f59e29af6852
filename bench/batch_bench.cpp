// SPDX-License-Identifier: Apache-2.0
// batch_bench: batched decode over N sessions of a Wharf model package (issue 26's table).
//
// The package must have a batched method (`decode_batch`, exported with
// `wharf_export.py --session-capacity S`; docs/model-package.md). The package is loaded with
// session_capacity S; S sessions are prefilled one by one with the per-session `prefill`
// method to mixed lengths (--min-len .. --max-len, spread evenly, so rows are ragged as in
// serving); then, for each N of --batches, `--steps` batched decode steps over the first N
// sessions, each step as a service would run it:
//   begin_batch, copy the N tokens and positions from pinned host memory (cudaMemcpyAsync on
//   the run's stream), wharf_model_run(decode_batch) (the slots input left empty: Wharf passes
//   the run's slot indices), read the logits back (N x vocab float32, pinned), synchronize,
//   run_end.
// Figures per N (medians with min and max over the steps after --warmup):
//   step_us       the whole step, wall clock
//   host_us       time on the host in Wharf's calls and the launches (begin_batch + input
//                 copies enqueued + model_run + end), i.e. the step minus the wait for the GPU
//   tokens_per_s  N / step
// and, with --independent (N <= --max-independent), the same N sessions decoded one after
// another with the per-session `decode` method (N runs per step): Wharf without batching.
// --graphs replays CUDA graphs for decode_batch (one capture per N, at its first warm-up
// step) and for decode.
// --kernel-time adds, as a phase of its own after the other figures, decode_batch's GPU time
// per N against the GPU time of its kernels (CUPTI; kernel_timer.h), eager and, with
// --graphs, replayed (kernel_time_batch below).
//   batch_bench PACKAGE_DIR [--batches 1,8,32,64,128] [--steps 50] [--warmup 5] [--graphs]
//                           [--independent] [--max-independent 32] [--min-len 16]
//                           [--max-len 512] [--csv FILE] [--kernel-time]
#include <cuda_runtime_api.h>

#include <algorithm>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <string>
#include <vector>

#define WHARF_EXPERIMENTAL
#include "bench_common.h"
#include "kernel_timer.h"

using namespace bench;

namespace {

std::vector<int> parse_list(const char* s) {
  std::vector<int> out;
  for (const char* p = s; *p;) {
    out.push_back(std::atoi(p));
    const char* c = std::strchr(p, ',');
    if (!c) break;
    p = c + 1;
  }
  return out;
}

struct Row {
  std::string mode;
  int n;
  Spread step, host;
};

// The decode method's vocabulary (its logits' last dimension).
size_t decode_vocab(wharf_model_package* pkg) {
  wharf_model_package_tensor_info od;
  std::memset(&od, 0, sizeof od);
  od.struct_size = sizeof od;
  const int64_t m = wharf_model_package_find_method(pkg, "decode");
  wharf_ok(wharf_model_package_get_method_output(pkg, size_t(m), 0, &od), "decode output");
  return size_t(od.shape[od.ndim - 1]);
}

// Prefills session i to length len[i] (spread evenly over [min_len, max_len]) with the
// per-session prefill method; returns the lengths.
std::vector<int64_t> prefill_sessions(wharf_model* pre, const std::vector<wharf_session*>& sessions, int64_t min_len,
                                      int64_t max_len, size_t vocab, cudaStream_t stream) {
  const int S = int(sessions.size());
  std::vector<int64_t> len(static_cast<size_t>(S));
  int64_t *d_ids = nullptr, *d_pos = nullptr;
  CUDA_OK(cudaMalloc(reinterpret_cast<void**>(&d_ids), size_t(max_len) * 8));
  CUDA_OK(cudaMalloc(reinterpret_cast<void**>(&d_pos), size_t(max_len) * 8));
  {
    std::vector<int64_t> ids(static_cast<size_t>(max_len)), pos(static_cast<size_t>(max_len));
    for (int64_t i = 0; i < max_len; ++i) {
      ids[size_t(i)] = (i * 7919 + 13) % int64_t(vocab);  // tokens below the vocabulary size
      pos[size_t(i)] = i;
    }
    CUDA_OK(cudaMemcpy(d_ids, ids.data(), ids.size() * 8, cudaMemcpyHostToDevice));
    CUDA_OK(cudaMemcpy(d_pos, pos.data(), pos.size() * 8, cudaMemcpyHostToDevice));
  }
  float* d_logits_pre = nullptr;
  CUDA_OK(cudaMalloc(reinterpret_cast<void**>(&d_logits_pre), vocab * 4));
  for (int i = 0; i < S; ++i) {
    len[size_t(i)] = S == 1 ? max_len : min_len + (max_len - min_len) * i / (S - 1);
    const int64_t ids_shape[2] = {1, len[size_t(i)]}, pos_shape[1] = {len[size_t(i)]},
                  out_shape[3] = {1, 1, int64_t(vocab)};
    wharf_tensor_view in[2] = {tensor_view(d_ids, WHARF_DTYPE_I64, WHARF_DEVICE_CUDA, 2, ids_shape),
                               tensor_view(d_pos, WHARF_DTYPE_I64, WHARF_DEVICE_CUDA, 1, pos_shape)};
    wharf_tensor_view out = tensor_view(d_logits_pre, WHARF_DTYPE_F32, WHARF_DEVICE_CUDA, 3, out_shape);
    wharf_run* run = nullptr;
    wharf_ok(wharf_run_begin(wharf_model_container(pre), sessions[size_t(i)], stream, &run), "run_begin prefill");
    wharf_ok(wharf_model_run(pre, run, in, 2, &out, 1), "model_run prefill");
    wharf_ok(wharf_run_end(run), "run_end prefill");
  }
  CUDA_OK(cudaStreamSynchronize(stream));
  CUDA_OK(cudaFree(d_ids));
  CUDA_OK(cudaFree(d_pos));
  CUDA_OK(cudaFree(d_logits_pre));
  return len;
}

// --kernel-time: for each N, decode_batch over sessions 0..N-1 (prefilled as the main rows'
// are; every run at each session's next position, tokens and positions from device memory),
// eagerly and, with `graphs`, replayed, against its kernels' GPU time. A package load of its
// own, made after the tracer is on, so graphs are captured while CUPTI records.
void kernel_time_batch(const std::string& dir, uint32_t capacity, const std::vector<int>& batches, int64_t min_len,
                       int64_t max_len, bool graphs) {
  ActivityTracer& t = ActivityTracer::get();
  if (!t.ok() || !t.enable()) {
    std::printf("kernel time: %s\n", t.why().c_str());
    return;
  }
  wharf_runtime_options ro;
  wharf_runtime_options_init(&ro);
  ro.backend = WHARF_BACKEND_CUDA;
  wharf_runtime* rt = nullptr;
  wharf_ok(wharf_runtime_create(&ro, &rt), "runtime_create");
  wharf_model_package_options po;
  wharf_model_package_options_init(&po);
  po.session_capacity = capacity;
  wharf_model_package* pkg = nullptr;
  wharf_ok(wharf_model_package_load(rt, dir.c_str(), &po, &pkg), "model_package_load");
  wharf_model *pre = nullptr, *bat = nullptr;
  wharf_ok(wharf_model_package_get_method(pkg, "prefill", &pre), "get_method prefill");
  wharf_ok(wharf_model_package_get_method(pkg, "decode_batch", &bat), "get_method decode_batch");
  const size_t vocab = decode_vocab(pkg);
  std::vector<wharf_session*> sessions(capacity, nullptr);
  for (auto& s : sessions) wharf_ok(wharf_model_package_create_session(pkg, nullptr, &s), "create_session");
  cudaStream_t stream;
  CUDA_OK(cudaStreamCreateWithFlags(&stream, cudaStreamNonBlocking));
  const std::vector<int64_t> len = prefill_sessions(pre, sessions, min_len, max_len, vocab, stream);
  int64_t *d_tok = nullptr, *d_pos = nullptr;
  CUDA_OK(cudaMalloc(reinterpret_cast<void**>(&d_tok), size_t(capacity) * 8));
  CUDA_OK(cudaMalloc(reinterpret_cast<void**>(&d_pos), size_t(capacity) * 8));
  {
    std::vector<int64_t> tok(capacity);
    for (size_t r = 0; r < tok.size(); ++r) tok[r] = int64_t(r * 31) % int64_t(vocab);
    CUDA_OK(cudaMemcpy(d_tok, tok.data(), tok.size() * 8, cudaMemcpyHostToDevice));
    CUDA_OK(cudaMemcpy(d_pos, len.data(), len.size() * 8, cudaMemcpyHostToDevice));
  }
  wharf_container* c = wharf_model_container(bat);
  std::vector<KernelTimeRow> rows;
  auto measure = [&](int n, bool replay) {
    const int64_t tok_shape[2] = {n, 1}, pos_shape[1] = {n};
    wharf_tensor_view in[3] = {tensor_view(d_tok, WHARF_DTYPE_I64, WHARF_DEVICE_CUDA, 2, tok_shape),
                               tensor_view(d_pos, WHARF_DTYPE_I64, WHARF_DEVICE_CUDA, 1, pos_shape),
                               tensor_view(nullptr, WHARF_DTYPE_I64, WHARF_DEVICE_CUDA, 1, pos_shape)};  // slots
    wharf_run* run = nullptr;
    wharf_tensor_view out;
    std::memset(&out, 0, sizeof out);
    out.struct_size = sizeof out;
    const RunHooks h{
        [&] { wharf_ok(wharf_run_begin_batch(c, sessions.data(), size_t(n), stream, &run), "run_begin_batch"); },
        [&] { wharf_ok(wharf_model_run(bat, run, in, 3, &out, 1), "model_run decode_batch"); },
        [&] { wharf_ok(wharf_run_end(run), "run_end"); }};
    wharf_graph_stats a;
    std::memset(&a, 0, sizeof a);
    a.struct_size = sizeof a;
    if (replay) {
      h.begin();  // the capture (the first one captures the largest bucket too)
      h.run();
      h.end();
      wharf_ok(wharf_model_get_graph_stats(bat, &a), "graph stats");
    }
    rows.push_back(measure_kernel_time(t, stream, h, 100, replay ? "graph" : "eager", n));
    if (replay) {
      wharf_graph_stats z = a;
      wharf_ok(wharf_model_get_graph_stats(bat, &z), "graph stats");
      if (z.eager_runs != a.eager_runs)
        rows.back().note += std::string(rows.back().note.empty() ? "" : "; ") +
                            std::to_string(z.eager_runs - a.eager_runs) +
                            " runs executed eagerly: " + z.last_eager_reason;
    }
  };
  for (int n : batches) measure(n, false);
  if (graphs) {
    wharf_ok(wharf_model_enable_graphs(bat, nullptr), "enable_graphs decode_batch");
    for (int n : batches) measure(n, true);
  }
  t.disable();
  const std::string title = std::string("kernel time: package ") + wharf_model_package_name(pkg) +
                            ", decode_batch over N sessions (wharf_model_run), eager" +
                            (graphs ? " and graph replay" : "") + " per N";
  print_kernel_time(title.c_str(), rows);
  CUDA_OK(cudaFree(d_tok));
  CUDA_OK(cudaFree(d_pos));
  CUDA_OK(cudaStreamDestroy(stream));
  for (auto* s : sessions) wharf_session_free(s);
  wharf_model_free(pre);
  wharf_model_free(bat);
  wharf_model_package_free(pkg);
  wharf_runtime_free(rt);
}

}  // namespace

int main(int argc, char** argv) {
  if (argc < 2) {
    std::fprintf(stderr,
                 "usage: batch_bench PACKAGE_DIR [--batches 1,8,32,64,128] [--steps 50] [--warmup 5] [--graphs]\n"
                 "                   [--independent] [--max-independent 32] [--min-len 16] [--max-len 512]"
                 " [--csv FILE] [--kernel-time]\n");
    return 2;
  }
  std::string dir = argv[1], csv;
  std::vector<int> batches = {1, 8, 32, 64, 128};
  int steps = 50, warmup = 5, max_indep = 32;
  int64_t min_len = 16, max_len = 512;
  bool graphs = false, independent = false, kernel_time = false;
  for (int i = 2; i < argc; ++i) {
    std::string a = argv[i];
    auto value = [&](const char* what) -> const char* {
      if (i + 1 >= argc) {
        std::fprintf(stderr, "batch_bench: %s needs a value\n", what);
        std::exit(2);
      }
      return argv[++i];
    };
    if (a == "--graphs")
      graphs = true;
    else if (a == "--independent")
      independent = true;
    else if (a == "--kernel-time")
      kernel_time = true;
    else if (a == "--batches")
      batches = parse_list(value("--batches"));
    else if (a == "--steps")
      steps = std::atoi(value("--steps"));
    else if (a == "--warmup")
      warmup = std::atoi(value("--warmup"));
    else if (a == "--max-independent")
      max_indep = std::atoi(value("--max-independent"));
    else if (a == "--min-len")
      min_len = std::atoll(value("--min-len"));
    else if (a == "--max-len")
      max_len = std::atoll(value("--max-len"));
    else if (a == "--csv")
      csv = value("--csv");
    else {
      std::fprintf(stderr, "batch_bench: unknown option %s\n", a.c_str());
      return 2;
    }
  }
  if (batches.empty() || steps < 1 || warmup < 1 || min_len < 1 || max_len < min_len) {
    std::fprintf(stderr, "batch_bench: bad options\n");
    return 2;
  }

  wharf_runtime_options ro;
  wharf_runtime_options_init(&ro);
  ro.backend = WHARF_BACKEND_CUDA;
  wharf_runtime* rt = nullptr;
  wharf_ok(wharf_runtime_create(&ro, &rt), "runtime_create");

  // The capacity the batched method was compiled for: load without an arena first is not
  // needed; the caller names it through the largest batch (the package refuses a mismatch
  // and says which capacity it needs).
  const int capacity = *std::max_element(batches.begin(), batches.end());
  wharf_model_package_options po;
  wharf_model_package_options_init(&po);
  po.session_capacity =
      uint32_t(std::getenv("BATCH_BENCH_CAPACITY") ? std::atoi(std::getenv("BATCH_BENCH_CAPACITY")) : capacity);
  auto t0 = Clock::now();
  wharf_model_package* pkg = nullptr;
  wharf_ok(wharf_model_package_load(rt, dir.c_str(), &po, &pkg), "model_package_load");
  const double load_s = seconds_since(t0);
  const int64_t max_seq = int64_t(wharf_model_package_max_seq_len(pkg));
  if (max_seq && max_len + warmup + steps + 1 > max_seq) {
    std::fprintf(stderr, "batch_bench: --max-len %lld + %d steps do not fit max_seq_len %lld\n", (long long)max_len,
                 warmup + steps, (long long)max_seq);
    return 2;
  }
  wharf_model *pre = nullptr, *dec = nullptr, *bat = nullptr;
  wharf_ok(wharf_model_package_get_method(pkg, "prefill", &pre), "get_method prefill");
  wharf_ok(wharf_model_package_get_method(pkg, "decode", &dec), "get_method decode");
  wharf_ok(wharf_model_package_get_method(pkg, "decode_batch", &bat), "get_method decode_batch");
  if (graphs) {
    wharf_ok(wharf_model_enable_graphs(bat, nullptr), "enable_graphs decode_batch");
    wharf_ok(wharf_model_enable_graphs(dec, nullptr), "enable_graphs decode");
  }
  const size_t vocab = decode_vocab(pkg);

  const int S = int(po.session_capacity);
  std::vector<wharf_session*> sessions(static_cast<size_t>(S), nullptr);
  for (auto& s : sessions) wharf_ok(wharf_model_package_create_session(pkg, nullptr, &s), "create_session");

  cudaStream_t stream;
  CUDA_OK(cudaStreamCreateWithFlags(&stream, cudaStreamNonBlocking));
  // Prefill session i to length len[i], spread evenly over [min_len, max_len].
  auto t_pre = Clock::now();
  const std::vector<int64_t> len = prefill_sessions(pre, sessions, min_len, max_len, vocab, stream);
  const double prefill_s = seconds_since(t_pre);

  // Pinned host inputs and outputs, as a service holds them.
  int64_t *h_tok = nullptr, *h_pos = nullptr;
  float* h_logits = nullptr;
  CUDA_OK(cudaMallocHost(reinterpret_cast<void**>(&h_tok), size_t(S) * 8));
  CUDA_OK(cudaMallocHost(reinterpret_cast<void**>(&h_pos), size_t(S) * 8));
  CUDA_OK(cudaMallocHost(reinterpret_cast<void**>(&h_logits), size_t(S) * vocab * 4));
  int64_t *d_tok = nullptr, *d_bpos = nullptr;
  float* d_logits = nullptr;
  CUDA_OK(cudaMalloc(reinterpret_cast<void**>(&d_tok), size_t(S) * 8));
  CUDA_OK(cudaMalloc(reinterpret_cast<void**>(&d_bpos), size_t(S) * 8));
  CUDA_OK(cudaMalloc(reinterpret_cast<void**>(&d_logits), size_t(S) * vocab * 4));
  std::vector<int64_t> next(len);  // each session's next position

  std::printf("package %s (%s): load %.3f s, %d sessions prefilled to %lld..%lld tokens in %.2f s%s\n",
              wharf_model_package_name(pkg), dir.c_str(), load_s, S, (long long)min_len, (long long)max_len, prefill_s,
              graphs ? ", CUDA graphs" : "");
  std::vector<Row> rows;
  for (int n : batches) {
    if (n < 1 || n > S) {
      std::fprintf(stderr, "batch_bench: batch %d outside 1..%d\n", n, S);
      return 2;
    }
    // Batched: one run over sessions 0..n-1, from the prefilled lengths (each batch size
    // overwrites the positions the previous one wrote, which costs what new positions do).
    next = len;
    std::vector<double> step_us, host_us;
    for (int it = 0; it < warmup + steps; ++it) {
      for (int r = 0; r < n; ++r) {
        h_tok[r] = (r * 31 + it) % int64_t(vocab);
        h_pos[r] = next[size_t(r)]++;
      }
      const int64_t tok_shape[2] = {n, 1}, pos_shape[1] = {n}, out_shape[3] = {n, 1, int64_t(vocab)};
      auto a = Clock::now();
      wharf_run* run = nullptr;
      wharf_ok(wharf_run_begin_batch(wharf_model_container(bat), sessions.data(), size_t(n), stream, &run),
               "run_begin_batch");
      CUDA_OK(cudaMemcpyAsync(d_tok, h_tok, size_t(n) * 8, cudaMemcpyHostToDevice, stream));
      CUDA_OK(cudaMemcpyAsync(d_bpos, h_pos, size_t(n) * 8, cudaMemcpyHostToDevice, stream));
      wharf_tensor_view in[3] = {
          tensor_view(d_tok, WHARF_DTYPE_I64, WHARF_DEVICE_CUDA, 2, tok_shape),
          tensor_view(d_bpos, WHARF_DTYPE_I64, WHARF_DEVICE_CUDA, 1, pos_shape),
          tensor_view(nullptr, WHARF_DTYPE_I64, WHARF_DEVICE_CUDA, 1, pos_shape)};  // slots: the run's
      wharf_tensor_view out = tensor_view(d_logits, WHARF_DTYPE_F32, WHARF_DEVICE_CUDA, 3, out_shape);
      wharf_ok(wharf_model_run(bat, run, in, 3, &out, 1), "model_run decode_batch");
      CUDA_OK(cudaMemcpyAsync(h_logits, d_logits, size_t(n) * vocab * 4, cudaMemcpyDeviceToHost, stream));
      auto b = Clock::now();
      CUDA_OK(cudaStreamSynchronize(stream));
      auto c = Clock::now();
      wharf_ok(wharf_run_end(run), "run_end");
      auto d = Clock::now();
      if (it >= warmup) {
        step_us.push_back(std::chrono::duration<double, std::micro>(d - a).count());
        host_us.push_back(std::chrono::duration<double, std::micro>((b - a) + (d - c)).count());
      }
    }
    rows.push_back({"batched", n, spread(step_us), spread(host_us)});
    if (independent && n <= max_indep) {
      next = len;
      std::vector<double> istep, ihost;
      for (int it = 0; it < warmup + steps; ++it) {
        double host = 0;
        auto a = Clock::now();
        for (int r = 0; r < n; ++r) {
          const int64_t tok_shape[2] = {1, 1}, one[1] = {1}, out_shape[3] = {1, 1, int64_t(vocab)};
          h_tok[r] = (r * 31 + it) % int64_t(vocab);
          h_pos[r] = next[size_t(r)]++;
          auto x = Clock::now();
          wharf_run* run = nullptr;
          wharf_ok(wharf_run_begin(wharf_model_container(dec), sessions[size_t(r)], stream, &run), "run_begin");
          CUDA_OK(cudaMemcpyAsync(d_tok + r, h_tok + r, 8, cudaMemcpyHostToDevice, stream));
          CUDA_OK(cudaMemcpyAsync(d_bpos + r, h_pos + r, 8, cudaMemcpyHostToDevice, stream));
          wharf_tensor_view in[2] = {tensor_view(d_tok + r, WHARF_DTYPE_I64, WHARF_DEVICE_CUDA, 2, tok_shape),
                                     tensor_view(d_bpos + r, WHARF_DTYPE_I64, WHARF_DEVICE_CUDA, 1, one)};
          wharf_tensor_view out =
              tensor_view(d_logits + size_t(r) * vocab, WHARF_DTYPE_F32, WHARF_DEVICE_CUDA, 3, out_shape);
          wharf_ok(wharf_model_run(dec, run, in, 2, &out, 1), "model_run decode");
          CUDA_OK(cudaMemcpyAsync(h_logits + size_t(r) * vocab, d_logits + size_t(r) * vocab, vocab * 4,
                                  cudaMemcpyDeviceToHost, stream));
          wharf_ok(wharf_run_end(run), "run_end");
          host += std::chrono::duration<double, std::micro>(Clock::now() - x).count();
        }
        CUDA_OK(cudaStreamSynchronize(stream));
        if (it >= warmup) {
          istep.push_back(us_since(a));
          ihost.push_back(host);
        }
      }
      rows.push_back({"independent", n, spread(istep), spread(ihost)});
    }
  }

  std::printf("%-12s %5s %12s %10s %10s %12s %10s\n", "mode", "N", "step_us", "min", "max", "host_us", "tokens/s");
  for (const Row& r : rows)
    std::printf("%-12s %5d %12.1f %10.1f %10.1f %12.1f %10.0f\n", r.mode.c_str(), r.n, r.step.med, r.step.lo, r.step.hi,
                r.host.med, r.n * 1e6 / r.step.med);
  if (graphs) {
    wharf_graph_stats gs;
    std::memset(&gs, 0, sizeof gs);
    gs.struct_size = sizeof gs;
    wharf_ok(wharf_model_get_graph_stats(bat, &gs), "graph stats");
    std::printf("decode_batch graphs: %llu replays, %llu eager runs, pool %llu bytes%s%s\n",
                (unsigned long long)gs.replays, (unsigned long long)gs.eager_runs, (unsigned long long)gs.pool_bytes,
                gs.last_eager_reason[0] ? ", last eager reason: " : "", gs.last_eager_reason);
    // Issue 25's capture figures: each bucket's capture (fold, warm-up, capture, instantiation)
    // and the pool it added; captured largest first, so the others reuse its blocks.
    const double capture_ms = print_graph_buckets(bat, gs.num_buckets);
    std::printf("decode_batch graphs: %u buckets captured in %.1f ms in all\n", gs.num_buckets, capture_ms);
  }
  if (!csv.empty()) {
    FILE* f = std::fopen(csv.c_str(), "w");
    if (!f) {
      std::perror(csv.c_str());
      return 2;
    }
    std::fprintf(f, "mode,n,step_us_median,step_us_min,step_us_max,host_us_median,tokens_per_s,graphs\n");
    for (const Row& r : rows)
      std::fprintf(f, "%s,%d,%.1f,%.1f,%.1f,%.1f,%.0f,%d\n", r.mode.c_str(), r.n, r.step.med, r.step.lo, r.step.hi,
                   r.host.med, r.n * 1e6 / r.step.med, graphs ? 1 : 0);
    std::fclose(f);
  }
  for (auto* p : {d_tok, d_bpos}) CUDA_OK(cudaFree(p));
  CUDA_OK(cudaFree(d_logits));
  CUDA_OK(cudaFreeHost(h_tok));
  CUDA_OK(cudaFreeHost(h_pos));
  CUDA_OK(cudaFreeHost(h_logits));
  CUDA_OK(cudaStreamDestroy(stream));
  for (auto* s : sessions) wharf_session_free(s);
  wharf_model_free(pre);
  wharf_model_free(dec);
  wharf_model_free(bat);
  wharf_model_package_free(pkg);
  wharf_runtime_free(rt);
  // After every other figure, with the package above freed.
  if (kernel_time) kernel_time_batch(dir, po.session_capacity, batches, min_len, max_len, graphs);
  return 0;
}

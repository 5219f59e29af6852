// SPDX-License-Identifier: Apache-2.0
// serve_update_bench: decode latency while full-size weight updates stream (issue 26, "serving
// while updating"), beside the same decode with nothing else running, and the update's own
// speed while serving beside its speed alone, measured in the same run on the same GPU.
//
// Serving: one thread decodes steps back to back on the committed tiny package
// (tests/data/packages/tiny-llama-f32, wharf_model_package_load, method "decode"; --package
// names another, e.g. an exported 1B-shaped bf16 one: its logits' dtype and vocabulary come
// from the manifest; positions run 0..63 and the session is reset), over
// --sessions sessions round robin, as a service would: the token goes in from host memory
// (--input host: a host tensor view handed to wharf_model_run, which copies it; --input
// device: the bench copies it into a device buffer first), the logits come back to host
// memory (--io pageable or pinned buffers) and the stream is synchronized every step. Each
// step records its latency, its parts (run begin, input copy, model run, synchronize, run end
// on the host; input copy, model and logits copy on the device from events), the generation
// it ran on (wharf_run_generation) and whether it succeeded. A session is reset (untimed)
// when its cache is full.
//
// Updating (--mode): one thread, back to back, with a timestamp at each phase:
//   big   a separate container of --update-gib GiB (--tensors BF16 constants) updated from
//         pageable host memory (--update-percent of its constants each time), swapped, and its
//         old generation freed (wharf_container_free_inactive): stage, swap, free.
//   self  the served package's own weight store updated from a file (update.safetensors and
//         the package's own weights, alternately) and swapped (wharf_weight_store_swap): the
//         served generation changes under the running steps.
//   both  each round: big, then self.
//   none  no updater (two idle measurements).
// Progress callbacks timestamp every 16 MiB of a big update (where in the update a slow
// step fell).
//
// Order: warm-up; idle serving (--idle-s); the update alone (--alone updates: its idle
// speed); serving while updating (--serve-s); idle serving again. Checks: no step failed;
// every step at position 0 (after a reset, fixed token) produced the logits of the weights of
// the generation it reported (references computed before, per weight set), so a step never
// mixes two generations; the served generation changed as often as the updater swapped (self).
//
// Output: a table (p50/p90/p99/max step latency idle and during updates, the update's GB/s
// alone and while serving as median [min, max], where slow steps fall by update phase, and
// the step's parts for fast and slow steps), one JSON object per row on stdout (lines
// starting with {"bench":"serve_update"), and --csv FILE. A/B switches of the library are
// environment variables read when the runtime is created (printed in the header);
// docs/performance.md lists them.
//
// usage: serve_update_bench [--package DIR] [--mode big|self|both|none] [--update-gib G]
//          [--tensors N] [--update-percent P] [--sessions N] [--idle-s S] [--serve-s S]
//          [--alone N] [--pause-ms N] [--input host|device] [--io pageable|pinned] [--graphs]
//          [--no-progress] [--default-pool-keep-mib N] [--copy-threads N] [--staging-mib N]
//          [--label TEXT] [--csv FILE]
#include <cuda_bf16.h>
#include <cuda_fp16.h>
#include <cuda_runtime_api.h>
#include <sys/stat.h>

#include <algorithm>
#include <atomic>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <map>
#include <memory>
#include <string>
#include <thread>
#include <vector>

#define WHARF_EXPERIMENTAL
#include "bench_common.h"

using namespace bench;

namespace {

// The decode method's logits: [1, 1, vocab] of float32 (the committed tiny package, vocab 256)
// or a half type (an exported real-size package, e.g. bf16 with vocab 128256); read from the
// package's manifest when the server starts.
int g_vocab = 256;
int32_t g_logit_dtype = WHARF_DTYPE_F32;
size_t logit_bytes() { return size_t(g_vocab) * (g_logit_dtype == WHARF_DTYPE_F32 ? 4 : 2); }
float logit_at(const void* p, int i) {
  if (g_logit_dtype == WHARF_DTYPE_BF16) return __bfloat162float(static_cast<const __nv_bfloat16*>(p)[i]);
  if (g_logit_dtype == WHARF_DTYPE_F16) return __half2float(static_cast<const __half*>(p)[i]);
  return static_cast<const float*>(p)[i];
}
constexpr int64_t kProbeToken = 17;  // the token every position-0 step decodes

double now_us(Clock::time_point epoch) {
  return std::chrono::duration<double, std::micro>(Clock::now() - epoch).count();
}

// One decode step as the serving thread saw it. Times in us since the bench's epoch.
struct StepRec {
  double t0 = 0, t1 = 0;
  // Host parts: run begin, input copy enqueue (--input device), model run (incl. its own input
  // copy with --input host), logits copy + stream synchronize, run end.
  float begin_us = 0, in_us = 0, model_us = 0, sync_us = 0, end_us = 0;
  // Device parts from events: input copy, model, logits copy (-1: not measured).
  float dev_in_us = -1, dev_model_us = -1, dev_out_us = -1;
  uint64_t gen = 0;
  uint32_t session = 0;
  int32_t pos = 0;
  bool ok = true;
  bool probe = false;     // position 0 with kProbeToken: its logits are checked
  uint32_t probe_id = 0;  // index into the probes' logits
};

// A phase of the updater, [t0, t1] in us since the epoch.
enum PhaseKind { kStage = 0, kSwap, kFree, kSelfUpdate, kSelfSwap, kNumPhases };
const char* const kPhaseName[] = {"stage (big update copy)", "swap (big)", "free old generation (big)",
                                  "self update (package store)", "self swap (package store)"};

struct PhaseRec {
  PhaseKind kind;
  double t0, t1;
  uint64_t bytes;
  uint64_t gen_after;  // self swap: the served generation it published
  int weight_set;      // self update/swap: which weights (0: the package's, 1: update.safetensors)
};

struct ProgressMark {
  double t;
  uint64_t done, total;
};

struct Pct {
  double p50 = 0, p90 = 0, p99 = 0, max = 0, mean = 0;
  size_t n = 0;
};
Pct pct(std::vector<double> v) {
  Pct p;
  p.n = v.size();
  if (v.empty()) return p;
  std::sort(v.begin(), v.end());
  auto at = [&](double q) { return v[std::min(v.size() - 1, size_t(q * double(v.size())))]; };
  p.p50 = at(0.50);
  p.p90 = at(0.90);
  p.p99 = at(0.99);
  p.max = v.back();
  double s = 0;
  for (double x : v) s += x;
  p.mean = s / double(v.size());
  return p;
}

struct MedRange {
  double med = 0, lo = 0, hi = 0;
  size_t n = 0;
};
MedRange med_range(const std::vector<double>& v) {
  MedRange m;
  m.n = v.size();
  if (v.empty()) return m;
  m.med = median(v);
  m.lo = *std::min_element(v.begin(), v.end());
  m.hi = *std::max_element(v.begin(), v.end());
  return m;
}

wharf_tensor_view view(void* data, wharf_dtype dt, wharf_device_type dev, int32_t ndim, const int64_t* shape) {
  return tensor_view(data, dt, dev, ndim, shape);
}

struct Options {
  std::string package, mode = "big", input = "host", io = "pageable", label, csv;
  double update_gib = 8, idle_s = 3, serve_s = 10;
  int tensors = 64, update_percent = 100, sessions = 1, alone = 3, pause_ms = 0;
  bool graphs = false, progress = true;
  long long default_pool_keep_mib = -1;  // -1: leave the default pool as it is
  uint32_t copy_threads = 0;
  uint64_t staging_mib = 0;
};

// --- the serving side -------------------------------------------------------------------

class Server {
 public:
  Server(const Options& o, wharf_model_package* pkg, Clock::time_point epoch) : o_(o), epoch_(epoch) {
    wharf_ok(wharf_model_package_get_method(pkg, "decode", &model_), "get_method decode");
    {
      const int64_t mi = wharf_model_package_find_method(pkg, "decode");
      wharf_model_package_tensor_info oi;
      std::memset(&oi, 0, sizeof oi);
      oi.struct_size = sizeof oi;
      wharf_ok(wharf_model_package_get_method_output(pkg, size_t(mi), 0, &oi), "decode's output");
      if (oi.ndim < 1 || oi.shape[oi.ndim - 1] < 1 ||
          (oi.dtype != WHARF_DTYPE_F32 && oi.dtype != WHARF_DTYPE_BF16 && oi.dtype != WHARF_DTYPE_F16)) {
        std::fprintf(stderr, "serve_update_bench: decode's first output is not float logits [..., vocab]\n");
        std::exit(2);
      }
      g_vocab = int(oi.shape[oi.ndim - 1]);
      g_logit_dtype = oi.dtype;
    }
    if (o.graphs) wharf_ok(wharf_model_enable_graphs(model_, nullptr), "enable_graphs");
    c_ = wharf_model_container(model_);
    max_pos_ = int32_t(std::min<uint64_t>(wharf_model_package_max_seq_len(pkg), 64)) - 1;
    if (max_pos_ < 1) max_pos_ = 63;
    for (int i = 0; i < o.sessions; ++i) {
      wharf_session* s = nullptr;
      wharf_ok(wharf_model_package_create_session(pkg, nullptr, &s), "create_session");
      sessions_.push_back(s);
    }
    pos_.assign(size_t(o.sessions), 0);
    tok_.assign(size_t(o.sessions), kProbeToken);
    CUDA_OK(cudaStreamCreateWithFlags(&stream_, cudaStreamNonBlocking));
    for (cudaEvent_t& e : ev_) CUDA_OK(cudaEventCreate(&e));
    pinned_ = o.io == "pinned";
    if (pinned_) {
      CUDA_OK(cudaHostAlloc(reinterpret_cast<void**>(&h_in_), 4 * sizeof(int64_t), cudaHostAllocPortable));
      CUDA_OK(cudaHostAlloc(reinterpret_cast<void**>(&h_out_), logit_bytes(), cudaHostAllocPortable));
    } else {
      h_in_ = new int64_t[4];
      h_out_ = new unsigned char[logit_bytes()];
    }
    CUDA_OK(cudaMalloc(reinterpret_cast<void**>(&d_in_), 4 * sizeof(int64_t)));
  }
  ~Server() {
    for (wharf_session* s : sessions_) wharf_session_free(s);
    wharf_model_free(model_);
    for (cudaEvent_t e : ev_) cudaEventDestroy(e);
    cudaStreamDestroy(stream_);
    cudaFree(d_in_);
    if (pinned_) {
      cudaFreeHost(h_in_);
      cudaFreeHost(h_out_);
    } else {
      delete[] h_in_;
      delete[] h_out_;
    }
  }
  wharf_container* container() const { return c_; }

  // One step of session `si`; appends its record. Returns false if a call failed.
  bool step(size_t si, std::vector<StepRec>* recs, std::vector<std::vector<float>>* probe_logits) {
    if (pos_[si] > max_pos_) {  // the cache is full: start the conversation again (untimed)
      wharf_status* st = wharf_session_reset(sessions_[si]);
      if (st) {
        std::fprintf(stderr, "session reset: %s\n", wharf_status_message(st));
        wharf_status_free(st);
        return false;
      }
      pos_[si] = 0;
      tok_[si] = kProbeToken;
    }
    StepRec r;
    r.session = uint32_t(si);
    r.pos = pos_[si];
    r.probe = r.pos == 0;
    const auto t0 = Clock::now();
    r.t0 = std::chrono::duration<double, std::micro>(t0 - epoch_).count();
    wharf_run* run = nullptr;
    wharf_status* st = wharf_run_begin(c_, sessions_[si], stream_, &run);
    auto t_a = Clock::now();
    r.begin_us = float(std::chrono::duration<double, std::micro>(t_a - t0).count());
    if (st) return fail(st, &r, recs, "run_begin");
    r.gen = wharf_run_generation(run);
    CUDA_OK(cudaEventRecord(ev_[0], stream_));
    h_in_[0] = tok_[si];
    h_in_[1] = 0;
    h_in_[2] = pos_[si];
    const int64_t tshape[2] = {1, 1}, pshape[1] = {1};
    wharf_tensor_view in[2];
    if (o_.input == "device") {
      CUDA_OK(cudaMemcpyAsync(d_in_, h_in_, 3 * sizeof(int64_t), cudaMemcpyHostToDevice, stream_));
      in[0] = view(d_in_, WHARF_DTYPE_I64, WHARF_DEVICE_CUDA, 2, tshape);
      in[1] = view(d_in_ + 2, WHARF_DTYPE_I64, WHARF_DEVICE_CUDA, 1, pshape);
    } else {
      in[0] = view(h_in_, WHARF_DTYPE_I64, WHARF_DEVICE_CPU, 2, tshape);
      in[1] = view(h_in_ + 2, WHARF_DTYPE_I64, WHARF_DEVICE_CPU, 1, pshape);
    }
    CUDA_OK(cudaEventRecord(ev_[1], stream_));
    auto t_b = Clock::now();
    r.in_us = float(std::chrono::duration<double, std::micro>(t_b - t_a).count());
    wharf_tensor_view out;
    std::memset(&out, 0, sizeof out);
    out.struct_size = sizeof out;
    st = wharf_model_run(model_, run, in, 2, &out, 1);
    auto t_c = Clock::now();
    r.model_us = float(std::chrono::duration<double, std::micro>(t_c - t_b).count());
    if (st) {
      wharf_status_free(wharf_run_end(run));
      return fail(st, &r, recs, "model_run");
    }
    CUDA_OK(cudaEventRecord(ev_[2], stream_));
    CUDA_OK(cudaMemcpyAsync(h_out_, out.data, logit_bytes(), cudaMemcpyDeviceToHost, stream_));
    CUDA_OK(cudaEventRecord(ev_[3], stream_));
    CUDA_OK(cudaStreamSynchronize(stream_));
    auto t_d = Clock::now();
    r.sync_us = float(std::chrono::duration<double, std::micro>(t_d - t_c).count());
    st = wharf_run_end(run);
    auto t_e = Clock::now();
    r.end_us = float(std::chrono::duration<double, std::micro>(t_e - t_d).count());
    r.t1 = std::chrono::duration<double, std::micro>(t_e - epoch_).count();
    if (st) return fail(st, &r, recs, "run_end");
    float ms = 0;
    if (cudaEventElapsedTime(&ms, ev_[0], ev_[1]) == cudaSuccess) r.dev_in_us = ms * 1e3f;
    if (cudaEventElapsedTime(&ms, ev_[1], ev_[2]) == cudaSuccess) r.dev_model_us = ms * 1e3f;
    if (cudaEventElapsedTime(&ms, ev_[2], ev_[3]) == cudaSuccess) r.dev_out_us = ms * 1e3f;
    if (r.probe && probe_logits) {
      r.probe_id = uint32_t(probe_logits->size());
      std::vector<float> row(static_cast<size_t>(g_vocab));
      for (int i = 0; i < g_vocab; ++i) row[size_t(i)] = logit_at(h_out_, i);
      probe_logits->push_back(std::move(row));
    }
    int64_t best = 0;
    float top = logit_at(h_out_, 0);
    for (int i = 1; i < g_vocab; ++i) {
      const float v = logit_at(h_out_, i);
      if (v > top) {
        top = v;
        best = i;
      }
    }
    tok_[si] = best;
    ++pos_[si];
    recs->push_back(r);
    return true;
  }

  // Steps round robin until `stop` (or `seconds` pass, if > 0).
  void serve(std::atomic<bool>* stop, double seconds, std::vector<StepRec>* recs,
             std::vector<std::vector<float>>* probes) {
    const auto t0 = Clock::now();
    size_t si = 0;
    while (!stop->load(std::memory_order_relaxed)) {
      if (seconds > 0 && seconds_since(t0) >= seconds) break;
      step(si, recs, probes);
      si = (si + 1) % sessions_.size();
    }
  }

  // The logits of a position-0 step with kProbeToken on a fresh session, under whatever
  // generation is active now (before any serving: the reference for that weight set).
  std::vector<float> reference() {
    std::vector<StepRec> recs;
    std::vector<std::vector<float>> probes;
    pos_[0] = max_pos_ + 1;  // forces a reset
    for (int i = 0; i < 3; ++i) {
      pos_[0] = max_pos_ + 1;
      if (!step(0, &recs, &probes)) {
        std::fprintf(stderr, "serve_update_bench: the reference step failed\n");
        std::exit(2);
      }
    }
    for (size_t i = 1; i < probes.size(); ++i)
      if (probes[i] != probes[0]) {
        std::fprintf(stderr,
                     "serve_update_bench: the reference step is not bitwise repeatable; logits are compared "
                     "with a tolerance\n");
        break;
      }
    return probes.back();
  }

  void reset_all() {
    for (size_t i = 0; i < sessions_.size(); ++i) pos_[i] = max_pos_ + 1;
  }

 private:
  bool fail(wharf_status* st, StepRec* r, std::vector<StepRec>* recs, const char* what) {
    if (failures_++ < 5) std::fprintf(stderr, "step failed: %s: %s\n", what, wharf_status_message(st));
    wharf_status_free(st);
    r->ok = false;
    r->t1 = now_us(epoch_);
    recs->push_back(*r);
    return false;
  }

  const Options& o_;
  Clock::time_point epoch_;
  wharf_model* model_ = nullptr;
  wharf_container* c_ = nullptr;
  std::vector<wharf_session*> sessions_;
  std::vector<int32_t> pos_;
  std::vector<int64_t> tok_;
  int32_t max_pos_ = 63;
  cudaStream_t stream_ = nullptr;
  cudaEvent_t ev_[4] = {};
  bool pinned_ = false;
  int64_t* h_in_ = nullptr;
  unsigned char* h_out_ = nullptr;  // the logits as the model wrote them (g_logit_dtype)
  int64_t* d_in_ = nullptr;
  int failures_ = 0;
};

// --- the updating side ------------------------------------------------------------------

struct Updater {
  const Options& o;
  Clock::time_point epoch;
  wharf_runtime* rt = nullptr;
  // big: a separate container and a map of pageable sources
  wharf_container* big = nullptr;
  wharf_constant_map* big_map = nullptr;
  uint64_t big_bytes = 0;            // bytes one big update copies
  std::unique_ptr<char[]> pageable;  // not value-initialized: touch() writes it from every core
  // self: the served package's store and the two weight files
  wharf_weight_store* store = nullptr;
  wharf_container* served = nullptr;
  std::string files[2];
  int next_set = 1;  // the weights the next self update writes
  std::vector<PhaseRec> phases;
  std::vector<ProgressMark> marks;
  // marks: written by the progress callback on the updating thread, read after it joined
  std::map<uint64_t, int> set_of_gen;  // served generation -> weight set (self swaps)
  int failures = 0;

  static int32_t on_progress(uint64_t done, uint64_t total, void* user) {
    auto* u = static_cast<Updater*>(user);
    u->marks.push_back({now_us(u->epoch), done, total});
    return 0;
  }

  bool ok(wharf_status* st, const char* what) {
    if (!st) return true;
    if (failures++ < 5) std::fprintf(stderr, "updater: %s: %s\n", what, wharf_status_message(st));
    wharf_status_free(st);
    return false;
  }

  void big_round() {
    wharf_update_options uo;
    wharf_update_options_init(&uo);
    if (o.progress) {
      uo.progress = &Updater::on_progress;
      uo.progress_user = this;
    }
    double t0 = now_us(epoch);
    bool good = ok(wharf_container_update(big, big_map, &uo), "big update");
    double t1 = now_us(epoch);
    phases.push_back({kStage, t0, t1, good ? big_bytes : 0, 0, -1});
    if (!good) return;
    t0 = now_us(epoch);
    good = ok(wharf_container_swap(big), "big swap");
    t1 = now_us(epoch);
    phases.push_back({kSwap, t0, t1, 0, 0, -1});
    t0 = now_us(epoch);
    good = ok(wharf_container_free_inactive(big), "big free_inactive") && good;
    t1 = now_us(epoch);
    phases.push_back({kFree, t0, t1, 0, 0, -1});
  }

  void self_round() {
    const int set = next_set;
    double t0 = now_us(epoch);
    bool good = ok(wharf_weight_store_update_from_file(store, files[set].c_str(), nullptr), "self update");
    double t1 = now_us(epoch);
    phases.push_back({kSelfUpdate, t0, t1, 0, 0, set});
    if (!good) return;
    t0 = now_us(epoch);
    good = ok(wharf_weight_store_swap(store), "self swap");
    const uint64_t gen = wharf_container_generation(served);
    t1 = now_us(epoch);
    phases.push_back({kSelfSwap, t0, t1, 0, gen, set});
    if (good) {
      set_of_gen[gen] = set;
      next_set = 1 - set;
    }
  }

  void round() {
    if (o.mode == "big" || o.mode == "both") big_round();
    if (o.mode == "self" || o.mode == "both") self_round();
    if (o.pause_ms > 0) std::this_thread::sleep_for(std::chrono::milliseconds(o.pause_ms));
  }

  // How far the big update was (bytes done / total) at time t, from the progress marks; -1
  // outside an update.
  double progress_at(double t) const {
    auto it = std::upper_bound(marks.begin(), marks.end(), t, [](double x, const ProgressMark& m) { return x < m.t; });
    if (it == marks.begin()) return -1;
    --it;
    return it->total ? double(it->done) / double(it->total) : -1;
  }
};

// Which phase a step falls in: the one it overlaps by priority (free, swap, self swap, self
// update, stage), else none (-1).
int phase_of(const StepRec& s, const std::vector<PhaseRec>& ph, size_t* hint, double* frac_in_stage, bool* after_free) {
  // Phases are sorted by t0; move the hint to the first phase that may overlap.
  while (*hint < ph.size() && ph[*hint].t1 < s.t0 - 100000.0) ++*hint;
  int best = -1, best_rank = 99;
  *after_free = false;
  *frac_in_stage = -1;
  const int rank_of[kNumPhases] = {4, 1, 0, 3, 2};  // kStage, kSwap, kFree, kSelfUpdate, kSelfSwap
  for (size_t i = *hint; i < ph.size() && ph[i].t0 <= s.t1; ++i) {
    const PhaseRec& p = ph[i];
    if (p.kind == kFree && p.t1 <= s.t0 && s.t0 - p.t1 < 50000.0) *after_free = true;
    if (p.t1 < s.t0) continue;
    if (rank_of[p.kind] < best_rank) {
      best_rank = rank_of[p.kind];
      best = int(p.kind);
      if (p.kind == kStage && p.t1 > p.t0)
        *frac_in_stage = std::clamp((0.5 * (s.t0 + s.t1) - p.t0) / (p.t1 - p.t0), 0.0, 1.0);
    }
  }
  return best;
}

void print_pct_row(const char* what, const Pct& p, double idle_p99) {
  std::printf("  %-44s %8zu %9.1f %9.1f %9.1f %10.1f %8.2fx\n", what, p.n, p.p50, p.p90, p.p99, p.max,
              idle_p99 > 0 ? p.p99 / idle_p99 : 0.0);
}

std::string json_escape(const std::string& s) {
  std::string o;
  for (char c : s) {
    if (c == '"' || c == '\\') o += '\\';
    o += c;
  }
  return o;
}

}  // namespace

int main(int argc, char** argv) {
  Options o;
  for (int i = 1; i < argc; ++i) {
    std::string a = argv[i];
    auto val = [&]() -> const char* {
      if (i + 1 >= argc) {
        std::fprintf(stderr, "serve_update_bench: %s needs a value\n", a.c_str());
        std::exit(2);
      }
      return argv[++i];
    };
    if (a == "--package")
      o.package = val();
    else if (a == "--mode")
      o.mode = val();
    else if (a == "--update-gib")
      o.update_gib = std::atof(val());
    else if (a == "--tensors")
      o.tensors = std::atoi(val());
    else if (a == "--update-percent")
      o.update_percent = std::atoi(val());
    else if (a == "--sessions")
      o.sessions = std::atoi(val());
    else if (a == "--idle-s")
      o.idle_s = std::atof(val());
    else if (a == "--serve-s")
      o.serve_s = std::atof(val());
    else if (a == "--alone")
      o.alone = std::atoi(val());
    else if (a == "--pause-ms")
      o.pause_ms = std::atoi(val());
    else if (a == "--input")
      o.input = val();
    else if (a == "--io")
      o.io = val();
    else if (a == "--graphs")
      o.graphs = true;
    else if (a == "--no-progress")
      o.progress = false;
    else if (a == "--default-pool-keep-mib")
      o.default_pool_keep_mib = std::atoll(val());
    else if (a == "--copy-threads")
      o.copy_threads = uint32_t(std::atoi(val()));
    else if (a == "--staging-mib")
      o.staging_mib = uint64_t(std::atoll(val()));
    else if (a == "--label")
      o.label = val();
    else if (a == "--csv")
      o.csv = val();
    else {
      std::fprintf(stderr,
                   "usage: serve_update_bench [--package DIR] [--mode big|self|both|none] [--update-gib G] "
                   "[--tensors N] [--update-percent P] [--sessions N] [--idle-s S] [--serve-s S] [--alone N] "
                   "[--pause-ms N] [--input host|device] [--io pageable|pinned] [--graphs] [--no-progress] "
                   "[--default-pool-keep-mib N] [--copy-threads N] [--staging-mib N] [--label TEXT] [--csv FILE]\n");
      return 2;
    }
  }
  if ((o.mode != "big" && o.mode != "self" && o.mode != "both" && o.mode != "none") ||
      (o.input != "host" && o.input != "device") || (o.io != "pageable" && o.io != "pinned") || o.sessions < 1 ||
      o.tensors < 1 || o.update_percent < 1 || o.update_percent > 100) {
    std::fprintf(stderr, "serve_update_bench: bad --mode, --input, --io, --sessions, --tensors or --update-percent\n");
    return 2;
  }
  if (o.package.empty()) {
    struct stat st;
    o.package = ::stat("packages/tiny-llama-f32/manifest.json", &st) == 0 ? "packages/tiny-llama-f32"
                                                                          : "tests/data/packages/tiny-llama-f32";
    if (::stat((o.package + "/manifest.json").c_str(), &st) != 0 &&
        ::stat(WHARF_BENCH_SOURCE_DIR "/tests/data/packages/tiny-llama-f32/manifest.json", &st) == 0)
      o.package = WHARF_BENCH_SOURCE_DIR "/tests/data/packages/tiny-llama-f32";
  }
  const bool big_mode = o.mode == "big" || o.mode == "both";
  const bool self_mode = o.mode == "self" || o.mode == "both";

  // The process owns the default pool the AOTInductor shim allocates a model's temporaries
  // from; a release threshold keeps freed memory there instead of handing it back to the
  // driver at every synchronize (hypothesis: that unmapping meets the update's allocations).
  if (o.default_pool_keep_mib >= 0) {
    cudaMemPool_t pool;
    CUDA_OK(cudaDeviceGetDefaultMemPool(&pool, 0));
    uint64_t keep = uint64_t(o.default_pool_keep_mib) << 20;
    CUDA_OK(cudaMemPoolSetAttribute(pool, cudaMemPoolAttrReleaseThreshold, &keep));
  }

  wharf_runtime_options ro;
  wharf_runtime_options_init(&ro);
  ro.backend = WHARF_BACKEND_CUDA;
  ro.copy_threads = o.copy_threads;
  ro.staging_bytes = o.staging_mib << 20;
  wharf_runtime* rt = nullptr;
  wharf_ok(wharf_runtime_create(&ro, &rt), "runtime");
  wharf_device_info info;
  std::memset(&info, 0, sizeof info);
  info.struct_size = sizeof info;
  wharf_ok(wharf_runtime_get_device_info(rt, &info), "device info");
  const Clock::time_point epoch = Clock::now();

  wharf_model_package* pkg = nullptr;
  wharf_ok(wharf_model_package_load(rt, o.package.c_str(), nullptr, &pkg), "model_package_load");
  Server server(o, pkg, epoch);

  Updater up{o, epoch, rt};
  up.store = wharf_model_package_store(pkg);
  up.served = server.container();
  up.files[0] = o.package + "/weights/model.safetensors";
  up.files[1] = o.package + "/update.safetensors";
  const uint64_t per_tensor = (uint64_t(o.update_gib * double(1ull << 30)) / uint64_t(o.tensors)) & ~uint64_t(4095);
  const int count = std::max(1, o.tensors * o.update_percent / 100);
  if (big_mode) {
    const uint64_t total = per_tensor * uint64_t(o.tensors);
    up.pageable.reset(new char[total]);
    touch(up.pageable.get(), total, 1);
    auto make = [&](int n) {
      wharf_constant_map* m = nullptr;
      wharf_ok(wharf_constant_map_create(&m), "map");
      const int64_t elems = int64_t(per_tensor / 2);  // BF16
      for (int i = 0; i < n; ++i) {
        wharf_tensor_view v =
            view(up.pageable.get() + uint64_t(i) * per_tensor, WHARF_DTYPE_BF16, WHARF_DEVICE_CPU, 1, &elems);
        wharf_ok(wharf_constant_map_set(m, ("layers." + std::to_string(i) + ".weight").c_str(), &v), "map set");
      }
      return m;
    };
    wharf_constant_map* init = make(o.tensors);
    wharf_ok(wharf_container_create_from_map(rt, init, nullptr, &up.big), "big container");
    wharf_constant_map_free(init);
    up.big_map = make(count);
    up.big_bytes = per_tensor * uint64_t(count);
  }

  // Environment switches of the library (A/B): printed so each log says what it measured.
  std::string env;
  for (const char* k :
       {"WHARF_SERVING_WINDOW_MS", "WHARF_SERVING_DMA_KIB", "WHARF_SERVING_INFLIGHT_KIB", "WHARF_SERVING_POLL_US",
        "WHARF_SERVING_COPY_THREADS", "WHARF_SERVING_POOL_KEEP_MIB", "WHARF_DEFER_RUN_FREES", "WHARF_LOG_LEVEL"})
    if (const char* v = std::getenv(k)) env += std::string(" ") + k + "=" + v;
  std::printf("serve_update_bench: %s (wharf %s)%s%s; package %s, %d session(s), input %s, io %s%s; mode %s", info.name,
              wharf_version(), o.label.empty() ? "" : ", label ", o.label.c_str(), o.package.c_str(), o.sessions,
              o.input.c_str(), o.io.c_str(), o.graphs ? ", graphs" : "", o.mode.c_str());
  if (big_mode)
    std::printf(", big updates of %d x %.0f MiB = %.2f GiB (%d%% of %.2f GiB) from pageable memory", count,
                double(per_tensor) / (1 << 20), double(up.big_bytes) / double(1ull << 30), o.update_percent,
                double(per_tensor * uint64_t(o.tensors)) / double(1ull << 30));
  std::printf("; default pool keep %lld MiB; env:%s\n", o.default_pool_keep_mib, env.empty() ? " (none)" : env.c_str());

  // References: the position-0 logits of each weight set (set 1 staged and swapped in, then
  // the package's own weights back) before anything is timed.
  std::vector<float> ref[2];
  ref[0] = server.reference();
  up.set_of_gen[wharf_container_generation(server.container())] = 0;
  if (self_mode) {
    up.self_round();  // set 1
    ref[1] = server.reference();
    up.self_round();  // back to set 0
    up.phases.clear();
    float diff = 0;
    for (int i = 0; i < g_vocab; ++i) diff = std::max(diff, std::fabs(ref[0][size_t(i)] - ref[1][size_t(i)]));
    std::printf("  the two weight sets' position-0 logits differ by up to %.4g (what the check can tell apart)\n",
                double(diff));
  }

  // Warm-up: steps, then one of each update phase.
  {
    std::atomic<bool> stop{false};
    std::vector<StepRec> warm;
    warm.reserve(100000);
    server.serve(&stop, 0.5, &warm, nullptr);
    if (big_mode || self_mode) up.round();
    up.phases.clear();
    up.marks.clear();
    server.reset_all();
  }

  const size_t cap = size_t((o.idle_s * 2 + o.serve_s) * 20000) + 1000;  // >= 50 us per step
  std::vector<StepRec> idle, during, idle_after;
  std::vector<std::vector<float>> probes;
  idle.reserve(size_t(o.idle_s * 20000) + 100);
  idle_after.reserve(size_t(o.idle_s * 20000) + 100);
  during.reserve(cap);
  probes.reserve(cap / 32 + 100);
  std::atomic<bool> stop{false};

  // 1. Idle serving.
  server.serve(&stop, o.idle_s, &idle, &probes);

  // 2. The update alone: its idle speed. First a pause longer than the library's serving
  // window (WHARF_SERVING_WINDOW_MS, default 100 ms), so the idle steps just run do not make
  // these updates pace themselves as if runs were being served.
  std::vector<double> alone_gbs, alone_stage_ms, alone_swap_ms, alone_free_ms, alone_self_ms;
  if (big_mode || self_mode) {
    long window_ms = 100;
    if (const char* w = std::getenv("WHARF_SERVING_WINDOW_MS")) window_ms = std::atol(w);
    std::this_thread::sleep_for(std::chrono::milliseconds(std::max(300L, window_ms + 200)));
    for (int k = 0; k < o.alone; ++k) {
      up.phases.clear();
      up.round();
      for (const PhaseRec& p : up.phases) {
        if (p.kind == kStage && p.bytes) {
          alone_gbs.push_back(double(p.bytes) / ((p.t1 - p.t0) * 1e3));
          alone_stage_ms.push_back((p.t1 - p.t0) / 1e3);
        }
        if (p.kind == kSwap) alone_swap_ms.push_back((p.t1 - p.t0) / 1e3);
        if (p.kind == kFree) alone_free_ms.push_back((p.t1 - p.t0) / 1e3);
        if (p.kind == kSelfUpdate || p.kind == kSelfSwap) alone_self_ms.push_back((p.t1 - p.t0) / 1e3);
      }
    }
    up.phases.clear();
    up.marks.clear();
    std::this_thread::sleep_for(std::chrono::milliseconds(100));  // the driver's work after the last free
  }

  // 3. Serving while the updater streams updates back to back.
  server.reset_all();
  const double during_t0 = now_us(epoch);
  double serving_end = during_t0;  // when the last step while updating ended
  int rounds = 0;
  {
    std::atomic<bool> upd_stop{false};
    std::thread updater([&] {
      if (!(big_mode || self_mode)) return;
      while (!upd_stop.load()) {
        up.round();
        ++rounds;
      }
    });
    server.serve(&stop, o.serve_s, &during, &probes);
    serving_end = now_us(epoch);
    upd_stop = true;
    updater.join();
  }
  const double during_t1 = now_us(epoch);

  // 4. Idle again (drift check).
  std::this_thread::sleep_for(std::chrono::milliseconds(100));
  server.reset_all();
  server.serve(&stop, o.idle_s, &idle_after, &probes);

  // --- checks -------------------------------------------------------------------------------
  size_t failed = 0, probes_checked = 0, probe_mismatch = 0, unknown_gen = 0;
  std::map<uint64_t, size_t> gens;
  auto check = [&](const std::vector<StepRec>& v) {
    for (const StepRec& s : v) {
      if (!s.ok) {
        ++failed;
        continue;
      }
      ++gens[s.gen];
      if (!s.probe) continue;
      auto it = up.set_of_gen.find(s.gen);
      if (it == up.set_of_gen.end()) {
        ++unknown_gen;
        continue;
      }
      const std::vector<float>& want = ref[it->second];
      const std::vector<float>& got = probes[s.probe_id];
      float scale = 0, diff = 0;
      for (int i = 0; i < g_vocab; ++i) {
        scale = std::max(scale, std::fabs(want[size_t(i)]));
        diff = std::max(diff, std::fabs(want[size_t(i)] - got[size_t(i)]));
      }
      ++probes_checked;
      if (diff > 1e-4f * std::max(scale, 1.0f)) ++probe_mismatch;
    }
  };
  check(idle);
  check(during);
  check(idle_after);
  size_t self_swaps = 0;
  for (const PhaseRec& p : up.phases)
    if (p.kind == kSelfSwap) ++self_swaps;

  // --- figures -------------------------------------------------------------------------------
  auto lat = [](const std::vector<StepRec>& v, bool only_ok = true) {
    std::vector<double> l;
    l.reserve(v.size());
    for (const StepRec& s : v)
      if (s.ok || !only_ok) l.push_back(s.t1 - s.t0);
    return l;
  };
  const Pct p_idle = pct(lat(idle)), p_during = pct(lat(during)), p_after = pct(lat(idle_after));
  const double slow_at = p_idle.p99;

  // The update's speed while serving: phases that ended while steps still ran (the one the
  // updater finishes after serving stopped ran partly alone).
  std::vector<double> serve_gbs, serve_stage_ms, serve_swap_ms, serve_free_ms, serve_self_ms;
  for (const PhaseRec& p : up.phases) {
    if (p.t1 > serving_end) continue;
    if (p.kind == kStage && p.bytes) {
      serve_gbs.push_back(double(p.bytes) / ((p.t1 - p.t0) * 1e3));
      serve_stage_ms.push_back((p.t1 - p.t0) / 1e3);
    }
    if (p.kind == kSwap) serve_swap_ms.push_back((p.t1 - p.t0) / 1e3);
    if (p.kind == kFree) serve_free_ms.push_back((p.t1 - p.t0) / 1e3);
    if (p.kind == kSelfUpdate || p.kind == kSelfSwap) serve_self_ms.push_back((p.t1 - p.t0) / 1e3);
  }

  // Where the steps during updates fall.
  struct Bucket {
    std::vector<double> lat;
    size_t slow = 0;
  };
  std::vector<Bucket> by_phase(kNumPhases + 1), by_phase_after_free(kNumPhases + 1), by_decile(10);
  Bucket first_on_new_gen;
  size_t hint = 0, slow_total = 0;
  uint64_t prev_gen = during.empty() ? 0 : during.front().gen;
  std::vector<const StepRec*> slowest;
  for (const StepRec& s : during) {
    if (!s.ok) continue;
    const double l = s.t1 - s.t0;
    const bool slow = l > slow_at;
    slow_total += slow;
    double frac = -1;
    bool after_free = false;
    const int ph = phase_of(s, up.phases, &hint, &frac, &after_free);
    Bucket& b = (after_free && ph != kFree ? by_phase_after_free : by_phase)[size_t(ph < 0 ? kNumPhases : ph)];
    b.lat.push_back(l);
    b.slow += slow;
    if (ph == kStage && frac >= 0) {
      Bucket& d = by_decile[std::min<size_t>(9, size_t(frac * 10))];
      d.lat.push_back(l);
      d.slow += slow;
    }
    if (s.gen != prev_gen) {
      first_on_new_gen.lat.push_back(l);
      first_on_new_gen.slow += slow;
      prev_gen = s.gen;
    }
    slowest.push_back(&s);
  }
  std::sort(slowest.begin(), slowest.end(),
            [](const StepRec* a, const StepRec* b) { return a->t1 - a->t0 > b->t1 - b->t0; });
  if (slowest.size() > 12) slowest.resize(12);

  // The step's parts: medians over idle steps, fast and slow steps during updates.
  struct Parts {
    std::vector<double> begin, in, model, sync, end, dev_in, dev_model, dev_out;
    void add(const StepRec& s) {
      begin.push_back(s.begin_us);
      in.push_back(s.in_us);
      model.push_back(s.model_us);
      sync.push_back(s.sync_us);
      end.push_back(s.end_us);
      if (s.dev_in_us >= 0) dev_in.push_back(s.dev_in_us);
      if (s.dev_model_us >= 0) dev_model.push_back(s.dev_model_us);
      if (s.dev_out_us >= 0) dev_out.push_back(s.dev_out_us);
    }
  } parts_idle, parts_fast, parts_slow;
  for (const StepRec& s : idle)
    if (s.ok) parts_idle.add(s);
  for (const StepRec& s : during)
    if (s.ok) (s.t1 - s.t0 > slow_at ? parts_slow : parts_fast).add(s);

  // --- output --------------------------------------------------------------------------------
  std::printf("\nstep latency (us; a step = run begin, input, model run, logits to host, sync, run end)\n");
  std::printf("  %-44s %8s %9s %9s %9s %10s %9s\n", "", "steps", "p50", "p90", "p99", "max", "p99/idle");
  print_pct_row("idle (before)", p_idle, p_idle.p99);
  print_pct_row(("while updating (" + o.mode + ")").c_str(), p_during, p_idle.p99);
  print_pct_row("idle (after)", p_after, p_idle.p99);
  const double goal = p_idle.p99 * 1.10;
  std::printf("  goal: p99 while updating <= 1.10 x idle p99 = %.1f us: %s (%.2fx)\n", goal,
              p_during.p99 <= goal ? "met" : "missed", p_idle.p99 > 0 ? p_during.p99 / p_idle.p99 : 0.0);

  const MedRange ag = med_range(alone_gbs), sg = med_range(serve_gbs);
  if (big_mode) {
    std::printf("\nbig update (%.2f GiB from pageable memory): GB/s median [min, max] (n)\n",
                double(up.big_bytes) / double(1ull << 30));
    std::printf("  alone         %7.2f [%.2f, %.2f] (%zu)   stage %.1f ms, swap %.3f ms, free %.1f ms (medians)\n",
                ag.med, ag.lo, ag.hi, ag.n, median(alone_stage_ms), median(alone_swap_ms), median(alone_free_ms));
    std::printf("  while serving %7.2f [%.2f, %.2f] (%zu)   stage %.1f ms, swap %.3f ms, free %.1f ms (medians)\n",
                sg.med, sg.lo, sg.hi, sg.n, median(serve_stage_ms), median(serve_swap_ms), median(serve_free_ms));
    std::printf("  while serving / alone: %.3f\n", ag.med > 0 ? sg.med / ag.med : 0.0);
  }
  if (self_mode)
    std::printf(
        "\nself update + swap of the served package: %.2f ms alone, %.2f ms while serving (medians of %zu, %zu "
        "phases)\n",
        median(alone_self_ms), median(serve_self_ms), alone_self_ms.size(), serve_self_ms.size());

  std::printf("\nwhere the steps while updating fall (slow: > idle p99 = %.1f us; %zu slow of %zu)\n", slow_at,
              slow_total, during.size());
  std::printf("  %-44s %8s %8s %7s %9s %9s %10s\n", "phase the step overlaps", "steps", "slow", "% slow", "p50", "p99",
              "max");
  auto bucket_row = [&](const std::string& name, const Bucket& b) {
    if (b.lat.empty()) return;
    const Pct p = pct(b.lat);
    std::printf("  %-44s %8zu %8zu %6.1f%% %9.1f %9.1f %10.1f\n", name.c_str(), p.n, b.slow,
                slow_total ? 100.0 * double(b.slow) / double(slow_total) : 0.0, p.p50, p.p99, p.max);
  };
  for (int k = 0; k <= kNumPhases; ++k) {
    const std::string name = k == kNumPhases ? "none (between phases)" : kPhaseName[k];
    bucket_row(name, by_phase[size_t(k)]);
    bucket_row(name + ", < 50 ms after a free", by_phase_after_free[size_t(k)]);
  }
  bucket_row("first step on a new served generation", first_on_new_gen);
  if (big_mode) {
    std::printf("  big update copy by progress (time fraction of the update call):\n");
    for (size_t d = 0; d < 10; ++d)
      bucket_row("    " + std::to_string(d * 10) + "-" + std::to_string(d * 10 + 10) + "%", by_decile[d]);
  }

  std::printf(
      "\nthe step's parts, medians (us): host begin / input / model run / logits+sync / end; device input / model / "
      "logits\n");
  auto parts_row = [](const char* name, const Parts& p) {
    std::printf("  %-24s %7.1f %7.1f %8.1f %8.1f %7.1f | %7.1f %8.1f %7.1f  (n %zu)\n", name, median(p.begin),
                median(p.in), median(p.model), median(p.sync), median(p.end), median(p.dev_in), median(p.dev_model),
                median(p.dev_out), p.begin.size());
  };
  parts_row("idle", parts_idle);
  parts_row("updating, fast steps", parts_fast);
  parts_row("updating, slow steps", parts_slow);
  std::printf(
      "  slowest steps while updating (us: total = begin + input + model + sync + end | device in/model/out; "
      "phase):\n");
  {
    size_t h = 0;
    for (const StepRec* s : slowest) {
      double frac = -1;
      bool af = false;
      h = 0;
      const int ph = phase_of(*s, up.phases, &h, &frac, &af);
      const double done = ph == kStage ? up.progress_at(0.5 * (s->t0 + s->t1)) : -1;
      char at[48] = "";
      if (done >= 0) std::snprintf(at, sizeof at, " (%.0f%% of its bytes read)", 100 * done);
      std::printf("    %9.1f = %6.1f + %6.1f + %8.1f + %8.1f + %6.1f | %7.1f %8.1f %7.1f  at %.3f s; %s%s%s\n",
                  s->t1 - s->t0, s->begin_us, s->in_us, s->model_us, s->sync_us, s->end_us, s->dev_in_us,
                  s->dev_model_us, s->dev_out_us, (s->t0 - during_t0) / 1e6, ph < 0 ? "between phases" : kPhaseName[ph],
                  at, af ? ", < 50 ms after a free" : "");
    }
  }

  const bool checks_ok =
      failed == 0 && probe_mismatch == 0 && unknown_gen == 0 && (!self_mode || rounds == 0 || gens.size() > 1);
  std::printf(
      "\nchecks: %zu steps, %zu failed; %zu position-0 steps compared with their generation's reference, %zu "
      "differ, %zu on an unknown generation; %zu served generations seen, %zu self swaps while serving, %d "
      "updater rounds in %.1f s, %d updater errors: %s\n",
      idle.size() + during.size() + idle_after.size(), failed, probes_checked, probe_mismatch, unknown_gen, gens.size(),
      self_swaps, rounds, (during_t1 - during_t0) / 1e6, up.failures, checks_ok && up.failures == 0 ? "ok" : "FAILED");

  // JSON lines: one object per figure row.
  const std::string tag = "{\"bench\":\"serve_update\",\"label\":\"" + json_escape(o.label) + "\",\"mode\":\"" +
                          o.mode + "\",\"input\":\"" + o.input + "\",\"io\":\"" + o.io +
                          "\",\"graphs\":" + (o.graphs ? "true" : "false") +
                          ",\"sessions\":" + std::to_string(o.sessions) + ",\"env\":\"" + json_escape(env) + "\"";
  auto jrow = [&](const char* row, const Pct& p) {
    std::printf("%s,\"row\":\"%s\",\"n\":%zu,\"p50_us\":%.1f,\"p90_us\":%.1f,\"p99_us\":%.1f,\"max_us\":%.1f}\n",
                tag.c_str(), row, p.n, p.p50, p.p90, p.p99, p.max);
  };
  jrow("idle", p_idle);
  jrow("during", p_during);
  jrow("idle_after", p_after);
  if (big_mode) {
    std::printf("%s,\"row\":\"update_alone\",\"gbs_median\":%.2f,\"gbs_min\":%.2f,\"gbs_max\":%.2f,\"n\":%zu}\n",
                tag.c_str(), ag.med, ag.lo, ag.hi, ag.n);
    std::printf("%s,\"row\":\"update_serving\",\"gbs_median\":%.2f,\"gbs_min\":%.2f,\"gbs_max\":%.2f,\"n\":%zu}\n",
                tag.c_str(), sg.med, sg.lo, sg.hi, sg.n);
  }
  std::printf("%s,\"row\":\"checks\",\"failed\":%zu,\"probes\":%zu,\"probe_mismatch\":%zu,\"ok\":%s}\n", tag.c_str(),
              failed, probes_checked, probe_mismatch, checks_ok && up.failures == 0 ? "true" : "false");
  if (!o.csv.empty()) {
    if (FILE* f = std::fopen(o.csv.c_str(), "w")) {
      std::fprintf(f, "row,n,p50_us,p90_us,p99_us,max_us,gbs_median,gbs_min,gbs_max\n");
      for (auto [name, p] :
           {std::pair<const char*, Pct>{"idle", p_idle}, {"during", p_during}, {"idle_after", p_after}})
        std::fprintf(f, "%s,%zu,%.1f,%.1f,%.1f,%.1f,,,\n", name, p.n, p.p50, p.p90, p.p99, p.max);
      if (big_mode) {
        std::fprintf(f, "update_alone,%zu,,,,,%.2f,%.2f,%.2f\n", ag.n, ag.med, ag.lo, ag.hi);
        std::fprintf(f, "update_serving,%zu,,,,,%.2f,%.2f,%.2f\n", sg.n, sg.med, sg.lo, sg.hi);
      }
      std::fclose(f);
    }
  }

  if (up.big_map) wharf_constant_map_free(up.big_map);
  if (up.big) wharf_container_free(up.big);
  wharf_model_package_free(pkg);
  wharf_runtime_free(rt);
  return checks_ok && up.failures == 0 ? 0 : 1;
}

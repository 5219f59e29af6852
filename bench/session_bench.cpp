// SPDX-License-Identifier: Apache-2.0
// session_bench: what binding a conversation's state to a run costs with Wharf sessions,
// beside a runtime that cannot rebind state (its kernels read one fixed state buffer, so it
// copies each session's state into that buffer before the run and back out after),
// measured in the same run on the same GPU.
//
// State per session (default): a KV cache of 2 (K, V) x 32 layers x [1024 tokens, 8 heads,
// 128 dims] BF16, declared as 64 state tensors of 2 MiB: 128 MiB per session. Weights: 32
// tensors of [1024, 1024] BF16 (64 MiB; not what is measured). --sessions sessions are
// served round robin, as a server interleaves conversations.
//
//   wharf run            wharf_run_begin(container, session, stream) + wharf_run_get_tensor for
//                        --lookups FQNs (half weights, half state) + wharf_run_end; host time
//                        per run, no kernels (median, p99 of --iters runs)
//   wharf run + sync     the same, then cudaStreamSynchronize (what a run costs end to end)
//   baseline contiguous  cudaMemcpyAsync D2D of the session's state (one 128 MiB buffer) into
//                        the shared buffer, and back out, then cudaStreamSynchronize
//   baseline per-tensor  the same with one copy per state tensor (64 in, 64 out)
// Where the wharf time goes: the three calls timed apart; the runtime's own stream (no
// caller stream to wrap); a stateless container with the same weights and no session; and
// the CUDA calls a session run makes (cudaStreamWaitEvent + 2 x cudaEventRecord) alone.
// Plus session creation (lazy; eager: allocation + initialisation enqueued), the first run of
// a lazy session (allocation + initialisation + sync), free, plain cudaMalloc/cudaFree of the
// same bytes for scale, and bytes per session (Wharf's WHARF_MEM_STATE accounting and
// cudaMemGetInfo).
//
// usage: session_bench [--iters N] [--baseline-iters N] [--sessions N] [--layers N]
//                      [--tokens N] [--lookups N] [--csv PATH]
#include <cuda_runtime.h>

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <string>
#include <vector>

#include "bench_common.h"
#include "wharf/wharf.h"

namespace {

using namespace bench;

struct Dist {
  double median = 0, p99 = 0, mean = 0;
};
Dist dist(std::vector<double> v) {
  Dist d;
  if (v.empty()) return d;
  std::sort(v.begin(), v.end());
  d.median = v[v.size() / 2];
  d.p99 = v[std::min(v.size() - 1, size_t(double(v.size()) * 0.99))];
  double s = 0;
  for (double x : v) s += x;
  d.mean = s / double(v.size());
  return d;
}

uint64_t state_current(wharf_runtime* rt) {
  wharf_memory_stats ms;
  std::memset(&ms, 0, sizeof ms);
  ms.struct_size = sizeof ms;
  wharf_ok(wharf_runtime_get_memory_stats(rt, &ms), "memory stats");
  return ms.current[WHARF_MEM_STATE];
}

struct Row {
  std::string what;
  int iters;
  Dist us;
  std::string note;
};

}  // namespace

int main(int argc, char** argv) {
  int iters = 20000, baseline_iters = 2000, num_sessions = 8, layers = 32, tokens = 1024, lookups = 4;
  const int heads = 8, dims = 128;
  const char* csv = nullptr;
  for (int i = 1; i < argc; ++i) {
    auto is = [&](const char* f) { return !std::strcmp(argv[i], f) && i + 1 < argc; };
    if (is("--iters"))
      iters = std::atoi(argv[++i]);
    else if (is("--baseline-iters"))
      baseline_iters = std::atoi(argv[++i]);
    else if (is("--sessions"))
      num_sessions = std::atoi(argv[++i]);
    else if (is("--layers"))
      layers = std::atoi(argv[++i]);
    else if (is("--tokens"))
      tokens = std::atoi(argv[++i]);
    else if (is("--lookups"))
      lookups = std::atoi(argv[++i]);
    else if (is("--csv"))
      csv = argv[++i];
    else {
      std::fprintf(stderr,
                   "usage: session_bench [--iters N] [--baseline-iters N] [--sessions N] [--layers N] "
                   "[--tokens N] [--lookups N] [--csv PATH]\n");
      return 1;
    }
  }
  if (iters < 1 || baseline_iters < 1 || num_sessions < 1 || layers < 1 || tokens < 1 || lookups < 0) return 1;

  wharf_runtime_options ro;
  wharf_runtime_options_init(&ro);
  ro.backend = WHARF_BACKEND_CUDA;
  wharf_runtime* rt = nullptr;
  wharf_ok(wharf_runtime_create(&ro, &rt), "runtime");
  wharf_device_info info;
  std::memset(&info, 0, sizeof info);
  info.struct_size = sizeof info;
  wharf_ok(wharf_runtime_get_device_info(rt, &info), "device info");

  // The model: one weight per layer (device source: fast to load, not measured).
  const int64_t wshape[2] = {1024, 1024};
  const uint64_t wbytes = 1024ull * 1024 * 2;
  void* wsrc = nullptr;
  CUDA_OK(cudaMalloc(&wsrc, wbytes * layers));
  CUDA_OK(cudaMemset(wsrc, 0, wbytes * layers));
  CUDA_OK(cudaDeviceSynchronize());
  std::vector<std::string> wnames, snames;
  for (int l = 0; l < layers; ++l) wnames.push_back("layers." + std::to_string(l) + ".w");
  for (int l = 0; l < layers; ++l) {
    snames.push_back("layers." + std::to_string(l) + ".k_cache");
    snames.push_back("layers." + std::to_string(l) + ".v_cache");
  }
  wharf_constant_map* map = nullptr;
  wharf_ok(wharf_constant_map_create(&map), "map");
  for (int l = 0; l < layers; ++l) {
    wharf_tensor_view v{sizeof(wharf_tensor_view),
                        0,
                        static_cast<char*>(wsrc) + wbytes * l,
                        WHARF_DTYPE_BF16,
                        WHARF_DEVICE_CUDA,
                        0,
                        2,
                        wshape,
                        nullptr};
    wharf_ok(wharf_constant_map_set(map, wnames[size_t(l)].c_str(), &v), "map set");
  }
  const int64_t sshape[3] = {tokens, heads, dims};
  const uint64_t per_state = uint64_t(tokens) * heads * dims * 2;
  const uint64_t per_session = per_state * snames.size();
  std::vector<wharf_state_decl> sdecls;
  for (const std::string& n : snames)
    sdecls.push_back({sizeof(wharf_state_decl), n.c_str(), WHARF_DTYPE_BF16, 3, sshape, nullptr});
  wharf_container_options co;
  wharf_container_options_init(&co);
  co.name = "decoder";
  co.states = sdecls.data();
  co.num_states = sdecls.size();
  wharf_container* c = nullptr;
  wharf_ok(wharf_container_create_from_map(rt, map, &co, &c), "container");
  wharf_constant_map_free(map);

  std::printf(
      "session_bench: %s; state per session: KV cache 2 x %d layers x [%d tokens, %d heads, %d dims] BF16 = "
      "%zu tensors, %.0f MiB; %d sessions round robin; %d lookups per run; %d runs (wharf), %d (baseline)\n",
      info.name, layers, tokens, heads, dims, snames.size(), double(per_session) / (1 << 20), num_sessions, lookups,
      iters, baseline_iters);

  // FQNs resolved per run: half weights, half state, spread over the layers.
  std::vector<std::string> look;
  for (int i = 0; i < lookups; ++i) {
    if (i % 2 == 0)
      look.push_back(wnames[size_t((i / 2) * 7 % layers)]);
    else
      look.push_back(snames[size_t((i / 2) * 13 % snames.size())]);
  }

  cudaStream_t s;
  CUDA_OK(cudaStreamCreateWithFlags(&s, cudaStreamNonBlocking));
  std::vector<Row> rows;
  size_t i_ours = 0, i_sync = 0, i_base = 0, i_base_pt = 0;

  // ---- sessions: bytes ---------------------------------------------------------------
  CUDA_OK(cudaDeviceSynchronize());
  const uint64_t state0 = state_current(rt);
  const uint64_t free0 = free_device_bytes();
  std::vector<wharf_session*> sessions(size_t(num_sessions), nullptr);
  for (auto& ses : sessions) {
    wharf_ok(wharf_session_create(rt, &c, 1, nullptr, &ses), "session");
    wharf_run* run = nullptr;  // the first run allocates and initialises
    wharf_ok(wharf_run_begin(c, ses, s, &run), "first run");
    wharf_ok(wharf_run_end(run), "first run end");
  }
  CUDA_OK(cudaStreamSynchronize(s));
  const uint64_t acct_per_session = (state_current(rt) - state0) / uint64_t(num_sessions);
  const uint64_t free1 = free_device_bytes();
  const uint64_t mgi_per_session = free0 > free1 ? (free0 - free1) / uint64_t(num_sessions) : 0;

  // ---- wharf: begin + lookups + end, host time ---------------------------------------
  auto wharf_run_once = [&](wharf_session* ses) {
    wharf_run* run = nullptr;
    wharf_ok(wharf_run_begin(c, ses, s, &run), "run begin");
    for (const std::string& f : look) {
      wharf_tensor_view v;
      wharf_ok(wharf_run_get_tensor(run, f.c_str(), &v), "run tensor");
      if (!v.data) std::exit(3);
    }
    wharf_ok(wharf_run_end(run), "run end");
  };
  for (int i = 0; i < 1000; ++i) wharf_run_once(sessions[size_t(i % num_sessions)]);  // warm-up
  CUDA_OK(cudaStreamSynchronize(s));
  {
    std::vector<double> t;
    t.reserve(size_t(iters));
    for (int i = 0; i < iters; ++i) {
      auto t0 = Clock::now();
      wharf_run_once(sessions[size_t(i % num_sessions)]);
      t.push_back(us_since(t0));
      // Drain now and then: a server's stream has kernels that finish; here only markers.
      if (i % 1000 == 999) CUDA_OK(cudaStreamSynchronize(s));
    }
    rows.push_back({"wharf run (host)", iters, dist(t), "begin + " + std::to_string(lookups) + " lookups + end"});
    i_ours = rows.size() - 1;
  }
  CUDA_OK(cudaStreamSynchronize(s));
  {
    std::vector<double> t;
    for (int i = 0; i < baseline_iters; ++i) {
      auto t0 = Clock::now();
      wharf_run_once(sessions[size_t(i % num_sessions)]);
      CUDA_OK(cudaStreamSynchronize(s));
      t.push_back(us_since(t0));
    }
    rows.push_back({"wharf run + sync", baseline_iters, dist(t), "the same, then cudaStreamSynchronize"});
    i_sync = rows.size() - 1;
  }
  // Same session every time (no round robin).
  {
    std::vector<double> t;
    for (int i = 0; i < iters; ++i) {
      auto t0 = Clock::now();
      wharf_run_once(sessions[0]);
      t.push_back(us_since(t0));
      if (i % 1000 == 999) CUDA_OK(cudaStreamSynchronize(s));
    }
    rows.push_back({"wharf run (host), 1 session", iters, dist(t), "one session every run"});
  }
  CUDA_OK(cudaStreamSynchronize(s));

  // ---- where the host time goes ---------------------------------------------------------
  {
    std::vector<double> tb, tl, te;
    for (int i = 0; i < iters; ++i) {
      wharf_session* ses = sessions[size_t(i % num_sessions)];
      auto t0 = Clock::now();
      wharf_run* run = nullptr;
      wharf_ok(wharf_run_begin(c, ses, s, &run), "run begin");
      auto t1 = Clock::now();
      for (const std::string& f : look) {
        wharf_tensor_view v;
        wharf_ok(wharf_run_get_tensor(run, f.c_str(), &v), "run tensor");
      }
      auto t2 = Clock::now();
      wharf_ok(wharf_run_end(run), "run end");
      auto t3 = Clock::now();
      tb.push_back(std::chrono::duration<double, std::micro>(t1 - t0).count());
      tl.push_back(std::chrono::duration<double, std::micro>(t2 - t1).count());
      te.push_back(std::chrono::duration<double, std::micro>(t3 - t2).count());
      if (i % 1000 == 999) CUDA_OK(cudaStreamSynchronize(s));
    }
    rows.push_back({"  of which wharf_run_begin", iters, dist(tb), "wraps the caller's stream, waits for the session"});
    rows.push_back({"  of which " + std::to_string(lookups) + " x wharf_run_get_tensor", iters, dist(tl), ""});
    rows.push_back({"  of which wharf_run_end", iters, dist(te), "2 event records (generation, session)"});
  }
  CUDA_OK(cudaStreamSynchronize(s));
  {
    // The runtime's own stream (NULL): no wrapping of a caller stream.
    std::vector<double> t;
    for (int i = 0; i < iters; ++i) {
      wharf_session* ses = sessions[size_t(i % num_sessions)];
      auto t0 = Clock::now();
      wharf_run* run = nullptr;
      wharf_ok(wharf_run_begin(c, ses, nullptr, &run), "run begin");
      for (const std::string& f : look) {
        wharf_tensor_view v;
        wharf_ok(wharf_run_get_tensor(run, f.c_str(), &v), "run tensor");
      }
      wharf_ok(wharf_run_end(run), "run end");
      t.push_back(us_since(t0));
      if (i % 1000 == 999) wharf_ok(wharf_runtime_synchronize(rt), "sync");
    }
    rows.push_back({"wharf run (host), runtime stream", iters, dist(t), "stream NULL: the runtime's own"});
    wharf_ok(wharf_runtime_synchronize(rt), "sync");
  }
  {
    // The same weights in a container without states, no session: what the session adds.
    wharf_container* plain = nullptr;
    wharf_constant_map* m2 = nullptr;
    wharf_ok(wharf_constant_map_create(&m2), "map");
    for (int l = 0; l < layers; ++l) {
      wharf_tensor_view v{sizeof(wharf_tensor_view),
                          0,
                          static_cast<char*>(wsrc) + wbytes * l,
                          WHARF_DTYPE_BF16,
                          WHARF_DEVICE_CUDA,
                          0,
                          2,
                          wshape,
                          nullptr};
      wharf_ok(wharf_constant_map_set(m2, wnames[size_t(l)].c_str(), &v), "map set");
    }
    wharf_ok(wharf_container_create_from_map(rt, m2, nullptr, &plain), "stateless container");
    wharf_constant_map_free(m2);
    std::vector<std::string> wlook;
    for (int i = 0; i < lookups; ++i) wlook.push_back(wnames[size_t(i * 7 % layers)]);
    std::vector<double> t;
    for (int i = 0; i < iters; ++i) {
      auto t0 = Clock::now();
      wharf_run* run = nullptr;
      wharf_ok(wharf_run_begin(plain, nullptr, s, &run), "run begin");
      for (const std::string& f : wlook) {
        wharf_tensor_view v;
        wharf_ok(wharf_run_get_tensor(run, f.c_str(), &v), "run tensor");
      }
      wharf_ok(wharf_run_end(run), "run end");
      t.push_back(us_since(t0));
      if (i % 1000 == 999) CUDA_OK(cudaStreamSynchronize(s));
    }
    rows.push_back({"wharf run (host), no session", iters, dist(t), "stateless container, same weights, weights only"});
    CUDA_OK(cudaStreamSynchronize(s));
    wharf_container_free(plain);
  }
  {
    // The CUDA calls a session run makes, alone: the floor of this protocol.
    cudaEvent_t e_ses, e_gen;
    CUDA_OK(cudaEventCreateWithFlags(&e_ses, cudaEventDisableTiming));
    CUDA_OK(cudaEventCreateWithFlags(&e_gen, cudaEventDisableTiming));
    CUDA_OK(cudaEventRecord(e_ses, s));
    std::vector<double> t;
    for (int i = 0; i < iters; ++i) {
      auto t0 = Clock::now();
      CUDA_OK(cudaStreamWaitEvent(s, e_ses, 0));
      CUDA_OK(cudaEventRecord(e_gen, s));
      CUDA_OK(cudaEventRecord(e_ses, s));
      t.push_back(us_since(t0));
      if (i % 1000 == 999) CUDA_OK(cudaStreamSynchronize(s));
    }
    rows.push_back({"CUDA floor: wait + 2 event records", iters, dist(t), "cudaStreamWaitEvent + 2 x cudaEventRecord"});
    CUDA_OK(cudaStreamSynchronize(s));
    CUDA_OK(cudaEventDestroy(e_ses));
    CUDA_OK(cudaEventDestroy(e_gen));
  }

  // ---- baseline: copy the session's state in and out of one shared buffer --------------
  {
    void* shared = nullptr;
    CUDA_OK(cudaMalloc(&shared, per_session));
    std::vector<void*> own(size_t(num_sessions), nullptr);
    for (auto& p : own) {
      CUDA_OK(cudaMalloc(&p, per_session));
      CUDA_OK(cudaMemset(p, 0, per_session));
    }
    CUDA_OK(cudaDeviceSynchronize());
    auto contiguous = [&](int i) {
      void* mine = own[size_t(i % num_sessions)];
      CUDA_OK(cudaMemcpyAsync(shared, mine, per_session, cudaMemcpyDeviceToDevice, s));
      // (the run's kernels would go here)
      CUDA_OK(cudaMemcpyAsync(mine, shared, per_session, cudaMemcpyDeviceToDevice, s));
      CUDA_OK(cudaStreamSynchronize(s));
    };
    auto per_tensor = [&](int i) {
      char* mine = static_cast<char*>(own[size_t(i % num_sessions)]);
      char* sh = static_cast<char*>(shared);
      for (size_t k = 0; k < snames.size(); ++k)
        CUDA_OK(cudaMemcpyAsync(sh + k * per_state, mine + k * per_state, per_state, cudaMemcpyDeviceToDevice, s));
      for (size_t k = 0; k < snames.size(); ++k)
        CUDA_OK(cudaMemcpyAsync(mine + k * per_state, sh + k * per_state, per_state, cudaMemcpyDeviceToDevice, s));
      CUDA_OK(cudaStreamSynchronize(s));
    };
    for (int i = 0; i < 20; ++i) contiguous(i);
    std::vector<double> t;
    for (int i = 0; i < baseline_iters; ++i) {
      auto t0 = Clock::now();
      contiguous(i);
      t.push_back(us_since(t0));
    }
    rows.push_back({"baseline: copy in/out, contiguous", baseline_iters, dist(t),
                    "2 x cudaMemcpyAsync D2D of " + std::to_string(per_session >> 20) + " MiB + sync"});
    i_base = rows.size() - 1;
    for (int i = 0; i < 20; ++i) per_tensor(i);
    t.clear();
    for (int i = 0; i < baseline_iters; ++i) {
      auto t0 = Clock::now();
      per_tensor(i);
      t.push_back(us_since(t0));
    }
    rows.push_back({"baseline: copy in/out, per tensor", baseline_iters, dist(t),
                    std::to_string(2 * snames.size()) + " x cudaMemcpyAsync D2D + sync"});
    i_base_pt = rows.size() - 1;
    for (void* p : own) CUDA_OK(cudaFree(p));
    CUDA_OK(cudaFree(shared));
  }

  // ---- session lifecycle ---------------------------------------------------------------
  {
    const int n = 1000;
    std::vector<double> create, destroy;
    for (int i = 0; i < n; ++i) {
      wharf_session* ses = nullptr;
      auto t0 = Clock::now();
      wharf_ok(wharf_session_create(rt, &c, 1, nullptr, &ses), "session create");
      create.push_back(us_since(t0));
      t0 = Clock::now();
      wharf_session_free(ses);
      destroy.push_back(us_since(t0));
    }
    rows.push_back({"session create (lazy)", n, dist(create), "no device memory until the first run"});
    rows.push_back({"session free (never run)", n, dist(destroy), ""});
  }
  {
    const int n = 50;
    std::vector<double> eager, first_run, destroy;
    wharf_session_options so;
    wharf_session_options_init(&so);
    so.allocate_eagerly = 1;
    for (int i = 0; i < n; ++i) {
      wharf_session* ses = nullptr;
      auto t0 = Clock::now();
      wharf_ok(wharf_session_create(rt, &c, 1, &so, &ses), "session create (eager)");
      eager.push_back(us_since(t0));
      wharf_ok(wharf_runtime_synchronize(rt), "sync");
      t0 = Clock::now();
      wharf_session_free(ses);
      destroy.push_back(us_since(t0));

      ses = nullptr;
      wharf_ok(wharf_session_create(rt, &c, 1, nullptr, &ses), "session create");
      t0 = Clock::now();
      wharf_run* run = nullptr;
      wharf_ok(wharf_run_begin(c, ses, s, &run), "first run");
      wharf_ok(wharf_run_end(run), "first run end");
      CUDA_OK(cudaStreamSynchronize(s));
      first_run.push_back(us_since(t0));
      wharf_session_free(ses);
    }
    rows.push_back({"session create (eager)", n, dist(eager),
                    std::to_string(snames.size()) + " pool allocations + zeroing enqueued, not waited for"});
    rows.push_back({"first run of a lazy session + sync", n, dist(first_run),
                    "allocate + zero " + std::to_string(per_session >> 20) + " MiB + begin/end"});
    rows.push_back({"session free (allocated, idle)", n, dist(destroy), "returns the state memory"});
    // For scale: the same bytes as one allocation, and as one allocation per state tensor.
    std::vector<double> one, one_free, many, many_free;
    std::vector<void*> ps(snames.size(), nullptr);
    for (int i = 0; i < n; ++i) {
      void* p = nullptr;
      auto t0 = Clock::now();
      CUDA_OK(cudaMalloc(&p, per_session));
      CUDA_OK(cudaMemsetAsync(p, 0, per_session, s));
      one.push_back(us_since(t0));
      CUDA_OK(cudaStreamSynchronize(s));
      t0 = Clock::now();
      CUDA_OK(cudaFree(p));
      one_free.push_back(us_since(t0));
      t0 = Clock::now();
      for (auto& q : ps) {
        CUDA_OK(cudaMalloc(&q, per_state));
        CUDA_OK(cudaMemsetAsync(q, 0, per_state, s));
      }
      many.push_back(us_since(t0));
      CUDA_OK(cudaStreamSynchronize(s));
      t0 = Clock::now();
      for (void* q : ps) CUDA_OK(cudaFree(q));
      many_free.push_back(us_since(t0));
    }
    rows.push_back({"for scale: 1 cudaMalloc + memsetAsync", n, dist(one), std::to_string(per_session >> 20) + " MiB"});
    rows.push_back({"for scale: 1 cudaFree", n, dist(one_free), ""});
    rows.push_back({"for scale: " + std::to_string(snames.size()) + " cudaMalloc + memsetAsync", n, dist(many),
                    "one per state tensor"});
    rows.push_back({"for scale: " + std::to_string(snames.size()) + " cudaFree", n, dist(many_free), ""});
  }

  const Dist& ours = rows[i_ours].us;
  const Dist& ours_sync = rows[i_sync].us;
  const Dist& base = rows[i_base].us;
  const Dist& base_pt = rows[i_base_pt].us;
  std::printf("\n%-36s %7s %12s %10s %10s  %s\n", "path", "iters", "median_us", "p99_us", "mean_us", "note");
  for (const Row& r : rows)
    std::printf("%-36s %7d %12.3f %10.3f %10.3f  %s\n", r.what.c_str(), r.iters, r.us.median, r.us.p99, r.us.mean,
                r.note.c_str());
  std::printf(
      "\nbytes per session: %.2f MiB declared (wharf_session_state_bytes), %.2f MiB accounted (WHARF_MEM_STATE), "
      "%.2f MiB cudaMemGetInfo (mean of %d sessions)\n",
      double(wharf_session_state_bytes(sessions[0])) / (1 << 20), double(acct_per_session) / (1 << 20),
      double(mgi_per_session) / (1 << 20), num_sessions);
  std::printf("baseline extra: one shared state buffer of %.0f MiB, and %.0f MiB of D2D traffic per run\n",
              double(per_session) / (1 << 20), 2.0 * double(per_session) / (1 << 20));
  std::printf(
      "ratios (median): contiguous baseline / wharf run (host) = %.0fx; / wharf run + sync = %.1fx; "
      "per-tensor baseline / wharf run + sync = %.1fx; wharf run (host) %.3f us vs target < 5 us: %s\n",
      base.median / ours.median, base.median / ours_sync.median, base_pt.median / ours_sync.median, ours.median,
      ours.median < 5.0 ? "met" : "NOT met");

  if (csv) {
    FILE* f = std::fopen(csv, "w");
    if (f) {
      std::fprintf(f, "path,iters,median_us,p99_us,mean_us,note\n");
      for (const Row& r : rows)
        std::fprintf(f, "\"%s\",%d,%.4f,%.4f,%.4f,\"%s\"\n", r.what.c_str(), r.iters, r.us.median, r.us.p99, r.us.mean,
                     r.note.c_str());
      std::fprintf(f, "\"bytes per session (accounting)\",%d,%llu,,,\n", num_sessions,
                   (unsigned long long)acct_per_session);
      std::fprintf(f, "\"bytes per session (cudaMemGetInfo)\",%d,%llu,,,\n", num_sessions,
                   (unsigned long long)mgi_per_session);
      std::fclose(f);
    }
  }

  for (wharf_session* ses : sessions) wharf_session_free(ses);
  wharf_container_free(c);
  CUDA_OK(cudaStreamSynchronize(s));
  CUDA_OK(cudaStreamDestroy(s));
  wharf_runtime_free(rt);
  CUDA_OK(cudaFree(wsrc));
  return 0;
}

// SPDX-License-Identifier: Apache-2.0
// replica_bench: one model's weights from pageable CPU memory to N GPUs of this host, two
// ways in the same run:
//   independent: N containers (one per GPU) each updated with wharf_container_update from
//                the same sources, all N at once on N threads (each reads host memory);
//   group:       one wharf_replica_group_update (sources read once into GPU 0 through its
//                staging ring, then NCCL broadcast to the others) over the same N GPUs.
// With --processes, a third way (issue 27's "group of N processes"), after the rows above:
//   group (processes): N child processes, one per GPU (child i on GPU i), each holding its
//                own replica of the same model, joined in one rank group
//                (wharf_replica_group_get_unique_id in this process, the id sent to every
//                child through a pipe, wharf_replica_group_create_rank in each). Rank 0 alone
//                holds the pageable sources; every rank calls wharf_replica_group_update_ranks
//                (which stages and swaps every rank together). Each figure runs from a barrier
//                (every rank freed its inactive generation and waits) to the return of the
//                last rank, on the host's monotonic clock; the children are fresh processes
//                (fork + exec of this binary, as tests/gpu/rank_group_gpu_test.cpp does), so
//                no CUDA context crosses a fork. The in-process replicas are freed first.
// Each figure is update + swap (the time until every GPU serves the new weights), the median
// of --reps repetitions with min and max. The reference is one GPU's own update (independent,
// N = 1); the target is group <= 1.2 x that. "extra_MiB/replica" is the constants
// memory one replica holds beyond its active generation right after the update (read from
// Wharf's accounting): the target is the updated bytes.
// On a one-GPU machine only the N = 1 rows run, and the table says so.
// Output: the table, one JSON object per row on stdout (lines starting with
// {"bench":"replica"), and --csv PATH.
//
// usage: replica_bench [--gib N (8)] [--tensors N (64)] [--reps N (5)] [--gpus N (all; with
//                      --processes all up to 4)] [--processes] [--csv PATH]
// Group of N processes (not measured yet), from the GPU bundle (or build/bench/):
//   2 GPUs: ./replica_bench --processes --gpus 2 --gib 8 --reps 5 --csv replica_bench_processes.csv
//   4 GPUs: ./replica_bench --processes --gpus 4 --gib 8 --reps 5 --csv replica_bench_processes.csv
// A child that fails (or does not answer within its bound) makes the bench kill and reap the
// others and exit 2 naming the rank; the children die with the bench (PR_SET_PDEATHSIG).
#include <cuda_runtime.h>
#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <sys/prctl.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <string>
#include <thread>
#include <vector>

#define WHARF_EXPERIMENTAL
#include "bench_common.h"
#include "wharf/wharf.h"

namespace {

using namespace bench;

uint64_t constants_bytes(wharf_runtime* rt) {
  wharf_memory_stats ms;
  std::memset(&ms, 0, sizeof ms);
  ms.struct_size = sizeof ms;
  wharf_ok(wharf_runtime_get_memory_stats(rt, &ms), "memory stats");
  return ms.current[WHARF_MEM_CONSTANTS];
}

struct Row {
  std::string mode;
  int n;
  double median_s, min_s, max_s;
  uint64_t extra_per_replica;
  int nccl_version;
};

struct Samples {
  std::vector<double> s;
  void add(double v) { s.push_back(v); }
  double med() const { return median(s); }
  double lo() const { return s.empty() ? 0 : *std::min_element(s.begin(), s.end()); }
  double hi() const { return s.empty() ? 0 : *std::max_element(s.begin(), s.end()); }
};

// The model every mode updates: `tensors` BF16 constants of `per_tensor` bytes each, the
// same in this process and in every rank process.
struct Model {
  uint64_t per_tensor = 0, total = 0;
  std::vector<std::string> names;
  std::vector<int64_t> shape;
  std::vector<wharf_constant_decl> decls;  // points into names and shape: Model is not copied

  Model(double gib, int tensors) {
    per_tensor = (uint64_t(gib * double(1ull << 30)) / uint64_t(tensors)) & ~uint64_t(4095);
    total = per_tensor * uint64_t(tensors);
    shape.push_back(int64_t(per_tensor / 2));  // BF16
    for (int i = 0; i < tensors; ++i) names.push_back("layers." + std::to_string(i) + ".weight");
    decls.resize(size_t(tensors));
    for (int i = 0; i < tensors; ++i) {
      wharf_constant_decl& d = decls[size_t(i)];
      std::memset(&d, 0, sizeof d);
      d.struct_size = sizeof d;
      d.fqn = names[size_t(i)].c_str();
      d.dtype = WHARF_DTYPE_BF16;
      d.ndim = 1;
      d.shape = shape.data();
    }
  }
  Model(const Model&) = delete;
  Model& operator=(const Model&) = delete;

  // A map of every constant over `host` (total bytes, tensor after tensor).
  wharf_constant_map* map_over(char* host) const {
    wharf_constant_map* map = nullptr;
    wharf_ok(wharf_constant_map_create(&map), "map");
    for (size_t i = 0; i < names.size(); ++i) {
      wharf_tensor_view v = tensor_view(host + i * per_tensor, WHARF_DTYPE_BF16, WHARF_DEVICE_CPU, 1, shape.data());
      wharf_ok(wharf_constant_map_set(map, names[i].c_str(), &v), "map set");
    }
    return map;
  }

  wharf_container* container(wharf_runtime* rt, const std::string& name) const {
    wharf_container_options o;
    wharf_container_options_init(&o);
    o.name = name.c_str();
    o.constants = decls.data();
    o.num_constants = decls.size();
    wharf_container* c = nullptr;
    wharf_ok(wharf_container_create(rt, &o, &c), "container");
    return c;
  }
};

wharf_runtime* cuda_runtime(int device) {
  wharf_runtime_options ro;
  wharf_runtime_options_init(&ro);
  ro.backend = WHARF_BACKEND_CUDA;
  ro.device_index = device;
  wharf_runtime* rt = nullptr;
  wharf_ok(wharf_runtime_create(&ro, &rt), "runtime");
  return rt;
}

// Pageable sources, every page touched (first-touch faults are not measured); exits if the
// host cannot hold them.
char* pageable_source(uint64_t total) {
  char* host = static_cast<char*>(std::malloc(total));
  if (!host) {
    std::fprintf(stderr, "replica_bench: cannot allocate %.1f GiB of host memory\n", double(total) / (1ull << 30));
    std::exit(2);
  }
  touch(host, total, 3);
  return host;
}

// --- group of N processes -------------------------------------------------------------------
//
// The bench process (parent) and each rank process (child) talk through two pipes: commands
// one byte each parent -> child ('P' prepare: free the inactive generation and wait; 'G' go:
// one update_ranks; 'Q' quit), and one fixed-size Reply child -> parent per command (and one
// when the rank has joined the group and warmed up). A child that exits closes its reply pipe:
// the parent sees it at once (poll), names the rank and stops the others.

int64_t monotonic_ns() {  // CLOCK_MONOTONIC is one clock for every process of the host
  timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return int64_t(ts.tv_sec) * 1000000000 + ts.tv_nsec;
}

struct Reply {
  int32_t rank;
  int32_t nccl_version;  // in the "joined" reply
  int64_t end_ns;        // 'G': when update_ranks returned (monotonic_ns)
  uint64_t extra_bytes;  // 'G': constants bytes beyond the generation held before the update
};

bool read_full(int fd, void* p, size_t n) {
  char* c = static_cast<char*>(p);
  while (n > 0) {
    const ssize_t r = ::read(fd, c, n);
    if (r < 0 && errno == EINTR) continue;
    if (r <= 0) return false;
    c += r;
    n -= size_t(r);
  }
  return true;
}

bool write_full(int fd, const void* p, size_t n) {
  const char* c = static_cast<const char*>(p);
  while (n > 0) {
    const ssize_t r = ::write(fd, c, n);
    if (r < 0 && errno == EINTR) continue;
    if (r <= 0) return false;
    c += r;
    n -= size_t(r);
  }
  return true;
}

// One rank process (started by the parent with --rank-child): joins the group, warms up,
// then answers the parent's commands. Exits 2 on any Wharf error (the parent names the rank),
// 3 when the parent's pipe fails.
int rank_child(uint32_t rank, uint32_t size, int cmd_fd, int reply_fd, double gib, int tensors) {
  auto ok = [rank](wharf_status* st, const char* what) {
    if (!st) return;
    std::fprintf(stderr, "replica_bench rank %u: %s: %s: %s\n", rank, what, wharf_code_name(wharf_status_code(st)),
                 wharf_status_message(st));
    std::fflush(stderr);
    std::_Exit(2);  // no teardown: a peer may be gone, and the parent reaps this exit at once
  };
  auto reply = [&](const Reply& r) {
    if (!write_full(reply_fd, &r, sizeof r)) std::_Exit(3);
  };
  wharf_replica_group_id id;
  if (!read_full(cmd_fd, &id, sizeof id)) return 3;
  const Model model(gib, tensors);
  wharf_runtime* rt = cuda_runtime(int(rank));
  wharf_container* c = model.container(rt, "rank" + std::to_string(rank));
  char* host = nullptr;
  wharf_constant_map* map = nullptr;
  if (rank == 0) {
    host = pageable_source(model.total);
    map = model.map_over(host);
  }
  wharf_replica_group_rank_options ro;
  wharf_replica_group_rank_options_init(&ro);
  ro.timeout_ms = 120000;  // rank 0 touches its 8 GiB of sources before it joins
  wharf_replica_group* g = nullptr;
  ok(wharf_replica_group_create_rank(c, &id, rank, size, &ro, &g), "create rank");
  // Warm-up (staging ring, NCCL buffers, the pool's first large allocations for both
  // generations, as the in-process group rows find them after the independent rows).
  for (int w = 0; w < 2; ++w) {
    ok(wharf_replica_group_free_inactive(g), "warm-up free inactive");
    ok(wharf_replica_group_update_ranks(g, map, nullptr), "warm-up update_ranks");
  }
  wharf_replica_group_stats st;
  std::memset(&st, 0, sizeof st);
  st.struct_size = sizeof st;
  ok(wharf_replica_group_get_stats(g, &st), "group stats");
  reply({int32_t(rank), st.nccl_version, 0, 0});
  uint64_t before = 0;
  for (;;) {
    char cmd = 0;
    if (!read_full(cmd_fd, &cmd, 1)) return 3;  // the parent is gone
    if (cmd == 'Q') break;
    if (cmd == 'P') {
      ok(wharf_replica_group_free_inactive(g), "free inactive");
      before = constants_bytes(rt);
      reply({int32_t(rank), 0, 0, 0});
    } else if (cmd == 'G') {
      ok(wharf_replica_group_update_ranks(g, map, nullptr), "update_ranks");  // stages and swaps
      const int64_t end = monotonic_ns();
      reply({int32_t(rank), 0, end, constants_bytes(rt) - before});
    } else {
      std::fprintf(stderr, "replica_bench rank %u: unknown command %d from the parent\n", rank, int(cmd));
      return 3;
    }
  }
  wharf_replica_group_free(g);
  wharf_container_free(c);
  wharf_constant_map_free(map);
  std::free(host);
  wharf_runtime_free(rt);
  return 0;
}

// The parent's view of N rank processes. Every exit path of the bench after spawn() goes
// through finish() or fail(): the children are reaped (no zombies), and fail() kills the
// survivors first. The children also die with the parent (PR_SET_PDEATHSIG).
class RankProcesses {
 public:
  explicit RankProcesses(int n) : ch_(size_t(n)) {}
  RankProcesses(const RankProcesses&) = delete;
  RankProcesses& operator=(const RankProcesses&) = delete;

  // Starts rank i on GPU i (fork + exec of this binary) and sends it `id`.
  void spawn(const wharf_replica_group_id& id, double gib, int tensors) {
    const pid_t parent = ::getpid();
    char gib_s[64];
    std::snprintf(gib_s, sizeof gib_s, "%.17g", gib);
    const std::string tensors_s = std::to_string(tensors), size_s = std::to_string(ch_.size());
    std::fflush(stdout);
    std::fflush(stderr);
    ::signal(SIGPIPE, SIG_IGN);  // a rank gone shows as a failed write (EPIPE), named below
    for (size_t i = 0; i < ch_.size(); ++i) {
      int cmd[2], rep[2];
      if (::pipe2(cmd, O_CLOEXEC) != 0 || ::pipe2(rep, O_CLOEXEC) != 0)
        fail("pipe: " + std::string(std::strerror(errno)));
      // Everything the child needs is built before fork: between fork and exec it makes only
      // system calls (the parent has threads and a CUDA context).
      const std::string rank_s = std::to_string(i), cmd_s = std::to_string(cmd[0]), rep_s = std::to_string(rep[1]);
      const char* argv[] = {"replica_bench", "--rank-child",    rank_s.c_str(), size_s.c_str(),
                            cmd_s.c_str(),   rep_s.c_str(),     "--gib",        gib_s,
                            "--tensors",     tensors_s.c_str(), nullptr};
      const pid_t pid = ::fork();
      if (pid < 0) fail("fork: " + std::string(std::strerror(errno)));
      if (pid == 0) {
        ::prctl(PR_SET_PDEATHSIG, SIGKILL);
        if (::getppid() != parent) ::_exit(1);  // the parent died before prctl
        ::signal(SIGPIPE, SIG_DFL);             // ignored signals stay ignored across exec
        ::fcntl(cmd[0], F_SETFD, 0);            // these two stay open across exec
        ::fcntl(rep[1], F_SETFD, 0);
        ::execv("/proc/self/exe", const_cast<char* const*>(argv));
        ::_exit(127);
      }
      ::close(cmd[0]);
      ::close(rep[1]);
      ch_[i] = {pid, cmd[1], rep[0], false, 0};
      if (!write_full(cmd[1], &id, sizeof id)) fail_rank(i, "receiving the group id");
    }
  }

  // Sends `cmd` to every rank.
  void send(char cmd, const char* step) {
    for (size_t i = 0; i < ch_.size(); ++i)
      if (!write_full(ch_[i].cmd, &cmd, 1)) fail_rank(i, step);
  }

  // One Reply from every rank within `limit_s` seconds, in rank order.
  std::vector<Reply> collect(const char* step, int limit_s) {
    std::vector<Reply> out(ch_.size());
    std::vector<size_t> got(ch_.size(), 0);
    const int64_t deadline = monotonic_ns() + int64_t(limit_s) * 1000000000;
    for (;;) {
      std::vector<pollfd> fds;
      std::vector<size_t> who;
      for (size_t i = 0; i < ch_.size(); ++i)
        if (got[i] < sizeof(Reply)) {
          fds.push_back({ch_[i].reply, POLLIN, 0});
          who.push_back(i);
        }
      if (fds.empty()) break;
      const int64_t left_ms = (deadline - monotonic_ns()) / 1000000;
      if (left_ms <= 0) {
        std::string late;
        for (size_t i : who) late += (late.empty() ? "" : ", ") + std::to_string(i);
        fail("rank(s) " + late + " did not answer (" + step + ") within " + std::to_string(limit_s) + " s");
      }
      const int r = ::poll(fds.data(), fds.size(), int(std::min<int64_t>(left_ms, 1000)));
      if (r < 0 && errno != EINTR) fail("poll: " + std::string(std::strerror(errno)));
      for (size_t k = 0; r > 0 && k < fds.size(); ++k) {
        if (!fds[k].revents) continue;
        const size_t i = who[k];
        const ssize_t n = ::read(ch_[i].reply, reinterpret_cast<char*>(&out[i]) + got[i], sizeof(Reply) - got[i]);
        if (n < 0 && errno == EINTR) continue;
        if (n <= 0) fail_rank(i, step);  // the rank exited (or its pipe broke)
        got[i] += size_t(n);
      }
    }
    for (size_t i = 0; i < ch_.size(); ++i)
      if (out[i].rank != int32_t(i))
        fail("rank " + std::to_string(i) + " answered as rank " + std::to_string(out[i].rank));
    return out;
  }

  // Asks every rank to quit and reaps it; a rank that does not exit 0 fails the bench.
  void finish() {
    send('Q', "quit");
    for (size_t i = 0; i < ch_.size(); ++i) {
      reap(i, 120);
      if (!ch_[i].reaped) fail("rank " + std::to_string(i) + " did not exit within 120 s of quit");
      if (!(WIFEXITED(ch_[i].status) && WEXITSTATUS(ch_[i].status) == 0)) fail_rank(i, "quit");
      close_pipes(i);
    }
  }

 private:
  struct Child {
    pid_t pid = -1;
    int cmd = -1, reply = -1;
    bool reaped = false;
    int status = 0;
  };
  std::vector<Child> ch_;

  // Waits up to `limit_s` seconds for rank i to exit.
  void reap(size_t i, int limit_s) {
    Child& c = ch_[i];
    const int64_t deadline = monotonic_ns() + int64_t(limit_s) * 1000000000;
    while (!c.reaped && c.pid > 0) {
      const pid_t r = ::waitpid(c.pid, &c.status, WNOHANG);
      if (r == c.pid || (r < 0 && errno != EINTR)) {
        c.reaped = true;
        break;
      }
      if (monotonic_ns() > deadline) break;
      std::this_thread::sleep_for(std::chrono::milliseconds(10));  // bounded polling of one exit
    }
  }

  void close_pipes(size_t i) {
    if (ch_[i].cmd >= 0) ::close(ch_[i].cmd);
    if (ch_[i].reply >= 0) ::close(ch_[i].reply);
    ch_[i].cmd = ch_[i].reply = -1;
  }

  static std::string describe(const Child& c) {
    if (!c.reaped) return "still running";
    if (WIFEXITED(c.status)) return "exited with status " + std::to_string(WEXITSTATUS(c.status));
    if (WIFSIGNALED(c.status)) return "killed by signal " + std::to_string(WTERMSIG(c.status));
    return "wait status " + std::to_string(c.status);
  }

  // Rank i stopped answering during `step`: its exit status (it closed its pipe, so it is
  // exiting: a few seconds' wait), then the others are stopped.
  [[noreturn]] void fail_rank(size_t i, const std::string& step) {
    reap(i, 5);
    fail("rank " + std::to_string(i) + " (GPU " + std::to_string(i) + ", pid " + std::to_string(ch_[i].pid) +
         ") failed during " + step + ": " + describe(ch_[i]));
  }

  // Kills every rank still running, reaps them all, prints `why` and each rank's end, exits 2.
  [[noreturn]] void fail(const std::string& why) {
    std::fflush(stdout);
    for (const Child& c : ch_)
      if (c.pid > 0 && !c.reaped) ::kill(c.pid, SIGKILL);
    std::fprintf(stderr, "replica_bench: group of %zu processes: %s\n", ch_.size(), why.c_str());
    for (size_t i = 0; i < ch_.size(); ++i) {
      if (ch_[i].pid <= 0) continue;
      const bool was_running = !ch_[i].reaped;
      if (!ch_[i].reaped) {
        while (::waitpid(ch_[i].pid, &ch_[i].status, 0) < 0 && errno == EINTR) {
        }
        ch_[i].reaped = true;
      }
      std::fprintf(stderr, "  rank %zu (pid %d): %s%s\n", i, int(ch_[i].pid), describe(ch_[i]).c_str(),
                   was_running ? " (stopped by the bench)" : "");
      close_pipes(i);
    }
    std::exit(2);
  }
};

// The "group (processes)" row for n ranks: ids from `rt` (this process's CUDA runtime).
Row process_group_row(wharf_runtime* rt, int n, int reps, double gib, int tensors) {
  wharf_replica_group_id id;
  wharf_ok(wharf_replica_group_get_unique_id(rt, &id), "group id");
  RankProcesses ranks(n);
  ranks.spawn(id, gib, tensors);
  const std::vector<Reply> joined = ranks.collect("joining the group and warming up", 600);
  Samples s;
  uint64_t extra = 0;
  for (int r = 0; r < reps; ++r) {
    ranks.send('P', "free inactive");
    ranks.collect("free inactive", 120);  // the barrier: every rank waits for 'G'
    const int64_t t0 = monotonic_ns();
    ranks.send('G', "update_ranks");
    const std::vector<Reply> done = ranks.collect("update_ranks", 300);
    int64_t end = t0;
    for (const Reply& d : done) end = std::max(end, d.end_ns);
    s.add(double(end - t0) / 1e9);
    extra = done.back().extra_bytes;  // the last replica, as in the in-process rows
  }
  ranks.finish();
  return {"group (processes)", n, s.med(), s.lo(), s.hi(), extra, joined[0].nccl_version};
}

}  // namespace

int main(int argc, char** argv) {
  double gib = 8;
  int tensors = 64, reps = 5, want_gpus = 0;
  bool processes = false;
  long child_rank = -1, child_size = 0;
  int child_cmd = -1, child_reply = -1;
  const char* csv = nullptr;
  for (int i = 1; i < argc; ++i) {
    if (!std::strcmp(argv[i], "--gib") && i + 1 < argc)
      gib = std::atof(argv[++i]);
    else if (!std::strcmp(argv[i], "--tensors") && i + 1 < argc)
      tensors = std::atoi(argv[++i]);
    else if (!std::strcmp(argv[i], "--reps") && i + 1 < argc)
      reps = std::atoi(argv[++i]);
    else if (!std::strcmp(argv[i], "--gpus") && i + 1 < argc)
      want_gpus = std::atoi(argv[++i]);
    else if (!std::strcmp(argv[i], "--csv") && i + 1 < argc)
      csv = argv[++i];
    else if (!std::strcmp(argv[i], "--processes"))
      processes = true;
    else if (!std::strcmp(argv[i], "--rank-child") && i + 4 < argc) {  // internal: one rank process
      child_rank = std::atol(argv[++i]);
      child_size = std::atol(argv[++i]);
      child_cmd = std::atoi(argv[++i]);
      child_reply = std::atoi(argv[++i]);
    } else {
      std::fprintf(stderr,
                   "usage: replica_bench [--gib N] [--tensors N] [--reps N] [--gpus N] [--processes] [--csv PATH]\n");
      return 1;
    }
  }
  if (tensors < 1 || reps < 1 || gib <= 0) return 1;
  if (child_rank >= 0) {
    if (child_size < 1 || child_rank >= child_size) return 1;
    return rank_child(uint32_t(child_rank), uint32_t(child_size), child_cmd, child_reply, gib, tensors);
  }
  int gpus = 0;
  CUDA_OK(cudaGetDeviceCount(&gpus));
  if (want_gpus > 0)
    gpus = std::min(gpus, want_gpus);
  else if (processes)
    gpus = std::min(gpus, 4);
  if (gpus < 1) {
    std::fprintf(stderr, "replica_bench: no GPU\n");
    return 2;
  }
  const Model model(gib, tensors);
  const uint64_t per_tensor = model.per_tensor;
  const uint64_t total = model.total;

  // The N values measured: 1, 2, 4, ... up to the GPUs present (and the count itself).
  std::vector<int> counts{1};
  for (int n = 2; n <= gpus; n *= 2) counts.push_back(n);
  if (counts.back() != gpus) counts.push_back(gpus);

  std::vector<wharf_runtime*> rts;
  for (int d = 0; d < gpus; ++d) rts.push_back(cuda_runtime(d));
  wharf_device_info info;
  std::memset(&info, 0, sizeof info);
  info.struct_size = sizeof info;
  wharf_ok(wharf_runtime_get_device_info(rts[0], &info), "device info");
  std::printf(
      "replica_bench: %d x %s, model %d x %.0f MiB BF16 = %.2f GiB (pageable host source), %d reps "
      "(median [min, max])\n",
      gpus, info.name, tensors, double(per_tensor) / (1 << 20), double(total) / (1ull << 30), reps);

  char* host = pageable_source(total);
  wharf_constant_map* map = model.map_over(host);
  std::vector<wharf_container*> cs;
  for (int d = 0; d < gpus; ++d) cs.push_back(model.container(rts[size_t(d)], "replica" + std::to_string(d)));
  // Warm-up (staging rings, the pool's first large allocations): one update and swap per GPU.
  for (int d = 0; d < gpus; ++d) {
    wharf_ok(wharf_container_update(cs[size_t(d)], map, nullptr), "warm-up update");
    wharf_ok(wharf_container_swap(cs[size_t(d)]), "warm-up swap");
  }

  std::vector<Row> rows;
  for (int n : counts) {
    // Independent: n updates at once, one thread per GPU.
    Samples ind;
    uint64_t ind_extra = 0;
    for (int r = 0; r < reps; ++r) {
      for (int d = 0; d < n; ++d) wharf_ok(wharf_container_free_inactive(cs[size_t(d)]), "free inactive");
      const uint64_t before = constants_bytes(rts[0]);
      std::vector<std::thread> ts;
      std::vector<uint64_t> staged(size_t(n), 0);
      auto t0 = Clock::now();
      for (int d = 0; d < n; ++d)
        ts.emplace_back([&, d] {
          wharf_ok(wharf_container_update(cs[size_t(d)], map, nullptr), "independent update");
          wharf_ok(wharf_container_swap(cs[size_t(d)]), "independent swap");
        });
      for (auto& t : ts) t.join();
      ind.add(seconds_since(t0));
      ind_extra = constants_bytes(rts[0]) - before;
    }
    rows.push_back({"independent", n, ind.med(), ind.lo(), ind.hi(), ind_extra, 0});

    // Group: one update, sources read once, NCCL to the others.
    wharf_replica_group* group = nullptr;
    wharf_ok(wharf_replica_group_create(cs.data(), size_t(n), &group), "replica group");
    Samples grp;
    uint64_t grp_extra = 0;
    for (int r = 0; r < reps; ++r) {
      wharf_ok(wharf_replica_group_free_inactive(group), "group free inactive");
      const uint64_t before = constants_bytes(rts[size_t(n - 1)]);
      auto t0 = Clock::now();
      wharf_ok(wharf_replica_group_update(group, map, nullptr), "group update");
      const double upd = seconds_since(t0);
      grp_extra = constants_bytes(rts[size_t(n - 1)]) - before;  // staged, before the swap
      auto t1 = Clock::now();
      wharf_ok(wharf_replica_group_swap(group), "group swap");
      grp.add(upd + seconds_since(t1));
    }
    wharf_replica_group_stats st;
    std::memset(&st, 0, sizeof st);
    st.struct_size = sizeof st;
    wharf_ok(wharf_replica_group_get_stats(group, &st), "group stats");
    rows.push_back({"group (NCCL)", n, grp.med(), grp.lo(), grp.hi(), grp_extra, st.nccl_version});
    wharf_replica_group_free(group);
  }

  if (processes) {
    // The rank processes hold their own replicas: this process's are freed first (device
    // memory, copy engines and the host's memory bandwidth go to the ranks alone).
    for (wharf_container* c : cs) wharf_container_free(c);
    cs.clear();
    for (wharf_runtime* rt : rts) wharf_runtime_free(rt);
    rts.clear();
    wharf_constant_map_free(map);
    map = nullptr;
    std::free(host);
    host = nullptr;
    wharf_runtime* id_rt = cuda_runtime(0);  // makes the ids (NCCL's bootstrap root lives here)
    for (int n : counts) rows.push_back(process_group_row(id_rt, n, reps, gib, tensors));
    wharf_runtime_free(id_rt);
    // One table by N: each N's process row after its in-process rows.
    std::stable_sort(rows.begin(), rows.end(), [](const Row& a, const Row& b) { return a.n < b.n; });
  }

  const double single = rows[0].median_s;  // independent, N = 1: one GPU's own update
  int w = 14;
  for (const Row& r : rows) w = std::max(w, int(r.mode.size()));
  std::printf("\n%-*s %3s %10s %21s %9s %12s %12s %18s %6s\n", w, "mode", "N", "median_s", "[min, max]", "GB/s_src",
              "GB/s_total", "x_single", "extra_MiB/replica", "nccl");
  for (const Row& r : rows)
    std::printf("%-*s %3d %10.4f [%8.4f, %8.4f] %9.2f %12.2f %11.3fx %18.0f %6d\n", w, r.mode.c_str(), r.n, r.median_s,
                r.min_s, r.max_s, double(total) / r.median_s / 1e9, double(total) * r.n / r.median_s / 1e9,
                r.median_s / single, double(r.extra_per_replica) / (1 << 20), r.nccl_version);
  std::printf("\nupdated bytes per replica: %.0f MiB (extra_MiB/replica target)\n", double(total) / (1 << 20));
  std::printf("target: group update time <= 1.2 x a single GPU's update (x_single of the group rows)\n");
  if (processes)
    std::printf(
        "group (processes): one process per GPU, rank 0 reads the sources; from a barrier to the last rank's "
        "return of wharf_replica_group_update_ranks (staged and swapped on every rank)\n");
  if (gpus < 2)
    std::printf(
        "note: the N >= 2 rows (NCCL broadcast between GPUs) need more GPUs; this machine has %d. The N = 1 "
        "group row runs NCCL with one rank.\n",
        gpus);
  // JSON lines: one object per row.
  for (const Row& r : rows)
    std::printf(
        "{\"bench\":\"replica\",\"gpu\":\"%s\",\"gib\":%.3f,\"tensors\":%d,\"reps\":%d,\"mode\":\"%s\",\"replicas\":%d,"
        "\"median_s\":%.6f,\"min_s\":%.6f,\"max_s\":%.6f,\"gbps_source\":%.3f,\"x_single\":%.4f,"
        "\"extra_bytes_per_replica\":%llu,\"nccl_version\":%d}\n",
        info.name, double(total) / (1ull << 30), tensors, reps, r.mode.c_str(), r.n, r.median_s, r.min_s, r.max_s,
        double(total) / r.median_s / 1e9, r.median_s / single, (unsigned long long)r.extra_per_replica, r.nccl_version);
  if (csv) {
    FILE* f = std::fopen(csv, "w");
    if (f) {
      std::fprintf(f, "mode,replicas,median_s,min_s,max_s,gbps_source,x_single,extra_bytes_per_replica,nccl_version\n");
      for (const Row& r : rows)
        std::fprintf(f, "%s,%d,%.6f,%.6f,%.6f,%.3f,%.4f,%llu,%d\n", r.mode.c_str(), r.n, r.median_s, r.min_s, r.max_s,
                     double(total) / r.median_s / 1e9, r.median_s / single, (unsigned long long)r.extra_per_replica,
                     r.nccl_version);
      std::fclose(f);
    }
  }
  for (wharf_container* c : cs) wharf_container_free(c);
  for (wharf_runtime* rt : rts) wharf_runtime_free(rt);
  wharf_constant_map_free(map);
  std::free(host);
  return 0;
}

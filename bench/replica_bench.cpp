// SPDX-License-Identifier: Apache-2.0
// replica_bench: one model's weights from pageable CPU memory to N GPUs of this host, two
// ways in the same run:
//   independent: N containers (one per GPU) each updated with wharf_container_update from
//                the same sources, all N at once on N threads (each reads host memory);
//   group:       one wharf_replica_group_update (sources read once into GPU 0 through its
//                staging ring, then NCCL broadcast to the others) over the same N GPUs.
// Each figure is update + swap (the time until every GPU serves the new weights), the median
// of --reps repetitions with min and max. The reference is one GPU's own update (independent,
// N = 1); the target is group <= 1.2 x that. "extra_MiB/replica" is the constants
// memory one replica holds beyond its active generation right after the update (read from
// Wharf's accounting): the target is the updated bytes.
// On a one-GPU machine only the N = 1 rows run, and the table says so.
//
// usage: replica_bench [--gib N (8)] [--tensors N (64)] [--reps N (5)] [--gpus N (all)] [--csv PATH]
#include <cuda_runtime.h>

#include <algorithm>
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

}  // namespace

int main(int argc, char** argv) {
  double gib = 8;
  int tensors = 64, reps = 5, want_gpus = 0;
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
    else {
      std::fprintf(stderr, "usage: replica_bench [--gib N] [--tensors N] [--reps N] [--gpus N] [--csv PATH]\n");
      return 1;
    }
  }
  if (tensors < 1 || reps < 1 || gib <= 0) return 1;
  int gpus = 0;
  CUDA_OK(cudaGetDeviceCount(&gpus));
  if (want_gpus > 0) gpus = std::min(gpus, want_gpus);
  if (gpus < 1) {
    std::fprintf(stderr, "replica_bench: no GPU\n");
    return 2;
  }
  const uint64_t per_tensor = (uint64_t(gib * double(1ull << 30)) / uint64_t(tensors)) & ~uint64_t(4095);
  const uint64_t total = per_tensor * uint64_t(tensors);
  const int64_t elems = int64_t(per_tensor / 2);  // BF16

  // The N values measured: 1, 2, 4, ... up to the GPUs present (and the count itself).
  std::vector<int> counts{1};
  for (int n = 2; n <= gpus; n *= 2) counts.push_back(n);
  if (counts.back() != gpus) counts.push_back(gpus);

  std::vector<wharf_runtime*> rts;
  for (int d = 0; d < gpus; ++d) {
    wharf_runtime_options ro;
    wharf_runtime_options_init(&ro);
    ro.backend = WHARF_BACKEND_CUDA;
    ro.device_index = d;
    wharf_runtime* rt = nullptr;
    wharf_ok(wharf_runtime_create(&ro, &rt), "runtime");
    rts.push_back(rt);
  }
  wharf_device_info info;
  std::memset(&info, 0, sizeof info);
  info.struct_size = sizeof info;
  wharf_ok(wharf_runtime_get_device_info(rts[0], &info), "device info");
  std::printf(
      "replica_bench: %d x %s, model %d x %.0f MiB BF16 = %.2f GiB (pageable host source), %d reps "
      "(median [min, max])\n",
      gpus, info.name, tensors, double(per_tensor) / (1 << 20), double(total) / (1ull << 30), reps);

  // Pageable sources, every page touched (first-touch faults are not measured).
  char* host = static_cast<char*>(std::malloc(total));
  if (!host) {
    std::fprintf(stderr, "replica_bench: cannot allocate %.1f GiB of host memory\n", double(total) / (1ull << 30));
    return 2;
  }
  touch(host, total, 3);
  std::vector<std::string> names;
  for (int i = 0; i < tensors; ++i) names.push_back("layers." + std::to_string(i) + ".weight");
  std::vector<int64_t> shape{elems};
  wharf_constant_map* map = nullptr;
  wharf_ok(wharf_constant_map_create(&map), "map");
  for (int i = 0; i < tensors; ++i) {
    wharf_tensor_view v;
    std::memset(&v, 0, sizeof v);
    v.struct_size = sizeof v;
    v.data = host + uint64_t(i) * per_tensor;
    v.dtype = WHARF_DTYPE_BF16;
    v.device_type = WHARF_DEVICE_CPU;
    v.ndim = 1;
    v.shape = shape.data();
    wharf_ok(wharf_constant_map_set(map, names[size_t(i)].c_str(), &v), "map set");
  }
  std::vector<wharf_constant_decl> decls(static_cast<size_t>(tensors));
  for (int i = 0; i < tensors; ++i) {
    wharf_constant_decl& d = decls[size_t(i)];
    std::memset(&d, 0, sizeof d);
    d.struct_size = sizeof d;
    d.fqn = names[size_t(i)].c_str();
    d.dtype = WHARF_DTYPE_BF16;
    d.ndim = 1;
    d.shape = shape.data();
  }
  std::vector<wharf_container*> cs;
  for (int d = 0; d < gpus; ++d) {
    wharf_container_options o;
    wharf_container_options_init(&o);
    std::string name = "replica" + std::to_string(d);
    o.name = name.c_str();
    o.constants = decls.data();
    o.num_constants = decls.size();
    wharf_container* c = nullptr;
    wharf_ok(wharf_container_create(rts[size_t(d)], &o, &c), "container");
    cs.push_back(c);
  }
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

  const double single = rows[0].median_s;  // independent, N = 1: one GPU's own update
  std::printf("\n%-14s %3s %10s %21s %9s %12s %12s %18s %6s\n", "mode", "N", "median_s", "[min, max]", "GB/s_src",
              "GB/s_total", "x_single", "extra_MiB/replica", "nccl");
  for (const Row& r : rows)
    std::printf("%-14s %3d %10.4f [%8.4f, %8.4f] %9.2f %12.2f %11.3fx %18.0f %6d\n", r.mode.c_str(), r.n, r.median_s,
                r.min_s, r.max_s, double(total) / r.median_s / 1e9, double(total) * r.n / r.median_s / 1e9,
                r.median_s / single, double(r.extra_per_replica) / (1 << 20), r.nccl_version);
  std::printf("\nupdated bytes per replica: %.0f MiB (extra_MiB/replica target)\n", double(total) / (1 << 20));
  std::printf("target: group update time <= 1.2 x a single GPU's update (x_single of the group rows)\n");
  if (gpus < 2)
    std::printf(
        "note: the N >= 2 rows (NCCL broadcast between GPUs) need more GPUs; this machine has %d. The N = 1 "
        "group row runs NCCL with one rank.\n",
        gpus);
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

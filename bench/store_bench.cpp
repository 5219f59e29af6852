// SPDX-License-Identifier: Apache-2.0
// store_bench: one model loaded into several containers (e.g. the methods of one model, or
// replicas behind different entry points) with wharf_container_create_from_map, without a
// weight store (the baseline: every container holds its own copy) and with one store,
// measured in the same run on the same GPU.
//
// Figures per configuration (median of --reps repetitions):
//   load time of the first container, of the second, and the median of the later ones;
//   the second's load time as a percentage of the first's (target with a store: < 1%);
//   device bytes of constants after all N containers are loaded, from Wharf's accounting
//   (WHARF_MEM_CONSTANTS) and from cudaMemGetInfo; and those bytes divided by the model's
//   unique weight bytes (target with a store: 1.00x; without: N x).
// Sources are pinned host memory, so the first load runs at the DMA ceiling and the
// comparison is between copying and not copying, not between staging paths.
//
// usage: store_bench [--gib N] [--tensors N] [--reps N] [--counts 2,4] [--csv PATH]
#include <cuda_runtime.h>

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <string>
#include <thread>
#include <vector>

#include "bench_common.h"
#include "wharf/wharf.h"

namespace {

using namespace bench;

wharf_memory_stats memory_stats(wharf_runtime* rt) {
  wharf_memory_stats ms;
  std::memset(&ms, 0, sizeof ms);
  ms.struct_size = sizeof ms;
  wharf_ok(wharf_runtime_get_memory_stats(rt, &ms), "memory stats");
  return ms;
}

std::string ms3(double seconds) {
  char buf[32];
  std::snprintf(buf, sizeof buf, "%.3f", seconds * 1e3);
  return buf;
}

struct Row {
  std::string mode;
  int containers;
  double first_s, second_s, later_s;  // later: median over containers 3..N (0 when N < 3)
  uint64_t constants_bytes, memgetinfo_bytes, saved_bytes;
};

}  // namespace

int main(int argc, char** argv) {
  double gib = 8;
  int tensors = 64, reps = 3;
  std::vector<int> counts{2, 4};
  const char* csv = nullptr;
  for (int i = 1; i < argc; ++i) {
    if (!std::strcmp(argv[i], "--gib") && i + 1 < argc)
      gib = std::atof(argv[++i]);
    else if (!std::strcmp(argv[i], "--tensors") && i + 1 < argc)
      tensors = std::atoi(argv[++i]);
    else if (!std::strcmp(argv[i], "--reps") && i + 1 < argc)
      reps = std::atoi(argv[++i]);
    else if (!std::strcmp(argv[i], "--csv") && i + 1 < argc)
      csv = argv[++i];
    else if (!std::strcmp(argv[i], "--counts") && i + 1 < argc) {
      counts.clear();
      for (char* tok = std::strtok(argv[++i], ","); tok; tok = std::strtok(nullptr, ","))
        counts.push_back(std::atoi(tok));
    } else {
      std::fprintf(stderr, "usage: store_bench [--gib N] [--tensors N] [--reps N] [--counts 2,4] [--csv PATH]\n");
      return 1;
    }
  }
  if (tensors < 1 || reps < 1 || counts.empty()) return 1;
  const uint64_t per_tensor = (uint64_t(gib * double(1ull << 30)) / tensors) & ~uint64_t(4095);
  const uint64_t total = per_tensor * tensors;
  const int64_t elems = int64_t(per_tensor / 2);  // BF16

  wharf_runtime_options ro;
  wharf_runtime_options_init(&ro);
  ro.backend = WHARF_BACKEND_CUDA;
  wharf_runtime* rt = nullptr;
  wharf_ok(wharf_runtime_create(&ro, &rt), "runtime");
  wharf_device_info info;
  std::memset(&info, 0, sizeof info);
  info.struct_size = sizeof info;
  wharf_ok(wharf_runtime_get_device_info(rt, &info), "device info");
  const int max_n = *std::max_element(counts.begin(), counts.end());
  std::printf(
      "store_bench: %s, model %d x %.0f MiB BF16 = %.2f GiB (pinned host source), containers %s, %d reps (median)\n",
      info.name, tensors, double(per_tensor) / (1 << 20), double(total) / (1ull << 30),
      [&] {
        std::string s;
        for (int n : counts) s += (s.empty() ? "" : ",") + std::to_string(n);
        return s;
      }()
          .c_str(),
      reps);
  if (double(total) * max_n > double(info.free_memory) * 0.9)
    std::printf("warning: %d copies of the model (%.1f GiB) approach free device memory (%.1f GiB)\n", max_n,
                double(total) * max_n / (1ull << 30), double(info.free_memory) / (1ull << 30));

  void* pinned = nullptr;
  CUDA_OK(cudaHostAlloc(&pinned, total, cudaHostAllocPortable));
  touch(pinned, total, 1);

  std::vector<std::string> names;
  std::vector<int64_t> shape{elems};
  for (int i = 0; i < tensors; ++i) names.push_back("layers." + std::to_string(i) + ".weight");
  wharf_constant_map* map = nullptr;
  wharf_ok(wharf_constant_map_create(&map), "map");
  for (int i = 0; i < tensors; ++i) {
    wharf_tensor_view v{sizeof(wharf_tensor_view),
                        0,
                        static_cast<char*>(pinned) + uint64_t(i) * per_tensor,
                        WHARF_DTYPE_BF16,
                        WHARF_DEVICE_CPU,
                        0,
                        1,
                        shape.data(),
                        nullptr};
    wharf_ok(wharf_constant_map_set(map, names[i].c_str(), &v), "map set");
  }

  // Warm-up: the transfer engine, the driver's first large allocations.
  {
    wharf_container* c = nullptr;
    wharf_ok(wharf_container_create_from_map(rt, map, nullptr, &c), "warm-up load");
    wharf_container_free(c);
    wharf_ok(wharf_runtime_synchronize(rt), "sync");
  }

  std::vector<Row> rows;
  for (int n : counts) {
    for (int with_store = 0; with_store < 2; ++with_store) {
      std::vector<double> first, second, later;
      uint64_t bytes = 0, mgi = 0, saved = 0;
      for (int r = 0; r < reps; ++r) {
        wharf_ok(wharf_runtime_synchronize(rt), "sync");
        CUDA_OK(cudaDeviceSynchronize());
        const uint64_t c0 = memory_stats(rt).current[WHARF_MEM_CONSTANTS];
        const uint64_t free0 = free_device_bytes();
        wharf_weight_store* store = nullptr;
        if (with_store) wharf_ok(wharf_weight_store_create(rt, &store), "store");
        std::vector<wharf_container*> cs(size_t(n), nullptr);
        std::vector<double> later_rep;
        for (int i = 0; i < n; ++i) {
          wharf_container_options o;
          wharf_container_options_init(&o);
          std::string name = "method" + std::to_string(i);
          o.name = name.c_str();
          o.store = store;
          auto t0 = Clock::now();
          wharf_ok(wharf_container_create_from_map(rt, map, &o, &cs[size_t(i)]), "load");
          double s = seconds_since(t0);
          if (i == 0)
            first.push_back(s);
          else if (i == 1)
            second.push_back(s);
          else
            later_rep.push_back(s);
        }
        if (!later_rep.empty()) later.push_back(median(later_rep));
        CUDA_OK(cudaDeviceSynchronize());
        const uint64_t free1 = free_device_bytes();
        bytes = memory_stats(rt).current[WHARF_MEM_CONSTANTS] - c0;
        mgi = free0 > free1 ? free0 - free1 : 0;
        if (store) {
          wharf_weight_store_stats st;
          std::memset(&st, 0, sizeof st);
          st.struct_size = sizeof st;
          wharf_ok(wharf_weight_store_get_stats(store, &st), "store stats");
          saved = st.saved_bytes;
        }
        for (wharf_container* c : cs) wharf_container_free(c);
        wharf_weight_store_free(store);
        const uint64_t left = memory_stats(rt).current[WHARF_MEM_CONSTANTS] - c0;
        if (left != 0)
          std::printf("warning: %llu constant bytes left after freeing every container\n", (unsigned long long)left);
      }
      rows.push_back({with_store ? "weight store" : "no store (baseline)", n, median(first), median(second),
                      median(later), bytes, mgi, saved});
    }
  }

  std::printf("\nunique weight bytes: %.0f MiB\n", double(total) / (1 << 20));
  std::printf("\n%-20s %4s %9s %10s %9s %10s %9s %13s %14s %8s %10s\n", "mode", "N", "first_s", "second_ms", "2nd/1st",
              "later_ms", "GB/s_1st", "constants_MiB", "memgetinfo_MiB", "x_unique", "saved_MiB");
  for (const Row& r : rows)
    std::printf("%-20s %4d %9.4f %10.3f %8.3f%% %10s %9.2f %13.0f %14.0f %7.2fx %10.0f\n", r.mode.c_str(), r.containers,
                r.first_s, r.second_s * 1e3, 100.0 * r.second_s / r.first_s,
                r.containers > 2 ? ms3(r.later_s).c_str() : "-", double(total) / r.first_s / 1e9,
                double(r.constants_bytes) / (1 << 20), double(r.memgetinfo_bytes) / (1 << 20),
                double(r.constants_bytes) / double(total), double(r.saved_bytes) / (1 << 20));
  std::printf("\nstore vs baseline, same N:\n");
  for (size_t i = 0; i + 1 < rows.size(); i += 2) {
    const Row& b = rows[i];
    const Row& s = rows[i + 1];
    const double load_b = b.first_s + b.second_s + b.later_s * std::max(0, b.containers - 2);
    const double load_s = s.first_s + s.second_s + s.later_s * std::max(0, s.containers - 2);
    std::printf(
        "  N=%d: constants %.0f vs %.0f MiB (%.3fx of baseline); all %d loads %.3f vs %.3f s (%.3fx); "
        "second load %.3f ms vs %.1f ms\n",
        b.containers, double(s.constants_bytes) / (1 << 20), double(b.constants_bytes) / (1 << 20),
        double(s.constants_bytes) / double(b.constants_bytes), b.containers, load_s, load_b, load_s / load_b,
        s.second_s * 1e3, b.second_s * 1e3);
  }
  if (csv) {
    FILE* f = std::fopen(csv, "w");
    if (f) {
      std::fprintf(f,
                   "mode,containers,first_s,second_s,later_median_s,second_pct_of_first,constants_bytes,"
                   "memgetinfo_bytes,x_unique,saved_bytes,unique_bytes\n");
      for (const Row& r : rows)
        std::fprintf(f, "\"%s\",%d,%.6f,%.6f,%.6f,%.4f,%llu,%llu,%.4f,%llu,%llu\n", r.mode.c_str(), r.containers,
                     r.first_s, r.second_s, r.later_s, 100.0 * r.second_s / r.first_s,
                     (unsigned long long)r.constants_bytes, (unsigned long long)r.memgetinfo_bytes,
                     double(r.constants_bytes) / double(total), (unsigned long long)r.saved_bytes,
                     (unsigned long long)total);
      std::fclose(f);
    }
  }
  wharf_constant_map_free(map);
  wharf_runtime_free(rt);
  CUDA_OK(cudaFreeHost(pinned));
  return 0;
}

// update_bench: hot weight updates of a large model, Wharf beside two baselines measured in
// the same run on the same GPU.
//
//   ceiling    pinned cudaMemcpyAsync of the whole update (the H2D limit of this machine)
//   baseline a "caller copies first": pageable cudaMemcpy into a temporary device tensor,
//              then a device copy into a full-size inactive buffer (AOTInductor's path when
//              CPU sources are rejected)
//   baseline b "full-size inactive buffer, direct copy": one pageable cudaMemcpy per
//              constant into a second copy of every weight
//   wharf      wharf_container_update from pinned, pageable and device sources, 25% and 100%
//
// Figures: median seconds of --reps repetitions, GB/s, % of the ceiling, and the peak extra
// device bytes during the update (Wharf: from its accounting, cross-checked with
// cudaMemGetInfo; baselines: what they allocate). Also the host time of swap.
//
// usage: update_bench [--gib N] [--tensors N] [--reps N] [--csv PATH]
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

struct Row {
  std::string name, source;
  int percent;
  double seconds, gbps, pct_ceiling;
  uint64_t extra_bytes, extra_memgetinfo;
};

}  // namespace

int main(int argc, char** argv) {
  double gib = 8;
  int tensors = 64, reps = 3;
  const char* csv = nullptr;
  for (int i = 1; i < argc; ++i) {
    if (!std::strcmp(argv[i], "--gib") && i + 1 < argc) gib = std::atof(argv[++i]);
    else if (!std::strcmp(argv[i], "--tensors") && i + 1 < argc) tensors = std::atoi(argv[++i]);
    else if (!std::strcmp(argv[i], "--reps") && i + 1 < argc) reps = std::atoi(argv[++i]);
    else if (!std::strcmp(argv[i], "--csv") && i + 1 < argc) csv = argv[++i];
  }
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
  wharf_ok(wharf_runtime_device_info(rt, &info), "device info");
  std::printf("update_bench: %s, model %d x %.0f MiB BF16 = %.2f GiB, %d reps (median)\n", info.name, tensors,
              double(per_tensor) / (1 << 20), double(total) / (1ull << 30), reps);

  // Sources: pageable, pinned and device copies of one full model's bytes.
  std::vector<char> pageable(total);
  touch(pageable.data(), total, 1);
  void* pinned = nullptr;
  CUDA_OK(cudaHostAlloc(&pinned, total, cudaHostAllocPortable));
  touch(pinned, total, 2);
  void* dsrc = nullptr;
  CUDA_OK(cudaMalloc(&dsrc, total));
  CUDA_OK(cudaMemset(dsrc, 3, total));
  CUDA_OK(cudaDeviceSynchronize());

  std::vector<std::string> names;
  std::vector<int64_t> shape{elems};
  for (int i = 0; i < tensors; ++i) names.push_back("layers." + std::to_string(i) + ".weight");
  auto make_map = [&](char* base, wharf_device_type dt, int count) {
    wharf_constant_map* m = nullptr;
    wharf_ok(wharf_constant_map_create(&m), "map");
    for (int i = 0; i < count; ++i) {
      wharf_tensor_view v{base + uint64_t(i) * per_tensor, WHARF_DTYPE_BF16, dt, 0, 1, shape.data(), nullptr};
      wharf_ok(wharf_constant_map_set(m, names[i].c_str(), &v), "map set");
    }
    return m;
  };

  // The model, loaded from pinned memory.
  wharf_constant_map* init = make_map(static_cast<char*>(pinned), WHARF_DEVICE_CPU, tensors);
  wharf_container* c = nullptr;
  wharf_ok(wharf_container_create_from_map(rt, init, nullptr, &c), "load");
  wharf_constant_map_free(init);

  std::vector<Row> rows;
  // Ceiling: one pinned H2D copy of the whole update size into a scratch device buffer.
  auto ceiling = [&](uint64_t bytes) {
    void* d = nullptr;
    CUDA_OK(cudaMalloc(&d, bytes));
    cudaStream_t s;
    CUDA_OK(cudaStreamCreateWithFlags(&s, cudaStreamNonBlocking));
    std::vector<double> t;
    for (int r = 0; r <= reps; ++r) {
      auto t0 = Clock::now();
      CUDA_OK(cudaMemcpyAsync(d, pinned, bytes, cudaMemcpyHostToDevice, s));
      CUDA_OK(cudaStreamSynchronize(s));
      if (r) t.push_back(seconds_since(t0));
    }
    CUDA_OK(cudaStreamDestroy(s));
    CUDA_OK(cudaFree(d));
    return median(t);
  };

  for (int percent : {25, 100}) {
    int count = tensors * percent / 100;
    uint64_t bytes = per_tensor * count;
    double ceil_s = ceiling(bytes);
    double ceil_gbps = double(bytes) / ceil_s / 1e9;
    rows.push_back({"ceiling: pinned cudaMemcpyAsync", "pinned", percent, ceil_s, ceil_gbps, 100.0, 0, 0});

    // Baseline (b): full-size inactive buffer, one pageable cudaMemcpy per constant.
    {
      void* full = nullptr;
      CUDA_OK(cudaMalloc(&full, total));
      std::vector<double> t;
      for (int r = 0; r <= reps; ++r) {
        auto t0 = Clock::now();
        for (int i = 0; i < count; ++i)
          CUDA_OK(cudaMemcpy(static_cast<char*>(full) + uint64_t(i) * per_tensor, pageable.data() + uint64_t(i) * per_tensor,
                             per_tensor, cudaMemcpyHostToDevice));
        if (r) t.push_back(seconds_since(t0));
      }
      CUDA_OK(cudaFree(full));
      double s = median(t);
      rows.push_back({"baseline b: full buffer, direct", "pageable", percent, s, double(bytes) / s / 1e9,
                      100.0 * ceil_s / s, total, total});
    }
    // Baseline (a): the caller copies to a temporary device tensor, then a device copy into
    // a full-size inactive buffer.
    {
      void* full = nullptr;
      void* tmp = nullptr;
      CUDA_OK(cudaMalloc(&full, total));
      CUDA_OK(cudaMalloc(&tmp, bytes));
      std::vector<double> t;
      for (int r = 0; r <= reps; ++r) {
        auto t0 = Clock::now();
        for (int i = 0; i < count; ++i)
          CUDA_OK(cudaMemcpy(static_cast<char*>(tmp) + uint64_t(i) * per_tensor, pageable.data() + uint64_t(i) * per_tensor,
                             per_tensor, cudaMemcpyHostToDevice));
        CUDA_OK(cudaMemcpy(full, tmp, bytes, cudaMemcpyDeviceToDevice));
        CUDA_OK(cudaDeviceSynchronize());
        if (r) t.push_back(seconds_since(t0));
      }
      CUDA_OK(cudaFree(tmp));
      CUDA_OK(cudaFree(full));
      double s = median(t);
      rows.push_back({"baseline a: caller copies first", "pageable", percent, s, double(bytes) / s / 1e9,
                      100.0 * ceil_s / s, total + bytes, total + bytes});
    }
    // Wharf, from each source kind.
    struct Src { const char* name; char* base; wharf_device_type dt; };
    Src srcs[] = {{"pinned", static_cast<char*>(pinned), WHARF_DEVICE_CPU},
                  {"pageable", pageable.data(), WHARF_DEVICE_CPU},
                  {"device", static_cast<char*>(dsrc), WHARF_DEVICE_CUDA}};
    for (const Src& src : srcs) {
      wharf_constant_map* m = make_map(src.base, src.dt, count);
      std::vector<double> t, swaps;
      uint64_t extra = 0, extra_mgi = 0;
      for (int r = 0; r <= reps; ++r) {
        wharf_ok(wharf_container_free_inactive(c), "free inactive");
        wharf_ok(wharf_runtime_synchronize(rt), "sync");
        wharf_memory_stats ms;
        std::memset(&ms, 0, sizeof ms);
        ms.struct_size = sizeof ms;
        wharf_ok(wharf_runtime_memory_stats(rt, &ms), "stats");
        uint64_t before = ms.current[WHARF_MEM_CONSTANTS];
        wharf_runtime_reset_peak(rt);
        uint64_t free0 = free_device_bytes();
        auto t0 = Clock::now();
        wharf_ok(wharf_container_update(c, m, nullptr), "update");
        double s = seconds_since(t0);
        uint64_t free1 = free_device_bytes();
        wharf_ok(wharf_runtime_memory_stats(rt, &ms), "stats");
        auto s0 = Clock::now();
        wharf_ok(wharf_container_swap(c), "swap");
        double sw = seconds_since(s0);
        if (r) {
          t.push_back(s);
          swaps.push_back(sw);
          extra = std::max(extra, ms.peak[WHARF_MEM_CONSTANTS] - before);
          extra_mgi = std::max(extra_mgi, free0 > free1 ? free0 - free1 : 0);
        }
      }
      wharf_constant_map_free(m);
      double s = median(t);
      rows.push_back({std::string("wharf update (swap ") + std::to_string(int(median(swaps) * 1e6 + 0.5)) + " us)",
                      src.name, percent, s, double(bytes) / s / 1e9, 100.0 * ceil_s / s, extra, extra_mgi});
    }
  }

  std::printf("\n%-36s %-9s %5s %9s %8s %8s %13s %13s\n", "path", "source", "upd%", "seconds", "GB/s",
              "%ceil", "extra_dev_MiB", "memgetinfo_MiB");
  for (const Row& r : rows)
    std::printf("%-36s %-9s %5d %9.4f %8.2f %7.1f%% %13.0f %13.0f\n", r.name.c_str(), r.source.c_str(), r.percent,
                r.seconds, r.gbps, r.pct_ceiling, double(r.extra_bytes) / (1 << 20),
                double(r.extra_memgetinfo) / (1 << 20));
  if (csv) {
    FILE* f = std::fopen(csv, "w");
    if (f) {
      std::fprintf(f, "path,source,update_percent,seconds,gbps,percent_of_ceiling,extra_device_bytes,extra_memgetinfo_bytes\n");
      for (const Row& r : rows)
        std::fprintf(f, "\"%s\",%s,%d,%.6f,%.3f,%.2f,%llu,%llu\n", r.name.c_str(), r.source.c_str(), r.percent, r.seconds,
                     r.gbps, r.pct_ceiling, (unsigned long long)r.extra_bytes, (unsigned long long)r.extra_memgetinfo);
      std::fclose(f);
    }
  }
  wharf_container_free(c);
  wharf_runtime_free(rt);
  CUDA_OK(cudaFree(dsrc));
  CUDA_OK(cudaFreeHost(pinned));
  return 0;
}

// SPDX-License-Identifier: Apache-2.0
// `wharf demo`: the main job on an embedded default model, no input needed.
//
// It writes a transformer-shaped model as safetensors, memory-maps it and loads it into a
// container. Then two serving threads read weights through leases while the main thread
// replaces a quarter of the weights from pageable CPU memory and swaps, several times. Every
// run checks that it saw exactly one generation; the demo prints the update time and
// bandwidth and the memory peak beside what a full-size inactive buffer would have cost.
// Runs on the CUDA backend when a GPU is usable and on the host backend otherwise.
#include <algorithm>
#include <atomic>
#include <chrono>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <map>
#include <mutex>
#include <string>
#include <thread>
#include <vector>

#include <unistd.h>

#include "cli.h"

namespace wharf_cli {
namespace {

using Clock = std::chrono::steady_clock;

struct DemoTensor {
  std::string name;
  std::vector<int64_t> shape;
  size_t numel() const {
    size_t n = 1;
    for (int64_t d : shape) n *= size_t(d);
    return n;
  }
  // A contiguous F32 view of `data` (pageable host memory) with this tensor's shape.
  wharf_tensor_view view(std::vector<float>& data) const {
    wharf_tensor_view v;
    std::memset(&v, 0, sizeof v);
    v.struct_size = sizeof v;
    v.data = data.data();
    v.dtype = WHARF_DTYPE_F32;
    v.device_type = WHARF_DEVICE_CPU;
    v.ndim = int32_t(shape.size());
    v.shape = shape.data();
    return v;
  }
};

// 8 layers, hidden 512, FFN 1536: about 84 MiB of F32 weights.
std::vector<DemoTensor> demo_model() {
  std::vector<DemoTensor> t;
  const int64_t hidden = 512, ffn = 1536, vocab = 2048;
  t.push_back({"embed.weight", {vocab, hidden}});
  for (int l = 0; l < 8; ++l) {
    std::string p = "layers." + std::to_string(l) + ".";
    t.push_back({p + "attn.qkv.weight", {3 * hidden, hidden}});
    t.push_back({p + "attn.out.weight", {hidden, hidden}});
    t.push_back({p + "mlp.up.weight", {ffn, hidden}});
    t.push_back({p + "mlp.down.weight", {hidden, ffn}});
    t.push_back({p + "norm.weight", {hidden}});
  }
  return t;
}

double ms_since(Clock::time_point t0) { return std::chrono::duration<double, std::milli>(Clock::now() - t0).count(); }

uint64_t constants_peak(wharf_runtime* rt, uint64_t* current) {
  wharf_memory_stats ms;
  std::memset(&ms, 0, sizeof ms);
  ms.struct_size = sizeof ms;
  wharf_status_free(wharf_runtime_get_memory_stats(rt, &ms));
  if (current) *current = ms.current[WHARF_MEM_CONSTANTS];
  return ms.peak[WHARF_MEM_CONSTANTS];
}

}  // namespace

int cmd_demo(const DemoOptions& o) {
  bool host_backend = o.host;
  const bool weights_only = o.weights_only;
  std::string model_dir = o.model_dir;
  const int num_readers = o.readers;
  // On a GPU machine the demo serves the committed AOTInductor model; elsewhere (or if the
  // model cannot load here) it runs the weights-only demo below.
  if (!host_backend && !weights_only) {
    if (model_dir.empty()) {
      char exe[4096];
      ssize_t n = readlink("/proc/self/exe", exe, sizeof exe - 1);
      std::string dir = ".";
      if (n > 0) {
        exe[n] = 0;
        dir = exe;
        dir = dir.substr(0, dir.rfind('/'));
      }
      model_dir = find_model_dir(dir.c_str());
    }
    if (!model_dir.empty()) {
      int rc = run_model_demo(model_dir);
      // No CUDA device: the model demo said why; the host backend, asked for by name, does
      // not say it a second time (backend AUTO would log the same reason as a warning).
      if (rc == 4)
        host_backend = true;
      else if (rc != 3)
        return rc;
    }
  }
  std::printf("== wharf %s demo: hot weight updates while serving ==\n\n", wharf_version());

  wharf_runtime_options opts;
  wharf_runtime_options_init(&opts);
  if (host_backend) opts.backend = WHARF_BACKEND_HOST;
  wharf_runtime* rt = nullptr;
  if (failed(wharf_runtime_create(&opts, &rt), "creating the runtime")) return 1;
  wharf_device_info info;
  std::memset(&info, 0, sizeof info);
  info.struct_size = sizeof info;
  if (failed(wharf_runtime_get_device_info(rt, &info), "device info")) return 1;
  std::printf("runtime:   %s backend on %s (%s total, %s free)\n", backend_str(info.backend), info.name,
              human_bytes(info.total_memory).c_str(), human_bytes(info.free_memory).c_str());

  // 1. The embedded default model, as a safetensors file. Every element of a tensor holds
  //    the tensor's "stamp", so a reader can tell which version it sees from any element.
  std::vector<DemoTensor> model = demo_model();
  uint64_t model_bytes = 0;
  {
    std::vector<std::vector<float>> storage;
    wharf_constant_map* src = nullptr;
    if (failed(wharf_constant_map_create(&src), "creating a map")) return 1;
    for (const DemoTensor& t : model) {
      storage.emplace_back(t.numel(), 0.0f);
      model_bytes += t.numel() * 4;
      wharf_tensor_view v{sizeof(wharf_tensor_view),
                          0,
                          storage.back().data(),
                          WHARF_DTYPE_F32,
                          WHARF_DEVICE_CPU,
                          0,
                          int32_t(t.shape.size()),
                          t.shape.data(),
                          nullptr};
      if (failed(wharf_constant_map_set(src, t.name.c_str(), &v), t.name.c_str())) return 1;
    }
    const char* tmpdir = std::getenv("TMPDIR");
    std::string path = std::string(tmpdir ? tmpdir : "/tmp") + "/wharf-demo-model.safetensors";
    // The file is needed only for this load: removed when the block ends, on every path.
    struct RemoveAtEnd {
      const std::string& path;
      ~RemoveAtEnd() { std::remove(path.c_str()); }
    } remove_at_end{path};
    if (failed(wharf_constant_map_save_safetensors(src, path.c_str()), "writing the demo model")) return 1;
    wharf_constant_map_free(src);
    std::printf("model:     %zu tensors, %s, written to %s\n", model.size(), human_bytes(model_bytes).c_str(),
                path.c_str());

    // 2. Load it: the map views the file's mapping; the container copies it to the device.
    wharf_constant_map* file = nullptr;
    if (failed(wharf_constant_map_load_safetensors(path.c_str(), &file), "loading the model")) return 1;
    auto t0 = Clock::now();
    wharf_container* probe = nullptr;
    if (failed(wharf_container_create_from_map(rt, file, nullptr, &probe), "loading the container")) return 1;
    double ms = ms_since(t0);
    std::printf("load:      container ready in %.1f ms (%.2f GB/s from the memory-mapped file)\n", ms,
                double(model_bytes) / ms / 1e6);
    wharf_container_free(probe);
    wharf_constant_map_free(file);
  }

  // The container the demo serves, loaded from pageable memory with stamp 0.
  std::vector<std::vector<float>> host(model.size());
  wharf_constant_map* full = nullptr;
  if (failed(wharf_constant_map_create(&full), "creating a map")) return 1;
  for (size_t i = 0; i < model.size(); ++i) {
    host[i].assign(model[i].numel(), 0.0f);
    const wharf_tensor_view v = model[i].view(host[i]);
    if (failed(wharf_constant_map_set(full, model[i].name.c_str(), &v), "building the map")) return 1;
  }
  wharf_container_options copts;
  wharf_container_options_init(&copts);
  copts.name = "demo";
  wharf_container* c = nullptr;
  if (failed(wharf_container_create_from_map(rt, full, &copts, &c), "creating the container")) return 1;
  wharf_constant_map_free(full);

  // expected[generation id][tensor] = stamp. Written before the swap that publishes the id.
  std::mutex mu;
  std::map<uint64_t, std::vector<float>> expected;
  expected[wharf_container_generation(c)] = std::vector<float>(model.size(), 0.0f);

  // 3. Serving: two threads run leases and check each tensor's first and last element.
  std::atomic<bool> stop{false};
  std::atomic<uint64_t> runs{0}, torn{0}, errors{0};
  auto serve = [&] {
    while (!stop) {
      wharf_run* run = nullptr;
      if (failed(wharf_run_begin(c, nullptr, nullptr, &run), "run_begin")) {
        ++errors;
        continue;
      }
      std::vector<float> want;
      {
        std::lock_guard<std::mutex> lock(mu);
        want = expected.at(wharf_run_generation(run));
      }
      for (size_t i = 0; i < model.size(); ++i) {
        float first = -1, last = -1;
        uint64_t bytes = model[i].numel() * 4;
        if (failed(wharf_run_read(run, model[i].name.c_str(), 0, &first, 4), "read") ||
            failed(wharf_run_read(run, model[i].name.c_str(), bytes - 4, &last, 4), "read")) {
          ++errors;
          break;
        }
        if (first != want[i] || last != want[i]) ++torn;
      }
      if (failed(wharf_run_end(run), "run_end")) ++errors;
      ++runs;
    }
  };
  std::vector<std::thread> serving;
  for (int i = 0; i < num_readers; ++i) serving.emplace_back(serve);
  // Stops and joins the readers on every path, early error returns included (a joinable
  // std::thread destroyed would terminate the process).
  struct Readers {
    std::atomic<bool>& stop;
    std::vector<std::thread>& threads;
    void finish() {
      stop = true;
      for (std::thread& t : threads)
        if (t.joinable()) t.join();
    }
    ~Readers() { finish(); }
  } readers{stop, serving};

  // 4. Updates: each round rewrites a quarter of the weights (every 4th tensor, rotating)
  //    from pageable memory, then swaps.
  const int rounds = 6;
  double update_ms_total = 0, swap_us_max = 0;
  uint64_t updated_bytes_total = 0, peak_extra = 0;
  double extra_ratio = 0;  // worst round: peak extra constants bytes / bytes that round updated
  uint64_t base_current = 0;
  constants_peak(rt, &base_current);
  std::vector<float> stamps(model.size(), 0.0f);
  for (int r = 1; r <= rounds; ++r) {
    wharf_constant_map* m = nullptr;
    if (failed(wharf_constant_map_create(&m), "creating a map")) return 1;
    uint64_t bytes = 0;
    std::vector<float> next = stamps;
    for (size_t i = size_t(r) % 4; i < model.size(); i += 4) {
      std::fill(host[i].begin(), host[i].end(), float(r));
      next[i] = float(r);
      bytes += host[i].size() * 4;
      const wharf_tensor_view v = model[i].view(host[i]);
      if (failed(wharf_constant_map_set(m, model[i].name.c_str(), &v), "building the update")) return 1;
    }
    wharf_runtime_reset_peak(rt);
    auto t0 = Clock::now();
    if (failed(wharf_container_update(c, m, nullptr), "updating")) return 1;
    update_ms_total += ms_since(t0);
    updated_bytes_total += bytes;
    uint64_t extra = constants_peak(rt, nullptr) - base_current;
    peak_extra = std::max(peak_extra, extra);
    extra_ratio = std::max(extra_ratio, double(extra) / double(bytes));
    {
      std::lock_guard<std::mutex> lock(mu);
      expected[wharf_container_generation(c) + 1] = next;
    }
    auto s0 = Clock::now();
    if (failed(wharf_container_swap(c), "swapping")) return 1;
    swap_us_max = std::max(swap_us_max, ms_since(s0) * 1000);
    stamps = next;
    wharf_constant_map_free(m);
    // The previous generation is no longer needed once its runs finish.
    if (failed(wharf_container_free_inactive(c), "freeing the inactive generation")) return 1;
    std::this_thread::sleep_for(std::chrono::milliseconds(20));
  }
  readers.finish();

  double gbps = double(updated_bytes_total) / update_ms_total / 1e6;
  std::printf("serving:   %d threads ran %llu leases during %d updates; torn reads: %llu, errors: %llu\n", num_readers,
              (unsigned long long)runs.load(), rounds, (unsigned long long)torn.load(),
              (unsigned long long)errors.load());
  std::printf("update:    %d x 25%% of the weights (%s each) from pageable memory: %.1f ms each, %.2f GB/s\n", rounds,
              human_bytes(updated_bytes_total / rounds).c_str(), update_ms_total / rounds, gbps);
  std::printf("swap:      %.1f us at most (O(1), no device synchronisation)\n", swap_us_max);
  std::printf(
      "memory:    peak extra device memory %s = %.2fx the bytes updated; a full-size inactive\n"
      "           buffer would cost %s (%.1fx more)\n",
      human_bytes(peak_extra).c_str(), extra_ratio, human_bytes(model_bytes).c_str(),
      double(model_bytes) / double(peak_extra));
  bool ok = torn == 0 && errors == 0 && (runs > 0 || num_readers == 0);
  std::printf("\n%s\n", ok ? "demo finished: every run saw exactly one generation"
                           : "demo FAILED: some runs saw a mix of generations or failed");
  wharf_container_free(c);
  wharf_runtime_free(rt);
  return ok ? 0 : 1;
}

}  // namespace wharf_cli

// `wharf demo`: runs on an embedded default model so it needs no input. It generates a small
// transformer-shaped safetensors file, memory-maps it through the API, and shows the runtime
// and its memory figures. Later issues grow it into the serving-loop demo.
#include <cmath>
#include <cstdlib>
#include <cstring>
#include <string>
#include <vector>

#include "cli.h"

namespace wharf_cli {
namespace {

struct DemoTensor {
  std::string name;
  std::vector<int64_t> shape;
};

// A 4-layer model with a 256-wide hidden size: ~4.6 MiB of F32 weights.
std::vector<DemoTensor> demo_model() {
  std::vector<DemoTensor> t;
  const int64_t hidden = 256, ffn = 1024, vocab = 512;
  t.push_back({"embed.weight", {vocab, hidden}});
  for (int l = 0; l < 4; ++l) {
    std::string p = "layers." + std::to_string(l) + ".";
    t.push_back({p + "attn.qkv.weight", {3 * hidden, hidden}});
    t.push_back({p + "attn.out.weight", {hidden, hidden}});
    t.push_back({p + "mlp.up.weight", {ffn, hidden}});
    t.push_back({p + "mlp.down.weight", {hidden, ffn}});
    t.push_back({p + "norm.weight", {hidden}});
  }
  return t;
}

}  // namespace

int cmd_demo(int argc, char** argv) {
  bool host = argc > 0 && !std::strcmp(argv[0], "--host");
  std::printf("== wharf %s demo ==\n\n", wharf_version());

  wharf_runtime_options opts;
  wharf_runtime_options_init(&opts);
  if (host) opts.backend = WHARF_BACKEND_HOST;
  wharf_runtime* rt = nullptr;
  if (failed(wharf_runtime_create(&opts, &rt), "creating the runtime")) return 1;
  wharf_device_info info;
  std::memset(&info, 0, sizeof info);
  info.struct_size = sizeof info;
  if (failed(wharf_runtime_device_info(rt, &info), "device info")) return 1;
  std::printf("runtime: %s backend on %s (%s total, %s free)\n", backend_str(info.backend), info.name,
              human_bytes(info.total_memory).c_str(), human_bytes(info.free_memory).c_str());

  // The embedded default: deterministic weights written as a safetensors file.
  std::vector<DemoTensor> model = demo_model();
  std::vector<std::vector<float>> storage;
  wharf_constant_map* src = nullptr;
  if (failed(wharf_constant_map_create(&src), "creating a map")) return 1;
  for (size_t i = 0; i < model.size(); ++i) {
    size_t n = 1;
    for (int64_t d : model[i].shape) n *= size_t(d);
    storage.emplace_back(n);
    for (size_t k = 0; k < n; ++k) storage.back()[k] = std::sin(float(i * 131 + k) * 0.001f);
    wharf_tensor_view v{storage.back().data(), WHARF_DTYPE_F32, WHARF_DEVICE_CPU, 0,
                        int32_t(model[i].shape.size()), model[i].shape.data(), nullptr};
    if (failed(wharf_constant_map_set(src, model[i].name.c_str(), &v), model[i].name.c_str())) return 1;
  }
  const char* tmpdir = std::getenv("TMPDIR");
  std::string path = std::string(tmpdir ? tmpdir : "/tmp") + "/wharf-demo-model.safetensors";
  if (failed(wharf_constant_map_save_safetensors(src, path.c_str()), "writing the demo model")) return 1;
  wharf_constant_map_free(src);
  std::printf("model:   wrote %s\n\n", path.c_str());

  char* inspect_argv[] = {const_cast<char*>(path.c_str())};
  if (cmd_inspect(1, inspect_argv) != 0) return 1;

  // Loading maps the file; views point into the mapping, so nothing is copied yet.
  wharf_constant_map* map = nullptr;
  if (failed(wharf_constant_map_load_safetensors(path.c_str(), &map), "loading the demo model")) return 1;
  wharf_tensor_view v;
  if (failed(wharf_constant_map_find(map, "layers.0.norm.weight", &v), "finding a tensor")) return 1;
  std::printf("\nloaded: layers.0.norm.weight[0..3] = %.4f %.4f %.4f (read through the mapping)\n",
              static_cast<float*>(v.data)[0], static_cast<float*>(v.data)[1], static_cast<float*>(v.data)[2]);

  wharf_memory_stats ms;
  std::memset(&ms, 0, sizeof ms);
  ms.struct_size = sizeof ms;
  if (failed(wharf_runtime_memory_stats(rt, &ms), "memory stats")) return 1;
  std::printf("memory:  device %s (peak %s), pinned host %s (peak %s)\n",
              human_bytes(ms.device_current).c_str(), human_bytes(ms.device_peak).c_str(),
              human_bytes(ms.pinned_host_current).c_str(), human_bytes(ms.pinned_host_peak).c_str());
  const char* tags[] = {"constants", "state", "staging", "workspace", "offload", "graph"};
  for (int t = 0; t < 6; ++t)
    std::printf("         %-10s current %-10s peak %s\n", tags[t], human_bytes(ms.current[t]).c_str(),
                human_bytes(ms.peak[t]).c_str());
  wharf_constant_map_free(map);
  wharf_runtime_free(rt);
  std::printf("\ndemo finished\n");
  return 0;
}

}  // namespace wharf_cli

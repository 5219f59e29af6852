// wharf: the command-line program. `wharf info`, `wharf inspect FILE`, `wharf demo`.
#include <cstring>

#include "cli.h"

namespace wharf_cli {

bool failed(wharf_status* st, const char* what) {
  if (!st) return false;
  std::fprintf(stderr, "wharf: %s: %s: %s\n", what, wharf_code_name(wharf_status_code(st)),
               wharf_status_message(st));
  wharf_status_free(st);
  return true;
}

std::string human_bytes(uint64_t b) {
  const char* units[] = {"B", "KiB", "MiB", "GiB", "TiB"};
  double v = double(b);
  int u = 0;
  while (v >= 1024 && u < 4) {
    v /= 1024;
    ++u;
  }
  char buf[32];
  std::snprintf(buf, sizeof buf, u ? "%.2f %s" : "%.0f %s", v, units[u]);
  return buf;
}

std::string shape_str(const wharf_tensor_view& v) {
  std::string s = "[";
  for (int i = 0; i < v.ndim; ++i) s += (i ? ", " : "") + std::to_string(v.shape[i]);
  return s + "]";
}

const char* backend_str(wharf_backend b) {
  switch (b) {
    case WHARF_BACKEND_CUDA: return "cuda";
    case WHARF_BACKEND_HOST: return "host";
    default: return "auto";
  }
}

int cmd_info(int, char**) {
  std::printf("wharf %s (ABI %u)\n", wharf_version(), wharf_abi_version());
  wharf_runtime* rt = nullptr;
  if (failed(wharf_runtime_create(nullptr, &rt), "creating the runtime")) return 1;
  wharf_device_info info;
  std::memset(&info, 0, sizeof info);
  info.struct_size = sizeof info;
  if (failed(wharf_runtime_device_info(rt, &info), "reading device info")) {
    wharf_runtime_free(rt);
    return 1;
  }
  std::printf("backend:       %s\n", backend_str(info.backend));
  std::printf("device:        %s (index %d)\n", info.name, info.device_index);
  if (info.compute_major) std::printf("compute:       sm_%d%d\n", info.compute_major, info.compute_minor);
  std::printf("memory:        %s total, %s free\n", human_bytes(info.total_memory).c_str(),
              human_bytes(info.free_memory).c_str());
  wharf_runtime_free(rt);
  return 0;
}

int cmd_inspect(int argc, char** argv) {
  if (argc < 1) {
    std::fprintf(stderr, "usage: wharf inspect FILE.safetensors\n");
    return 2;
  }
  wharf_constant_map* map = nullptr;
  if (failed(wharf_constant_map_load_safetensors(argv[0], &map), argv[0])) return 1;
  size_t n = wharf_constant_map_size(map);
  uint64_t total = 0;
  std::printf("%-48s %-8s %-20s %12s\n", "tensor", "dtype", "shape", "bytes");
  for (size_t i = 0; i < n; ++i) {
    const char* name = nullptr;
    wharf_tensor_view v;
    if (failed(wharf_constant_map_entry(map, i, &name, &v), "reading an entry")) break;
    uint64_t bytes = wharf_dtype_size(v.dtype);
    for (int d = 0; d < v.ndim; ++d) bytes *= uint64_t(v.shape[d]);
    total += bytes;
    std::printf("%-48s %-8s %-20s %12llu\n", name, wharf_dtype_name(v.dtype), shape_str(v).c_str(),
                static_cast<unsigned long long>(bytes));
  }
  std::printf("%zu tensors, %s\n", n, human_bytes(total).c_str());
  for (size_t i = 0; i < wharf_constant_map_metadata_size(map); ++i) {
    const char *k, *val;
    if (!failed(wharf_constant_map_metadata_entry(map, i, &k, &val), "reading metadata"))
      std::printf("metadata: %s = %s\n", k, val);
  }
  wharf_constant_map_free(map);
  return 0;
}

}  // namespace wharf_cli

int main(int argc, char** argv) {
  using namespace wharf_cli;
  if (argc < 2 || !std::strcmp(argv[1], "-h") || !std::strcmp(argv[1], "--help")) {
    std::printf(
        "usage: wharf COMMAND [ARGS]\n"
        "  info                      version, backend found, device name and memory\n"
        "  inspect FILE.safetensors  table of tensors, dtypes, shapes and bytes\n"
        "  demo [--host] [--weights-only] [--model DIR] [--readers N]\n"
        "                            the demo: on a GPU, the committed AOTInductor model serving two\n"
        "                            conversations through a hot update; else weights updated while\n"
        "                            N threads (default 2) read them\n");
    return argc < 2 ? 2 : 0;
  }
  if (!std::strcmp(argv[1], "info")) return cmd_info(argc - 2, argv + 2);
  if (!std::strcmp(argv[1], "inspect")) return cmd_inspect(argc - 2, argv + 2);
  if (!std::strcmp(argv[1], "demo")) return cmd_demo(argc - 2, argv + 2);
  std::fprintf(stderr, "wharf: unknown command '%s' (try --help)\n", argv[1]);
  return 2;
}

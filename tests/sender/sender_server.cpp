// SPDX-License-Identifier: Apache-2.0
// A Wharf server for the PyTorch sender tests (tools/sender, tests/gpu/two_process_sender_test.sh,
// tools/sender/test_wharf_sender.py): one rank (not 0) of a replica group whose rank 0 is a
// trainer pushing with wharf_sender.py. It declares a two-layer MLP (fc1 16 -> 8, ReLU, fc2
// 8 -> 4, float32, no weights at first), joins the group, and for each of --rounds updates
// receives the weights (wharf_replica_group_update_ranks with map NULL), then serves a fixed
// input through a run (the lease's constants, read back to the host) and prints one line:
//   {"round": k, "generation": g, "y": [ ... 2 x 4 outputs ... ]}
// or, for an update the group refused (nothing changed; the round is not counted),
//   {"round": k, "error": "INVALID_ARGUMENT"} (wharf_code_name)
// The trainer compares the lines with PyTorch's outputs for the weights it pushed.
//
// Usage: wharf_sender_server --id HEX512 --rank R --size N [--device D | --host] [--rounds K]
//        [--timeout-ms T]
// Exit 0 when every round was received and served; 1 with the error on stderr otherwise.
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <string>
#include <vector>

#define WHARF_EXPERIMENTAL
#include "wharf/wharf.h"

#if defined(WHARF_SENDER_SERVER_CUDA)
#include <cuda_runtime_api.h>
#endif

namespace {

constexpr int kIn = 16, kHidden = 8, kOut = 4, kBatch = 2;

// The input every round serves; the trainer builds the same one (test_wharf_sender.py,
// two_process_sender_trainer.py): x[b][i] = sin(0.1 * (b * 16 + i)).
float input(int b, int i) { return std::sin(0.1f * float(b * kIn + i)); }

int fail(const char* what, wharf_status* st) {
  std::fprintf(stderr, "wharf_sender_server: %s: %s (%s)\n", what, wharf_status_message(st),
               wharf_code_name(wharf_status_code(st)));
  wharf_status_free(st);
  return 1;
}

bool parse_id(const std::string& hex, wharf_replica_group_id* id) {
  if (hex.size() != 2 * sizeof id->internal) return false;
  for (size_t k = 0; k < sizeof id->internal; ++k) {
    unsigned v = 0;
    if (std::sscanf(hex.c_str() + 2 * k, "%2x", &v) != 1) return false;
    id->internal[k] = static_cast<unsigned char>(v);
  }
  return true;
}

// Constant `fqn` of `run`, read to the host (from the device on CUDA).
bool read_constant(wharf_run* run, const char* fqn, size_t n, bool cuda, std::vector<float>* out) {
  wharf_tensor_view v{};
  if (wharf_status* st = wharf_run_get_tensor(run, fqn, &v)) {
    fail(fqn, st);
    return false;
  }
  out->resize(n);
  if (!cuda) {
    std::memcpy(out->data(), v.data, n * sizeof(float));
    return true;
  }
#if defined(WHARF_SENDER_SERVER_CUDA)
  cudaStream_t stream = static_cast<cudaStream_t>(wharf_run_stream(run));
  if (cudaMemcpyAsync(out->data(), v.data, n * sizeof(float), cudaMemcpyDeviceToHost, stream) != cudaSuccess ||
      cudaStreamSynchronize(stream) != cudaSuccess) {
    std::fprintf(stderr, "wharf_sender_server: reading %s from the device failed\n", fqn);
    return false;
  }
  return true;
#else
  std::fprintf(stderr, "wharf_sender_server: built without CUDA\n");
  return false;
#endif
}

}  // namespace

int main(int argc, char** argv) {
  std::string id_hex;
  uint32_t rank = 1, size = 2, rounds = 2, timeout_ms = 60000;
  int device = -1;
  bool host = false;
  for (int i = 1; i < argc; ++i) {
    const std::string a = argv[i];
    auto next = [&]() -> std::string { return i + 1 < argc ? argv[++i] : ""; };
    if (a == "--id")
      id_hex = next();
    else if (a == "--rank")
      rank = uint32_t(std::strtoul(next().c_str(), nullptr, 10));
    else if (a == "--size")
      size = uint32_t(std::strtoul(next().c_str(), nullptr, 10));
    else if (a == "--rounds")
      rounds = uint32_t(std::strtoul(next().c_str(), nullptr, 10));
    else if (a == "--timeout-ms")
      timeout_ms = uint32_t(std::strtoul(next().c_str(), nullptr, 10));
    else if (a == "--device")
      device = std::atoi(next().c_str());
    else if (a == "--host")
      host = true;
    else {
      std::fprintf(stderr, "wharf_sender_server: unknown argument %s\n", a.c_str());
      return 2;
    }
  }
  wharf_replica_group_id id;
  if (!parse_id(id_hex, &id)) {
    std::fprintf(stderr, "wharf_sender_server: --id takes the group id as 512 hex digits\n");
    return 2;
  }

  wharf_runtime_options ro;
  wharf_runtime_options_init(&ro);
  ro.backend = host ? WHARF_BACKEND_HOST : WHARF_BACKEND_CUDA;
  if (device >= 0) ro.device_index = device;
  wharf_runtime* rt = nullptr;
  if (wharf_status* st = wharf_runtime_create(&ro, &rt)) return fail("wharf_runtime_create", st);

  static const int64_t w1[] = {kHidden, kIn}, b1[] = {kHidden}, w2[] = {kOut, kHidden}, b2[] = {kOut};
  const char* names[] = {"fc1.weight", "fc1.bias", "fc2.weight", "fc2.bias"};
  const int64_t* shapes[] = {w1, b1, w2, b2};
  const int32_t ndims[] = {2, 1, 2, 1};
  std::vector<wharf_constant_decl> decls(4);
  for (size_t k = 0; k < 4; ++k) {
    std::memset(&decls[k], 0, sizeof decls[k]);
    decls[k].struct_size = sizeof decls[k];
    decls[k].fqn = names[k];
    decls[k].dtype = WHARF_DTYPE_F32;
    decls[k].ndim = ndims[k];
    decls[k].shape = shapes[k];
    decls[k].placement = WHARF_PLACEMENT_DEVICE;
  }
  wharf_container_options co;
  wharf_container_options_init(&co);
  co.name = "mlp";
  co.constants = decls.data();
  co.num_constants = decls.size();
  wharf_container* c = nullptr;
  if (wharf_status* st = wharf_container_create(rt, &co, &c)) return fail("wharf_container_create", st);

  wharf_replica_group_rank_options go;
  wharf_replica_group_rank_options_init(&go);
  go.timeout_ms = timeout_ms;
  wharf_replica_group* g = nullptr;
  if (wharf_status* st = wharf_replica_group_create_rank(c, &id, rank, size, &go, &g))
    return fail("wharf_replica_group_create_rank", st);

  for (uint32_t round = 1; round <= rounds;) {
    if (wharf_status* st = wharf_replica_group_update_ranks(g, nullptr, nullptr)) {
      // An update the group refused changed nothing and the group stays usable: say so and
      // wait for the next push. A dead or stopped peer aborted the group: stop.
      const wharf_code code = wharf_status_code(st);
      if (code == WHARF_IO_ERROR || code == WHARF_FAILED_PRECONDITION || code == WHARF_INTERNAL)
        return fail("wharf_replica_group_update_ranks", st);
      std::fprintf(stderr, "wharf_sender_server: update refused: %s\n", wharf_status_message(st));
      std::printf("{\"round\": %u, \"error\": \"%s\"}\n", round, wharf_code_name(code));
      std::fflush(stdout);
      wharf_status_free(st);
      continue;
    }
    // Serve: one run pins the generation the update published; its constants are the
    // weights the trainer pushed.
    wharf_run* run = nullptr;
    if (wharf_status* st = wharf_run_begin(c, nullptr, nullptr, &run)) return fail("wharf_run_begin", st);
    std::vector<float> W1, B1, W2, B2;
    const bool ok = read_constant(run, "fc1.weight", kHidden * kIn, !host, &W1) &&
                    read_constant(run, "fc1.bias", kHidden, !host, &B1) &&
                    read_constant(run, "fc2.weight", kOut * kHidden, !host, &W2) &&
                    read_constant(run, "fc2.bias", kOut, !host, &B2);
    const uint64_t generation = wharf_run_generation(run);
    if (wharf_status* st = wharf_run_end(run)) return fail("wharf_run_end", st);
    if (!ok) return 1;
    std::string line =
        "{\"round\": " + std::to_string(round) + ", \"generation\": " + std::to_string(generation) + ", \"y\": [";
    for (int b = 0; b < kBatch; ++b)
      for (int o = 0; o < kOut; ++o) {
        float y = B2[size_t(o)];
        for (int h = 0; h < kHidden; ++h) {
          float a = B1[size_t(h)];
          for (int i = 0; i < kIn; ++i) a += W1[size_t(h * kIn + i)] * input(b, i);
          y += W2[size_t(o * kHidden + h)] * (a > 0 ? a : 0);
        }
        char buf[32];
        std::snprintf(buf, sizeof buf, "%.9g", double(y));
        line += (b || o ? ", " : "") + std::string(buf);
      }
    line += "]}";
    std::printf("%s\n", line.c_str());
    std::fflush(stdout);
    ++round;
  }
  wharf_replica_group_free(g);
  wharf_container_free(c);
  wharf_runtime_free(rt);
  return 0;
}

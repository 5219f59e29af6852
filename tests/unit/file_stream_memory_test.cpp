// SPDX-License-Identifier: Apache-2.0
// wharf_container_update_from_file streams a file through the staging ring: it reads the
// tensors with pread straight into the pinned chunks and makes no host copy of the file.
// Proved under an address-space budget: in a child process whose RLIMIT_DATA (private
// writable memory: heap, anonymous mappings, thread stacks) leaves 48 MiB of room, an in-place update from a 256 MiB
// file succeeds and writes every byte, while a 200 MiB allocation in the same process
// fails (so the limit is real, and a copy of the file could not have been made).
#include <sys/resource.h>
#include <sys/wait.h>
#include <unistd.h>

#include <gtest/gtest.h>

#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <fstream>
#include <string>
#include <vector>

#include "wharf/wharf.h"

#if defined(__SANITIZE_ADDRESS__) || defined(__SANITIZE_THREAD__)
#define WHARF_TEST_UNDER_SANITIZER 1
#elif defined(__has_feature)
#if __has_feature(address_sanitizer) || __has_feature(thread_sanitizer)
#define WHARF_TEST_UNDER_SANITIZER 1
#endif
#endif

namespace {

constexpr int kTensors = 8;
constexpr int64_t kFloats = 8 << 20;  // 32 MiB of F32 per tensor, 256 MiB in all
constexpr uint64_t kBytes = uint64_t(kFloats) * 4;

std::string le64(uint64_t n) {
  std::string s(8, '\0');
  for (int i = 0; i < 8; ++i) s[size_t(i)] = char((n >> (8 * i)) & 0xFF);
  return s;
}

// Writes the file in the reference layout: t0..t7, each F32 [kFloats], tensor k filled with
// the value k + base.
void write_file(const std::string& path, float base) {
  std::string h = "{";
  for (int k = 0; k < kTensors; ++k) {
    if (k) h += ",";
    h += "\"t" + std::to_string(k) + "\":{\"dtype\":\"F32\",\"shape\":[" + std::to_string(kFloats) +
         "],\"data_offsets\":[" + std::to_string(uint64_t(k) * kBytes) + "," +
         std::to_string(uint64_t(k + 1) * kBytes) + "]}";
  }
  h += "}";
  h.resize((h.size() + 7) / 8 * 8, ' ');
  std::ofstream f(path, std::ios::binary | std::ios::trunc);
  f << le64(h.size()) << h;
  std::vector<float> chunk(kFloats);
  for (int k = 0; k < kTensors; ++k) {
    std::fill(chunk.begin(), chunk.end(), base + float(k));
    f.write(reinterpret_cast<const char*>(chunk.data()), std::streamsize(kBytes));
  }
  ASSERT_TRUE(f.good());
}

// Private writable memory the process holds now (what RLIMIT_DATA counts), in bytes.
uint64_t vm_data_bytes() {
  std::ifstream s("/proc/self/status");
  std::string line;
  while (std::getline(s, line))
    if (line.rfind("VmData:", 0) == 0) return std::strtoull(line.c_str() + 7, nullptr, 10) * 1024;
  return 0;
}

bool ok(wharf_status* st, const char* what) {
  if (!st) return true;
  std::fprintf(stderr, "%s: %s\n", what, wharf_status_message(st));
  wharf_status_free(st);
  return false;
}

// The child: load from the file, then update in place from the second file under the budget.
int child(const std::string& first, const std::string& second) {
  wharf_runtime_options o;
  wharf_runtime_options_init(&o);
  o.backend = WHARF_BACKEND_HOST;
  wharf_runtime* rt = nullptr;
  if (!ok(wharf_runtime_create(&o, &rt), "runtime")) return 10;
  const int64_t shape[1] = {kFloats};
  std::vector<std::string> names;
  for (int k = 0; k < kTensors; ++k) names.push_back("t" + std::to_string(k));
  std::vector<wharf_constant_decl> decls(kTensors);
  for (int k = 0; k < kTensors; ++k)
    decls[size_t(k)] = {
        sizeof(wharf_constant_decl), names[size_t(k)].c_str(), WHARF_DTYPE_F32, 1, shape, WHARF_PLACEMENT_DEVICE, 0};
  wharf_container_options co;
  wharf_container_options_init(&co);
  co.constants = decls.data();
  co.num_constants = kTensors;
  wharf_container* c = nullptr;
  if (!ok(wharf_container_create(rt, &co, &c), "container")) return 11;
  // The first load allocates the constants (256 MiB) and the staging ring.
  if (!ok(wharf_container_update_from_file(c, first.c_str(), nullptr), "first load")) return 12;
  if (!ok(wharf_container_swap(c), "swap")) return 13;

  // From here on, 48 MiB of room for new private memory.
  const uint64_t budget = vm_data_bytes() + (48ull << 20);
  struct rlimit rl;
  rl.rlim_cur = rl.rlim_max = budget;
  if (setrlimit(RLIMIT_DATA, &rl) != 0) return 14;

  wharf_update_options uo;
  wharf_update_options_init(&uo);
  uo.target = WHARF_TARGET_ACTIVE_IN_PLACE;
  if (!ok(wharf_container_update_from_file(c, second.c_str(), &uo), "in-place update from the file under the budget"))
    return 20;
  // The limit is real: a copy of a large part of the file cannot be made.
  void* big = std::malloc(200u << 20);
  if (big) {
    std::free(big);
    return 21;
  }
  // Every tensor holds the second file's values.
  wharf_run* run = nullptr;
  if (!ok(wharf_run_begin(c, nullptr, nullptr, &run), "run")) return 22;
  for (int k = 0; k < kTensors; ++k) {
    float head = 0, tail = 0;
    if (!ok(wharf_run_read(run, names[size_t(k)].c_str(), 0, &head, 4), "read") ||
        !ok(wharf_run_read(run, names[size_t(k)].c_str(), kBytes - 4, &tail, 4), "read"))
      return 23;
    if (head != 100.0f + float(k) || tail != 100.0f + float(k)) return 24;
  }
  if (!ok(wharf_run_end(run), "run end")) return 25;
  wharf_container_free(c);
  wharf_runtime_free(rt);
  return 0;
}

TEST(FileStreaming, AnUpdateFromAFileMakesNoHostCopyOfIt) {
#ifdef WHARF_TEST_UNDER_SANITIZER
  GTEST_SKIP() << "sanitizer runtimes reserve address space of their own; RLIMIT_DATA would stop them, not Wharf";
#endif
  const std::string dir = ::testing::TempDir();
  const std::string first = dir + "wharf_stream_a_" + std::to_string(::getpid()) + ".safetensors";
  const std::string second = dir + "wharf_stream_b_" + std::to_string(::getpid()) + ".safetensors";
  write_file(first, 0.0f);
  write_file(second, 100.0f);
  std::fflush(nullptr);
  const pid_t pid = ::fork();
  ASSERT_GE(pid, 0);
  if (pid == 0) ::_exit(child(first, second));
  int status = 0;
  ASSERT_EQ(::waitpid(pid, &status, 0), pid);
  ::unlink(first.c_str());
  ::unlink(second.c_str());
  ASSERT_TRUE(WIFEXITED(status)) << "the child died (signal " << (WIFSIGNALED(status) ? WTERMSIG(status) : 0) << ")";
  const int code = WEXITSTATUS(status);
  EXPECT_NE(code, 20) << "the update needed more than 48 MiB of new host memory for a 256 MiB file";
  EXPECT_NE(code, 21) << "the limit did not hold: a 200 MiB allocation succeeded under it";
  EXPECT_EQ(code, 0) << "child step " << code << " failed (its stderr says why)";
}

}  // namespace

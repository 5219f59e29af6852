/* SPDX-License-Identifier: Apache-2.0 */
// Where the C++ tests find what they read besides their own temporary files, in the build
// tree and in the GPU bundle (scripts/gpu-bundle.sh) alike:
//  - data (tests/data: models, safetensors files, PyTorch's references): $WHARF_TEST_DATA
//    when set (the bundle's gpu-run.sh sets it to the bundle, which carries that layout),
//    else the source tree's tests/data, compiled in;
//  - libraries built for the tests (tests/fakes, tests/unit-libs): beside the test binary;
//  - Wharf's AOTInductor shim library: $WHARF_AOTI_SHIM, beside the binary, or the build folder.
#pragma once

#include <dlfcn.h>
#include <unistd.h>

#include <cstdlib>
#include <string>
#include <vector>

namespace wharf_test {

inline std::string test_data_dir() {
  const char* e = std::getenv("WHARF_TEST_DATA");
  if (e && *e) return e;
  return WHARF_TEST_DATA_DIR;
}

// A file or folder of tests/data, by its path relative to tests/data.
inline std::string test_data(const std::string& relative) { return test_data_dir() + "/" + relative; }

// The folder of the running test binary.
inline std::string binary_dir() {
  char exe[4096];
  const ssize_t n = ::readlink("/proc/self/exe", exe, sizeof exe - 1);
  if (n <= 0) return ".";
  const std::string path(exe, size_t(n));
  return path.substr(0, path.rfind('/'));
}

// Wharf's AOTInductor shim library, opened RTLD_NOW | RTLD_LOCAL: $WHARF_AOTI_SHIM when set,
// else beside the test binary (the GPU bundle), else in the build folder above it. Null when
// none opens, with what each try answered appended to *why (left alone on success: callers
// read a non-empty *why as unusable).
inline void* open_aoti_shim(std::string* why) {
  std::vector<std::string> paths;
  if (const char* env = std::getenv("WHARF_AOTI_SHIM"))
    if (*env) paths.push_back(env);
  paths.push_back(binary_dir() + "/libwharf_aoti_shim.so");
  paths.push_back(binary_dir() + "/../libwharf_aoti_shim.so");
  std::string tried;
  for (const std::string& p : paths) {
    if (void* lib = dlopen(p.c_str(), RTLD_NOW | RTLD_LOCAL)) return lib;
    const char* e = dlerror();
    tried += p + ": " + (e ? e : "?") + "; ";
  }
  *why += tried;
  return nullptr;
}

}  // namespace wharf_test

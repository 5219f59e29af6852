// SPDX-License-Identifier: Apache-2.0
// wharf_model_load's refusals, through the C API on a CUDA runtime: a compiled model that
// imports a shim function Wharf lacks (UNSUPPORTED, naming the function), a library that is
// not an AOTInductor model (INVALID_ARGUMENT, naming the missing entry point), a `.so` or
// `.pt2` path that does not exist (NOT_FOUND), a FIFO (IO_ERROR, at once). Each leaves
// nothing behind: no model, no device or pinned memory, and the runtime loads the real model
// afterwards. The broken libraries are built from
// tests/gpu/fakes/ into fakes/ beside the test binary (in the GPU bundle too).
#include <gtest/gtest.h>

#include <cuda_runtime_api.h>
#include <sys/stat.h>
#include <unistd.h>

#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <future>
#include <string>
#include <thread>

#define WHARF_EXPERIMENTAL
#include "common/test_paths.h"
#include "common/test_support.h"
#include "wharf/wharf.h"

namespace {

using wharf_test::St;

// Built into tests/fakes/ beside this binary (the GPU bundle carries them the same way).
std::string fakes_dir() { return wharf_test::binary_dir() + "/fakes"; }

struct Memory {
  uint64_t device = 0, pinned = 0;
};

Memory memory(wharf_runtime* rt) {
  wharf_memory_stats ms;
  std::memset(&ms, 0, sizeof ms);
  ms.struct_size = sizeof ms;
  St st(wharf_runtime_get_memory_stats(rt, &ms));
  EXPECT_EQ(st.code(), WHARF_OK) << st.msg();
  return {ms.device_current, ms.pinned_host_current};
}

class ModelErrorsGpu : public ::testing::Test {
 protected:
  void SetUp() override {
    int n = 0;
    if (cudaGetDeviceCount(&n) != cudaSuccess || n == 0) GTEST_SKIP() << "no CUDA device";
    wharf_runtime_options ro;
    wharf_runtime_options_init(&ro);
    ro.backend = WHARF_BACKEND_CUDA;
    St st(wharf_runtime_create(&ro, &rt_));
    ASSERT_EQ(st.code(), WHARF_OK) << st.msg();
    St ms(wharf_constant_map_create(&weights_));
    ASSERT_EQ(ms.code(), WHARF_OK) << ms.msg();
    wharf_model_options_init(&opts_);
    opts_.shim_path = std::getenv("WHARF_AOTI_SHIM");
  }
  void TearDown() override {
    wharf_constant_map_free(weights_);
    wharf_runtime_free(rt_);
  }

  // Loads `path`, expects `code` and every fragment in the message, and that nothing was
  // created or allocated.
  void expect_refused(const std::string& path, wharf_code code, std::initializer_list<const char*> fragments) {
    const Memory before = memory(rt_);
    wharf_model* m = reinterpret_cast<wharf_model*>(this);  // must be reset to NULL
    St st(wharf_model_load(rt_, path.c_str(), weights_, &opts_, &m));
    if (st.code() == WHARF_UNSUPPORTED && st.msg().find("libwharf_aoti_shim") != std::string::npos)
      GTEST_SKIP() << "the shim library is not here: " << st.msg();
    EXPECT_EQ(st.code(), code) << st.msg();
    for (const char* f : fragments)
      EXPECT_NE(st.msg().find(f), std::string::npos) << "want '" << f << "' in: " << st.msg();
    EXPECT_EQ(m, nullptr);
    const Memory after = memory(rt_);
    EXPECT_EQ(after.device, before.device);
    EXPECT_EQ(after.pinned, before.pinned);
  }

  wharf_runtime* rt_ = nullptr;
  wharf_constant_map* weights_ = nullptr;
  wharf_model_options opts_;
};

TEST_F(ModelErrorsGpu, AMissingShimFunctionIsNamed) {
  expect_refused(
      fakes_dir() + "/missing_shim_model.so", WHARF_UNSUPPORTED,
      {"missing_shim_model.so", "needs a shim function Wharf does not provide", "aoti_torch_wharf_test_missing"});
}

TEST_F(ModelErrorsGpu, ALibraryThatIsNotAModelIsRefused) {
  expect_refused(fakes_dir() + "/not_a_model.so", WHARF_INVALID_ARGUMENT,
                 {"not_a_model.so", "is not an AOTInductor model", "AOTInductorModelContainerCreateWithDevice"});
}

TEST_F(ModelErrorsGpu, AMissingFileIsRefused) {
  expect_refused(fakes_dir() + "/no_such_model.so", WHARF_NOT_FOUND, {"no_such_model.so", "no file"});
  expect_refused(fakes_dir() + "/no_such_package.pt2", WHARF_NOT_FOUND, {"no_such_package.pt2"});
}

// Issue 21: a model path that is a FIFO blocked forever in dlopen (waiting for a writer). A
// watchdog ends the process if the load does not return: a regression fails, not hangs (the
// stuck dlopen would hold the dynamic loader's lock, so nothing after it could run anyway).
TEST_F(ModelErrorsGpu, AFifoIsRefusedWithoutBlocking) {
  const std::string fifo = ::testing::TempDir() + "wharf_fifo_model_" + std::to_string(::getpid()) + ".so";
  ASSERT_EQ(::mkfifo(fifo.c_str(), 0600), 0);
  struct Watchdog {
    std::promise<void> done;
    std::thread t;
    std::string path;
    explicit Watchdog(std::string p) : path(std::move(p)) {
      t = std::thread([this, f = done.get_future()] {
        if (f.wait_for(std::chrono::seconds(20)) == std::future_status::timeout) {
          std::fprintf(stderr, "FAILED: wharf_model_load(%s) blocked for 20 s\n", path.c_str());
          std::_Exit(1);
        }
      });
    }
    ~Watchdog() {
      done.set_value();
      t.join();
      ::unlink(path.c_str());
    }
  } watchdog(fifo);
  expect_refused(fifo, WHARF_IO_ERROR, {"not a regular file (a FIFO)", "wharf_fifo_model_"});
}

}  // namespace

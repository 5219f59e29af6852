// SPDX-License-Identifier: Apache-2.0
// Probe (session 9): host copy rates vs pinning user memory in place.
#include <cuda_runtime_api.h>
#include <fcntl.h>
#include <sys/mman.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <string>
#include <thread>
#include <vector>

using clk = std::chrono::steady_clock;
static double now_ms() { return std::chrono::duration<double, std::milli>(clk::now().time_since_epoch()).count(); }
#define CK(x)                                                                       \
  do {                                                                              \
    cudaError_t e_ = (x);                                                           \
    if (e_ != cudaSuccess) {                                                        \
      std::printf("FAIL %s: %s (line %d)\n", #x, cudaGetErrorString(e_), __LINE__); \
      std::exit(1);                                                                 \
    }                                                                               \
  } while (0)

constexpr size_t MiB = 1 << 20, GiB = 1ull << 30;

static char* anon(size_t n, bool huge) {
  void* p = mmap(nullptr, n, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
  if (p == MAP_FAILED) std::exit(2);
  if (huge) madvise(p, n, MADV_HUGEPAGE);
  for (size_t i = 0; i < n; i += 4096) static_cast<char*>(p)[i] = char(i >> 12);
  return static_cast<char*>(p);
}

static double median(std::vector<double> v) {
  std::sort(v.begin(), v.end());
  return v[v.size() / 2];
}

// T threads copy [src, src+n) in 4 MiB pieces into their own ring part (ring/T each, rotating).
static double copy_rate(char* src, size_t n, char* ring, size_t ring_bytes, int T) {
  std::atomic<size_t> next{0};
  size_t piece = 4 * MiB;
  size_t per = ring_bytes / T / piece;
  if (per == 0) per = 1;
  double t0 = now_ms();
  std::vector<std::thread> th;
  for (int t = 0; t < T; ++t)
    th.emplace_back([&, t] {
      size_t k = 0;
      for (;;) {
        size_t off = next.fetch_add(piece);
        if (off >= n) break;
        char* dst = ring + (size_t(t) * per + (k++ % per)) * piece;
        std::memcpy(dst, src + off, std::min(piece, n - off));
      }
    });
  for (auto& x : th) x.join();
  return n / ((now_ms() - t0) * 1e6);
}

int main(int argc, char** argv) {
  size_t n = 2 * GiB;
  std::printf("nproc %u\n", std::thread::hardware_concurrency());
  CK(cudaSetDevice(0));
  CK(cudaFree(nullptr));
  char* dev;
  CK(cudaMalloc(&dev, n));
  char* pinned;
  CK(cudaHostAlloc(&pinned, n, 0));
  std::memset(pinned, 1, n);
  cudaStream_t s;
  CK(cudaStreamCreateWithFlags(&s, cudaStreamNonBlocking));
  cudaEvent_t e0, e1;
  CK(cudaEventCreate(&e0));
  CK(cudaEventCreate(&e1));
  auto dma = [&](const char* from, size_t bytes) {
    CK(cudaEventRecord(e0, s));
    CK(cudaMemcpyAsync(dev, from, bytes, cudaMemcpyHostToDevice, s));
    CK(cudaEventRecord(e1, s));
    CK(cudaStreamSynchronize(s));
    float ms;
    CK(cudaEventElapsedTime(&ms, e0, e1));
    return bytes / (ms * 1e6);
  };
  std::vector<double> c;
  for (int i = 0; i < 5; ++i) c.push_back(dma(pinned, n));
  double ceil = median(c);
  std::printf("ceiling pinned 2GiB: %.2f GB/s\n", ceil);

  char* ring;
  size_t ring_bytes = 96 * MiB;
  CK(cudaHostAlloc(&ring, ring_bytes, 0));
  std::memset(ring, 0, ring_bytes);
  for (bool huge : {false, true}) {
    char* src = anon(n, huge);
    std::printf("== source %s pages\n", huge ? "THP(madvise)" : "4K");
    for (int T : {1, 4, 8, 12, 16}) {
      std::vector<double> r;
      for (int i = 0; i < 3; ++i) r.push_back(copy_rate(src, n, ring, ring_bytes, T));
      std::printf("memcpy->pinned ring 96MiB T=%d: %.2f GB/s (cpu only)\n", T, median(r));
    }
    // with a concurrent DMA loop from the other pinned buffer
    for (int T : {12, 16}) {
      std::atomic<bool> stop{false};
      std::atomic<int> dmas{0};
      std::thread d([&] {
        while (!stop) {
          CK(cudaMemcpyAsync(dev, pinned, 256 * MiB, cudaMemcpyHostToDevice, s));
          CK(cudaStreamSynchronize(s));
          ++dmas;
        }
      });
      double t0 = now_ms();
      double r = copy_rate(src, n, ring, ring_bytes, T);
      double el = now_ms() - t0;
      stop = true;
      d.join();
      std::printf("memcpy T=%d while DMA runs: copy %.2f GB/s, DMA ~%.2f GB/s\n", T, r,
                  dmas * 256.0 * MiB / (el * 1e6));
    }
    // Register whole region.
    for (int rep = 0; rep < 2; ++rep) {
      double t0 = now_ms();
      CK(cudaHostRegister(src, n, cudaHostRegisterDefault));
      double t1 = now_ms();
      double bw = dma(src, n);
      double t2 = now_ms();
      CK(cudaHostUnregister(src));
      double t3 = now_ms();
      std::printf(
          "register 2GiB whole: %.2f ms, DMA %.2f GB/s (%.2f ms), unregister %.2f ms; total %.2f ms vs ceiling %.2f "
          "ms\n",
          t1 - t0, bw, t2 - t1, t3 - t2, t3 - t0, n / (ceil * 1e6));
    }
    for (int rep = 0; rep < 2; ++rep) {
      double t0 = now_ms();
      CK(cudaHostRegister(src, n, cudaHostRegisterReadOnly));
      double t1 = now_ms();
      CK(cudaHostUnregister(src));
      double t2 = now_ms();
      std::printf("register 2GiB readonly: %.2f ms, unregister %.2f ms\n", t1 - t0, t2 - t1);
    }
    // Pieces in parallel threads.
    for (size_t piece : {16 * MiB, 64 * MiB}) {
      for (int T : {1, 4, 8}) {
        size_t np = n / piece;
        std::atomic<size_t> next{0};
        double t0 = now_ms();
        std::vector<std::thread> th;
        for (int t = 0; t < T; ++t)
          th.emplace_back([&] {
            for (size_t k; (k = next++) < np;) CK(cudaHostRegister(src + k * piece, piece, cudaHostRegisterDefault));
          });
        for (auto& x : th) x.join();
        double t1 = now_ms();
        next = 0;
        th.clear();
        for (int t = 0; t < T; ++t)
          th.emplace_back([&] {
            for (size_t k; (k = next++) < np;) CK(cudaHostUnregister(src + k * piece));
          });
        for (auto& x : th) x.join();
        double t2 = now_ms();
        std::printf("register %zu MiB pieces, %d threads: %.2f ms (%.1f GB/s); unregister %.2f ms\n", piece / MiB, T,
                    t1 - t0, n / ((t1 - t0) * 1e6), t2 - t1);
      }
    }
    // Pipelined: T threads register pieces in order; main enqueues DMA per piece as ready; unregister after.
    for (int T : {2, 4, 8}) {
      size_t piece = 32 * MiB, np = n / piece;
      std::vector<std::atomic<int>> ready(np);
      for (auto& r : ready) r = 0;
      std::atomic<size_t> next{0};
      double t0 = now_ms();
      CK(cudaEventRecord(e0, s));
      std::vector<std::thread> th;
      for (int t = 0; t < T; ++t)
        th.emplace_back([&] {
          for (size_t k; (k = next++) < np;) {
            CK(cudaHostRegister(src + k * piece, piece, cudaHostRegisterDefault));
            ready[k] = 1;
          }
        });
      for (size_t k = 0; k < np; ++k) {
        while (!ready[k]) std::this_thread::yield();
        CK(cudaMemcpyAsync(dev + k * piece, src + k * piece, piece, cudaMemcpyHostToDevice, s));
      }
      CK(cudaEventRecord(e1, s));
      CK(cudaStreamSynchronize(s));
      double t1 = now_ms();
      for (auto& x : th) x.join();
      next = 0;
      th.clear();
      for (int t = 0; t < T; ++t)
        th.emplace_back([&] {
          for (size_t k; (k = next++) < np;) CK(cudaHostUnregister(src + k * piece));
        });
      for (auto& x : th) x.join();
      double t2 = now_ms();
      float ms;
      CK(cudaEventElapsedTime(&ms, e0, e1));
      std::printf(
          "pipelined register(32MiB, %d thr)+DMA: %.2f ms to DMA done (%.3f x ceiling), +unregister %.2f ms => %.3f x "
          "ceiling\n",
          T, t1 - t0, (n / (ceil * 1e6)) / (t1 - t0), t2 - t1, (n / (ceil * 1e6)) / (t2 - t0));
    }
    munmap(src, n);
  }
  // File-backed mapping.
  {
    const char* path = "/tmp/reg_probe.bin";
    int fd = open(path, O_RDWR | O_CREAT | O_TRUNC, 0600);
    size_t fn = 1 * GiB;
    std::vector<char> buf(64 * MiB, 7);
    for (size_t o = 0; o < fn; o += buf.size()) (void)!write(fd, buf.data(), buf.size());
    fsync(fd);
    void* m = mmap(nullptr, fn, PROT_READ, MAP_SHARED, fd, 0);
    for (int rep = 0; rep < 2; ++rep) {
      double t0 = now_ms();
      cudaError_t e = cudaHostRegister(m, fn, cudaHostRegisterReadOnly);
      double t1 = now_ms();
      if (e != cudaSuccess) {
        std::printf("file mmap register readonly: %s\n", cudaGetErrorString(e));
        cudaGetLastError();
        break;
      }
      double bw = dma(static_cast<char*>(m), fn);
      double t2 = now_ms();
      CK(cudaHostUnregister(m));
      double t3 = now_ms();
      std::printf("file mmap 1GiB register RO %.2f ms, DMA %.2f GB/s, unregister %.2f ms => %.3f x ceiling\n", t1 - t0,
                  bw, t3 - t2, (fn / (ceil * 1e6)) / (t3 - t0));
    }
    // pread into ring rate with T threads
    for (int T : {8, 12, 16}) {
      std::atomic<size_t> next{0};
      size_t piece = 4 * MiB, per = ring_bytes / T / piece;
      double t0 = now_ms();
      std::vector<std::thread> th;
      for (int t = 0; t < T; ++t)
        th.emplace_back([&, t] {
          size_t k = 0;
          for (size_t off; (off = next.fetch_add(piece)) < fn;)
            (void)!pread(fd, ring + (size_t(t) * per + (k++ % per)) * piece, piece, off);
        });
      for (auto& x : th) x.join();
      std::printf("pread->ring T=%d: %.2f GB/s\n", T, fn / ((now_ms() - t0) * 1e6));
    }
    munmap(m, fn);
    close(fd);
    unlink(path);
  }
  return 0;
}

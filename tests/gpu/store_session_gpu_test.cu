// SPDX-License-Identifier: Apache-2.0
// The weight store and sessions on the CUDA backend, through the public C API, with kernels
// that read and write the leased storage:
//
//   store:    two containers (prefill/decode) over overlapping maps share one device copy of
//             each shared FQN (one address, the union of bytes in the accounting and in
//             cudaMemGetInfo); a mismatched declaration is refused; constants memory goes when
//             the last user goes, in either order, and not before an open run's kernels are
//             done; a store update + swap reaches kernels of both containers while a kernel of
//             an older run still reads the old weights.
//   sessions: isolation (each session's kernel-written state is found again, at the same
//             address, by its next run), one buffer for a state FQN of two containers (across
//             streams), fork (equal, then diverging), reset (initial value back), freeing a
//             session while its run's kernel still executes, and state kept across swaps.
//
// Every check of data is a kernel on the run's stream (test_kernels.h: pattern/launch_check),
// so the figures are what the device saw at that point of the stream.
#include <cuda_runtime.h>
#include <gtest/gtest.h>

#include <cstring>
#include <string>
#include <vector>

#include "common/test_support.h"
#include "device/device.h"
#include "test_kernels.h"
#include "wharf/wharf.h"

namespace {

using wharf_test::St;

using wharf_test::launch_check;
using wharf_test::launch_check_value;
using wharf_test::launch_fill;
using wharf_test::launch_spin;
using wharf_test::pattern;

#define ASSERT_CUDA(expr) ASSERT_EQ((expr), cudaSuccess) << #expr

// Mismatch counters in device memory, zeroed before any kernel uses them.
struct Counters {
  unsigned long long* d = nullptr;
  int n;
  explicit Counters(int count) : n(count) {
    EXPECT_EQ(cudaMalloc(&d, n * sizeof(unsigned long long)), cudaSuccess);
    EXPECT_EQ(cudaMemset(d, 0, n * sizeof(unsigned long long)), cudaSuccess);
    // cudaMemset may return before it is done, and the tests' streams do not wait for the
    // legacy stream: finish it here.
    EXPECT_EQ(cudaDeviceSynchronize(), cudaSuccess);
  }
  ~Counters() { cudaFree(d); }
  unsigned long long operator[](int i) const {
    unsigned long long v = ~0ull;
    EXPECT_EQ(cudaMemcpy(&v, d + i, sizeof v, cudaMemcpyDeviceToHost), cudaSuccess);
    return v;
  }
  unsigned long long* at(int i) { return d + i; }
};

// 32 MiB of I32 per weight: the runtime's memory pool maps device memory in 32 MiB steps,
// so at this size cudaMemGetInfo sees each weight come and go on its own.
constexpr int64_t kElems = 1 << 23;
constexpr uint64_t kBytes = uint64_t(kElems) * 4;
const char* const kShared[] = {"embed", "layers.0.w", "layers.1.w", "norm"};

uint64_t elems_of(const wharf_tensor_view& v) {
  uint64_t n = 1;
  for (int i = 0; i < v.ndim; ++i) n *= uint64_t(v.shape[i]);
  return n;
}

// Host tensors holding pattern(seed, i), and a map over them (pageable sources).
struct Weights {
  std::vector<std::string> names;
  std::vector<int64_t> shapes;
  std::vector<std::vector<uint32_t>> data;
  wharf_constant_map* map = nullptr;
  Weights() = default;
  Weights(const Weights&) = delete;
  ~Weights() { wharf_constant_map_free(map); }
  Weights& add(const std::string& name, uint32_t seed, int64_t elems = kElems) {
    names.push_back(name);
    shapes.push_back(elems);
    data.emplace_back(size_t(elems));
    for (int64_t i = 0; i < elems; ++i) data.back()[size_t(i)] = pattern(seed, uint64_t(i));
    return *this;
  }
  wharf_constant_map* build() {
    wharf_constant_map_free(map);
    map = nullptr;
    EXPECT_EQ(wharf_constant_map_create(&map), nullptr);
    for (size_t i = 0; i < names.size(); ++i) {
      wharf_tensor_view v{
          sizeof(wharf_tensor_view), 0, data[i].data(), WHARF_DTYPE_I32, WHARF_DEVICE_CPU, 0, 1, &shapes[i], nullptr};
      St st(wharf_constant_map_set(map, names[i].c_str(), &v));
      EXPECT_EQ(st.code(), WHARF_OK) << st.msg();
    }
    return map;
  }
};

// Seeds: shared weights 1 (prefill) / 2 (decode: differs on purpose, the store keeps the
// first); heads 11 / 22.
void prefill_weights(Weights* w, uint32_t shared_seed = 1) {
  for (const char* n : kShared) w->add(n, shared_seed);
  w->add("prefill.head", 11);
}
void decode_weights(Weights* w, uint32_t shared_seed = 2) {
  for (const char* n : kShared) w->add(n, shared_seed);
  w->add("decode.head", 22);
}

class StoreSessionBase : public ::testing::Test {
 protected:
  void SetUp() override {
    std::string reason;
    if (!wharf::cuda_device_available(0, &reason)) GTEST_SKIP() << "no usable CUDA device: " << reason;
    wharf_runtime_options o;
    wharf_runtime_options_init(&o);
    o.backend = WHARF_BACKEND_CUDA;
    ASSERT_OK(wharf_runtime_create(&o, &rt));
    ASSERT_OK(wharf_weight_store_create(rt, &store));
    ASSERT_CUDA(cudaStreamCreateWithFlags(&s, cudaStreamNonBlocking));
    ASSERT_CUDA(cudaStreamCreateWithFlags(&s2, cudaStreamNonBlocking));
  }
  void TearDown() override {
    if (s) EXPECT_EQ(cudaStreamSynchronize(s), cudaSuccess);
    if (s2) EXPECT_EQ(cudaStreamSynchronize(s2), cudaSuccess);
    if (s) cudaStreamDestroy(s);
    if (s2) cudaStreamDestroy(s2);
    wharf_weight_store_free(store);
    wharf_runtime_free(rt);
  }

  uint64_t mem(wharf_memory_tag tag) {
    wharf_memory_stats ms;
    std::memset(&ms, 0, sizeof ms);
    ms.struct_size = sizeof ms;
    St st(wharf_runtime_get_memory_stats(rt, &ms));
    EXPECT_EQ(st.code(), WHARF_OK) << st.msg();
    return ms.current[tag];
  }
  static uint64_t free_device() {
    size_t f = 0, t = 0;
    EXPECT_EQ(cudaMemGetInfo(&f, &t), cudaSuccess);
    return f;
  }
  wharf_weight_store_stats stats() {
    wharf_weight_store_stats st;
    std::memset(&st, 0, sizeof st);
    st.struct_size = sizeof st;
    St r(wharf_weight_store_get_stats(store, &st));
    EXPECT_EQ(r.code(), WHARF_OK) << r.msg();
    return st;
  }
  wharf_container* from_map(Weights* w, const char* name, const wharf_state_decl* states = nullptr,
                            size_t num_states = 0, wharf_code want = WHARF_OK, std::string* msg = nullptr) {
    wharf_container_options o;
    wharf_container_options_init(&o);
    o.name = name;
    o.store = store;
    o.states = states;
    o.num_states = num_states;
    wharf_container* c = nullptr;
    St st(wharf_container_create_from_map(rt, w->build(), &o, &c));
    EXPECT_EQ(st.code(), want) << name << ": " << st.msg();
    if (msg) *msg = st.msg();
    return c;
  }
  wharf_run* begin(wharf_container* c, wharf_session* session, cudaStream_t stream) {
    wharf_run* run = nullptr;
    St st(wharf_run_begin(c, session, stream, &run));
    EXPECT_EQ(st.code(), WHARF_OK) << st.msg();
    return run;
  }
  static wharf_tensor_view view(wharf_run* run, const char* fqn) {
    wharf_tensor_view v{};
    std::memset(&v, 0, sizeof v);
    St st(wharf_run_get_tensor(run, fqn, &v));
    EXPECT_EQ(st.code(), WHARF_OK) << fqn << ": " << st.msg();
    return v;
  }
  static cudaStream_t stream_of(wharf_run* run) { return static_cast<cudaStream_t>(wharf_run_stream(run)); }
  // Device-side checks and writes through a run, on its stream.
  static void check(wharf_run* run, const char* fqn, uint32_t seed, unsigned long long* bad) {
    wharf_tensor_view v = view(run, fqn);
    ASSERT_NE(v.data, nullptr) << fqn;
    ASSERT_EQ(launch_check(stream_of(run), static_cast<const uint32_t*>(v.data), elems_of(v), seed, bad), cudaSuccess);
  }
  static void check_value(wharf_run* run, const char* fqn, uint32_t value, unsigned long long* bad) {
    wharf_tensor_view v = view(run, fqn);
    ASSERT_NE(v.data, nullptr) << fqn;
    ASSERT_EQ(launch_check_value(stream_of(run), static_cast<const uint32_t*>(v.data), elems_of(v), value, bad),
              cudaSuccess);
  }
  static void fill(wharf_run* run, const char* fqn, uint32_t seed) {
    wharf_tensor_view v = view(run, fqn);
    ASSERT_NE(v.data, nullptr) << fqn;
    ASSERT_EQ(launch_fill(stream_of(run), static_cast<uint32_t*>(v.data), elems_of(v), seed), cudaSuccess);
  }
  static void end(wharf_run* run) {
    St st(wharf_run_end(run));
    EXPECT_EQ(st.code(), WHARF_OK) << st.msg();
  }

  wharf_runtime* rt = nullptr;
  wharf_weight_store* store = nullptr;
  cudaStream_t s = nullptr, s2 = nullptr;
};

// ---- weight store ----------------------------------------------------------------------

using StoreSessionStoreGpu = StoreSessionBase;

TEST_F(StoreSessionStoreGpu, SharedWeightsHaveOneDeviceAddressAndCostTheUnion) {
  Weights pw, dw;
  prefill_weights(&pw);
  decode_weights(&dw);
  const uint64_t c0 = mem(WHARF_MEM_CONSTANTS);
  wharf_container* p = from_map(&pw, "prefill");
  ASSERT_NE(p, nullptr);
  const uint64_t after_p = mem(WHARF_MEM_CONSTANTS);
  EXPECT_EQ(after_p - c0, 5 * kBytes);
  const uint64_t free1 = free_device();
  wharf_container* d = from_map(&dw, "decode");
  ASSERT_NE(d, nullptr);
  const uint64_t free2 = free_device();
  // The union (6 weights), not the sum (10): decode added only its head, in the accounting
  // and for the driver.
  EXPECT_EQ(mem(WHARF_MEM_CONSTANTS) - c0, 6 * kBytes);
  EXPECT_GE(free1 - free2, kBytes);
  EXPECT_LT(free1 - free2, 2 * kBytes) << "the driver saw more than decode's head allocated";

  Counters bad(4);
  wharf_run* rp = begin(p, nullptr, s);
  wharf_run* rd = begin(d, nullptr, s2);
  ASSERT_NE(rp, nullptr);
  ASSERT_NE(rd, nullptr);
  for (const char* n : kShared) {
    wharf_tensor_view vp = view(rp, n), vd = view(rd, n);
    EXPECT_EQ(vp.data, vd.data) << n << ": one device address in both containers";
    EXPECT_EQ(vd.device_type, WHARF_DEVICE_CUDA) << n;
    cudaPointerAttributes attr;
    ASSERT_CUDA(cudaPointerGetAttributes(&attr, vd.data));
    EXPECT_EQ(attr.type, cudaMemoryTypeDevice) << n;
    check(rp, n, 1, bad.at(0));
    check(rd, n, 1, bad.at(1));  // the store kept prefill's data; decode's map was not read
  }
  EXPECT_NE(view(rp, "prefill.head").data, view(rd, "decode.head").data);
  check(rp, "prefill.head", 11, bad.at(2));
  check(rd, "decode.head", 22, bad.at(3));
  end(rp);
  end(rd);
  ASSERT_CUDA(cudaDeviceSynchronize());
  for (int i = 0; i < 4; ++i) EXPECT_EQ(bad[i], 0ull) << "counter " << i;

  wharf_weight_store_stats st = stats();
  EXPECT_EQ(st.num_unique_constants, 6u);
  EXPECT_EQ(st.unique_bytes, 6 * kBytes);
  EXPECT_EQ(st.num_references, 10u);
  EXPECT_EQ(st.saved_bytes, 4 * kBytes);

  // A third container declaring a shared FQN with another shape is refused, and nothing is
  // allocated for it.
  const uint64_t before_bad = mem(WHARF_MEM_CONSTANTS);
  const uint64_t free_bad0 = free_device();
  Weights bw;
  bw.add("embed", 3, kElems / 2).add("verifier.head", 33);
  std::string msg;
  wharf_container* v = from_map(&bw, "verifier", nullptr, 0, WHARF_INVALID_ARGUMENT, &msg);
  EXPECT_EQ(v, nullptr);
  EXPECT_NE(msg.find("'embed'"), std::string::npos) << msg;
  EXPECT_NE(msg.find("'verifier'"), std::string::npos) << msg;
  EXPECT_NE(msg.find("'prefill'"), std::string::npos) << msg;
  EXPECT_EQ(mem(WHARF_MEM_CONSTANTS), before_bad);
  EXPECT_EQ(free_device(), free_bad0);
  EXPECT_EQ(stats().num_unique_constants, 6u);
  wharf_container_free(v);
  wharf_container_free(p);
  wharf_container_free(d);
  EXPECT_EQ(mem(WHARF_MEM_CONSTANTS), c0);
}

TEST_F(StoreSessionStoreGpu, ConstantsAreReleasedWhenTheLastUserGoesInEitherOrder) {
  const uint64_t c0 = mem(WHARF_MEM_CONSTANTS);
  for (int order = 0; order < 2; ++order) {
    SCOPED_TRACE(order == 0 ? "prefill freed first" : "decode freed first");
    Weights pw, dw;
    prefill_weights(&pw);
    decode_weights(&dw);
    wharf_container* p = from_map(&pw, "prefill");
    wharf_container* d = from_map(&dw, "decode");
    ASSERT_NE(p, nullptr);
    ASSERT_NE(d, nullptr);
    const uint64_t both = mem(WHARF_MEM_CONSTANTS);
    EXPECT_EQ(both - c0, 6 * kBytes);
    const uint64_t free_both = free_device();
    wharf_container_free(order == 0 ? p : d);
    // Only the freed container's head goes; the shared weights stay for the other user.
    EXPECT_EQ(mem(WHARF_MEM_CONSTANTS), both - kBytes);
    const uint64_t free_one = free_device();
    EXPECT_GE(free_one - free_both, kBytes);
    EXPECT_LT(free_one - free_both, 2 * kBytes) << "shared weights were released with a user left";
    EXPECT_EQ(stats().saved_bytes, 0u);
    EXPECT_EQ(stats().num_unique_constants, 5u);
    // The survivor still reads them on the device.
    Counters bad(1);
    wharf_container* survivor = order == 0 ? d : p;
    wharf_run* r = begin(survivor, nullptr, s);
    ASSERT_NE(r, nullptr);
    for (const char* n : kShared) check(r, n, 1, bad.at(0));
    end(r);
    ASSERT_CUDA(cudaStreamSynchronize(s));
    EXPECT_EQ(bad[0], 0ull);
    // Measured around the free itself: a sanitizer (or lazy module loading) may take device
    // memory of its own at a kernel's first launch, so a baseline from before the kernels
    // above would not compare like with like.
    const uint64_t free_last0 = free_device();
    wharf_container_free(survivor);
    EXPECT_EQ(mem(WHARF_MEM_CONSTANTS), c0);
    EXPECT_EQ(stats().num_unique_constants, 0u);
    const uint64_t free_last1 = free_device();
    EXPECT_GE(free_last1 - free_last0, 5 * kBytes) << "the driver did not get the shared weights back";
    EXPECT_LT(free_last1 - free_last0, 6 * kBytes);
  }
}

TEST_F(StoreSessionStoreGpu, OpenRunKeepsSharedWeightsForItsKernelsAfterBothContainersAreFreed) {
  Weights pw, dw;
  prefill_weights(&pw);
  decode_weights(&dw);
  const uint64_t c0 = mem(WHARF_MEM_CONSTANTS);
  wharf_container* p = from_map(&pw, "prefill");
  wharf_container* d = from_map(&dw, "decode");
  ASSERT_NE(p, nullptr);
  ASSERT_NE(d, nullptr);
  wharf_run* r = begin(d, nullptr, s);
  ASSERT_NE(r, nullptr);
  wharf_container_free(p);
  wharf_container_free(d);
  // The open run holds decode's generation: the shared weights and decode's head.
  EXPECT_EQ(mem(WHARF_MEM_CONSTANTS) - c0, 5 * kBytes);
  Counters bad(1);
  ASSERT_CUDA(launch_spin(s, 50'000'000));  // the reads start 50 ms after run_end returns
  for (const char* n : kShared) check(r, n, 1, bad.at(0));
  check(r, "decode.head", 22, bad.at(0));
  end(r);
  // The last reference went with the run: its storage is released once its kernels are done.
  EXPECT_EQ(mem(WHARF_MEM_CONSTANTS), c0);
  EXPECT_EQ(cudaStreamQuery(s), cudaSuccess) << "storage was released before the run's kernels finished";
  ASSERT_CUDA(cudaStreamSynchronize(s));
  EXPECT_EQ(bad[0], 0ull);
}

TEST_F(StoreSessionStoreGpu, StoreUpdateAndSwapReachKernelsOfEveryContainer) {
  Weights pw, dw;
  prefill_weights(&pw);
  decode_weights(&dw);
  const uint64_t c0 = mem(WHARF_MEM_CONSTANTS);
  wharf_container* p = from_map(&pw, "prefill");
  wharf_container* d = from_map(&dw, "decode");
  ASSERT_NE(p, nullptr);
  ASSERT_NE(d, nullptr);
  Counters bad(8);

  // A run begun before the update: its kernels read the old weights 100 ms later, after the
  // swap has happened on the host.
  wharf_run* old_run = begin(d, nullptr, s2);
  ASSERT_NE(old_run, nullptr);
  const uint64_t old_gen = wharf_run_generation(old_run);
  ASSERT_CUDA(launch_spin(s2, 100'000'000));
  for (const char* n : kShared) check(old_run, n, 1, bad.at(0));
  check(old_run, "decode.head", 22, bad.at(0));

  const uint64_t before = mem(WHARF_MEM_CONSTANTS);
  Weights upd;
  upd.add("embed", 3).add("norm", 3).add("decode.head", 33);
  ASSERT_OK(wharf_weight_store_update(store, upd.build(), nullptr));
  // One copy per FQN, whichever containers share it.
  EXPECT_EQ(mem(WHARF_MEM_CONSTANTS) - before, 3 * kBytes);
  // Staged, not published: a run begun now still sees the old weights.
  wharf_run* pre = begin(p, nullptr, s);
  ASSERT_NE(pre, nullptr);
  check(pre, "embed", 1, bad.at(1));
  end(pre);
  ASSERT_OK(wharf_weight_store_swap(store));
  end(old_run);

  wharf_run* rp = begin(p, nullptr, s);
  wharf_run* rd = begin(d, nullptr, s);
  ASSERT_NE(rp, nullptr);
  ASSERT_NE(rd, nullptr);
  EXPECT_NE(wharf_run_generation(rd), old_gen);
  EXPECT_EQ(view(rp, "embed").data, view(rd, "embed").data);
  EXPECT_EQ(view(rp, "layers.0.w").data, view(rd, "layers.0.w").data);
  for (wharf_run* r : {rp, rd}) {
    check(r, "embed", 3, bad.at(2));
    check(r, "norm", 3, bad.at(2));
    check(r, "layers.0.w", 1, bad.at(3));  // not in the update: unchanged, still shared
    check(r, "layers.1.w", 1, bad.at(3));
  }
  check(rp, "prefill.head", 11, bad.at(4));
  check(rd, "decode.head", 33, bad.at(4));
  end(rp);
  end(rd);
  ASSERT_CUDA(cudaDeviceSynchronize());
  EXPECT_EQ(bad[0], 0ull) << "the old run's kernels saw new weights";
  EXPECT_EQ(bad[1], 0ull) << "a run begun between update and swap saw staged weights";
  EXPECT_EQ(bad[2], 0ull) << "updated weights after the swap";
  EXPECT_EQ(bad[3], 0ull) << "weights the update left out";
  EXPECT_EQ(bad[4], 0ull) << "heads";
  EXPECT_EQ(stats().saved_bytes, 4 * kBytes);
  // Dropping the previous generations (their runs are done) leaves the union again.
  ASSERT_OK(wharf_container_free_inactive(p));
  ASSERT_OK(wharf_container_free_inactive(d));
  EXPECT_EQ(mem(WHARF_MEM_CONSTANTS) - c0, 6 * kBytes);
  wharf_container_free(p);
  wharf_container_free(d);
  EXPECT_EQ(mem(WHARF_MEM_CONSTANTS), c0);
}

// ---- sessions --------------------------------------------------------------------------

constexpr int64_t kKvElems = 1 << 18;  // 1 MiB of I32
constexpr int64_t kHElems = 4096;
constexpr uint32_t kHInitSeed = 77;

class StoreSessionSessionGpu : public StoreSessionBase {
 protected:
  void SetUp() override {
    StoreSessionBase::SetUp();
    if (IsSkipped() || HasFatalFailure()) return;
    h_init.resize(kHElems);
    for (int64_t i = 0; i < kHElems; ++i) h_init[size_t(i)] = pattern(kHInitSeed, uint64_t(i));
    h_view = wharf_tensor_view{
        sizeof(wharf_tensor_view), 0, h_init.data(), WHARF_DTYPE_I32, WHARF_DEVICE_CPU, 0, 1, &h_shape, nullptr};
    // prefill: "kv" (zeros) and "h" (initial value); decode: "kv". Both share the weight "w".
    wharf_state_decl ps[2] = {{sizeof(wharf_state_decl), "kv", WHARF_DTYPE_I32, 1, &kv_shape, nullptr},
                              {sizeof(wharf_state_decl), "h", WHARF_DTYPE_I32, 1, &h_shape, &h_view}};
    wharf_state_decl ds[1] = {{sizeof(wharf_state_decl), "kv", WHARF_DTYPE_I32, 1, &kv_shape, nullptr}};
    pw.add("w", 1, 1 << 16).add("prefill.head", 11, 1 << 16);
    dw.add("w", 1, 1 << 16).add("decode.head", 22, 1 << 16);
    prefill = from_map(&pw, "prefill", ps, 2);
    decode = from_map(&dw, "decode", ds, 1);
    ASSERT_NE(prefill, nullptr);
    ASSERT_NE(decode, nullptr);
    templates = mem(WHARF_MEM_STATE);
  }
  void TearDown() override {
    wharf_container_free(prefill);
    wharf_container_free(decode);
    StoreSessionBase::TearDown();
  }
  wharf_session* session(std::vector<wharf_container*> cs) {
    wharf_session* out = nullptr;
    St st(wharf_session_create(rt, cs.data(), cs.size(), nullptr, &out));
    EXPECT_EQ(st.code(), WHARF_OK) << st.msg();
    return out;
  }

  std::vector<uint32_t> h_init;
  int64_t kv_shape = kKvElems, h_shape = kHElems;
  wharf_tensor_view h_view{};
  Weights pw, dw;
  wharf_container *prefill = nullptr, *decode = nullptr;
  uint64_t templates = 0;
  const uint64_t per_session = uint64_t(kKvElems + kHElems) * 4;
};

TEST_F(StoreSessionSessionGpu, KernelWrittenStateIsIsolatedAndStaysAtItsAddress) {
  EXPECT_EQ(templates, uint64_t(kHElems) * 4) << "the initial value of 'h' is the only template";
  wharf_session* a = session({prefill});
  wharf_session* b = session({prefill});
  ASSERT_NE(a, nullptr);
  ASSERT_NE(b, nullptr);
  EXPECT_EQ(wharf_session_state_bytes(a), per_session);
  Counters bad(6);

  wharf_run* ra = begin(prefill, a, s);
  ASSERT_NE(ra, nullptr);
  void* kv_a = view(ra, "kv").data;
  check_value(ra, "kv", 0, bad.at(0));  // a new session starts from zeros
  check(ra, "h", kHInitSeed, bad.at(0));
  fill(ra, "kv", 0xA);
  end(ra);

  wharf_run* rb = begin(prefill, b, s2);
  ASSERT_NE(rb, nullptr);
  void* kv_b = view(rb, "kv").data;
  EXPECT_NE(kv_a, kv_b);
  check_value(rb, "kv", 0, bad.at(1));  // A's writes did not reach B
  check(rb, "h", kHInitSeed, bad.at(1));
  ASSERT_CUDA(launch_spin(s2, 20'000'000));
  fill(rb, "kv", 0xB);
  fill(rb, "h", 0xB0);
  end(rb);

  EXPECT_EQ(mem(WHARF_MEM_STATE), templates + 2 * per_session);
  for (int round = 0; round < 3; ++round) {
    ra = begin(prefill, a, round % 2 ? s2 : s);  // a session may move between streams
    ASSERT_NE(ra, nullptr);
    EXPECT_EQ(view(ra, "kv").data, kv_a) << "a session keeps its buffers between runs";
    check(ra, "kv", 0xA, bad.at(2));
    check(ra, "h", kHInitSeed, bad.at(2));  // B's write to its own "h" did not reach A
    end(ra);
    rb = begin(prefill, b, round % 2 ? s : s2);
    ASSERT_NE(rb, nullptr);
    EXPECT_EQ(view(rb, "kv").data, kv_b);
    check(rb, "kv", 0xB, bad.at(3));
    check(rb, "h", 0xB0, bad.at(3));
    end(rb);
  }
  ASSERT_CUDA(cudaDeviceSynchronize());
  EXPECT_EQ(bad[0], 0ull) << "A's first run";
  EXPECT_EQ(bad[1], 0ull) << "B's first run saw A's data";
  EXPECT_EQ(bad[2], 0ull) << "A's later runs";
  EXPECT_EQ(bad[3], 0ull) << "B's later runs";
  wharf_session_free(a);
  wharf_session_free(b);
  EXPECT_EQ(mem(WHARF_MEM_STATE), templates);
}

TEST_F(StoreSessionSessionGpu, TwoContainersOfOneSessionShareOneStateBufferAcrossStreams) {
  wharf_session* ses = session({prefill, decode});
  ASSERT_NE(ses, nullptr);
  EXPECT_EQ(wharf_session_state_bytes(ses), per_session) << "'kv' counted once";
  Counters bad(2);
  wharf_run* r1 = begin(prefill, ses, s);
  ASSERT_NE(r1, nullptr);
  void* kv = view(r1, "kv").data;
  ASSERT_CUDA(launch_spin(s, 50'000'000));  // decode's run on s2 must wait for this write
  fill(r1, "kv", 0x5);
  end(r1);
  wharf_run* r2 = begin(decode, ses, s2);
  ASSERT_NE(r2, nullptr);
  EXPECT_EQ(view(r2, "kv").data, kv) << "one buffer for a state FQN of both containers";
  check(r2, "kv", 0x5, bad.at(0));
  check(r2, "w", 1, bad.at(1));  // and the shared weight, through decode
  fill(r2, "kv", 0x6);
  end(r2);
  wharf_run* r3 = begin(prefill, ses, s);
  ASSERT_NE(r3, nullptr);
  check(r3, "kv", 0x6, bad.at(0));
  end(r3);
  ASSERT_CUDA(cudaDeviceSynchronize());
  EXPECT_EQ(bad[0], 0ull);
  EXPECT_EQ(bad[1], 0ull);
  EXPECT_EQ(mem(WHARF_MEM_STATE), templates + per_session);
  wharf_session_free(ses);
  EXPECT_EQ(mem(WHARF_MEM_STATE), templates);
}

TEST_F(StoreSessionSessionGpu, ForkStartsEqualThenDiverges) {
  wharf_session* a = session({prefill});
  ASSERT_NE(a, nullptr);
  Counters bad(4);
  wharf_run* r = begin(prefill, a, s);
  ASSERT_NE(r, nullptr);
  ASSERT_CUDA(launch_spin(s, 50'000'000));  // the fork's copy must wait for these writes
  fill(r, "kv", 0x7);
  fill(r, "h", 0x70);
  end(r);
  wharf_session* f = nullptr;
  ASSERT_OK(wharf_session_fork(a, &f));
  ASSERT_NE(f, nullptr);
  EXPECT_EQ(mem(WHARF_MEM_STATE), templates + 2 * per_session);
  wharf_run* rf = begin(prefill, f, s2);
  ASSERT_NE(rf, nullptr);
  check(rf, "kv", 0x7, bad.at(0));
  check(rf, "h", 0x70, bad.at(0));
  fill(rf, "kv", 0x8);
  end(rf);
  r = begin(prefill, a, s);
  ASSERT_NE(r, nullptr);
  EXPECT_NE(view(r, "kv").data, nullptr);
  check(r, "kv", 0x7, bad.at(1));  // the fork's write did not reach the source
  fill(r, "h", 0x71);
  end(r);
  rf = begin(prefill, f, s2);
  ASSERT_NE(rf, nullptr);
  check(rf, "kv", 0x8, bad.at(2));
  check(rf, "h", 0x70, bad.at(2));  // nor the source's write the fork
  end(rf);
  ASSERT_CUDA(cudaDeviceSynchronize());
  EXPECT_EQ(bad[0], 0ull) << "the fork starts equal";
  EXPECT_EQ(bad[1], 0ull) << "the source diverges";
  EXPECT_EQ(bad[2], 0ull) << "the fork diverges";
  wharf_session_free(f);
  wharf_session_free(a);
  EXPECT_EQ(mem(WHARF_MEM_STATE), templates);
}

TEST_F(StoreSessionSessionGpu, ResetRestoresTheInitialValues) {
  wharf_session* a = session({prefill});
  ASSERT_NE(a, nullptr);
  Counters bad(2);
  wharf_run* r = begin(prefill, a, s);
  ASSERT_NE(r, nullptr);
  check(r, "h", kHInitSeed, bad.at(0));
  check_value(r, "kv", 0, bad.at(0));
  ASSERT_CUDA(launch_spin(s, 50'000'000));  // the reset must land after these writes
  fill(r, "h", 0x9);
  fill(r, "kv", 0x10);
  EXPECT_CODE(wharf_session_reset(a), WHARF_BUSY);
  end(r);
  ASSERT_OK(wharf_session_reset(a));
  r = begin(prefill, a, s2);
  ASSERT_NE(r, nullptr);
  check(r, "h", kHInitSeed, bad.at(1));
  check_value(r, "kv", 0, bad.at(1));
  end(r);
  ASSERT_CUDA(cudaDeviceSynchronize());
  EXPECT_EQ(bad[0], 0ull) << "initial values";
  EXPECT_EQ(bad[1], 0ull) << "after reset";
  wharf_session_free(a);
}

TEST_F(StoreSessionSessionGpu, FreeingASessionWhileItsKernelRunsIsSafe) {
  // (1) The run ended, its kernel (50 ms of spin, then a fill of the state) still queued or
  //     executing, and the session freed at once.
  wharf_session* a = session({prefill});
  ASSERT_NE(a, nullptr);
  wharf_run* r = begin(prefill, a, s);
  ASSERT_NE(r, nullptr);
  EXPECT_EQ(mem(WHARF_MEM_STATE), templates + per_session);
  ASSERT_CUDA(launch_spin(s, 50'000'000));
  fill(r, "kv", 0x3);
  fill(r, "h", 0x4);
  end(r);
  wharf_session_free(a);
  const uint64_t after_free = mem(WHARF_MEM_STATE);
  const cudaError_t q = cudaStreamQuery(s);
  EXPECT_EQ(after_free, templates) << "WHARF_MEM_STATE did not drop at free";
  if (after_free == templates) EXPECT_EQ(q, cudaSuccess) << "the state was released before the run's kernel finished";
  ASSERT_CUDA(cudaStreamSynchronize(s));
  EXPECT_EQ(mem(WHARF_MEM_STATE), templates);

  // (2) The handle freed while the run is still open: the run keeps the session; its end
  //     releases it, after the kernel.
  wharf_session* b = session({prefill});
  ASSERT_NE(b, nullptr);
  r = begin(prefill, b, s2);
  ASSERT_NE(r, nullptr);
  wharf_session_free(b);
  EXPECT_EQ(mem(WHARF_MEM_STATE), templates + per_session);
  ASSERT_CUDA(launch_spin(s2, 50'000'000));
  fill(r, "kv", 0x5);
  end(r);
  EXPECT_EQ(mem(WHARF_MEM_STATE), templates);
  EXPECT_EQ(cudaStreamQuery(s2), cudaSuccess) << "the state was released before the run's kernel finished";
  ASSERT_CUDA(cudaStreamSynchronize(s2));
}

TEST_F(StoreSessionSessionGpu, SessionKeepsItsStateAcrossWeightSwaps) {
  wharf_session* ses = session({prefill, decode});
  ASSERT_NE(ses, nullptr);
  Counters bad(4);
  wharf_run* r = begin(prefill, ses, s);
  ASSERT_NE(r, nullptr);
  void* kv = view(r, "kv").data;
  fill(r, "kv", 0x12);
  fill(r, "h", 0x13);
  end(r);

  // A store update + swap of the shared weight...
  Weights upd;
  upd.add("w", 50, 1 << 16);
  ASSERT_OK(wharf_weight_store_update(store, upd.build(), nullptr));
  ASSERT_OK(wharf_weight_store_swap(store));
  r = begin(decode, ses, s2);
  ASSERT_NE(r, nullptr);
  EXPECT_EQ(view(r, "kv").data, kv);
  check(r, "w", 50, bad.at(0));
  check(r, "kv", 0x12, bad.at(1));
  end(r);

  // ...and a container update + swap of prefill alone.
  Weights own;
  own.add("prefill.head", 60, 1 << 16);
  ASSERT_OK(wharf_container_update(prefill, own.build(), nullptr));
  ASSERT_OK(wharf_container_swap(prefill));
  r = begin(prefill, ses, s);
  ASSERT_NE(r, nullptr);
  EXPECT_EQ(view(r, "kv").data, kv);
  check(r, "prefill.head", 60, bad.at(2));
  check(r, "w", 50, bad.at(2));
  check(r, "kv", 0x12, bad.at(3));
  check(r, "h", 0x13, bad.at(3));
  end(r);
  ASSERT_CUDA(cudaDeviceSynchronize());
  EXPECT_EQ(bad[0], 0ull) << "new shared weight";
  EXPECT_EQ(bad[1], 0ull) << "state after the store swap";
  EXPECT_EQ(bad[2], 0ull) << "weights after the container swap";
  EXPECT_EQ(bad[3], 0ull) << "state after the container swap";
  wharf_session_free(ses);
  EXPECT_EQ(mem(WHARF_MEM_STATE), templates);
}

}  // namespace

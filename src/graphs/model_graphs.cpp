// SPDX-License-Identifier: Apache-2.0
#include "graphs/model_graphs.h"

#include <algorithm>
#include <chrono>
#include <cstdlib>
#include <cstring>
#include <functional>
#include <map>
#include <mutex>
#include <unordered_map>

#include "constants/container.h"
#include "core/env.h"
#include "core/logging.h"
#include "core/sync.h"
#include "core/text.h"
#include "graphs/bucket_plan.h"
#include "graphs/gather.h"
#include "graphs/patch_plan.h"
#include "models/aoti/shim_host.h"
#include "offload/offloader.h"
#include "runs/run.h"

#if defined(WHARF_HAVE_CUDA)
#include <cuda.h>
#include <cuda_runtime_api.h>
#endif

namespace wharf {

#if !defined(WHARF_HAVE_CUDA)

struct ModelGraphs::Core {};
struct ModelGraphs::Listener {};

Status ModelGraphs::create(Model*, const GraphOptions&, std::unique_ptr<ModelGraphs>*) {
  return Unsupported("CUDA graphs need a Wharf built with CUDA");
}
ModelGraphs::~ModelGraphs() = default;
Status ModelGraphs::run(Run&, const std::vector<ModelTensor>&, std::vector<ModelTensor>*, bool* served,
                        const std::vector<ModelTensor>**) {
  *served = false;
  return Status::Ok();
}
GraphStats ModelGraphs::stats() const { return GraphStats(); }

#else

namespace {

std::string cuda_text(cudaError_t e) { return std::string(cudaGetErrorName(e)) + " (" + cudaGetErrorString(e) + ")"; }

// `what` is a literal: replays call this on their hot path, where building a std::string per
// call would cost an allocation for nothing.
Status cuda_status(cudaError_t e, const char* what) {
  if (e == cudaSuccess) return Status::Ok();
  (void)cudaGetLastError();  // a non-sticky error must not be reported by the next call
  if (e == cudaErrorMemoryAllocation) return OutOfMemory(std::string(what) + ": " + cuda_text(e));
  return DeviceError(std::string(what) + ": " + cuda_text(e));
}
#define GRAPH_CUDA(call, what) WHARF_RETURN_IF_ERROR(cuda_status((call), (what)))

// The driver functions the runtime API has no equivalent for (kernel nodes launched through
// the driver API, as Triton kernels of compiled models are, and their parameter layouts).
struct Driver {
  CUresult (*kernel_get)(CUgraphNode, CUDA_KERNEL_NODE_PARAMS*) = nullptr;
  CUresult (*kernel_set)(CUgraphExec, CUgraphNode, const CUDA_KERNEL_NODE_PARAMS*) = nullptr;
  CUresult (*func_param)(CUfunction, size_t, size_t*, size_t*) = nullptr;
  CUresult (*kernel_param)(CUkernel, size_t, size_t*, size_t*) = nullptr;  // optional
  std::string missing;  // why graphs cannot be used, if a required one is missing
};

const Driver& driver() {
  static const Driver d = [] {
    Driver r;
    auto get = [&r](const char* name, unsigned version, void** fn, bool required) {
      cudaDriverEntryPointQueryResult q = cudaDriverEntryPointSymbolNotFound;
      cudaError_t e = cudaGetDriverEntryPointByVersion(name, fn, version, cudaEnableDefault, &q);
      if (e != cudaSuccess || q != cudaDriverEntryPointSuccess || !*fn) {
        (void)cudaGetLastError();
        *fn = nullptr;
        if (required && r.missing.empty())
          r.missing = std::string("the CUDA driver does not provide ") + name + " (CUDA " +
                      std::to_string(version / 1000) + "." + std::to_string(version % 1000 / 10) + " or newer)";
      }
    };
    get("cuGraphKernelNodeGetParams", 12000, reinterpret_cast<void**>(&r.kernel_get), true);
    get("cuGraphExecKernelNodeSetParams", 12000, reinterpret_cast<void**>(&r.kernel_set), true);
    get("cuFuncGetParamInfo", 12040, reinterpret_cast<void**>(&r.func_param), true);
    get("cuKernelGetParamInfo", 12040, reinterpret_cast<void**>(&r.kernel_param), false);
    return r;
  }();
  return d;
}

Status driver_status(CUresult r, const std::string& what) {
  if (r == CUDA_SUCCESS) return Status::Ok();
  return DeviceError(what + ": CUresult " + std::to_string(int(r)));
}

// Allocation made while a stream of this thread is being captured: the pool's allocator may
// synchronise its own stream, which ThreadLocal capture forbids on this thread; relaxed mode
// for the allocation only (what PyTorch's caching allocator does).
class RelaxedCaptureMode {
 public:
  RelaxedCaptureMode() { (void)cudaThreadExchangeStreamCaptureMode(&mode_); }
  ~RelaxedCaptureMode() { (void)cudaThreadExchangeStreamCaptureMode(&mode_); }

 private:
  cudaStreamCaptureMode mode_ = cudaStreamCaptureModeRelaxed;
};

using Clock = std::chrono::steady_clock;
uint64_t ns_between(Clock::time_point a, Clock::time_point z) {
  return uint64_t(std::chrono::duration_cast<std::chrono::nanoseconds>(z - a).count());
}

constexpr uint64_t kAlign = 256;
// Captures that may fail before a model stops capturing new shapes.
constexpr uint64_t kMaxCaptureFailures = 8;

// The graph pool: device memory (tag graph) the captures' intermediates, static inputs and
// outputs and scratch state come from. A freed block is reused by a later allocation of this
// or another bucket's capture: within a capture the stream orders the reuse after the last
// reader; between buckets, replays never overlap (one holder at a time, event-ordered).
struct Pool {
  std::shared_ptr<Runtime> runtime;
  uint64_t limit = 0;
  std::mutex mu;  // the shim frees from whichever thread drops a tensor
  std::vector<Buffer> buffers;
  std::multimap<uint64_t, void*> free_blocks;  // size -> block
  std::map<void*, uint64_t> sizes;
  uint64_t bytes = 0;
  std::string error;  // the last allocation failure

  Status alloc(uint64_t want, void** out) {
    *out = nullptr;
    if (want == 0) return Status::Ok();
    const uint64_t n = (want + kAlign - 1) / kAlign * kAlign;
    std::lock_guard<std::mutex> lock(mu);
    // The smallest free block that fits and wastes at most as much as it holds.
    auto it = free_blocks.lower_bound(n);
    if (it != free_blocks.end() && it->first <= 2 * n) {
      *out = it->second;
      free_blocks.erase(it);
      return Status::Ok();
    }
    if (limit && bytes + n > limit)
      return OutOfMemory("the graph pool holds " + std::to_string(bytes) + " bytes; " + std::to_string(n) +
                         " more would pass its limit of " + std::to_string(limit));
    Buffer b;
    {
      RelaxedCaptureMode relaxed;
      WHARF_RETURN_IF_ERROR(runtime->device().allocate(MemKind::kDevice, MemTag::kGraph, n, "graph pool", &b));
    }
    *out = b.data();
    sizes[b.data()] = n;
    bytes += n;
    buffers.push_back(std::move(b));
    return Status::Ok();
  }
  void free(void* p) {
    if (!p) return;
    std::lock_guard<std::mutex> lock(mu);
    auto it = sizes.find(p);
    if (it != sizes.end()) free_blocks.emplace(it->second, p);
  }
  // Gives every free block back to the device. Only when no graph exists: a free block may
  // be an intermediate a captured graph uses.
  void trim() {
    std::lock_guard<std::mutex> lock(mu);
    for (auto& [size, p] : free_blocks) {
      for (auto it = buffers.begin(); it != buffers.end(); ++it)
        if (it->data() == p) {
          buffers.erase(it);
          break;
        }
      sizes.erase(p);
      bytes -= size;
    }
    free_blocks.clear();
  }
  static int32_t shim_alloc(uint64_t bytes, void** out, void* user) {
    Pool* p = static_cast<Pool*>(user);
    Status st = p->alloc(bytes, out);
    if (st.ok()) return 0;
    std::lock_guard<std::mutex> lock(p->mu);
    p->error = st.message();
    return 1;
  }
  static void shim_free(void* ptr, uint64_t, void* user) { static_cast<Pool*>(user)->free(ptr); }
};

// One generation's folded constants (and the fold's temporaries), in the order the model's
// fold allocated them. With a `layout` (the sizes an earlier fold of this model allocated),
// one arena holds them all: one device allocation per generation instead of one per block.
struct FoldRecord {
  std::shared_ptr<Runtime> runtime;
  std::vector<void*> ptrs;
  std::vector<uint64_t> sizes;
  std::vector<Buffer> owned;  // the arena, or one buffer per block
  std::vector<uint64_t> layout, offsets;
  std::string error;

  uint64_t bytes() const {
    uint64_t n = 0;
    for (const Buffer& b : owned) n += b.size();
    return n;
  }
  // Prepares the arena for `layout` (empty: none).
  Status reserve(const std::vector<uint64_t>& l) {
    layout = l;
    uint64_t total = 0;
    for (uint64_t s : l) {
      offsets.push_back(total);
      total += (s + kAlign - 1) / kAlign * kAlign;
    }
    if (total == 0) return Status::Ok();
    Buffer b;
    WHARF_RETURN_IF_ERROR(
        runtime->device().allocate(MemKind::kDevice, MemTag::kConstants, total, "folded constants", &b));
    owned.push_back(std::move(b));
    return Status::Ok();
  }
  static int32_t shim_alloc(uint64_t bytes, void** out, void* user) {
    FoldRecord* r = static_cast<FoldRecord*>(user);
    const size_t i = r->sizes.size();
    void* p = nullptr;
    if (i < r->layout.size() && r->layout[i] == bytes && !r->owned.empty()) {
      p = bytes ? static_cast<char*>(r->owned[0].data()) + r->offsets[i] : nullptr;
    } else if (bytes > 0) {
      // Another layout than expected (the replay will refuse it) or none known yet.
      Buffer b;
      Status st = r->runtime->device().allocate(MemKind::kDevice, MemTag::kConstants, bytes, "folded constant", &b);
      if (!st.ok()) {
        r->error = st.message();
        return 1;
      }
      p = b.data();
      r->owned.push_back(std::move(b));
    }
    *out = p;
    r->sizes.push_back(bytes);
    r->ptrs.push_back(p);
    return 0;
  }
};

std::string shapes_text(const std::vector<ModelTensor>& inputs) {
  std::string s;
  for (const ModelTensor& t : inputs)
    s += (s.empty() ? "" : ", ") + std::string(dtype_name(t.meta.dtype)) + shape_string(t.meta.shape);
  return s;
}

// Whether `in` padded to bucket size b (-1: as they are) has the dtypes and shapes `want`.
bool shapes_match(const std::vector<TensorMeta>& want, const std::vector<ModelTensor>& in, const BucketSpec& spec,
                  int64_t b) {
  if (in.size() != want.size()) return false;
  for (size_t i = 0; i < in.size(); ++i) {
    const std::vector<int64_t>& have = in[i].meta.shape;
    const std::vector<int64_t>& w = want[i].shape;
    if (in[i].meta.dtype != want[i].dtype || have.size() != w.size()) return false;
    const int k = b >= 0 ? spec.inputs[i] : -1;
    for (size_t d = 0; d < have.size(); ++d)
      if (w[d] != (int(d) == k ? b : have[d])) return false;
  }
  return true;
}

const char* node_type_name(cudaGraphNodeType t) {
  switch (t) {
    case cudaGraphNodeTypeHost:
      return "host";
    case cudaGraphNodeTypeGraph:
      return "child graph";
    case cudaGraphNodeTypeMemAlloc:
      return "memory allocation";
    case cudaGraphNodeTypeMemFree:
      return "memory free";
    case cudaGraphNodeTypeExtSemaphoreSignal:
    case cudaGraphNodeTypeExtSemaphoreWait:
      return "external semaphore";
    case cudaGraphNodeTypeConditional:
      return "conditional";
    default:
      return "unknown";
  }
}

// The rows (slots) of a run's sessions in the arena tensors a capture binds as a whole:
// copied aside before the warm-up, which runs the model on them, and copied back after it (or
// when the capture fails before), so a capture leaves the sessions' state as it found it.
// The copy lives in a workspace buffer for the capture only (N sessions' state bytes).
class ArenaRows {
 public:
  ArenaRows(std::shared_ptr<Runtime> runtime, cudaStream_t stream) : runtime_(std::move(runtime)), stream_(stream) {}
  ~ArenaRows() {
    Status st = restore();
    if (!st.ok()) WHARF_LOG(kError, "graph capture: putting back the run's state arena rows: " + st.message());
  }
  void add(char* base, uint64_t nbytes) {
    if (nbytes) tensors_.push_back({base, nbytes});
  }
  Status save(const std::vector<int64_t>& slots) {
    uint64_t total = 0;
    for (const auto& t : tensors_) total += t.second * slots.size();
    if (total == 0) return Status::Ok();
    WHARF_RETURN_IF_ERROR(runtime_->device().allocate(MemKind::kDevice, MemTag::kWorkspace, total,
                                                      "graph capture: the run's state arena rows", &saved_));
    for (const auto& t : tensors_)
      for (int64_t slot : slots) copies_.push_back({t.first + uint64_t(slot) * t.second, t.second});
    char* p = static_cast<char*>(saved_.data());
    Status st;
    for (size_t i = 0; st.ok() && i < copies_.size(); p += copies_[i].second, ++i)
      st = cuda_status(cudaMemcpyAsync(p, copies_[i].first, copies_[i].second, cudaMemcpyDeviceToDevice, stream_),
                       "keeping the run's state arena rows");
    if (!st.ok()) {
      (void)cudaStreamSynchronize(stream_);  // nothing was written yet; the copies end before the buffer
      return st;
    }
    pending_ = true;
    return Status::Ok();
  }
  Status restore() {
    if (!pending_) return Status::Ok();
    pending_ = false;
    const char* p = static_cast<const char*>(saved_.data());
    Status st;
    for (size_t i = 0; st.ok() && i < copies_.size(); p += copies_[i].second, ++i)
      st = cuda_status(cudaMemcpyAsync(copies_[i].first, p, copies_[i].second, cudaMemcpyDeviceToDevice, stream_),
                       "putting back the run's state arena rows");
    // The copy is freed (and the replay enqueued) only once the rows are back.
    Status sync = cuda_status(cudaStreamSynchronize(stream_), "putting back the run's state arena rows");
    return st.ok() ? sync : st;
  }

 private:
  std::shared_ptr<Runtime> runtime_;
  cudaStream_t stream_;
  std::vector<std::pair<char*, uint64_t> > tensors_, copies_;
  Buffer saved_;
  bool pending_ = false;
};

}  // namespace

// A captured graph of one input shape. Owns its static inputs and outputs (pool blocks) and
// its instance; destroyed only when no replay can run (the Core synchronises first).
struct Bucket {
  Pool* pool = nullptr;
  Model::HandleDeleter del = nullptr;
  int64_t size = -1;               // along the bucket dimension (-1: an exact shape)
  std::vector<TensorMeta> inputs;  // dtypes and shapes (contiguous; the bucket's size)
  std::vector<void*> static_inputs;
  std::vector<uint64_t> input_bytes;
  unsigned gather_grid = 1;  // the gather node's blocks (graphs/gather.h)
  // Host inputs are packed into host_image and copied in one go to `staging` (a pool block;
  // input i at staging_off[i], room for the bucket's size), where the gather reads them.
  void* staging = nullptr;
  std::vector<uint64_t> staging_off;
  std::vector<uint8_t> host_image;
  std::vector<ModelTensor> outputs;  // views of the static outputs
  // A padded replay's outputs (views of the real rows), the holder's until its run ends.
  std::vector<ModelTensor> padded_outputs;
  std::vector<void*> output_handles;
  std::shared_ptr<Model::Instance> instance;  // captured on; kept: the graph may read its memory
  cudaGraph_t graph = nullptr;
  // A clone of `graph` the spare executable graph is instantiated from (by a prepare, on a
  // writer's thread: graph objects are not thread-safe, and replays use `graph`'s nodes).
  cudaGraph_t spare_graph = nullptr;
  struct NodeMeta {  // what the executable graphs share of a node (its handles are per Exec)
    cudaGraphNodeType type = cudaGraphNodeTypeEmpty;
    CUDA_KERNEL_NODE_PARAMS kernel{};
    size_t num_args = 0;  // kernel: its parameters
    cudaMemcpy3DParms copy{};
    cudaMemsetParams set{};
  };
  std::vector<NodeMeta> nodes;  // PatchPlan node i = nodes[i]
  // The executable graphs of this bucket: [0] instantiated at capture from `graph`, [1] the
  // spare, instantiated from `spare_graph` by the first prepare. Each remembers what its nodes
  // point at (its plan) and what its gather node holds; a replay takes the one needing the
  // fewest node sets (choose_exec). `busy`, `prepared` and `last_used` are guarded by the
  // Core's mutex; while `busy` a prepare owns the rest of that Exec (no replay touches it).
  struct Exec {
    cudaGraphExec_t exec = nullptr;
    PatchPlan plan;
    GatherParams gather;                    // what the gather node holds (not in the plan)
    cudaGraphNode_t gather_node = nullptr;  // null on the legacy path (per-input copies)
    std::vector<cudaGraphNode_t> handles;   // PatchPlan node i's handle in its graph
    std::vector<void*> args;                // scratch: kernel parameter pointers for one set
    bool busy = false;
    bool prepared = false;  // pointed by a prepare and not replayed since
    uint64_t last_used = 0;
  };
  static constexpr size_t kExecs = 2;
  Exec execs[kExecs];
  size_t newest = 0;  // the Exec the last replay used (guarded by the Core's mutex)
  std::vector<ExecCandidate> candidates = std::vector<ExecCandidate>(kExecs);  // scratch (Core's mutex)
  std::vector<uint64_t> fold_sizes;          // the fold layout the capture was bound to
  std::shared_ptr<FoldRecord> capture_fold;  // until the first replay re-points away from it
  GraphBucketStats stats;
  std::vector<uint64_t> bases;  // scratch for replays

  ~Bucket() {
    for (Exec& e : execs)
      if (e.exec) (void)cudaGraphExecDestroy(e.exec);
    if (spare_graph) (void)cudaGraphDestroy(spare_graph);
    if (graph) (void)cudaGraphDestroy(graph);
    for (void* h : output_handles) del(h);  // their pool blocks go back to the pool
    for (void* p : static_inputs) pool->free(p);
    pool->free(staging);
  }
  // Whether runs with these inputs replay this graph when padded to bucket size `b` (-1: as
  // they are): dtypes equal, shapes equal but for the bucket dimension, which is b.
  bool matches(const std::vector<ModelTensor>& in, const BucketSpec& spec, int64_t b) const {
    return size == b && shapes_match(inputs, in, spec, b);
  }
  // The gather of a run's inputs of size n (-1: exact) into this bucket's static inputs: host
  // inputs packed into host_image and copied to `staging` on `stream` (one copy), device ones
  // read where they are. *p: the gather's parameters.
  Status stage(const BucketSpec& spec, const std::vector<ModelTensor>& in, cudaStream_t stream, GatherParams* p) {
    if (in.size() > kMaxGatherInputs || in.size() != static_inputs.size())
      return Internal("the input gather takes " + std::to_string(static_inputs.size()) + " inputs (at most " +
                      std::to_string(kMaxGatherInputs) + "), not " + std::to_string(in.size()));
    p->count = uint32_t(in.size());
    uint64_t host_end = 0;
    for (size_t i = 0; i < in.size(); ++i) {
      GatherInput g = gather_geometry(spec, i, in[i].meta, size >= 0 ? size : 1);
      if (size < 0 || spec.inputs[i] < 0) {  // copied whole
        g = GatherInput();
        g.row_units = input_bytes[i];
      }
      const uint64_t bytes = in[i].meta.nbytes();
      if (bytes && g.row_units == 0)
        return FailedPrecondition("input " + std::to_string(i) + ": its rows are not whole bytes");
      g.dst = static_inputs[i];
      if (in[i].meta.device_type == DeviceType::kCuda) {
        g.src = in[i].data;
      } else {
        if (bytes) std::memcpy(host_image.data() + staging_off[i], in[i].data, bytes);
        g.src = static_cast<char*>(staging) + staging_off[i];
        host_end = staging_off[i] + bytes;
      }
      if (bytes == 0) g.outer = 0;  // nothing to copy
      gather_narrow(&g);
      p->in[i] = g;
    }
    for (size_t i = in.size(); i < kMaxGatherInputs; ++i) p->in[i] = GatherInput();
    if (host_end)
      return cuda_status(cudaMemcpyAsync(staging, host_image.data(), host_end, cudaMemcpyHostToDevice, stream),
                         "copying the host inputs");
    return Status::Ok();
  }
  // The candidates of choose_exec/choose_spare (under the Core's mutex).
  const std::vector<ExecCandidate>& exec_candidates() {
    for (size_t k = 0; k < kExecs; ++k)
      candidates[k] = {execs[k].exec ? &execs[k].plan : nullptr, execs[k].busy, execs[k].last_used};
    return candidates;
  }
  // Sets node n of executable graph `e` to `img` (PatchPlan::repoint's apply).
  Status apply(Exec& e, uint32_t n, const NodeImage& img) {
    const NodeMeta& m = nodes[n];
    const cudaGraphExec_t exec = e.exec;
    const cudaGraphNode_t node = e.handles[n];
    if (m.type == cudaGraphNodeTypeKernel) {
      if (e.args.size() < m.num_args) e.args.resize(m.num_args);
      for (size_t i = 0; i < m.num_args; ++i) e.args[i] = const_cast<uint8_t*>(img.bytes.data()) + img.params[i].offset;
      CUDA_KERNEL_NODE_PARAMS p = m.kernel;
      p.kernelParams = e.args.data();
      p.extra = nullptr;
      return driver_status(
          driver().kernel_set(reinterpret_cast<CUgraphExec>(exec), reinterpret_cast<CUgraphNode>(node), &p),
          "cuGraphExecKernelNodeSetParams");
    }
    uint64_t v0 = 0, v1 = 0;
    std::memcpy(&v0, img.bytes.data(), 8);
    if (m.type == cudaGraphNodeTypeMemcpy) {
      std::memcpy(&v1, img.bytes.data() + 8, 8);
      cudaMemcpy3DParms p = m.copy;
      p.srcPtr.ptr = reinterpret_cast<void*>(v0);
      p.dstPtr.ptr = reinterpret_cast<void*>(v1);
      return cuda_status(cudaGraphExecMemcpyNodeSetParams(exec, node, &p), "cudaGraphExecMemcpyNodeSetParams");
    }
    cudaMemsetParams p = m.set;
    p.dst = reinterpret_cast<void*>(v0);
    return cuda_status(cudaGraphExecMemsetNodeSetParams(exec, node, &p), "cudaGraphExecMemsetNodeSetParams");
  }
};

// The gather node's parameters for `p` (args: one slot the call reads).
cudaKernelNodeParams gather_node_params(const Bucket& b, const GatherParams& p, void** args) {
  args[0] = const_cast<GatherParams*>(&p);
  cudaKernelNodeParams kp{};
  kp.func = const_cast<void*>(gather_kernel());
  kp.gridDim = dim3(b.gather_grid, p.count ? p.count : 1);
  kp.blockDim = dim3(kGatherThreads);
  kp.sharedMemBytes = 0;
  kp.kernelParams = args;
  kp.extra = nullptr;
  return kp;
}

// One holder's worth of graphs: a pool and a graph per bucket. A set is held by one run at a
// time (from its replay until the run ends); concurrent runs use other sets.
struct GraphSet {
  Pool pool;
  // The last holder's run's end (Run::end_event: the event its run recorded once for its
  // generation and sessions too); null once it is known to have completed.
  std::shared_ptr<Event> released;
  bool held = false;
  // While held: the graphs, for the holder's release at its run's end (the model may be
  // freed first). Set and dropped under the Core's mutex.
  std::shared_ptr<ModelGraphs::Core> keep;
  // The instance its captures run on (each bucket keeps it too): shared by the set's buckets
  // so its kernels are loaded once, at the first warm-up. A set's replays never overlap, so
  // whatever the instance keeps between runs is never used by two of its graphs at once.
  // Dropped after a failed capture (its binding and folded state are then unknown).
  std::shared_ptr<Model::Instance> instance;
  // A model with offloaded layers: the set's own ring of offload slots (tag offload), which
  // its instance is bound to and its graphs copy the layers into. Only the set's replays use
  // it, and they never overlap, so a replay needs nothing of the offloader's.
  Buffer offload_ring;
  std::vector<std::unique_ptr<Bucket> > buckets;
  ~GraphSet() {
    buckets.clear();  // their blocks go back to the pool first
  }
  uint64_t pool_bytes() {
    std::lock_guard<std::mutex> l(pool.mu);
    return pool.bytes;
  }
  Bucket* find(const std::vector<ModelTensor>& inputs, const BucketSpec& spec, int64_t size) {
    for (auto& x : buckets)
      if (x->matches(inputs, spec, size)) return x.get();
    return nullptr;
  }
};

struct ModelGraphs::Core {
  // Installs a shim allocator on this thread for the scope.
  class AllocatorScope {
   public:
    AllocatorScope(Model& m, const wharf_aoti_allocator& a) : m_(m) { m_.graph_set_allocator(&a); }
    ~AllocatorScope() { m_.graph_set_allocator(nullptr); }

   private:
    Model& m_;
  };

  Model* model = nullptr;  // valid inside run() (the caller came through the model)
  std::shared_ptr<Runtime> runtime;
  GraphOptions opts;
  BucketSpec spec;      // the bucket dimension and sizes (none: exact shapes)
  bool legacy = false;  // the replay path before buckets (per-input copies; exact shapes)
  std::string name;
  int device = 0;

  // Prepares (writers' threads) take prepare_mu, then mu only to read and publish.
  mutable Mutex prepare_mu;
  bool closed WHARF_GUARDED_BY(prepare_mu) = false;  // the ModelGraphs (and `model`) are gone
  cudaStream_t prepare_stream WHARF_GUARDED_BY(prepare_mu) = nullptr;
  std::shared_ptr<Model::Instance> prepare_instance WHARF_GUARDED_BY(prepare_mu);  // a prepare's folds

  mutable Mutex mu;
  cudaStream_t capture_stream WHARF_GUARDED_BY(mu) = nullptr;
  // capture_stream as a Stream, for the offloader (a model with offloaded layers).
  std::unique_ptr<Stream> capture_wrapped WHARF_GUARDED_BY(mu);
  uint64_t replay_clock WHARF_GUARDED_BY(mu) = 0;  // Exec::last_used
  // Sets are created as concurrent runs need them (up to opts.max_concurrent), never removed
  // before the Core: a run's at_end may point at its set.
  std::vector<std::unique_ptr<GraphSet> > sets WHARF_GUARDED_BY(mu);
  struct Failure {
    std::vector<TensorMeta> key;  // the inputs' dtypes and shapes (padded to `size`)
    int64_t size = -1;            // the bucket (-1: an exact shape)
    std::string why;
  };
  std::vector<Failure> failed WHARF_GUARDED_BY(mu);   // captures that failed: not tried again
  std::string last_failure WHARF_GUARDED_BY(mu);      // why the last capture failed
  std::string no_more_captures WHARF_GUARDED_BY(mu);  // set: new shapes run eagerly, this is why
  std::shared_ptr<Model::Instance> fold_instance WHARF_GUARDED_BY(mu);
  std::vector<std::pair<std::weak_ptr<Generation>, std::shared_ptr<FoldRecord> > > folds WHARF_GUARDED_BY(mu);
  GraphStats stats WHARF_GUARDED_BY(mu);
  std::vector<uint64_t> arena_bases WHARF_GUARDED_BY(mu);  // per binding: a whole-arena state's address (0: not yet)
  // Per recent session: its state addresses by binding (bases_for).
  struct SessionBases {
    std::weak_ptr<Session> session;
    std::vector<uint64_t> bases;
  };
  static constexpr size_t kSessionCache = 16;
  std::vector<SessionBases> session_cache WHARF_GUARDED_BY(mu);
  size_t session_evict WHARF_GUARDED_BY(mu) = 0;

  const uint64_t* session_bases_of(const Run& run) WHARF_REQUIRES(mu) {
    const std::shared_ptr<Session>& s = run.session();
    if (!s) return nullptr;
    for (const SessionBases& e : session_cache)
      if (!e.session.owner_before(s) && !s.owner_before(e.session)) return e.bases.data();
    return nullptr;
  }
  void remember_session(const std::shared_ptr<Session>& s, std::vector<uint64_t> bases) WHARF_REQUIRES(mu) {
    for (SessionBases& e : session_cache)
      if (e.session.expired()) {
        e = {s, std::move(bases)};
        return;
      }
    if (session_cache.size() < kSessionCache) {
      session_cache.push_back({s, std::move(bases)});
      return;
    }
    session_cache[session_evict++ % kSessionCache] = {s, std::move(bases)};
  }

  ~Core() {
    // Replays may still run: wait before their graphs and memory go.
    (void)cudaSetDevice(device);
    Status st = runtime->device().synchronize();
    if (!st.ok()) WHARF_LOG(kError, "model " + quote_name(name) + ": graphs: waiting for the device: " + st.message());
    {
      MutexLock lock(mu);
      sets.clear();
      capture_wrapped.reset();  // does not own the stream
      if (capture_stream) (void)cudaStreamDestroy(capture_stream);
    }
    MutexLock lock(prepare_mu);
    if (prepare_stream) (void)cudaStreamDestroy(prepare_stream);
  }

  void eager(const std::string& why) WHARF_REQUIRES(mu) {
    ++stats.eager_runs;
    if (stats.last_eager_reason != why) {
      WHARF_LOG(kInfo, "model " + quote_name(name) + ": runs eagerly: " + why);
      stats.last_eager_reason = why;
    }
  }

  Status fold_for(Run& run, Bucket& b, std::shared_ptr<FoldRecord>* out) WHARF_REQUIRES(mu);
  // The fold record of `gen` (null: none yet); drops those of generations gone (into *dead
  // when given, for the caller to free after the lock: freeing may wait for the device).
  std::shared_ptr<FoldRecord> find_fold(const std::shared_ptr<Generation>& gen,
                                        std::vector<std::shared_ptr<FoldRecord> >* dead = nullptr) WHARF_REQUIRES(mu);
  // Folds the constants `tensor` gives (by container constant index) on `inst`, on `stream`,
  // into a new record laid out as `layout`.
  Status fold_into_record(Model::Instance& inst, const std::function<Status(int, BoundTensor*)>& tensor,
                          const std::vector<uint64_t>& layout, cudaStream_t stream, std::shared_ptr<FoldRecord>* out);
  // fold_into_record on the graphs' fold instance (made at first use; dropped after a failed
  // fold, whose binding and folded state are unknown), serving path and captures alike.
  Status fold_on_fold_instance(const std::function<Status(int, BoundTensor*)>& tensor,
                               const std::vector<uint64_t>& layout, cudaStream_t stream,
                               std::shared_ptr<FoldRecord>* out) WHARF_REQUIRES(mu);
  // The constants of `gen` by container constant index, for fold_into_record.
  std::function<Status(int, BoundTensor*)> generation_tensors(const std::shared_ptr<Generation>& gen) const;
  // The listener's call: folds `gen` and points each bucket's spare executable graph at it.
  void prepare(const std::shared_ptr<Generation>& gen) WHARF_EXCLUDES(mu, prepare_mu);
  // The bases a prepare points bucket b's spare at: `gen`'s constants, `fold`'s blocks, and
  // the state the bucket's newest executable graph points at (the session served last).
  // False when `gen` lacks a bound constant or the fold's layout differs.
  bool prepared_bases(const Bucket& b, const Generation& gen, const FoldRecord* fold, std::vector<uint64_t>* bases)
      WHARF_REQUIRES(mu);
  // Captures the graph of bucket size `size` (-1: the inputs' exact shapes) for these inputs.
  Status capture(Run& run, GraphSet& set, const std::vector<ModelTensor>& inputs, int64_t size,
                 std::unique_ptr<Bucket>* out) WHARF_REQUIRES(mu);
  // capture() with the failure bookkeeping; null when it failed (the reason counted).
  Bucket* capture_bucket(Run& run, GraphSet& set, const std::vector<ModelTensor>& inputs, int64_t size)
      WHARF_REQUIRES(mu);
  // Why the capture for these inputs at bucket `size` failed before, or null.
  const std::string* failure_of(const std::vector<ModelTensor>& inputs, int64_t size) const WHARF_REQUIRES(mu);
  // A set no open run holds, created if fewer than opts.max_concurrent exist; null if none.
  Status free_set(GraphSet** out) WHARF_REQUIRES(mu);
  Status bases_for(Run& run, Bucket& b, const FoldRecord* fold, std::vector<uint64_t>* bases) WHARF_REQUIRES(mu);
  // bases_for's folded-constant blocks, from index r on.
  Status folded_bases(Run& run, Bucket& b, const FoldRecord* fold, size_t r, std::vector<uint64_t>* bases)
      WHARF_REQUIRES(mu);
  // The replay of `b` for `run` (bound, inputs gathered, launched); *served as ModelGraphs::run.
  // `entered`: when run() was called; `captured`: whether this run captured a graph (its
  // choice of graph is then not a replay's host time).
  Status replay(Run& run, GraphSet& set, Bucket& b, const std::vector<ModelTensor>& inputs, int64_t n,
                std::vector<ModelTensor>* outputs, const std::vector<ModelTensor>** held, bool* served,
                const std::shared_ptr<Core>& self, Clock::time_point entered, bool captured) WHARF_REQUIRES(mu);
};

// The container's listener (held weakly there): a prepare per staged generation.
struct ModelGraphs::Listener : GenerationListener {
  std::shared_ptr<Core> core;
  void generation_staged(const std::shared_ptr<Generation>& gen) override { core->prepare(gen); }
};

Status ModelGraphs::create(Model* model, const GraphOptions& opts, std::unique_ptr<ModelGraphs>* out) {
  std::string why;
  if (!model->graph_supported(&why)) return Unsupported("model " + quote_name(model->name_) + ": CUDA graphs: " + why);
  if (!driver().missing.empty())
    return Unsupported("model " + quote_name(model->name_) + ": CUDA graphs: " + driver().missing);
  if (model->runtime_->backend() != Backend::kCuda)
    return Unsupported("model " + quote_name(model->name_) + ": CUDA graphs need the CUDA backend");
  auto core = std::make_shared<Core>();
  core->model = model;
  core->runtime = model->runtime_;
  core->opts = opts;
  std::optional<bool> legacy_env;
  WHARF_RETURN_IF_ERROR(env_switch("WHARF_GRAPHS_LEGACY_REPLAY", &legacy_env)
                            .with_context("model " + quote_name(model->name_) + ": CUDA graphs"));
  // The gather node takes at most kMaxGatherInputs inputs: a model with more keeps the copy
  // per input (and exact shapes).
  const bool many_inputs = model->num_inputs() > kMaxGatherInputs;
  core->legacy = opts.legacy_replay || legacy_env.value_or(false) || many_inputs;
  if (!core->legacy)
    WHARF_RETURN_IF_ERROR(resolve_buckets(model->name_, model->dims(), model->num_inputs(), opts.bucket_dim,
                                          opts.bucket_sizes, opts.exact_shapes, &core->spec));
  else if (!opts.bucket_dim.empty() || !opts.bucket_sizes.empty())
    return InvalidArgument("model " + quote_name(model->name_) + ": graph buckets: " +
                           (many_inputs ? "the model has " + std::to_string(model->num_inputs()) +
                                              " inputs; padding handles at most " + std::to_string(kMaxGatherInputs)
                                        : std::string("the legacy replay path (WHARF_GRAPHS_LEGACY_REPLAY) has exact "
                                                      "shapes only")));
  core->name = model->name_;
  core->device = model->runtime_->device().index();
  if (core->opts.max_concurrent == 0) core->opts.max_concurrent = 1;
  {
    MutexLock lock(core->mu);
    GRAPH_CUDA(cudaSetDevice(core->device), "cudaSetDevice");
    GRAPH_CUDA(cudaStreamCreateWithFlags(&core->capture_stream, cudaStreamNonBlocking), "creating the capture stream");
    if (model->offloader_)
      WHARF_RETURN_IF_ERROR(core->runtime->device().wrap_stream(core->capture_stream, &core->capture_wrapped));
  }
  {
    MutexLock lock(core->prepare_mu);
    GRAPH_CUDA(cudaStreamCreateWithFlags(&core->prepare_stream, cudaStreamNonBlocking), "creating the prepare stream");
  }
  std::shared_ptr<Container> container = model->container_;
  auto listener = std::make_shared<Listener>();
  listener->core = core;
  std::unique_ptr<ModelGraphs> g(new ModelGraphs(std::move(core)));
  g->listener_ = listener;
  container->add_listener(listener);
  *out = std::move(g);
  return Status::Ok();
}

ModelGraphs::~ModelGraphs() {
  // A prepare uses the model: wait for one in progress, and refuse later ones (the container
  // may still hold the listener for a moment through a call that locked it).
  MutexLock lock(core_->prepare_mu);
  core_->closed = true;
}

GraphStats ModelGraphs::stats() const {
  MutexLock lock(core_->mu);
  GraphStats s = core_->stats;
  s.pool_bytes = 0;
  for (const auto& set : core_->sets) s.pool_bytes += set->pool_bytes();
  s.folded_bytes = 0;
  for (const auto& f : core_->folds)
    if (!f.first.expired()) s.folded_bytes += f.second->bytes();
  s.buckets.clear();
  for (const auto& set : core_->sets)
    for (const auto& b : set->buckets) s.buckets.push_back(b->stats);
  s.bucket_dim = core_->spec.dim;
  s.bucket_sizes = core_->spec.sizes;
  return s;
}

Status ModelGraphs::Core::bases_for(Run& run, Bucket& b, const FoldRecord* fold, std::vector<uint64_t>* bases) {
  const auto& bindings = model->bindings_;
  bases->resize(b.execs[0].plan.num_ranges());
  size_t r = 0;
  if (legacy) {
    // The path before the caches (A/B): every binding resolved through the run's views.
    for (const auto& binding : bindings) {
      BoundTensor t;
      if (binding.constant >= 0)
        WHARF_RETURN_IF_ERROR(run.tensor_at(binding.constant, &t));
      else if (binding.whole_arena)
        WHARF_RETURN_IF_ERROR(run.arena_state_at(binding.state, &t));
      else
        WHARF_RETURN_IF_ERROR(run.state_at(binding.state, &t));
      (*bases)[r++] = reinterpret_cast<uint64_t>(t.data);
    }
    return folded_bases(run, b, fold, r, bases);
  }
  const Generation& gen = *run.pinned_generation();
  if (arena_bases.size() != bindings.size()) arena_bases.assign(bindings.size(), 0);
  // The session's state addresses, resolved once per session (Session::find is a string
  // lookup under the session's lock, per state per step): a session's buffers are allocated
  // before its first run begins and never move after, and the cache's weak_ptr keeps the
  // session's identity from being reused while it is cached.
  const uint64_t* sess = session_bases_of(run);
  std::vector<uint64_t> fresh;  // resolved now (no cached entry), kept for the next runs
  for (size_t i = 0; i < bindings.size(); ++i) {
    const auto& binding = bindings[i];
    if (binding.constant >= 0) {
      // What Run::tensor_at resolves, without the rest of its view (per step, per constant):
      // the slot of the run's pinned generation.
      const std::shared_ptr<Slot>& slot = gen.slots[size_t(binding.constant)];
      if (!slot)
        return FailedPrecondition("constant " + quote_name(model->container_->decls()[size_t(binding.constant)].fqn) +
                                  " has no storage in generation " + std::to_string(run.generation()));
      (*bases)[r++] = reinterpret_cast<uint64_t>(slot->data());
      continue;
    }
    BoundTensor t;
    if (binding.whole_arena) {  // fixed for the arena's life (the container's): resolved once
      if (!arena_bases[i]) {
        WHARF_RETURN_IF_ERROR(run.arena_state_at(binding.state, &t));
        arena_bases[i] = reinterpret_cast<uint64_t>(t.data);
      }
      (*bases)[r++] = arena_bases[i];
      continue;
    }
    if (sess) {
      (*bases)[r++] = sess[i];
      continue;
    }
    WHARF_RETURN_IF_ERROR(run.state_at(binding.state, &t));
    if (fresh.empty()) fresh.assign(bindings.size(), 0);
    fresh[i] = reinterpret_cast<uint64_t>(t.data);
    (*bases)[r++] = fresh[i];
  }
  if (!fresh.empty() && run.session()) remember_session(run.session(), std::move(fresh));
  return folded_bases(run, b, fold, r, bases);
}

Status ModelGraphs::Core::folded_bases(Run& run, Bucket& b, const FoldRecord* fold, size_t r,
                                       std::vector<uint64_t>* bases) {
  const size_t nf = b.fold_sizes.size();
  if (nf) {
    if (!fold || fold->sizes != b.fold_sizes)
      return FailedPrecondition("the folded constants of generation " + std::to_string(run.generation()) +
                                " are laid out unlike those the graph was captured with");
    for (size_t j = 0; j < nf; ++j) (*bases)[r++] = reinterpret_cast<uint64_t>(fold->ptrs[j]);
  }
  return Status::Ok();
}

std::shared_ptr<FoldRecord> ModelGraphs::Core::find_fold(const std::shared_ptr<Generation>& gen,
                                                         std::vector<std::shared_ptr<FoldRecord> >* dead) {
  // Generations gone: their folded constants go (their runs have completed).
  // (A partition, not remove_if: moving over a gone record would free it here.)
  auto gone = std::partition(folds.begin(), folds.end(), [](const auto& f) { return !f.first.expired(); });
  if (dead)
    for (auto it = gone; it != folds.end(); ++it) dead->push_back(std::move(it->second));
  folds.erase(gone, folds.end());
  for (const auto& f : folds)
    if (!f.first.owner_before(gen) && !gen.owner_before(f.first)) return f.second;
  return nullptr;
}

Status ModelGraphs::Core::fold_into_record(Model::Instance& inst,
                                           const std::function<Status(int, BoundTensor*)>& tensor,
                                           const std::vector<uint64_t>& layout, cudaStream_t stream,
                                           std::shared_ptr<FoldRecord>* out) {
  // An instance bound to the generation's parameters only.
  std::vector<BoundTensor> tensors(model->bindings_.size());
  for (size_t i = 0; i < tensors.size(); ++i)
    if (model->bindings_[i].constant >= 0) WHARF_RETURN_IF_ERROR(tensor(model->bindings_[i].constant, &tensors[i]));
  WHARF_RETURN_IF_ERROR(model->bind_tensors(inst, tensors));
  auto rec = std::make_shared<FoldRecord>();
  rec->runtime = runtime;
  WHARF_RETURN_IF_ERROR(rec->reserve(layout));
  {
    wharf_aoti_allocator a{sizeof(wharf_aoti_allocator), &FoldRecord::shim_alloc, nullptr, rec.get()};
    AllocatorScope scope(*model, a);
    Status st = model->graph_fold(inst, stream);
    if (!st.ok()) return st.with_context(rec->error.empty() ? std::string("folding for the graphs") : rec->error);
  }
  *out = std::move(rec);
  return Status::Ok();
}

Status ModelGraphs::Core::fold_on_fold_instance(const std::function<Status(int, BoundTensor*)>& tensor,
                                                const std::vector<uint64_t>& layout, cudaStream_t stream,
                                                std::shared_ptr<FoldRecord>* out) {
  if (!fold_instance) WHARF_RETURN_IF_ERROR(model->graph_instance(1, &fold_instance));
  Status st = fold_into_record(*fold_instance, tensor, layout, stream, out);
  if (!st.ok()) fold_instance.reset();
  return st;
}

Status ModelGraphs::Core::fold_for(Run& run, Bucket& b, std::shared_ptr<FoldRecord>* out) {
  out->reset();
  if (b.fold_sizes.empty()) return Status::Ok();
  const std::shared_ptr<Generation>& gen = run.pinned_generation();
  *out = find_fold(gen);  // a prepare's, or an earlier replay's
  if (*out) return Status::Ok();
  // First replay on this generation and no prepare made its record: fold its constants once,
  // on the run's stream, into memory owned for it (a fold instance bound to its parameters).
  std::shared_ptr<FoldRecord> rec;
  WHARF_RETURN_IF_ERROR(fold_on_fold_instance([&run](int c, BoundTensor* t) { return run.tensor_at(c, t); },
                                              b.fold_sizes, static_cast<cudaStream_t>(run.stream().native_handle()),
                                              &rec));
  ++stats.folds;
  ++stats.replay_folds;
  folds.emplace_back(gen, rec);
  *out = std::move(rec);
  return Status::Ok();
}

bool ModelGraphs::Core::prepared_bases(const Bucket& b, const Generation& gen, const FoldRecord* fold,
                                       std::vector<uint64_t>* bases) {
  const PatchPlan& now = b.execs[b.newest].plan;
  const auto& bindings = model->bindings_;
  bases->assign(now.current().begin(), now.current().end());
  if (bases->size() != bindings.size() + b.fold_sizes.size()) return false;
  for (size_t i = 0; i < bindings.size(); ++i) {
    const int c = bindings[i].constant;
    if (c < 0) continue;  // state: where the graph serving now points (the session served last)
    if (size_t(c) >= gen.slots.size() || !gen.slots[size_t(c)]) return false;
    (*bases)[i] = reinterpret_cast<uint64_t>(gen.slots[size_t(c)]->data());
  }
  if (!b.fold_sizes.empty()) {
    if (!fold || fold->sizes != b.fold_sizes) return false;
    for (size_t j = 0; j < b.fold_sizes.size(); ++j)
      (*bases)[bindings.size() + j] = reinterpret_cast<uint64_t>(fold->ptrs[j]);
  }
  return true;
}

std::function<Status(int, BoundTensor*)> ModelGraphs::Core::generation_tensors(
    const std::shared_ptr<Generation>& gen) const {
  Container& c = *model->container_;
  return [&c, gen](int index, BoundTensor* out) -> Status {
    const ConstantDecl& d = c.decls()[size_t(index)];
    const std::shared_ptr<Slot>& slot = gen->slots[size_t(index)];
    if (!slot) return FailedPrecondition("constant " + quote_name(d.fqn) + " has no storage in the generation");
    out->data = slot->data();
    out->dtype = d.dtype;
    out->shape = &d.shape;
    out->nbytes = d.nbytes;
    out->read_only = true;
    out->device_type = c.device_type_of(d.placement);
    out->device_index = out->device_type == DeviceType::kCuda ? c.runtime().device().index() : 0;
    return Status::Ok();
  };
}

void ModelGraphs::Core::prepare(const std::shared_ptr<Generation>& gen) {
  MutexLock prep(prepare_mu);
  if (closed || legacy || !gen) return;
  const Clock::time_point t0 = Clock::now();
  // Records to free once the graphs' mutex is released (declared first: freed last).
  std::vector<std::shared_ptr<FoldRecord> > dropped;
  // The writer's thread gets its current device back.
  struct RestoreDevice {
    int device = -1;
    RestoreDevice() {
      if (cudaGetDevice(&device) != cudaSuccess) {
        (void)cudaGetLastError();
        device = -1;
      }
    }
    ~RestoreDevice() {
      if (device >= 0) (void)cudaSetDevice(device);
    }
  } restore_device;
  // What there is to prepare: the fold layout of the captured graphs, and whether the
  // generation has its record already (a generation staged twice, or served meanwhile).
  std::vector<uint64_t> layout;
  std::shared_ptr<FoldRecord> rec;
  {
    MutexLock lock(mu);
    bool any = false;
    for (const auto& set : sets)
      for (const auto& b : set->buckets) {
        any = true;
        if (layout.empty()) layout = b->fold_sizes;
      }
    if (!any) return;  // nothing captured yet: the first capture folds and binds anyway
    rec = find_fold(gen, &dropped);
  }
  // The fold, on this thread and the prepare stream, done before the record is published.
  Status st;
  uint64_t fold_ns = 0;
  bool folded = false;
  if (!layout.empty() && !rec) {
    const Clock::time_point f0 = Clock::now();
    const auto tensor = generation_tensors(gen);
    st = cuda_status(cudaSetDevice(device), "cudaSetDevice");
    if (st.ok() && opts.test_fail_prepare_fold) st = Internal("a failed fold (GraphOptions::test_fail_prepare_fold)");
    if (st.ok() && !prepare_instance) st = model->graph_instance(1, &prepare_instance);
    if (st.ok()) st = fold_into_record(*prepare_instance, tensor, layout, prepare_stream, &rec);
    if (st.ok()) st = cuda_status(cudaStreamSynchronize(prepare_stream), "waiting for the fold");
    if (!st.ok()) {
      prepare_instance.reset();  // its binding and folded state are unknown now
      rec.reset();
    }
    folded = st.ok();
    fold_ns = ns_between(f0, Clock::now());
  }
  // Publish the record; choose each bucket's spare and mark it busy (replays take the other).
  struct Job {
    Bucket* b = nullptr;
    size_t k = 0;
    std::vector<uint64_t> bases;
    size_t applied = 0;
    uint64_t instantiate_ns = 0;
    int64_t exec_bytes = 0;
    bool instantiated = false;
    Status st;
  };
  std::vector<Job> jobs;
  {
    MutexLock lock(mu);
    if (folded) {
      if (std::shared_ptr<FoldRecord> have = find_fold(gen, &dropped)) {
        dropped.push_back(std::move(rec));
        rec = std::move(have);  // a replay folded it meanwhile: its record is the one in use
      } else {
        folds.emplace_back(gen, rec);
        ++stats.folds;
        ++stats.prepare_folds;
      }
      stats.prepare_fold_ns += fold_ns;
    }
    if (!st.ok()) {
      ++stats.prepare_failures;
      stats.prepare_ns += ns_between(t0, Clock::now());
      const std::string why =
          "preparing for a new generation: " + st.message() + "; its first replay folds and re-points instead";
      if (stats.last_prepare_failure != why) WHARF_LOG(kWarn, "model " + quote_name(name) + ": graphs: " + why);
      stats.last_prepare_failure = why;
      return;
    }
    for (const auto& set : sets)
      for (const auto& b : set->buckets) {
        if (!b->spare_graph) continue;
        const int k = choose_spare(b->exec_candidates());
        if (k < 0) continue;
        Job j;
        j.b = b.get();
        j.k = size_t(k);
        if (!prepared_bases(*b, *gen, rec.get(), &j.bases)) continue;
        b->execs[j.k].busy = true;
        jobs.push_back(std::move(j));
      }
  }
  // Instantiate and point the spares, without the Core's mutex (replays go on meanwhile).
  if (!jobs.empty()) {
    Status dev = cuda_status(cudaSetDevice(device), "cudaSetDevice");
    for (Job& j : jobs) j.st = dev;
  }
  for (Job& j : jobs) {
    if (!j.st.ok()) continue;
    Bucket& b = *j.b;
    Bucket::Exec& e = b.execs[j.k];
    if (!e.exec) {
      size_t free_before = 0, free_after = 0, total = 0;
      (void)cudaMemGetInfo(&free_before, &total);
      const Clock::time_point i0 = Clock::now();
      j.st = cuda_status(cudaGraphInstantiate(&e.exec, b.spare_graph, 0), "instantiating the spare graph");
      j.instantiate_ns = ns_between(i0, Clock::now());
      (void)cudaMemGetInfo(&free_after, &total);
      j.exec_bytes = int64_t(free_before) - int64_t(free_after);
      j.instantiated = j.st.ok();
      if (!j.st.ok()) e.exec = nullptr;
    }
    if (j.st.ok())
      j.st = e.plan.repoint(
          j.bases, [&b, &e](uint32_t n, const NodeImage& img) { return b.apply(e, n, img); }, &j.applied);
  }
  MutexLock lock(mu);
  for (Job& j : jobs) {
    Bucket::Exec& e = j.b->execs[j.k];
    e.busy = false;
    e.prepared = j.st.ok();
    stats.nodes_prepointed += j.applied;
    if (j.instantiated) {
      ++stats.spare_execs;
      stats.spare_instantiate_ns += j.instantiate_ns;
      stats.spare_exec_bytes += j.exec_bytes;
    }
    if (!j.st.ok()) {
      // Its plan forgot what the graph holds (the next use re-points every node), or it was
      // not instantiated: replays use the other one.
      const std::string why = "pointing a spare graph of inputs " + j.b->stats.shapes +
                              " at a new generation: " + j.st.message() + "; replays re-point instead";
      if (stats.last_prepare_failure != why) WHARF_LOG(kWarn, "model " + quote_name(name) + ": graphs: " + why);
      stats.last_prepare_failure = why;
    }
  }
  ++stats.prepares;
  stats.prepare_ns += ns_between(t0, Clock::now());
}

Status ModelGraphs::Core::free_set(GraphSet** out) {
  *out = nullptr;
  for (auto& set : sets)
    if (!set->held) {
      *out = set.get();
      return Status::Ok();
    }
  if (sets.size() >= opts.max_concurrent) return Status::Ok();
  auto set = std::make_unique<GraphSet>();
  set->pool.runtime = runtime;
  set->pool.limit = opts.max_pool_bytes;
  sets.push_back(std::move(set));
  *out = sets.back().get();
  return Status::Ok();
}

Status ModelGraphs::Core::capture(Run& run, GraphSet& set, const std::vector<ModelTensor>& inputs, int64_t size,
                                  std::unique_ptr<Bucket>* out) {
  Pool& pool = set.pool;
  const auto t0 = std::chrono::steady_clock::now();
  const uint64_t pool_before = [&] {
    std::lock_guard<std::mutex> l(pool.mu);
    return pool.bytes;
  }();
  GRAPH_CUDA(cudaSetDevice(device), "cudaSetDevice");
  auto b = std::make_unique<Bucket>();
  b->pool = &pool;
  b->del = model->graph_handle_deleter();
  b->size = size;
  cudaStream_t cap = capture_stream;
  cudaStream_t rs = static_cast<cudaStream_t>(run.stream().native_handle());
  std::vector<void*> scratch;  // pool blocks returned to the pool whatever happens
  struct Return {
    Pool& pool;
    std::vector<void*>& blocks;
    cudaStream_t s;
    ~Return() {
      (void)cudaStreamSynchronize(s);  // the warm-up may still use them
      for (void* p : blocks) pool.free(p);
    }
  } give_back{pool, scratch, cap};
  // The capture stream starts after the last replay of any bucket (the warm-up reuses pool
  // blocks other graphs use as intermediates) and after what the run's stream did so far.
  if (set.released)  // the run's stream waits, and the capture stream waits for the run's stream below
    WHARF_RETURN_IF_ERROR(run.stream().wait(*set.released).with_context("waiting for the graphs' last run"));
  {
    cudaEvent_t e = nullptr;
    GRAPH_CUDA(cudaEventCreateWithFlags(&e, cudaEventDisableTiming), "creating an event");
    cudaError_t r1 = cudaEventRecord(e, rs);
    cudaError_t r2 = r1 == cudaSuccess ? cudaStreamWaitEvent(cap, e, 0) : r1;
    (void)cudaEventDestroy(e);
    GRAPH_CUDA(r2, "ordering the capture stream after the run's stream");
  }
  // The set's instance (two models, so the explicit fold below leaves one available to
  // AOTInductorModelContainerRunSingleThreaded, which queries no event: legal in a capture).
  struct DropInstanceOnFailure {
    GraphSet& set;
    bool done = false;
    ~DropInstanceOnFailure() {
      if (!done) set.instance.reset();
    }
  } drop_instance{set};
  if (!set.instance) WHARF_RETURN_IF_ERROR(model->graph_instance(2, &set.instance));
  b->instance = set.instance;
  // Offloaded layers: the set's ring (allocated at its first capture, kept with the set;
  // zeroed, as the warm-up reads it without copies).
  const Offloader* offloader = model->offloader_.get();
  if (offloader && !set.offload_ring.data()) {
    WHARF_RETURN_IF_ERROR(runtime->device().allocate(MemKind::kDevice, MemTag::kOffload, offloader->ring_bytes(),
                                                     "the offload slots of a set of graphs", &set.offload_ring));
    GRAPH_CUDA(cudaMemsetAsync(set.offload_ring.data(), 0, set.offload_ring.size(), cap), "zeroing the offload slots");
  }
  char* ring = offloader ? static_cast<char*>(set.offload_ring.data()) : nullptr;
  Model::GraphOffload offload;
  offload.run = &run;
  offload.stream = capture_wrapped.get();
  offload.ring = ring;
  const Model::GraphOffload* offload_ptr = offloader ? &offload : nullptr;
  const auto& bindings = model->bindings_;
  std::vector<BoundTensor> tensors(bindings.size());
  std::vector<GraphRange> ranges;
  const auto& states = model->container_->states();
  ArenaRows rows(runtime, cap);
  for (size_t i = 0; i < bindings.size(); ++i) {
    const auto& binding = bindings[i];
    GraphRange r;
    if (binding.constant >= 0) {
      WHARF_RETURN_IF_ERROR(run.tensor_at(binding.constant, &tensors[i]));
      r.what = "constant " + quote_name(model->container_->decls()[size_t(binding.constant)].fqn);
      if (binding.offload_layer >= 0) {
        // An offloaded constant: the graph's copy nodes read its host storage in the run's
        // generation (a range, re-pointed per replay like a device constant's); the kernels
        // read its slot in the set's ring (a fixed address, bound here).
        r.base = reinterpret_cast<uint64_t>(tensors[i].data);
        r.bytes = tensors[i].nbytes;
        r.what += " (its host storage, which the offload copies read)";
        ranges.push_back(std::move(r));
        WHARF_RETURN_IF_ERROR(model->binding_tensor(binding, run, &tensors[i], ring));
        continue;
      }
    } else if (binding.whole_arena) {
      // The arena itself, not a scratch copy (that would hold the whole arena's bytes in every
      // set's pool): the warm-up may write only the run's own rows, kept and put back below.
      WHARF_RETURN_IF_ERROR(run.arena_state_at(binding.state, &tensors[i]));
      const StateDecl& sd = states[size_t(binding.state)];
      rows.add(static_cast<char*>(tensors[i].data), sd.nbytes);
      r.what = "state arena " + quote_name(sd.fqn);
    } else {
      // Scratch state: the warm-up must not advance the session's own state.
      const StateDecl& sd = states[size_t(binding.state)];
      void* p = nullptr;
      WHARF_RETURN_IF_ERROR(pool.alloc(sd.nbytes, &p));
      if (p) scratch.push_back(p);
      if (p) GRAPH_CUDA(cudaMemsetAsync(p, 0, sd.nbytes, cap), "zeroing scratch state");
      tensors[i].data = p;
      tensors[i].dtype = sd.dtype;
      tensors[i].shape = &sd.shape;
      tensors[i].nbytes = sd.nbytes;
      tensors[i].device_type = DeviceType::kCuda;
      tensors[i].device_index = device;
      r.what = "state " + quote_name(sd.fqn);
    }
    r.base = reinterpret_cast<uint64_t>(tensors[i].data);
    r.bytes = tensors[i].nbytes;
    ranges.push_back(std::move(r));
  }
  WHARF_RETURN_IF_ERROR(model->bind_tensors(*b->instance, tensors));
  // Fold now (never inside the capture), into memory owned per generation: one arena laid
  // out as an earlier fold of this model allocated (one device allocation instead of one per
  // block), when there was one.
  auto rec = std::make_shared<FoldRecord>();
  rec->runtime = runtime;
  {
    const std::vector<uint64_t>* layout = nullptr;
    for (const auto& f : folds)
      if (!layout && !f.second->sizes.empty()) layout = &f.second->sizes;
    if (layout) WHARF_RETURN_IF_ERROR(rec->reserve(*layout));
  }
  if (!offloader) {  // an offloaded model folds nothing (refused at load); its fold entry would only warn
    wharf_aoti_allocator a{sizeof(wharf_aoti_allocator), &FoldRecord::shim_alloc, nullptr, rec.get()};
    AllocatorScope scope(*model, a);
    Status st = model->graph_fold(*b->instance, cap);
    if (!st.ok()) return rec->error.empty() ? st : st.with_context(rec->error);
  }
  for (size_t j = 0; j < rec->ptrs.size(); ++j)
    ranges.push_back(
        {reinterpret_cast<uint64_t>(rec->ptrs[j]), rec->sizes[j], "folded constant block " + std::to_string(j)});
  b->fold_sizes = rec->sizes;
  b->capture_fold = rec;
  const auto t_bound = std::chrono::steady_clock::now();
  // Static inputs hold this run's inputs (padded to the bucket) for the warm-up (valid token
  // ids, positions, slots).
  std::vector<ModelTensor> statics(inputs.size());
  uint64_t staging_bytes = 0;
  for (size_t i = 0; i < inputs.size(); ++i) {
    TensorMeta m = size >= 0 ? bucket_meta(spec, i, inputs[i].meta, size) : TensorMeta();
    if (size < 0) {
      m.dtype = inputs[i].meta.dtype;
      m.shape = inputs[i].meta.shape;
    }
    m.device_type = DeviceType::kCuda;
    m.device_index = device;
    const uint64_t bytes = m.nbytes();
    void* p = nullptr;
    WHARF_RETURN_IF_ERROR(pool.alloc(bytes, &p));
    b->static_inputs.push_back(p);  // the bucket's from here on (freed with it, on failure too)
    b->inputs.push_back(m);
    b->input_bytes.push_back(bytes);
    if (legacy && bytes)
      GRAPH_CUDA(cudaMemcpyAsync(p, inputs[i].data, bytes, cudaMemcpyDefault, cap), "copying an input");
    b->staging_off.push_back(staging_bytes);
    staging_bytes += (bytes + 15) / 16 * 16;  // a run's input is at most the bucket's
    statics[i].data = p;
    statics[i].meta = m;
  }
  if (!legacy) {
    // The gather (the same kernel the graph's head node runs) fills and pads them.
    b->host_image.resize(staging_bytes);
    WHARF_RETURN_IF_ERROR(pool.alloc(staging_bytes, &b->staging));
    GatherParams& g = b->execs[0].gather;
    WHARF_RETURN_IF_ERROR(b->stage(spec, inputs, cap, &g));
    b->gather_grid = gather_blocks(g);
    GRAPH_CUDA(cudaError_t(gather_launch(g, cap)), "gathering the inputs");
  }
  const wharf_aoti_allocator pool_alloc{sizeof(wharf_aoti_allocator), &Pool::shim_alloc, &Pool::shim_free, &pool};
  auto pool_error = [&]() {
    std::lock_guard<std::mutex> l(pool.mu);
    return pool.error;
  };
  // The run's rows of a whole-arena binding, kept across the warm-up (put back after it, or
  // when this returns early): its sessions' state is written once, by the replay.
  WHARF_RETURN_IF_ERROR(rows.save(run.slots()));
  {  // Warm-up: kernels loaded, GEMM algorithms chosen, the shim's first-call work done.
    std::vector<ModelTensor> outs;
    std::vector<void*> handles;
    Status st;
    {
      AllocatorScope scope(*model, pool_alloc);
      // Without the offloader: the offload points pass through and the layers read the ring
      // as it is (the outputs are thrown away), so only the captured run below holds the
      // offloader, as long as an eager run's enqueue, and the warm-up waits for no other run.
      st = model->graph_run(*b->instance, statics, cap, &outs, &handles);
    }
    model->graph_free_handles(handles);
    if (!st.ok()) {
      const std::string pe = pool_error();
      return pe.empty() ? st.with_context("warm-up run") : st.with_context("warm-up run: " + pe);
    }
    GRAPH_CUDA(cudaStreamSynchronize(cap), "the warm-up run");
  }
  const auto t_warm = std::chrono::steady_clock::now();
  WHARF_RETURN_IF_ERROR(rows.restore());
  {
    std::lock_guard<std::mutex> l(pool.mu);
    pool.error.clear();
  }
  // The capture.
  std::vector<void*> handles;
  Status run_st;
  cudaGraph_t graph = nullptr;
  {
    GRAPH_CUDA(cudaStreamBeginCapture(cap, cudaStreamCaptureModeThreadLocal), "cudaStreamBeginCapture");
    {
      AllocatorScope scope(*model, pool_alloc);
      run_st = model->graph_run(*b->instance, statics, cap, &b->outputs, &handles, offload_ptr);
    }
    if (opts.test_break_capture) {
      // What an uncapturable operation does: the capture is invalidated.
      cudaError_t e = cudaStreamSynchronize(cap);
      if (run_st.ok() && e != cudaSuccess) run_st = cuda_status(e, "an uncapturable call (test)");
    }
    cudaError_t e = cudaStreamEndCapture(cap, &graph);
    if (run_st.ok() && e != cudaSuccess) run_st = cuda_status(e, "cudaStreamEndCapture");
    (void)cudaGetLastError();
  }
  b->graph = graph;
  b->output_handles = handles;  // freed with the bucket, on failure too
  if (!run_st.ok()) {
    const std::string pe = pool_error();
    return pe.empty() ? run_st.with_context("capturing") : run_st.with_context("capturing: " + pe);
  }
  if (!graph) return DeviceError("the capture produced no graph");
  const auto t_captured = std::chrono::steady_clock::now();
  // The nodes and their parameter images. A kernel's parameter layout is read once per
  // function of this capture (the layers' nodes share their kernels); not kept across
  // captures: a function handle of an unloaded module could name another function later.
  std::unordered_map<const void*, std::vector<NodeImage::Param> > layouts;
  size_t n = 0;
  GRAPH_CUDA(cudaGraphGetNodes(graph, nullptr, &n), "cudaGraphGetNodes");
  std::vector<cudaGraphNode_t> all(n);
  if (n) GRAPH_CUDA(cudaGraphGetNodes(graph, all.data(), &n), "cudaGraphGetNodes");
  std::vector<NodeImage> images;
  const Driver& drv = driver();
  for (cudaGraphNode_t node : all) {
    cudaGraphNodeType type;
    GRAPH_CUDA(cudaGraphNodeGetType(node, &type), "cudaGraphNodeGetType");
    Bucket::NodeMeta m;
    m.type = type;
    NodeImage img;
    auto add8 = [&img](uint64_t v) {
      NodeImage::Param p;
      p.offset = uint32_t(img.bytes.size());
      p.size = 8;
      img.bytes.resize(img.bytes.size() + 8);
      std::memcpy(img.bytes.data() + p.offset, &v, 8);
      img.params.push_back(p);
    };
    if (type == cudaGraphNodeTypeKernel) {
      WHARF_RETURN_IF_ERROR(
          driver_status(drv.kernel_get(reinterpret_cast<CUgraphNode>(node), &m.kernel), "cuGraphKernelNodeGetParams"));
      if (!m.kernel.kernelParams && m.kernel.extra)
        return Unsupported(
            "a kernel node passes its parameters as one buffer (CU_LAUNCH_PARAM_BUFFER_POINTER), "
            "whose pointers cannot be located");
      const void* fn =
          m.kernel.func ? static_cast<const void*>(m.kernel.func) : static_cast<const void*>(m.kernel.kern);
      if (!m.kernel.func && !(m.kernel.kern && drv.kernel_param))
        return Unsupported("a kernel node names no function whose parameters can be read");
      auto known = layouts.find(fn);
      if (known == layouts.end()) {
        std::vector<NodeImage::Param> params;
        for (size_t i = 0;; ++i) {
          size_t off = 0, size = 0;
          const CUresult r = m.kernel.func ? drv.func_param(m.kernel.func, i, &off, &size)
                                           : drv.kernel_param(m.kernel.kern, i, &off, &size);
          if (r == CUDA_ERROR_INVALID_VALUE) break;
          if (r != CUDA_SUCCESS) return driver_status(r, "reading a kernel's parameter layout");
          NodeImage::Param p;
          p.offset = uint32_t(off);
          p.size = uint32_t(size);
          params.push_back(p);
        }
        known = layouts.emplace(fn, std::move(params)).first;
      }
      for (size_t i = 0; i < known->second.size(); ++i) {
        const NodeImage::Param p = known->second[i];
        const size_t off = p.offset, size = p.size;
        if (!m.kernel.kernelParams || !m.kernel.kernelParams[i])
          return Unsupported("a kernel node has no value for its parameter " + std::to_string(i));
        if (img.bytes.size() < off + size) img.bytes.resize(off + size);
        std::memcpy(img.bytes.data() + off, m.kernel.kernelParams[i], size);
        img.params.push_back(p);
      }
      m.num_args = img.params.size();
    } else if (type == cudaGraphNodeTypeMemcpy) {
      GRAPH_CUDA(cudaGraphMemcpyNodeGetParams(node, &m.copy), "cudaGraphMemcpyNodeGetParams");
      if (m.copy.srcArray || m.copy.dstArray) return Unsupported("a memcpy node copies a CUDA array");
      add8(reinterpret_cast<uint64_t>(m.copy.srcPtr.ptr));
      add8(reinterpret_cast<uint64_t>(m.copy.dstPtr.ptr));
    } else if (type == cudaGraphNodeTypeMemset) {
      GRAPH_CUDA(cudaGraphMemsetNodeGetParams(node, &m.set), "cudaGraphMemsetNodeGetParams");
      add8(reinterpret_cast<uint64_t>(m.set.dst));
    } else if (type == cudaGraphNodeTypeEmpty || type == cudaGraphNodeTypeEventRecord ||
               type == cudaGraphNodeTypeWaitEvent) {
      continue;  // no addresses
    } else {
      return Unsupported(std::string("the captured graph has a ") + node_type_name(type) +
                         " node, which graphs do not re-point");
    }
    b->nodes.push_back(std::move(m));
    b->execs[0].handles.push_back(node);
    images.push_back(std::move(img));
  }
  // An output inside a bound range (a model returning its state, or a constant, as is) would
  // hand every run the capture's scratch or generation instead of its own.
  for (size_t i = 0; i < b->outputs.size(); ++i) {
    const uint64_t p = reinterpret_cast<uint64_t>(b->outputs[i].data);
    for (const GraphRange& r : ranges)
      if (p - r.base < r.bytes)
        return Unsupported("output " + std::to_string(i) + " is " + r.what +
                           " itself; graphs hand out static outputs only");
  }
  Bucket::Exec& e0 = b->execs[0];
  WHARF_RETURN_IF_ERROR(PatchPlan::build(std::move(images), std::move(ranges), &e0.plan));
  if (!legacy) {
    // The gather node, ahead of every root of the captured run (not in the plan: its
    // parameters are set from each replay's inputs).
    size_t nroots = 0;
    GRAPH_CUDA(cudaGraphGetRootNodes(graph, nullptr, &nroots), "cudaGraphGetRootNodes");
    std::vector<cudaGraphNode_t> roots(nroots);
    if (nroots) GRAPH_CUDA(cudaGraphGetRootNodes(graph, roots.data(), &nroots), "cudaGraphGetRootNodes");
    void* args[1];
    cudaKernelNodeParams kp = gather_node_params(*b, e0.gather, args);
    GRAPH_CUDA(cudaGraphAddKernelNode(&e0.gather_node, graph, nullptr, 0, &kp), "adding the input gather node");
    for (cudaGraphNode_t r : roots) {
#if CUDART_VERSION >= 13000
      GRAPH_CUDA(cudaGraphAddDependencies(graph, &e0.gather_node, &r, nullptr, 1), "cudaGraphAddDependencies");
#else
      GRAPH_CUDA(cudaGraphAddDependencies(graph, &e0.gather_node, &r, 1), "cudaGraphAddDependencies");
#endif
    }
  }
  const auto t_scanned = std::chrono::steady_clock::now();
  GRAPH_CUDA(cudaGraphInstantiate(&e0.exec, graph, 0), "cudaGraphInstantiate");
  const auto t_instantiated = std::chrono::steady_clock::now();
  if (!legacy) {
    // The spare's graph: a clone (host memory only; instantiated by the first prepare), its
    // nodes found once here, and the plan and gather parameters the clone's nodes hold.
    Bucket::Exec& e1 = b->execs[1];
    GRAPH_CUDA(cudaGraphClone(&b->spare_graph, graph), "cudaGraphClone");
    e1.handles.resize(e0.handles.size());
    for (size_t i = 0; i < e0.handles.size(); ++i)
      GRAPH_CUDA(cudaGraphNodeFindInClone(&e1.handles[i], e0.handles[i], b->spare_graph), "cudaGraphNodeFindInClone");
    GRAPH_CUDA(cudaGraphNodeFindInClone(&e1.gather_node, e0.gather_node, b->spare_graph), "cudaGraphNodeFindInClone");
    e1.plan = e0.plan;
    e1.gather = e0.gather;
  }
  // The folded constants of this generation are the ones the capture folded.
  if (!find_fold(run.pinned_generation())) {
    folds.emplace_back(run.pinned_generation(), rec);
    ++stats.folds;
  }
  // The container's other generation (staged before this capture, or the one a swap rolls
  // back to) could not be prepared when it was staged: the fold's layout comes from a
  // capture. Folded now, beside the capture, so that a rollback's first replay does not fold
  // on the serving path. A failure leaves that to the replay (as a failed prepare does).
  if (!rec->sizes.empty()) {
    std::shared_ptr<Generation> other = model->container_->inactive_generation();
    if (other && other != run.pinned_generation() && !find_fold(other)) {
      const Clock::time_point f0 = Clock::now();
      std::shared_ptr<FoldRecord> orec;
      const auto stream = static_cast<cudaStream_t>(run.stream().native_handle());
      Status st = fold_on_fold_instance(generation_tensors(other), rec->sizes, stream, &orec);
      // Done before it is published: any set's replay, on any stream, may use the record.
      if (st.ok()) st = cuda_status(cudaStreamSynchronize(stream), "waiting for the inactive generation's fold");
      if (st.ok()) {
        folds.emplace_back(other, orec);
        ++stats.folds;
        ++stats.prepare_folds;
        stats.prepare_fold_ns += ns_between(f0, Clock::now());
      } else {
        fold_instance.reset();  // after a failed wait too: its folded state is unknown
        WHARF_LOG(kWarn, "model " + quote_name(name) + ": graphs: folding the inactive generation after a capture: " +
                             st.message() + "; its first replay folds instead");
      }
    }
  }
  b->stats.shapes = shapes_text(statics);
  b->stats.size = size;
  for (size_t k = 0; k < sets.size(); ++k)
    if (sets[k].get() == &set) b->stats.set = uint32_t(k);
  b->stats.nodes = all.size();
  b->stats.patches = e0.plan.patches().size();
  b->stats.patched_nodes = e0.plan.num_patched_nodes();
  b->stats.capture_ms = std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - t0).count();
  auto ms = [](std::chrono::steady_clock::time_point a, std::chrono::steady_clock::time_point z) {
    return std::chrono::duration<double, std::milli>(z - a).count();
  };
  b->stats.bind_fold_ms = ms(t0, t_bound);
  b->stats.warmup_ms = ms(t_bound, t_warm);
  b->stats.capture_run_ms = ms(t_warm, t_captured);
  b->stats.scan_ms = ms(t_captured, t_scanned);
  b->stats.instantiate_ms = ms(t_scanned, t_instantiated);
  {
    std::lock_guard<std::mutex> l(pool.mu);
    b->stats.pool_bytes = pool.bytes - pool_before;
  }
  drop_instance.done = true;
  *out = std::move(b);
  return Status::Ok();
}

Bucket* ModelGraphs::Core::capture_bucket(Run& run, GraphSet& set, const std::vector<ModelTensor>& inputs,
                                          int64_t size) {
  std::unique_ptr<Bucket> nb;
  Status st = capture(run, set, inputs, size, &nb);
  if (st.ok()) {
    ++stats.captures;
    set.buckets.push_back(std::move(nb));
    return set.buckets.back().get();
  }
  const std::string what =
      size >= 0 ? "bucket " + quote_name(spec.dim) + " = " + std::to_string(size) : "inputs " + shapes_text(inputs);
  if (set.buckets.empty()) {  // nothing of the failed capture stays allocated
    set.pool.trim();
    set.offload_ring.reset();
  }
  if (st.code() == Code::kBusy) {
    // The model's offloader is held by another run for now (an eager run enqueueing, or a
    // caller's own lease): nothing is wrong with the shape, a later run captures it.
    last_failure = "capturing a graph for " + what + " must wait: " + st.message();
    return nullptr;
  }
  ++stats.capture_failures;
  std::vector<TensorMeta> key;
  for (size_t i = 0; i < inputs.size(); ++i) {
    TensorMeta m = size >= 0 ? bucket_meta(spec, i, inputs[i].meta, size) : TensorMeta();
    if (size < 0) {
      m.dtype = inputs[i].meta.dtype;
      m.shape = inputs[i].meta.shape;
    }
    key.push_back(std::move(m));
  }
  const std::string why = "capturing a graph for " + what + " failed: " + st.message();
  WHARF_LOG(kWarn, "model " + quote_name(name) + ": " + why + "; " + (size >= 0 ? "that bucket" : "that shape") +
                       " runs eagerly");
  failed.push_back({std::move(key), size, why});
  // What the model does (a node type, a parameter layout, an uncapturable call) fails every
  // shape alike: no more captures then, nor after many failures (each costs a warm-up).
  if (st.code() == Code::kUnsupported || stats.capture_failures >= kMaxCaptureFailures)
    no_more_captures = "no more graphs are captured for this model after: " + why;
  last_failure = why;
  return nullptr;
}

const std::string* ModelGraphs::Core::failure_of(const std::vector<ModelTensor>& inputs, int64_t size) const {
  for (const Failure& f : failed)
    if (f.size == size && shapes_match(f.key, inputs, spec, size)) return &f.why;
  return nullptr;
}

Status ModelGraphs::run(Run& run, const std::vector<ModelTensor>& inputs, std::vector<ModelTensor>* outputs,
                        bool* served, const std::vector<ModelTensor>** held) {
  *served = false;
  const Clock::time_point entered = Clock::now();
  Core& c = *core_;
  MutexLock lock(c.mu);
  // A caller capturing the run's stream into a graph of its own gets the eager kernels (a
  // capture of ours would join its capture through the stream order).
  {
    bool capturing = false;
    Status st = stream_is_capturing(run.stream(), &capturing);
    if (!st.ok() || capturing) {
      c.eager(st.ok() ? "the run's stream is being captured by the caller" : st.message());
      return Status::Ok();
    }
  }
  // The static inputs are dense: a strided input is copied by an eager run's model instead.
  for (const ModelTensor& t : inputs)
    if (!t.meta.contiguous()) {
      c.eager("an input is not contiguous");
      return Status::Ok();
    }
  // The bucket: the smallest declared size >= the run's (its inputs padded), else its shape.
  int64_t n = -1, size = -1;
  if (c.spec.enabled()) {
    Status st = run_size(c.spec, inputs, &n);
    if (!st.ok()) {
      c.eager("inputs " + shapes_text(inputs) + ": " + st.message());
      return Status::Ok();
    }
    if (n >= 0) {
      const int k = choose_bucket(c.spec.sizes, n);
      if (k < 0) {
        c.eager(quote_name(c.spec.dim) + " = " + std::to_string(n) + " is past the largest bucket (" +
                std::to_string(c.spec.sizes.back()) + "); such runs execute eagerly");
        return Status::Ok();
      }
      size = c.spec.sizes[size_t(k)];
    }
  }
  GraphSet* set = nullptr;
  {
    Status st = c.free_set(&set);
    if (!st.ok()) {
      c.eager("creating a set of graphs: " + st.message());
      return Status::Ok();
    }
  }
  if (!set) {
    c.eager("the graphs are held by " + std::to_string(c.sets.size()) +
            " other open runs (max_concurrent; a replay's outputs stay valid until its run ends)");
    return Status::Ok();
  }
  Bucket* b = set->find(inputs, c.spec, size);
  const bool captured = !b;
  if (!b) {
    if (const std::string* why = c.failure_of(inputs, size)) {
      c.eager(*why);
      return Status::Ok();
    }
    if (!c.no_more_captures.empty()) {
      c.eager(c.no_more_captures);
      return Status::Ok();
    }
    if (size < 0) {
      // Exact shapes are bounded by max_buckets; declared buckets by their declaration.
      size_t exact = 0;
      for (const auto& x : set->buckets) exact += x->size < 0;
      if (exact >= c.opts.max_buckets) {
        c.eager("inputs " + shapes_text(inputs) + ": " + std::to_string(c.opts.max_buckets) +
                " input shapes have graphs already (max_buckets)");
        return Status::Ok();
      }
    } else {
      // The largest bucket first: smaller buckets' captures then reuse its pool blocks.
      const int64_t largest = c.spec.sizes.back();
      if (size != largest && !set->find(inputs, c.spec, largest) && !c.failure_of(inputs, largest))
        (void)c.capture_bucket(run, *set, inputs, largest);
    }
    if (c.no_more_captures.empty()) b = c.capture_bucket(run, *set, inputs, size);
    if (!b) {
      c.eager(c.no_more_captures.empty() ? c.last_failure : c.no_more_captures);
      return Status::Ok();
    }
  }
  return c.replay(run, *set, *b, inputs, n, outputs, held, served, core_, entered, captured);
}

Status ModelGraphs::Core::replay(Run& run, GraphSet& set, Bucket& bucket, const std::vector<ModelTensor>& inputs,
                                 int64_t n, std::vector<ModelTensor>* outputs,
                                 const std::vector<ModelTensor>** held_outputs, bool* served,
                                 const std::shared_ptr<Core>& self, Clock::time_point entered, bool captured) {
  // Each phase's host time goes to the stats (wharf_graph_stats: model_bench's breakdown).
  Bucket* b = &bucket;
  std::shared_ptr<FoldRecord> fold;
  const Clock::time_point t_fold = Clock::now();
  if (!captured) stats.select_ns += ns_between(entered, t_fold);
  const uint64_t folds_before = stats.folds;
  Status st = fold_for(run, *b, &fold);
  const Clock::time_point t_bind = Clock::now();
  if (stats.folds != folds_before) stats.fold_ns += ns_between(t_fold, t_bind);
  if (st.ok()) st = bases_for(run, *b, fold.get(), &b->bases);
  // The executable graph: the last one used when it points at the run's bases already (the
  // steady state: one comparison), else the one needing the fewest node sets (a prepare's
  // spare after a swap; the other one for a run begun before it), re-pointed if need be.
  size_t applied = 0;
  Bucket::Exec* e = &b->execs[b->newest];
  if (st.ok()) {
    size_t k = b->newest;
    size_t cost = e->busy ? SIZE_MAX : e->plan.cost(b->bases);
    if (cost != 0) {
      const int best = choose_exec(b->exec_candidates(), b->bases, &cost);
      if (best < 0)
        st = Internal("no executable graph of the bucket is free");
      else
        k = size_t(best);
    }
    e = &b->execs[k];
    if (st.ok() && cost != 0)
      st = e->plan.repoint(
          b->bases, [b, e](uint32_t n, const NodeImage& img) { return b->apply(*e, n, img); }, &applied);
    if (st.ok()) {
      if (e->prepared && applied == 0) ++stats.prepointed_replays;
      e->prepared = false;
      e->last_used = ++replay_clock;
      b->newest = k;
    }
  }
  if (!st.ok()) {
    eager("re-pointing the graph for inputs " + b->stats.shapes + " failed: " + st.message());
    return Status::Ok();
  }
  const Clock::time_point t_bound = Clock::now();
  const uint64_t bind_ns = ns_between(t_bind, t_bound);
  b->capture_fold.reset();  // the graph no longer points at it
  if (applied) {
    ++stats.repoints;
    stats.nodes_repointed += applied;
    stats.repoint_ns += bind_ns;
  } else {
    stats.bind_check_ns += bind_ns;
  }
  cudaStream_t rs = static_cast<cudaStream_t>(run.stream().native_handle());
  // After the previous holder's run ended (its outputs read), then this run's inputs. The
  // run's stream waits for that event already when it was the previous run of the run's
  // session(s) (a decode loop); an event that has completed orders nothing: the query is
  // cheaper than enqueueing the wait (a failed query waits, which reports the error).
  if (set.released && st.ok() && !(set.released.get() == run.begun_after() && !legacy)) {
    bool done = false;
    if (!legacy && !set.released->query(&done).ok()) done = false;
    if (done) {
      set.released.reset();
    } else {
      st = run.stream().wait(*set.released);
      if (!st.ok()) st = st.with_context("waiting for the graphs' last run");
    }
  }
  const Clock::time_point t_waited = Clock::now();
  stats.wait_ns += ns_between(t_bound, t_waited);
  if (legacy) {
    for (size_t i = 0; st.ok() && i < inputs.size(); ++i) {
      const cudaError_t e = b->input_bytes[i] ? cudaMemcpyAsync(b->static_inputs[i], inputs[i].data, b->input_bytes[i],
                                                                cudaMemcpyDefault, rs)
                                              : cudaSuccess;
      if (e != cudaSuccess)
        st = cuda_status(e, "copying an input into the graph").with_context("input " + std::to_string(i));
    }
  } else if (st.ok()) {
    // The gather node reads the inputs where they are (host ones: one copy to the staging
    // block first); its parameters change only when their addresses or sizes do.
    GatherParams p;
    st = b->stage(spec, inputs, rs, &p);
    if (st.ok() && std::memcmp(&p, &e->gather, sizeof p) != 0) {
      void* args[1];
      const cudaKernelNodeParams kp = gather_node_params(*b, p, args);
      st = cuda_status(cudaGraphExecKernelNodeSetParams(e->exec, e->gather_node, &kp), "setting the input gather");
      if (st.ok()) e->gather = p;
    }
  }
  const Clock::time_point t_staged = Clock::now();
  stats.inputs_ns += ns_between(t_waited, t_staged);
  if (st.ok()) st = cuda_status(cudaGraphLaunch(e->exec, rs), "cudaGraphLaunch");
  const Clock::time_point t_launched = Clock::now();
  stats.launch_ns += ns_between(t_staged, t_launched);
  if (!st.ok()) {
    // Nothing of the run's own was written yet unless the launch itself failed after being
    // enqueued, which CUDA reports as a device error on the stream: say so, do not fall back.
    *served = true;
    return st.with_context("model " + quote_name(name) + ": replaying its graph");
  }
  set.held = true;
  set.keep = self;
  ++stats.replays;
  GraphSet* held = &set;
  const Run* r = &run;  // the callback runs inside the run's end
  // Two pointers: std::function keeps them inline, no allocation per replay.
  run.at_end([held, r] {
    const Clock::time_point t0 = Clock::now();
    Core& c = *held->keep;       // set before at_end (its lock orders this read after it)
    std::shared_ptr<Core> keep;  // dropped after the lock: it may be the last reference
    MutexLock l(c.mu);
    // The event the run's end recorded (no record of our own): the set's next holder orders
    // after it.
    held->released = r->end_event();
    if (!held->released) {
      // That record failed: later replays must not overtake this run's reads; wait here.
      const cudaError_t e = cudaStreamSynchronize(static_cast<cudaStream_t>(r->stream().native_handle()));
      if (e != cudaSuccess)
        WHARF_LOG(kError, "model " + quote_name(c.name) + ": graphs: waiting for a run's end: " +
                              cuda_status(e, "cudaStreamSynchronize").message());
    }
    held->held = false;
    keep = std::move(held->keep);
    c.stats.release_ns += ns_between(t0, Clock::now());
  });
  // The outputs stay the run's until it ends (the set is held until then): handed out as
  // they are when the caller can take them so (no copy per replay).
  const std::vector<ModelTensor>* out = &b->outputs;
  if (n >= 0 && n != b->size) {
    // A padded run: outputs with the bucket dimension are views of their real rows.
    ++stats.padded_replays;
    b->padded_outputs.resize(b->outputs.size());
    for (size_t j = 0; j < b->outputs.size(); ++j) {
      b->padded_outputs[j].data = b->outputs[j].data;
      b->padded_outputs[j].meta = output_view(spec, j, b->outputs[j].meta, n);
    }
    out = &b->padded_outputs;
  }
  if (held_outputs)
    *held_outputs = out;
  else
    *outputs = *out;
  stats.outputs_ns += ns_between(t_launched, Clock::now());
  *served = true;
  return Status::Ok();
}

#endif  // WHARF_HAVE_CUDA

}  // namespace wharf

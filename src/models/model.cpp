// SPDX-License-Identifier: Apache-2.0
#include "models/model.h"
#include "models/package.h"

#include <dlfcn.h>

#include <algorithm>
#include <cstdlib>
#include <cstring>
#include <unordered_map>

#include "constants/weight_store.h"
#include "core/logging.h"
#include "core/text.h"
#include "graphs/model_graphs.h"
#include "models/aoti/shim_host.h"

namespace wharf {
namespace {

// ---- the AOTInductor C interface (torch/csrc/inductor/aoti_runtime/interface.h) ---------------
using AOTIErr = int32_t;  // 0: success
using AHandle = void*;    // AtenTensorHandle (a WharfAotiTensor* of the shim)
struct ConstantMapEntry {
  const char* name;
  AHandle handle;
};
using CreateFn = AOTIErr (*)(void** container, size_t num_models, const char* device, const char* cubin_dir);
using DeleteFn = AOTIErr (*)(void* container);
using RunFn = AOTIErr (*)(void* container, AHandle* inputs, size_t n_in, AHandle* outputs, size_t n_out, void* stream,
                          void* proxy);
using CountFn = AOTIErr (*)(void* container, size_t* n);
using NameFn = AOTIErr (*)(void* container, size_t i, const char** name);
using BoolAtFn = AOTIErr (*)(void* container, size_t i, bool* v);
using I32AtFn = AOTIErr (*)(void* container, size_t i, int32_t* v);
using SizeAtFn = AOTIErr (*)(void* container, size_t i, size_t* v);
using PairsFn = AOTIErr (*)(void* container, const ConstantMapEntry* pairs, size_t n, bool use_inactive,
                            bool validate_full);
using ConstFoldFn = AOTIErr (*)(void* container, bool use_inactive, void* stream, void* proxy);

// The model's constant kinds (torch::aot_inductor::ConstantType).
enum : int32_t { kUnknownConstant = 0, kParameter = 1, kBuffer = 2, kTensorConstant = 3, kFoldedConstant = 4 };

// ---- the shim library's entry points ----------------------------------------------------------
using BlobFn = int32_t (*)(void* data, int64_t ndim, const int64_t* sizes, const int64_t* strides, int64_t offset,
                           int32_t dtype, int32_t device_type, int32_t device_index, AHandle* ret, int32_t layout,
                           const uint8_t* meta, int64_t meta_size);
using DelFn = int32_t (*)(AHandle t);
using PtrFn = int32_t (*)(AHandle t, void** ret);
using ArrFn = int32_t (*)(AHandle t, int64_t** ret);
using I64Fn = int32_t (*)(AHandle t, int64_t* ret);
using I32Fn = int32_t (*)(AHandle t, int32_t* ret);
using EmptyFn = int32_t (*)(int64_t ndim, const int64_t* sizes, const int64_t* strides, int32_t dtype,
                            int32_t device_type, int32_t device_index, AHandle* ret);
using CopyFn = int32_t (*)(AHandle self, AHandle src, int32_t non_blocking);
using GuardFn = int32_t (*)(void* stream, int32_t device_index, void** ret);
using UnguardFn = int32_t (*)(void* guard);

// PyTorch's dtype codes for Wharf's dtypes, and back.
bool to_torch_dtype(DType d, int32_t* out) {
  switch (d) {
    case DType::kF32:
      *out = 6;
      return true;
    case DType::kF16:
      *out = 5;
      return true;
    case DType::kBF16:
      *out = 15;
      return true;
    case DType::kF64:
      *out = 7;
      return true;
    case DType::kF8E4M3:
      *out = 24;
      return true;
    case DType::kF8E5M2:
      *out = 23;
      return true;
    case DType::kI8:
      *out = 1;
      return true;
    case DType::kU8:
      *out = 0;
      return true;
    case DType::kI16:
      *out = 2;
      return true;
    case DType::kI32:
      *out = 3;
      return true;
    case DType::kI64:
      *out = 4;
      return true;
    case DType::kBool:
      *out = 11;
      return true;
    default:
      return false;  // dtypes without a PyTorch code AOTInductor models use
  }
}
bool from_torch_dtype(int32_t t, DType* out) {
  static const std::pair<int32_t, DType> table[] = {{6, DType::kF32}, {5, DType::kF16},     {15, DType::kBF16},
                                                    {7, DType::kF64}, {24, DType::kF8E4M3}, {23, DType::kF8E5M2},
                                                    {1, DType::kI8},  {0, DType::kU8},      {2, DType::kI16},
                                                    {3, DType::kI32}, {4, DType::kI64},     {11, DType::kBool}};
  for (const auto& e : table)
    if (e.first == t) {
      *out = e.second;
      return true;
    }
  return false;
}

// Memory the shim allocates is accounted to the runtime whose model the calling thread is
// inside (set around every call into a model or the shim).
thread_local MemoryAccounting* t_accounting = nullptr;
class AccountingScope {
 public:
  explicit AccountingScope(MemoryAccounting* a) : prev_(t_accounting) { t_accounting = a; }
  ~AccountingScope() { t_accounting = prev_; }

 private:
  MemoryAccounting* prev_;
};
void account(int64_t delta, void*) {
  if (!t_accounting || delta == 0) return;
  if (delta > 0) {
    Status st = t_accounting->reserve(MemKind::kDevice, MemTag::kWorkspace, uint64_t(delta), "model workspace");
    (void)st;  // already allocated: recorded even past a limit
  } else {
    t_accounting->release(MemKind::kDevice, MemTag::kWorkspace, uint64_t(-delta));
  }
}
// The offloader of the run the calling thread executes a model for (set around the model's
// run): the compiled model's offload ops reach it through the shim's host table.
struct OffloadContext {
  Offloader* offloader = nullptr;
  Run* run = nullptr;
  const char* ring = nullptr;  // the ring the instance is bound to (null: the offloader's pool)
  std::string error;
};
thread_local OffloadContext* t_offload = nullptr;
class OffloadScope {
 public:
  explicit OffloadScope(OffloadContext* c) : prev_(t_offload) { t_offload = c; }
  ~OffloadScope() { t_offload = prev_; }

 private:
  OffloadContext* prev_;
};
const char* offload_point(int32_t point, int64_t layer, void*) {
  OffloadContext* c = t_offload;
  if (!c || !c->offloader) return nullptr;  // no offloader: the weights are where they were bound
  Status st;
  if (layer < 0 || layer > int64_t(UINT32_MAX)) {
    st = InvalidArgument("layer " + std::to_string(layer) + " is out of range");
  } else if (point == 0) {
    char* slot = nullptr;
    st = c->offloader->wait(*c->run, uint32_t(layer), &slot);
    WHARF_DCHECK(!st.ok() || slot == (c->ring ? c->ring + c->offloader->slot_offset(uint32_t(layer))
                                              : c->offloader->slot_base(uint32_t(layer))),
                 "offloader: a layer's slot is the one its constants were bound to");
  } else {
    st = c->offloader->issued(*c->run, uint32_t(layer));
  }
  if (st.ok()) return nullptr;
  c->error = st.message();
  return c->error.c_str();
}

// Model warnings repeat on every run (e.g. an input copied for alignment): each distinct
// warning is logged once per process; errors always.
void shim_log(int32_t is_error, const char* message, void*) {
  const std::string m = message ? message : "";
  if (!is_error) {
    static std::mutex mu;
    static std::vector<std::string> seen;
    std::lock_guard<std::mutex> lock(mu);
    if (std::find(seen.begin(), seen.end(), m) != seen.end()) return;
    if (seen.size() < 256) seen.push_back(m);
  }
  const LogLevel level = is_error ? LogLevel::kError : LogLevel::kWarn;
  if (log_enabled(level)) log_message(level, m);
}

// The process-wide shim library: loaded once with global scope so models resolve their
// aoti_torch_* and CUDA runtime imports against it.
struct Shim {
  void* handle = nullptr;
  BlobFn from_blob = nullptr;
  DelFn del = nullptr;
  PtrFn data_ptr = nullptr;
  ArrFn sizes = nullptr, strides = nullptr;
  I64Fn dim = nullptr;
  I32Fn dtype = nullptr, device_type = nullptr;
  EmptyFn empty = nullptr;
  CopyFn copy = nullptr;
  GuardFn guard = nullptr;
  UnguardFn unguard = nullptr;
  wharf_aoti_capture_fn capture = nullptr;
  wharf_aoti_last_error_fn last_error = nullptr;
  wharf_aoti_set_allocator_fn set_allocator = nullptr;  // null: an older shim (no graphs)
  std::string path;
};

std::string default_shim_path() {
  if (const char* env = std::getenv("WHARF_AOTI_SHIM"))
    if (*env) return env;
  Dl_info info{};
  if (dladdr(reinterpret_cast<void*>(&default_shim_path), &info) && info.dli_fname) {
    std::string self = info.dli_fname;
    size_t slash = self.rfind('/');
    return (slash == std::string::npos ? std::string(".") : self.substr(0, slash)) + "/libwharf_aoti_shim.so";
  }
  return "libwharf_aoti_shim.so";
}

Status load_shim(const std::string& wanted, const Shim** out) {
  static std::mutex mu;
  static Shim shim;
  std::lock_guard<std::mutex> lock(mu);
  if (shim.handle) {
    *out = &shim;
    return Status::Ok();
  }
  const std::string path = wanted.empty() ? default_shim_path() : wanted;
  void* h = dlopen(path.c_str(), RTLD_NOW | RTLD_GLOBAL);
  if (!h) {
    const char* e = dlerror();
    return Unsupported("loading the AOTInductor shim library " + quote_path(path) + ": " + (e ? e : "unknown error") +
                       " (set ModelOptions.shim_path or WHARF_AOTI_SHIM)");
  }
  // A model resolves aoti_torch_* in the global scope: if another library (libtorch loaded
  // with global scope) provides them first, the model would call that one with our handles.
  void* ours = dlsym(h, "aoti_torch_empty_strided");
  void* global = dlsym(RTLD_DEFAULT, "aoti_torch_empty_strided");
  if (!ours || ours != global) {
    Dl_info info{};
    std::string who = global && dladdr(global, &info) && info.dli_fname ? info.dli_fname : "another library";
    dlclose(h);
    return Unsupported("the process already provides the AOTInductor shim functions globally (from " + quote_path(who) +
                       ", e.g. libtorch loaded with RTLD_GLOBAL); Wharf cannot run AOTInductor models in it");
  }
  Shim s;
  s.handle = h;
  s.path = path;
  s.from_blob = reinterpret_cast<BlobFn>(dlsym(h, "aoti_torch_create_tensor_from_blob_v2"));
  s.del = reinterpret_cast<DelFn>(dlsym(h, "aoti_torch_delete_tensor_object"));
  s.data_ptr = reinterpret_cast<PtrFn>(dlsym(h, "aoti_torch_get_data_ptr"));
  s.sizes = reinterpret_cast<ArrFn>(dlsym(h, "aoti_torch_get_sizes"));
  s.strides = reinterpret_cast<ArrFn>(dlsym(h, "aoti_torch_get_strides"));
  s.dim = reinterpret_cast<I64Fn>(dlsym(h, "aoti_torch_get_dim"));
  s.dtype = reinterpret_cast<I32Fn>(dlsym(h, "aoti_torch_get_dtype"));
  s.device_type = reinterpret_cast<I32Fn>(dlsym(h, "aoti_torch_get_device_type"));
  s.empty = reinterpret_cast<EmptyFn>(dlsym(h, "aoti_torch_empty_strided"));
  s.copy = reinterpret_cast<CopyFn>(dlsym(h, "aoti_torch_copy_"));
  s.guard = reinterpret_cast<GuardFn>(dlsym(h, "aoti_torch_create_cuda_stream_guard"));
  s.unguard = reinterpret_cast<UnguardFn>(dlsym(h, "aoti_torch_delete_cuda_stream_guard"));
  s.capture = reinterpret_cast<wharf_aoti_capture_fn>(dlsym(h, "wharf_aoti_capture"));
  s.last_error = reinterpret_cast<wharf_aoti_last_error_fn>(dlsym(h, "wharf_aoti_last_error"));
  s.set_allocator = reinterpret_cast<wharf_aoti_set_allocator_fn>(dlsym(h, "wharf_aoti_set_allocator"));
  auto attach = reinterpret_cast<wharf_aoti_attach_fn>(dlsym(h, "wharf_aoti_attach"));
  if (!s.from_blob || !s.del || !s.data_ptr || !s.sizes || !s.strides || !s.dim || !s.dtype || !s.device_type ||
      !s.empty || !s.copy || !s.guard || !s.unguard || !s.capture || !s.last_error || !attach) {
    dlclose(h);
    return Unsupported(quote_path(path) + " is not Wharf's AOTInductor shim library (entry points missing)");
  }
  static const wharf_aoti_host host{sizeof(wharf_aoti_host), &account, &shim_log, nullptr, &offload_point};
  attach(&host);
  shim = s;
  *out = &shim;
  return Status::Ok();
}

std::string shim_error(const Shim& s) {
  const char* e = s.last_error ? s.last_error() : "";
  return e && *e ? std::string(": ") + e : std::string(" (the model printed the reason to stderr)");
}

// The views of a run's output handles (null handles refused).
Status read_outputs(const Shim& shim, const std::vector<AHandle>& out, int dev, const std::string& name,
                    std::vector<ModelTensor>* outputs) {
  outputs->clear();
  for (size_t i = 0; i < out.size(); ++i) {
    AHandle h = out[i];
    ModelTensor mt;
    int64_t ndim = 0;
    int64_t* sizes = nullptr;
    int64_t* strides = nullptr;
    int32_t td = 0, dt = 0;
    if (!h || shim.dim(h, &ndim) != 0 || shim.sizes(h, &sizes) != 0 || shim.strides(h, &strides) != 0 ||
        shim.dtype(h, &td) != 0 || shim.device_type(h, &dt) != 0 || shim.data_ptr(h, &mt.data) != 0)
      return Internal("model " + quote_name(name) + ": reading output " + std::to_string(i) + shim_error(shim));
    if (!from_torch_dtype(td, &mt.meta.dtype))
      return Unsupported("model " + quote_name(name) + ": output " + std::to_string(i) + " has PyTorch dtype code " +
                         std::to_string(td));
    mt.meta.shape.assign(sizes, sizes + ndim);
    mt.meta.strides.assign(strides, strides + ndim);
    mt.meta.device_type = dt == 1 ? DeviceType::kCuda : DeviceType::kCpu;
    mt.meta.device_index = dev;
    outputs->push_back(std::move(mt));
  }
  return Status::Ok();
}

}  // namespace

struct Model::Library {
  const Shim* shim = nullptr;
  std::unique_ptr<ModelLibrary> so;
  std::string path;
  CreateFn create = nullptr;
  DeleteFn destroy = nullptr;
  RunFn run = nullptr;
  CountFn num_constants = nullptr, num_inputs = nullptr, num_outputs = nullptr;
  NameFn constant_name = nullptr, constant_fqn = nullptr, input_name = nullptr;
  BoolAtFn from_folded = nullptr;
  I32AtFn constant_type = nullptr, constant_dtype = nullptr;
  SizeAtFn constant_size = nullptr;
  PairsFn bind_pairs = nullptr;
  // Optional entry points CUDA graphs need (ModelGraphs refuses a model without them).
  RunFn run_single = nullptr;
  ConstFoldFn fold = nullptr;
};

struct Model::Instance {
  std::shared_ptr<Library> lib;
  MemoryAccounting* accounting = nullptr;
  void* handle = nullptr;
  bool bound = false;
  std::weak_ptr<Generation> gen;
  std::weak_ptr<Session> session;
  const Session* session_raw = nullptr;
  bool any_session = false;  // bound to the whole state arena: serves every session's run
  std::vector<void*> kept;   // handles the AOTInductor container keeps for user-managed constants
  // Whether this instance is bound to `run`'s generation and session (no rebind needed).
  bool bound_to(const Run& run) const {
    return bound && gen.lock() == run.pinned_generation() &&
           (any_session || (session_raw == run.session().get() && session.lock() == run.session()));
  }
  ~Instance() {
    AccountingScope scope(accounting);
    if (handle) {
      AOTIErr e = lib->destroy(handle);
      if (e != 0) WHARF_LOG(kError, "model " + quote_path(lib->path) + ": deleting an instance failed");
    }
    for (void* h : kept) lib->shim->del(h);
  }
};

namespace {
void keep_handle(void* handle, void* user) { static_cast<std::vector<void*>*>(user)->push_back(handle); }
}  // namespace

Status Model::load(std::shared_ptr<Runtime> runtime, const std::string& so_path, const ConstantMap& weights,
                   const ModelOptions& opts, std::shared_ptr<Model>* out) {
  const std::string what = "model " + quote_path(so_path);
  if (runtime->backend() != Backend::kCuda)
    return Unsupported(what + ": AOTInductor models run on the CUDA backend (this runtime uses the host backend)");
  const Shim* shim = nullptr;
  WHARF_RETURN_IF_ERROR(load_shim(opts.shim_path, &shim));

  auto lib = std::make_shared<Library>();
  lib->shim = shim;
  lib->path = so_path;
  // A `.so`, or the model library inside a `.pt2` package (models/package.h).
  std::string msg;
  WHARF_RETURN_IF_ERROR(open_model_library(so_path, RTLD_NOW | RTLD_LOCAL, &lib->so, &msg).with_context(what));
  if (!lib->so) {
    if (msg.find("undefined symbol: aoti_torch_") != std::string::npos)
      return Unsupported(what + " needs a shim function Wharf does not provide: " + msg);
    return InvalidArgument(what + ": cannot load it: " + msg);
  }
  struct Sym {
    const char* name;
    void** slot;
  };
  const Sym syms[] = {
      {"AOTInductorModelContainerCreateWithDevice", reinterpret_cast<void**>(&lib->create)},
      {"AOTInductorModelContainerDelete", reinterpret_cast<void**>(&lib->destroy)},
      {"AOTInductorModelContainerRun", reinterpret_cast<void**>(&lib->run)},
      {"AOTInductorModelContainerGetNumConstants", reinterpret_cast<void**>(&lib->num_constants)},
      {"AOTInductorModelContainerGetNumInputs", reinterpret_cast<void**>(&lib->num_inputs)},
      {"AOTInductorModelContainerGetNumOutputs", reinterpret_cast<void**>(&lib->num_outputs)},
      {"AOTInductorModelContainerGetConstantName", reinterpret_cast<void**>(&lib->constant_name)},
      {"AOTInductorModelContainerGetConstantOriginalFQN", reinterpret_cast<void**>(&lib->constant_fqn)},
      {"AOTInductorModelContainerGetInputName", reinterpret_cast<void**>(&lib->input_name)},
      {"AOTInductorModelContainerGetConstantFromFolded", reinterpret_cast<void**>(&lib->from_folded)},
      {"AOTInductorModelContainerGetConstantType", reinterpret_cast<void**>(&lib->constant_type)},
      {"AOTInductorModelContainerGetConstantDtype", reinterpret_cast<void**>(&lib->constant_dtype)},
      {"AOTInductorModelContainerGetConstantDataSize", reinterpret_cast<void**>(&lib->constant_size)},
      {"AOTInductorModelContainerUpdateUserManagedConstantBufferPairs", reinterpret_cast<void**>(&lib->bind_pairs)},
  };
  for (const Sym& s : syms) {
    *s.slot = dlsym(lib->so->handle(), s.name);
    if (!*s.slot)
      return InvalidArgument(what + " is not an AOTInductor model this Wharf can run: it does not export " + s.name);
  }
  lib->run_single = reinterpret_cast<RunFn>(dlsym(lib->so->handle(), "AOTInductorModelContainerRunSingleThreaded"));
  lib->fold = reinterpret_cast<ConstFoldFn>(dlsym(lib->so->handle(), "AOTInductorModelContainerRunConstantFolding"));

  std::shared_ptr<Model> m(new Model());
  m->runtime_ = runtime;
  m->lib_ = lib;
  m->name_ = opts.name;
  if (m->name_.empty()) {
    size_t slash = so_path.rfind('/');
    std::string base = slash == std::string::npos ? so_path : so_path.substr(slash + 1);
    size_t dot = base.find('.');
    m->name_ = dot == std::string::npos || dot == 0 ? base : base.substr(0, dot);
  }
  std::unique_ptr<Instance> meta;
  WHARF_RETURN_IF_ERROR(m->create_instance(1, &meta));
  void* h = meta->handle;

  size_t n = 0, n_in = 0, n_out = 0;
  if (lib->num_constants(h, &n) != 0 || lib->num_inputs(h, &n_in) != 0 || lib->num_outputs(h, &n_out) != 0)
    return InvalidArgument(what + ": reading its constant table failed" + shim_error(*shim));
  for (size_t i = 0; i < n_in; ++i) {
    const char* in = nullptr;
    if (lib->input_name(h, i, &in) != 0 || !in) return InvalidArgument(what + ": reading input " + std::to_string(i));
    m->input_names_.emplace_back(in);
  }
  if (!opts.input_names.empty() && opts.input_names.size() == n_in) m->input_names_ = opts.input_names;
  m->num_outputs_ = n_out;
  m->dims_ = opts.dims;
  for (SymbolicDim& d : m->dims_) {  // sized to the compiled forward (checked against the manifest below)
    d.inputs.resize(n_in, -1);
    d.outputs.resize(n_out, -1);
  }
  const bool declared = opts.declared_states != nullptr;
  const std::string ctx = opts.context.empty() ? what : opts.context;
  if (opts.expected_inputs >= 0 && size_t(opts.expected_inputs) != n_in)
    return InvalidArgument(ctx + ".inputs: " + std::to_string(opts.expected_inputs) + " declared, the compiled model " +
                           quote_path(so_path) + " takes " + std::to_string(n_in));
  if (opts.expected_outputs >= 0 && size_t(opts.expected_outputs) != n_out)
    return InvalidArgument(ctx + ".outputs: " + std::to_string(opts.expected_outputs) +
                           " declared, the compiled model " + quote_path(so_path) + " returns " +
                           std::to_string(n_out));

  // The state arena's capacity (one the model creates or joins), for states compiled over it.
  const uint32_t capacity = opts.arena ? opts.arena->capacity() : opts.session_capacity;
  bool any_whole = false, any_session = false;
  std::string first_whole, first_session;  // for the message refusing a mix
  ContainerConfig cfg;
  cfg.name = m->name_;
  cfg.store = opts.store;
  cfg.max_session_bytes = opts.max_session_bytes;
  cfg.session_capacity = opts.session_capacity;
  cfg.arena = opts.arena;
  auto params = std::make_unique<ConstantMap>();
  size_t num_folded = 0;
  for (size_t i = 0; i < n; ++i) {
    const char* name = nullptr;
    const char* fqn = nullptr;
    bool folded = false;
    int32_t type = 0, tdtype = 0;
    size_t bytes = 0;
    if (lib->constant_name(h, i, &name) != 0 || lib->constant_fqn(h, i, &fqn) != 0 ||
        lib->from_folded(h, i, &folded) != 0 || lib->constant_type(h, i, &type) != 0 ||
        lib->constant_dtype(h, i, &tdtype) != 0 || lib->constant_size(h, i, &bytes) != 0 || !name || !fqn)
      return InvalidArgument(what + ": reading constant " + std::to_string(i) + " of its table failed");
    if (folded || type == kFoldedConstant) {  // recomputed by the model from the parameters
      ++num_folded;
      continue;
    }
    Binding b;
    b.internal_name = name;
    b.torch_dtype = tdtype;
    const std::string kind = type == kBuffer ? "buffer" : "parameter";
    const std::string label = kind + " " + quote_name(fqn);
    DType dt;
    if (!from_torch_dtype(tdtype, &dt))
      return Unsupported(what + ": " + label + " has PyTorch dtype code " + std::to_string(tdtype) +
                         ", which Wharf has no dtype for");
    const MapEntry* e = weights.find(fqn);
    // Declared (a package): a buffer is a declared state, else a read-only weight.
    const StateInit* decl = nullptr;
    if (declared && type == kBuffer) {
      for (const StateInit& si : *opts.declared_states)
        if (si.fqn == fqn) decl = &si;
      if (decl) {
        TensorMeta dm;
        dm.dtype = decl->dtype;
        dm.shape = decl->shape;
        if (decl->dtype != dt)
          return InvalidArgument(ctx + ": state " + quote_name(fqn) + " is declared " + dtype_name(decl->dtype) + " " +
                                 shape_string(decl->shape) + " (" + std::to_string(dm.nbytes()) +
                                 " bytes), the compiled model's buffer is " + dtype_name(dt) + " of " +
                                 std::to_string(bytes) + " bytes");
        StateBinding how = StateBinding::kSession;
        WHARF_RETURN_IF_ERROR(classify_state_binding(ctx, *decl, bytes, capacity, opts.whole_arena_states, &how));
        b.whole_arena = how == StateBinding::kWholeArena;
        (b.whole_arena ? any_whole : any_session) = true;
        std::string& first = b.whole_arena ? first_whole : first_session;
        if (first.empty()) first = fqn;
        if (any_whole && any_session)
          return InvalidArgument(ctx + ": the compiled model binds state " + quote_name(first_whole) +
                                 " over the whole state arena of " + std::to_string(capacity) + " sessions and state " +
                                 quote_name(first_session) +
                                 " as one session's; a method binds all its states one way");
      } else if (!e) {
        return InvalidArgument(ctx + ": the compiled model's buffer " + quote_name(fqn) + " (" + std::to_string(bytes) +
                               " bytes of " + dtype_name(dt) + ") is neither a declared state nor a listed parameter");
      }
    }
    const bool is_state = declared ? decl != nullptr : type == kBuffer;
    if (!e && declared && !is_state)
      return InvalidArgument(ctx + ": the compiled model binds " + label + " (" + std::to_string(bytes) + " bytes of " +
                             dtype_name(dt) + "), which the manifest's weights.parameters does not list");
    if (!e && !is_state)
      return NotFound(what + ": " + label + " is not in the weights (" + std::to_string(bytes) + " bytes of " +
                      dtype_name(dt) + " expected)");
    std::vector<int64_t> shape;
    if (decl) {
      shape = decl->shape;
    } else if (e) {
      if (e->meta.dtype != dt)
        return InvalidArgument(what + ": " + label + ": dtype " + dtype_name(dt) + " expected, the weights have " +
                               dtype_name(e->meta.dtype));
      if (e->meta.nbytes() != bytes)
        return InvalidArgument(what + ": " + label + ": " + std::to_string(bytes) +
                               " bytes expected, the weights have " + shape_string(e->meta.shape) + " (" +
                               std::to_string(e->meta.nbytes()) + " bytes)");
      shape = e->meta.shape;
    } else {
      shape = {int64_t(bytes / dtype_size(dt))};  // a buffer without an initial value: zeros
    }
    if (decl) {
      b.state = int(cfg.states.size());
      cfg.states.push_back(*decl);
    } else if (is_state) {
      StateInit si;
      si.fqn = fqn;
      si.dtype = dt;
      si.shape = shape;
      if (e) {
        si.has_initial = true;
        si.meta = e->meta;
        si.data = e->data;
      }
      b.state = int(cfg.states.size());
      cfg.states.push_back(std::move(si));
    } else {
      ConstantDecl d;
      d.fqn = fqn;
      d.dtype = dt;
      d.shape = shape;
      b.constant = int(cfg.constants.size());
      cfg.constants.push_back(std::move(d));
      WHARF_RETURN_IF_ERROR(params->add_entry(*e));  // a view or a file range (read when copied)
    }
    m->bindings_.push_back(std::move(b));
  }
  if (any_whole) {
    // A method over the whole arena learns its rows from the slot indices Wharf passes.
    m->whole_arena_ = true;
    int slots = int(opts.slots_input);
    if (slots < 0)
      for (size_t i = 0; i < m->input_names_.size(); ++i)
        if (m->input_names_[i] == "slots") slots = int(i);
    if (slots < 0 || size_t(slots) >= m->input_names_.size())
      return InvalidArgument(ctx +
                             ": the compiled model binds its states over the whole state arena but has no "
                             "input 'slots' (the slot indices of a run's sessions, int64 [N])");
    m->batch_.slots = slots;
    m->batch_.batch_dims = opts.batch_dims;
    m->batch_.batch_dims.resize(m->input_names_.size(), -1);
    m->batch_.batch_dims[size_t(slots)] = 0;
  }
  if (opts.offload) {
    // A folded constant is computed from the bound parameters when the model binds, before
    // any offload point: from an offloaded parameter it would read a slot that holds another
    // layer, or nothing yet.
    if (num_folded > 0)
      return Unsupported(what + " folds " + std::to_string(num_folded) +
                         " constants from its parameters at run time; an offloaded model must be compiled without "
                         "aot_inductor.use_runtime_constant_folding (tools/aoti/compile_offload_model.py)");
    std::vector<int> chosen;
    WHARF_RETURN_IF_ERROR(Offloader::select(cfg.constants, *opts.offload, what + ": offload", &chosen));
    for (int idx : chosen) cfg.constants[size_t(idx)].placement = Placement::kHost;
  }
  cfg.loading = true;  // loaded right below
  WHARF_RETURN_IF_ERROR(Container::create(runtime, std::move(cfg), &m->container_).with_context(what));
  {
    Status st = m->container_->load(*params, opts.progress);
    if (st.code() == Code::kCancelled) return st;
    WHARF_RETURN_IF_ERROR(st.with_context(what + ": loading its weights"));
  }
  if (opts.offload) {
    WHARF_RETURN_IF_ERROR(Offloader::create(m->container_, *opts.offload, &m->offloader_).with_context(what));
    const Offloader& o = *m->offloader_;
    for (uint32_t L = 0; L < o.num_layers(); ++L)
      for (const OffloadedConstant& c : o.layer_constants(L))
        for (Binding& b : m->bindings_)
          if (b.constant == c.index) {
            b.offload_layer = L;
            b.offload_offset = c.offset;
          }
  }
  {
    MutexLock lock(m->mu_);
    m->idle_.push_back(std::move(meta));
  }
  *out = std::move(m);
  return Status::Ok();
}

Model::~Model() {
  std::vector<std::unique_ptr<Instance>> idle;
  {
    MutexLock lock(mu_);
    idle.swap(idle_);
  }
  // The device may still run work of these instances: wait before their memory goes.
  Status st = runtime_->device().synchronize();
  if (!st.ok()) WHARF_LOG(kError, "model " + quote_name(name_) + ": waiting for the device at free: " + st.message());
}

Status Model::create_instance(size_t num_models, std::unique_ptr<Instance>* out) {
  auto inst = std::make_unique<Instance>();
  inst->lib = lib_;
  inst->accounting = &runtime_->device().accounting();
  AccountingScope scope(inst->accounting);
  const std::string device = "cuda:" + std::to_string(runtime_->device().index());
  if (lib_->create(&inst->handle, num_models, device.c_str(), nullptr) != 0 || !inst->handle)
    return DeviceError("model " + quote_path(lib_->path) + ": creating an instance on " + device + " failed" +
                       shim_error(*lib_->shim));
  *out = std::move(inst);
  return Status::Ok();
}

Status Model::take_instance(const Run& run, std::unique_ptr<Instance>* out) {
  {
    MutexLock lock(mu_);
    // Prefer the instance already bound to this run's generation and session (no rebind,
    // no refold), else the most recently used one.
    for (auto it = idle_.begin(); it != idle_.end(); ++it) {
      Instance& i = **it;
      if (i.bound_to(run)) {
        *out = std::move(*it);
        idle_.erase(it);
        return Status::Ok();
      }
    }
    if (!idle_.empty()) {
      *out = std::move(idle_.back());
      idle_.pop_back();
      return Status::Ok();
    }
  }
  return create_instance(1, out);
}

void Model::give_back(std::unique_ptr<Instance> inst) {
  MutexLock lock(mu_);
  idle_.push_back(std::move(inst));
}

Status Model::binding_tensor(const Binding& b, const Run& run, BoundTensor* t, const char* ring) const {
  if (b.offload_layer >= 0) {
    // The slot its layer is copied into (fixed addresses: the binding never changes).
    const uint32_t L = uint32_t(b.offload_layer);
    t->data =
        (ring ? const_cast<char*>(ring) + offloader_->slot_offset(L) : offloader_->slot_base(L)) + b.offload_offset;
    t->dtype = container_->decls()[size_t(b.constant)].dtype;
    t->nbytes = container_->decls()[size_t(b.constant)].nbytes;
    t->device_index = runtime_->device().index();
    t->shape = &container_->decls()[size_t(b.constant)].shape;
    t->device_type = DeviceType::kCuda;
    return Status::Ok();
  }
  if (b.constant >= 0) return run.tensor_at(b.constant, t);
  if (b.whole_arena) return run.arena_state_at(b.state, t);
  return run.state_at(b.state, t);
}

Status Model::bind(Instance& inst, const Run& run) {
  std::vector<BoundTensor> tensors(bindings_.size());
  for (size_t i = 0; i < bindings_.size(); ++i) WHARF_RETURN_IF_ERROR(binding_tensor(bindings_[i], run, &tensors[i]));
  inst.bound = false;
  WHARF_RETURN_IF_ERROR(bind_tensors(inst, tensors));
  inst.gen = run.pinned_generation();
  // Bound to the whole arena, whose address is fixed: any session's run is served as is.
  inst.any_session = whole_arena_;
  inst.session = whole_arena_ ? std::shared_ptr<Session>() : run.session();
  inst.session_raw = whole_arena_ ? nullptr : run.session().get();
  inst.bound = true;
  return Status::Ok();
}

Status Model::bind_tensors(Instance& inst, const std::vector<BoundTensor>& tensors) {
  const Shim& shim = *lib_->shim;
  const int dev = runtime_->device().index();
  std::vector<ConstantMapEntry> pairs;
  std::vector<AHandle> mine;  // ours: the container keeps copies of its own
  struct Cleanup {
    const Shim& shim;
    std::vector<AHandle>& handles;
    ~Cleanup() {
      for (AHandle h : handles) shim.del(h);
    }
  } cleanup{shim, mine};
  for (size_t i = 0; i < bindings_.size(); ++i) {
    const Binding& b = bindings_[i];
    const BoundTensor& t = tensors[i];
    if (!t.shape) continue;  // not bound by this call (a fold instance takes constants only)
    // PyTorch's contiguous strides (a size-0 dimension counts as 1, unlike TensorMeta's).
    std::vector<int64_t> strides(t.shape->size());
    int64_t acc = 1;
    for (size_t i = strides.size(); i-- > 0;) {
      strides[i] = acc;
      acc *= (*t.shape)[i] > 1 ? (*t.shape)[i] : 1;
    }
    AHandle h = nullptr;
    if (shim.from_blob(t.data, int64_t(t.shape->size()), t.shape->data(), strides.data(), 0, b.torch_dtype,
                       t.device_type == DeviceType::kCuda ? 1 : 0, dev, &h, 0, nullptr, 0) != 0)
      return Internal("model " + quote_name(name_) + ": making a tensor for " + quote_name(b.internal_name) +
                      shim_error(shim));
    mine.push_back(h);
    pairs.push_back({b.internal_name.c_str(), h});
  }
  std::vector<void*> kept;
  shim.capture(&keep_handle, &kept);
  AOTIErr e =
      lib_->bind_pairs(inst.handle, pairs.data(), pairs.size(), /*use_inactive=*/false, /*validate_full=*/false);
  shim.capture(nullptr, nullptr);
  if (e != 0) {
    for (void* k : kept) inst.kept.push_back(k);  // possibly referenced: freed with the instance
    return Internal("model " + quote_name(name_) + ": binding " + std::to_string(pairs.size()) + " constants failed" +
                    shim_error(shim));
  }
  // The previous binding's handles are no longer referenced by the container.
  for (void* k : inst.kept) shim.del(k);
  inst.kept = std::move(kept);
  return Status::Ok();
}

Status Model::run(Run& run, const std::vector<ModelTensor>& inputs, std::vector<ModelTensor>* outputs,
                  const std::vector<ModelTensor>** held) {
  if (held) *held = nullptr;
  if (run.container() != container_)
    return InvalidArgument("model " + quote_name(name_) + ": the run is of container " +
                           quote_name(run.container()->name()) + ", not of this model's");
  if (run.batched() && !whole_arena_)  // it binds one session's state buffers
    return Unsupported("model " + quote_name(name_) + ": a batched run over " + std::to_string(run.batch().size()) +
                       " sessions; this method is compiled over one session's state (begin the run with one "
                       "session, or run a method compiled over the whole state arena)");
  if (inputs.size() != input_names_.size())
    return InvalidArgument("model " + quote_name(name_) + ": " + std::to_string(input_names_.size()) +
                           " inputs expected, got " + std::to_string(inputs.size()));
  if (whole_arena_) {
    // The slot indices are the run's own (passed by Wharf): rows reach only its sessions.
    BoundTensor slots;
    WHARF_RETURN_IF_ERROR(run.slot_indices(&slots).with_context("model " + quote_name(name_)));
    std::vector<ModelTensor> resolved;
    WHARF_RETURN_IF_ERROR(resolve_batch_inputs(name_, input_names_, batch_, slots, inputs, &resolved));
    return run_inputs(run, resolved, outputs, held);
  }
  return run_inputs(run, inputs, outputs, held);
}

Status Model::run_inputs(Run& run, const std::vector<ModelTensor>& inputs, std::vector<ModelTensor>* outputs,
                         const std::vector<ModelTensor>** held) {
  if (ModelGraphs* g = graphs_.load(std::memory_order_acquire)) {
    bool served = false;
    Status gst = g->run(run, inputs, outputs, &served, held);
    if (served) return gst;
  }
  const Shim& shim = *lib_->shim;
  MemoryAccounting* accounting = &runtime_->device().accounting();
  AccountingScope scope(accounting);
  const int dev = runtime_->device().index();
  std::vector<AHandle> in(inputs.size(), nullptr);
  for (size_t i = 0; i < inputs.size(); ++i) {
    const ModelTensor& t = inputs[i];
    int32_t td = 0;
    if (!to_torch_dtype(t.meta.dtype, &td))
      return InvalidArgument("model " + quote_name(name_) + ": input " + quote_name(input_names_[i]) +
                             ": unsupported dtype");
    std::vector<int64_t> strides = t.meta.strides.empty() ? t.meta.contiguous_strides() : t.meta.strides;
    const bool on_host = t.meta.device_type != DeviceType::kCuda;
    AHandle blob = nullptr;
    if (shim.from_blob(t.data, int64_t(t.meta.shape.size()), t.meta.shape.data(), strides.data(), 0, td,
                       on_host ? 0 : 1, dev, &blob, 0, nullptr, 0) != 0) {
      for (AHandle h : in) shim.del(h);
      return InvalidArgument("model " + quote_name(name_) + ": input " + quote_name(input_names_[i]) +
                             shim_error(shim));
    }
    if (!on_host) {
      in[i] = blob;
      continue;
    }
    // Host memory (token ids from a Go, Rust or Java service): copied to device memory
    // allocated on the run's stream and freed there after the model's kernels; the caller's
    // buffer may be reused when this call returns.
    void* guard = nullptr;
    AHandle dev_t = nullptr;
    bool ok = shim.guard(run.stream().native_handle(), dev, &guard) == 0;
    ok = ok && shim.empty(int64_t(t.meta.shape.size()), t.meta.shape.data(), strides.data(), td, 1, dev, &dev_t) == 0;
    ok = ok && shim.copy(dev_t, blob, 1) == 0;
    if (guard) shim.unguard(guard);
    shim.del(blob);
    if (!ok) {
      shim.del(dev_t);
      for (AHandle h : in) shim.del(h);
      return DeviceError("model " + quote_name(name_) + ": copying input " + quote_name(input_names_[i]) +
                         " to the device" + shim_error(shim));
    }
    in[i] = dev_t;
  }
  std::unique_ptr<Instance> inst;
  Status st = take_instance(run, &inst);
  if (st.ok() && !inst->bound_to(run)) st = bind(*inst, run);
  if (!st.ok()) {
    for (AHandle h : in) shim.del(h);
    if (inst) give_back(std::move(inst));
    return st;
  }
  // The offloaded layers' copies: the first ones now, the rest at the model's offload points.
  OffloadContext octx;
  if (offloader_) {
    st = offloader_->begin(run);
    if (!st.ok()) {
      for (AHandle h : in) shim.del(h);
      give_back(std::move(inst));
      return st.with_context("model " + quote_name(name_));
    }
    octx.offloader = offloader_.get();
    octx.run = &run;
  }
  std::vector<AHandle> out(num_outputs_, nullptr);
  AOTIErr e = 0;
  {
    OffloadScope offload_scope(&octx);
    // The model steals the input handles whatever happens.
    e = lib_->run(inst->handle, in.data(), in.size(), out.data(), out.size(), run.stream().native_handle(), nullptr);
  }
  give_back(std::move(inst));
  const Status offload_status = offloader_ ? end_offload(run, e != 0) : Status::Ok();
  // Outputs belong to the run: freed (stream-ordered, on the run's stream) when it ends.
  std::vector<AHandle> owned;
  for (AHandle h : out)
    if (h) owned.push_back(h);
  const Shim* shim_ptr = &shim;
  run.at_end([shim_ptr, owned, accounting] {
    AccountingScope s(accounting);
    for (AHandle h : owned) shim_ptr->del(h);
  });
  if (e != 0) return Internal("model " + quote_name(name_) + ": running it failed" + shim_error(shim));
  WHARF_RETURN_IF_ERROR(offload_status);
  return read_outputs(shim, out, dev, name_, outputs);
}

Status Model::end_offload(Run& run, bool model_failed) {
  // A model that skipped offload points read slots nobody filled: its outputs are wrong.
  const uint32_t passed = offloader_->issued_count(run);
  Status st = offloader_->end(run);
  if (st.ok() && !model_failed && passed != offloader_->num_offloaded_layers())
    st = FailedPrecondition("model " + quote_name(name_) + " passed the offload points of " + std::to_string(passed) +
                            " of its " + std::to_string(offloader_->num_offloaded_layers()) +
                            " offloaded layers: it was not compiled with Wharf's offload ops at every layer boundary "
                            "(tools/aoti/compile_offload_model.py); its outputs are not valid");
  return st;
}

// ---- CUDA graphs (ModelGraphs, src/graphs/) -------------------------------------------------

bool Model::graph_supported(std::string* why) const {
  if (!lib_->run_single || !lib_->fold) {
    *why = "the compiled model does not export AOTInductorModelContainerRunSingleThreaded and RunConstantFolding";
    return false;
  }
  if (!lib_->shim->set_allocator) {
    *why = "the AOTInductor shim library " + quote_path(lib_->shim->path) + " has no wharf_aoti_set_allocator";
    return false;
  }
  return true;
}

Status Model::graph_instance(size_t num_models, std::shared_ptr<Instance>* out) {
  std::unique_ptr<Instance> inst;
  WHARF_RETURN_IF_ERROR(create_instance(num_models, &inst));
  *out = std::shared_ptr<Instance>(std::move(inst));
  return Status::Ok();
}

Status Model::graph_fold(Instance& inst, void* stream) {
  AccountingScope scope(&runtime_->device().accounting());
  if (lib_->fold(inst.handle, /*use_inactive=*/false, stream, nullptr) != 0)
    return Internal("model " + quote_name(name_) + ": folding its constants failed" + shim_error(*lib_->shim));
  return Status::Ok();
}

Status Model::graph_run(Instance& inst, const std::vector<ModelTensor>& inputs, void* stream,
                        std::vector<ModelTensor>* outputs, std::vector<void*>* handles, const GraphOffload* offload) {
  handles->clear();
  if (offload && (!offload->run || !offload->stream || !offload->ring))
    return Internal("model " + quote_name(name_) + ": a graph run's offloading needs a run, a stream and a ring");
  const bool offloading = offloader_ && offload;
  const Shim& shim = *lib_->shim;
  AccountingScope scope(&runtime_->device().accounting());
  const int dev = runtime_->device().index();
  std::vector<AHandle> in(inputs.size(), nullptr);
  for (size_t i = 0; i < inputs.size(); ++i) {
    const ModelTensor& t = inputs[i];
    int32_t td = 0;
    if (!to_torch_dtype(t.meta.dtype, &td)) {
      for (AHandle h : in) shim.del(h);
      return InvalidArgument("model " + quote_name(name_) + ": input " + quote_name(input_names_[i]) +
                             ": unsupported dtype");
    }
    const std::vector<int64_t> strides = t.meta.contiguous_strides();
    if (shim.from_blob(t.data, int64_t(t.meta.shape.size()), t.meta.shape.data(), strides.data(), 0, td, 1, dev, &in[i],
                       0, nullptr, 0) != 0) {
      for (AHandle h : in) shim.del(h);
      return InvalidArgument("model " + quote_name(name_) + ": input " + quote_name(input_names_[i]) +
                             shim_error(shim));
    }
  }
  // The offloaded layers: copied into the ring on the copy stream forked from `stream` (under
  // a capture: copy nodes in the graph, reading the run's generation's host storage).
  OffloadContext octx;
  if (offloading) {
    OffloadTarget target;
    target.stream = offload->stream;
    target.ring = offload->ring;
    target.repointed = true;  // ModelGraphs re-points the copies to each replay's own run
    Status st = offloader_->begin(*offload->run, target);
    if (!st.ok()) {
      for (AHandle h : in) shim.del(h);
      return st.with_context("model " + quote_name(name_));
    }
    octx.offloader = offloader_.get();
    octx.run = offload->run;
    octx.ring = offload->ring;
  }
  std::vector<AHandle> out(num_outputs_, nullptr);
  AOTIErr e = 0;
  {
    OffloadScope offload_scope(&octx);
    // The model steals the input handles whatever happens.
    e = lib_->run_single(inst.handle, in.data(), in.size(), out.data(), out.size(), stream, nullptr);
  }
  for (AHandle h : out)
    if (h) handles->push_back(h);
  const Status offload_status = offloading ? end_offload(*offload->run, e != 0) : Status::Ok();
  if (e != 0) return Internal("model " + quote_name(name_) + ": running it failed" + shim_error(shim));
  WHARF_RETURN_IF_ERROR(offload_status.with_context("model " + quote_name(name_)));
  return read_outputs(shim, out, dev, name_, outputs);
}

void Model::graph_free_handles(const std::vector<void*>& handles) const {
  for (void* h : handles) lib_->shim->del(h);
}

Model::HandleDeleter Model::graph_handle_deleter() const { return lib_->shim->del; }

void Model::graph_set_allocator(const void* allocator) const {
  lib_->shim->set_allocator(static_cast<const wharf_aoti_allocator*>(allocator));
}

Status Model::enable_graphs(const GraphOptions& opts) {
  MutexLock lock(mu_);
  if (graphs_owner_) return FailedPrecondition("model " + quote_name(name_) + ": graphs are already enabled");
  std::unique_ptr<ModelGraphs> g;
  WHARF_RETURN_IF_ERROR(ModelGraphs::create(this, opts, &g));
  graphs_owner_ = std::move(g);
  graphs_.store(graphs_owner_.get(), std::memory_order_release);
  return Status::Ok();
}

Status Model::graph_stats(GraphStats* out) const {
  ModelGraphs* g = graphs_.load(std::memory_order_acquire);
  if (!g) return FailedPrecondition("model " + quote_name(name_) + ": graphs are not enabled");
  *out = g->stats();
  return Status::Ok();
}

}  // namespace wharf

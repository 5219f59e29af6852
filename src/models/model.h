/* SPDX-License-Identifier: Apache-2.0 */
// Model: an AOTInductor-compiled model (a `.so` built without libtorch) executed by Wharf
// over a container's generations and a run's session.
//
// Loading reads the model's own constant table: parameters become the container's
// constants (by original FQN, shapes and dtypes checked against the weights given), mutated
// buffers (KV caches, recurrent state) become session state declarations (their initial
// value from the weights given), and folded constants are recomputed by the model itself
// from the bound parameters (see docs/aoti-compile.md). The weights are loaded and swapped
// in, so the container is ready to run; every container operation (updates, swaps,
// rollback, in-place, stores, sessions) then works on it as on any container.
//
// Running: each call takes a model instance (an AOTInductor container with one model) from
// a pool, binds it to the run's generation and session without copying (user-managed
// constants) when its binding differs, and runs it on the run's stream. Instances are
// kept affine to what they were bound to, so a conversation's decode steps on one
// generation rebind nothing. A method compiled over the whole state arena (a package's
// batched method) binds each state as the arena ([capacity, ...shape], fixed address): its
// instances depend on the generation only, and it runs batched runs and runs of one arena
// session alike, told the run's rows by its slots input (always the run's own indices). Outputs are allocated on the
// run's stream and belong to the run: they are freed (stream-ordered) when it ends.
//
// Threads: load, run and the queries are safe from many threads; concurrent runs use
// different instances.
#pragma once

#include <atomic>
#include <cstdint>
#include <memory>
#include <mutex>
#include <string>
#include <vector>

#include "constants/constant_map.h"
#include "constants/container.h"
#include "core/sync.h"
#include "core/tensor.h"
#include "graphs/bucket_plan.h"
#include "offload/offloader.h"
#include "runs/run.h"

namespace wharf {

class WeightStore;
class ModelGraphs;
struct GraphOptions;
struct GraphStats;

struct ModelOptions {
  std::string name;                    // the container's name (default: the file's stem)
  std::shared_ptr<WeightStore> store;  // share parameters with other containers of the store
  uint64_t max_session_bytes = 0;
  // A state arena (ContainerConfig): > 0 creates one for this many sessions; or join `arena`.
  uint32_t session_capacity = 0;
  std::shared_ptr<StateArena> arena;
  std::string shim_path;  // libwharf_aoti_shim.so; empty: next to libwharf, or $WHARF_AOTI_SHIM
  // Offload the layers this selects (null: none). Their constants are placed in host memory
  // and bound to the offloader's slots; the model must call Wharf's offload ops at its layer
  // boundaries (tools/aoti/compile_offload_model.py), and must not fold constants.
  std::shared_ptr<const OffloaderConfig> offload;
  ProgressFn progress;  // of loading the weights; empty = none
  // Declared by the caller (a model package's manifest, models/model_package.h): when set,
  // each buffer of the model is the state of that FQN here (its dtype and byte size must
  // agree; shape and initial value come from here) or, when not declared, a weight of
  // `weights` bound read-only like a parameter (a buffer the model never writes, such as a
  // rotary table); a buffer in neither, or a parameter missing from `weights`, is
  // INVALID_ARGUMENT naming `context`. Unset: a buffer's initial value is taken from
  // `weights` and an absent one is a 1-D zero state of the buffer's size.
  const std::vector<StateInit>* declared_states = nullptr;
  // When >= 0: the compiled forward's number of inputs / outputs, checked before any weight
  // is copied (INVALID_ARGUMENT naming `context`).
  int64_t expected_inputs = -1, expected_outputs = -1;
  // Declared input names (a package's manifest, in the compiled forward's order): they name
  // the inputs in messages and wharf_model_input_name instead of the compiled names, which
  // AOTInductor may have replaced with placeholders ("arg27_1"). Used when their count is
  // the compiled model's.
  std::vector<std::string> input_names;
  // A batched method (docs/model-package.md): every declared state's compiled buffer must
  // be the whole state arena (capacity x the state's bytes), not one session's. Without it
  // the byte size decides: a declared state's buffer of capacity x its bytes (capacity > 1)
  // binds the whole arena too.
  bool whole_arena_states = false;
  // A model whose states are the whole arena: its input of the sessions' slot indices (-1:
  // the compiled input named "slots"), and per input the dimension that counts the run's
  // sessions (-1: none; empty: the slots input's dimension 0 only). See BatchInputs.
  int64_t slots_input = -1;
  std::vector<int> batch_dims;
  // The symbolic dimensions of the inputs and outputs (a package manifest's `dims`): what
  // graph buckets may pad (graphs/bucket_plan.h). Empty: none known (exact shapes only).
  std::vector<SymbolicDim> dims;
  std::string context;  // what declared the above, for messages ("model package '/p': manifest.json: methods[0]")
};

// A tensor passed to or returned by a model: device (or host) memory, dtype, shape, strides.
struct ModelTensor {
  void* data = nullptr;
  TensorMeta meta;
};

// ---- methods over a whole state arena (issue 26; models/model_batch.cpp, host-testable) ----

// How a compiled buffer that is a declared state is bound: to the run's session's slot or
// buffer ([...shape]), or to the whole state arena ([capacity, ...shape], fixed address for
// the arena's life, the same in every run of the model).
enum class StateBinding { kSession, kWholeArena };
// `bytes` is the compiled buffer's size, `decl` the declared state (dtype already checked
// equal), `capacity` the model's state arena's (0: none), `whole_arena_required` a batched
// method's. kSession when bytes is one session's (unless a batched method of capacity 1),
// kWholeArena when it is capacity x that; anything else INVALID_ARGUMENT naming `context`,
// the state, both sizes.
Status classify_state_binding(const std::string& context, const StateInit& decl, uint64_t bytes, uint32_t capacity,
                              bool whole_arena_required, StateBinding* out);

// The inputs of a model bound to the whole arena, checked against its run.
struct BatchInputs {
  int slots = -1;               // the input of slot indices
  std::vector<int> batch_dims;  // per input: the dimension that must equal the run's sessions, or -1
};
// `slots` is the run's slot index tensor (int64 [N], Run::slot_indices). The slots input must
// be an empty view (data null: the run's indices are passed) or that tensor itself (same
// data pointer, int64 [N]); any other is INVALID_ARGUMENT naming the input (isolation is
// Wharf's promise: a model reads and writes only the run's slots). Every batch dimension must
// be N. *out: `inputs` with the slots input replaced by the run's tensor.
Status resolve_batch_inputs(const std::string& model, const std::vector<std::string>& input_names,
                            const BatchInputs& spec, const BoundTensor& slots, const std::vector<ModelTensor>& inputs,
                            std::vector<ModelTensor>* out);

class Model {
 public:
  static Status load(std::shared_ptr<Runtime> runtime, const std::string& so_path, const ConstantMap& weights,
                     const ModelOptions& opts, std::shared_ptr<Model>* out);
  ~Model();
  Model(const Model&) = delete;
  Model& operator=(const Model&) = delete;

  const std::shared_ptr<Container>& container() const { return container_; }
  size_t num_inputs() const { return input_names_.size(); }
  size_t num_outputs() const { return num_outputs_; }
  // Whether the model's states are bound as the whole state arena (a batched method: it runs
  // batched runs and runs of one arena session alike; its slots input selects the rows).
  bool whole_arena() const { return whole_arena_; }
  const std::string& input_name(size_t i) const { return input_names_[i]; }
  // ModelOptions::dims, as loaded.
  const std::vector<SymbolicDim>& dims() const { return dims_; }
  // The offloader of the model's offloaded layers (null when loaded without ModelOptions.offload).
  const std::shared_ptr<Offloader>& offloader() const { return offloader_; }

  // Runs the model for `run` (which must be a run of container()). `inputs` are borrowed
  // for the call; `outputs` receive tensors owned by the run (valid until it ends). With
  // `held` (may be null), a run served from outputs the model keeps valid until the run ends
  // by itself (a graph replay's static outputs) sets *held to them and leaves *outputs
  // empty: the caller needs no copy of its own to keep until then.
  Status run(Run& run, const std::vector<ModelTensor>& inputs, std::vector<ModelTensor>* outputs,
             const std::vector<ModelTensor>** held = nullptr) WHARF_EXCLUDES(mu_);

  // CUDA graphs (src/graphs/model_graphs.h): from now on runs replay a graph captured per
  // input shape where they can, eagerly otherwise. Once per model (FAILED_PRECONDITION after).
  Status enable_graphs(const GraphOptions& opts) WHARF_EXCLUDES(mu_);
  // FAILED_PRECONDITION when graphs were never enabled.
  Status graph_stats(GraphStats* out) const;

  struct Library;                            // the model .so and its entry points
  using HandleDeleter = int32_t (*)(void*);  // the shim's aoti_torch_delete_tensor_object
  struct Instance;                           // one AOTInductor container (one model) and its binding

 private:
  Model() = default;
  // run() once the inputs are checked (and, for a whole-arena model, the slots resolved).
  Status run_inputs(Run& run, const std::vector<ModelTensor>& inputs, std::vector<ModelTensor>* outputs,
                    const std::vector<ModelTensor>** held) WHARF_EXCLUDES(mu_);
  Status take_instance(const Run& run, std::unique_ptr<Instance>* out) WHARF_EXCLUDES(mu_);
  void give_back(std::unique_ptr<Instance> inst) WHARF_EXCLUDES(mu_);
  Status create_instance(size_t num_models, std::unique_ptr<Instance>* out);
  Status bind(Instance& inst, const Run& run);
  // Binds each model constant (bindings_ order) to tensors[i] (shape null: left as is).
  Status bind_tensors(Instance& inst, const std::vector<BoundTensor>& tensors);

  // ---- for ModelGraphs (defined in model.cpp, where the compiled model's entry points are) --
  friend class ModelGraphs;
  // A fresh instance outside the pool holding `num_models` models.
  Status graph_instance(size_t num_models, std::shared_ptr<Instance>* out);
  // AOTInductorModelContainerRunConstantFolding on `stream` (a cudaStream_t).
  Status graph_fold(Instance& inst, void* stream);
  // A graph capture's (or its warm-up's) offloading: `run`'s generation copied, on `stream`
  // (the capture stream, wrapped), into `ring` (the set's own, laid out as the offloader's
  // pool) at the model's offload points.
  struct GraphOffload {
    Run* run = nullptr;
    Stream* stream = nullptr;
    char* ring = nullptr;
  };
  // AOTInductorModelContainerRunSingleThreaded on `stream` with device inputs (the model
  // steals nothing of the caller's: handles are made here). *handles: the outputs' tensor
  // handles (the caller frees them with graph_free_handles); *outputs: their views. With
  // `offload`, a model's offloaded layers are copied into that ring (its instance is bound
  // there); without, its offload points pass through and the layers read whatever the slots
  // it is bound to hold (a warm-up, whose outputs are thrown away).
  Status graph_run(Instance& inst, const std::vector<ModelTensor>& inputs, void* stream,
                   std::vector<ModelTensor>* outputs, std::vector<void*>* handles,
                   const GraphOffload* offload = nullptr);
  void graph_free_handles(const std::vector<void*>& handles) const;
  // The shim's tensor delete (process lifetime: usable after this model is gone).
  HandleDeleter graph_handle_deleter() const;
  // The shim's allocator for the calling thread (a wharf_aoti_allocator*, or null: default).
  void graph_set_allocator(const void* allocator) const;
  bool graph_supported(std::string* why) const;

  std::shared_ptr<Runtime> runtime_;
  std::shared_ptr<Library> lib_;
  std::shared_ptr<Container> container_;
  std::string name_;
  std::vector<std::string> input_names_;
  size_t num_outputs_ = 0;
  std::vector<SymbolicDim> dims_;
  // Per model constant index: how it is bound.
  struct Binding {
    std::string internal_name;  // the model's constant name (pairs are keyed by it)
    int constant = -1;          // container constant index, or
    int state = -1;             // container state index
    int32_t torch_dtype = 0;
    int64_t offload_layer = -1;  // offloaded constant: bound to this layer's slot + offload_offset
    uint64_t offload_offset = 0;
    bool whole_arena = false;  // a state bound as the whole arena (Run::arena_state_at)
  };
  std::vector<Binding> bindings_;
  // Its states are the whole arena (every state binding whole_arena): instances bind once per
  // generation, whatever the run's sessions; runs pass the slot indices as batch_.slots.
  bool whole_arena_ = false;
  BatchInputs batch_;
  // The resolved tensor of binding `b` in `run` (constant, state, or the whole arena). An
  // offloaded constant resolves to its slot in `ring` (null: the offloader's pool).
  Status binding_tensor(const Binding& b, const Run& run, BoundTensor* out, const char* ring = nullptr) const;
  // Ends the offloading of `run` after the model ran (`model_failed`: its entry point
  // failed); FAILED_PRECONDITION when it passed fewer offload points than offloaded layers.
  Status end_offload(Run& run, bool model_failed);
  std::shared_ptr<Offloader> offloader_;

  Mutex mu_;
  std::vector<std::unique_ptr<Instance>> idle_ WHARF_GUARDED_BY(mu_);
  // Set once by enable_graphs (under mu_), read by run() without a lock.
  std::unique_ptr<ModelGraphs> graphs_owner_ WHARF_GUARDED_BY(mu_);
  std::atomic<ModelGraphs*> graphs_{nullptr};
};

}  // namespace wharf

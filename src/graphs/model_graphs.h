/* SPDX-License-Identifier: Apache-2.0 */
// ModelGraphs: a compiled model's runs replayed from CUDA graphs, one per input shape
// (bucket), that follow the run's generation and session without recapture.
//
// Buckets (graphs/bucket_plan.h): with a symbolic dimension declared (a package method's
// manifest `dims`; the sizes given, or powers of two up to the dimension's max), a run of
// size n replays the graph of the smallest bucket >= n, its inputs padded by repeating their
// last row and its outputs with the dimension handed out as views of the real rows; the
// largest bucket is captured first (the smaller ones reuse its pool blocks); sizes past the
// largest run eagerly. Without one, a graph per exact input shape (up to max_buckets).
//
// Inputs reach the graph through its head node, a gather kernel (graphs/gather.h) that reads
// each input where it is (host inputs: packed and copied once to a staging block), copies it
// into the static buffer and pads it; a replay sets its parameters only when the inputs'
// addresses or sizes changed, so a serving loop reusing its input buffers enqueues the graph
// launch alone. WHARF_GRAPHS_LEGACY_REPLAY=1 (or GraphOptions::legacy_replay) keeps the
// earlier path (a copy per input per replay, exact shapes only) for A/B measurements.
//
// Capture (the first run of a shape; docs/decisions.md, "CUDA graphs"): the set's model
// instance (shared by its buckets, whose replays never overlap) is bound to the run's generation and to scratch state,
// folds its constants into memory Wharf owns for that generation, runs once (warm-up: kernels loaded, GEMM algorithms
// chosen), then runs again on a private stream under cudaStreamCaptureModeThreadLocal with
// the shim's allocations redirected to the model's graph pool (all buckets share it; freed
// blocks are reused, so intermediates of different buckets share memory). Inputs are gathered
// into static buffers; outputs are the static buffers the captured run returned. A state
// bound as the whole arena (Model::whole_arena) is captured on the arena itself, not a
// scratch copy (that would be the arena's size in every set's pool): the run's own rows are
// copied aside before the warm-up and back after it, so the replay writes them once. Its
// address never changes, so replays for any set of sessions (the slot indices are an input,
// copied into the static buffer like the others) re-point nothing for it.
//
// Binding without recapture: every constant, state and folded-constant block the capture was
// bound to is a range; PatchPlan (graphs/patch_plan.h) knows which kernel, memcpy and memset
// node parameters point into which range. A replay computes the run's bases (its pinned
// generation's slots, its session's state, the generation's folded constants, folded once
// per generation by a fold instance) and sets only the nodes whose ranges moved
// (cuGraphExecKernelNodeSetParams and friends). A replay therefore reads exactly the run's
// generation and session, like an eager run.
//
// Offloaded layers (Model::offloader): the captured run drives the offloader on the capture
// stream into the set's own ring of slots (its instance is bound there; the warm-up before it
// passes the offload points without copies, reading the ring as it is), so the
// graph holds the layers' copies as memcpy nodes whose sources, each offloaded constant's
// host storage in the generation, are ranges like the constants'; a replay re-points them to
// its run's generation and takes nothing of the offloader's (docs/decisions.md, "Graphs of
// offloaded models"). A capture finding the offloader held by another run is put off (that
// run executes eagerly), not failed.
//
// Preparing for a swap (docs/decisions.md, "Preparing for a swap"): the graphs listen to the
// model's container (Container::add_listener). When an update stages a generation, on the
// updater's thread and before the update returns, they fold that generation's constants into
// its record (the one a replay would make) and point a second executable graph of each bucket
// (the spare, instantiated at the first prepare from a clone of the captured graph) at it. A
// replay takes whichever executable graph needs the fewest node sets for its own run's bases
// (graphs/patch_plan.h, choose_exec): after a swap the spare, with none; a run begun before
// the swap the other one, still pointing at its generation. Both share the set's pool and
// static buffers (a set's replays never overlap). A prepare that fails (its fold) changes
// nothing: the first replay folds and re-points as without it (stats say why).
//
// Fallback: whatever cannot be captured or verified (an uncapturable call, a node type or
// parameter layout the plan cannot read, pool memory exhausted, overlapping ranges, a fold
// whose layout differs, a set-params failure, graphs held by another open run, more shapes
// than max_buckets, a size past the largest bucket) makes that run execute eagerly, and the reason is kept (stats). A
// failed capture leaves nothing behind and is not retried for that shape.
//
// Outputs of a replayed run are views of the bucket's static outputs, valid until the run
// ends: that set of graphs is held by the run until then, and the next replay of the set
// waits (on its stream) for the event recorded when the run ended. Runs open at the same time
// use different sets (each its own pool and graphs, captured at first use), up to
// max_concurrent; a run beyond them executes eagerly.
//
// Threads: run() and stats() are safe from many threads (one mutex; a replay holds it only
// while it enqueues). A prepare (a writer's thread) does its folds, instantiations and node
// sets without that mutex, on an executable graph it marked busy under it (replays take the
// other one), so a replay waits for it only while it publishes.
#pragma once

#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "core/status.h"
#include "models/model.h"

namespace wharf {

struct GraphOptions {
  uint32_t max_buckets = 8;     // distinct input shapes captured per set; later ones run eagerly
  uint64_t max_pool_bytes = 0;  // each set's pool ceiling (0: none); past it a capture fails
  // Runs that may hold graphs at once: each concurrent holder has its own set (pool and a
  // graph per bucket, captured at its first use); a run beyond them executes eagerly.
  uint32_t max_concurrent = 4;
  // Buckets of a symbolic dimension (graphs/bucket_plan.h): `bucket_dim` names it (empty: the
  // model's only one that may be padded), `bucket_sizes` its sizes (empty: the default set,
  // powers of two up to the dimension's max, where the model declares one). `exact_shapes`:
  // no padding, a graph per exact input shape.
  std::string bucket_dim;
  std::vector<int64_t> bucket_sizes;
  bool exact_shapes = false;
  // The replay path before buckets (per-input copies, exact shapes only, the wait on the last
  // holder every time, every base resolved through the run's views), for A/B host-time
  // measurements; also set by the environment variable WHARF_GRAPHS_LEGACY_REPLAY=1.
  bool legacy_replay = false;
  // Tests only: an uncapturable call (a stream synchronisation) inside the capture.
  bool test_break_capture = false;
  // Tests only: every fold a prepare attempts fails (the replays then fold, as without it).
  bool test_fail_prepare_fold = false;
};

struct GraphBucketStats {
  uint32_t set = 0;         // the concurrent set it belongs to
  std::string shapes;       // the inputs' dtypes and shapes ("I64[1, 1], I64[1]")
  int64_t size = -1;        // its bucket's size along the bucket dimension (-1: an exact shape)
  uint64_t pool_bytes = 0;  // pool memory this bucket's capture added (tag graph)
  uint64_t nodes = 0, patched_nodes = 0, patches = 0;
  double capture_ms = 0;
  // Its parts: instance, binding and fold; static inputs and the warm-up run; the captured run;
  // reading the nodes and building the patch plan (and the gather node); instantiation.
  double bind_fold_ms = 0, warmup_ms = 0, capture_run_ms = 0, scan_ms = 0, instantiate_ms = 0;
};

struct GraphStats {
  uint64_t captures = 0, capture_failures = 0;
  uint64_t replays = 0;
  // Replays that set node parameters (a binding changed), on the serving path: not those a
  // prepare had pointed already (prepointed_replays).
  uint64_t repoints = 0;
  uint64_t nodes_repointed = 0;  // node parameter sets by replays, in total
  uint64_t eager_runs = 0;       // runs served eagerly while graphs were enabled
  uint64_t padded_replays = 0;   // replays whose inputs were padded to a larger bucket
  // Generations whose constants were folded for the graphs (by captures, replays and
  // prepares); of them, by replays (on the serving path) and by prepares.
  uint64_t folds = 0, replay_folds = 0, prepare_folds = 0;
  // Host time, in total: binding a replay that re-pointed nodes (its bases and the set-params
  // calls), binding one that did not (the bases compared), folding for a new generation in a
  // replay (the serving path).
  uint64_t repoint_ns = 0, bind_check_ns = 0, fold_ns = 0;
  // Preparing for swaps, on writers' threads: generations prepared for, replays that found
  // their executable graph pointed at their binding by a prepare (no node set), node sets
  // done by prepares, prepares that failed (their fold; last_prepare_failure says why), host
  // time of prepares in total and of their folds; spare executable graphs instantiated, the
  // host time that took and the device memory the driver reported taken meanwhile
  // (cudaMemGetInfo around it: approximate, other allocations at the time count too).
  uint64_t prepares = 0, prepointed_replays = 0, nodes_prepointed = 0, prepare_failures = 0;
  uint64_t prepare_ns = 0, prepare_fold_ns = 0;
  uint64_t spare_execs = 0, spare_instantiate_ns = 0;
  int64_t spare_exec_bytes = 0;
  std::string last_prepare_failure;
  // Host time of replays, in total, by phase (the binding is above): choosing the graph (from
  // run() being called: the lock, the capture check, the bucket and the set; replays that
  // captured are left out), ordering after the set's previous holder, the inputs (staging,
  // the gather's parameters), cudaGraphLaunch, handing out the outputs (and registering the
  // release), and releasing the set at the run's end.
  uint64_t select_ns = 0, wait_ns = 0, inputs_ns = 0, launch_ns = 0, outputs_ns = 0, release_ns = 0;
  uint64_t pool_bytes = 0;    // the graph pool (tag graph)
  uint64_t folded_bytes = 0;  // folded constants held for live generations
  std::string last_eager_reason;
  std::string bucket_dim;             // the dimension padded to buckets ("": exact shapes)
  std::vector<int64_t> bucket_sizes;  // its sizes
  std::vector<GraphBucketStats> buckets;
};

class ModelGraphs {
 public:
  // UNSUPPORTED when the model or the shim cannot be captured (the reason named).
  static Status create(Model* model, const GraphOptions& opts, std::unique_ptr<ModelGraphs>* out);
  ~ModelGraphs();
  ModelGraphs(const ModelGraphs&) = delete;
  ModelGraphs& operator=(const ModelGraphs&) = delete;

  // Serves Model::run from a graph: *served = true and the result when it did; *served =
  // false (OK) when the caller must run eagerly (the reason is counted in stats()). With
  // `held`, a replay's outputs are not copied: *held points at the graph's own (valid until
  // the run ends: the set of graphs is the run's until then).
  Status run(Run& run, const std::vector<ModelTensor>& inputs, std::vector<ModelTensor>* outputs, bool* served,
             const std::vector<ModelTensor>** held = nullptr);
  GraphStats stats() const;

  struct Core;

 private:
  struct Listener;
  explicit ModelGraphs(std::shared_ptr<Core> core) : core_(std::move(core)) {}
  std::shared_ptr<Core> core_;  // open runs hold it too (their at_end releases the graphs)
  // Registered (weakly) on the model's container; closed by the destructor, which waits
  // for a prepare in progress (it uses the model).
  std::shared_ptr<Listener> listener_;
};

}  // namespace wharf

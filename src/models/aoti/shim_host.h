/* SPDX-License-Identifier: Apache-2.0 */
// The contract between libwharf.so and libwharf_aoti_shim.so (both built from this tree).
//
// AOTInductor-compiled models call the `aoti_torch_*` C shim functions (PyTorch's
// torch/csrc/inductor/aoti_torch/c/shim.h) and the CUDA runtime, and expect the process to
// provide both. libwharf.so exports only `wharf_*`, so the shims live in a separate library,
// libwharf_aoti_shim.so, that the model loader opens with global symbol scope before the
// model (docs/decisions.md: "Running AOTInductor models"). The shim library depends on
// libcudart.so, which provides the CUDA runtime symbols the model imports.
//
// This header is the only thing the two libraries share: a C table libwharf hands to the
// shim at load, and the few extra entry points libwharf looks up in the shim with dlsym.
#pragma once

#include <stddef.h>
#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

typedef struct wharf_aoti_host {
  uint32_t struct_size;
  // Accounts `delta` bytes of memory the shim allocated (or freed, negative) for models
  // (intermediate buffers, outputs), under the runtime's workspace tag.
  void (*account)(int64_t delta, void* user);
  // A one-line message from the shim or the model (aoti_torch_warn, failures).
  void (*log)(int32_t is_error, const char* message, void* user);
  void* user;
  // Appended (offloaders): a compiled model reached an offload point of `layer` in the run
  // the calling thread executes it for: point 0 = before the layer reads its weights (the
  // custom op wharf::offload_wait), 1 = its kernels are issued (wharf::offload_issued).
  // Returns NULL on success, else the reason (valid until the thread's next call).
  const char* (*offload)(int32_t point, int64_t layer, void* user);
} wharf_aoti_host;

// Exported by libwharf_aoti_shim.so. Installs the host table (process-wide; the last call
// wins; NULL detaches). Returns 0.
typedef int32_t (*wharf_aoti_attach_fn)(const wharf_aoti_host* host);
// Exported by libwharf_aoti_shim.so. Starts (sink != NULL) or stops capturing the tensor
// handles the calling thread creates through aoti_torch_new_tensor_handle: each is passed
// to sink(handle, user). The model container keeps such handles for user-managed constants
// and never deletes them; the loader collects them and deletes them when it rebinds.
typedef void (*wharf_aoti_capture_fn)(void (*sink)(void* handle, void* user), void* user);
// Exported by libwharf_aoti_shim.so: the calling thread's last shim error ("" if none).
typedef const char* (*wharf_aoti_last_error_fn)(void);

// Where the shim takes the device memory of the tensors it allocates (aoti_torch_empty_strided,
// clones, GEMM workspaces) while installed on a thread: CUDA graph capture (a pool whose
// addresses the graph keeps) and constant folding into memory Wharf owns per generation.
// alloc returns 0 and sets *out (bytes may be 0: *out may stay NULL), or nonzero to fail the
// shim call. free (may be NULL) is called when the tensor's storage dies, from any thread;
// `user` must outlive every storage allocated through it. Memory from alloc is not accounted
// by the shim (the host table's account) nor freed by it.
typedef struct wharf_aoti_allocator {
  uint32_t struct_size;
  int32_t (*alloc)(uint64_t bytes, void** out, void* user);
  void (*free)(void* ptr, uint64_t bytes, void* user);
  void* user;
} wharf_aoti_allocator;
// Exported by libwharf_aoti_shim.so. Installs `a` (copied) for CUDA allocations made on the
// calling thread; NULL restores the default (the stream-ordered allocator).
typedef void (*wharf_aoti_set_allocator_fn)(const wharf_aoti_allocator* a);

// Exported by libwharf_aoti_shim.so: how many aten GEMM fallback calls (process-wide, since
// load) the shim's GEMV kernels served (gemv; gemv_elementwise of them with element loads,
// the operands not 16-byte aligned; gemv_kn of them against a row-major [K, N] mat2, GPT-2's
// Conv1D weight) and how many cublasLtMatmul calls the others made (a call whose bias
// epilogue has no algorithm makes two). out->struct_size must be set; fields past it are
// left as they are (gemv_kn was appended), one smaller than through cublaslt leaves *out as
// is. For tests and benchmarks. Appended: of the cublasLtMatmul calls, how many ran with the
// algorithm chosen for graph capture (graph_algo: one whose kernels take a parameter array,
// see wharf_aoti_gemm_graph_algos) and how many wanted one but ran the heuristic's first
// choice because no candidate qualified (graph_fallback).
typedef struct wharf_aoti_gemm_stats_t {
  uint32_t struct_size;
  uint64_t gemv;
  uint64_t gemv_elementwise;
  uint64_t cublaslt;
  uint64_t gemv_kn;
  uint64_t graph_algo;
  uint64_t graph_fallback;
} wharf_aoti_gemm_stats_t;
typedef void (*wharf_aoti_gemm_stats_fn)(wharf_aoti_gemm_stats_t* out);
// Exported by libwharf_aoti_shim.so: sets the GEMV path of the GEMM fallbacks, process-wide,
// for calls that start after it: 0 off (every call on cuBLASLt), 1 on (the default), 2 on
// but float16/bfloat16 with 5 to 8 rows on the FMA kernel rather than the tensor cores (to
// compare the two), 3 on but float16/bfloat16 with 5 to 8 rows and a weight above the
// measured size where cuBLASLt was faster on cuBLASLt (whose bfloat16 kernels graphs cannot
// re-point: for runs without graphs); any other value means 1. WHARF_AOTI_GEMV=0..3 at load
// sets the initial mode (another value is said on stderr and 1 applies; docs/environment.md).
// Returns the previous mode.
typedef int32_t (*wharf_aoti_gemm_use_gemv_fn)(int32_t enabled);
// Exported by libwharf_aoti_shim.so: 1 launches the GEMV kernels with programmatic dependent
// launch (sm_90: a GEMV may start, and prefetch its weight into L2, while the stream's
// previous kernel finishes; it waits for that kernel before reading its inputs), 0 (the
// default; any other value) plain launches. WHARF_AOTI_GEMV_PDL=0/1 at load sets it (another
// value is said on stderr and 0 applies).
// Process-wide, for calls that start after it; returns the previous setting.
typedef int32_t (*wharf_aoti_gemm_use_pdl_fn)(int32_t enabled);

// Exported by libwharf_aoti_shim.so: when the cuBLASLt GEMMs use an algorithm chosen for CUDA
// graph capture instead of the heuristic's first choice. Graph re-pointing (src/graphs)
// reads each kernel node's parameter array; some cuBLASLt kernels (bfloat16 on Hopper) are
// launched with one opaque parameter buffer (CU_LAUNCH_PARAM_BUFFER_POINTER) instead, which
// makes the capture fail. The graph algorithm of a problem is the first of cuBLASLt's
// candidates (the eager call's algorithm, so that a replay computes what an eager call
// computes wherever it can, then the heuristic's 16 in its order) whose call, captured into a
// throw-away graph
// on a private stream, gives only kernel nodes with a parameter array (and node types graphs
// re-point) and whose operands' addresses appear in those parameters only as whole 8-byte
// words (a second capture with the operands moved differs exactly there), so re-pointing a
// word re-points the kernel; if none of those qualifies, the fastest that qualifies of a
// search limited to each other algorithm ID (each timed: 5 calls on the probe stream into a
// scratch output, reading the real operands). Probed once per problem
// and cached; when none qualifies, the heuristic's first choice runs (the capture then fails
// as before) and the shim logs it once per problem. Modes: 0 never; 1 (the default) while a
// wharf_aoti_allocator is installed on the calling thread (Wharf's warm-up before a capture,
// so the probe and the kernels' first launch happen outside it, and its folds) or the call's
// stream is being captured (the probe then runs in relaxed capture mode on its private
// stream, beside the caller's capture); 2 always (eager runs then compute what graph replays
// compute, bit for bit). WHARF_AOTI_GEMM_GRAPH_ALGOS=0..2 at load sets the initial mode
// (another value is said on stderr and 1 applies).
// Process-wide, for calls that start after it; returns the previous mode.
typedef int32_t (*wharf_aoti_gemm_graph_algos_fn)(int32_t mode);

// What a probe saw (wharf_aoti_gemm_probe): one cuBLASLt candidate.
typedef struct wharf_aoti_gemm_probe_candidate_t {
  uint64_t algo[8];      // the cublasLtMatmulAlgo_t cuBLASLt returned
  uint64_t workspace;    // bytes it needs
  int32_t algo_id;       // CUBLASLT_ALGO_CONFIG_ID
  int32_t source;        // 0: the heuristic's list; 1: the search limited to its algorithm ID
  int32_t kernel_nodes;  // kernel nodes one call captured (-1: the call or its capture failed)
  uint32_t flags;        // WHARF_AOTI_PROBE_*
  double time_us;        // GPU time per call the probe measured (0: not timed)
} wharf_aoti_gemm_probe_candidate_t;
// Every kernel node has a parameter array (none passes CU_LAUNCH_PARAM_BUFFER_POINTER) and
// every node is of a type graphs re-point.
#define WHARF_AOTI_PROBE_PARAMS 1u
// The operands' addresses appear in the kernel parameters as whole 8-byte words only, each
// at least once (checked when the driver reports parameter layouts, CUDA 12.4+).
#define WHARF_AOTI_PROBE_REPOINTABLE 2u
#define WHARF_AOTI_PROBE_MAX_CANDIDATES 64
typedef struct wharf_aoti_gemm_probe_t {
  uint32_t struct_size;  // set by the caller: sizeof(wharf_aoti_gemm_probe_t)
  // cuBLASLt's problem after the shim's orientation (a row-major out is computed as out^T):
  // column-major A (lda), B (ldb), D (ldd), op(A) m x k, op(B) k x n.
  int32_t transa, transb;
  int64_t m, n, k, lda, ldb, ldd;
  int32_t heuristic;  // the first entries: the eager call's algorithm (first), the heuristic's list
  int32_t count;      // candidates in candidates[]
  int32_t chosen;     // the one the shim runs for graphs, -1: none qualified
  int32_t reserved;
  double probe_us;  // host time the probe took
  wharf_aoti_gemm_probe_candidate_t candidates[WHARF_AOTI_PROBE_MAX_CANDIDATES];
} wharf_aoti_gemm_probe_t;
// Exported by libwharf_aoti_shim.so: aoti_torch_cuda_mm_out(out, mat1, mat2) on cuBLASLt
// (never the GEMV path) with the graph algorithm probed afresh (the cache is neither read nor
// written) and what the probe saw in *report (NULL: not reported). flags bit 0: also try
// every algorithm ID's candidates when the heuristic's list has one that qualifies. Returns 0,
// or 1 with the reason in wharf_aoti_last_error (report->chosen is then -1 and count 0 if
// the probe did not run). For benchmarks and tests.
typedef int32_t (*wharf_aoti_gemm_probe_fn)(void* out, void* mat1, void* mat2, uint32_t flags,
                                            wharf_aoti_gemm_probe_t* report);

#ifdef __cplusplus
}
#endif

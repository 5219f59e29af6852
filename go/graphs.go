// SPDX-License-Identifier: Apache-2.0

package wharf

// CUDA graphs of a model's runs: the experimental tier of wharf.h (WHARF_EXPERIMENTAL is
// defined in this file's preamble only). Every declaration here may change or go in any
// minor release of the library, as the C functions it calls may.

/*
#include <stdlib.h>
#define WHARF_EXPERIMENTAL
#include "wharf.h"
*/
import "C"

import (
	"runtime"
	"unsafe"
)

// GraphOptions configures Model.EnableGraphs (wharf_graph_options). A nil *GraphOptions
// means the zero value: every default.
//
// Experimental: part of wharf.h's experimental tier; it may change in any minor release.
type GraphOptions struct {
	// MaxBuckets is how many distinct input shapes (buckets) get a graph, each captured at
	// the first run of that shape; runs of further shapes execute eagerly. 0: 8.
	MaxBuckets uint32
	// MaxPoolBytes is the ceiling of each graph pool in bytes (0: none): a capture that
	// would pass it fails and its shape runs eagerly.
	MaxPoolBytes uint64
	// MaxConcurrentRuns is how many runs may replay at the same time: each open run that
	// replayed holds a set of graphs until it ends; a run finding every set held executes
	// eagerly. 0: 4.
	MaxConcurrentRuns uint32
	// BucketDim names the symbolic dimension (a model package method's manifest dims:
	// a batched method's session dimension, decode_batch's "N", or one marked "pad": "repeat",
	// the exporter's prefill "T") whose runs are padded to BucketSizes; "" with sizes:
	// the method's only paddable dimension. A run of size n replays the graph of the smallest
	// size >= n, its inputs padded by repeating their last row, its outputs with the
	// dimension views of the real rows; sizes past the largest run eagerly. No sizes: the
	// default set (powers of two up to the dimension's max, and the max) where the method
	// has one session dimension with a max (a prefill's T: exact shapes). ExactShapes: no
	// padding, a graph per exact shape.
	BucketDim   string
	BucketSizes []int64
	ExactShapes bool
}

// GraphStats are the statistics of a model's CUDA graphs (wharf_graph_stats).
//
// Experimental: part of wharf.h's experimental tier; it may change in any minor release.
type GraphStats struct {
	NumBuckets      uint32 // graphs held, one per input shape per concurrent set
	Captures        uint64 // graphs captured
	CaptureFailures uint64 // shapes whose capture failed (they run eagerly)
	Replays         uint64 // runs served by a graph
	Repoints        uint64 // replays that re-pointed nodes (their binding differed)
	NodesRepointed  uint64 // node parameter updates, in total
	EagerRuns       uint64 // runs executed eagerly while graphs were enabled
	Folds           uint64 // generations whose constants were folded for the graphs
	PoolBytes       uint64 // the graph pools (memory tag "graph")
	FoldedBytes     uint64 // folded constants held for live generations
	// Host time in total, nanoseconds: binding replays that re-pointed nodes, binding
	// replays that did not (the bases compared), folding the constants of new generations.
	RepointNS, BindCheckNS, FoldNS uint64
	// LastEagerReason says why the last eager run was not replayed ("" if none; the
	// library truncates it to 255 bytes).
	LastEagerReason string
	PaddedReplays   uint64 // replays whose inputs were padded to a larger bucket
	BucketDim       string // the dimension padded to buckets ("" for exact shapes)
	NumBucketSizes  uint32 // its number of bucket sizes
	// Host time of replays in total, nanoseconds, by phase (their binding is in RepointNS
	// and BindCheckNS), for a breakdown of Model.Run's host time per replay (divide by
	// Replays): choosing the graph (the lock, the check that the caller is not capturing
	// the stream, the bucket, the set and the graph; replays that captured a graph are left
	// out), ordering after the set's previous run (an event query, or a wait), the inputs
	// (host inputs packed and copied, the gather's parameters), cudaGraphLaunch, handing out
	// the outputs, and releasing the set when the run ends (in Run.End). Since 0.3
	// (experimental).
	SelectNS, WaitNS, InputsNS, LaunchNS, OutputsNS, ReleaseNS uint64
	// Preparing for swaps: an update that stages a generation folds its constants and
	// points a spare graph of each bucket at it before it returns. Folds done by replays
	// (on the serving path) and by updates; replays that found their graph pointed at
	// their binding by an update; generations prepared for; preparations that failed (the
	// first replay then folds and re-points); their host time in total, nanoseconds (on
	// the updaters' threads). Since 0.3 (experimental).
	ReplayFolds, PrepareFolds, PrepointedReplays, Prepares, PrepareFailures, PrepareNS uint64
}

// GraphBucket describes one captured graph (wharf_graph_bucket_info).
//
// Experimental: part of wharf.h's experimental tier; it may change in any minor release.
type GraphBucket struct {
	Set          uint32  // its concurrent set (0 .. MaxConcurrentRuns - 1)
	PoolBytes    uint64  // pool memory its capture added (memory tag "graph")
	Nodes        uint64  // nodes of the graph
	PatchedNodes uint64  // nodes with a parameter pointing at constants, state or folded constants
	Patches      uint64  // such parameter words
	CaptureMS    float64 // fold, warm-up, capture and instantiation, milliseconds
	// Shapes are the inputs' dtypes and shapes, e.g. "I64[1, 1], I64[1]" (truncated to
	// 127 bytes by the library).
	Shapes     string
	BucketSize int64 // its size along the bucket dimension (-1: an exact shape)
	// CaptureMS in parts: the instance, binding and fold; the static inputs and the warm-up
	// run; the captured run; reading the nodes and building the patch plan; instantiation.
	BindFoldMS, WarmupMS, CaptureRunMS, ScanMS, InstantiateMS float64
}

// graphOptions fills a wharf_graph_options by the library's sized init with this
// binding's struct size, then opts' fields (nil: the defaults). The bucket name and sizes
// are copied to C memory (cgo forbids Go pointers inside the struct the library reads):
// free releases them once the call returned.
func graphOptions(opts *GraphOptions) (o C.wharf_graph_options, free func()) {
	C.wharf_graph_options_init_sized(&o, C.sizeof_wharf_graph_options)
	free = func() {}
	if opts == nil {
		return o, free
	}
	o.max_buckets = C.uint32_t(opts.MaxBuckets)
	o.max_pool_bytes = C.uint64_t(opts.MaxPoolBytes)
	o.max_concurrent_runs = C.uint32_t(opts.MaxConcurrentRuns)
	if opts.ExactShapes {
		o.exact_shapes = 1
	}
	var dim *C.char
	var sizes *C.int64_t
	if opts.BucketDim != "" {
		dim = C.CString(opts.BucketDim)
		o.bucket_dim = dim
	}
	if n := len(opts.BucketSizes); n > 0 {
		sizes = (*C.int64_t)(C.malloc(C.size_t(n) * C.size_t(unsafe.Sizeof(C.int64_t(0)))))
		copy(unsafe.Slice((*int64)(unsafe.Pointer(sizes)), n), opts.BucketSizes)
		o.bucket_sizes = sizes
		o.num_bucket_sizes = C.uint32_t(n)
	}
	free = func() {
		C.free(unsafe.Pointer(dim))
		C.free(unsafe.Pointer(sizes))
	}
	return o, free
}

// The options' C strings and sizes as Go values (for tests: cgo is not usable in them).
func graphOptionsBuckets(o *C.wharf_graph_options) (string, []int64) {
	dim := ""
	if o.bucket_dim != nil {
		dim = C.GoString(o.bucket_dim)
	}
	var sizes []int64
	if o.num_bucket_sizes > 0 {
		sizes = append(sizes, unsafe.Slice((*int64)(unsafe.Pointer(o.bucket_sizes)), int(o.num_bucket_sizes))...)
	}
	return dim, sizes
}

// fixedString reads a char array the library NUL-terminates, never past its n bytes.
func fixedString(p *C.char, n int) string {
	b := unsafe.Slice((*byte)(unsafe.Pointer(p)), n)
	for i, c := range b {
		if c == 0 {
			return string(b[:i])
		}
	}
	return string(b)
}

func graphStatsOf(s *C.wharf_graph_stats) GraphStats {
	return GraphStats{
		NumBuckets:      uint32(s.num_buckets),
		Captures:        uint64(s.captures),
		CaptureFailures: uint64(s.capture_failures),
		Replays:         uint64(s.replays),
		Repoints:        uint64(s.repoints),
		NodesRepointed:  uint64(s.nodes_repointed),
		EagerRuns:       uint64(s.eager_runs),
		Folds:           uint64(s.folds),
		PoolBytes:       uint64(s.pool_bytes),
		FoldedBytes:     uint64(s.folded_bytes),
		RepointNS:       uint64(s.repoint_ns),
		BindCheckNS:     uint64(s.bind_check_ns),
		FoldNS:          uint64(s.fold_ns),
		LastEagerReason: fixedString(&s.last_eager_reason[0], len(s.last_eager_reason)),
		PaddedReplays:   uint64(s.padded_replays),
		BucketDim:       fixedString(&s.bucket_dim[0], len(s.bucket_dim)),
		NumBucketSizes:  uint32(s.num_bucket_sizes),
		SelectNS:        uint64(s.select_ns),
		WaitNS:          uint64(s.wait_ns),
		InputsNS:        uint64(s.inputs_ns),
		LaunchNS:        uint64(s.launch_ns),
		OutputsNS:       uint64(s.outputs_ns),
		ReleaseNS:       uint64(s.release_ns),

		ReplayFolds:       uint64(s.replay_folds),
		PrepareFolds:      uint64(s.prepare_folds),
		PrepointedReplays: uint64(s.prepointed_replays),
		Prepares:          uint64(s.prepares),
		PrepareFailures:   uint64(s.prepare_failures),
		PrepareNS:         uint64(s.prepare_ns),
	}
}

func graphBucketOf(b *C.wharf_graph_bucket_info) GraphBucket {
	return GraphBucket{
		Set:           uint32(b.set),
		PoolBytes:     uint64(b.pool_bytes),
		Nodes:         uint64(b.nodes),
		PatchedNodes:  uint64(b.patched_nodes),
		Patches:       uint64(b.patches),
		CaptureMS:     float64(b.capture_ms),
		Shapes:        fixedString(&b.shapes[0], len(b.shapes)),
		BucketSize:    int64(b.bucket_size),
		BindFoldMS:    float64(b.bind_fold_ms),
		WarmupMS:      float64(b.warmup_ms),
		CaptureRunMS:  float64(b.capture_run_ms),
		ScanMS:        float64(b.scan_ms),
		InstantiateMS: float64(b.instantiate_ms),
	}
}

// The C calls, on a model pointer the caller holds (nil reaches the library, whose
// argument checks the tests exercise without a GPU).
func enableGraphs(mp unsafe.Pointer, opts *GraphOptions) error {
	o, free := graphOptions(opts)
	defer free()
	return statusError(C.wharf_model_enable_graphs((*C.wharf_model)(mp), &o))
}

func getGraphStats(mp unsafe.Pointer) (GraphStats, error) {
	var s C.wharf_graph_stats
	s.struct_size = C.sizeof_wharf_graph_stats // this binding's struct size
	if err := statusError(C.wharf_model_get_graph_stats((*C.wharf_model)(mp), &s)); err != nil {
		return GraphStats{}, err
	}
	return graphStatsOf(&s), nil
}

func getGraphBucket(mp unsafe.Pointer, index uint32) (GraphBucket, error) {
	var b C.wharf_graph_bucket_info
	b.struct_size = C.sizeof_wharf_graph_bucket_info // this binding's struct size
	if err := statusError(C.wharf_model_get_graph_bucket((*C.wharf_model)(mp), C.uint32_t(index), &b)); err != nil {
		return GraphBucket{}, err
	}
	return graphBucketOf(&b), nil
}

// EnableGraphs makes the model's runs replay CUDA graphs (wharf_model_enable_graphs; see
// docs/decisions.md, "CUDA graphs"): from this call on, Model.Run captures a graph the first
// time it sees a shape of the inputs and replays it for every later run of that shape,
// re-pointed (never recaptured) after a swap, an update or for another session. Outputs of
// a replayed run are the graph's static buffers, valid until Run.End like every model
// output. Whatever cannot be captured runs eagerly and says why in GraphStats. opts may be
// nil (defaults). With buckets (GraphOptions.BucketDim, BucketSizes, or the default set of
// a package method's dimension) runs are padded to the smallest bucket that fits (see
// wharf_model_enable_graphs for the rule a method must satisfy).
//
// A model with offloaded layers replays too (its layers' copies are graph nodes that follow
// swaps); a capture finding its offloader held by another run is put off.
//
// Errors: ErrUnsupported (a model or shim library without the entry points capture needs,
// a CUDA driver older than 12.4; named),
// ErrFailedPrecondition (graphs already enabled), ErrInvalidArgument (a nil Model; a bucket
// dimension the model does not declare, a size < 1, past its max or given twice, sizes with
// ExactShapes; named), ErrClosed.
//
// Experimental: part of wharf.h's experimental tier; it may change in any minor release.
func (m *Model) EnableGraphs(opts *GraphOptions) error {
	const what = "Model.EnableGraphs"
	if m == nil {
		return invalidArgument("%s: the model is nil", what)
	}
	mp, err := m.h.acquire(what)
	if err != nil {
		return err
	}
	defer m.h.release()
	err = enableGraphs(mp, opts)
	runtime.KeepAlive(m)
	return err
}

// GraphStats reads the statistics of the model's CUDA graphs. Errors:
// ErrFailedPrecondition (graphs not enabled), ErrInvalidArgument (a nil Model),
// ErrClosed.
//
// Experimental: part of wharf.h's experimental tier; it may change in any minor release.
func (m *Model) GraphStats() (GraphStats, error) {
	const what = "Model.GraphStats"
	if m == nil {
		return GraphStats{}, invalidArgument("%s: the model is nil", what)
	}
	mp, err := m.h.acquire(what)
	if err != nil {
		return GraphStats{}, err
	}
	defer m.h.release()
	s, err := getGraphStats(mp)
	runtime.KeepAlive(m)
	return s, err
}

// GraphBucket describes graph index of the model, in capture order
// (0 .. GraphStats.NumBuckets - 1). Errors: ErrFailedPrecondition (graphs not enabled),
// ErrInvalidArgument (index out of range, a nil Model), ErrClosed.
//
// Experimental: part of wharf.h's experimental tier; it may change in any minor release.
func (m *Model) GraphBucket(index int) (GraphBucket, error) {
	const what = "Model.GraphBucket"
	if m == nil {
		return GraphBucket{}, invalidArgument("%s: the model is nil", what)
	}
	if index < 0 || uint64(index) > uint64(^uint32(0)) {
		return GraphBucket{}, invalidArgument("%s: index %d out of range", what, index)
	}
	mp, err := m.h.acquire(what)
	if err != nil {
		return GraphBucket{}, err
	}
	defer m.h.release()
	b, err := getGraphBucket(mp, uint32(index))
	runtime.KeepAlive(m)
	return b, err
}

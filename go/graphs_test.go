// SPDX-License-Identifier: Apache-2.0

package wharf

import (
	"strings"
	"testing"
	"unsafe"
)

// ---- CUDA graphs: what can be checked without a GPU (a Model needs one) -------------------

// GraphOptions become the wharf_graph_options EnableGraphs passes: the library's sized
// init with this binding's struct size (defaults all zero), then the fields.
func TestGraphOptionsRoundTrip(t *testing.T) {
	o, free := graphOptions(nil)
	free()
	if uintptr(o.struct_size) != unsafe.Sizeof(o) || o.max_buckets != 0 || o.max_pool_bytes != 0 || o.max_concurrent_runs != 0 ||
		o.bucket_dim != nil || o.bucket_sizes != nil || o.num_bucket_sizes != 0 || o.exact_shapes != 0 {
		t.Fatalf("defaults: %+v", o)
	}
	o, free = graphOptions(&GraphOptions{MaxBuckets: 3, MaxPoolBytes: 1 << 40, MaxConcurrentRuns: 2,
		BucketDim: "T", BucketSizes: []int64{16, 8, 1 << 40}})
	dim, sizes := graphOptionsBuckets(&o)
	if uintptr(o.struct_size) != unsafe.Sizeof(o) || o.max_buckets != 3 || o.max_pool_bytes != 1<<40 || o.max_concurrent_runs != 2 ||
		dim != "T" || len(sizes) != 3 || sizes[0] != 16 || sizes[1] != 8 || sizes[2] != 1<<40 || o.exact_shapes != 0 {
		t.Fatalf("round trip: %+v (dim %q, sizes %v)", o, dim, sizes)
	}
	free()
	o, free = graphOptions(&GraphOptions{ExactShapes: true})
	defer free()
	if o.exact_shapes != 1 || o.bucket_dim != nil || o.num_bucket_sizes != 0 {
		t.Fatalf("exact shapes: %+v", o)
	}
}

// Every field of the C stats reaches the Go struct; the strings stop at their NUL, or at
// the array's end when the library filled it.
func TestGraphStatsConversion(t *testing.T) {
	var s _Ctype_wharf_graph_stats
	s.num_buckets, s.captures, s.capture_failures, s.replays = 2, 3, 4, 5
	s.repoints, s.nodes_repointed, s.eager_runs, s.folds = 6, 7, 8, 9
	s.pool_bytes, s.folded_bytes, s.repoint_ns, s.bind_check_ns, s.fold_ns = 10, 11, 12, 13, 1<<40
	s.padded_replays, s.num_bucket_sizes = 14, 4
	s.select_ns, s.wait_ns, s.inputs_ns, s.launch_ns, s.outputs_ns, s.release_ns = 15, 16, 17, 18, 19, 1<<41
	s.replay_folds, s.prepare_folds, s.prepointed_replays, s.prepares, s.prepare_failures, s.prepare_ns = 20, 21, 22, 23, 24, 1<<42
	reason := "shape I64[1, 9] past max_buckets"
	for i := range reason {
		s.last_eager_reason[i] = _Ctype_char(reason[i])
	}
	s.bucket_dim[0] = 'N'
	// The struct this binding passes is the header's, with the replay phases appended after
	// the bucket fields (440 bytes before them on LP64, 488 with them) and the preparation
	// counters after those (536 with them).
	if unsafe.Sizeof(uintptr(0)) == 8 && (unsafe.Sizeof(s) != 536 || unsafe.Offsetof(s.select_ns) != 440 ||
		unsafe.Offsetof(s.release_ns) != 480 || unsafe.Offsetof(s.replay_folds) != 488) {
		t.Fatalf("wharf_graph_stats: size %d, select_ns at %d, release_ns at %d, replay_folds at %d", unsafe.Sizeof(s),
			unsafe.Offsetof(s.select_ns), unsafe.Offsetof(s.release_ns), unsafe.Offsetof(s.replay_folds))
	}
	got := graphStatsOf(&s)
	want := GraphStats{NumBuckets: 2, Captures: 3, CaptureFailures: 4, Replays: 5, Repoints: 6, NodesRepointed: 7,
		EagerRuns: 8, Folds: 9, PoolBytes: 10, FoldedBytes: 11, RepointNS: 12, BindCheckNS: 13, FoldNS: 1 << 40,
		LastEagerReason: reason, PaddedReplays: 14, BucketDim: "N", NumBucketSizes: 4,
		SelectNS: 15, WaitNS: 16, InputsNS: 17, LaunchNS: 18, OutputsNS: 19, ReleaseNS: 1 << 41,
		ReplayFolds: 20, PrepareFolds: 21, PrepointedReplays: 22, Prepares: 23, PrepareFailures: 24, PrepareNS: 1 << 42}
	if got != want {
		t.Fatalf("stats %+v, want %+v", got, want)
	}

	var b _Ctype_wharf_graph_bucket_info
	b.set, b.pool_bytes, b.nodes, b.patched_nodes, b.patches, b.capture_ms = 1, 4096, 120, 30, 45, 2.5
	b.bucket_size = -1
	b.bind_fold_ms, b.warmup_ms, b.capture_run_ms, b.scan_ms, b.instantiate_ms = 0.5, 1.5, 2.5, 3.5, 4.5
	for i := range b.shapes {
		b.shapes[i] = 'x' // no NUL: the whole array
	}
	gb := graphBucketOf(&b)
	if gb.Set != 1 || gb.PoolBytes != 4096 || gb.Nodes != 120 || gb.PatchedNodes != 30 || gb.Patches != 45 ||
		gb.CaptureMS != 2.5 || gb.Shapes != strings.Repeat("x", len(b.shapes)) || gb.BucketSize != -1 ||
		gb.BindFoldMS != 0.5 || gb.WarmupMS != 1.5 || gb.CaptureRunMS != 2.5 || gb.ScanMS != 3.5 || gb.InstantiateMS != 4.5 {
		t.Fatalf("bucket %+v", gb)
	}
}

// The library's own argument checks, reached without a GPU (a NULL model), come back as
// ErrInvalidArgument naming the function.
func TestGraphCallsOnANullModel(t *testing.T) {
	wantCode(t, enableGraphs(nil, nil), ErrInvalidArgument, "wharf_model_enable_graphs", "NULL")
	wantCode(t, enableGraphs(nil, &GraphOptions{MaxBuckets: 1}), ErrInvalidArgument, "NULL")
	_, err := getGraphStats(nil)
	wantCode(t, err, ErrInvalidArgument, "wharf_model_get_graph_stats", "NULL")
	_, err = getGraphBucket(nil, 0)
	wantCode(t, err, ErrInvalidArgument, "wharf_model_get_graph_bucket", "NULL")
}

// What the binding answers itself: nil and closed models, a negative index.
func TestGraphMethodsNilAndClosed(t *testing.T) {
	var nilModel *Model
	wantCode(t, nilModel.EnableGraphs(nil), ErrInvalidArgument, "nil")
	_, err := nilModel.GraphStats()
	wantCode(t, err, ErrInvalidArgument, "nil")
	_, err = nilModel.GraphBucket(0)
	wantCode(t, err, ErrInvalidArgument, "nil")

	rt := hostRuntime(t)
	m := fakeModel(twoConstantContainer(t, rt))
	_, err = m.GraphBucket(-1)
	wantCode(t, err, ErrInvalidArgument, "-1")
	must(t, m.Close())
	wantClosed(t, m.EnableGraphs(&GraphOptions{MaxBuckets: 2}))
	_, err = m.GraphStats()
	wantClosed(t, err)
	_, err = m.GraphBucket(0)
	wantClosed(t, err)
}

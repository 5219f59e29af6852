// SPDX-License-Identifier: Apache-2.0

package wharf

import (
	"math"
	"testing"
	"time"
	"unsafe"
)

// An in-place update with a run open: InPlaceMaxWait bounds the wait for that run, after
// which the written constant gets fresh storage; the open run keeps reading the old data.
func TestUpdateInPlaceMaxWait(t *testing.T) {
	rt := hostRuntime(t)
	c := twoConstantContainer(t, rt)
	must(t, c.UpdateFromHost([]HostTensor{
		HostTensorOf("a", []int64{2, 3}, []float32{1, 1, 1, 1, 1, 1}),
		HostTensorOf("b", []int64{4}, []int32{1, 1, 1, 1}),
	}, nil))
	must(t, c.Swap())
	must(t, c.FreeInactive())
	gen := c.Generation()
	open, err := c.BeginRun()
	must(t, err)
	defer open.End()
	before, err := rt.MemoryStats()
	must(t, err)

	start := time.Now()
	err = c.UpdateFromHost([]HostTensor{HostTensorOf("a", []int64{2, 3}, []float32{8, 8, 8, 8, 8, 8})},
		&UpdateOptions{Target: TargetActiveInPlace, InPlaceMaxWait: 50 * time.Millisecond})
	took := time.Since(start)
	must(t, err)
	if took < 40*time.Millisecond || took > 500*time.Millisecond {
		t.Fatalf("the in-place update with InPlaceMaxWait 50ms took %v", took)
	}
	if v, err := ReadValues[float32](open, "a"); err != nil || v[0] != 1 {
		t.Fatalf("the open run reads %v, %v; want the old data", v, err)
	}
	if v, g := readRun[float32](t, c, "a"); v[0] != 8 || g <= gen {
		t.Fatalf("a new run reads %v in generation %d (was %d)", v, g, gen)
	}
	after, err := rt.MemoryStats()
	must(t, err)
	if grew := after.Current[MemConstants] - before.Current[MemConstants]; grew != 24 {
		t.Fatalf("the pinned constant should have got fresh storage (24 bytes): grew by %d", grew)
	}

	// Negative: never wait.
	start = time.Now()
	err = c.UpdateFromHost([]HostTensor{HostTensorOf("b", []int64{4}, []int32{2, 2, 2, 2})},
		&UpdateOptions{Target: TargetActiveInPlace, InPlaceMaxWait: -1})
	must(t, err)
	if took := time.Since(start); took > 500*time.Millisecond {
		t.Fatalf("an in-place update that never waits took %v", took)
	}
	if v, err := ReadValues[int32](open, "b"); err != nil || v[0] != 1 {
		t.Fatalf("the open run reads b = %v, %v; want the old data", v, err)
	}
}

// WaitStream names a CUDA stream: the host backend refuses one.
func TestUpdateWaitStreamOnHost(t *testing.T) {
	rt := hostRuntime(t)
	c := twoConstantContainer(t, rt)
	var fake byte // any non-nil address: the host backend refuses before using it
	stream := unsafe.Pointer(&fake)
	a := []HostTensor{HostTensorOf("a", []int64{2, 3}, make([]float32, 6))}
	wantCode(t, c.UpdateFromHost(a, &UpdateOptions{WaitStream: stream}), ErrInvalidArgument, "wait_stream")
	wantCode(t, c.Swap(), ErrFailedPrecondition) // nothing staged

	store := newStore(t, rt)
	_, err := NewContainer(rt, &ContainerOptions{Store: store, Constants: []ConstantDecl{{FQN: "w", DType: DTypeF32, Shape: []int64{1}}}})
	must(t, err)
	err = store.UpdateFromHost([]HostTensor{HostTensorOf("w", []int64{1}, []float32{1})}, &UpdateOptions{WaitStream: stream})
	wantCode(t, err, ErrInvalidArgument, "wait_stream")
	must(t, c.UpdateFromHost(a, &UpdateOptions{WaitStream: nil}))
}

func TestUpdateArgs(t *testing.T) {
	for _, tc := range []struct {
		wait time.Duration
		ms   int64
	}{
		{0, -1}, // the library's default (1 s)
		{-1, 0},
		{-time.Hour, 0},
		{time.Nanosecond, 1},
		{50 * time.Millisecond, 50},
		{1500 * time.Microsecond, 2},
		{time.Duration(math.MaxInt64), math.MaxUint32},
	} {
		args := updateArgs(&UpdateOptions{InPlaceMaxWait: tc.wait})
		if got := int64(args.in_place_max_wait_ms); got != tc.ms {
			t.Errorf("InPlaceMaxWait %v: %d ms, want %d", tc.wait, got, tc.ms)
		}
	}
	args := updateArgs(&UpdateOptions{Target: TargetActiveInPlace, RequireFull: true})
	if args.target != 1 || args.require_full != 1 || args.wait_stream != 0 || args.fold_handle != 0 {
		t.Fatalf("args %+v", args)
	}
}

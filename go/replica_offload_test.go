// SPDX-License-Identifier: Apache-2.0

package wharf

import (
	"context"
	"errors"
	"fmt"
	"testing"
	"time"
)

// ---- replica groups (host backend: N host runtimes) -----------------------------------

// replicaMap is a map with "w" (F32 [4]) filled with v and "n" (I32 [2]).
func replicaMap(t *testing.T, v float32) *ConstantMap {
	t.Helper()
	m, err := NewConstantMap()
	must(t, err)
	t.Cleanup(func() { m.Close() })
	_, w := bufferTensor(t, []int64{4}, []float32{v, v, v, v})
	_, n := bufferTensor(t, []int64{2}, []int32{int32(v), -int32(v)})
	must(t, m.Set("w", w))
	must(t, m.Set("n", n))
	return m
}

func TestReplicaGroupUpdatesAndSwapsEveryReplica(t *testing.T) {
	var replicas []*Container
	for i := 0; i < 3; i++ {
		c, err := NewContainerFromMap(hostRuntime(t), replicaMap(t, 1), fmt.Sprintf("r%d", i))
		must(t, err)
		defer c.Close()
		replicas = append(replicas, c)
	}
	_, err := NewReplicaGroup()
	wantCode(t, err, ErrInvalidArgument, "no containers")
	_, err = NewReplicaGroup(replicas[0], replicas[0])
	wantCode(t, err, ErrInvalidArgument)

	g, err := NewReplicaGroup(replicas...)
	must(t, err)
	if g.NumReplicas() != 3 || len(g.Replicas()) != 3 {
		t.Fatalf("NumReplicas %d, Replicas %d", g.NumReplicas(), len(g.Replicas()))
	}
	// Members are written only through the group.
	wantCode(t, replicas[1].Update(replicaMap(t, 5), nil), ErrFailedPrecondition)
	wantCode(t, replicas[1].Swap(), ErrFailedPrecondition)
	_, err = NewReplicaGroup(replicas[0])
	wantCode(t, err, ErrFailedPrecondition) // already in a group

	gens := make([]uint64, 3)
	for i, c := range replicas {
		gens[i] = c.Generation()
	}
	must(t, g.Update(replicaMap(t, 2), &UpdateOptions{RequireFull: true}))
	for i, c := range replicas {
		if w, _ := readRun[float32](t, c, "w"); w[0] != 1 || c.Generation() != gens[i] {
			t.Fatalf("replica %d sees %v before the group swap", i, w)
		}
	}
	must(t, g.Swap())
	for i, c := range replicas {
		if w, _ := readRun[float32](t, c, "w"); w[0] != 2 {
			t.Fatalf("replica %d sees %v after the group swap", i, w)
		}
		if n, _ := readRun[int32](t, c, "n"); n[1] != -2 {
			t.Fatalf("replica %d: n = %v", i, n)
		}
	}
	st, err := g.Stats()
	must(t, err)
	if st.NumReplicas != 3 || st.NumUpdates != 1 || st.NumSwaps != 1 || st.SourceBytes != 24 || st.NumBroadcasts == 0 {
		t.Fatalf("stats %+v", st)
	}
	wantCode(t, g.Update(replicaMap(t, 3), &UpdateOptions{Target: TargetActiveInPlace}), ErrUnsupported)

	// A rollback, then FreeInactive leaves nothing to swap back to.
	must(t, g.Swap())
	if w, _ := readRun[float32](t, replicas[2], "w"); w[0] != 1 {
		t.Fatalf("rollback: %v", w)
	}
	must(t, g.FreeInactive())
	wantCode(t, g.Swap(), ErrFailedPrecondition)

	// Closing the group hands the containers back.
	must(t, g.Close())
	must(t, g.Close())
	wantClosed(t, g.Swap())
	must(t, replicas[1].Update(replicaMap(t, 5), nil))
}

// Derived constants in a group: the Fold runs on every replica, a failing Fold changes no
// replica, and group calls from inside the Fold are refused rather than hang.
func TestReplicaGroupFoldsOnEveryReplica(t *testing.T) {
	var replicas []*Container
	for i := 0; i < 2; i++ {
		c := foldContainer(t)
		replicas = append(replicas, c)
	}
	g, err := NewReplicaGroup(replicas...)
	must(t, err)
	defer g.Close()
	w := func(base float32) *ConstantMap {
		m, err := NewConstantMap()
		must(t, err)
		t.Cleanup(func() { m.Close() })
		_, tw := bufferTensor(t, []int64{2, 3}, []float32{base, base + 1, base + 2, base + 3, base + 4, base + 5})
		must(t, m.Set("w", tw))
		return m
	}
	wantCode(t, g.Update(w(0), nil), ErrInvalidArgument, "fold")
	calls := 0
	must(t, g.Update(w(0), &UpdateOptions{Fold: func(r *FoldRun) error { calls++; return transpose(r) }}))
	must(t, g.Swap())
	if calls != 2 {
		t.Fatalf("the fold ran %d times, want once per replica", calls)
	}
	for i, c := range replicas {
		if v, _ := readRun[float32](t, c, "wt"); !equal(v, []float32{0, 3, 1, 4, 2, 5}) {
			t.Fatalf("replica %d: wt = %v", i, v)
		}
	}
	// The second replica's fold fails: nothing changes on either.
	calls = 0
	failure := errors.New("fold fails on replica 1")
	err = g.Update(w(10), &UpdateOptions{Fold: func(r *FoldRun) error {
		calls++
		if calls == 2 {
			return failure
		}
		return transpose(r)
	}})
	if !errors.Is(err, failure) {
		t.Fatalf("update: %v, want the fold's error", err)
	}
	for i, c := range replicas {
		if v, _ := readRun[float32](t, c, "wt"); !equal(v, []float32{0, 3, 1, 4, 2, 5}) {
			t.Fatalf("replica %d changed after a failed fold: wt = %v", i, v)
		}
	}
	// Group calls from the fold: refused, not a hang.
	var nested []error
	noHang(t, "group calls from a group fold", func() {
		must(t, g.Update(w(20), &UpdateOptions{Fold: func(r *FoldRun) error {
			nested = append(nested, g.Swap(), g.FreeInactive(), g.Update(w(30), nil))
			return transpose(r)
		}}))
	})
	for _, e := range nested {
		wantCode(t, e, ErrFailedPrecondition, "fold")
	}
	must(t, g.Swap())
	for i, c := range replicas {
		if v, _ := readRun[float32](t, c, "wt"); !equal(v, []float32{20, 23, 21, 24, 22, 25}) {
			t.Fatalf("replica %d: wt = %v", i, v)
		}
	}
}

func TestReplicaGroupUpdateContextCancelledChangesNoReplica(t *testing.T) {
	a, err := NewContainerFromMap(progressRuntime(t), progressWeights(t, 1), "a")
	must(t, err)
	defer a.Close()
	b, err := NewContainerFromMap(progressRuntime(t), progressWeights(t, 1), "b")
	must(t, err)
	defer b.Close()
	g, err := NewReplicaGroup(a, b)
	must(t, err)
	defer g.Close()
	ga, gb := a.Generation(), b.Generation()
	v2 := progressWeights(t, 2)

	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	log := &progressLog{t: t}
	err = g.UpdateContext(ctx, v2, &UpdateOptions{Progress: func(done, total uint64) { log.record(done, total); cancel() }})
	wantCancelled(t, err, context.Canceled)
	if a.Generation() != ga || b.Generation() != gb {
		t.Fatal("a cancelled group update changed a generation")
	}
	st, err := g.Stats()
	must(t, err)
	if st.NumUpdates != 0 {
		t.Fatalf("a cancelled group update staged: %+v", st)
	}
	for _, c := range []*Container{a, b} {
		if v := firstValues(t, c); !allEqual(v, 1) {
			t.Fatalf("%s: values %v after a cancelled group update", c.Name(), v)
		}
	}
	log = &progressLog{t: t}
	must(t, g.UpdateContext(context.Background(), v2, &UpdateOptions{Progress: log.record}))
	const total = 3 * 4 * progressFloats // each source byte once, whatever the replicas
	if n := len(log.seen); n == 0 || log.seen[n-1] != [2]uint64{total, total} {
		t.Fatalf("group progress %v", log.seen)
	}
	must(t, g.Swap())
	for _, c := range []*Container{a, b} {
		if v := firstValues(t, c); !allEqual(v, 2) {
			t.Fatalf("%s: values %v after the group update", c.Name(), v)
		}
	}
}

// ---- offloaders (host backend) -----------------------------------------------------------

const offloadElems = 64

// offloadContainer declares layers.{i}.w (F32 [64], host-placed) for n layers and a
// device-placed "embed", and publishes w = stamp*1000 + layer.
func offloadContainer(t *testing.T, rt *Runtime, n int, stamp int) *Container {
	t.Helper()
	decls := []ConstantDecl{{FQN: "embed", DType: DTypeF32, Shape: []int64{4}}}
	for i := 0; i < n; i++ {
		decls = append(decls, ConstantDecl{FQN: fmt.Sprintf("layers.%d.w", i), DType: DTypeF32,
			Shape: []int64{offloadElems}, Placement: PlacementHost})
	}
	c, err := NewContainer(rt, &ContainerOptions{Name: "toy", Constants: decls})
	must(t, err)
	t.Cleanup(func() { c.Close() })
	publishLayers(t, c, n, stamp)
	return c
}

func publishLayers(t *testing.T, c *Container, n, stamp int) {
	t.Helper()
	tensors := []HostTensor{HostTensorOf("embed", []int64{4}, []float32{0, 0, 0, 0})}
	for i := 0; i < n; i++ {
		w := make([]float32, offloadElems)
		for j := range w {
			w[j] = float32(stamp*1000 + i)
		}
		tensors = append(tensors, HostTensorOf(fmt.Sprintf("layers.%d.w", i), []int64{offloadElems}, w))
	}
	must(t, c.UpdateFromHost(tensors, nil))
	must(t, c.Swap())
}

// offloadPass runs every layer through the offloader and returns each layer's first value.
func offloadPass(t *testing.T, rt *Runtime, c *Container, off *Offloader) []float32 {
	t.Helper()
	r, err := c.BeginRun()
	must(t, err)
	defer func() { must(t, r.End()) }()
	must(t, r.BeginOffload(off))
	var seen []float32
	for L := 0; L < off.NumLayers(); L++ {
		views, err := r.WaitOffload(off, L)
		must(t, err)
		if len(views) != 1 || views[0].DType() != DTypeF32 || views[0].NumElements() != offloadElems {
			t.Fatalf("layer %d: views %v", L, views)
		}
		v, err := Values[float32](views[0])
		must(t, err)
		seen = append(seen, v[0])
		wantCode(t, SetValues(views[0], v), ErrFailedPrecondition) // slots are read-only
		must(t, r.MarkOffloadIssued(off, L))
	}
	must(t, r.EndOffload(off))
	return seen
}

func TestOffloaderPrefetchesEveryLayerOfTheRunsGeneration(t *testing.T) {
	rt := hostRuntime(t)
	c := offloadContainer(t, rt, 4, 1)
	off, err := NewOffloader(c, &OffloaderOptions{SlotCapacity: 4, PrefetchStep: 2})
	must(t, err)
	defer off.Close()
	if off.NumLayers() != 4 {
		t.Fatalf("NumLayers %d", off.NumLayers())
	}
	if got := off.LayerConstants(2); len(got) != 1 || got[0] != "layers.2.w" {
		t.Fatalf("LayerConstants(2) = %v", got)
	}
	if got := off.LayerConstants(9); got != nil {
		t.Fatalf("LayerConstants(9) = %v", got)
	}
	b, err := off.Budget()
	must(t, err)
	if b.NumOffloadedLayers != 4 || b.BytesPerStep != 4*4*offloadElems || b.H2DSource != H2DAssumed || b.Compute != 0 {
		t.Fatalf("budget %+v", b)
	}
	if got := offloadPass(t, rt, c, off); !equal(got, []float32{1000, 1001, 1002, 1003}) {
		t.Fatalf("pass read %v", got)
	}
	// An update and a swap change what later runs prefetch.
	publishLayers(t, c, 4, 2)
	if got := offloadPass(t, rt, c, off); !equal(got, []float32{2000, 2001, 2002, 2003}) {
		t.Fatalf("pass after the swap read %v", got)
	}
}

func TestOffloaderErrors(t *testing.T) {
	rt := hostRuntime(t)
	c := offloadContainer(t, rt, 3, 1)
	_, err := NewOffloader(c, &OffloaderOptions{LayerPattern: "blocks.{layer}."})
	wantCode(t, err, ErrInvalidArgument)
	_, err = NewOffloader(c, &OffloaderOptions{FQNs: []string{"layers.0.w", "layers.9.w"}})
	wantCode(t, err, ErrNotFound, "layers.9.w")
	_, err = NewOffloader(c, &OffloaderOptions{FQNs: []string{"embed"}})
	wantCode(t, err, ErrInvalidArgument)
	_, err = NewOffloader(c, &OffloaderOptions{StepCompute: time.Microsecond, H2DBytesPerSecond: 1, RefuseIfExposed: true})
	wantCode(t, err, ErrResourceExhausted)

	off, err := NewOffloader(c, &OffloaderOptions{FQNs: []string{"layers.1.w"}, PrefetchStep: -1})
	must(t, err)
	r, err := c.BeginRun()
	must(t, err)
	_, err = r.WaitOffload(off, 1)
	wantCode(t, err, ErrFailedPrecondition) // not begun
	must(t, r.BeginOffload(off))
	r2, err := c.BeginRun()
	must(t, err)
	wantCode(t, r2.BeginOffload(off), ErrBusy) // one run at a time
	must(t, r2.End())
	views, err := r.WaitOffload(off, 0) // not offloaded: nothing
	must(t, err)
	if len(views) != 0 {
		t.Fatalf("layer 0 is not offloaded, got %d views", len(views))
	}
	must(t, r.MarkOffloadIssued(off, 0))
	_, err = r.WaitOffload(off, 7)
	wantCode(t, err, ErrInvalidArgument)
	_, err = r.WaitOffload(off, -1)
	wantCode(t, err, ErrInvalidArgument)
	must(t, off.Close()) // the run keeps it until it ends
	must(t, r.End())     // ends offloading too
	wantClosed(t, r.BeginOffload(off))
	if off.NumLayers() != 0 {
		t.Fatal("a closed offloader reports layers")
	}

	other := offloadContainer(t, rt, 3, 1)
	off2, err := NewOffloader(other, nil)
	must(t, err)
	defer off2.Close()
	r3, err := c.BeginRun()
	must(t, err)
	defer r3.End()
	wantCode(t, r3.BeginOffload(off2), ErrInvalidArgument) // a run of another container
	wantCode(t, r3.BeginOffload(nil), ErrInvalidArgument)
}

func TestOffloaderRefusesDevicePlacedConstants(t *testing.T) {
	rt := hostRuntime(t)
	c, err := NewContainer(rt, &ContainerOptions{Constants: []ConstantDecl{
		{FQN: "layers.0.w", DType: DTypeF32, Shape: []int64{4}},
	}})
	must(t, err)
	defer c.Close()
	_, err = NewOffloader(c, nil)
	wantCode(t, err, ErrFailedPrecondition, "layers.0.w")
}

func TestOffloadSlotTensorsEndWithTheirLayer(t *testing.T) {
	rt := hostRuntime(t)
	c := offloadContainer(t, rt, 2, 1)
	off, err := NewOffloader(c, &OffloaderOptions{SlotCapacity: 2})
	must(t, err)
	r, err := c.BeginRun()
	must(t, err)
	must(t, r.BeginOffload(off))
	views, err := r.WaitOffload(off, 0)
	must(t, err)
	if v, err := Values[float32](views[0]); err != nil || v[0] != 1000 {
		t.Fatalf("slot 0: %v, %v", v, err)
	}
	must(t, r.MarkOffloadIssued(off, 0))
	_, err = Values[float32](views[0]) // the slot may be refilled now
	wantClosed(t, err)
	last, err := r.WaitOffload(off, 1)
	must(t, err)
	// Closing the offloader while a layer's tensors are out does not free the slot pool
	// under them; ending offloading (or the run) ends the tensors.
	must(t, off.Close())
	if v, err := Values[float32](last[0]); err != nil || v[0] != 1001 {
		t.Fatalf("slot 1 after Offloader.Close: %v, %v", v, err)
	}
	wantClosed(t, r.EndOffload(off)) // the handle is closed: the run's end ends offloading
	must(t, r.End())
	_, err = Values[float32](last[0])
	wantClosed(t, err)
}

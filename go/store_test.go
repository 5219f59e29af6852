// SPDX-License-Identifier: Apache-2.0

package wharf

import (
	"errors"
	"testing"
	"unsafe"
)

// ---- weight store ---------------------------------------------------------------------

func newStore(t *testing.T, rt *Runtime) *WeightStore {
	t.Helper()
	s, err := NewWeightStore(rt)
	must(t, err)
	t.Cleanup(func() { s.Close() })
	return s
}

// hostMap builds a map over HostBuffers holding the given float32 tensors (1-D).
func hostMap(t *testing.T, tensors map[string][]float32, order ...string) *ConstantMap {
	t.Helper()
	m, err := NewConstantMap()
	must(t, err)
	t.Cleanup(func() { m.Close() })
	for _, name := range order {
		data := tensors[name]
		_, tt := bufferTensor(t, []int64{int64(len(data))}, data)
		must(t, m.Set(name, tt))
	}
	return m
}

func filled(n int, v float32) []float32 {
	s := make([]float32, n)
	for i := range s {
		s[i] = v
	}
	return s
}

// runPointer returns the storage address of fqn in a run of c (begun and ended here).
func runPointer(t *testing.T, c *Container, fqn string) unsafe.Pointer {
	t.Helper()
	r, err := c.BeginRun()
	must(t, err)
	defer func() { must(t, r.End()) }()
	tt, err := r.Tensor(fqn)
	must(t, err)
	return pointer(t, tt)
}

const embedN = 1024 // 4 KiB of F32: large enough that sharing shows in the memory figures

// twoSharingContainers creates "prefill" (embed, a.w) and "decode" (embed, b.w) from
// overlapping maps in one store. decode's map holds different embed values, which the
// store must not read (one FQN names one weight).
func twoSharingContainers(t *testing.T, rt *Runtime, store *WeightStore) (prefill, decode *Container) {
	t.Helper()
	m1 := hostMap(t, map[string][]float32{"embed": filled(embedN, 1), "a.w": {1, 2}}, "embed", "a.w")
	m2 := hostMap(t, map[string][]float32{"embed": filled(embedN, 99), "b.w": {3, 4, 5}}, "embed", "b.w")
	var err error
	prefill, err = NewContainerFromMapOptions(rt, m1, &ContainerOptions{Name: "prefill", Store: store})
	must(t, err)
	t.Cleanup(func() { prefill.Close() })
	before, err := rt.MemoryStats()
	must(t, err)
	decode, err = NewContainerFromMapOptions(rt, m2, &ContainerOptions{Name: "decode", Store: store})
	must(t, err)
	t.Cleanup(func() { decode.Close() })
	after, err := rt.MemoryStats()
	must(t, err)
	if grew := after.Current[MemConstants] - before.Current[MemConstants]; grew >= 4*embedN {
		t.Fatalf("the second container allocated %d bytes of constants: embed was not shared", grew)
	}
	return prefill, decode
}

func TestStoreSharesOverlappingMaps(t *testing.T) {
	rt := hostRuntime(t)
	store := newStore(t, rt)
	if store.Runtime() != rt {
		t.Fatal("WeightStore.Runtime")
	}
	st, err := store.Stats()
	must(t, err)
	if st != (WeightStoreStats{}) {
		t.Fatalf("stats of an empty store: %+v", st)
	}
	prefill, decode := twoSharingContainers(t, rt, store)
	if prefill.Store() != store || decode.Store() != store {
		t.Fatal("Container.Store")
	}
	if runPointer(t, prefill, "embed") != runPointer(t, decode, "embed") {
		t.Fatal("the shared FQN has two storages")
	}
	if runPointer(t, prefill, "a.w") == runPointer(t, decode, "b.w") {
		t.Fatal("distinct constants share storage")
	}
	// decode's map said 99: the shared weight is prefill's.
	if v, _ := readRun[float32](t, decode, "embed"); v[0] != 1 || v[embedN-1] != 1 {
		t.Fatalf("decode's embed = %v..., want the store's weight (1)", v[0])
	}
	if v, _ := readRun[float32](t, decode, "b.w"); !equal(v, []float32{3, 4, 5}) {
		t.Fatalf("decode's b.w = %v", v)
	}
	st, err = store.Stats()
	must(t, err)
	want := WeightStoreStats{
		NumUniqueConstants: 3,                 // embed, a.w, b.w
		UniqueBytes:        4*embedN + 8 + 12, // their bytes
		NumReferences:      4,                 // embed twice, a.w and b.w once
		SavedBytes:         4 * embedN,        // embed's second copy
	}
	if st != want {
		t.Fatalf("stats %+v, want %+v", st, want)
	}

	// A container declared (not created from a map) joins too: its first update takes the
	// store's storage for embed instead of copying the map's data.
	third, err := NewContainer(rt, &ContainerOptions{Name: "third", Store: store, Constants: []ConstantDecl{
		{FQN: "embed", DType: DTypeF32, Shape: []int64{embedN}},
		{FQN: "c.w", DType: DTypeF32, Shape: []int64{1}},
	}})
	must(t, err)
	defer third.Close()
	must(t, third.UpdateFromHost([]HostTensor{
		HostTensorOf("embed", []int64{embedN}, filled(embedN, 5)),
		HostTensorOf("c.w", []int64{1}, []float32{7}),
	}, nil))
	must(t, third.Swap())
	if runPointer(t, third, "embed") != runPointer(t, prefill, "embed") {
		t.Fatal("a declared container's first update did not take the store's embed")
	}
	st, err = store.Stats()
	must(t, err)
	if st.NumUniqueConstants != 4 || st.NumReferences != 6 || st.SavedBytes != 2*4*embedN {
		t.Fatalf("stats with a third member: %+v", st)
	}

	// Container.Update on one member detaches what it writes (copy on write).
	must(t, prefill.UpdateFromHost([]HostTensor{HostTensorOf("embed", []int64{embedN}, filled(embedN, 2))}, nil))
	must(t, prefill.Swap())
	if runPointer(t, prefill, "embed") == runPointer(t, decode, "embed") {
		t.Fatal("a container's own update wrote the shared storage")
	}
	if v, _ := readRun[float32](t, decode, "embed"); v[0] != 1 {
		t.Fatalf("decode's embed changed with prefill's own update: %v", v[0])
	}
	if v, _ := readRun[float32](t, prefill, "embed"); v[0] != 2 {
		t.Fatalf("prefill's embed after its update: %v", v[0])
	}
	st, err = store.Stats()
	must(t, err)
	if st.NumReferences != 5 || st.SavedBytes != 4*embedN {
		t.Fatalf("stats after a detaching update: %+v", st)
	}
}

func TestStoreRefusesMismatchedDeclaration(t *testing.T) {
	rt := hostRuntime(t)
	store := newStore(t, rt)
	prefill, _ := twoSharingContainers(t, rt, store)

	_, err := NewContainer(rt, &ContainerOptions{Name: "wrong-shape", Store: store, Constants: []ConstantDecl{
		{FQN: "embed", DType: DTypeF32, Shape: []int64{32, 32}},
	}})
	wantCode(t, err, ErrInvalidArgument, "embed", "wrong-shape", "prefill")
	_, err = NewContainer(rt, &ContainerOptions{Name: "wrong-dtype", Store: store, Constants: []ConstantDecl{
		{FQN: "embed", DType: DTypeF64, Shape: []int64{embedN}},
	}})
	wantCode(t, err, ErrInvalidArgument, "embed", "wrong-dtype")
	_, err = NewContainer(rt, &ContainerOptions{Name: "wrong-placement", Store: store, Constants: []ConstantDecl{
		{FQN: "embed", DType: DTypeF32, Shape: []int64{embedN}, Placement: PlacementHost},
	}})
	wantCode(t, err, ErrInvalidArgument, "embed")
	m := hostMap(t, map[string][]float32{"a.w": {1, 2, 3}}, "a.w")
	_, err = NewContainerFromMapOptions(rt, m, &ContainerOptions{Name: "from-map", Store: store})
	wantCode(t, err, ErrInvalidArgument, "a.w", "from-map")
	// The refused containers left no trace: the store's figures are unchanged.
	st, err := store.Stats()
	must(t, err)
	if st.NumUniqueConstants != 3 || st.NumReferences != 4 {
		t.Fatalf("stats after refusals: %+v", st)
	}
	// The options' constants must be empty for a map container.
	_, err = NewContainerFromMapOptions(rt, m, &ContainerOptions{Constants: []ConstantDecl{{FQN: "x", DType: DTypeF32}}})
	wantCode(t, err, ErrInvalidArgument, "constants")
	if store.h.deps.Load() != 2 {
		t.Fatalf("the store has %d dependents, want its 2 containers (a refused container kept a reference)", store.h.deps.Load())
	}
	_ = prefill
}

func TestStoreUpdateAndSwap(t *testing.T) {
	rt := hostRuntime(t)
	store := newStore(t, rt)
	prefill, decode := twoSharingContainers(t, rt, store)
	g1, g2 := prefill.Generation(), decode.Generation()

	wantCode(t, store.Swap(), ErrFailedPrecondition, "nothing staged")
	open, err := decode.BeginRun()
	must(t, err)

	must(t, store.UpdateFromHost([]HostTensor{
		HostTensorOf("embed", []int64{embedN}, filled(embedN, 3)),
		HostTensorOf("b.w", []int64{3}, []float32{-3, -4, -5}),
	}, nil))
	// Staged, not published.
	if v, _ := readRun[float32](t, prefill, "embed"); v[0] != 1 {
		t.Fatalf("a staged store update is visible before the swap: %v", v[0])
	}
	must(t, store.Swap())
	if prefill.Generation() == g1 || decode.Generation() == g2 {
		t.Fatal("the store swap did not swap every member")
	}
	for _, c := range []*Container{prefill, decode} {
		if v, _ := readRun[float32](t, c, "embed"); v[0] != 3 || v[embedN-1] != 3 {
			t.Fatalf("after the store swap, %v's embed = %v", c, v[0])
		}
	}
	if runPointer(t, prefill, "embed") != runPointer(t, decode, "embed") {
		t.Fatal("the store update wrote embed twice")
	}
	if v, _ := readRun[float32](t, decode, "b.w"); !equal(v, []float32{-3, -4, -5}) {
		t.Fatalf("decode's b.w = %v", v)
	}
	if v, _ := readRun[float32](t, prefill, "a.w"); !equal(v, []float32{1, 2}) {
		t.Fatalf("prefill's a.w (not in the update) = %v", v)
	}
	// The run begun before keeps its generation.
	if v, err := ReadValues[float32](open, "embed"); err != nil || v[0] != 1 {
		t.Fatalf("an open run saw the store swap: %v %v", v[0], err)
	}
	must(t, open.End())
	st, err := store.Stats()
	must(t, err)
	if st.NumUniqueConstants != 3 || st.NumReferences != 4 || st.SavedBytes != 4*embedN {
		t.Fatalf("stats after a store update: %+v", st)
	}

	// Packed and map forms too.
	buf := make([]byte, 8)
	copy(buf, unsafe.Slice((*byte)(unsafe.Pointer(&[]float32{8, 9}[0])), 8))
	must(t, store.UpdatePacked(buf, []PackedTensor{{Name: "a.w", DType: DTypeF32, Shape: []int64{2}}}, nil))
	must(t, store.Swap())
	if v, _ := readRun[float32](t, prefill, "a.w"); !equal(v, []float32{8, 9}) {
		t.Fatalf("a.w after a packed store update = %v", v)
	}
	must(t, store.Update(hostMap(t, map[string][]float32{"a.w": {6, 7}}, "a.w"), nil))
	must(t, store.Swap())
	if v, _ := readRun[float32](t, prefill, "a.w"); !equal(v, []float32{6, 7}) {
		t.Fatalf("a.w after a map store update = %v", v)
	}

	// Store updates accumulate until the swap, as a container's do.
	must(t, store.UpdateFromHost([]HostTensor{HostTensorOf("a.w", []int64{2}, []float32{-1, -2})}, nil))
	must(t, store.UpdateFromHost([]HostTensor{HostTensorOf("b.w", []int64{3}, []float32{-6, -7, -8})}, nil))
	must(t, store.Swap())
	if v, _ := readRun[float32](t, prefill, "a.w"); !equal(v, []float32{-1, -2}) {
		t.Fatalf("a.w after two store updates = %v", v)
	}
	if v, _ := readRun[float32](t, decode, "b.w"); !equal(v, []float32{-6, -7, -8}) {
		t.Fatalf("b.w after two store updates = %v", v)
	}

	// All or nothing: every error stages nothing.
	err = store.UpdateFromHost([]HostTensor{
		HostTensorOf("embed", []int64{embedN}, filled(embedN, 4)),
		HostTensorOf("nope", []int64{1}, []float32{1}),
	}, nil)
	wantCode(t, err, ErrNotFound, "nope")
	err = store.UpdateFromHost([]HostTensor{HostTensorOf("b.w", []int64{2}, []float32{1, 2})}, nil)
	wantCode(t, err, ErrInvalidArgument, "b.w")
	err = store.UpdateFromHost([]HostTensor{HostTensorOf("a.w", []int64{2}, []float32{1, 2})},
		&UpdateOptions{Target: TargetActiveInPlace})
	wantCode(t, err, ErrUnsupported)
	wantCode(t, store.UpdatePacked(buf, []PackedTensor{{Name: "a.w", DType: DTypeF32, Shape: []int64{4}}}, nil),
		ErrInvalidArgument, "do not fit")
	wantCode(t, store.Swap(), ErrFailedPrecondition)
	if v, _ := readRun[float32](t, prefill, "embed"); v[0] != 3 {
		t.Fatalf("a failed store update changed embed: %v", v[0])
	}
}

// foldStore creates "plain" (w) and "folded" (w, derived wt = transpose of w) in one store.
func foldStore(t *testing.T) (store *WeightStore, plain, folded *Container) {
	t.Helper()
	rt := hostRuntime(t)
	store = newStore(t, rt)
	var err error
	plain, err = NewContainer(rt, &ContainerOptions{Name: "plain", Store: store, Constants: []ConstantDecl{
		{FQN: "w", DType: DTypeF32, Shape: []int64{2, 3}}}})
	must(t, err)
	t.Cleanup(func() { plain.Close() })
	folded, err = NewContainer(rt, &ContainerOptions{Name: "folded", Store: store, Constants: []ConstantDecl{
		{FQN: "w", DType: DTypeF32, Shape: []int64{2, 3}},
		{FQN: "wt", DType: DTypeF32, Shape: []int64{3, 2}, Flags: ConstantDerived},
	}})
	must(t, err)
	t.Cleanup(func() { folded.Close() })
	return store, plain, folded
}

func TestStoreUpdateRunsFold(t *testing.T) {
	store, plain, folded := foldStore(t)
	w := []HostTensor{HostTensorOf("w", []int64{2, 3}, []float32{0, 1, 2, 3, 4, 5})}
	wantCode(t, store.UpdateFromHost(w, nil), ErrInvalidArgument, "fold")
	sentinel := errors.New("fold refused")
	err := store.UpdateFromHost(w, &UpdateOptions{Fold: func(*FoldRun) error { return sentinel }})
	if !errors.Is(err, sentinel) {
		t.Fatalf("a store update's fold error: %v", err)
	}
	wantCode(t, store.Swap(), ErrFailedPrecondition)
	must(t, store.UpdateFromHost(w, &UpdateOptions{Fold: transpose}))
	must(t, store.Swap())
	if v, _ := readRun[float32](t, folded, "wt"); !equal(v, []float32{0, 3, 1, 4, 2, 5}) {
		t.Fatalf("derived wt = %v", v)
	}
	if runPointer(t, plain, "w") != runPointer(t, folded, "w") {
		t.Fatal("w is not shared")
	}
}

// wharf.h: a store update runs the fold "for each such container that declares derived
// constants", so a fold written for "folded" must not be called for "plain".
func TestStoreUpdateFoldsOnlyDerived(t *testing.T) {
	store, _, folded := foldStore(t)
	w := []HostTensor{HostTensorOf("w", []int64{2, 3}, []float32{0, 1, 2, 3, 4, 5})}
	calls := 0
	err := store.UpdateFromHost(w, &UpdateOptions{Fold: func(r *FoldRun) error {
		calls++
		return transpose(r)
	}})
	if err != nil || calls != 1 {
		t.Fatalf("store update with a fold for the one container with derived constants: %v "+
			"(fold called %d times, want 1)", err, calls)
	}
	must(t, store.Swap())
	if v, _ := readRun[float32](t, folded, "wt"); !equal(v, []float32{0, 3, 1, 4, 2, 5}) {
		t.Fatalf("derived wt = %v", v)
	}
}

func TestStoreLifetime(t *testing.T) {
	rt, err := NewRuntime(&RuntimeOptions{Backend: BackendHost})
	must(t, err)
	store, err := NewWeightStore(rt)
	must(t, err)
	m := hostMap(t, map[string][]float32{"x": {1, 2}}, "x")
	c, err := NewContainerFromMapOptions(rt, m, &ContainerOptions{Store: store})
	must(t, err)
	must(t, rt.Close())
	must(t, store.Close())
	must(t, store.Close()) // idempotent
	if !stillAllocated(&store.h) || !stillAllocated(&rt.h) {
		t.Fatal("the store or runtime was freed under a live container")
	}
	_, err = store.Stats()
	wantClosed(t, err)
	wantClosed(t, store.Swap())
	wantClosed(t, store.Update(m, nil))
	wantClosed(t, store.UpdateFromHost(nil, nil))
	wantClosed(t, store.UpdatePacked(nil, nil, nil))
	_, err = NewContainerFromMapOptions(rt, m, &ContainerOptions{Store: store})
	wantClosed(t, err)
	_, err = NewWeightStore(rt)
	wantClosed(t, err)
	// The container keeps working with the closed store's storage.
	must(t, c.UpdateFromHost([]HostTensor{HostTensorOf("x", []int64{2}, []float32{3, 4})}, nil))
	must(t, c.Swap())
	if v, _ := readRun[float32](t, c, "x"); !equal(v, []float32{3, 4}) {
		t.Fatalf("x = %v", v)
	}
	r, err := c.BeginRun()
	must(t, err)
	must(t, c.Close())
	if !stillAllocated(&store.h) {
		t.Fatal("the store was freed under an open run's container")
	}
	must(t, r.End())
	if !freed(&c.h) || !freed(&store.h) || !freed(&rt.h) {
		t.Fatal("the last container's end did not free the closed store and runtime")
	}

	// A store never used by a container is freed at Close; nil handles close quietly.
	rt2 := hostRuntime(t)
	s2, err := NewWeightStore(rt2)
	must(t, err)
	must(t, s2.Close())
	if !freed(&s2.h) {
		t.Fatal("an unused store was not freed")
	}
	var nilStore *WeightStore
	must(t, nilStore.Close())
}

// SPDX-License-Identifier: Apache-2.0

package wharf

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"testing"
	"unsafe"
)

// tinyDecoderDir is the committed compiled model (tests/data/models/tiny_decoder), or
// $WHARF_MODEL_DIR.
func tinyDecoderDir() string {
	if d := os.Getenv("WHARF_MODEL_DIR"); d != "" {
		return d
	}
	return filepath.Join("..", "tests", "data", "models", "tiny_decoder")
}

// Models need a CUDA runtime: on the host backend LoadModel answers UNSUPPORTED naming
// CUDA, and leaves nothing behind (no reference to the runtime, map or store kept).
func TestLoadModelOnHostIsUnsupported(t *testing.T) {
	rt := hostRuntime(t)
	store := newStore(t, rt)
	weights := hostMap(t, map[string][]float32{"w": {1, 2}}, "w")
	for _, path := range []string{filepath.Join(tinyDecoderDir(), "tiny_decoder.so"), "/no/such/model.so"} {
		m, err := LoadModel(rt, path, weights, &ModelOptions{Name: "tiny", Store: store})
		wantCode(t, err, ErrUnsupported, "CUDA")
		if m != nil {
			t.Fatal("a failed load returned a model")
		}
	}
	if rt.h.deps.Load() != 1 || store.h.deps.Load() != 0 || weights.h.deps.Load() != 0 {
		t.Fatalf("a failed load kept references: runtime %d (the store holds 1), store %d, map %d",
			rt.h.deps.Load(), store.h.deps.Load(), weights.h.deps.Load())
	}
	if weights.Len() != 1 {
		t.Fatal("the weights map changed")
	}
}

func TestLoadModelArguments(t *testing.T) {
	rt := hostRuntime(t)
	weights := hostMap(t, map[string][]float32{"w": {1}}, "w")
	_, err := LoadModel(nil, "m.so", weights, nil)
	wantCode(t, err, ErrInvalidArgument, "runtime")
	_, err = LoadModel(rt, "m.so", nil, nil)
	wantCode(t, err, ErrInvalidArgument, "weights")
	_, err = LoadModel(rt, "", weights, nil)
	wantCode(t, err, ErrInvalidArgument, "path")

	store := newStore(t, rt)
	must(t, store.Close())
	_, err = LoadModel(rt, "m.so", weights, &ModelOptions{Store: store})
	wantClosed(t, err)
	closedMap, err := NewConstantMap()
	must(t, err)
	must(t, closedMap.Close())
	_, err = LoadModel(rt, "m.so", closedMap, nil)
	wantClosed(t, err)
	closedRT, err := NewRuntime(&RuntimeOptions{Backend: BackendHost})
	must(t, err)
	must(t, closedRT.Close())
	_, err = LoadModel(closedRT, "m.so", weights, nil)
	wantClosed(t, err)
	if weights.h.deps.Load() != 0 {
		t.Fatal("a refused load kept the map")
	}
}

// cString reads a NUL-terminated C string (tests cannot use cgo).
func cString(p unsafe.Pointer) string {
	if p == nil {
		return ""
	}
	var b []byte
	for i := uintptr(0); ; i++ {
		c := *(*byte)(unsafe.Add(p, i))
		if c == 0 {
			return string(b)
		}
		b = append(b, c)
	}
}

// ModelOptions become the wharf_model_options LoadModel passes: filled by the library's
// sized init with this binding's struct size, then every field the Go options set.
func TestModelOptionsRoundTrip(t *testing.T) {
	var arena cArena
	defer arena.free()
	o, store, err := modelOptions("test", &arena, nil)
	must(t, err)
	if store != nil || o.name != nil || o.store != nil || o.max_session_bytes != 0 || o.shim_path != nil ||
		o.session_capacity != 0 || uintptr(o.struct_size) != unsafe.Sizeof(o) {
		t.Fatalf("defaults: %+v (sizeof %d)", o, unsafe.Sizeof(o))
	}
	rt := hostRuntime(t)
	ws := newStore(t, rt)
	want := ModelOptions{Name: "tiny", Store: ws, MaxSessionBytes: 1 << 20, ShimPath: "/opt/wharf/lib/libwharf_aoti_shim.so",
		SessionCapacity: 64}
	o, store, err = modelOptions("test", &arena, &want)
	must(t, err)
	defer store.release()
	got := ModelOptions{
		Name:            cString(unsafe.Pointer(o.name)),
		MaxSessionBytes: uint64(o.max_session_bytes),
		ShimPath:        cString(unsafe.Pointer(o.shim_path)),
		SessionCapacity: uint32(o.session_capacity),
	}
	if unsafe.Pointer(o.store) == ws.h.ptr && store == &ws.h {
		got.Store = ws
	}
	if got.Name != want.Name || got.Store != want.Store || got.MaxSessionBytes != want.MaxSessionBytes ||
		got.ShimPath != want.ShimPath || got.SessionCapacity != want.SessionCapacity || uintptr(o.struct_size) != unsafe.Sizeof(o) {
		t.Fatalf("round trip: %+v, want %+v", got, want)
	}
	if ws.h.deps.Load() != 1 {
		t.Fatalf("the store is not held for the load: %d references", ws.h.deps.Load())
	}
}

// fakeModel is a Model handle around no C model (never passed to C: every path these tests
// take fails before), over container c.
func fakeModel(c *Container) *Model {
	var dummy byte
	m := &Model{h: &handle{}, c: c, inputs: []string{"x"}, numOutputs: 1}
	m.h.init("model", unsafe.Pointer(&dummy), func(unsafe.Pointer) error { return nil })
	return m
}

func TestModelNilAndClosedHandles(t *testing.T) {
	var nilModel *Model
	if nilModel.NumInputs() != 0 || nilModel.NumOutputs() != 0 || nilModel.Container() != nil || nilModel.Runtime() != nil {
		t.Fatal("a nil model reports something")
	}
	_, err := nilModel.InputName(0)
	wantCode(t, err, ErrInvalidArgument, "nil")
	must(t, nilModel.Close())

	rt := hostRuntime(t)
	c := twoConstantContainer(t, rt)
	must(t, c.UpdateFromHost([]HostTensor{
		HostTensorOf("a", []int64{2, 3}, make([]float32, 6)),
		HostTensorOf("b", []int64{4}, make([]int32, 4)),
	}, nil))
	must(t, c.Swap())
	r, err := c.BeginRun()
	must(t, err)
	defer r.End()
	_, err = (*Model)(nil).Run(r)
	wantCode(t, err, ErrInvalidArgument, "model is nil")
	var nilRun *Run
	_, err = fakeModel(c).Run(nilRun)
	wantCode(t, err, ErrInvalidArgument, "run is nil")

	other := fakeModel(twoConstantContainer(t, rt))
	_, err = other.Run(r, HostTensorOf("x", []int64{1}, []int64{1}))
	wantCode(t, err, ErrInvalidArgument, "not of this model's container")
	if _, err := other.InputName(1); err == nil {
		t.Fatal("InputName past the end")
	}
	if name, err := other.InputName(0); err != nil || name != "x" {
		t.Fatalf("InputName(0) = %q, %v", name, err)
	}

	closed := fakeModel(twoConstantContainer(t, rt))
	must(t, closed.Close())
	must(t, closed.Close()) // idempotent
	_, err = closed.Run(r, HostTensorOf("x", []int64{1}, []int64{1}))
	wantClosed(t, err)
	wantClosed(t, closed.Container().Swap()) // Close closed the model's container handle

	// An ended run refuses.
	open := fakeModel(c)
	defer open.h.close()
	r2, err := c.BeginRun()
	must(t, err)
	must(t, r2.End())
	_, err = open.Run(r2)
	wantClosed(t, err)
}

// Run.ReadTensor and WriteTensor (wharf_run_copy) on the host backend: a run's state
// written and read back through the run's stream, ranges checked, constants read-only,
// nothing after End.
func TestRunReadWriteTensor(t *testing.T) {
	rt := hostRuntime(t)
	prefill, _ := statefulModel(t, rt, 0)
	s := openSession(t, rt, nil, prefill)
	r, err := prefill.BeginRunWithSession(s)
	must(t, err)
	kv, err := r.Tensor("kv")
	must(t, err)
	w, err := r.Tensor("w")
	must(t, err)
	must(t, r.WriteTensor(kv, 4, asBytes([]float32{5, 6})))
	if v, err := ReadTensorValues[float32](r, kv); err != nil || !equal(v, []float32{0, 5, 6, 0, 0, 0, 0, 0}) {
		t.Fatalf("kv = %v, %v", v, err)
	}
	part := make([]float32, 2)
	must(t, r.ReadTensor(w, 8, asBytes(part)))
	if !equal(part, []float32{3, 4}) {
		t.Fatalf("w[2:4] = %v", part)
	}
	wantCode(t, r.ReadTensor(w, 12, make([]byte, 8)), ErrInvalidArgument, "outside")
	wantCode(t, r.WriteTensor(kv, 32, []byte{1}), ErrInvalidArgument, "outside")
	wantCode(t, r.WriteTensor(w, 0, make([]byte, 4)), ErrFailedPrecondition, "read-only")
	_, err = ReadTensorValues[int32](r, kv)
	wantCode(t, err, ErrInvalidArgument, "F32")
	must(t, r.ReadTensor(kv, 32, nil)) // empty at the end
	var nilRun *Run
	wantCode(t, nilRun.ReadTensor(kv, 0, make([]byte, 4)), ErrInvalidArgument, "nil")
	must(t, r.End())
	wantClosed(t, r.ReadTensor(kv, 0, make([]byte, 4)))

	// A tensor whose owner ended is refused by another, open run too.
	r2, err := prefill.BeginRunWithSession(s)
	must(t, err)
	defer r2.End()
	wantClosed(t, r2.ReadTensor(kv, 0, make([]byte, 4)))
	kv2, err := r2.Tensor("kv")
	must(t, err)
	if v, err := ReadTensorValues[float32](r2, kv2); err != nil || v[1] != 5 {
		t.Fatalf("the session kept %v, %v", v, err)
	}
}

// LoadModelContext on a GPU (skipped without one): a load its context cancels leaves
// nothing behind; the next load reports progress up to the total and has no offloader.
func TestLoadModelContextCancelsOnTheGPU(t *testing.T) {
	rt, err := NewRuntime(&RuntimeOptions{Backend: BackendCUDA})
	if err != nil {
		t.Skipf("needs a GPU: %v", err)
	}
	defer rt.Close()
	dir := tinyDecoderDir()
	weights, err := LoadSafetensors(filepath.Join(dir, "tiny_decoder.safetensors"))
	must(t, err)
	defer weights.Close()
	zeros, err := NewHostBuffer(4 * 64 * 16 * 4)
	must(t, err)
	defer zeros.Close()
	cache, err := zeros.Tensor(0, DTypeF32, []int64{1, 4, 64, 16})
	must(t, err)
	for _, name := range []string{"layers.0.k_cache", "layers.0.v_cache", "layers.1.k_cache", "layers.1.v_cache"} {
		must(t, weights.Set(name, cache))
	}
	so := filepath.Join(dir, "tiny_decoder.so")
	before, err := rt.MemoryStats()
	must(t, err)

	ctx, cancel := context.WithCancel(context.Background())
	m, err := LoadModelContext(ctx, rt, so, weights, &ModelOptions{Progress: func(done, total uint64) { cancel() }})
	if m != nil || !errors.Is(err, ErrCancelled) || !errors.Is(err, context.Canceled) {
		t.Fatalf("cancelled load: %v, %v", m, err)
	}
	after, err := rt.MemoryStats()
	must(t, err)
	if after.Current[MemConstants] != before.Current[MemConstants] {
		t.Fatalf("a cancelled load left %d bytes of constants", after.Current[MemConstants]-before.Current[MemConstants])
	}

	var last [2]uint64
	m, err = LoadModelContext(context.Background(), rt, so, weights, &ModelOptions{
		Progress: func(done, total uint64) { last = [2]uint64{done, total} },
	})
	must(t, err)
	defer m.Close()
	if last[0] == 0 || last[0] != last[1] {
		t.Fatalf("load progress ended at %v", last)
	}
	off, err := m.Offloader()
	if off != nil || err != nil {
		t.Fatalf("a model loaded without offload has an offloader: %v, %v", off, err)
	}
}

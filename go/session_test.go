// SPDX-License-Identifier: Apache-2.0

package wharf

import (
	"bytes"
	"errors"
	"log"
	"os"
	"runtime"
	"strings"
	"sync"
	"testing"
	"time"
	"unsafe"
)

// ---- sessions -------------------------------------------------------------------------

const (
	kvElems    = 8                     // "kv": F32 [2, 4], zeros
	stateBytes = kvElems*4 + 1*4 + 3*4 // a session over both: kv + pos (I32 [1]) + conv (F32 [3])
	prefillSB  = kvElems*4 + 1*4       // a session over prefill alone: kv + pos
)

// statefulModel creates two containers over one store sharing the weight "w": "prefill"
// declares states kv (zeros) and pos (7); "decode" declares kv too (the same buffer in a
// session over both) and conv (1, 2, 3). maxSessionBytes applies to prefill.
func statefulModel(t *testing.T, rt *Runtime, maxSessionBytes uint64) (prefill, decode *Container) {
	t.Helper()
	store := newStore(t, rt)
	kv := StateDecl{FQN: "kv", DType: DTypeF32, Shape: []int64{2, 4}}
	var err error
	prefill, err = NewContainer(rt, &ContainerOptions{
		Name:            "prefill",
		Store:           store,
		Constants:       []ConstantDecl{{FQN: "w", DType: DTypeF32, Shape: []int64{4}}},
		States:          []StateDecl{kv, StateDeclOf("pos", []int64{1}, []int32{7})},
		MaxSessionBytes: maxSessionBytes,
	})
	must(t, err)
	t.Cleanup(func() { prefill.Close() })
	decode, err = NewContainer(rt, &ContainerOptions{
		Name:      "decode",
		Store:     store,
		Constants: []ConstantDecl{{FQN: "w", DType: DTypeF32, Shape: []int64{4}}},
		States:    []StateDecl{kv, StateDeclOf("conv", []int64{3}, []float32{1, 2, 3})},
	})
	must(t, err)
	t.Cleanup(func() { decode.Close() })
	must(t, store.UpdateFromHost([]HostTensor{HostTensorOf("w", []int64{4}, []float32{1, 2, 3, 4})}, nil))
	must(t, store.Swap())
	return prefill, decode
}

func openSession(t *testing.T, rt *Runtime, opts *SessionOptions, containers ...*Container) *Session {
	t.Helper()
	s, err := NewSession(rt, containers, opts)
	must(t, err)
	t.Cleanup(func() { s.Close() })
	return s
}

// step begins a run of c in s, checks that state fqn holds want (F32, read with Run.Read),
// writes next into it through the run's tensor (host memory on the host backend), and
// ends the run. want or next may be nil to skip.
//
// The read comes first either way: a session's initialisation (first run, Reset) and a
// fork's copy are ordered on the run's stream, which on the host backend is a worker
// thread; Run.Read waits for the stream, so the host write cannot race with them.
func step(t *testing.T, c *Container, s *Session, fqn string, want, next []float32) {
	t.Helper()
	r, err := c.BeginRunWithSession(s)
	must(t, err)
	defer func() { must(t, r.End()) }()
	got, err := ReadValues[float32](r, fqn)
	must(t, err)
	if want != nil && !equal(got, want) {
		t.Fatalf("state %q = %v, want %v", fqn, got, want)
	}
	if next != nil {
		tt, err := r.Tensor(fqn)
		must(t, err)
		if tt.Device() != DeviceCPU || tt.DType() != DTypeF32 || tt.NumElements() != int64(len(next)) || !tt.Writable() {
			t.Fatalf("state tensor %+v", tt)
		}
		must(t, SetValues(tt, next))
	}
}

func pattern(base float32) []float32 {
	p := make([]float32, kvElems)
	for i := range p {
		p[i] = base + float32(i)
	}
	return p
}

var zeros = make([]float32, kvElems)

func TestSessionsAreIsolated(t *testing.T) {
	rt := hostRuntime(t)
	prefill, _ := statefulModel(t, rt, 0)
	s1 := openSession(t, rt, nil, prefill)
	s2 := openSession(t, rt, nil, prefill)
	if s1.Runtime() != rt || len(s1.Containers()) != 1 || s1.Containers()[0] != prefill {
		t.Fatal("session accessors")
	}
	if s1.StateBytes() != prefillSB {
		t.Fatalf("StateBytes = %d, want %d", s1.StateBytes(), prefillSB)
	}
	step(t, prefill, s1, "kv", zeros, pattern(100))
	step(t, prefill, s2, "kv", zeros, pattern(200))
	step(t, prefill, s1, "kv", pattern(100), nil)
	step(t, prefill, s2, "kv", pattern(200), nil)

	// Constants and states resolve in one run; the initial value is the declared one.
	r, err := prefill.BeginRunWithSession(s1)
	must(t, err)
	if r.Session() != s1 || r.Container() != prefill {
		t.Fatal("run accessors")
	}
	if v, err := ReadValues[int32](r, "pos"); err != nil || !equal(v, []int32{7}) {
		t.Fatalf("pos = %v, %v", v, err)
	}
	if v, err := ReadValues[float32](r, "w"); err != nil || !equal(v, []float32{1, 2, 3, 4}) {
		t.Fatalf("w = %v, %v", v, err)
	}
	kv, err := r.Tensor("kv")
	must(t, err)
	if !equal(kv.Shape(), []int64{2, 4}) {
		t.Fatalf("kv shape %v", kv.Shape())
	}
	_, err = r.Tensor("zz")
	wantCode(t, err, ErrNotFound, "zz")
	wantCode(t, r.Read("kv", 28, make([]byte, 8)), ErrInvalidArgument, "kv")
	must(t, r.End())

	// Many sessions on many goroutines at once stay isolated.
	var wg sync.WaitGroup
	for g := 0; g < 8; g++ {
		wg.Add(1)
		go func(g int) {
			defer wg.Done()
			s, err := NewSession(rt, []*Container{prefill}, nil)
			if err != nil {
				t.Error(err)
				return
			}
			defer s.Close()
			for i := 0; i < 20; i++ {
				r, err := prefill.BeginRunWithSession(s)
				if err != nil {
					t.Error(err)
					return
				}
				// Read first: it waits for the stream, where the first run's
				// initialisation may still be queued behind other sessions' work.
				got, err := ReadValues[float32](r, "kv")
				kv, err2 := r.Tensor("kv")
				if err != nil || err2 != nil {
					t.Error(err, err2)
					r.End()
					return
				}
				want := float32(0)
				if i > 0 {
					want = float32(1000*g + i - 1)
				}
				if got[0] != want {
					t.Errorf("goroutine %d step %d: kv[0] = %v, want %v", g, i, got[0], want)
				}
				err = WithSlice(kv, func(s []float32) error {
					s[0] = float32(1000*g + i)
					return nil
				})
				if err != nil {
					t.Error(err)
				}
				if err := r.End(); err != nil {
					t.Error(err)
				}
			}
		}(g)
	}
	wg.Wait()
}

func TestSessionSharesStateAcrossContainers(t *testing.T) {
	rt := hostRuntime(t)
	prefill, decode := statefulModel(t, rt, 0)
	s := openSession(t, rt, nil, prefill, decode)
	if s.StateBytes() != stateBytes {
		t.Fatalf("StateBytes = %d, want %d (kv counted once)", s.StateBytes(), stateBytes)
	}
	// The container's own declarations (wharf_container_name, _num_states, _state_info).
	states, err := decode.States()
	must(t, err)
	if decode.Name() != "decode" || len(states) != 2 || states[0].FQN != "kv" || states[0].NBytes != 32 ||
		states[1].FQN != "conv" || len(states[1].Shape) != 1 || states[1].Shape[0] != 3 {
		t.Fatalf("decode is %q with states %+v", decode.Name(), states)
	}
	step(t, prefill, s, "kv", zeros, pattern(1))
	step(t, decode, s, "kv", pattern(1), pattern(2)) // decode sees what prefill wrote
	step(t, prefill, s, "kv", pattern(2), nil)
	step(t, decode, s, "conv", []float32{1, 2, 3}, nil)
	pointer := func(c *Container) unsafe.Pointer {
		r, err := c.BeginRunWithSession(s)
		must(t, err)
		defer r.End()
		kv, err := r.Tensor("kv")
		must(t, err)
		return pointer(t, kv)
	}
	if pointer(prefill) != pointer(decode) {
		t.Fatal("one session holds two kv buffers")
	}
	// The weight is shared by the store, the state is not: another session has its own.
	other := openSession(t, rt, nil, decode)
	step(t, decode, other, "kv", zeros, nil)
}

func TestSessionForkAndReset(t *testing.T) {
	rt := hostRuntime(t)
	prefill, decode := statefulModel(t, rt, 0)
	s := openSession(t, rt, nil, prefill, decode)

	// A fork of a session that never ran starts from the initial values too.
	early, err := s.Fork()
	must(t, err)
	defer early.Close()
	step(t, prefill, s, "kv", zeros, pattern(10))
	step(t, decode, s, "conv", []float32{1, 2, 3}, []float32{4, 5, 6})
	step(t, decode, early, "kv", zeros, nil)

	f, err := s.Fork()
	must(t, err)
	defer f.Close()
	if f.StateBytes() != s.StateBytes() || len(f.Containers()) != 2 || f.Runtime() != rt {
		t.Fatal("the fork's accessors")
	}
	// The fork copied the state; then the two diverge.
	step(t, decode, f, "kv", pattern(10), pattern(20))
	step(t, prefill, f, "conv", []float32{4, 5, 6}, nil)
	step(t, prefill, s, "kv", pattern(10), pattern(30))
	step(t, decode, f, "kv", pattern(20), nil)

	// Reset restores the initial values (and leaves the fork alone).
	must(t, s.Reset())
	step(t, prefill, s, "kv", zeros, nil)
	step(t, decode, s, "conv", []float32{1, 2, 3}, nil)
	r, err := prefill.BeginRunWithSession(s)
	must(t, err)
	if v, err := ReadValues[int32](r, "pos"); err != nil || !equal(v, []int32{7}) {
		t.Fatalf("pos after reset = %v, %v", v, err)
	}
	must(t, r.End())
	step(t, decode, f, "kv", pattern(20), nil)
	must(t, early.Reset()) // never allocated: nothing to do
}

func TestSessionRunRules(t *testing.T) {
	rt := hostRuntime(t)
	prefill, decode := statefulModel(t, rt, 0)
	s := openSession(t, rt, nil, prefill, decode)

	// A container with states needs a session.
	_, err := prefill.BeginRun()
	wantCode(t, err, ErrFailedPrecondition, "session")
	_, err = prefill.BeginRunWithSession(nil)
	wantCode(t, err, ErrFailedPrecondition, "session")

	// One run at a time per session; resets and forks wait for the end too.
	r, err := prefill.BeginRunWithSession(s)
	must(t, err)
	_, err = decode.BeginRunWithSession(s)
	wantCode(t, err, ErrBusy)
	_, err = prefill.BeginRunWithSession(s)
	wantCode(t, err, ErrBusy)
	wantCode(t, s.Reset(), ErrBusy)
	_, err = s.Fork()
	wantCode(t, err, ErrBusy)
	if s.h.deps.Load() != 1 {
		t.Fatalf("the session has %d dependents, want the one open run (a refused run kept a reference)", s.h.deps.Load())
	}
	must(t, r.End())
	r, err = decode.BeginRunWithSession(s)
	must(t, err)
	must(t, r.End())

	// A session covers only the containers it was created with.
	only := openSession(t, rt, nil, prefill)
	_, err = decode.BeginRunWithSession(only)
	wantCode(t, err, ErrInvalidArgument, "decode")

	// A container without states runs with or without a session.
	plain, err := NewContainer(rt, &ContainerOptions{Name: "plain", Constants: []ConstantDecl{
		{FQN: "x", DType: DTypeU8, Shape: []int64{1}}}})
	must(t, err)
	defer plain.Close()
	must(t, plain.UpdateFromHost([]HostTensor{HostTensorOf("x", []int64{1}, []uint8{9})}, nil))
	must(t, plain.Swap())
	ps := openSession(t, rt, nil, plain)
	if ps.StateBytes() != 0 {
		t.Fatalf("a stateless session holds %d bytes", ps.StateBytes())
	}
	r, err = plain.BeginRunWithSession(ps)
	must(t, err)
	if v, err := ReadValues[uint8](r, "x"); err != nil || !equal(v, []uint8{9}) {
		t.Fatalf("x = %v, %v", v, err)
	}
	must(t, r.End())
	r, err = plain.BeginRunWithSession(nil)
	must(t, err)
	if r.Session() != nil {
		t.Fatal("a run without a session reports one")
	}
	must(t, r.End())
}

func TestSessionBudgetsAndMemory(t *testing.T) {
	rt := hostRuntime(t)
	// prefill allows two sessions' worth of state (each prefillSB, or stateBytes over both).
	prefill, decode := statefulModel(t, rt, 2*prefillSB)
	s1 := openSession(t, rt, nil, prefill)
	s2, err := NewSession(rt, []*Container{prefill}, nil)
	must(t, err)
	_, err = NewSession(rt, []*Container{prefill}, nil)
	wantCode(t, err, ErrResourceExhausted, "prefill", "max_session_bytes")
	_, err = s1.Fork()
	wantCode(t, err, ErrResourceExhausted)
	must(t, s2.Close()) // its bytes return to the budget
	s3 := openSession(t, rt, nil, prefill)
	_ = s3
	_, err = NewSession(rt, []*Container{decode}, &SessionOptions{MaxStateBytes: stateBytes - prefillSB})
	wantCode(t, err, ErrResourceExhausted, "max_state_bytes")
	lazy := openSession(t, rt, &SessionOptions{MaxStateBytes: 1 << 20}, decode)

	// State memory: lazy at the first run, eager at creation, returned at Close.
	before, err := rt.MemoryStats()
	must(t, err)
	eager := openSession(t, rt, &SessionOptions{AllocateEagerly: true}, decode)
	afterEager, err := rt.MemoryStats()
	must(t, err)
	if grew := afterEager.Current[MemState] - before.Current[MemState]; grew < uint64(eager.StateBytes()) {
		t.Fatalf("an eager session allocated %d state bytes, want at least %d", grew, eager.StateBytes())
	}
	step(t, decode, eager, "conv", []float32{1, 2, 3}, nil) // eager state is initialised too
	step(t, decode, lazy, "conv", []float32{1, 2, 3}, nil)
	afterLazy, err := rt.MemoryStats()
	must(t, err)
	if afterLazy.Current[MemState] <= afterEager.Current[MemState] {
		t.Fatal("a lazy session's first run allocated no state")
	}
	must(t, eager.Close())
	must(t, lazy.Close())
	final, err := rt.MemoryStats()
	must(t, err)
	if final.Current[MemState] != before.Current[MemState] {
		t.Fatalf("closed sessions kept state memory: %d -> %d", before.Current[MemState], final.Current[MemState])
	}
}

func TestSessionAndStateErrors(t *testing.T) {
	rt := hostRuntime(t)
	prefill, decode := statefulModel(t, rt, 0)
	_, err := NewSession(rt, nil, nil)
	wantCode(t, err, ErrInvalidArgument, "container")
	_, err = NewSession(rt, []*Container{prefill, nil}, nil)
	wantCode(t, err, ErrInvalidArgument, "containers[1]")
	_, err = NewSession(rt, []*Container{prefill, prefill}, nil)
	wantCode(t, err, ErrInvalidArgument, "prefill")
	if prefill.h.deps.Load() != 0 {
		t.Fatalf("refused sessions kept %d references to the container", prefill.h.deps.Load())
	}

	// Declarations of one state FQN must agree across a session's containers.
	odd, err := NewContainer(rt, &ContainerOptions{Name: "odd", States: []StateDecl{
		{FQN: "kv", DType: DTypeF32, Shape: []int64{4, 2}}}})
	must(t, err)
	defer odd.Close()
	_, err = NewSession(rt, []*Container{decode, odd}, nil)
	wantCode(t, err, ErrInvalidArgument, "kv", "decode", "odd")

	// Containers of another runtime.
	rt2 := hostRuntime(t)
	_, err = NewSession(rt2, []*Container{prefill}, nil)
	wantCode(t, err, ErrInvalidArgument, "runtime")

	// Bad state declarations.
	for _, tc := range []struct {
		states    []StateDecl
		fragments []string
	}{
		{[]StateDecl{StateDeclOf("s", []int64{3}, []float32{1, 2})}, []string{"s", "8 bytes", "12 bytes"}},
		{[]StateDecl{{FQN: "s", DType: DTypeF32, Shape: []int64{-1}}}, []string{"negative"}},
		{[]StateDecl{{FQN: "s", DType: DTypeF32, Shape: []int64{1}}, {FQN: "s", DType: DTypeF32, Shape: []int64{1}}}, []string{"s"}},
		{[]StateDecl{{FQN: "w", DType: DTypeF32, Shape: []int64{1}}}, []string{"w"}}, // named like a constant
		{[]StateDecl{{FQN: "", DType: DTypeF32, Shape: []int64{1}}}, nil},
		{[]StateDecl{{FQN: "s", DType: DType(40), Shape: []int64{1}, Initial: []byte{0}}}, []string{"dtype"}},
	} {
		_, err := NewContainer(rt, &ContainerOptions{Name: "bad", States: tc.states,
			Constants: []ConstantDecl{{FQN: "w", DType: DTypeF32, Shape: []int64{1}}}})
		wantCode(t, err, ErrInvalidArgument, tc.fragments...)
	}
	// A scalar state with an initial value, and an empty initial value for an empty state.
	sc, err := NewContainer(rt, &ContainerOptions{Name: "scalar", States: []StateDecl{
		StateDeclOf("step", nil, []int64{41}),
		StateDeclOf("empty", []int64{0}, []float32{}),
	}})
	must(t, err)
	defer sc.Close()
	must(t, sc.UpdatePacked(nil, nil, nil))
	must(t, sc.Swap())
	ss := openSession(t, rt, nil, sc)
	r, err := sc.BeginRunWithSession(ss)
	must(t, err)
	if v, err := ReadValues[int64](r, "step"); err != nil || !equal(v, []int64{41}) {
		t.Fatalf("scalar state = %v, %v", v, err)
	}
	must(t, r.End())
}

// ---- session lifetimes ----------------------------------------------------------------

func TestSessionCloseAfterCloseAndNil(t *testing.T) {
	rt := hostRuntime(t)
	prefill, _ := statefulModel(t, rt, 0)
	s, err := NewSession(rt, []*Container{prefill}, nil)
	must(t, err)
	must(t, s.Close())
	must(t, s.Close())
	if !freed(&s.h) {
		t.Fatal("a closed session without runs was not freed")
	}
	_, err = prefill.BeginRunWithSession(s)
	wantClosed(t, err)
	wantClosed(t, s.Reset())
	_, err = s.Fork()
	wantClosed(t, err)
	if s.StateBytes() != 0 {
		t.Fatal("StateBytes of a closed session")
	}
	var nilSession *Session
	must(t, nilSession.Close())
	var nilRun *Run
	must(t, nilRun.End())
	var nilContainer *Container
	must(t, nilContainer.Close())
	var nilRuntime *Runtime
	must(t, nilRuntime.Close())
	var nilMap *ConstantMap
	must(t, nilMap.Close())
	var nilBuffer *HostBuffer
	must(t, nilBuffer.Close())
	if prefill.h.deps.Load() != 0 {
		t.Fatalf("the container still has %d dependents", prefill.h.deps.Load())
	}
}

func TestSessionClosedWhileRunOpen(t *testing.T) {
	rt := hostRuntime(t)
	prefill, _ := statefulModel(t, rt, 0)
	s, err := NewSession(rt, []*Container{prefill}, nil)
	must(t, err)
	r, err := prefill.BeginRunWithSession(s)
	must(t, err)
	kv, err := r.Tensor("kv")
	must(t, err)
	must(t, s.Close())
	if !stillAllocated(&s.h) {
		t.Fatal("the session was freed under an open run")
	}
	_, err = prefill.BeginRunWithSession(s)
	wantClosed(t, err)
	// The run still reads and writes the state (once its initialisation, queued on the
	// runtime's stream, is done).
	must(t, rt.Synchronize())
	must(t, SetValues(kv, pattern(5)))
	if v, err := ReadValues[float32](r, "kv"); err != nil || !equal(v, pattern(5)) {
		t.Fatalf("kv through a run of a closed session = %v, %v", v, err)
	}
	must(t, r.End())
	if !freed(&s.h) {
		t.Fatal("ending the last run did not free the closed session")
	}
}

func TestSessionOutlivesParents(t *testing.T) {
	rt, err := NewRuntime(&RuntimeOptions{Backend: BackendHost})
	must(t, err)
	store, err := NewWeightStore(rt)
	must(t, err)
	c, err := NewContainer(rt, &ContainerOptions{Name: "m", Store: store,
		Constants: []ConstantDecl{{FQN: "w", DType: DTypeF32, Shape: []int64{1}}},
		States:    []StateDecl{{FQN: "kv", DType: DTypeF32, Shape: []int64{kvElems}}}})
	must(t, err)
	must(t, c.UpdateFromHost([]HostTensor{HostTensorOf("w", []int64{1}, []float32{1})}, nil))
	must(t, c.Swap())
	s, err := NewSession(rt, []*Container{c}, nil)
	must(t, err)
	step(t, c, s, "kv", zeros, pattern(3))
	r, err := c.BeginRunWithSession(s)
	must(t, err)

	// Close every parent first: runtime, store, container, then the session.
	must(t, rt.Close())
	must(t, store.Close())
	must(t, c.Close())
	_, err = NewSession(rt, []*Container{c}, nil)
	wantClosed(t, err)
	_, err = c.BeginRunWithSession(s)
	wantClosed(t, err)
	must(t, r.End())
	// The session still forks and resets; a fork of it holds the closed parents too.
	f, err := s.Fork()
	must(t, err)
	must(t, s.Reset())
	must(t, s.Close())
	for _, h := range []*handle{&rt.h, &store.h, &c.h} {
		if !stillAllocated(h) {
			t.Fatalf("the %s was freed while a fork of the session lives", h.kind)
		}
	}
	if !freed(&s.h) {
		t.Fatal("the closed session was not freed")
	}
	if f.Containers()[0] != c || f.StateBytes() != kvElems*4 {
		t.Fatal("the fork's containers")
	}
	must(t, f.Close())
	for _, h := range []*handle{&c.h, &store.h, &rt.h} {
		if !freed(h) {
			t.Fatalf("the %s was not freed after its last dependent", h.kind)
		}
	}
}

func TestSessionFinalizerBackstop(t *testing.T) {
	var logs bytes.Buffer
	var mu sync.Mutex
	log.SetOutput(writerFunc(func(p []byte) (int, error) {
		mu.Lock()
		defer mu.Unlock()
		return logs.Write(p)
	}))
	defer log.SetOutput(os.Stderr)
	rt := hostRuntime(t)
	prefill, _ := statefulModel(t, rt, 0)
	func() {
		s, err := NewSession(rt, []*Container{prefill}, nil)
		must(t, err)
		_ = s.StateBytes()
	}()
	for i := 0; i < 100 && prefill.h.deps.Load() != 0; i++ {
		runtime.GC()
		time.Sleep(10 * time.Millisecond)
	}
	if prefill.h.deps.Load() != 0 {
		t.Fatal("a leaked session was not freed by its finalizer")
	}
	mu.Lock()
	defer mu.Unlock()
	if !strings.Contains(logs.String(), "session was garbage-collected without Close") {
		t.Fatalf("the leak was not logged: %q", logs.String())
	}
}

func TestTensorAccess(t *testing.T) {
	b, tt := bufferTensor(t, []int64{2, 2}, []int32{1, 2, 3, 4})
	err := WithSlice(tt, func(s []int32) error {
		s[3] = 40
		return nil
	})
	must(t, err)
	if v := HostSlice[int32](b); !equal(v, []int32{1, 2, 3, 40}) {
		t.Fatalf("WithSlice did not copy its slice back into the tensor: %v", v)
	}
	mine := errors.New("mine")
	if err := WithSlice(tt, func([]int32) error { return mine }); err != mine {
		t.Fatalf("WithSlice returned %v, want fn's error", err)
	}
	must(t, SetValues(tt, []int32{5, 6, 7, 8}))
	if v, err := Values[int32](tt); err != nil || !equal(v, []int32{5, 6, 7, 8}) {
		t.Fatalf("Values after SetValues: %v, %v", v, err)
	}
	must(t, tt.SetBytes([]byte{1, 0, 0, 0, 2, 0, 0, 0, 3, 0, 0, 0, 4, 0, 0, 0}))
	if v, err := tt.Bytes(); err != nil || len(v) != 16 || v[12] != 4 {
		t.Fatalf("Bytes: %v, %v", v, err)
	}
	wantCode(t, SetValues(tt, []int32{1}), ErrInvalidArgument, "1 values")
	wantCode(t, tt.SetBytes(make([]byte, 3)), ErrInvalidArgument, "3 bytes")
	wantCode(t, WithSlice(tt, func([]float32) error { return nil }), ErrInvalidArgument, "I32")
	p := pointer(t, tt)
	cuda, err := NewTensor(p, DTypeI32, DeviceCUDA, 0, []int64{1}, nil)
	must(t, err)
	wantCode(t, WithSlice(cuda, func([]int32) error { return nil }), ErrInvalidArgument, "cuda")
	strided, err := NewTensor(p, DTypeI32, DeviceCPU, 0, []int64{2, 2}, []int64{1, 2})
	must(t, err)
	if strided.IsContiguous() || !equal(strided.Strides(), []int64{1, 2}) {
		t.Fatalf("strided tensor %+v", strided)
	}
	_, err = Values[int32](strided)
	wantCode(t, err, ErrInvalidArgument, "contiguous")
	_, err = NewTensor(nil, DTypeI32, DeviceCPU, 0, []int64{2}, nil)
	wantCode(t, err, ErrInvalidArgument, "nil")
	_, err = NewTensor(p, DTypeI32, DeviceType(7), 0, []int64{2}, nil)
	wantCode(t, err, ErrInvalidArgument, "device")
	_, err = NewTensor(p, DType(99), DeviceCPU, 0, []int64{2}, nil)
	wantCode(t, err, ErrInvalidArgument, "dtype")
	_, err = NewTensor(p, DTypeI32, DeviceCPU, 0, []int64{-1}, nil)
	wantCode(t, err, ErrInvalidArgument, "negative")
	empty, err := NewTensor(nil, DTypeI32, DeviceCPU, 0, []int64{0}, nil)
	must(t, err)
	if err := WithSlice(empty, func(e []int32) error {
		if len(e) != 0 {
			return errors.New("not empty")
		}
		return nil
	}); err != nil {
		t.Fatalf("an empty tensor: %v", err)
	}
	// Shape and Strides are copies: editing them changes nothing.
	sh := tt.Shape()
	sh[0] = 1 << 30
	if tt.NumElements() != 4 || tt.NumBytes() != 16 {
		t.Fatalf("editing Shape() reached the tensor: %v", tt.Shape())
	}
}

// SPDX-License-Identifier: Apache-2.0

package wharf

import (
	"errors"
	"fmt"
	"os"
	"os/exec"
	"strings"
	"testing"
	"time"
)

// Issue 23, defects 3 and 5: safe Go code must never reach memory Wharf or C has freed,
// and memory bound into a container must not change under its runs. The reproducers that
// crashed the process before (SIGSEGV, "unexpected fault address") run in a child process
// (this test binary again, with WHARF_GO_CHILD naming the case), so that a crash is a test
// failure rather than the end of the suite.

const childEnv = "WHARF_GO_CHILD"

// bigBytes is above glibc's largest mmap threshold (32 MiB), so freeing such a block
// unmaps it and a later access faults instead of silently reading reused heap memory.
const bigBytes = 64 << 20

// childCases are the reproducers; each returns nil when nothing reached freed memory.
var childCases = map[string]func() error{
	// A goroutine the fold started writes the slice WithSlice gave it after the fold (and
	// the update, which it made fail) ended and the derived constant's memory was freed.
	"fold-goroutine-writes-after-the-fold": func() error {
		rt, err := NewRuntime(&RuntimeOptions{Backend: BackendHost})
		if err != nil {
			return err
		}
		defer rt.Close()
		c, err := NewContainer(rt, &ContainerOptions{Name: "big", Constants: []ConstantDecl{
			{FQN: "w", DType: DTypeF32, Shape: []int64{1}},
			{FQN: "big", DType: DTypeF32, Shape: []int64{bigBytes / 4}, Flags: ConstantDerived},
		}})
		if err != nil {
			return err
		}
		defer c.Close()
		start, wrote := make(chan struct{}), make(chan struct{})
		abort := errors.New("fold aborts the update")
		err = c.UpdateFromHost([]HostTensor{HostTensorOf("w", []int64{1}, []float32{1})}, &UpdateOptions{
			Fold: func(r *FoldRun) error {
				big, err := r.Tensor("big")
				if err != nil {
					return err
				}
				return WithSlice(big, func(s []float32) error {
					go func() {
						<-start
						for i := range s {
							s[i] = 7
						}
						close(wrote)
					}()
					return abort // the generation, "big" included, is freed
				})
			}})
		if !errors.Is(err, abort) {
			return fmt.Errorf("update: %v, want the fold's error", err)
		}
		must0(rt.Synchronize())
		close(start)
		<-wrote
		return nil
	},
	// Slices of a HostBuffer used after Close.
	"host-buffer-slices-after-close": func() error {
		b, err := NewHostBuffer(bigBytes)
		if err != nil {
			return err
		}
		bytes := b.Bytes()
		floats := HostSlice[float32](b)
		if err := b.Close(); err != nil {
			return err
		}
		for i := range bytes {
			bytes[i] = 1
		}
		for i := range floats {
			floats[i] = 2
		}
		return nil
	},
	// A slice of a session state kept past WithSlice and Run.End, written after the session
	// (and its state memory) is gone.
	"state-slice-after-end": func() error {
		rt, err := NewRuntime(&RuntimeOptions{Backend: BackendHost})
		if err != nil {
			return err
		}
		defer rt.Close()
		c, err := NewContainer(rt, &ContainerOptions{Name: "kv",
			Constants: []ConstantDecl{{FQN: "w", DType: DTypeF32, Shape: []int64{1}}},
			States:    []StateDecl{{FQN: "kv", DType: DTypeF32, Shape: []int64{bigBytes / 4}}}})
		if err != nil {
			return err
		}
		defer c.Close()
		if err := c.UpdateFromHost([]HostTensor{HostTensorOf("w", []int64{1}, []float32{1})}, nil); err != nil {
			return err
		}
		if err := c.Swap(); err != nil {
			return err
		}
		s, err := NewSession(rt, []*Container{c}, nil)
		if err != nil {
			return err
		}
		r, err := c.BeginRunWithSession(s)
		if err != nil {
			return err
		}
		if err := r.Read("kv", 0, make([]byte, 4)); err != nil {
			return err
		}
		kv, err := r.Tensor("kv")
		if err != nil {
			return err
		}
		var kept []float32
		if err := WithSlice(kv, func(state []float32) error {
			kept = state
			return nil
		}); err != nil {
			return err
		}
		if err := r.End(); err != nil {
			return err
		}
		if err := s.Close(); err != nil {
			return err
		}
		must0(rt.Synchronize())
		time.Sleep(50 * time.Millisecond) // the session's memory is freed on the stream
		for i := range kept {
			kept[i] = 3
		}
		return nil
	},
}

func must0(err error) {
	if err != nil {
		panic(err)
	}
}

// TestMain runs one child case when this binary is a child of TestNoSliceReachesFreedMemory.
func TestMain(m *testing.M) {
	if name := os.Getenv(childEnv); name != "" {
		fn, ok := childCases[name]
		if !ok {
			fmt.Fprintf(os.Stderr, "no child case %q\n", name)
			os.Exit(2)
		}
		if err := fn(); err != nil {
			fmt.Fprintf(os.Stderr, "child case %s: %v\n", name, err)
			os.Exit(1)
		}
		fmt.Println("child case passed:", name)
		os.Exit(0)
	}
	os.Exit(m.Run())
}

func TestNoSliceReachesFreedMemory(t *testing.T) {
	for name := range childCases {
		name := name
		t.Run(name, func(t *testing.T) {
			cmd := exec.Command(os.Args[0], "-test.run=^$")
			cmd.Env = append(os.Environ(), childEnv+"="+name)
			out, err := cmd.CombinedOutput()
			if err != nil || !strings.Contains(string(out), "child case passed: "+name) {
				t.Fatalf("the child process failed (%v):\n%s", err, out)
			}
		})
	}
}

// A HostBuffer bound into a container is frozen: writing it (which would change what open
// runs of the active generation read, with no swap) fails, and the run keeps its weights.
func TestBoundHostBufferIsReadOnly(t *testing.T) {
	rt := hostRuntime(t)
	c, err := NewContainer(rt, &ContainerOptions{Name: "bound", Constants: []ConstantDecl{
		{FQN: "w", DType: DTypeF32, Shape: []int64{4}},
	}})
	must(t, err)
	t.Cleanup(func() { c.Close() })
	b, w := bufferTensor(t, []int64{4}, []float32{1, 2, 3, 4})
	_, spare := bufferTensor(t, []int64{4}, []float32{0, 0, 0, 0})
	wantCode(t, c.BindTensor("nope", spare), ErrNotFound)
	must(t, SetValues(spare, []float32{9, 9, 9, 9})) // a failed bind freezes nothing
	must(t, c.BindTensor("w", w))
	must(t, c.Swap())
	r, err := c.BeginRun()
	must(t, err)
	defer r.End()

	wantCode(t, SetValues(w, []float32{5, 6, 7, 8}), ErrFailedPrecondition, "bound")
	wantCode(t, w.SetBytes(make([]byte, 16)), ErrFailedPrecondition, "bound")
	wantCode(t, WithSlice(w, func(s []float32) error { return nil }), ErrFailedPrecondition, "bound")
	_, err = b.WriteAt([]byte{0, 0, 0, 0}, 0)
	wantCode(t, err, ErrFailedPrecondition, "bound")
	other, err := b.Tensor(0, DTypeF32, []int64{2}) // any tensor of the buffer
	must(t, err)
	wantCode(t, SetValues(other, []float32{0, 0}), ErrFailedPrecondition, "bound")
	if v, err := ReadValues[float32](r, "w"); err != nil || !equal(v, []float32{1, 2, 3, 4}) {
		t.Fatalf("the open run reads %v, %v", v, err)
	}
	if v := HostSlice[float32](b); !equal(v, []float32{1, 2, 3, 4}) { // reading is fine
		t.Fatalf("buffer = %v", v)
	}

	// The same through a map that borrows the buffer: binding the map's tensor freezes it.
	b2, w2 := bufferTensor(t, []int64{4}, []float32{4, 3, 2, 1})
	m, err := NewConstantMap()
	must(t, err)
	defer m.Close()
	must(t, m.Set("w", w2))
	entry, err := m.Find("w")
	must(t, err)
	must(t, c.BindTensor("w", entry))
	_, err = b2.WriteAt([]byte{0}, 0)
	wantCode(t, err, ErrFailedPrecondition, "bound")
	wantCode(t, SetValues(w2, []float32{0, 0, 0, 0}), ErrFailedPrecondition, "bound")
}

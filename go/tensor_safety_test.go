// SPDX-License-Identifier: Apache-2.0

package wharf

import (
	"bytes"
	"log"
	"os"
	"path/filepath"
	"reflect"
	"runtime"
	"strings"
	"sync"
	"testing"
	"time"
)

// Issue 14: views keep their owner alive and refuse use after the owner ended, with an
// error rather than a crash; their fields cannot be edited to reach outside the buffer.

// A run's tensors after End: before, Values/Bytes read the generation's storage, which
// the swaps and FreeInactive below return to the allocator (freed memory).
func TestRunTensorRefusedAfterEnd(t *testing.T) {
	rt := hostRuntime(t)
	prefill, _ := statefulModel(t, rt, 0)
	s := openSession(t, rt, nil, prefill)
	r, err := prefill.BeginRunWithSession(s)
	must(t, err)
	w, err := r.Tensor("w")
	must(t, err)
	kv, err := r.Tensor("kv")
	must(t, err)
	must(t, r.Read("kv", 0, make([]byte, 4))) // the state's initialisation is done
	must(t, SetValues(kv, pattern(1)))
	must(t, r.End())
	for v := float32(10); v < 13; v++ {
		must(t, prefill.Store().UpdateFromHost([]HostTensor{HostTensorOf("w", []int64{4}, []float32{v, v, v, v})}, nil))
		must(t, prefill.Store().Swap())
	}
	must(t, prefill.FreeInactive())
	must(t, s.Close()) // the state's memory goes too
	must(t, rt.Synchronize())

	_, err = Values[float32](w)
	wantClosed(t, err)
	_, err = w.Bytes()
	wantClosed(t, err)
	_, err = w.Pointer()
	wantClosed(t, err)
	_, err = Values[float32](kv)
	wantClosed(t, err)
	wantClosed(t, SetValues(kv, pattern(2)))
	wantClosed(t, kv.SetBytes(make([]byte, kvElems*4)))
	wantClosed(t, WithSlice(kv, func([]float32) error {
		t.Fatal("WithSlice called fn for an ended run")
		return nil
	}))
	// Metadata stays readable: it is a copy.
	if !equal(kv.Shape(), []int64{2, 4}) || kv.DType() != DTypeF32 {
		t.Fatalf("shape %v dtype %v", kv.Shape(), kv.DType())
	}
}

// A map's tensors after Close: before, a safetensors map's tensors pointed into an
// unmapped file mapping (SIGSEGV).
func TestMapTensorRefusedAfterClose(t *testing.T) {
	path := filepath.Join(t.TempDir(), "w.safetensors")
	_, src := bufferTensor(t, []int64{3}, []float32{1, 2, 3})
	m, err := NewConstantMap()
	must(t, err)
	must(t, m.Set("w", src))
	must(t, m.Save(path))
	must(t, m.Close())

	file, err := LoadSafetensors(path)
	must(t, err)
	found, err := file.Find("w")
	must(t, err)
	_, entry, err := file.Entry(0)
	must(t, err)
	if v, err := Values[float32](found); err != nil || !equal(v, []float32{1, 2, 3}) {
		t.Fatalf("Values while open: %v, %v", v, err)
	}
	// A read-only mapping: writing it would fault, so the binding refuses.
	wantCode(t, SetValues(found, []float32{0, 0, 0}), ErrFailedPrecondition, "read-only")
	wantCode(t, WithSlice(entry, func([]float32) error { return nil }), ErrFailedPrecondition, "read-only")
	must(t, file.Close())

	_, err = Values[float32](found)
	wantClosed(t, err)
	_, err = entry.Bytes()
	wantClosed(t, err)
	_, err = found.Pointer()
	wantClosed(t, err)
	other, err := NewConstantMap()
	must(t, err)
	defer other.Close()
	wantClosed(t, other.Set("w", found))
	if other.Len() != 0 {
		t.Fatal("a closed map's tensor was stored")
	}

	// A map that borrowed the tensor before keeps the mapping alive; the tensor itself
	// still refuses (its owner, the closed map, ended).
	file2, err := LoadSafetensors(path)
	must(t, err)
	f2, err := file2.Find("w")
	must(t, err)
	must(t, other.Set("w", f2))
	must(t, file2.Close())
	_, err = Values[float32](f2)
	wantClosed(t, err)
	kept, err := other.Find("w")
	if v := values[float32](t, kept, err); !equal(v, []float32{1, 2, 3}) {
		t.Fatalf("the borrowing map reads %v", v)
	}
}

func TestHostBufferTensorRefusedAfterClose(t *testing.T) {
	b, tt := bufferTensor(t, []int64{2}, []float32{1, 2})
	must(t, b.Close())
	_, err := Values[float32](tt)
	wantClosed(t, err)
	wantClosed(t, SetValues(tt, []float32{3, 4}))
}

// runTensorOnly begins a run of c with s and returns one of its tensors: nothing but the
// tensor refers to the run afterwards.
func runTensorOnly(t *testing.T, c *Container, s *Session, fqn string) Tensor {
	r, err := c.BeginRunWithSession(s)
	must(t, err)
	must(t, r.Read(fqn, 0, make([]byte, 4))) // the state's initialisation is done
	tt, err := r.Tensor(fqn)
	must(t, err)
	return tt
}

// A tensor keeps its run reachable: the garbage collector cannot finalize (end) the run
// while the tensor or a slice handed out by WithSlice is in use. Before, a slice of a
// run's state outlived the run, whose finalizer ended it and let the session free or
// reset the memory under the slice.
func TestTensorKeepsRunAlive(t *testing.T) {
	logs := captureLogs(t)
	rt := hostRuntime(t)
	prefill, _ := statefulModel(t, rt, 0)
	s := openSession(t, rt, nil, prefill)
	kv := runTensorOnly(t, prefill, s, "kv")
	gc := func() {
		for i := 0; i < 5; i++ {
			runtime.GC()
			time.Sleep(5 * time.Millisecond)
		}
	}
	gc()
	if logs.contains("run was garbage-collected") {
		t.Fatal("a run whose tensor is in use was finalized")
	}
	err := WithSlice(kv, func(state []float32) error {
		kv = Tensor{} // nothing but this call refers to the run now
		gc()
		copy(state, pattern(3))
		if _, err := prefill.BeginRunWithSession(s); !isBusy(err) {
			t.Errorf("the session's run ended while WithSlice ran: BeginRunWithSession gave %v", err)
		}
		return nil
	})
	must(t, err)
	// Now nothing refers to the run: its finalizer ends it (and logs the leak).
	for i := 0; i < 100 && !logs.contains("run was garbage-collected without End"); i++ {
		gc()
	}
	if !logs.contains("run was garbage-collected without End") {
		t.Fatal("the unreferenced run was not finalized")
	}
	step(t, prefill, s, "kv", pattern(3), nil) // the session is free again and kept the write
}

// Ending the run inside WithSlice: the slice stays valid until fn returns; the run ends then.
func TestEndInsideWithSlice(t *testing.T) {
	rt := hostRuntime(t)
	prefill, _ := statefulModel(t, rt, 0)
	s := openSession(t, rt, nil, prefill)
	r, err := prefill.BeginRunWithSession(s)
	must(t, err)
	must(t, r.Read("kv", 0, make([]byte, 4)))
	kv, err := r.Tensor("kv")
	must(t, err)
	err = WithSlice(kv, func(state []float32) error {
		must(t, r.End())
		copy(state, pattern(4)) // still the session's memory: the run ends when fn returns
		return nil
	})
	must(t, err)
	_, err = Values[float32](kv)
	wantClosed(t, err)
	step(t, prefill, s, "kv", pattern(4), nil)
}

// Constants of a run are read-only; states are the run's to write.
func TestRunConstantsAreReadOnly(t *testing.T) {
	rt := hostRuntime(t)
	prefill, _ := statefulModel(t, rt, 0)
	s := openSession(t, rt, nil, prefill)
	r, err := prefill.BeginRunWithSession(s)
	must(t, err)
	defer r.End()
	w, err := r.Tensor("w")
	must(t, err)
	kv, err := r.Tensor("kv")
	must(t, err)
	if w.Writable() || !kv.Writable() {
		t.Fatalf("writable: constant %v, state %v", w.Writable(), kv.Writable())
	}
	wantCode(t, SetValues(w, []float32{0, 0, 0, 0}), ErrFailedPrecondition, "constant of a run")
	if v, err := ReadValues[float32](r, "w"); err != nil || !equal(v, []float32{1, 2, 3, 4}) {
		t.Fatalf("w = %v, %v", v, err)
	}
}

// Tensor has no exported fields: a view cannot be edited to describe memory outside its
// buffer (before, Shape and Data could be set to make a 16-byte buffer a 1 GiB slice).
func TestTensorFieldsArePrivate(t *testing.T) {
	typ := reflect.TypeOf(Tensor{})
	for i := 0; i < typ.NumField(); i++ {
		if f := typ.Field(i); f.IsExported() {
			t.Errorf("Tensor.%s is exported", f.Name)
		}
	}
	_, tt := bufferTensor(t, []int64{4}, []float32{1, 2, 3, 4})
	shape := tt.Shape()
	shape[0] = 1 << 28
	if v, err := Values[float32](tt); err != nil || len(v) != 4 {
		t.Fatalf("editing the copy of the shape changed the tensor: %d values, %v", len(v), err)
	}
}

func isBusy(err error) bool {
	we, ok := err.(*Error)
	return ok && we.Code == CodeBusy
}

// capturedLogs collects what the standard logger writes during a test.
type capturedLogs struct {
	mu  sync.Mutex
	buf bytes.Buffer
}

func (c *capturedLogs) contains(s string) bool {
	c.mu.Lock()
	defer c.mu.Unlock()
	return strings.Contains(c.buf.String(), s)
}

func captureLogs(t *testing.T) *capturedLogs {
	c := &capturedLogs{}
	log.SetOutput(writerFunc(func(p []byte) (int, error) {
		c.mu.Lock()
		defer c.mu.Unlock()
		return c.buf.Write(p)
	}))
	t.Cleanup(func() { log.SetOutput(os.Stderr) })
	return c
}

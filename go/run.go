// SPDX-License-Identifier: Apache-2.0

package wharf

/*
#include <stdlib.h>
#include "wharf.h"
*/
import "C"

import (
	"runtime"
	"unsafe"
)

// Run is a lease (wharf_run): one generation of a container, and the state of the session
// it was begun with, pinned for one execution. Nothing the run can read is freed or
// overwritten before it ends, and in-place updates wait for it. Resolve constants and
// states with Tensor, launch work, then call End. A Run is safe for concurrent use; it
// keeps its Container (and so the Runtime) and its Session alive until it ends.
type Run struct {
	h     handle
	c     *Container
	s     *Session     // nil without a session
	batch []*Session   // a batched run's sessions (Container.BeginBatch); nil otherwise
	slots offloadSlots // owners of the offload slot tensors handed out (offload.go)
}

// BeginRun begins a run without a session, on the active generation and the runtime's
// own stream: BeginRunWithSession(nil). Errors: ErrFailedPrecondition before the first
// update has been swapped in, or when the container declares states.
func (c *Container) BeginRun() (*Run, error) {
	return c.beginRun("Container.BeginRun", nil)
}

// BeginRunWithSession begins a run on the active generation and session's state, on the
// runtime's own stream. A container that declares states needs a session; one without
// states accepts nil. The session's state is allocated and initialised at its first run
// (unless created eagerly); the run is ordered after the session's previous run, reset or
// fork. Run.Tensor and Run.Read resolve constants first, then the session's states, whose
// memory the run may write until End.
//
// That initialisation (like Session.Reset and Session.Fork) is ordered on the run's
// stream, not on the calling goroutine: it may still be pending when BeginRunWithSession
// returns. Kernels launched on Run.Stream are ordered after it; host code touching state
// memory directly (the host backend, where it is host memory) must first wait with
// Run.Read of at least one byte or Runtime.Synchronize. Errors: ErrFailedPrecondition (no active weights
// yet; states declared and session nil), ErrInvalidArgument (the session does not cover
// this container), ErrBusy (the session has an open run: one run at a time per session),
// ErrOutOfMemory.
func (c *Container) BeginRunWithSession(session *Session) (*Run, error) {
	return c.beginRun("Container.BeginRunWithSession", session)
}

func (c *Container) beginRun(what string, session *Session) (*Run, error) {
	var sp unsafe.Pointer
	if session != nil {
		// Retained (not locked) for the call, and handed to the run on success.
		p, err := session.h.acquire(what + " (the session)")
		if err != nil {
			return nil, err
		}
		sp = p
	}
	p, err := c.h.acquire(what)
	if err != nil {
		if session != nil {
			session.h.release()
		}
		return nil, err
	}
	defer c.h.release()
	var out *C.wharf_run
	err = statusError(C.wharf_run_begin((*C.wharf_container)(p), (*C.wharf_session)(sp), nil, &out))
	runtime.KeepAlive(c)
	runtime.KeepAlive(session)
	if err != nil {
		if session != nil {
			session.h.release()
		}
		return nil, err
	}
	c.h.retain()
	held := []*handle{&c.h}
	if session != nil {
		held = append(held, &session.h)
	}
	r := &Run{c: c, s: session}
	r.h.init("run", unsafe.Pointer(out), func(p unsafe.Pointer) error {
		return statusError(C.wharf_run_end((*C.wharf_run)(p)))
	}, held...)
	runtime.SetFinalizer(r, func(r *Run) { r.slots.closeFor(nil); leaked(&r.h, "End") })
	return r, nil
}

// Session returns the session the run was begun with (nil if none, and for a batched run:
// see Sessions).
func (r *Run) Session() *Session { return r.s }

// Container returns the container the run belongs to.
func (r *Run) Container() *Container { return r.c }

// End ends the run: it records the run's completion on its stream (nothing it could read
// is reclaimed before the device gets there) and releases the lease, even when it
// returns an error (ErrDeviceError: the generation is then held until the container is
// freed). End is idempotent (and a no-op on a nil *Run): later calls return nil.
func (r *Run) End() error {
	if r == nil {
		return nil
	}
	r.slots.closeFor(nil) // they hold the run
	_, err := r.h.close()
	return err
}

const runTensorNoKeep = "it belongs to a run, which may end before the map is done with it"

// Tensor resolves fqn in the run's generation, then in its session's state: a view of the
// storage (device memory on a CUDA runtime, host memory on the host backend or for
// PlacementHost), valid until End: afterwards the tensor's accessors fail with
// ErrClosed. A constant's tensor is read-only; a session state's is the run's to read and
// write (that is what it is for: SetValues, WithSlice on the host backend, your kernels on
// a GPU). Errors: ErrNotFound.
func (r *Run) Tensor(fqn string) (Tensor, error) {
	cfqn := C.CString(fqn)
	defer C.free(unsafe.Pointer(cfqn))
	p, err := r.h.acquire("Run.Tensor")
	if err != nil {
		return Tensor{}, err
	}
	defer r.h.release()
	t, err := runTensor((*C.wharf_run)(p), cfqn, &r.h)
	runtime.KeepAlive(r)
	if err == nil && !r.c.states[fqn] {
		t.readOnly = runConstantReadOnly
	}
	return t, err
}

const runConstantReadOnly = "it is a constant of a run (runs read the generation they pinned; update the container instead)"

func runTensor(run *C.wharf_run, fqn *C.char, owner *handle) (Tensor, error) {
	v := outputView()
	if err := statusError(C.wharf_run_get_tensor(run, fqn, &v)); err != nil {
		return Tensor{}, err
	}
	t := tensorFromView(&v, owner)
	t.noKeep = runTensorNoKeep
	if v.flags&C.WHARF_VIEW_READ_ONLY != 0 {
		t.readOnly = foldConstantReadOnly
	}
	return t, nil
}

// The library marks a run's constants read-only; in a fold, all but derived constants and
// those the update writes (the others share storage with the active generation).
const foldConstantReadOnly = "it is a constant this update does not write (its storage is the active generation's, which open and new runs read; a fold may write derived constants and the constants its update writes)"

// Generation returns the id of the generation this run pinned (0 once ended).
func (r *Run) Generation() uint64 {
	p, err := r.h.acquire("Run.Generation")
	if err != nil {
		return 0
	}
	defer r.h.release()
	g := uint64(C.wharf_run_generation((*C.wharf_run)(p)))
	runtime.KeepAlive(r)
	return g
}

// Stream returns the cudaStream_t the run's work goes on (nil on the host backend, or
// once ended).
func (r *Run) Stream() unsafe.Pointer {
	p, err := r.h.acquire("Run.Stream")
	if err != nil {
		return nil
	}
	defer r.h.release()
	s := C.wharf_run_stream((*C.wharf_run)(p))
	runtime.KeepAlive(r)
	return s
}

// Read copies len(dst) bytes of constant (or session state) fqn, starting at byte offset,
// from the run's generation (or session) into dst, after the work already on the run's
// stream, and returns when the copy is complete. It works wherever the tensor lives
// (device memory included), but it waits for the run's stream: it is meant for inspection
// and tests, not the serving path. dst may be Go memory (it is written only during the
// call). Errors: ErrNotFound, ErrInvalidArgument (a range past the tensor's bytes).
func (r *Run) Read(fqn string, offset uint64, dst []byte) error {
	cfqn := C.CString(fqn)
	defer C.free(unsafe.Pointer(cfqn))
	p, err := r.h.acquire("Run.Read")
	if err != nil {
		return err
	}
	defer r.h.release()
	err = runRead((*C.wharf_run)(p), cfqn, offset, dst)
	runtime.KeepAlive(r)
	return err
}

func runRead(run *C.wharf_run, fqn *C.char, offset uint64, dst []byte) error {
	var p unsafe.Pointer
	if len(dst) > 0 {
		p = unsafe.Pointer(&dst[0])
	}
	err := statusError(C.wharf_run_read(run, fqn, C.uint64_t(offset), p, C.uint64_t(len(dst))))
	runtime.KeepAlive(dst)
	return err
}

// ReadValues copies a whole constant of the run's generation (or a state of its session)
// into a new Go slice, through Run.Read (so it works for device memory too). Its dtype
// must be T's.
func ReadValues[T Element](r *Run, fqn string) ([]T, error) {
	t, err := r.Tensor(fqn)
	if err != nil {
		return nil, err
	}
	if want := DTypeOf[T](); t.dtype != want {
		return nil, invalidArgument("ReadValues: constant '%s' has dtype %v, the Go type wants %v", fqn, t.dtype, want)
	}
	out := make([]T, t.NumElements())
	if len(out) == 0 {
		return out, nil
	}
	dst := unsafe.Slice((*byte)(unsafe.Pointer(&out[0])), len(out)*int(unsafe.Sizeof(out[0])))
	if err := r.Read(fqn, 0, dst); err != nil {
		return nil, err
	}
	return out, nil
}

// FoldRun is the run an update's Fold callback receives: a view of the generation being
// written, derived constants included. It is valid only during the callback; afterwards
// its methods, and those of the tensors it gave, fail with ErrClosed. Write derived
// constants through the tensors (SetValues or WithSlice on the host backend, Pointer for
// your kernels), launched on Stream. Only derived constants and the constants the update
// writes are writable: the others share their storage with the active generation, which
// open and new runs read, so their tensors are read-only (Tensor.Writable is false, and
// SetValues, SetBytes and WithSlice fail with ErrFailedPrecondition).
type FoldRun struct {
	h handle
}

// Tensor resolves fqn in the generation being written. Errors: ErrNotFound.
func (f *FoldRun) Tensor(fqn string) (Tensor, error) {
	cfqn := C.CString(fqn)
	defer C.free(unsafe.Pointer(cfqn))
	p, err := f.h.acquire("FoldRun.Tensor")
	if err != nil {
		return Tensor{}, err
	}
	defer f.h.release()
	return runTensor((*C.wharf_run)(p), cfqn, &f.h)
}

// Generation returns the id of the generation being written.
func (f *FoldRun) Generation() uint64 {
	p, err := f.h.acquire("FoldRun.Generation")
	if err != nil {
		return 0
	}
	defer f.h.release()
	return uint64(C.wharf_run_generation((*C.wharf_run)(p)))
}

// Stream returns the cudaStream_t to launch the fold's work on (nil on the host backend).
func (f *FoldRun) Stream() unsafe.Pointer {
	p, err := f.h.acquire("FoldRun.Stream")
	if err != nil {
		return nil
	}
	defer f.h.release()
	return C.wharf_run_stream((*C.wharf_run)(p))
}

// Read copies len(dst) bytes of constant fqn, starting at byte offset, from the
// generation being written into dst, after the work already on the fold's stream; see
// Run.Read.
func (f *FoldRun) Read(fqn string, offset uint64, dst []byte) error {
	cfqn := C.CString(fqn)
	defer C.free(unsafe.Pointer(cfqn))
	p, err := f.h.acquire("FoldRun.Read")
	if err != nil {
		return err
	}
	defer f.h.release()
	return runRead((*C.wharf_run)(p), cfqn, offset, dst)
}

// outputView is a tensor view for the library to fill, its struct_size set to this binding's
// struct (the library fills no field past it).
func outputView() C.wharf_tensor_view {
	return C.wharf_tensor_view{struct_size: C.sizeof_wharf_tensor_view}
}

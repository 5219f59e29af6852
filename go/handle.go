// SPDX-License-Identifier: Apache-2.0

package wharf

import (
	"log"
	"sync"
	"sync/atomic"
	"unsafe"
)

// handle guards one C object.
//
// A call on the object holds a reference for the length of the C call (acquire ... release);
// close marks the handle closed, so that no call starts after it, and frees the C object
// once no reference is left: at once when nothing uses it, else when the last call in
// progress or dependent (a container of its runtime, a run of its container, a map of the
// buffers it borrows, a tensor being read) releases it. Close therefore never waits for
// calls in progress: a callback running inside a call (an update's fold) may close the
// handles that call uses without deadlocking. mu is held only for short bookkeeping and
// while the free function runs, never across another C call.
type handle struct {
	mu     sync.RWMutex
	ptr    unsafe.Pointer // the C object; nil once freed
	closed bool           // Close was called: no new calls
	deps   atomic.Int32   // calls in progress and dependents still holding the object
	held   []*handle      // handles this one retains, released when it is freed
	idle   chan struct{}  // closed when deps drops to 0, for closeAndWait; nil when nobody waits

	free func(unsafe.Pointer) error // frees the C object
	kind string                     // "runtime", "container", ... for messages

	// Host buffers only: writes of the memory hold writes for reading; freezing (binding
	// the memory into a container) holds it for writing and sets frozen, after which the
	// memory is never written through the binding again.
	writes sync.RWMutex
	frozen bool // guarded by writes

	// Fold runs only: the C object belongs to the update and ends with the callback, so
	// WithSlice does not hold a reference across its fn (closeAndWait waits only for
	// binding code).
	shortRefs bool
}

// beginWrite begins a write of the handle's memory through the binding (nil handle: the
// caller's own memory): it fails with ErrFailedPrecondition once the memory was frozen by a
// bind. The returned function ends the write.
func (h *handle) beginWrite(op string) (func(), error) {
	if h == nil {
		return func() {}, nil
	}
	h.writes.RLock()
	if h.frozen {
		h.writes.RUnlock()
		return nil, &Error{Code: CodeFailedPrecondition, Message: op + ": the " + h.kind +
			" is bound into a container (Container.BindTensor), which may read it at any time: it is read-only from then on"}
	}
	return h.writes.RUnlock, nil
}

// frozenTargets returns the host buffers whose memory a tensor of h may be: h itself, or,
// for a map, the host buffers it borrows (transitively).
func (h *handle) frozenTargets() []*handle {
	if h.kind == "host buffer" {
		return []*handle{h}
	}
	h.mu.RLock()
	held := append([]*handle{}, h.held...)
	h.mu.RUnlock()
	var out []*handle
	for _, d := range held {
		out = append(out, d.frozenTargets()...)
	}
	return out
}

func (h *handle) init(kind string, ptr unsafe.Pointer, free func(unsafe.Pointer) error, held ...*handle) {
	h.kind = kind
	h.ptr = ptr
	h.free = free
	h.held = held
}

// acquire begins a call: it returns the C pointer with a reference held, valid until the
// caller's matching release (or, if the caller hands the reference on, until its new
// holder releases it), or ErrClosed.
func (h *handle) acquire(op string) (unsafe.Pointer, error) {
	h.mu.RLock()
	defer h.mu.RUnlock()
	if h.closed {
		return nil, &closedError{op, h.kind}
	}
	h.deps.Add(1) // under mu (read): close cannot run between the check and the increment
	return h.ptr, nil
}

// retain records one more reference. The caller must already hold one (so the object
// cannot be freed meanwhile): it hands a second one to a dependent.
func (h *handle) retain() { h.deps.Add(1) }

// release drops one reference and frees the object if it was the last and the handle is
// closed.
func (h *handle) release() {
	h.mu.Lock()
	defer h.mu.Unlock()
	if h.deps.Add(-1) == 0 {
		if h.idle != nil {
			close(h.idle)
			h.idle = nil
		}
		if h.closed && h.ptr != nil {
			if err := h.freeLocked(); err != nil {
				log.Printf("wharf: freeing a %s after its last user let go: %v", h.kind, err)
			}
		}
	}
}

// closeAndWait closes the handle and waits until no reference is held: for a handle whose
// C object someone else ends (a fold's run, ended by its update), so that no call still
// uses it then. Only for handles whose references are held by binding code for the length
// of a C call or a copy, never across a user callback.
func (h *handle) closeAndWait() {
	h.mu.Lock()
	defer h.mu.Unlock()
	h.closed = true
	for h.deps.Load() != 0 {
		if h.idle == nil {
			h.idle = make(chan struct{})
		}
		idle := h.idle
		h.mu.Unlock()
		<-idle
		h.mu.Lock()
	}
	if h.ptr != nil {
		if err := h.freeLocked(); err != nil {
			log.Printf("wharf: freeing a %s: %v", h.kind, err)
		}
	}
}

// close marks the handle closed and frees the object now if nothing uses it, else when
// the last reference is released. It reports whether this call closed the handle (false
// when it was closed already) and the free function's error, if it ran now.
func (h *handle) close() (bool, error) {
	h.mu.Lock()
	defer h.mu.Unlock()
	if h.closed {
		return false, nil
	}
	h.closed = true
	if h.deps.Load() == 0 && h.ptr != nil {
		return true, h.freeLocked()
	}
	return true, nil
}

func (h *handle) isClosed() bool {
	h.mu.RLock()
	defer h.mu.RUnlock()
	return h.closed
}

func (h *handle) freeLocked() error {
	p := h.ptr
	h.ptr = nil
	err := h.free(p)
	held := h.held
	h.held = nil
	for _, parent := range held {
		parent.release()
	}
	return err
}

// addHeldLocked makes h retain dep (already retained by the caller) until h is freed. It
// must be called with h.mu held for writing.
func (h *handle) addHeldLocked(dep *handle) { h.held = append(h.held, dep) }

// leaked is the finalizers' backstop: it logs that a handle was never closed and closes it.
func leaked(h *handle, what string) {
	if h.isClosed() {
		return
	}
	log.Printf("wharf: a %s was garbage-collected without %s; freeing it now (close it explicitly)", h.kind, what)
	if _, err := h.close(); err != nil {
		log.Printf("wharf: freeing a leaked %s: %v", h.kind, err)
	}
}

package wharf

import (
	"log"
	"sync"
	"sync/atomic"
	"unsafe"
)

// handle guards one C object.
//
// Calls on the object hold mu for reading for the length of the C call; close takes it
// for writing, so it waits for those calls and no call starts after it. The C object
// itself is freed once the handle is closed and no dependent holds it any more:
// dependents (a container of its runtime, a run of its container, a map of the buffers it
// borrows) retain the handle while they live and release it when they are freed.
type handle struct {
	mu     sync.RWMutex
	ptr    unsafe.Pointer // the C object; nil once freed
	closed bool           // Close was called: no new calls
	deps   atomic.Int32   // dependents still holding the object
	held   []*handle      // handles this one retains, released when it is freed

	free func(unsafe.Pointer) error // frees the C object
	kind string                     // "runtime", "container", ... for messages
}

func (h *handle) init(kind string, ptr unsafe.Pointer, free func(unsafe.Pointer) error, held ...*handle) {
	h.kind = kind
	h.ptr = ptr
	h.free = free
	h.held = held
}

// rlock begins a call: it returns the C pointer with mu held for reading, or ErrClosed.
// The caller must call h.mu.RUnlock() when the C call has returned.
func (h *handle) rlock(op string) (unsafe.Pointer, error) {
	h.mu.RLock()
	if h.closed {
		h.mu.RUnlock()
		return nil, &closedError{op, h.kind}
	}
	return h.ptr, nil
}

// acquire retains h for a call that uses it without holding its lock: it returns the C
// pointer, valid until the caller's matching release (or, if the caller hands the
// reference on, until its new holder releases it), or ErrClosed.
func (h *handle) acquire(op string) (unsafe.Pointer, error) {
	p, err := h.rlock(op)
	if err != nil {
		return nil, err
	}
	h.retain()
	h.mu.RUnlock()
	return p, nil
}

// retain records one more dependent. It must be called with mu held for reading (from
// rlock), so that close cannot run between the check and the increment.
func (h *handle) retain() { h.deps.Add(1) }

// release drops one dependent and frees the object if it was closed meanwhile.
func (h *handle) release() {
	h.mu.Lock()
	defer h.mu.Unlock()
	if h.deps.Add(-1) == 0 && h.closed && h.ptr != nil {
		if err := h.freeLocked(); err != nil {
			log.Printf("wharf: freeing a %s after its last dependent closed: %v", h.kind, err)
		}
	}
}

// close marks the handle closed and frees the object now if nothing depends on it, else
// when the last dependent releases it. It reports whether this call closed the handle
// (false when it was closed already) and the free function's error, if it ran.
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

// addHeld makes h retain dep (already retained by the caller) until h is freed. It must be
// called with h.mu held for writing.
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

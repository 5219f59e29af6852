// SPDX-License-Identifier: Apache-2.0

package wharf

/*
#include "wharf.h"
*/
import "C"

import (
	"runtime"
	"unsafe"
)

// SessionOptions configures NewSession. The zero value (or a nil pointer) means no limit
// and lazy allocation.
type SessionOptions struct {
	// MaxStateBytes refuses (ErrResourceExhausted) a session whose state exceeds it
	// (0 = no limit).
	MaxStateBytes uint64
	// AllocateEagerly allocates and initialises the state at creation instead of at the
	// first run.
	AllocateEagerly bool
}

// Session is one conversation's mutable state over shared weights (wharf_session): one
// buffer per state FQN declared by its containers (one buffer for an FQN that several of
// them declare, e.g. prefill and decode). It is named explicitly on every run
// (Container.BeginRunWithSession), one run at a time. State memory is accounted under
// MemState and freed only after the device has finished the session's last run.
//
// A Session is safe for concurrent use; conflicting calls (a run, a reset or a fork of it
// at the same time) fail with ErrBusy rather than wait. It keeps its Runtime and
// Containers alive, so they may be closed first. A run keeps its session alive: closing a
// session with an open run is allowed, and the C session is freed when the run ends.
type Session struct {
	h          handle
	rt         *Runtime
	containers []*Container
}

// NewSession creates a session serving runs of containers (at least one, all of rt). A
// state FQN declared by several containers is one buffer; the declarations must agree
// (dtype and shape), else ErrInvalidArgument naming both; the first container's initial
// value is used. opts may be nil. Errors also: ErrResourceExhausted (past
// opts.MaxStateBytes or a container's MaxSessionBytes), ErrOutOfMemory (eager
// allocation), ErrInvalidArgument (no containers, a nil or repeated one, one of another
// runtime).
func NewSession(rt *Runtime, containers []*Container, opts *SessionOptions) (*Session, error) {
	const what = "NewSession"
	if len(containers) == 0 {
		return nil, invalidArgument("%s: at least one container is required", what)
	}
	for i, c := range containers {
		if c == nil {
			return nil, invalidArgument("%s: containers[%d] is nil", what, i)
		}
	}
	var o C.wharf_session_options
	C.wharf_session_options_init_sized(&o, C.sizeof_wharf_session_options) // this binding's struct size
	if opts != nil {
		o.max_state_bytes = C.uint64_t(opts.MaxStateBytes)
		if opts.AllocateEagerly {
			o.allocate_eagerly = 1
		}
	}
	// The containers are retained one at a time rather than locked together, so that
	// concurrent sessions over the same containers in another order cannot deadlock with
	// a Close; the retained C objects stay valid for the call whatever Close does.
	var arena cArena
	defer arena.free()
	ptrs := unsafe.Slice((**C.wharf_container)(arena.alloc(len(containers)*int(unsafe.Sizeof((*C.wharf_container)(nil))))), len(containers))
	held := make([]*handle, 0, len(containers)+1)
	releaseAll := func() {
		for _, h := range held {
			h.release()
		}
	}
	for i, c := range containers {
		p, err := c.h.acquire(what)
		if err != nil {
			releaseAll()
			return nil, err
		}
		held = append(held, &c.h)
		ptrs[i] = (*C.wharf_container)(p)
	}
	rp, err := rt.h.acquire(what)
	if err != nil {
		releaseAll()
		return nil, err
	}
	defer rt.h.release()
	var out *C.wharf_session
	err = statusError(C.wharf_session_create((*C.wharf_runtime)(rp), &ptrs[0], C.size_t(len(containers)), &o, &out))
	runtime.KeepAlive(rt)
	runtime.KeepAlive(containers)
	if err != nil {
		releaseAll()
		return nil, err
	}
	rt.h.retain()
	held = append(held, &rt.h)
	return newSession(rt, append([]*Container(nil), containers...), out, held), nil
}

// newSession wraps a C session; held are the handles it retains (already retained).
func newSession(rt *Runtime, containers []*Container, p *C.wharf_session, held []*handle) *Session {
	s := &Session{rt: rt, containers: containers}
	s.h.init("session", unsafe.Pointer(p), func(p unsafe.Pointer) error {
		C.wharf_session_free((*C.wharf_session)(p))
		return nil
	}, held...)
	runtime.SetFinalizer(s, func(s *Session) { leaked(&s.h, "Close") })
	return s
}

// Runtime returns the runtime the session was created on.
func (s *Session) Runtime() *Runtime { return s.rt }

// Containers returns the containers the session serves (a copy of the list).
func (s *Session) Containers() []*Container { return append([]*Container(nil), s.containers...) }

// Close releases the session. An open run keeps it until the run ends; the state memory
// is returned after the device has finished the session's last run (Close may wait for
// it). Close is idempotent (and a no-op on a nil *Session) and returns nil.
func (s *Session) Close() error {
	if s == nil {
		return nil
	}
	_, err := s.h.close()
	return err
}

// Reset restores every state to its initial value, ordered after the session's last run
// (the next run waits for it; see Container.BeginRunWithSession for host access). It
// returns without waiting for the device. Errors: ErrBusy (a run is open).
func (s *Session) Reset() error {
	p, err := s.h.acquire("Session.Reset")
	if err != nil {
		return err
	}
	defer s.h.release()
	err = statusError(C.wharf_session_reset((*C.wharf_session)(p)))
	runtime.KeepAlive(s)
	return err
}

// Fork creates a session over the same containers whose state is a copy of this one's
// (branching a conversation, beam search), made on the device after this session's last
// run. The two then evolve independently. The fork does not inherit MaxStateBytes; the
// containers' MaxSessionBytes apply to it. Errors: ErrBusy (a run is open on this
// session), ErrResourceExhausted, ErrOutOfMemory.
func (s *Session) Fork() (*Session, error) {
	p, err := s.h.acquire("Session.Fork")
	if err != nil {
		return nil, err
	}
	defer s.h.release()
	var out *C.wharf_session
	err = statusError(C.wharf_session_fork((*C.wharf_session)(p), &out))
	runtime.KeepAlive(s)
	if err != nil {
		return nil, err
	}
	// The fork holds what this session holds. Those handles may have been closed, but this
	// session retains them and cannot be freed while this call holds a reference, so they are alive
	// and retaining them directly is safe.
	held := make([]*handle, 0, len(s.containers)+1)
	for _, c := range s.containers {
		c.h.retain()
		held = append(held, &c.h)
	}
	s.rt.h.retain()
	held = append(held, &s.rt.h)
	return newSession(s.rt, s.containers, out, held), nil
}

// StateBytes returns the bytes of state the session holds (or will hold at its first
// run); 0 for a closed session.
func (s *Session) StateBytes() uint64 {
	p, err := s.h.acquire("Session.StateBytes")
	if err != nil {
		return 0
	}
	defer s.h.release()
	n := uint64(C.wharf_session_state_bytes((*C.wharf_session)(p)))
	runtime.KeepAlive(s)
	return n
}

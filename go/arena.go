// SPDX-License-Identifier: Apache-2.0

package wharf

// State arenas and batched runs: the experimental tier of wharf.h (WHARF_EXPERIMENTAL is
// defined in this file's preamble only). Every declaration here may change or go in any
// minor release of the library, as the C functions it calls may.

/*
#define WHARF_EXPERIMENTAL
#include "wharf.h"
*/
import "C"

import (
	"runtime"
	"unsafe"
)

// StateArenaStats are the figures of a container's state arena
// (wharf_state_arena_stats).
//
// Experimental: part of wharf.h's experimental tier; it may change in any minor release.
type StateArenaStats struct {
	NumSlots     uint32 // the arena's session capacity
	NumSlotsUsed uint32 // held by live sessions
	NumSlotsFree uint32
	Bytes        uint64 // the arena's storage: NumSlots times one session's bytes, all states
}

func stateArenaStatsOf(s *C.wharf_state_arena_stats) StateArenaStats {
	return StateArenaStats{
		NumSlots:     uint32(s.num_slots),
		NumSlotsUsed: uint32(s.num_slots_used),
		NumSlotsFree: uint32(s.num_slots_free),
		Bytes:        uint64(s.bytes),
	}
}

// StateArenaStats reads the figures of the container's state arena (a container created
// with ContainerOptions.SessionCapacity or StateArenaOf). They may be stale once another
// goroutine creates or closes a session. Errors: ErrFailedPrecondition (the container has
// no arena), ErrClosed.
//
// Experimental: part of wharf.h's experimental tier; it may change in any minor release.
func (c *Container) StateArenaStats() (StateArenaStats, error) {
	const what = "Container.StateArenaStats"
	if c == nil {
		return StateArenaStats{}, invalidArgument("%s: the container is nil", what)
	}
	p, err := c.h.acquire(what)
	if err != nil {
		return StateArenaStats{}, err
	}
	defer c.h.release()
	var s C.wharf_state_arena_stats
	s.struct_size = C.sizeof_wharf_state_arena_stats // this binding's struct size
	err = statusError(C.wharf_container_get_state_arena_stats((*C.wharf_container)(p), &s))
	runtime.KeepAlive(c)
	if err != nil {
		return StateArenaStats{}, err
	}
	return stateArenaStatsOf(&s), nil
}

// Slot returns the session's slot in its containers' state arena (fixed for the
// session's life; distinct among live sessions of one arena, and reused after Close), or
// -1 when its containers have no arena, for a nil or closed Session.
//
// Experimental: part of wharf.h's experimental tier; it may change in any minor release.
func (s *Session) Slot() int64 {
	if s == nil {
		return -1
	}
	p, err := s.h.acquire("Session.Slot")
	if err != nil {
		return -1
	}
	defer s.h.release()
	slot := int64(C.wharf_session_slot((*C.wharf_session)(p)))
	runtime.KeepAlive(s)
	return slot
}

// BeginBatch begins one run over sessions (at least one, distinct, each a session of this
// container's state arena) on the active generation, pinned for all of them, and the
// runtime's own stream: every session is busy until End. All or nothing: when one of them
// has an open run (or a reset or fork holds it) BeginBatch fails with ErrBusy naming its
// index and holds none. Each session's state is initialised at its first run and
// ordered after its previous operation, as in BeginRunWithSession (on the host backend
// the memory is ready when BeginBatch returns).
//
// In the run, Run.Tensor of a state is the whole arena ([capacity, ...shape], writable;
// only the run's slots may be written), Run.SlotIndices gives the sessions' slots in the
// order of sessions, and Run.Read of a state reads the arena's bytes. Model.Run does not
// take a batched run yet (ErrUnsupported). The run keeps the sessions alive.
//
// Errors: ErrFailedPrecondition (the container has no state arena, no active weights),
// ErrInvalidArgument (no or nil sessions, a session twice, one not covering the container
// or not of its arena, more sessions than the capacity), ErrBusy, ErrClosed,
// ErrOutOfMemory.
//
// Experimental: part of wharf.h's experimental tier; it may change in any minor release.
func (c *Container) BeginBatch(sessions ...*Session) (*Run, error) {
	const what = "Container.BeginBatch"
	if c == nil {
		return nil, invalidArgument("%s: the container is nil", what)
	}
	if len(sessions) == 0 {
		return nil, invalidArgument("%s: at least one session is required", what)
	}
	for i, s := range sessions {
		if s == nil {
			return nil, invalidArgument("%s: sessions[%d] is nil", what, i)
		}
	}
	var arena cArena
	defer arena.free()
	// The array the library reads is C memory (a Go array may not hold the C pointers
	// cgo checks); each session is retained, not locked, for the call and handed to the
	// run on success.
	ptrs := unsafe.Slice((**C.wharf_session)(arena.alloc(len(sessions)*int(unsafe.Sizeof((*C.wharf_session)(nil))))), len(sessions))
	held := make([]*handle, 0, len(sessions)+1)
	releaseAll := func() {
		for _, h := range held {
			h.release()
		}
	}
	for i, s := range sessions {
		p, err := s.h.acquire(what + " (a session)")
		if err != nil {
			releaseAll()
			return nil, err
		}
		held = append(held, &s.h)
		ptrs[i] = (*C.wharf_session)(p)
	}
	p, err := c.h.acquire(what)
	if err != nil {
		releaseAll()
		return nil, err
	}
	defer c.h.release()
	var out *C.wharf_run
	err = statusError(C.wharf_run_begin_batch((*C.wharf_container)(p), &ptrs[0], C.size_t(len(sessions)), nil, &out))
	runtime.KeepAlive(c)
	runtime.KeepAlive(sessions)
	if err != nil {
		releaseAll()
		return nil, err
	}
	c.h.retain()
	held = append(held, &c.h)
	r := &Run{c: c, batch: append([]*Session(nil), sessions...)}
	r.h.init("run", unsafe.Pointer(out), func(p unsafe.Pointer) error {
		return statusError(C.wharf_run_end((*C.wharf_run)(p)))
	}, held...)
	runtime.SetFinalizer(r, func(r *Run) { r.slots.closeFor(nil); leaked(&r.h, "End") })
	return r, nil
}

// Sessions returns the run's sessions: those of a batched run in the order BeginBatch
// was given them, the one session of a run begun with one, else none (a copy of the list).
//
// Experimental: part of wharf.h's experimental tier; it may change in any minor release.
func (r *Run) Sessions() []*Session {
	if r == nil {
		return nil
	}
	if r.batch != nil {
		return append([]*Session(nil), r.batch...)
	}
	if r.s != nil {
		return []*Session{r.s}
	}
	return nil
}

// NumSessions returns the number of sessions of the run as the library counts them
// (wharf_run_num_sessions): N for a batched run, 1 for a run with a session, else 0 (also
// once the run has ended).
//
// Experimental: part of wharf.h's experimental tier; it may change in any minor release.
func (r *Run) NumSessions() int {
	if r == nil {
		return 0
	}
	p, err := r.h.acquire("Run.NumSessions")
	if err != nil {
		return 0
	}
	defer r.h.release()
	n := int(C.wharf_run_num_sessions((*C.wharf_run)(p)))
	runtime.KeepAlive(r)
	return n
}

// slotIndicesReadOnly is why the slot index tensor refuses writes.
const slotIndicesReadOnly = "it is the run's slot index tensor, which the library writes"

// SlotIndices returns the slots of the run's sessions: an int64 tensor [N] in the order
// of Run.Sessions (one element for a run of one arena session), device memory (host
// memory on the host backend), read-only, valid until End (then its accessors fail with
// ErrClosed), written in the run's stream order: read it with ReadTensorValues[int64].
// Errors: ErrFailedPrecondition (the run's sessions hold no arena slot), ErrClosed.
//
// Experimental: part of wharf.h's experimental tier; it may change in any minor release.
func (r *Run) SlotIndices() (Tensor, error) {
	const what = "Run.SlotIndices"
	if r == nil {
		return Tensor{}, invalidArgument("%s: the run is nil", what)
	}
	p, err := r.h.acquire(what)
	if err != nil {
		return Tensor{}, err
	}
	defer r.h.release()
	v := outputView()
	err = statusError(C.wharf_run_get_slot_indices((*C.wharf_run)(p), &v))
	runtime.KeepAlive(r)
	if err != nil {
		return Tensor{}, err
	}
	t := tensorFromView(&v, &r.h)
	t.noKeep = runTensorNoKeep
	t.readOnly = slotIndicesReadOnly
	return t, nil
}

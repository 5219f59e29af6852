// SPDX-License-Identifier: Apache-2.0

package wharf

import (
	"fmt"
	"testing"
)

// ---- state arenas and batched runs ----------------------------------------------------

// arenaModel creates "prefill" with a state arena of capacity sessions (states kv F32
// [2, 4] zeros and pos I32 [1] = 7) and "decode" joining it (kv only), weights swapped in.
func arenaModel(t *testing.T, rt *Runtime, capacity uint32) (prefill, decode *Container) {
	t.Helper()
	store := newStore(t, rt)
	kv := StateDecl{FQN: "kv", DType: DTypeF32, Shape: []int64{2, 4}}
	w := []ConstantDecl{{FQN: "w", DType: DTypeF32, Shape: []int64{4}}}
	var err error
	prefill, err = NewContainer(rt, &ContainerOptions{Name: "prefill", Store: store, Constants: w,
		States: []StateDecl{kv, StateDeclOf("pos", []int64{1}, []int32{7})}, SessionCapacity: capacity})
	must(t, err)
	t.Cleanup(func() { prefill.Close() })
	decode, err = NewContainer(rt, &ContainerOptions{Name: "decode", Store: store, Constants: w,
		States: []StateDecl{kv}, StateArenaOf: prefill})
	must(t, err)
	t.Cleanup(func() { decode.Close() })
	must(t, store.UpdateFromHost([]HostTensor{HostTensorOf("w", []int64{4}, []float32{1, 2, 3, 4})}, nil))
	must(t, store.Swap())
	return prefill, decode
}

// arenaSlotBytes is one slot of arenaModel's arena: kv and pos.
const arenaSlotBytes = kvElems*4 + 4

func wantArenaStats(t *testing.T, c *Container, used, free uint32, perSession uint64) {
	t.Helper()
	st, err := c.StateArenaStats()
	must(t, err)
	if st.NumSlots != used+free || st.NumSlotsUsed != used || st.NumSlotsFree != free || st.Bytes != uint64(st.NumSlots)*perSession {
		t.Fatalf("arena stats %+v, want %d used, %d free, %d bytes a slot", st, used, free, perSession)
	}
}

func TestStateArenaSlots(t *testing.T) {
	rt := hostRuntime(t)
	prefill, decode := arenaModel(t, rt, 3)
	wantArenaStats(t, prefill, 0, 3, arenaSlotBytes)
	wantArenaStats(t, decode, 0, 3, arenaSlotBytes) // one arena

	var sessions []*Session
	slots := map[int64]bool{}
	for i := 0; i < 3; i++ {
		s := openSession(t, rt, nil, prefill, decode)
		slot := s.Slot()
		if slot < 0 || slot >= 3 || slots[slot] {
			t.Fatalf("session %d got slot %d (taken: %v)", i, slot, slots)
		}
		slots[slot] = true
		sessions = append(sessions, s)
	}
	wantArenaStats(t, prefill, 3, 0, arenaSlotBytes)
	_, err := NewSession(rt, []*Container{prefill, decode}, nil)
	wantCode(t, err, ErrResourceExhausted, "3")
	fork, err := sessions[0].Fork()
	if fork != nil || err == nil {
		t.Fatalf("a fork of a full arena: %v, %v", fork, err)
	}
	wantCode(t, err, ErrResourceExhausted, "3")
	wantArenaStats(t, prefill, 3, 0, arenaSlotBytes) // the refusals took nothing

	// A closed session's slot is the next one's.
	freed := sessions[1].Slot()
	must(t, sessions[1].Close())
	wantArenaStats(t, prefill, 2, 1, arenaSlotBytes)
	if sessions[1].Slot() != -1 {
		t.Fatal("a closed session reports a slot")
	}
	again := openSession(t, rt, nil, prefill, decode)
	if again.Slot() != freed {
		t.Fatalf("the new session took slot %d, the free one is %d", again.Slot(), freed)
	}
	wantArenaStats(t, prefill, 3, 0, arenaSlotBytes)

	// Each session's state is its own slot: a write through one is not seen by another.
	step(t, prefill, sessions[0], "kv", zeros, pattern(10))
	step(t, decode, again, "kv", zeros, pattern(20))
	step(t, decode, sessions[0], "kv", pattern(10), nil)
	step(t, prefill, again, "kv", pattern(20), nil)
	must(t, sessions[0].Reset())
	step(t, prefill, sessions[0], "kv", zeros, nil)

	// No arena: Slot is -1 and the stats are refused.
	plainP, _ := statefulModel(t, rt, 0)
	plain := openSession(t, rt, nil, plainP)
	if plain.Slot() != -1 {
		t.Fatalf("a session without an arena has slot %d", plain.Slot())
	}
	_, err = plainP.StateArenaStats()
	wantCode(t, err, ErrFailedPrecondition)
	var nilSession *Session
	if nilSession.Slot() != -1 {
		t.Fatal("a nil session reports a slot")
	}
}

func TestStateArenaOptionErrors(t *testing.T) {
	rt := hostRuntime(t)
	prefill, _ := arenaModel(t, rt, 2)
	kv := StateDecl{FQN: "kv", DType: DTypeF32, Shape: []int64{2, 4}}
	// Both options at once, a joiner's state the arena lacks, a closed StateArenaOf.
	_, err := NewContainer(rt, &ContainerOptions{Name: "both", States: []StateDecl{kv}, SessionCapacity: 2, StateArenaOf: prefill})
	wantCode(t, err, ErrInvalidArgument)
	_, err = NewContainer(rt, &ContainerOptions{Name: "other", States: []StateDecl{{FQN: "h", DType: DTypeF32, Shape: []int64{3}}}, StateArenaOf: prefill})
	wantCode(t, err, ErrInvalidArgument, "h")
	gone, err := NewContainer(rt, &ContainerOptions{Name: "gone", States: []StateDecl{kv}, SessionCapacity: 1})
	must(t, err)
	must(t, gone.Close())
	_, err = NewContainer(rt, &ContainerOptions{Name: "late", States: []StateDecl{kv}, StateArenaOf: gone})
	wantClosed(t, err)
	if prefill.h.deps.Load() != 0 {
		t.Fatalf("a refused create kept StateArenaOf: %d references", prefill.h.deps.Load())
	}

	// The arena outlives the container that made it while a joiner uses it.
	maker, err := NewContainer(rt, &ContainerOptions{Name: "maker", States: []StateDecl{kv}, SessionCapacity: 2})
	must(t, err)
	joiner, err := NewContainer(rt, &ContainerOptions{Name: "joiner", States: []StateDecl{kv}, StateArenaOf: maker})
	must(t, err)
	defer joiner.Close()
	must(t, maker.Close())
	wantArenaStats(t, joiner, 0, 2, kvElems*4)
}

func TestBatchedRun(t *testing.T) {
	rt := hostRuntime(t)
	prefill, decode := arenaModel(t, rt, 4)
	var sessions []*Session
	for i := 0; i < 4; i++ {
		sessions = append(sessions, openSession(t, rt, nil, prefill, decode))
	}
	// Each session writes its slot's rows through a run of its own first.
	for i, s := range sessions {
		step(t, decode, s, "kv", zeros, pattern(float32(100*(i+1))))
	}
	batch := []*Session{sessions[2], sessions[0], sessions[3]}
	gen := decode.Generation()
	r, err := decode.BeginBatch(batch...)
	must(t, err)
	if r.NumSessions() != 3 || len(r.Sessions()) != 3 || r.Sessions()[0] != sessions[2] || r.Session() != nil {
		t.Fatalf("batch: %d sessions, %v", r.NumSessions(), r.Sessions())
	}
	idx, err := r.SlotIndices()
	must(t, err)
	if idx.DType() != DTypeI64 || fmt.Sprint(idx.Shape()) != "[3]" || idx.Writable() {
		t.Fatalf("slot indices %v %v writable %v", idx.DType(), idx.Shape(), idx.Writable())
	}
	got, err := ReadTensorValues[int64](r, idx)
	must(t, err)
	for i, s := range batch {
		if got[i] != s.Slot() {
			t.Fatalf("slot indices %v, sessions' slots %d %d %d", got, batch[0].Slot(), batch[1].Slot(), batch[2].Slot())
		}
	}
	// The state is the whole arena, [4, 2, 4]; each session's rows hold what it wrote.
	kv, err := r.Tensor("kv")
	must(t, err)
	if fmt.Sprint(kv.Shape()) != "[4 2 4]" || !kv.Writable() {
		t.Fatalf("arena state %v writable %v", kv.Shape(), kv.Writable())
	}
	all, err := ReadValues[float32](r, "kv")
	must(t, err)
	for i, s := range sessions {
		row := all[s.Slot()*kvElems : (s.Slot()+1)*kvElems]
		if !equal(row, pattern(float32(100*(i+1)))) {
			t.Fatalf("slot %d holds %v", s.Slot(), row)
		}
	}
	// A batch step: the kernel writes only its sessions' slots.
	for _, slot := range got {
		for j := int64(0); j < kvElems; j++ {
			all[slot*kvElems+j] = -float32(slot)
		}
	}
	must(t, SetValues(kv, all))

	// The generation is pinned: an update swapped in meanwhile is not the batch's.
	must(t, decode.Store().UpdateFromHost([]HostTensor{HostTensorOf("w", []int64{4}, []float32{5, 6, 7, 8})}, nil))
	must(t, decode.Store().Swap())
	if r.Generation() != gen || decode.Generation() == gen {
		t.Fatalf("run generation %d (begun on %d), container now %d", r.Generation(), gen, decode.Generation())
	}
	w, err := ReadValues[float32](r, "w")
	must(t, err)
	if !equal(w, []float32{1, 2, 3, 4}) {
		t.Fatalf("the batch reads w = %v", w)
	}

	// Its sessions are busy, and a batch over a busy session claims none of the others.
	_, err = decode.BeginRunWithSession(sessions[0])
	wantCode(t, err, ErrBusy)
	_, err = decode.BeginBatch(sessions[1], sessions[3])
	wantCode(t, err, ErrBusy, "1")
	step(t, decode, sessions[1], "kv", pattern(200), nil) // sessions[1] was not claimed
	must(t, r.End())
	if r.NumSessions() != 0 {
		t.Fatal("an ended run counts sessions")
	}
	_, err = r.SlotIndices()
	wantClosed(t, err)
	if _, err := ReadTensorValues[int64](r, idx); err == nil {
		t.Fatal("the slot index tensor outlived its run")
	}

	// Each batched session sees its slot's new rows; the others kept theirs.
	for _, s := range batch {
		want := make([]float32, kvElems)
		for j := range want {
			want[j] = -float32(s.Slot())
		}
		step(t, prefill, s, "kv", want, nil)
	}
	step(t, prefill, sessions[1], "kv", pattern(200), nil)

	// A run of one arena session has a slot index tensor of its one slot.
	one, err := prefill.BeginRunWithSession(sessions[3])
	must(t, err)
	idx1, err := one.SlotIndices()
	must(t, err)
	v, err := ReadTensorValues[int64](one, idx1)
	must(t, err)
	if len(v) != 1 || v[0] != sessions[3].Slot() || one.NumSessions() != 1 || len(one.Sessions()) != 1 {
		t.Fatalf("single run: slots %v, %d sessions", v, one.NumSessions())
	}
	must(t, one.End())
}

func TestBatchedRunErrors(t *testing.T) {
	rt := hostRuntime(t)
	prefill, decode := arenaModel(t, rt, 2)
	a := openSession(t, rt, nil, prefill, decode)
	b := openSession(t, rt, nil, prefill)
	_, err := decode.BeginBatch()
	wantCode(t, err, ErrInvalidArgument, "at least one")
	_, err = decode.BeginBatch(a, nil)
	wantCode(t, err, ErrInvalidArgument, "sessions[1]")
	_, err = decode.BeginBatch(a, a)
	wantCode(t, err, ErrInvalidArgument)
	_, err = decode.BeginBatch(a, b) // b does not cover decode
	wantCode(t, err, ErrInvalidArgument)
	plainP, _ := statefulModel(t, rt, 0)
	plain := openSession(t, rt, nil, plainP)
	_, err = plainP.BeginBatch(plain)
	wantCode(t, err, ErrFailedPrecondition)
	r, err := plainP.BeginRunWithSession(plain)
	must(t, err)
	_, err = r.SlotIndices()
	wantCode(t, err, ErrFailedPrecondition)
	must(t, r.End())
	var nilC *Container
	_, err = nilC.BeginBatch(a)
	wantCode(t, err, ErrInvalidArgument, "nil")
	must(t, b.Close())
	_, err = prefill.BeginBatch(a, b)
	wantClosed(t, err)
	// Refusals hold nothing: both sessions of a are free for a batch now.
	if a.h.deps.Load() != 0 {
		t.Fatalf("a refused batch kept a session: %d references", a.h.deps.Load())
	}
	r, err = prefill.BeginBatch(a)
	must(t, err)
	must(t, r.End())
	// Closing a batched session while the run is open: the run keeps it.
	c := openSession(t, rt, nil, prefill)
	r, err = prefill.BeginBatch(a, c)
	must(t, err)
	must(t, c.Close())
	wantArenaStats(t, prefill, 2, 0, arenaSlotBytes)
	must(t, r.End())
	wantArenaStats(t, prefill, 1, 1, arenaSlotBytes)
}

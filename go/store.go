// SPDX-License-Identifier: Apache-2.0

package wharf

/*
#include <stdlib.h>
#include "helpers.h"
*/
import "C"

import (
	"context"
	"runtime"
	"unsafe"
)

// WeightStore is one copy of each weight shared by every container that uses it
// (wharf_weight_store). Containers created with the same store (ContainerOptions.Store)
// share storage for constants whose FQN, dtype, shape and placement are equal, so two
// methods of one model (prefill and decode, say) cost the union of their weights, not the
// sum. Derived constants and session state are never shared.
//
// Container.Update on one member detaches what it writes (copy on write: the other
// members keep the old storage). WeightStore.Update writes each FQN once and stages it
// in every member that declares it; WeightStore.Swap then publishes all of them at once.
//
// A WeightStore is safe for concurrent use. It keeps its Runtime alive; containers keep
// the store alive, so it may be closed before them: it then stops accepting calls, and
// the C store is freed when the last container that uses it is.
type WeightStore struct {
	h  handle
	rt *Runtime
}

// WeightStoreStats describes a store's sharing (wharf_weight_store_stats).
type WeightStoreStats struct {
	NumUniqueConstants uint64 // live shared weights
	UniqueBytes        uint64 // their bytes
	NumReferences      uint64 // (container, constant) pairs whose active generation uses one
	SavedBytes         uint64 // bytes that would be allocated without sharing, minus UniqueBytes
}

// NewWeightStore creates an empty weight store on rt.
func NewWeightStore(rt *Runtime) (*WeightStore, error) {
	p, err := rt.h.acquire("NewWeightStore")
	if err != nil {
		return nil, err
	}
	defer rt.h.release()
	var out *C.wharf_weight_store
	err = statusError(C.wharf_weight_store_create((*C.wharf_runtime)(p), &out))
	runtime.KeepAlive(rt)
	if err != nil {
		return nil, err
	}
	rt.h.retain()
	s := &WeightStore{rt: rt}
	s.h.init("weight store", unsafe.Pointer(out), func(p unsafe.Pointer) error {
		C.wharf_weight_store_free((*C.wharf_weight_store)(p))
		return nil
	}, &rt.h)
	runtime.SetFinalizer(s, func(s *WeightStore) { leaked(&s.h, "Close") })
	return s, nil
}

// Runtime returns the runtime the store was created on.
func (s *WeightStore) Runtime() *Runtime { return s.rt }

// Close releases the store. Containers created with it keep it alive until they are
// freed. Close is idempotent (and a no-op on a nil *WeightStore) and returns nil.
func (s *WeightStore) Close() error {
	if s == nil {
		return nil
	}
	_, err := s.h.close()
	return err
}

// Stats reads the store's sharing figures.
func (s *WeightStore) Stats() (WeightStoreStats, error) {
	p, err := s.h.acquire("WeightStore.Stats")
	if err != nil {
		return WeightStoreStats{}, err
	}
	defer s.h.release()
	var st C.wharf_weight_store_stats
	st.struct_size = C.uint32_t(unsafe.Sizeof(st))
	err = statusError(C.wharf_weight_store_get_stats((*C.wharf_weight_store)(p), &st))
	runtime.KeepAlive(s)
	if err != nil {
		return WeightStoreStats{}, err
	}
	return WeightStoreStats{
		NumUniqueConstants: uint64(st.num_unique_constants),
		UniqueBytes:        uint64(st.unique_bytes),
		NumReferences:      uint64(st.num_references),
		SavedBytes:         uint64(st.saved_bytes),
	}, nil
}

// Update writes every entry of m once (one allocation and one copy per FQN) and stages it
// in the inactive generation of every member container that declares it, as that
// container's Update would; Swap publishes them. opts.Fold, if set, runs for each such
// container that declares derived constants. Only TargetInactive is supported
// (ErrUnsupported otherwise). All or nothing: an unknown FQN (ErrNotFound) or a wrong
// dtype or shape (ErrInvalidArgument) is found before anything is copied, and a failure
// stages nothing anywhere. ErrBusy: a member container is being updated.
func (s *WeightStore) Update(m *ConstantMap, opts *UpdateOptions) error {
	return s.update("WeightStore.Update", context.Background(), m, opts)
}

// UpdateContext is Update that ctx can cancel (see Container.UpdateContext): a cancelled
// store update stages nothing anywhere. Progress counts each source byte once. Since 0.3.
func (s *WeightStore) UpdateContext(ctx context.Context, m *ConstantMap, opts *UpdateOptions) error {
	return s.update("WeightStore.UpdateContext", ctx, m, opts)
}

func (s *WeightStore) update(what string, ctx context.Context, m *ConstantMap, opts *UpdateOptions) error {
	if err := checkNotInStoreFold(&s.h, what); err != nil {
		return err
	}
	mp, err := m.read(what)
	if err != nil {
		return err
	}
	defer m.done()
	sp, err := s.h.acquire(what)
	if err != nil {
		return err
	}
	defer s.h.release()
	err = withUpdate(what, ctx, &s.h, opts, func(args *C.wharf_go_update_args) *C.wharf_status {
		return C.wharf_go_store_update((*C.wharf_weight_store)(sp), mp, args)
	})
	runtime.KeepAlive(m)
	runtime.KeepAlive(s)
	return err
}

// UpdateFromFile is Update from a safetensors file or a sharded checkpoint's index (a
// path ending in ".json"), memory-mapped, validated whole and written as one store update
// (see Container.UpdateFromFile for the file rules). All or nothing across the members: a
// corrupt file or shard stages nothing anywhere. Errors: those of LoadSafetensors, then
// Update's. Since 0.3.
func (s *WeightStore) UpdateFromFile(path string, opts *UpdateOptions) error {
	return s.updateFromFile("WeightStore.UpdateFromFile", context.Background(), path, opts)
}

// UpdateFromFileContext is UpdateFromFile that ctx can cancel (see
// Container.UpdateContext). Since 0.3.
func (s *WeightStore) UpdateFromFileContext(ctx context.Context, path string, opts *UpdateOptions) error {
	return s.updateFromFile("WeightStore.UpdateFromFileContext", ctx, path, opts)
}

func (s *WeightStore) updateFromFile(what string, ctx context.Context, path string, opts *UpdateOptions) error {
	if err := checkNotInStoreFold(&s.h, what); err != nil {
		return err
	}
	cpath := C.CString(path)
	defer C.free(unsafe.Pointer(cpath))
	sp, err := s.h.acquire(what)
	if err != nil {
		return err
	}
	defer s.h.release()
	err = withUpdate(what, ctx, &s.h, opts, func(args *C.wharf_go_update_args) *C.wharf_status {
		return C.wharf_go_store_update_from_file((*C.wharf_weight_store)(sp), cpath, args)
	})
	runtime.KeepAlive(s)
	return err
}

// UpdatePacked is Update from tensors stored in one Go byte slice, without copying them
// on the Go side (see Container.UpdatePacked).
func (s *WeightStore) UpdatePacked(buf []byte, tensors []PackedTensor, opts *UpdateOptions) error {
	const what = "WeightStore.UpdatePacked"
	if err := checkPacked(what, len(buf), tensors); err != nil {
		return err
	}
	var base unsafe.Pointer
	if len(buf) > 0 {
		base = unsafe.Pointer(&buf[0])
	}
	err := s.updatePacked(what, base, tensors, opts)
	runtime.KeepAlive(buf)
	return err
}

// UpdateFromHost is Update from any number of Go slices, copied once into C memory (see
// Container.UpdateFromHost).
func (s *WeightStore) UpdateFromHost(tensors []HostTensor, opts *UpdateOptions) error {
	const what = "WeightStore.UpdateFromHost"
	var arena cArena
	defer arena.free()
	base, layout, err := stageHost(what, &arena, tensors)
	if err != nil {
		return err
	}
	return s.updatePacked(what, base, layout, opts)
}

func (s *WeightStore) updatePacked(what string, base unsafe.Pointer, tensors []PackedTensor, opts *UpdateOptions) error {
	if err := checkNotInStoreFold(&s.h, what); err != nil {
		return err
	}
	a, err := newPackedArgs(what, tensors)
	if err != nil {
		return err
	}
	sp, err := s.h.acquire(what)
	if err != nil {
		return err
	}
	defer s.h.release()
	err = withUpdate(what, context.Background(), &s.h, opts, func(args *C.wharf_go_update_args) *C.wharf_status {
		return C.wharf_go_store_update_packed((*C.wharf_weight_store)(sp), base, a.cNames(), a.cDTypes(), a.cNDims(),
			a.cShapes(), a.cOffsets(), C.size_t(a.n), args)
	})
	runtime.KeepAlive(a)
	runtime.KeepAlive(s)
	return err
}

// Swap makes every member container staged by Update active, atomically with respect to
// runs: no run begun after it returns sees old weights in one container and new ones in
// another. Errors: ErrFailedPrecondition when nothing was staged by a store Update.
func (s *WeightStore) Swap() error {
	if err := checkNotInStoreFold(&s.h, "WeightStore.Swap"); err != nil {
		return err
	}
	p, err := s.h.acquire("WeightStore.Swap")
	if err != nil {
		return err
	}
	defer s.h.release()
	err = statusError(C.wharf_weight_store_swap((*C.wharf_weight_store)(p)))
	runtime.KeepAlive(s)
	return err
}

// SPDX-License-Identifier: Apache-2.0

package wharf

/*
#include <stdlib.h>
#include "helpers.h"
*/
import "C"

import (
	"context"
	"math"
	"runtime"
	"runtime/cgo"
	"time"
	"unsafe"
)

// ConstantDecl declares one constant of a container.
type ConstantDecl struct {
	FQN       string
	DType     DType
	Shape     []int64
	Placement Placement     // PlacementDevice (the zero value) or PlacementHost
	Flags     ConstantFlags // ConstantDerived: computed by the update's Fold callback
}

// StateDecl declares one per-session mutable tensor of a container (a KV cache, a
// recurrent or convolution state; wharf_state_decl). Every Session over the container gets
// its own buffer, allocated at the session's first run (or at creation with
// SessionOptions.AllocateEagerly) and set to Initial; Session.Reset restores Initial.
type StateDecl struct {
	FQN   string
	DType DType
	Shape []int64
	// Initial is the state's initial value: contiguous row-major host data of exactly
	// NumElements * DType.Size() bytes, or nil for zeros. It is copied when the container
	// is created (the container keeps its own template), so it may be Go memory.
	Initial []byte
}

// StateDeclOf declares a state of the dtype of T whose initial value is data (nil for
// zeros). It does not copy: Initial aliases data until the container is created.
func StateDeclOf[T Element](fqn string, shape []int64, data []T) StateDecl {
	d := StateDecl{FQN: fqn, DType: DTypeOf[T](), Shape: shape}
	if data != nil {
		d.Initial = []byte{}
		if len(data) > 0 {
			d.Initial = unsafe.Slice((*byte)(unsafe.Pointer(&data[0])), len(data)*int(unsafe.Sizeof(data[0])))
		}
	}
	return d
}

// ContainerOptions configures NewContainer and NewContainerFromMapOptions.
type ContainerOptions struct {
	Name      string // for messages; "" means "model"
	Constants []ConstantDecl

	// Store shares constants with the store's other containers (nil: no sharing). A
	// constant is shared when its FQN, dtype, shape and placement are equal; a different
	// declaration under a shared FQN is refused (ErrInvalidArgument). The container keeps
	// the store alive.
	Store *WeightStore
	// States are the per-session tensors; a container that declares any needs a Session
	// for every run (Container.BeginRunWithSession).
	States []StateDecl
	// MaxSessionBytes caps the state bytes of all live sessions covering the container
	// (0 = no cap): NewSession and Session.Fork past it fail with ErrResourceExhausted.
	MaxSessionBytes uint64
	// Progress, for NewContainerFromMapOptions and NewContainerFromMapContext only, is told
	// how many of the map's bytes have been loaded, as UpdateOptions.Progress. Since 0.3.
	Progress func(done, total uint64)

	// SessionCapacity > 0 keeps the state of up to this many sessions in one allocation
	// per state tensor, [SessionCapacity, ...shape], made now (a state arena): each
	// Session takes a slot (Session.Slot) when it is created and NewSession past the
	// capacity fails with ErrResourceExhausted naming it; Container.BeginBatch runs many
	// sessions at once. 0: every session allocates buffers of its own. Not with
	// StateArenaOf.
	//
	// Experimental: part of wharf.h's experimental tier (state arenas); it may change in
	// any minor release.
	SessionCapacity uint32
	// StateArenaOf keeps this container's states in the state arena of that container
	// (only read during the create call; the arena lives while any container or session
	// uses it), whose states must include these with equal dtype and shape: the methods of
	// one model (prefill and decode) sharing their sessions' slots. nil: none.
	//
	// Experimental: part of wharf.h's experimental tier (state arenas); it may change in
	// any minor release.
	StateArenaOf *Container
}

// ConstantInfo describes one declared constant of a container.
type ConstantInfo struct {
	FQN       string
	DType     DType
	Shape     []int64
	Placement Placement
	Flags     ConstantFlags
	NBytes    uint64 // size of the constant's storage
}

// StateInfo describes one declared state (wharf_state_info): every session over the
// container holds one buffer of it.
type StateInfo struct {
	FQN    string
	DType  DType
	Shape  []int64
	NBytes uint64 // bytes of one session's buffer
}

// Container is one model's constants, double-buffered in copy-on-write generations
// (wharf_container): an active generation that new runs read and an inactive one that
// updates write and Swap publishes. It is safe for concurrent use; two concurrent
// updates are not interleaved (the second fails with ErrBusy).
//
// A container keeps its Runtime (and its WeightStore) alive. Closing it while runs or
// sessions that use it are open is allowed: it stops accepting calls, and the C container
// is freed when the last of them ends.
type Container struct {
	h      handle
	rt     *Runtime
	store  *WeightStore    // nil without a store
	states map[string]bool // the FQNs of the declared states (immutable)
}

// cArena collects C allocations freed together.
type cArena struct{ ptrs []unsafe.Pointer }

func (a *cArena) alloc(n int) unsafe.Pointer {
	if n <= 0 {
		n = 1
	}
	p := C.calloc(C.size_t(n), 1)
	if p == nil {
		panic("wharf: C.calloc failed")
	}
	a.ptrs = append(a.ptrs, p)
	return p
}

func (a *cArena) cstring(s string) *C.char {
	p := C.CString(s)
	a.ptrs = append(a.ptrs, unsafe.Pointer(p))
	return p
}

// shape copies a shape into the arena (nil for a scalar).
func (a *cArena) shape(shape []int64) *C.int64_t {
	if len(shape) == 0 {
		return nil
	}
	s := unsafe.Slice((*int64)(a.alloc(8*len(shape))), len(shape))
	copy(s, shape)
	return (*C.int64_t)(unsafe.Pointer(&s[0]))
}

func (a *cArena) free() {
	for _, p := range a.ptrs {
		C.free(p)
	}
	a.ptrs = nil
}

func newContainer(rt *Runtime, store *WeightStore, p *C.wharf_container) *Container {
	rt.h.retain() // the caller holds a reference to rt.h
	held := []*handle{&rt.h}
	if store != nil {
		held = append(held, &store.h) // retained by the caller (containerOptions)
	}
	c := &Container{rt: rt, store: store, states: stateNames(p)}
	c.h.init("container", unsafe.Pointer(p), func(p unsafe.Pointer) error {
		C.wharf_container_free((*C.wharf_container)(p))
		return nil
	}, held...)
	runtime.SetFinalizer(c, func(c *Container) { leaked(&c.h, "Close") })
	return c
}

// cContainerOptions is a wharf_container_options built in C memory, with the store it
// names retained for the create call (and beyond, when the container is created).
type cContainerOptions struct {
	o       C.wharf_container_options
	store   *handle // retained; nil without a store
	arenaOf *handle // retained for the create call only; nil without StateArenaOf
}

// done releases the store unless created is true (the container then holds it), and the
// container named by StateArenaOf (borrowed for the call: the C arena outlives it).
func (co *cContainerOptions) done(created bool) {
	if co.store != nil && !created {
		co.store.release()
	}
	co.store = nil
	if co.arenaOf != nil {
		co.arenaOf.release()
	}
	co.arenaOf = nil
}

// containerOptions translates opts into arena memory: the declarations and everything they
// point to live in C memory, since a Go array of structs holding pointers may not be
// passed to C if those pointers are Go's. On success the caller must call done.
func containerOptions(what string, arena *cArena, opts *ContainerOptions) (*cContainerOptions, error) {
	for _, d := range opts.Constants {
		if _, err := checkShape(what+": constant '"+d.FQN+"'", d.Shape, nil); err != nil {
			return nil, err
		}
	}
	stateBytes := make([]int64, len(opts.States))
	for i, d := range opts.States {
		n, err := checkShape(what+": state '"+d.FQN+"'", d.Shape, nil)
		if err != nil {
			return nil, err
		}
		if d.Initial != nil {
			nbytes, err := byteSize(what+": state '"+d.FQN+"'", d.DType, n)
			if err != nil {
				return nil, err
			}
			if int64(len(d.Initial)) != nbytes {
				return nil, invalidArgument("%s: state '%s': %d bytes of initial value for shape %v of %v (%d bytes)",
					what, d.FQN, len(d.Initial), d.Shape, d.DType, nbytes)
			}
			stateBytes[i] = nbytes
		}
	}
	co := &cContainerOptions{}
	o := &co.o
	// The sized form: the library writes exactly this binding's struct (see wharf.h).
	C.wharf_container_options_init_sized(o, C.size_t(C.sizeof_wharf_container_options))
	if opts.Name != "" {
		o.name = arena.cstring(opts.Name)
	}
	if n := len(opts.Constants); n > 0 {
		decls := unsafe.Slice((*C.wharf_constant_decl)(arena.alloc(n*int(unsafe.Sizeof(C.wharf_constant_decl{})))), n)
		for i, d := range opts.Constants {
			decls[i].fqn = arena.cstring(d.FQN)
			decls[i].dtype = C.wharf_dtype(d.DType)
			decls[i].ndim = C.int32_t(len(d.Shape))
			decls[i].shape = arena.shape(d.Shape)
			decls[i].placement = C.wharf_placement(d.Placement)
			decls[i].flags = C.uint32_t(d.Flags)
			decls[i].struct_size = C.sizeof_wharf_constant_decl
		}
		o.constants = &decls[0]
		o.num_constants = C.size_t(n)
	}
	if n := len(opts.States); n > 0 {
		decls := unsafe.Slice((*C.wharf_state_decl)(arena.alloc(n*int(unsafe.Sizeof(C.wharf_state_decl{})))), n)
		for i, d := range opts.States {
			decls[i].fqn = arena.cstring(d.FQN)
			decls[i].dtype = C.wharf_dtype(d.DType)
			decls[i].ndim = C.int32_t(len(d.Shape))
			decls[i].shape = arena.shape(d.Shape)
			decls[i].struct_size = C.sizeof_wharf_state_decl
			if d.Initial != nil {
				// The initial value is copied into C memory: the view holding its address
				// is itself in C memory, where a Go pointer may not be stored.
				data := arena.alloc(int(stateBytes[i]))
				copy(unsafe.Slice((*byte)(data), stateBytes[i]), d.Initial)
				view := (*C.wharf_tensor_view)(arena.alloc(int(unsafe.Sizeof(C.wharf_tensor_view{}))))
				view.struct_size = C.sizeof_wharf_tensor_view
				view.data = data
				view.dtype = C.wharf_dtype(d.DType)
				view.device_type = C.WHARF_DEVICE_CPU
				view.ndim = C.int32_t(len(d.Shape))
				view.shape = decls[i].shape
				decls[i].initial = view
			}
		}
		o.states = &decls[0]
		o.num_states = C.size_t(n)
	}
	o.max_session_bytes = C.uint64_t(opts.MaxSessionBytes)
	o.session_capacity = C.uint32_t(opts.SessionCapacity)
	if opts.Store != nil {
		p, err := opts.Store.h.acquire(what + " (the weight store)")
		if err != nil {
			return nil, err
		}
		co.store = &opts.Store.h
		o.store = (*C.wharf_weight_store)(p)
	}
	if opts.StateArenaOf != nil {
		p, err := opts.StateArenaOf.h.acquire(what + " (the container of StateArenaOf)")
		if err != nil {
			co.done(false)
			return nil, err
		}
		co.arenaOf = &opts.StateArenaOf.h
		o.state_arena_of = (*C.wharf_container)(p)
	}
	return co, nil
}

// NewContainer declares a container: constants only, no weights yet. Runs fail with
// ErrFailedPrecondition until a first update has been swapped in. With opts.Store, its
// constants are registered in the store, and its first update takes the store's storage
// for constants the store already holds. Errors: ErrInvalidArgument (a bad or duplicate
// declaration, an initial state value of the wrong size, a state named like a constant,
// or a declaration that disagrees with the store's under the same FQN; the message names
// it).
func NewContainer(rt *Runtime, opts *ContainerOptions) (*Container, error) {
	const what = "NewContainer"
	if opts == nil {
		opts = &ContainerOptions{}
	}
	var arena cArena
	defer arena.free()
	co, err := containerOptions(what, &arena, opts)
	if err != nil {
		return nil, err
	}
	p, err := rt.h.acquire(what)
	if err != nil {
		co.done(false)
		return nil, err
	}
	defer rt.h.release()
	var out *C.wharf_container
	err = statusError(C.wharf_container_create((*C.wharf_runtime)(p), &co.o, &out))
	runtime.KeepAlive(rt)
	co.done(err == nil)
	if err != nil {
		return nil, err
	}
	return newContainer(rt, opts.Store, out), nil
}

// NewContainerFromMap declares one device-placed constant per entry of m (in map order),
// loads them and makes them active: the container is ready to run. name may be "" (for
// "model"). The map is only read during the call. Errors: as Update.
func NewContainerFromMap(rt *Runtime, m *ConstantMap, name string) (*Container, error) {
	return newContainerFromMap("NewContainerFromMap", context.Background(), rt, m, &ContainerOptions{Name: name})
}

// NewContainerFromMapOptions is NewContainerFromMap with options: their Constants must be
// empty (the map declares them); Name, Store, States and MaxSessionBytes apply. With a
// store, constants the store already holds with equal dtype, shape and placement are
// shared: no allocation and no copy (the store assumes one FQN names one weight, so the
// map's data for them is not read). A nil opts means defaults.
func NewContainerFromMapOptions(rt *Runtime, m *ConstantMap, opts *ContainerOptions) (*Container, error) {
	if opts == nil {
		opts = &ContainerOptions{}
	}
	return newContainerFromMap("NewContainerFromMapOptions", context.Background(), rt, m, opts)
}

// NewContainerFromMapContext is NewContainerFromMapOptions that ctx can cancel (see
// Container.UpdateContext): a cancelled load creates nothing and returns an error matching
// both ErrCancelled and ctx.Err(). Since 0.3.
func NewContainerFromMapContext(ctx context.Context, rt *Runtime, m *ConstantMap, opts *ContainerOptions) (*Container, error) {
	if opts == nil {
		opts = &ContainerOptions{}
	}
	return newContainerFromMap("NewContainerFromMapContext", ctx, rt, m, opts)
}

func newContainerFromMap(what string, ctx context.Context, rt *Runtime, m *ConstantMap, opts *ContainerOptions) (*Container, error) {
	var arena cArena
	defer arena.free()
	co, err := containerOptions(what, &arena, opts)
	if err != nil {
		return nil, err
	}
	created := false
	defer func() { co.done(created) }()
	mp, err := m.read(what)
	if err != nil {
		return nil, err
	}
	defer m.done()
	rp, err := rt.h.acquire(what)
	if err != nil {
		return nil, err
	}
	defer rt.h.release()
	var out *C.wharf_container
	err = withProgress(what, ctx, opts.Progress, false, func(progress C.uintptr_t) error {
		if progress != 0 {
			C.wharf_go_container_progress(&co.o, progress)
		}
		return statusError(C.wharf_container_create_from_map((*C.wharf_runtime)(rp), (*C.wharf_constant_map)(mp), &co.o, &out))
	})
	runtime.KeepAlive(m)
	runtime.KeepAlive(rt)
	if err != nil {
		return nil, err
	}
	created = true
	return newContainer(rt, opts.Store, out), nil
}

// Runtime returns the runtime the container was created on.
func (c *Container) Runtime() *Runtime { return c.rt }

// Store returns the weight store the container shares constants through (nil if none).
func (c *Container) Store() *WeightStore { return c.store }

// Close releases the container. Open runs and sessions that cover it keep it alive until
// they end; the runtime and the store are released when the C container is freed. Close
// is idempotent (and a no-op on a nil *Container) and returns nil.
func (c *Container) Close() error {
	if c == nil {
		return nil
	}
	_, err := c.h.close()
	return err
}

// UpdateOptions configures an update. A nil *UpdateOptions means the defaults (the zero
// value): write the inactive generation, a partial map is fine, no fold.
type UpdateOptions struct {
	// Target selects the generation written: TargetInactive (publish with Swap) or
	// TargetActiveInPlace.
	Target UpdateTarget
	// RequireFull makes the update fail unless the map names every non-derived constant.
	RequireFull bool
	// Fold computes the derived constants (ConstantDerived) of the generation being
	// written; it is required when the container declares any. It runs during the update,
	// on a goroutine of its own (the calling goroutine waits for it), and receives a
	// FoldRun over that generation, valid only during the call. Calls back into the API
	// from it get an error rather than a hang (another update of the container: ErrBusy; a
	// store call from a store update's fold: ErrFailedPrecondition; Set on the update's map:
	// ErrBusy; Close of a handle the update uses closes it once the update returns). An
	// error aborts the update, which then changes nothing; so do a panic and
	// runtime.Goexit (what t.FailNow calls), which are re-raised on the calling goroutine
	// once the library has returned. Because the callback runs on its own goroutine, no Go
	// control flow ever crosses the library's C frames.
	Fold func(run *FoldRun) error
	// WaitStream is a cudaStream_t (as an unsafe.Pointer, like Run.Stream returns) whose
	// work so far the update's reads of device sources wait for, on the device: a
	// trainer's or an NCCL receive's stream that produced the new weights. The host does
	// not wait. nil means none; it must be nil on the host backend (ErrInvalidArgument).
	// Host sources are read as the call reads them.
	WaitStream unsafe.Pointer
	// Progress, if set, is told how many of the update's bytes have been copied (done of
	// total; total is fixed for the call): every 16 MiB and once with done == total before
	// anything is staged. It runs on a goroutine of its own while the calling goroutine
	// waits, and must not call into the object being updated (ErrBusy). A panic or
	// runtime.Goexit in it cancels the update (which changes nothing) and is re-raised on
	// the calling goroutine once the library has returned. To cancel, use the *Context
	// variants (UpdateContext). Since 0.3.
	Progress func(done, total uint64)
	// InPlaceMaxWait bounds, for TargetActiveInPlace, how long the update waits for open
	// runs that pinned a written constant before giving that constant fresh storage
	// instead (its bytes of extra memory). 0 means the library's default (1 s); a negative
	// value means never wait. It is rounded up to whole milliseconds.
	InPlaceMaxWait time.Duration
}

// updateArgs translates opts (not nil) for the C helpers, without the fold.
func updateArgs(opts *UpdateOptions) C.wharf_go_update_args {
	args := C.wharf_go_update_args{
		target:               C.int32_t(opts.Target),
		wait_stream:          C.uintptr_t(uintptr(opts.WaitStream)),
		in_place_max_wait_ms: -1, // the library's default
	}
	if opts.RequireFull {
		args.require_full = 1
	}
	switch d := opts.InPlaceMaxWait; {
	case d < 0:
		args.in_place_max_wait_ms = 0
	case d > 0:
		ms := d / time.Millisecond
		if d%time.Millisecond != 0 {
			ms++
		}
		if ms > math.MaxUint32 {
			ms = math.MaxUint32
		}
		args.in_place_max_wait_ms = C.int64_t(ms)
	}
	return args
}

// FoldError is the error of an update whose Fold callback failed. Err is the callback's own
// error (errors.Is and errors.As see through it). Status is what the library reported for
// the update: the binding hands the library a status made with wharf_status_create (the
// Code and Message of an *Error the callback returned; CodeFailedPrecondition and the
// error's text for any other error), and the library returns that code with the message
// after its context ("container 'm': fold callback: " + message).
type FoldError struct {
	Err    error
	Status *Error
}

// Error describes the failure.
func (e *FoldError) Error() string {
	return "wharf: update aborted by the fold callback: " + e.Err.Error()
}

// Unwrap returns the callback's error.
func (e *FoldError) Unwrap() error { return e.Err }

// withUpdate runs call (which performs the C update) with opts translated, and turns a
// fold callback's failure, or a cancellation by ctx, into the update's result.
// store is the weight store being updated (nil for a container's update). A callback that
// panicked is re-panicked here, and one that called runtime.Goexit makes this goroutine
// exit too, once the library has returned (and so changed nothing).
func withUpdate(what string, ctx context.Context, store *handle, opts *UpdateOptions, call func(args *C.wharf_go_update_args) *C.wharf_status) error {
	if opts == nil {
		opts = &UpdateOptions{}
	}
	return withProgress(what, ctx, opts.Progress, opts.Target == TargetActiveInPlace, func(progress C.uintptr_t) error {
		args := updateArgs(opts)
		args.progress_handle = progress
		var fc *foldCall
		if opts.Fold != nil {
			fc = &foldCall{fn: opts.Fold, store: store}
			h := cgo.NewHandle(fc)
			defer h.Delete()
			args.fold_handle = C.uintptr_t(h)
		}
		err := statusError(call(&args))
		if fc != nil {
			if fc.panicked {
				panic(fc.panicVal)
			}
			if fc.goexit {
				runtime.Goexit()
			}
			if err != nil && fc.err != nil {
				status, _ := err.(*Error)
				return &FoldError{Err: fc.err, Status: status}
			}
		}
		return err
	})
}

// Update writes the map's tensors into the container and returns when the data is in
// place (the map's memory is no longer read). Sources may be host or device memory.
// Everything is validated before anything is copied: an unknown name (ErrNotFound), a
// derived constant, a wrong dtype or shape, a non-contiguous tensor, or nil data
// (ErrInvalidArgument) change nothing. ErrOutOfMemory midway leaves the active
// generation untouched. A concurrent update of the same container fails with ErrBusy.
//
// With Target TargetActiveInPlace the update writes and publishes at once: a written
// constant nothing else references is overwritten in place (no extra memory) once the
// open runs that pinned it end, waited for up to InPlaceMaxWait (default 1 s); one still
// pinned after that, or shared, gets fresh storage. Open runs never see their data change,
// and runs begun after the call returns see only new data (a new generation id).
func (c *Container) Update(m *ConstantMap, opts *UpdateOptions) error {
	return c.update("Container.Update", context.Background(), m, opts)
}

// UpdateContext is Update that ctx can cancel: the library checks ctx every 16 MiB copied
// and before it stages anything. A cancelled update changes nothing (the generation and
// the values stay as they were) and returns an error matching both ErrCancelled and
// ctx.Err() under errors.Is; so does a ctx already done when the call starts. An in-place
// update (TargetActiveInPlace) cannot stop midway: it checks ctx only before it starts, and
// refuses a Progress func (ErrUnsupported). Since 0.3.
func (c *Container) UpdateContext(ctx context.Context, m *ConstantMap, opts *UpdateOptions) error {
	return c.update("Container.UpdateContext", ctx, m, opts)
}

func (c *Container) update(what string, ctx context.Context, m *ConstantMap, opts *UpdateOptions) error {
	mp, err := m.read(what)
	if err != nil {
		return err
	}
	defer m.done()
	cp, err := c.h.acquire(what)
	if err != nil {
		return err
	}
	defer c.h.release()
	err = withUpdate(what, ctx, nil, opts, func(args *C.wharf_go_update_args) *C.wharf_status {
		return C.wharf_go_update((*C.wharf_container)(cp), mp, args)
	})
	runtime.KeepAlive(m)
	runtime.KeepAlive(c)
	return err
}

// UpdateFromFile is Update from a safetensors file, or from every shard of a sharded
// checkpoint's index (a path ending in ".json"). The file is memory-mapped and validated
// whole before anything is written, and its pages are read straight into the staging ring
// (no host copy); the mapping is released before the call returns. It may name a subset of
// the container's constants (opts.RequireFull demands all). Errors: those of
// LoadSafetensors for the file (ErrNotFound, ErrIOError, ErrDataCorrupt, ErrUnsupported),
// then ErrNotFound for a tensor the container does not declare and ErrInvalidArgument for
// a dtype or shape that differs, each changing nothing; the rest as Update. The file must
// not be truncated during the call (replace model files by rename, as Save does).
// Since 0.3.
func (c *Container) UpdateFromFile(path string, opts *UpdateOptions) error {
	return c.updateFromFile("Container.UpdateFromFile", context.Background(), path, opts)
}

// UpdateFromFileContext is UpdateFromFile that ctx can cancel, as UpdateContext. Since 0.3.
func (c *Container) UpdateFromFileContext(ctx context.Context, path string, opts *UpdateOptions) error {
	return c.updateFromFile("Container.UpdateFromFileContext", ctx, path, opts)
}

func (c *Container) updateFromFile(what string, ctx context.Context, path string, opts *UpdateOptions) error {
	cpath := C.CString(path)
	defer C.free(unsafe.Pointer(cpath))
	cp, err := c.h.acquire(what)
	if err != nil {
		return err
	}
	defer c.h.release()
	err = withUpdate(what, ctx, nil, opts, func(args *C.wharf_go_update_args) *C.wharf_status {
		return C.wharf_go_update_from_file((*C.wharf_container)(cp), cpath, args)
	})
	runtime.KeepAlive(c)
	return err
}

// PackedTensor locates one contiguous host tensor inside the buffer given to
// Container.UpdatePacked.
type PackedTensor struct {
	Name   string
	DType  DType
	Shape  []int64
	Offset int // byte offset of the first element in the buffer
}

// UpdatePacked updates the container from tensors stored in one Go byte slice, without
// copying them on the Go side. It is the zero-copy path for Go memory: buf is passed to a
// single C call that builds a temporary map over it, runs the update and frees the map
// before returning, so C never keeps a Go pointer (see the package documentation). buf
// must not be modified during the call. Errors: ErrInvalidArgument if a tensor does not
// fit in buf, otherwise as Update.
func (c *Container) UpdatePacked(buf []byte, tensors []PackedTensor, opts *UpdateOptions) error {
	const what = "Container.UpdatePacked"
	if err := checkPacked(what, len(buf), tensors); err != nil {
		return err
	}
	var base unsafe.Pointer
	if len(buf) > 0 {
		base = unsafe.Pointer(&buf[0])
	}
	err := c.updatePacked(what, base, tensors, opts)
	runtime.KeepAlive(buf)
	return err
}

// checkPacked checks that every tensor fits in a buffer of size bytes.
func checkPacked(what string, size int, tensors []PackedTensor) error {
	for _, t := range tensors {
		n, err := checkShape(what+": constant '"+t.Name+"'", t.Shape, nil)
		if err != nil {
			return err
		}
		nbytes, err := byteSize(what+": constant '"+t.Name+"'", t.DType, n)
		if err != nil {
			return err
		}
		if t.Offset < 0 || t.Offset > size || nbytes > int64(size-t.Offset) {
			return invalidArgument("%s: constant '%s': %d bytes at offset %d do not fit in a %d-byte buffer",
				what, t.Name, nbytes, t.Offset, size)
		}
	}
	return nil
}

// packedArgs is the pointer-free description of packed tensors, in Go memory, that the
// packed-update helpers receive as direct arguments.
type packedArgs struct {
	names   []byte
	dtypes  []int32
	ndims   []int32
	offsets []uint64
	shapes  []int64
	n       int
}

func newPackedArgs(what string, tensors []PackedTensor) (*packedArgs, error) {
	n := len(tensors)
	a := &packedArgs{
		dtypes:  make([]int32, n+1), // +1: never empty, so &x[0] is valid
		ndims:   make([]int32, n+1),
		offsets: make([]uint64, n+1),
		shapes:  make([]int64, 0, 1+2*n),
		n:       n,
	}
	for i, t := range tensors {
		if t.Name == "" {
			return nil, invalidArgument("%s: tensor %d has an empty name", what, i)
		}
		for j := 0; j < len(t.Name); j++ {
			if t.Name[j] == 0 {
				return nil, invalidArgument("%s: tensor %d's name contains a NUL byte", what, i)
			}
		}
		a.names = append(a.names, t.Name...)
		a.names = append(a.names, 0)
		a.dtypes[i] = int32(t.DType)
		a.ndims[i] = int32(len(t.Shape))
		a.offsets[i] = uint64(t.Offset)
		a.shapes = append(a.shapes, t.Shape...)
	}
	a.names = append(a.names, 0)
	a.shapes = append(a.shapes, 0)
	return a, nil
}

func (a *packedArgs) cNames() *C.char       { return (*C.char)(unsafe.Pointer(&a.names[0])) }
func (a *packedArgs) cDTypes() *C.int32_t   { return (*C.int32_t)(unsafe.Pointer(&a.dtypes[0])) }
func (a *packedArgs) cNDims() *C.int32_t    { return (*C.int32_t)(unsafe.Pointer(&a.ndims[0])) }
func (a *packedArgs) cShapes() *C.int64_t   { return (*C.int64_t)(unsafe.Pointer(&a.shapes[0])) }
func (a *packedArgs) cOffsets() *C.uint64_t { return (*C.uint64_t)(unsafe.Pointer(&a.offsets[0])) }

// updatePacked passes base (Go or C memory; checked by the caller) and a pointer-free
// description of the tensors, all in Go memory, as direct arguments of one C call.
func (c *Container) updatePacked(what string, base unsafe.Pointer, tensors []PackedTensor, opts *UpdateOptions) error {
	a, err := newPackedArgs(what, tensors)
	if err != nil {
		return err
	}
	cp, err := c.h.acquire(what)
	if err != nil {
		return err
	}
	defer c.h.release()
	err = withUpdate(what, context.Background(), nil, opts, func(args *C.wharf_go_update_args) *C.wharf_status {
		return C.wharf_go_update_packed((*C.wharf_container)(cp), base, a.cNames(), a.cDTypes(), a.cNDims(),
			a.cShapes(), a.cOffsets(), C.size_t(a.n), args)
	})
	runtime.KeepAlive(a)
	runtime.KeepAlive(c)
	return err
}

// HostTensor is one named tensor in a Go byte slice, for Container.UpdateFromHost.
type HostTensor struct {
	Name  string
	DType DType
	Shape []int64
	Data  []byte // contiguous row-major; exactly NumElements * DType.Size() bytes
}

// HostTensorOf describes a typed Go slice as a HostTensor, without copying (Data aliases
// data).
func HostTensorOf[T Element](name string, shape []int64, data []T) HostTensor {
	t := HostTensor{Name: name, DType: DTypeOf[T](), Shape: shape}
	if len(data) > 0 {
		t.Data = unsafe.Slice((*byte)(unsafe.Pointer(&data[0])), len(data)*int(unsafe.Sizeof(data[0])))
	}
	return t
}

// UpdateFromHost updates the container from any number of Go slices. Because the cgo
// rules do not allow passing a variable number of Go pointers to one C call, the slices
// are first copied into one temporary C buffer (one extra host copy; use UpdatePacked or
// a HostBuffer-backed ConstantMap to avoid it). Errors: ErrInvalidArgument if a Data
// length does not match its shape, otherwise as Update.
func (c *Container) UpdateFromHost(tensors []HostTensor, opts *UpdateOptions) error {
	const what = "Container.UpdateFromHost"
	var arena cArena
	defer arena.free()
	base, layout, err := stageHost(what, &arena, tensors)
	if err != nil {
		return err
	}
	return c.updatePacked(what, base, layout, opts)
}

// stageHost copies the tensors' data into one arena buffer and returns it with its layout.
func stageHost(what string, arena *cArena, tensors []HostTensor) (unsafe.Pointer, []PackedTensor, error) {
	layout := make([]PackedTensor, len(tensors))
	total := 0
	for i, t := range tensors {
		n, err := checkShape(what+": constant '"+t.Name+"'", t.Shape, nil)
		if err != nil {
			return nil, nil, err
		}
		nbytes, err := byteSize(what+": constant '"+t.Name+"'", t.DType, n)
		if err != nil {
			return nil, nil, err
		}
		if int64(len(t.Data)) != nbytes {
			return nil, nil, invalidArgument("%s: constant '%s': %d bytes of data for shape %v of %v (%d bytes)",
				what, t.Name, len(t.Data), t.Shape, t.DType, nbytes)
		}
		total = (total + 63) &^ 63 // keep every tensor cache-line aligned
		layout[i] = PackedTensor{Name: t.Name, DType: t.DType, Shape: t.Shape, Offset: total}
		total += len(t.Data)
	}
	base := arena.alloc(total)
	staging := unsafe.Slice((*byte)(base), total)
	for i, t := range tensors {
		copy(staging[layout[i].Offset:], t.Data)
	}
	return base, layout, nil
}

// BindTensor binds host memory owned by a HostBuffer or a ConstantMap (a safetensors
// mapping, say) to constant fqn of the inactive generation without a copy, as an update
// of that one constant would; Swap publishes it. The tensor's owner is kept alive until
// Wharf no longer references the memory (possibly after the container is closed). The
// binding takes the memory over: the HostBuffer it lives in (for a map's tensor, every
// HostBuffer the map borrows) becomes read-only for good, and its WriteAt, and SetValues,
// SetBytes and WithSlice of its tensors, fail with ErrFailedPrecondition, so no open run
// sees its weights change. The tensor must match the declaration's dtype and shape
// and live where the constant is placed (host memory: the host backend, or
// PlacementHost). Errors: ErrInvalidArgument for a tensor without such an owner or a
// mismatch, ErrNotFound for an unknown fqn; on error nothing changes.
func (c *Container) BindTensor(fqn string, t Tensor) error {
	const what = "Container.BindTensor"
	if t.noKeep != "" || t.owner == nil {
		return invalidArgument("%s: constant '%s': the tensor must belong to a HostBuffer or a ConstantMap", what, fqn)
	}
	if !t.IsContiguous() {
		return invalidArgument("%s: constant '%s': the tensor is not contiguous", what, fqn)
	}
	if _, err := checkShape(what+": constant '"+fqn+"'", t.shape, nil); err != nil {
		return err
	}
	owner := t.owner
	if _, err := owner.acquire(what + " (the tensor's owner)"); err != nil {
		return err
	}
	// The container reads the memory whenever it likes from now on: freeze the host
	// buffers it lives in (no write through the binding in progress or after), as Rust's
	// bind_host moves its buffer in. Frozen only if the bind succeeds.
	targets := owner.frozenTargets()
	for _, b := range targets {
		b.writes.Lock()
	}
	h := cgo.NewHandle(owner.release) // run by wharfGoRelease when Wharf lets go
	err := c.bind(what, fqn, t, h)
	for _, b := range targets {
		if err == nil {
			b.frozen = true
		}
		b.writes.Unlock()
	}
	if err != nil { // the library does not call release on error
		h.Delete()
		owner.release()
	}
	return err
}

func (c *Container) bind(what, fqn string, t Tensor, release cgo.Handle) error {
	cfqn := C.CString(fqn)
	defer C.free(unsafe.Pointer(cfqn))
	cp, err := c.h.acquire(what)
	if err != nil {
		return err
	}
	defer c.h.release()
	view := C.wharf_tensor_view{
		struct_size:  C.sizeof_wharf_tensor_view,
		data:         t.data,
		dtype:        C.wharf_dtype(t.dtype),
		device_type:  C.wharf_device_type(t.device),
		device_index: C.int32_t(t.deviceIndex),
		ndim:         C.int32_t(len(t.shape)),
	}
	var shape *C.int64_t
	if len(t.shape) > 0 {
		shape = (*C.int64_t)(unsafe.Pointer(&t.shape[0]))
	}
	err = statusError(C.wharf_go_bind((*C.wharf_container)(cp), cfqn, &view, shape, C.uintptr_t(release)))
	runtime.KeepAlive(c)
	return err
}

// Swap makes the inactive generation active, in O(1) and without waiting for the device:
// runs already begun keep the generation they pinned. The previous active generation
// becomes the inactive one, so swapping again without an update rolls back. Errors:
// ErrFailedPrecondition when nothing is staged, or when a fresh container's constant was
// never written (naming it).
func (c *Container) Swap() error {
	p, err := c.h.acquire("Container.Swap")
	if err != nil {
		return err
	}
	defer c.h.release()
	err = statusError(C.wharf_container_swap((*C.wharf_container)(p)))
	runtime.KeepAlive(c)
	return err
}

// FreeInactive releases the inactive generation (after the runs that read it).
func (c *Container) FreeInactive() error {
	p, err := c.h.acquire("Container.FreeInactive")
	if err != nil {
		return err
	}
	defer c.h.release()
	err = statusError(C.wharf_container_free_inactive((*C.wharf_container)(p)))
	runtime.KeepAlive(c)
	return err
}

// Generation returns the active generation's id: 0 before the first swap, a new id after
// every swap. It returns 0 for a closed container.
func (c *Container) Generation() uint64 {
	p, err := c.h.acquire("Container.Generation")
	if err != nil {
		return 0
	}
	defer c.h.release()
	g := uint64(C.wharf_container_generation((*C.wharf_container)(p)))
	runtime.KeepAlive(c)
	return g
}

// NumConstants returns the number of declared constants (0 for a closed container).
func (c *Container) NumConstants() int {
	p, err := c.h.acquire("Container.NumConstants")
	if err != nil {
		return 0
	}
	defer c.h.release()
	n := int(C.wharf_container_num_constants((*C.wharf_container)(p)))
	runtime.KeepAlive(c)
	return n
}

// ConstantInfo describes the i-th declared constant. Errors: ErrInvalidArgument past the
// end.
func (c *Container) ConstantInfo(i int) (ConstantInfo, error) {
	if i < 0 {
		return ConstantInfo{}, invalidArgument("Container.ConstantInfo: negative index %d", i)
	}
	p, err := c.h.acquire("Container.ConstantInfo")
	if err != nil {
		return ConstantInfo{}, err
	}
	defer c.h.release()
	info, err := constantInfo((*C.wharf_container)(p), i)
	runtime.KeepAlive(c)
	return info, err
}

// Constants describes every declared constant, in declaration order.
func (c *Container) Constants() ([]ConstantInfo, error) {
	p, err := c.h.acquire("Container.Constants")
	if err != nil {
		return nil, err
	}
	defer c.h.release()
	cc := (*C.wharf_container)(p)
	n := int(C.wharf_container_num_constants(cc))
	out := make([]ConstantInfo, 0, n)
	for i := 0; i < n; i++ {
		info, err := constantInfo(cc, i)
		if err != nil {
			return nil, err
		}
		out = append(out, info)
	}
	runtime.KeepAlive(c)
	return out, nil
}

// Name returns the container's name (ContainerOptions.Name; "" for a closed container).
func (c *Container) Name() string {
	p, err := c.h.acquire("Container.Name")
	if err != nil {
		return ""
	}
	defer c.h.release()
	name := C.GoString(C.wharf_container_name((*C.wharf_container)(p)))
	runtime.KeepAlive(c)
	return name
}

// States describes every declared state, in declaration order.
func (c *Container) States() ([]StateInfo, error) {
	p, err := c.h.acquire("Container.States")
	if err != nil {
		return nil, err
	}
	defer c.h.release()
	cc := (*C.wharf_container)(p)
	n := int(C.wharf_container_num_states(cc))
	out := make([]StateInfo, 0, n)
	for i := 0; i < n; i++ {
		var info C.wharf_state_info
		info.struct_size = C.uint32_t(unsafe.Sizeof(info))
		if err := statusError(C.wharf_container_get_state_info(cc, C.size_t(i), &info)); err != nil {
			return nil, err
		}
		si := StateInfo{FQN: C.GoString(info.fqn), DType: DType(info.dtype), Shape: []int64{}, NBytes: uint64(info.nbytes)}
		if k := int(info.ndim); k > 0 && info.shape != nil {
			si.Shape = append(si.Shape, unsafe.Slice((*int64)(unsafe.Pointer(info.shape)), k)...)
		}
		out = append(out, si)
	}
	runtime.KeepAlive(c)
	return out, nil
}

// stateNames returns the FQNs of a container's declared states.
func stateNames(c *C.wharf_container) map[string]bool {
	n := int(C.wharf_container_num_states(c))
	names := make(map[string]bool, n)
	for i := 0; i < n; i++ {
		var info C.wharf_state_info
		info.struct_size = C.uint32_t(unsafe.Sizeof(info))
		if statusError(C.wharf_container_get_state_info(c, C.size_t(i), &info)) == nil {
			names[C.GoString(info.fqn)] = true
		}
	}
	return names
}

// constantInfo copies the i-th declaration (its strings belong to the container).
func constantInfo(c *C.wharf_container, i int) (ConstantInfo, error) {
	var info C.wharf_constant_info
	info.struct_size = C.uint32_t(unsafe.Sizeof(info))
	if err := statusError(C.wharf_container_get_constant_info(c, C.size_t(i), &info)); err != nil {
		return ConstantInfo{}, err
	}
	out := ConstantInfo{
		FQN:       C.GoString(info.fqn),
		DType:     DType(info.dtype),
		Shape:     []int64{},
		Placement: Placement(info.placement),
		Flags:     ConstantFlags(info.flags),
		NBytes:    uint64(info.nbytes),
	}
	if n := int(info.ndim); n > 0 && info.shape != nil {
		out.Shape = append(out.Shape, unsafe.Slice((*int64)(unsafe.Pointer(info.shape)), n)...)
	}
	return out, nil
}

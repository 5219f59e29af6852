// SPDX-License-Identifier: Apache-2.0

package wharf

// Offloaders: the experimental tier of wharf.h (WHARF_EXPERIMENTAL is defined in this
// file's preamble only); every declaration here may change in any minor release.

/*
#define WHARF_EXPERIMENTAL
#include <stdlib.h>
#include "wharf.h"
*/
import "C"

import (
	"runtime"
	"sync"
	"time"
	"unsafe"
)

// OffloaderOptions selects the layers an Offloader keeps in pinned host memory and how it
// prefetches them (wharf_offloader_options). A nil *OffloaderOptions, or the zero value,
// means the defaults: every layer matching "layers.{layer}." offloaded, one layer copied
// ahead, one slot.
//
// Experimental: part of wharf.h's experimental tier; it may change in any minor release.
type OffloaderOptions struct {
	// FQNs lists the offloaded constants explicitly (each must carry a layer number);
	// nil selects by layer (LayerPattern, GroupSize, NumInGroup).
	FQNs []string
	// LayerPattern gives each constant whose FQN contains it, with {layer} a decimal
	// number, that layer number; "" means "layers.{layer}.".
	LayerPattern string
	// GroupSize and NumInGroup are vLLM's selection: layer L is offloaded when
	// L % GroupSize >= GroupSize - NumInGroup. GroupSize 0 offloads every layer;
	// NumInGroup 0 means 1.
	GroupSize, NumInGroup uint32
	// PrefetchStep is the number of layers copied ahead: 0 means the default (1); a
	// negative value means none (each copy is issued at its wait).
	PrefetchStep int
	// SlotCapacity is the number of device slots; 0 means max(PrefetchStep, 1).
	SlotCapacity uint32
	// StepCompute is a step's measured compute time, for the budget check (0: unknown, no
	// check). H2DBytesPerSecond overrides the bandwidth (0: measured on CUDA, 12 GB/s
	// assumed on the host backend). RefuseIfExposed makes creation fail with
	// ErrResourceExhausted when prefetch cannot hide the copies (else a warning is logged).
	StepCompute       time.Duration
	H2DBytesPerSecond uint64
	RefuseIfExposed   bool
}

// H2DSource says where an OffloaderBudget's bandwidth comes from.
type H2DSource int32

// The sources of wharf_h2d_source.
const (
	H2DGiven    H2DSource = C.WHARF_H2D_GIVEN    // OffloaderOptions.H2DBytesPerSecond
	H2DMeasured H2DSource = C.WHARF_H2D_MEASURED // a timed pinned-to-device copy at creation
	H2DAssumed  H2DSource = C.WHARF_H2D_ASSUMED  // the host backend: 12 GB/s
)

// OffloaderBudget is what a step (a run through every layer) copies against its compute
// (wharf_offloader_budget), estimated when the offloader was created.
type OffloaderBudget struct {
	NumOffloadedLayers int
	BytesPerStep       uint64 // every offloaded layer's constants once
	H2DBytesPerSecond  uint64
	H2DSource          H2DSource
	Copy               time.Duration // BytesPerStep at H2DBytesPerSecond
	Compute            time.Duration // StepCompute as given; 0: unknown
	Exposed            time.Duration // Copy - Compute when positive: what prefetch cannot hide
}

// Offloader keeps chosen layers' constants of a container (declared PlacementHost) in
// pinned host memory and a small pool of device slots, and within a run copies layer
// i + PrefetchStep into a slot while layer i computes (wharf_offloader). Per run, in this
// order: Run.BeginOffload; for each layer L in increasing order Run.WaitOffload(L) (the
// run's stream waits for L's copy; the tensors are L's slots), launch L's work on the
// run's stream, Run.MarkOffloadIssued(L); then Run.EndOffload before Run.End. One run at a
// time holds an offloader (others get ErrBusy). A run copies from the generation it
// pinned, so updates and swaps change what later runs prefetch. An Offloader is safe for
// concurrent use; it keeps its container alive.
//
// Experimental: part of wharf.h's experimental tier; it may change in any minor release.
type Offloader struct {
	h handle
}

// offloaderOptions fills o from opts (not nil) with its strings in arena.
func offloaderOptions(arena *cArena, opts *OffloaderOptions, o *C.wharf_offloader_options) {
	C.wharf_offloader_options_init_sized(o, C.sizeof_wharf_offloader_options)
	if n := len(opts.FQNs); n > 0 {
		fqns := unsafe.Slice((**C.char)(arena.alloc(n*int(unsafe.Sizeof(uintptr(0))))), n)
		for i, f := range opts.FQNs {
			fqns[i] = arena.cstring(f)
		}
		o.fqns = &fqns[0]
		o.num_fqns = C.size_t(n)
	}
	if opts.LayerPattern != "" {
		o.layer_pattern = arena.cstring(opts.LayerPattern)
	}
	o.group_size = C.uint32_t(opts.GroupSize)
	if opts.NumInGroup != 0 {
		o.num_in_group = C.uint32_t(opts.NumInGroup)
	}
	switch {
	case opts.PrefetchStep < 0:
		o.prefetch_step = 0
	case opts.PrefetchStep > 0:
		o.prefetch_step = C.uint32_t(opts.PrefetchStep)
	}
	o.slot_capacity = C.uint32_t(opts.SlotCapacity)
	o.step_compute_us = C.uint64_t(opts.StepCompute / time.Microsecond)
	o.h2d_bytes_per_second = C.uint64_t(opts.H2DBytesPerSecond)
	if opts.RefuseIfExposed {
		o.refuse_if_exposed = 1
	}
}

// NewOffloader creates an offloader over c (opts may be nil: the defaults), allocating its
// slot pool (under MemOffload), a copy stream and its events. Errors: ErrInvalidArgument (a
// pattern without exactly one {layer}, no constant matching it, a listed constant without
// a layer number, NumInGroup above GroupSize, PrefetchStep above SlotCapacity: the message
// says which), ErrNotFound (a listed FQN c does not declare), ErrAlreadyExists (an FQN
// listed twice), ErrFailedPrecondition (an offloaded constant not declared PlacementHost,
// named), ErrOutOfMemory, ErrResourceExhausted (RefuseIfExposed and a budget prefetch
// cannot hide), ErrDeviceError.
//
// Experimental: part of wharf.h's experimental tier; it may change in any minor release.
func NewOffloader(c *Container, opts *OffloaderOptions) (*Offloader, error) {
	const what = "NewOffloader"
	if opts == nil {
		opts = &OffloaderOptions{}
	}
	var arena cArena
	defer arena.free()
	o := (*C.wharf_offloader_options)(arena.alloc(int(C.sizeof_wharf_offloader_options)))
	offloaderOptions(&arena, opts, o)
	cp, err := c.h.acquire(what)
	if err != nil {
		return nil, err
	}
	defer c.h.release()
	var out *C.wharf_offloader
	err = statusError(C.wharf_offloader_create((*C.wharf_container)(cp), o, &out))
	runtime.KeepAlive(c)
	if err != nil {
		return nil, err
	}
	return newOffloader(out), nil
}

func newOffloader(p *C.wharf_offloader) *Offloader {
	off := &Offloader{}
	off.h.init("offloader", unsafe.Pointer(p), func(p unsafe.Pointer) error {
		C.wharf_offloader_free((*C.wharf_offloader)(p))
		return nil
	})
	runtime.SetFinalizer(off, func(o *Offloader) { leaked(&o.h, "Close") })
	return off
}

// Close releases the offloader. A run that began offloading keeps it until the run ends.
// Close is idempotent (and a no-op on a nil *Offloader) and returns nil.
func (o *Offloader) Close() error {
	if o == nil {
		return nil
	}
	_, err := o.h.close()
	return err
}

// NumLayers returns the number of layers the offloader spans (the largest layer number +
// 1; 0 once closed).
func (o *Offloader) NumLayers() int {
	p, err := o.h.acquire("Offloader.NumLayers")
	if err != nil {
		return 0
	}
	defer o.h.release()
	return int(C.wharf_offloader_num_layers((*C.wharf_offloader)(p)))
}

// LayerConstants returns the FQNs of layer's offloaded constants, in the order
// Run.WaitOffload returns their tensors (nil: the layer is not offloaded, or out of range).
func (o *Offloader) LayerConstants(layer int) []string {
	p, err := o.h.acquire("Offloader.LayerConstants")
	if err != nil || layer < 0 || layer > int(^uint32(0)) {
		if err == nil {
			o.h.release()
		}
		return nil
	}
	defer o.h.release()
	op := (*C.wharf_offloader)(p)
	n := int(C.wharf_offloader_num_layer_constants(op, C.uint32_t(layer)))
	var out []string
	for i := 0; i < n; i++ {
		out = append(out, C.GoString(C.wharf_offloader_layer_constant(op, C.uint32_t(layer), C.size_t(i))))
	}
	return out
}

// Budget returns the budget estimated when the offloader was created.
func (o *Offloader) Budget() (OffloaderBudget, error) {
	p, err := o.h.acquire("Offloader.Budget")
	if err != nil {
		return OffloaderBudget{}, err
	}
	defer o.h.release()
	b := C.wharf_offloader_budget{struct_size: C.sizeof_wharf_offloader_budget}
	if err := statusError(C.wharf_offloader_get_budget((*C.wharf_offloader)(p), &b)); err != nil {
		return OffloaderBudget{}, err
	}
	us := func(v C.double) time.Duration { return time.Duration(float64(v) * float64(time.Microsecond)) }
	return OffloaderBudget{
		NumOffloadedLayers: int(b.num_offloaded_layers),
		BytesPerStep:       uint64(b.bytes_per_step),
		H2DBytesPerSecond:  uint64(b.h2d_bytes_per_second),
		H2DSource:          H2DSource(b.h2d_source),
		Copy:               us(b.copy_us),
		Compute:            us(b.compute_us),
		Exposed:            us(b.exposed_us),
	}, nil
}

// Offloader returns the offloader of a model loaded with ModelOptions.Offload (a new
// reference: Close it; the model keeps its own), or nil for a model loaded without. The
// model runs its offload points itself (Model.Run): use the offloader for Budget and the
// layer queries, not for Run.BeginOffload.
//
// Experimental: part of wharf.h's experimental tier; it may change in any minor release.
func (m *Model) Offloader() (*Offloader, error) {
	p, err := m.h.acquire("Model.Offloader")
	if err != nil {
		return nil, err
	}
	defer m.h.release()
	var out *C.wharf_offloader
	if err := statusError(C.wharf_model_get_offloader((*C.wharf_model)(p), &out)); err != nil {
		return nil, err
	}
	if out == nil {
		return nil, nil
	}
	return newOffloader(out), nil
}

// offloadSlots are the handles owning the slot tensors WaitOffload handed out, one per
// layer waited for: each holds the run and the offloader (so the slot pool cannot be freed
// under a tensor) and is closed when its layer is issued, offloading ends or the run ends,
// after which the tensors answer ErrClosed.
type offloadSlots struct {
	mu   sync.Mutex
	open map[*Offloader][]*handle
}

func (s *offloadSlots) add(o *Offloader, h *handle) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.open == nil {
		s.open = map[*Offloader][]*handle{}
	}
	s.open[o] = append(s.open[o], h)
}

// closeFor closes the slot handles of o (every offloader's when o is nil).
func (s *offloadSlots) closeFor(o *Offloader) {
	s.mu.Lock()
	var hs []*handle
	for k, v := range s.open {
		if o == nil || k == o {
			hs = append(hs, v...)
			delete(s.open, k)
		}
	}
	s.mu.Unlock()
	for _, h := range hs {
		_, _ = h.close() // the free function cannot fail
	}
}

// withOffload calls fn with the run's and the offloader's C pointers, each held for the call.
func (r *Run) withOffload(what string, o *Offloader, fn func(*C.wharf_run, *C.wharf_offloader) error) error {
	if o == nil {
		return invalidArgument("%s: the offloader is nil", what)
	}
	rp, err := r.h.acquire(what)
	if err != nil {
		return err
	}
	defer r.h.release()
	op, err := o.h.acquire(what + " (the offloader)")
	if err != nil {
		return err
	}
	defer o.h.release()
	err = fn((*C.wharf_run)(rp), (*C.wharf_offloader)(op))
	runtime.KeepAlive(r)
	runtime.KeepAlive(o)
	return err
}

// BeginOffload begins offloading in the run (a run of o's container): the copy stream
// forks from the run's stream and the first PrefetchStep offloaded layers are copied.
// Errors: ErrInvalidArgument (a run of another container), ErrBusy (another open run holds
// the offloader), ErrFailedPrecondition (this run already began), ErrDeviceError.
//
// Experimental: part of wharf.h's experimental tier; it may change in any minor release.
func (r *Run) BeginOffload(o *Offloader) error {
	return r.withOffload("Run.BeginOffload", o, func(rp *C.wharf_run, op *C.wharf_offloader) error {
		return statusError(C.wharf_run_begin_offload(rp, op))
	})
}

// WaitOffload makes the run's stream wait (on the device) for layer's copy and returns the
// tensors of its offloaded constants (Offloader.LayerConstants order; none for a layer that
// is not offloaded): device memory of the slot, read-only, valid until MarkOffloadIssued
// for this layer (the slot is refilled after that), EndOffload or End, after which they
// answer ErrClosed. Host-memory slots (the host backend) are filled when it returns (it
// waits for their copy); device slots are for kernels on the run's stream. Errors: ErrInvalidArgument (layer out
// of range), ErrFailedPrecondition (offloading not begun in this run; a layer out of
// order, or the previous offloaded layer not marked issued, named), ErrDeviceError.
//
// Experimental: part of wharf.h's experimental tier; it may change in any minor release.
func (r *Run) WaitOffload(o *Offloader, layer int) ([]Tensor, error) {
	const what = "Run.WaitOffload"
	if layer < 0 || layer > int(^uint32(0)) {
		return nil, invalidArgument("%s: layer %d out of range", what, layer)
	}
	var out []Tensor
	err := r.withOffload(what, o, func(rp *C.wharf_run, op *C.wharf_offloader) error {
		n := int(C.wharf_offloader_num_layer_constants(op, C.uint32_t(layer)))
		if n == 0 {
			return statusError(C.wharf_run_wait_offload(rp, op, C.uint32_t(layer), nil, 0))
		}
		mem := C.calloc(C.size_t(n), C.sizeof_wharf_tensor_view)
		if mem == nil {
			return &Error{Code: CodeOutOfMemory, Message: what + ": the views"}
		}
		defer C.free(mem)
		views := unsafe.Slice((*C.wharf_tensor_view)(mem), n)
		for i := range views {
			views[i].struct_size = C.sizeof_wharf_tensor_view
		}
		if err := statusError(C.wharf_run_wait_offload(rp, op, C.uint32_t(layer), &views[0], C.size_t(n))); err != nil {
			return err
		}
		// The tensors' owner holds the run and the offloader until the layer is issued.
		r.h.retain()
		o.h.retain()
		slots := &handle{}
		slots.init("offload slot", unsafe.Pointer(slots), func(unsafe.Pointer) error { return nil }, &r.h, &o.h)
		r.slots.add(o, slots)
		host := false
		for i := range views {
			t := tensorFromView(&views[i], slots)
			t.noKeep = runTensorNoKeep
			t.readOnly = offloadSlotReadOnly
			host = host || t.device == DeviceCPU
			out = append(out, t)
		}
		if host {
			// Host-memory slots (the host backend) are read by Go code: wait for the copy the
			// run's stream waits for, so that no read races it.
			return r.c.rt.Synchronize()
		}
		return nil
	})
	return out, err
}

const offloadSlotReadOnly = "it is an offloader's slot (the offloader copies the layer's weights into it)"

// MarkOffloadIssued records that the run's stream has been given all of layer's work: the
// copy that reuses its slot may start once the device gets there, and the next prefetch
// is issued. Errors: ErrInvalidArgument (layer out of range), ErrFailedPrecondition (not
// waited for first, or already issued), ErrDeviceError.
//
// Experimental: part of wharf.h's experimental tier; it may change in any minor release.
func (r *Run) MarkOffloadIssued(o *Offloader, layer int) error {
	if layer < 0 || layer > int(^uint32(0)) {
		return invalidArgument("Run.MarkOffloadIssued: layer %d out of range", layer)
	}
	err := r.withOffload("Run.MarkOffloadIssued", o, func(rp *C.wharf_run, op *C.wharf_offloader) error {
		return statusError(C.wharf_run_mark_offload_issued(rp, op, C.uint32_t(layer)))
	})
	if err == nil {
		r.slots.closeFor(o) // only the issued layer's slots are open: layers go in order
	}
	return err
}

// EndOffload ends offloading in the run: the run's stream joins the copy stream and the
// offloader is free for the next run. Call it before End (End does it otherwise). Errors:
// ErrFailedPrecondition (offloading not begun in this run), ErrDeviceError.
//
// Experimental: part of wharf.h's experimental tier; it may change in any minor release.
func (r *Run) EndOffload(o *Offloader) error {
	r.slots.closeFor(o)
	return r.withOffload("Run.EndOffload", o, func(rp *C.wharf_run, op *C.wharf_offloader) error {
		return statusError(C.wharf_run_end_offload(rp, op))
	})
}

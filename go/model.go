// SPDX-License-Identifier: Apache-2.0

package wharf

// Models: the experimental tier of wharf.h (WHARF_EXPERIMENTAL is defined in this file's
// preamble only). Every declaration here may change or go in any minor release of the
// library, as the C functions it calls may.

/*
#define WHARF_EXPERIMENTAL
#include <stdlib.h>
#include "helpers.h"

static void wharf_go_model_progress(wharf_model_options* o, uintptr_t h) {
  o->progress = wharf_go_progress;
  o->progress_user = (void*)h;
}
*/
import "C"

import (
	"context"
	"runtime"
	"strconv"
	"unsafe"
)

// ModelOptions configures LoadModel (wharf_model_options). A nil *ModelOptions means the
// zero value: every default.
//
// Experimental: part of wharf.h's experimental tier; it may change in any minor release.
type ModelOptions struct {
	// Name is the model container's name (for messages); "" means the file's stem.
	Name string
	// Store shares the model's parameters with the store's other containers (nil: none).
	Store *WeightStore
	// MaxSessionBytes caps the state of all live sessions covering the model, as
	// ContainerOptions.MaxSessionBytes (0 = no cap).
	MaxSessionBytes uint64
	// ShimPath is the path of libwharf_aoti_shim.so; "" means $WHARF_AOTI_SHIM, else the
	// file next to libwharf.
	ShimPath string
	// Offload, if not nil, keeps the layers it selects in pinned host memory and prefetches
	// them into device slots as the model runs (see Offloader; Model.Offloader returns the
	// model's). A model with run-time constant folding cannot be offloaded (ErrUnsupported).
	Offload *OffloaderOptions
	// Progress is told how many of the weights' bytes have been loaded, as
	// UpdateOptions.Progress; LoadModelContext's ctx cancels the load.
	Progress func(done, total uint64)
	// SessionCapacity > 0 keeps the model's states (its mutated buffers) for up to this
	// many sessions in one state arena, as ContainerOptions.SessionCapacity.
	SessionCapacity uint32
}

// Model is a model compiled by PyTorch's AOTInductor without libtorch, executed by Wharf
// (wharf_model) over a container it creates: the model's parameters are the container's
// constants (by FQN), its mutated buffers (KV caches, recurrent state) are the container's
// session state, and constants it folds from its parameters are recomputed for every
// generation. Update, swap, create sessions and begin runs through Container; run the
// model on a run with Model.Run. A Model is safe for concurrent use (concurrent runs
// execute on separate instances). It keeps its Runtime (and WeightStore) alive.
//
// Experimental: part of wharf.h's experimental tier; it may change in any minor release.
type Model struct {
	h          *handle // a separate object: the container holds it without holding the Model
	rt         *Runtime
	c          *Container
	inputs     []string
	numOutputs int
}

// modelOptions translates opts into a wharf_model_options filled by the library's sized
// init; its strings live in arena. The store, if any, is acquired: the caller releases it
// unless a model was created (which then holds it).
func modelOptions(what string, arena *cArena, opts *ModelOptions) (C.wharf_model_options, *handle, error) {
	var o C.wharf_model_options
	C.wharf_model_options_init_sized(&o, C.sizeof_wharf_model_options) // this binding's struct size
	if opts == nil {
		return o, nil, nil
	}
	if opts.Name != "" {
		o.name = arena.cstring(opts.Name)
	}
	if opts.ShimPath != "" {
		o.shim_path = arena.cstring(opts.ShimPath)
	}
	o.max_session_bytes = C.uint64_t(opts.MaxSessionBytes)
	o.session_capacity = C.uint32_t(opts.SessionCapacity)
	if opts.Offload != nil {
		oo := (*C.wharf_offloader_options)(arena.alloc(int(C.sizeof_wharf_offloader_options)))
		offloaderOptions(arena, opts.Offload, oo)
		o.offload = oo
	}
	if opts.Store != nil {
		p, err := opts.Store.h.acquire(what + " (the weight store)")
		if err != nil {
			return o, nil, err
		}
		o.store = (*C.wharf_weight_store)(p)
		return o, &opts.Store.h, nil
	}
	return o, nil, nil
}

// LoadModel loads the compiled model at soPath on rt (a CUDA runtime) with weights, which
// is only read during the call: every parameter the model declares must be in weights by
// original FQN with the model's dtype and byte size; a mutated buffer found in weights
// gives the state's shape and initial value (absent: a 1-D zero state of the buffer's
// size). The weights are copied in and made active: the model is ready to run. opts may be
// nil.
//
// Errors: ErrUnsupported (the host backend; the shim library missing; the process already
// provides aoti_torch_* from libtorch; a shim function the model needs that Wharf lacks,
// named), ErrInvalidArgument (not an AOTInductor model; a weight of the wrong dtype or
// size, named; nil arguments), ErrNotFound (a parameter missing from weights, named),
// ErrOutOfMemory, ErrClosed (rt, weights or the store closed). Nothing is left behind on
// error.
//
// Experimental: part of wharf.h's experimental tier; it may change in any minor release.
func LoadModel(rt *Runtime, soPath string, weights *ConstantMap, opts *ModelOptions) (*Model, error) {
	return loadModel("LoadModel", context.Background(), rt, soPath, weights, opts)
}

// LoadModelContext is LoadModel that ctx can cancel while the weights are copied in (see
// Container.UpdateContext): a cancelled load leaves nothing behind and returns an error
// matching both ErrCancelled and ctx.Err().
//
// Experimental: part of wharf.h's experimental tier; it may change in any minor release.
func LoadModelContext(ctx context.Context, rt *Runtime, soPath string, weights *ConstantMap, opts *ModelOptions) (*Model, error) {
	return loadModel("LoadModelContext", ctx, rt, soPath, weights, opts)
}

func loadModel(what string, ctx context.Context, rt *Runtime, soPath string, weights *ConstantMap, opts *ModelOptions) (*Model, error) {
	if rt == nil {
		return nil, invalidArgument("%s: the runtime is nil", what)
	}
	if weights == nil {
		return nil, invalidArgument("%s: the weights map is nil", what)
	}
	if soPath == "" {
		return nil, invalidArgument("%s: the model path is empty", what)
	}
	var arena cArena
	defer arena.free()
	o, store, err := modelOptions(what, &arena, opts)
	if err != nil {
		return nil, err
	}
	created := false
	defer func() {
		if store != nil && !created {
			store.release()
		}
	}()
	wp, err := weights.read(what + " (the weights)")
	if err != nil {
		return nil, err
	}
	defer weights.done()
	rp, err := rt.h.acquire(what)
	if err != nil {
		return nil, err
	}
	defer rt.h.release()
	var out *C.wharf_model
	var progress func(done, total uint64)
	if opts != nil {
		progress = opts.Progress
	}
	err = withProgress(what, ctx, progress, false, func(h C.uintptr_t) error {
		if h != 0 {
			C.wharf_go_model_progress(&o, h)
		}
		return statusError(C.wharf_model_load((*C.wharf_runtime)(rp), arena.cstring(soPath), wp, &o, &out))
	})
	runtime.KeepAlive(rt)
	runtime.KeepAlive(weights)
	if err != nil {
		return nil, err
	}
	created = true
	var goStore *WeightStore
	if opts != nil {
		goStore = opts.Store
	}
	return newModel(rt, goStore, store, out), nil
}

// newModel wraps a loaded model and its borrowed container. rt is held by the caller (a
// reference); store, if not nil, is already retained for the container.
func newModel(rt *Runtime, goStore *WeightStore, store *handle, p *C.wharf_model) *Model {
	m := &Model{rt: rt, h: &handle{}, numOutputs: int(C.wharf_model_num_outputs(p))}
	for i := 0; i < int(C.wharf_model_num_inputs(p)); i++ {
		m.inputs = append(m.inputs, C.GoString(C.wharf_model_input_name(p, C.size_t(i))))
	}
	rt.h.retain()
	m.h.init("model", unsafe.Pointer(p), func(p unsafe.Pointer) error {
		C.wharf_model_free((*C.wharf_model)(p))
		return nil
	}, &rt.h)

	// The container is the model's (wharf_model_container: borrowed, never freed on its
	// own): its handle frees nothing and holds a reference to the model, so the C model
	// lives until both Model.Close and the last run or session of the container are done.
	cp := C.wharf_model_container(p)
	m.h.retain()
	rt.h.retain()
	held := []*handle{m.h, &rt.h}
	if store != nil {
		held = append(held, store)
	}
	c := &Container{rt: rt, store: goStore, states: stateNames(cp)}
	c.h.init("container", unsafe.Pointer(cp), func(unsafe.Pointer) error { return nil }, held...)
	// Owned by the model, which closes it: no leak to report if it is collected unclosed.
	runtime.SetFinalizer(c, func(c *Container) { c.h.close() })
	m.c = c
	runtime.SetFinalizer(m, func(m *Model) { leaked(m.h, "Close") })
	return m
}

// Container returns the model's container: its constants are the model's parameters and
// its states the model's mutated buffers. Update, swap, create sessions and begin runs
// through it. It belongs to the model: you need not close it, as Model.Close closes it;
// closing it yourself is allowed, and later calls on it then fail with ErrClosed. Runs and
// sessions of the container keep the C model alive after Model.Close until they end. nil
// for a nil Model.
//
// Experimental: part of wharf.h's experimental tier; it may change in any minor release.
func (m *Model) Container() *Container {
	if m == nil {
		return nil
	}
	return m.c
}

// Runtime returns the runtime the model was loaded on (nil for a nil Model).
//
// Experimental: part of wharf.h's experimental tier; it may change in any minor release.
func (m *Model) Runtime() *Runtime {
	if m == nil {
		return nil
	}
	return m.rt
}

// NumInputs returns the number of inputs of the model's forward (0 for a nil Model).
//
// Experimental: part of wharf.h's experimental tier; it may change in any minor release.
func (m *Model) NumInputs() int {
	if m == nil {
		return 0
	}
	return len(m.inputs)
}

// NumOutputs returns the number of outputs of the model's forward (0 for a nil Model).
//
// Experimental: part of wharf.h's experimental tier; it may change in any minor release.
func (m *Model) NumOutputs() int {
	if m == nil {
		return 0
	}
	return m.numOutputs
}

// InputName returns the name of input i as the compiled model records it (AOTInductor
// names them after the exported graph's placeholders, "arg25_1", say). Errors:
// ErrInvalidArgument (i out of range, a nil Model).
//
// Experimental: part of wharf.h's experimental tier; it may change in any minor release.
func (m *Model) InputName(i int) (string, error) {
	if m == nil {
		return "", invalidArgument("Model.InputName: the model is nil")
	}
	if i < 0 || i >= len(m.inputs) {
		return "", invalidArgument("Model.InputName: index %d out of range (the model has %d inputs)", i, len(m.inputs))
	}
	return m.inputs[i], nil
}

// Close releases the model and closes its container. Runs and sessions of the container
// still open keep the C model alive until they end. Close is idempotent (and a no-op on a
// nil Model) and returns nil.
//
// Experimental: part of wharf.h's experimental tier; it may change in any minor release.
func (m *Model) Close() error {
	if m == nil {
		return nil
	}
	m.c.h.close()
	_, err := m.h.close()
	return err
}

// ModelInput is one input of Model.Run: a Tensor (device memory of the runtime's
// device, or host memory, which Wharf copies to the device on the run's stream during the
// call) or a HostTensor (Go memory: copied into C memory first, since the array of inputs
// the library reads may not hold Go pointers). Inputs are positional; a HostTensor's Name
// serves only messages.
//
// Experimental: part of wharf.h's experimental tier; it may change in any minor release.
type ModelInput interface {
	modelInput()
}

func (Tensor) modelInput()     {}
func (HostTensor) modelInput() {}

const modelOutputReadOnly = "it is a model output owned by the run"

// Run runs the model for run r (a run of m.Container(), begun with the session whose
// state the model reads and writes) on the run's stream, and returns when the work
// is enqueued. inputs are the forward's inputs in order (see ModelInput); a Tensor input
// must not be Go memory (wrap host data in a HostBuffer, or pass a HostTensor) and its
// owner must not have ended. The outputs are device tensors the run owns: valid until
// End, after which their accessors fail with ErrClosed; read them with Run.ReadTensor or
// ReadTensorValues (device memory is not host-addressable), or pass them to your own
// kernels (Tensor.Pointer). They are read-only and cannot be stored in a ConstantMap.
//
// Errors: ErrInvalidArgument (the run is of another container, wrong input count,
// unsupported dtype, a malformed input, nil arguments), ErrClosed (the run ended, the
// model closed, an input's owner ended), ErrInternal (the model failed; the message says
// why).
//
// Experimental: part of wharf.h's experimental tier; it may change in any minor release.
func (m *Model) Run(r *Run, inputs ...ModelInput) ([]Tensor, error) {
	const what = "Model.Run"
	if m == nil {
		return nil, invalidArgument("%s: the model is nil", what)
	}
	if r == nil {
		return nil, invalidArgument("%s: the run is nil", what)
	}
	model := m
	rp, err := r.h.acquire(what)
	if err != nil {
		return nil, err
	}
	defer r.h.release()
	mp, err := model.h.acquire(what + " (the model)")
	if err != nil {
		return nil, err
	}
	defer model.h.release()
	if r.c != model.c {
		return nil, invalidArgument("%s: the run is of container '%s', not of this model's container '%s'",
			what, r.c.Name(), model.c.Name())
	}
	var arena cArena
	defer arena.free()
	n := len(inputs)
	views := unsafe.Slice((*C.wharf_tensor_view)(arena.alloc((n+1)*int(C.sizeof_wharf_tensor_view))), n+1)
	for i, in := range inputs {
		v := &views[i]
		v.struct_size = C.sizeof_wharf_tensor_view
		switch t := in.(type) {
		case Tensor:
			if t.owner != nil {
				if _, err := t.owner.acquire(what + ": input " + strconv.Itoa(i)); err != nil {
					return nil, err
				}
				defer t.owner.release()
			}
			if _, err := checkShape(what+": input "+strconv.Itoa(i), t.shape, t.strides); err != nil {
				return nil, err
			}
			v.data = t.data
			v.dtype = C.wharf_dtype(t.dtype)
			v.device_type = C.wharf_device_type(t.device)
			v.device_index = C.int32_t(t.deviceIndex)
			v.ndim = C.int32_t(len(t.shape))
			v.shape = arena.shape(t.shape)
			if t.strides != nil {
				v.strides = arena.shape(t.strides)
			}
		case HostTensor:
			base, _, err := stageHost(what, &arena, []HostTensor{t})
			if err != nil {
				return nil, err
			}
			v.data = base
			v.dtype = C.wharf_dtype(t.DType)
			v.device_type = C.WHARF_DEVICE_CPU
			v.ndim = C.int32_t(len(t.Shape))
			v.shape = arena.shape(t.Shape)
		case nil:
			return nil, invalidArgument("%s: input %d is nil", what, i)
		default:
			return nil, invalidArgument("%s: input %d has an unknown type %T", what, i, in)
		}
	}
	nout := model.numOutputs
	outs := unsafe.Slice((*C.wharf_tensor_view)(arena.alloc((nout+1)*int(C.sizeof_wharf_tensor_view))), nout+1)
	for i := range outs {
		outs[i].struct_size = C.sizeof_wharf_tensor_view
	}
	err = statusError(C.wharf_model_run((*C.wharf_model)(mp), (*C.wharf_run)(rp), &views[0], C.size_t(n), &outs[0], C.size_t(nout)))
	runtime.KeepAlive(r)
	runtime.KeepAlive(model)
	runtime.KeepAlive(inputs)
	if err != nil {
		return nil, err
	}
	result := make([]Tensor, nout)
	for i := range result {
		t := tensorFromView(&outs[i], &r.h)
		t.noKeep = runTensorNoKeep
		t.readOnly = modelOutputReadOnly
		result[i] = t
	}
	return result, nil
}

// tensorRange checks that [offset, offset+n) lies inside a contiguous tensor's bytes.
func tensorRange(what string, t Tensor, offset uint64, n int) error {
	if !t.IsContiguous() {
		return invalidArgument("%s: the tensor is not contiguous", what)
	}
	size := uint64(t.NumBytes())
	if offset > size || uint64(n) > size-offset {
		return invalidArgument("%s: %d bytes at offset %d are outside the tensor's %d bytes", what, n, offset, size)
	}
	if n > 0 && t.data == nil {
		return invalidArgument("%s: the tensor's data is nil", what)
	}
	return nil
}

// runCopy copies n bytes with wharf_run_copy, ordered on the run's stream.
func (r *Run) runCopy(what string, t Tensor, dst, src unsafe.Pointer, n int) error {
	rp, err := r.h.acquire(what)
	if err != nil {
		return err
	}
	defer r.h.release()
	if t.owner != nil && t.owner != &r.h {
		if _, err := t.owner.acquire(what + " (the tensor's owner)"); err != nil {
			return err
		}
		defer t.owner.release()
	}
	err = statusError(C.wharf_run_copy((*C.wharf_run)(rp), dst, src, C.uint64_t(n)))
	runtime.KeepAlive(r)
	return err
}

// ReadTensor copies len(dst) bytes of t, starting at byte offset, into dst, ordered on the
// run's stream after the work enqueued on it so far (a model's kernels, say), and returns
// when the copy is complete. t may be device or host memory of the run's runtime (a model
// output, a state or constant of a run) and must be contiguous; its owner must not have
// ended. dst may be Go memory. Errors: ErrInvalidArgument (a range outside the tensor),
// ErrClosed, ErrDeviceError.
//
// Experimental: part of wharf.h's experimental tier (wharf_run_copy); it may change in any
// minor release.
func (r *Run) ReadTensor(t Tensor, offset uint64, dst []byte) error {
	const what = "Run.ReadTensor"
	if r == nil {
		return invalidArgument("%s: the run is nil", what)
	}
	if err := tensorRange(what, t, offset, len(dst)); err != nil {
		return err
	}
	if len(dst) == 0 {
		return nil
	}
	err := r.runCopy(what, t, unsafe.Pointer(&dst[0]), unsafe.Add(t.data, offset), len(dst))
	runtime.KeepAlive(dst)
	return err
}

// WriteTensor copies src into t, starting at byte offset, ordered on the run's stream,
// and returns when the copy is complete: writing a session state on a GPU, say. t must be
// contiguous and writable (see Tensor.Writable). Errors: as ReadTensor, and
// ErrFailedPrecondition for a read-only tensor.
//
// Experimental: part of wharf.h's experimental tier (wharf_run_copy); it may change in any
// minor release.
func (r *Run) WriteTensor(t Tensor, offset uint64, src []byte) error {
	const what = "Run.WriteTensor"
	if r == nil {
		return invalidArgument("%s: the run is nil", what)
	}
	if t.readOnly != "" {
		return &Error{Code: CodeFailedPrecondition, Message: what + ": the tensor is read-only: " + t.readOnly}
	}
	if err := tensorRange(what, t, offset, len(src)); err != nil {
		return err
	}
	if len(src) == 0 {
		return nil
	}
	err := r.runCopy(what, t, unsafe.Add(t.data, offset), unsafe.Pointer(&src[0]), len(src))
	runtime.KeepAlive(src)
	return err
}

// ReadTensorValues copies all of t (contiguous, of T's dtype, host or device memory) into
// a new Go slice through Run.ReadTensor.
//
// Experimental: part of wharf.h's experimental tier (wharf_run_copy); it may change in any
// minor release.
func ReadTensorValues[T Element](r *Run, t Tensor) ([]T, error) {
	if want := DTypeOf[T](); t.dtype != want {
		return nil, invalidArgument("ReadTensorValues: tensor has dtype %v, the Go type wants %v", t.dtype, want)
	}
	out := make([]T, t.NumElements())
	if err := r.ReadTensor(t, 0, asBytes(out)); err != nil {
		return nil, err
	}
	return out, nil
}

// SPDX-License-Identifier: Apache-2.0

package wharf

// Model packages: the experimental tier of wharf.h (WHARF_EXPERIMENTAL is defined in this
// file's preamble only). Every declaration here may change or go in any minor release of
// the library, as the C functions it calls may.

/*
#define WHARF_EXPERIMENTAL
#include <stdlib.h>
#include "helpers.h"

static void wharf_go_package_progress(wharf_model_package_options* o, uintptr_t h) {
  o->progress = wharf_go_progress;
  o->progress_user = (void*)h;
}
*/
import "C"

import (
	"context"
	"runtime"
	"strings"
	"unsafe"
)

// ModelPackageOptions configures LoadModelPackage (wharf_model_package_options). A nil
// *ModelPackageOptions means the zero value: every default.
//
// Experimental: part of wharf.h's experimental tier; it may change in any minor release.
type ModelPackageOptions struct {
	// ShimPath is the path of libwharf_aoti_shim.so; "" means $WHARF_AOTI_SHIM, else the
	// file next to libwharf.
	ShimPath string
	// MaxSessionBytes caps the state of all live sessions covering each method's container,
	// as ContainerOptions.MaxSessionBytes (0 = no cap).
	MaxSessionBytes uint64
	// Progress is told how many of the package's weight bytes have been loaded (all
	// methods as one total), as UpdateOptions.Progress; LoadModelPackageContext's ctx
	// cancels the load.
	Progress func(done, total uint64)
	// SessionCapacity > 0 keeps the manifest's states for up to this many sessions in one
	// state arena shared by every method (a session of the package takes one slot; see
	// ContainerOptions.SessionCapacity). 0: per-session buffers.
	SessionCapacity uint32
}

// DimSpec is one dimension of a TensorSpec: a symbolic one (a sequence length) has a
// Name and the range Min..Max (Max -1: no bound given); a fixed one has no Name and its
// size as both Min and Max.
//
// Experimental: part of wharf.h's experimental tier; it may change in any minor release.
type DimSpec struct {
	Name     string
	Min, Max int64
}

// TensorSpec is one input or output of a package's method as its manifest declares it
// (wharf_model_package_tensor_info): Shape holds -1 where a dimension is symbolic, Dims
// says which (and its range).
//
// Experimental: part of wharf.h's experimental tier; it may change in any minor release.
type TensorSpec struct {
	Name  string
	DType DType
	Shape []int64
	Dims  []DimSpec
}

// packageMethod is one method's manifest entry, read once at load (a package is immutable).
type packageMethod struct {
	name            string
	inputs, outputs []TensorSpec
}

// ModelPackage is a Wharf model package (docs/model-package.md) loaded in one call
// (wharf_model_package): one weight store holding the weights once and one model per
// method (prefill, decode, ...) over it. Method returns a method as a Model; NewSession
// creates a session over every method, so a conversation's prefill and decode runs share
// its KV state; Store updates the weights of every method at once. A ModelPackage is
// immutable and safe for concurrent use. It keeps its Runtime alive; the Models and
// Sessions taken from it keep what they use alive, so it may be closed before them.
//
// Experimental: part of wharf.h's experimental tier; it may change in any minor release.
type ModelPackage struct {
	h         handle
	rt        *Runtime
	name      string
	maxSeqLen uint64
	methods   []packageMethod
	store     *WeightStore // borrowed from the package: frees nothing, holds the package
}

// LoadModelPackage loads the model package in directory dir on rt (a CUDA runtime). The
// manifest is checked whole, and every file it names against it, before the device is
// touched; then the weights are read once into the package's weight store and every
// method is loaded as a model over it. opts may be nil.
//
// Errors (each naming the package, the file and the field at fault): ErrNotFound (no such
// directory, no manifest.json, a file the manifest names is missing), ErrInvalidArgument (a
// malformed manifest, a path leaving the package, a weight file whose tensors differ from
// the manifest's, a method that disagrees with the manifest; nil arguments),
// ErrUnsupported (a format_version newer than the library reads; the host backend, at the
// first method; a shim function a method needs that Wharf lacks, named), ErrDataCorrupt,
// ErrIOError, ErrOutOfMemory, ErrClosed (rt closed). Nothing is left behind on error.
//
// Experimental: part of wharf.h's experimental tier; it may change in any minor release.
func LoadModelPackage(rt *Runtime, dir string, opts *ModelPackageOptions) (*ModelPackage, error) {
	return loadModelPackage("LoadModelPackage", context.Background(), rt, dir, opts)
}

// LoadModelPackageContext is LoadModelPackage that ctx can cancel while the weights are
// loaded (see Container.UpdateContext): a cancelled load leaves nothing behind and returns
// an error matching both ErrCancelled and ctx.Err().
//
// Experimental: part of wharf.h's experimental tier; it may change in any minor release.
func LoadModelPackageContext(ctx context.Context, rt *Runtime, dir string, opts *ModelPackageOptions) (*ModelPackage, error) {
	return loadModelPackage("LoadModelPackageContext", ctx, rt, dir, opts)
}

// modelPackageOptions translates opts into a wharf_model_package_options filled by the
// library's sized init; its strings live in arena.
func modelPackageOptions(arena *cArena, opts *ModelPackageOptions) C.wharf_model_package_options {
	var o C.wharf_model_package_options
	C.wharf_model_package_options_init_sized(&o, C.sizeof_wharf_model_package_options) // this binding's struct size
	if opts == nil {
		return o
	}
	if opts.ShimPath != "" {
		o.shim_path = arena.cstring(opts.ShimPath)
	}
	o.max_session_bytes = C.uint64_t(opts.MaxSessionBytes)
	o.session_capacity = C.uint32_t(opts.SessionCapacity)
	return o
}

func loadModelPackage(what string, ctx context.Context, rt *Runtime, dir string, opts *ModelPackageOptions) (*ModelPackage, error) {
	if rt == nil {
		return nil, invalidArgument("%s: the runtime is nil", what)
	}
	if dir == "" {
		return nil, invalidArgument("%s: the package directory is empty", what)
	}
	if strings.IndexByte(dir, 0) >= 0 {
		return nil, invalidArgument("%s: the package directory %q holds a NUL byte", what, dir)
	}
	var arena cArena
	defer arena.free()
	o := modelPackageOptions(&arena, opts)
	rp, err := rt.h.acquire(what)
	if err != nil {
		return nil, err
	}
	defer rt.h.release()
	var progress func(done, total uint64)
	if opts != nil {
		progress = opts.Progress
	}
	var out *C.wharf_model_package
	err = withProgress(what, ctx, progress, false, func(h C.uintptr_t) error {
		if h != 0 {
			C.wharf_go_package_progress(&o, h)
		}
		return statusError(C.wharf_model_package_load((*C.wharf_runtime)(rp), arena.cstring(dir), &o, &out))
	})
	runtime.KeepAlive(rt)
	if err != nil {
		return nil, err
	}
	return newModelPackage(rt, out)
}

// newModelPackage wraps a loaded package; rt is held by the caller (a reference).
func newModelPackage(rt *Runtime, p *C.wharf_model_package) (*ModelPackage, error) {
	pkg := &ModelPackage{
		rt:        rt,
		name:      C.GoString(C.wharf_model_package_name(p)),
		maxSeqLen: uint64(C.wharf_model_package_max_seq_len(p)),
	}
	for i := 0; i < int(C.wharf_model_package_num_methods(p)); i++ {
		m := packageMethod{name: C.GoString(C.wharf_model_package_method_name(p, C.size_t(i)))}
		var err error
		if m.inputs, err = tensorSpecs(p, i, true); err == nil {
			m.outputs, err = tensorSpecs(p, i, false)
		}
		if err != nil {
			C.wharf_model_package_free(p)
			return nil, err
		}
		pkg.methods = append(pkg.methods, m)
	}
	rt.h.retain()
	pkg.h.init("model package", unsafe.Pointer(p), func(p unsafe.Pointer) error {
		C.wharf_model_package_free((*C.wharf_model_package)(p))
		return nil
	}, &rt.h)

	// The store is the package's (wharf_model_package_store: borrowed, valid while the
	// package lives): its handle frees nothing and holds a reference to the package, so
	// the C package lives until both ModelPackage.Close and the store's last call are done.
	pkg.h.retain()
	pkg.store = &WeightStore{rt: rt}
	pkg.store.h.init("weight store", unsafe.Pointer(C.wharf_model_package_store(p)),
		func(unsafe.Pointer) error { return nil }, &pkg.h)
	// Owned by the package, which closes it: no leak to report if it is collected unclosed.
	runtime.SetFinalizer(pkg.store, func(s *WeightStore) { s.h.close() })
	runtime.SetFinalizer(pkg, func(p *ModelPackage) { leaked(&p.h, "Close") })
	return pkg, nil
}

// tensorSpecs reads the inputs (or outputs) of method i.
func tensorSpecs(p *C.wharf_model_package, method int, inputs bool) ([]TensorSpec, error) {
	var n int
	if inputs {
		n = int(C.wharf_model_package_num_method_inputs(p, C.size_t(method)))
	} else {
		n = int(C.wharf_model_package_num_method_outputs(p, C.size_t(method)))
	}
	specs := make([]TensorSpec, n)
	for i := range specs {
		var info C.wharf_model_package_tensor_info
		info.struct_size = C.uint32_t(unsafe.Sizeof(info))
		var err error
		if inputs {
			err = statusError(C.wharf_model_package_get_method_input(p, C.size_t(method), C.size_t(i), &info))
		} else {
			err = statusError(C.wharf_model_package_get_method_output(p, C.size_t(method), C.size_t(i), &info))
		}
		if err != nil {
			return nil, err
		}
		specs[i] = tensorSpecOf(&info)
	}
	return specs, nil
}

// tensorSpecOf copies a wharf_model_package_tensor_info (whose arrays the package owns).
func tensorSpecOf(info *C.wharf_model_package_tensor_info) TensorSpec {
	nd := int(info.ndim)
	t := TensorSpec{Name: C.GoString(info.name), DType: DType(info.dtype), Shape: make([]int64, nd), Dims: make([]DimSpec, nd)}
	if nd == 0 {
		return t
	}
	shape := unsafe.Slice((*C.int64_t)(unsafe.Pointer(info.shape)), nd)
	lo := unsafe.Slice((*C.int64_t)(unsafe.Pointer(info.dim_min)), nd)
	hi := unsafe.Slice((*C.int64_t)(unsafe.Pointer(info.dim_max)), nd)
	names := unsafe.Slice((**C.char)(unsafe.Pointer(info.dim_names)), nd)
	for i := 0; i < nd; i++ {
		t.Shape[i] = int64(shape[i])
		t.Dims[i] = DimSpec{Min: int64(lo[i]), Max: int64(hi[i])}
		if names[i] != nil {
			t.Dims[i].Name = C.GoString(names[i])
		}
	}
	return t
}

// Close releases the package and closes its Store. Models and sessions taken from it keep
// what they use alive until they are closed. Close is idempotent (and a no-op on a nil
// *ModelPackage) and returns nil.
//
// Experimental: part of wharf.h's experimental tier; it may change in any minor release.
func (p *ModelPackage) Close() error {
	if p == nil {
		return nil
	}
	p.store.h.close()
	_, err := p.h.close()
	return err
}

// Runtime returns the runtime the package was loaded on (nil for a nil *ModelPackage).
//
// Experimental: part of wharf.h's experimental tier; it may change in any minor release.
func (p *ModelPackage) Runtime() *Runtime {
	if p == nil {
		return nil
	}
	return p.rt
}

// Name returns the manifest's "name" ("" for a nil *ModelPackage). Each method's
// container is named "<name>/<method>".
//
// Experimental: part of wharf.h's experimental tier; it may change in any minor release.
func (p *ModelPackage) Name() string {
	if p == nil {
		return ""
	}
	return p.name
}

// MaxSeqLen returns the manifest's "max_seq_len", the KV cache's capacity (positions 0 ..
// MaxSeqLen-1), or 0 when the manifest gives none (or for a nil *ModelPackage).
//
// Experimental: part of wharf.h's experimental tier; it may change in any minor release.
func (p *ModelPackage) MaxSeqLen() uint64 {
	if p == nil {
		return 0
	}
	return p.maxSeqLen
}

// Methods returns the names of the package's methods in the manifest's order (a new
// slice; nil for a nil *ModelPackage).
//
// Experimental: part of wharf.h's experimental tier; it may change in any minor release.
func (p *ModelPackage) Methods() []string {
	if p == nil {
		return nil
	}
	names := make([]string, len(p.methods))
	for i, m := range p.methods {
		names[i] = m.name
	}
	return names
}

func (p *ModelPackage) method(what, name string) (*packageMethod, error) {
	if p == nil {
		return nil, invalidArgument("%s: the model package is nil", what)
	}
	for i := range p.methods {
		if p.methods[i].name == name {
			return &p.methods[i], nil
		}
	}
	return nil, &Error{Code: CodeNotFound, Message: what + ": model package '" + p.name + "' has no method '" + name +
		"' (its methods: " + strings.Join(p.Methods(), ", ") + ")"}
}

// MethodInputs returns the inputs of method name as the manifest declares them, in the
// compiled forward's order (a new slice). Errors: ErrNotFound (no such method),
// ErrInvalidArgument (a nil *ModelPackage).
//
// Experimental: part of wharf.h's experimental tier; it may change in any minor release.
func (p *ModelPackage) MethodInputs(name string) ([]TensorSpec, error) {
	m, err := p.method("ModelPackage.MethodInputs", name)
	if err != nil {
		return nil, err
	}
	return copySpecs(m.inputs), nil
}

// MethodOutputs returns the outputs of method name as the manifest declares them (a new
// slice). Errors: as MethodInputs.
//
// Experimental: part of wharf.h's experimental tier; it may change in any minor release.
func (p *ModelPackage) MethodOutputs(name string) ([]TensorSpec, error) {
	m, err := p.method("ModelPackage.MethodOutputs", name)
	if err != nil {
		return nil, err
	}
	return copySpecs(m.outputs), nil
}

func copySpecs(in []TensorSpec) []TensorSpec {
	out := make([]TensorSpec, len(in))
	for i, t := range in {
		out[i] = TensorSpec{Name: t.Name, DType: t.DType, Shape: append([]int64(nil), t.Shape...), Dims: append([]DimSpec(nil), t.Dims...)}
	}
	return out
}

// Method returns method name as a new Model (wharf_model_package_get_method: a new
// reference), which the caller closes; it stays valid after the package is closed. Begin
// its runs on its Container, with a session from NewSession. Errors: ErrNotFound (no such
// method; the message lists the package's), ErrInvalidArgument (a nil *ModelPackage),
// ErrClosed.
//
// Experimental: part of wharf.h's experimental tier; it may change in any minor release.
func (p *ModelPackage) Method(name string) (*Model, error) {
	const what = "ModelPackage.Method"
	if p == nil {
		return nil, invalidArgument("%s: the model package is nil", what)
	}
	if strings.IndexByte(name, 0) >= 0 {
		return nil, invalidArgument("%s: the method name %q holds a NUL byte", what, name)
	}
	pp, err := p.h.acquire(what)
	if err != nil {
		return nil, err
	}
	defer p.h.release()
	cname := C.CString(name)
	defer C.free(unsafe.Pointer(cname))
	var out *C.wharf_model
	err = statusError(C.wharf_model_package_get_method((*C.wharf_model_package)(pp), cname, &out))
	runtime.KeepAlive(p)
	if err != nil {
		return nil, err
	}
	// The package holds its runtime (a reference newModel may add to); the C model holds
	// the package's store itself.
	return newModel(p.rt, p.store, nil, out), nil
}

// NewSession creates a session over every method's container
// (wharf_model_package_create_session): one buffer per declared state, shared by all
// methods, so a conversation's prefill and decode runs read and write the same KV cache.
// opts may be nil. The session's Containers is empty (the methods' containers are those
// of the Models that Method returns). Errors: those of NewSession, ErrInvalidArgument (a nil
// *ModelPackage), ErrClosed.
//
// Experimental: part of wharf.h's experimental tier; it may change in any minor release.
func (p *ModelPackage) NewSession(opts *SessionOptions) (*Session, error) {
	const what = "ModelPackage.NewSession"
	if p == nil {
		return nil, invalidArgument("%s: the model package is nil", what)
	}
	var o C.wharf_session_options
	C.wharf_session_options_init_sized(&o, C.sizeof_wharf_session_options) // this binding's struct size
	if opts != nil {
		o.max_state_bytes = C.uint64_t(opts.MaxStateBytes)
		if opts.AllocateEagerly {
			o.allocate_eagerly = 1
		}
	}
	pp, err := p.h.acquire(what)
	if err != nil {
		return nil, err
	}
	defer p.h.release()
	var out *C.wharf_session
	err = statusError(C.wharf_model_package_create_session((*C.wharf_model_package)(pp), &o, &out))
	runtime.KeepAlive(p)
	if err != nil {
		return nil, err
	}
	p.rt.h.retain() // alive: the package holds it
	return newSession(p.rt, nil, out, []*handle{&p.rt.h}), nil
}

// Store returns the package's weight store, the same object every time: its updates
// reach every method (UpdateFromFile with a new checkpoint, or some of its tensors, by the
// checkpoint's FQNs, then Swap). It belongs to the package: you need not close it, as
// ModelPackage.Close closes it; closing it yourself is allowed, and later calls on it then
// fail with ErrClosed. nil for a nil *ModelPackage.
//
// Experimental: part of wharf.h's experimental tier; it may change in any minor release.
func (p *ModelPackage) Store() *WeightStore {
	if p == nil {
		return nil
	}
	return p.store
}

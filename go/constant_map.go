// SPDX-License-Identifier: Apache-2.0

package wharf

/*
#include <stdlib.h>
#include "helpers.h"
*/
import "C"

import (
	"runtime"
	"strings"
	"sync"
	"unsafe"
)

// ConstantMap maps fully qualified names (FQNs) to tensors in someone else's memory
// (wharf_constant_map). It copies names, shapes and strides but borrows data: a tensor
// stored with Set must stay valid while the map is used. The map keeps the HostBuffers
// and maps whose tensors it borrows alive until it is closed. A map loaded from a
// safetensors file owns the file's memory mapping. Entries keep insertion order.
//
// A ConstantMap is safe for concurrent use: calls that read it run at the same time, and
// Set, which must not change the C map while it is read, fails with ErrBusy while another
// call (an update from the map, a Find, ...) reads it. Fill a map before sharing it.
type ConstantMap struct {
	h  handle
	rw sync.RWMutex // readers of the C map hold it for reading; Set for writing
}

// read begins a call that reads the C map: it holds a reference and the content lock for
// reading until done.
func (m *ConstantMap) read(op string) (*C.wharf_constant_map, error) {
	p, err := m.h.acquire(op)
	if err != nil {
		return nil, err
	}
	m.rw.RLock()
	return (*C.wharf_constant_map)(p), nil
}

// done ends a call begun with read.
func (m *ConstantMap) done() {
	m.rw.RUnlock()
	m.h.release()
}

func newConstantMap(p *C.wharf_constant_map) *ConstantMap {
	m := &ConstantMap{}
	m.h.init("constant map", unsafe.Pointer(p), func(p unsafe.Pointer) error {
		C.wharf_constant_map_free((*C.wharf_constant_map)(p))
		return nil
	})
	runtime.SetFinalizer(m, func(m *ConstantMap) { leaked(&m.h, "Close") })
	return m
}

// NewConstantMap creates an empty map.
func NewConstantMap() (*ConstantMap, error) {
	var out *C.wharf_constant_map
	if err := statusError(C.wharf_constant_map_create(&out)); err != nil {
		return nil, err
	}
	return newConstantMap(out), nil
}

// LoadSafetensors memory-maps a safetensors file read-only and returns a map of its
// tensors (host tensors pointing into the mapping, in file order). The whole file is
// validated first. Errors: ErrNotFound or ErrIOError for the file, ErrDataCorrupt naming
// the tensor at fault.
func LoadSafetensors(path string) (*ConstantMap, error) {
	cpath := C.CString(path)
	defer C.free(unsafe.Pointer(cpath))
	var out *C.wharf_constant_map
	if err := statusError(C.wharf_constant_map_load_safetensors(cpath, &out)); err != nil {
		return nil, err
	}
	return newConstantMap(out), nil
}

// Close frees the map (and its file mapping, if any) and releases the buffers and maps it
// borrowed from. If a map borrows tensors of this one, the memory stays until that map is
// closed too. Close is idempotent and returns nil.
func (m *ConstantMap) Close() error {
	if m == nil {
		return nil
	}
	_, err := m.h.close()
	return err
}

// Set adds name -> t. The map copies the name, shape and strides and borrows t's data: a
// tensor from a HostBuffer or another map keeps its owner alive for as long as this map
// lives; a hand-built tensor's memory must stay valid that long (and must not be Go
// memory). Tensors of a Run cannot be borrowed (the run may end first). Errors:
// ErrInvalidArgument (empty name, bad shape, unknown dtype or device, nil data with a
// non-empty shape), ErrAlreadyExists (the name is taken). On error the map is unchanged.
func (m *ConstantMap) Set(name string, t Tensor) error {
	const what = "ConstantMap.Set"
	if t.noKeep != "" {
		return invalidArgument("%s: constant '%s': %s", what, name, t.noKeep)
	}
	if _, err := checkShape(what+": constant '"+name+"'", t.shape, t.strides); err != nil {
		return err
	}
	// Retain the tensor's owner before taking this map's lock, so two maps borrowing from
	// each other never wait on each other's locks.
	owner := t.owner
	if owner == &m.h {
		owner = nil // the map's own memory: already alive as long as the map
	}
	if owner != nil {
		if _, err := owner.acquire(what + " (the tensor's owner)"); err != nil {
			return err
		}
	}
	err := m.set(what, name, t, owner)
	if err != nil && owner != nil {
		owner.release()
	}
	return err
}

func (m *ConstantMap) set(what, name string, t Tensor, owner *handle) error {
	cname := C.CString(name)
	defer C.free(unsafe.Pointer(cname))
	p, err := m.h.acquire(what)
	if err != nil {
		return err
	}
	defer m.h.release()
	// The C map must not change while another call reads it. Set does not wait for
	// readers: one of them may be the call this goroutine is inside (an update from this
	// map, whose fold callback calls Set), which would never finish.
	if !m.rw.TryLock() {
		return &Error{Code: CodeBusy, Message: what + ": constant '" + name + "': the map is being read by another call"}
	}
	defer m.rw.Unlock()
	view := C.wharf_tensor_view{
		struct_size:  C.sizeof_wharf_tensor_view,
		data:         t.data,
		dtype:        C.wharf_dtype(t.dtype),
		device_type:  C.wharf_device_type(t.device),
		device_index: C.int32_t(t.deviceIndex),
		ndim:         C.int32_t(len(t.shape)),
	}
	var shape, strides *C.int64_t
	if len(t.shape) > 0 {
		shape = (*C.int64_t)(unsafe.Pointer(&t.shape[0]))
	}
	if len(t.strides) > 0 {
		strides = (*C.int64_t)(unsafe.Pointer(&t.strides[0]))
	}
	// view lives in Go memory and holds t.data: cgo's pointer check rejects (panics) a
	// Go pointer there, which is exactly the tensor the map must not keep.
	err = statusError(C.wharf_go_map_set((*C.wharf_constant_map)(p), cname, &view, shape, strides))
	runtime.KeepAlive(m)
	if err == nil && owner != nil {
		m.h.mu.Lock()
		m.h.addHeldLocked(owner) // not freed yet: this call holds a reference
		m.h.mu.Unlock()
	}
	return err
}

// tensorFromView copies a C view (whose arrays may point into C memory that can change)
// into a Tensor owned by owner.
func tensorFromView(v *C.wharf_tensor_view, owner *handle) Tensor {
	t := Tensor{
		data:        v.data,
		dtype:       DType(v.dtype),
		device:      DeviceType(v.device_type),
		deviceIndex: int32(v.device_index),
		shape:       []int64{},
		owner:       owner,
	}
	if n := int(v.ndim); n > 0 {
		if v.shape != nil {
			t.shape = append(t.shape, unsafe.Slice((*int64)(unsafe.Pointer(v.shape)), n)...)
		}
		if v.strides != nil {
			t.strides = append([]int64{}, unsafe.Slice((*int64)(unsafe.Pointer(v.strides)), n)...)
		}
	}
	return t
}

const mapTensorReadOnly = "it is an entry of a ConstantMap (write through the HostBuffer it came from)"

// Find looks up name. The returned tensor's data belongs to the map's source (or the
// map's file mapping) and is valid while the map is open. Errors: ErrNotFound.
func (m *ConstantMap) Find(name string) (Tensor, error) {
	cname := C.CString(name)
	defer C.free(unsafe.Pointer(cname))
	p, err := m.read("ConstantMap.Find")
	if err != nil {
		return Tensor{}, err
	}
	defer m.done()
	v := outputView()
	if err := statusError(C.wharf_constant_map_find((*C.wharf_constant_map)(p), cname, &v)); err != nil {
		return Tensor{}, err
	}
	t := tensorFromView(&v, &m.h)
	t.readOnly = mapTensorReadOnly
	runtime.KeepAlive(m)
	return t, nil
}

// Len returns the number of entries (0 for a closed map).
func (m *ConstantMap) Len() int {
	p, err := m.read("ConstantMap.Len")
	if err != nil {
		return 0
	}
	defer m.done()
	n := int(C.wharf_constant_map_num_entries((*C.wharf_constant_map)(p)))
	runtime.KeepAlive(m)
	return n
}

// Entry returns the i-th entry in insertion order. Errors: ErrInvalidArgument for i out
// of range.
func (m *ConstantMap) Entry(i int) (string, Tensor, error) {
	if i < 0 {
		return "", Tensor{}, invalidArgument("ConstantMap.Entry: negative index %d", i)
	}
	p, err := m.read("ConstantMap.Entry")
	if err != nil {
		return "", Tensor{}, err
	}
	defer m.done()
	v := outputView()
	var fqn *C.char
	if err := statusError(C.wharf_constant_map_get_entry((*C.wharf_constant_map)(p), C.size_t(i), &fqn, &v)); err != nil {
		return "", Tensor{}, err
	}
	name, t := C.GoString(fqn), tensorFromView(&v, &m.h)
	t.readOnly = mapTensorReadOnly
	runtime.KeepAlive(m)
	return name, t, nil
}

// Names returns every entry's name in insertion order.
func (m *ConstantMap) Names() ([]string, error) {
	p, err := m.read("ConstantMap.Names")
	if err != nil {
		return nil, err
	}
	defer m.done()
	cm := (*C.wharf_constant_map)(p)
	n := int(C.wharf_constant_map_num_entries(cm))
	names := make([]string, 0, n)
	for i := 0; i < n; i++ {
		v := outputView()
		var fqn *C.char
		if err := statusError(C.wharf_constant_map_get_entry(cm, C.size_t(i), &fqn, &v)); err != nil {
			return nil, err
		}
		names = append(names, C.GoString(fqn))
	}
	runtime.KeepAlive(m)
	return names, nil
}

// Metadata returns the `__metadata__` entries of a map loaded from safetensors (empty for
// other maps).
func (m *ConstantMap) Metadata() (map[string]string, error) {
	p, err := m.read("ConstantMap.Metadata")
	if err != nil {
		return nil, err
	}
	defer m.done()
	cm := (*C.wharf_constant_map)(p)
	n := int(C.wharf_constant_map_num_metadata_entries(cm))
	md := make(map[string]string, n)
	for i := 0; i < n; i++ {
		var key, value *C.char
		if err := statusError(C.wharf_constant_map_get_metadata_entry(cm, C.size_t(i), &key, &value)); err != nil {
			return nil, err
		}
		md[C.GoString(key)] = C.GoString(value)
	}
	runtime.KeepAlive(m)
	return md, nil
}

// SetMetadata sets the `__metadata__` entry key to value (both copied): a new key is
// appended, an existing one keeps its place and takes the new value; Save writes them.
// Key and value may be empty and must be valid UTF-8 without NUL bytes
// (ErrInvalidArgument, and the map is unchanged); ErrBusy while another call reads the map.
// Since 0.3.
func (m *ConstantMap) SetMetadata(key, value string) error {
	const what = "ConstantMap.SetMetadata"
	// A C string ends at the first NUL: refuse it rather than cut the text short.
	if strings.IndexByte(key, 0) >= 0 || strings.IndexByte(value, 0) >= 0 {
		return invalidArgument("%s: metadata key %q: the key and value must not contain NUL bytes", what, key)
	}
	ckey, cvalue := C.CString(key), C.CString(value)
	defer C.free(unsafe.Pointer(ckey))
	defer C.free(unsafe.Pointer(cvalue))
	p, err := m.h.acquire(what)
	if err != nil {
		return err
	}
	defer m.h.release()
	// As Set: the C map must not change while another call reads it (Metadata hands out
	// its strings), and waiting could deadlock a fold callback inside an update from it.
	if !m.rw.TryLock() {
		return &Error{Code: CodeBusy, Message: what + ": metadata key '" + key + "': the map is being read by another call"}
	}
	defer m.rw.Unlock()
	err = statusError(C.wharf_constant_map_set_metadata((*C.wharf_constant_map)(p), ckey, cvalue))
	runtime.KeepAlive(m)
	return err
}

// Save writes every entry to a safetensors file at path (created or replaced atomically).
// Entries must be host memory; strided ones are written contiguous. Errors:
// ErrInvalidArgument (a CUDA tensor, naming it), ErrIOError.
func (m *ConstantMap) Save(path string) error {
	cpath := C.CString(path)
	defer C.free(unsafe.Pointer(cpath))
	p, err := m.read("ConstantMap.Save")
	if err != nil {
		return err
	}
	defer m.done()
	err = statusError(C.wharf_constant_map_save_safetensors((*C.wharf_constant_map)(p), cpath))
	runtime.KeepAlive(m)
	return err
}

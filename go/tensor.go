// SPDX-License-Identifier: Apache-2.0

package wharf

/*
#include <stdlib.h>
*/
import "C"

import (
	"fmt"
	"math"
	"runtime"
	"unsafe"
)

// Tensor is a view of a tensor in someone else's memory (wharf_tensor_view): nothing in
// it is owned, and its fields are private, so a view always describes exactly the memory
// it was made for. Tensors returned by the binding (ConstantMap.Find and Entry,
// Run.Tensor, Model.Run, HostBuffer.Tensor, FoldRun.Tensor) hold a reference to what
// owns their memory and refuse use once that owner ended: after Run.End, ConstantMap.Close,
// HostBuffer.Close or the end of a fold callback, Values, Bytes, SetValues, WithSlice,
// Pointer and ConstantMap.Set fail with an error matching ErrClosed instead of touching
// freed memory. A tensor keeps its owner reachable, so the garbage collector cannot
// finalize a run (or a map) while one of its tensors is still in use.
//
// Host memory is read with Values or Bytes (copies) and written with SetValues or
// SetBytes (copies) or WithSlice (a copy handed to a callback, copied back). Only writable
// memory can be written: a HostBuffer's, a session state's of an open run, a fold's, and
// memory wrapped with NewTensor; a run's constants, a map's entries (a safetensors mapping is
// read-only) and a model's outputs can only be read.
//
// NewTensor wraps memory the caller manages (C or device memory, say). Its data must not
// be Go memory if the tensor is stored in a ConstantMap: the map keeps the pointer after
// the call returns, which the cgo pointer rules forbid (with cgo's checks enabled, the
// default, ConstantMap.Set panics on such a tensor). Use a HostBuffer,
// Container.UpdatePacked or Container.UpdateFromHost for Go data instead.
type Tensor struct {
	data        unsafe.Pointer // first element; device memory for DeviceCUDA
	dtype       DType
	device      DeviceType
	deviceIndex int32   // CUDA device ordinal (0 for host memory)
	shape       []int64 // empty for a scalar; never shared with a caller
	strides     []int64 // in elements; nil means contiguous row-major

	owner    *handle // what owns data; nil for memory the caller manages (NewTensor)
	noKeep   string  // non-empty: why a ConstantMap may not borrow this tensor
	readOnly string  // non-empty: why the memory may not be written
}

// NewTensor describes memory the caller manages: data (the first element) holding a
// tensor of dtype and shape with strides in elements (nil: contiguous row-major) on the
// given device (DeviceCPU, or DeviceCUDA with its ordinal). The caller keeps the memory
// valid, and large enough for the shape, for as long as the tensor or a map it was stored
// in is used; the binding cannot check either. Errors: ErrInvalidArgument (a bad shape or
// stride, an unknown dtype or device, nil data with a non-empty shape).
func NewTensor(data unsafe.Pointer, dtype DType, device DeviceType, deviceIndex int32, shape, strides []int64) (Tensor, error) {
	const what = "NewTensor"
	n, err := checkShape(what, shape, strides)
	if err != nil {
		return Tensor{}, err
	}
	if _, err := byteSize(what, dtype, n); err != nil {
		return Tensor{}, err
	}
	if device != DeviceCPU && device != DeviceCUDA {
		return Tensor{}, invalidArgument("%s: unknown device type %d", what, int32(device))
	}
	if data == nil && n > 0 {
		return Tensor{}, invalidArgument("%s: nil data for shape %v", what, shape)
	}
	t := Tensor{data: data, dtype: dtype, device: device, deviceIndex: deviceIndex, shape: append([]int64{}, shape...)}
	if strides != nil {
		t.strides = append([]int64{}, strides...)
	}
	return t, nil
}

// DType returns the element type.
func (t Tensor) DType() DType { return t.dtype }

// Device returns where the memory lives (DeviceCPU or DeviceCUDA).
func (t Tensor) Device() DeviceType { return t.device }

// DeviceIndex returns the CUDA device ordinal (0 for host memory).
func (t Tensor) DeviceIndex() int32 { return t.deviceIndex }

// Shape returns a copy of the shape (empty for a scalar).
func (t Tensor) Shape() []int64 { return append([]int64{}, t.shape...) }

// Strides returns a copy of the strides in elements, or nil for a contiguous row-major
// tensor described without strides.
func (t Tensor) Strides() []int64 {
	if t.strides == nil {
		return nil
	}
	return append([]int64{}, t.strides...)
}

// NumElements returns the product of the shape (1 for a scalar).
func (t Tensor) NumElements() int64 {
	n := int64(1)
	for _, d := range t.shape {
		n *= d
	}
	return n
}

// NumBytes returns the size of the data of a contiguous tensor: NumElements times the
// element size (NumElements * Bits / 8 for the sub-byte dtypes, rounded down).
func (t Tensor) NumBytes() int64 { return t.NumElements() * int64(t.dtype.Bits()) / 8 }

// IsContiguous reports whether the tensor is row-major without gaps (no strides, or
// strides equal to the row-major ones).
func (t Tensor) IsContiguous() bool {
	if t.strides == nil {
		return true
	}
	want := int64(1)
	for i := len(t.shape) - 1; i >= 0; i-- {
		if t.shape[i] != 1 && t.strides[i] != want {
			return false
		}
		want *= t.shape[i]
	}
	return true
}

// Writable reports whether the tensor's memory may be written through SetValues, SetBytes
// or WithSlice (ignoring whether its owner has ended).
func (t Tensor) Writable() bool { return t.readOnly == "" }

// Pointer returns the address of the first element (device memory for DeviceCUDA), for
// passing to your own kernels or C code. It stays valid only while the tensor's owner does
// (a run: until End); after that Pointer fails with an error matching ErrClosed. Memory
// Wharf owns must not be written through it unless the tensor is Writable.
func (t Tensor) Pointer() (unsafe.Pointer, error) {
	if t.owner != nil && t.owner.isClosed() {
		return nil, &closedError{"Tensor.Pointer", t.owner.kind}
	}
	return t.data, nil
}

// use begins an access to the tensor's memory: the owner (if any) is kept from being
// freed until the returned function is called, or an error says it has ended.
func (t Tensor) use(op string) (func(), error) {
	if t.owner == nil {
		return func() {}, nil
	}
	if _, err := t.owner.acquire(op); err != nil {
		return nil, err
	}
	owner := t.owner
	return owner.release, nil
}

// hostBytes checks that the tensor is contiguous host memory holding elements of want
// (any dtype if want < 0) and returns its size in bytes.
func (t Tensor) hostBytes(op string, want DType) (int64, error) {
	if want >= 0 && t.dtype != want {
		return 0, invalidArgument("%s: tensor has dtype %v, the Go type wants %v", op, t.dtype, want)
	}
	if t.device != DeviceCPU {
		return 0, invalidArgument("%s: the tensor is in %v memory; only host memory can be accessed (Run.Read copies device memory)", op, t.device)
	}
	if !t.IsContiguous() {
		return 0, invalidArgument("%s: the tensor is not contiguous", op)
	}
	n := t.NumBytes()
	if n > 0 && t.data == nil {
		return 0, invalidArgument("%s: the tensor's data is nil", op)
	}
	return n, nil
}

// access runs fn over the tensor's bytes (host memory, contiguous, of element type want
// or any if want < 0) with the owner kept alive; write asks for writable memory. fn is the
// binding's own code: the slice it gets aliases memory Go does not manage and must not
// escape it.
func (t Tensor) access(op string, want DType, write bool, fn func(b []byte) error) error {
	n, err := t.check(op, want, write)
	if err != nil {
		return err
	}
	done, err := t.use(op)
	if err != nil {
		return err
	}
	defer done()
	return t.held(op, n, write, fn)
}

// check checks what access needs and returns the size in bytes.
func (t Tensor) check(op string, want DType, write bool) (int64, error) {
	n, err := t.hostBytes(op, want)
	if err != nil {
		return 0, err
	}
	if write && t.readOnly != "" {
		return 0, &Error{Code: CodeFailedPrecondition, Message: op + ": the tensor is read-only: " + t.readOnly}
	}
	return n, nil
}

// held runs fn over the n bytes of the tensor, whose owner the caller keeps alive.
func (t Tensor) held(op string, n int64, write bool, fn func(b []byte) error) error {
	if write {
		end, err := t.owner.beginWrite(op)
		if err != nil {
			return err
		}
		defer end()
	}
	var b []byte
	if n > 0 {
		b = unsafe.Slice((*byte)(t.data), n)
	} else {
		b = []byte{}
	}
	return fn(b)
}

// Bytes copies a contiguous host tensor's data into a new byte slice. Errors:
// ErrInvalidArgument (device memory, not contiguous), ErrClosed (the owner ended).
func (t Tensor) Bytes() ([]byte, error) {
	var out []byte
	err := t.access("Tensor.Bytes", -1, false, func(b []byte) error {
		out = append([]byte{}, b...)
		return nil
	})
	return out, err
}

// SetBytes copies src, exactly NumBytes long, into a contiguous, writable host tensor.
// Errors: ErrInvalidArgument (a length mismatch, device memory), ErrFailedPrecondition
// (read-only memory), ErrClosed (the owner ended).
func (t Tensor) SetBytes(src []byte) error {
	return t.access("Tensor.SetBytes", -1, true, func(b []byte) error {
		if len(src) != len(b) {
			return invalidArgument("Tensor.SetBytes: %d bytes for a tensor of %d", len(src), len(b))
		}
		copy(b, src)
		return nil
	})
}

// asBytes views a Go slice's elements as bytes.
func asBytes[T Element](s []T) []byte {
	if len(s) == 0 {
		return []byte{}
	}
	return unsafe.Slice((*byte)(unsafe.Pointer(&s[0])), len(s)*int(unsafe.Sizeof(s[0])))
}

// Values copies a contiguous host tensor's elements into a new Go slice. The tensor's
// DType must be the one of T. Errors as Bytes.
func Values[T Element](t Tensor) ([]T, error) {
	var out []T
	err := t.access("Values", DTypeOf[T](), false, func(b []byte) error {
		out = make([]T, t.NumElements())
		copy(asBytes(out), b)
		return nil
	})
	return out, err
}

// SetValues copies src, exactly NumElements long, into a contiguous, writable host tensor
// of T's dtype (a session state of an open run on the host backend, a HostBuffer's
// tensor). Errors as SetBytes.
func SetValues[T Element](t Tensor, src []T) error {
	return t.access("SetValues", DTypeOf[T](), true, func(b []byte) error {
		if int64(len(src)) != t.NumElements() {
			return invalidArgument("SetValues: %d values for a tensor of %d elements", len(src), t.NumElements())
		}
		copy(b, asBytes(src))
		return nil
	})
}

// WithSlice calls fn with a copy of the elements of a contiguous, writable host tensor of
// T's dtype as a []T, then copies the slice back into the tensor when fn returns (also when
// fn returns an error), and returns fn's error, else the copy's. The slice is Go memory: it
// never aliases memory Wharf or C owns, so nothing fn does with it (keeping it, handing it
// to a goroutine that writes it later) can reach freed memory; only what it holds when fn
// returns reaches the tensor. The owner is kept alive until fn returns, even if it is
// closed meanwhile (a run ended inside fn ends when fn returns and the copy is back), except
// a FoldRun's, which ends with its fold callback: a WithSlice still running then (on a
// goroutine the callback started) fails with ErrClosed and writes nothing. Errors also as
// SetValues (checked before fn is called).
func WithSlice[T Element](t Tensor, fn func(s []T) error) error {
	const op = "WithSlice"
	n, err := t.check(op, DTypeOf[T](), true)
	if err != nil {
		return err
	}
	s := make([]T, t.NumElements())
	copyIn := func(b []byte) error {
		copy(asBytes(s), b)
		return nil
	}
	copyOut := func(b []byte) error {
		copy(b, asBytes(s))
		return nil
	}
	if t.owner != nil && t.owner.shortRefs {
		// A fold's run: held only for each copy, never across fn.
		if err := t.access(op, DTypeOf[T](), true, copyIn); err != nil {
			return err
		}
		ferr := fn(s)
		if err := t.access(op, DTypeOf[T](), true, copyOut); ferr == nil {
			ferr = err
		}
		return ferr
	}
	// The owner (and so the memory) is kept until the copy is back.
	done, err := t.use(op)
	if err != nil {
		return err
	}
	defer done()
	if err := t.held(op, n, true, copyIn); err != nil {
		return err
	}
	ferr := fn(s)
	if err := t.held(op, n, true, copyOut); ferr == nil {
		ferr = err
	}
	return ferr
}

// checkShape validates a shape (and optional strides) the way the library does and
// returns the element count.
func checkShape(what string, shape, strides []int64) (int64, error) {
	if len(shape) > MaxDims {
		return 0, invalidArgument("%s: %d dimensions, at most %d are allowed", what, len(shape), MaxDims)
	}
	if strides != nil && len(strides) != len(shape) {
		return 0, invalidArgument("%s: %d strides for %d dimensions", what, len(strides), len(shape))
	}
	n := int64(1)
	for i, d := range shape {
		if d < 0 {
			return 0, invalidArgument("%s: dimension %d is negative (%d)", what, i, d)
		}
		if d != 0 && n > math.MaxInt64/d {
			return 0, invalidArgument("%s: shape %v overflows", what, shape)
		}
		n *= d
	}
	for i, s := range strides {
		if s < 0 {
			return 0, invalidArgument("%s: stride %d is negative (%d)", what, i, s)
		}
	}
	return n, nil
}

// byteSize returns n elements of dtype in bytes, checking the dtype, overflow and, for the
// sub-byte dtypes, that the elements fill whole bytes.
func byteSize(what string, dtype DType, n int64) (int64, error) {
	bits := int64(dtype.Bits())
	if bits == 0 {
		return 0, invalidArgument("%s: unknown dtype value %d", what, int32(dtype))
	}
	if n > math.MaxInt64/bits {
		return 0, invalidArgument("%s: byte size overflows", what)
	}
	if n*bits%8 != 0 {
		return 0, invalidArgument("%s: %d elements of %v are %d bits, not a whole number of bytes", what, n, dtype, n*bits)
	}
	return n * bits / 8, nil
}

// HostBuffer is host memory allocated with C.malloc, for tensor data that Wharf borrows
// beyond a single call (a ConstantMap entry, a bound constant). Go code fills and reads it
// with copies (WriteAt, ReadAt, Bytes, HostSlice, or SetValues and Values on its tensors):
// no Go slice ever aliases the C memory, so nothing a Go program keeps can reach it after it
// is freed.
//
// A HostBuffer is safe for concurrent use, but the memory itself is not synchronized:
// don't write it while Wharf may read it (during an update from a map that borrows it).
// Binding one of its tensors into a container (Container.BindTensor) freezes the buffer:
// the container reads it whenever it likes, so writes through the binding fail with
// ErrFailedPrecondition from then on. Maps and containers that borrow the buffer keep it
// allocated after Close until they release it.
type HostBuffer struct {
	h    handle
	size int
}

// NewHostBuffer allocates size zeroed bytes of C memory.
func NewHostBuffer(size int) (*HostBuffer, error) {
	if size < 0 {
		return nil, invalidArgument("NewHostBuffer: negative size %d", size)
	}
	n := size
	if n == 0 {
		n = 1 // a valid, unique pointer
	}
	p := C.calloc(C.size_t(n), 1)
	if p == nil {
		return nil, &Error{Code: CodeOutOfMemory, Message: fmt.Sprintf("NewHostBuffer: cannot allocate %d bytes", size)}
	}
	b := &HostBuffer{size: size}
	b.h.init("host buffer", p, func(p unsafe.Pointer) error {
		C.free(p)
		return nil
	})
	runtime.SetFinalizer(b, func(b *HostBuffer) { leaked(&b.h, "Close") })
	return b, nil
}

// NewHostBufferFrom allocates a HostBuffer holding a copy of data.
func NewHostBufferFrom[T Element](data []T) (*HostBuffer, error) {
	n := len(data) * int(unsafe.Sizeof(*new(T)))
	b, err := NewHostBuffer(n)
	if err != nil {
		return nil, err
	}
	if n > 0 {
		copy(unsafe.Slice((*byte)(b.h.ptr), n), asBytes(data)) // not shared yet
	}
	return b, nil
}

// Len returns the buffer's size in bytes.
func (b *HostBuffer) Len() int { return b.size }

// Bytes returns a copy of the buffer's bytes (nil after Close).
func (b *HostBuffer) Bytes() []byte {
	out := make([]byte, b.size)
	if _, err := b.ReadAt(out, 0); err != nil {
		return nil
	}
	return out
}

// HostSlice returns a copy of the buffer's memory as Len()/sizeof(T) elements of T (nil
// after Close).
func HostSlice[T Element](b *HostBuffer) []T {
	out := make([]T, b.size/int(unsafe.Sizeof(*new(T))))
	if _, err := b.ReadAt(asBytes(out), 0); err != nil {
		return nil
	}
	return out
}

// ReadAt copies len(p) bytes of the buffer, from byte off on, into p (io.ReaderAt). Errors:
// ErrInvalidArgument for a range outside the buffer (nothing is copied), ErrClosed after
// Close.
func (b *HostBuffer) ReadAt(p []byte, off int64) (int, error) {
	return b.copyAt("HostBuffer.ReadAt", p, off, false)
}

// WriteAt copies p into the buffer from byte off on (io.WriterAt). Errors:
// ErrInvalidArgument for a range outside the buffer (nothing is copied),
// ErrFailedPrecondition once the buffer is bound into a container, ErrClosed after Close.
func (b *HostBuffer) WriteAt(p []byte, off int64) (int, error) {
	return b.copyAt("HostBuffer.WriteAt", p, off, true)
}

func (b *HostBuffer) copyAt(what string, p []byte, off int64, write bool) (int, error) {
	if off < 0 || off > int64(b.size) || int64(len(p)) > int64(b.size)-off {
		return 0, invalidArgument("%s: %d bytes at offset %d do not fit in a %d-byte buffer", what, len(p), off, b.size)
	}
	ptr, err := b.h.acquire(what)
	if err != nil {
		return 0, err
	}
	defer b.h.release()
	if write {
		end, err := b.h.beginWrite(what)
		if err != nil {
			return 0, err
		}
		defer end()
	}
	if len(p) == 0 {
		return 0, nil
	}
	mem := unsafe.Slice((*byte)(unsafe.Add(ptr, off)), len(p))
	if write {
		copy(mem, p)
	} else {
		copy(p, mem)
	}
	return len(p), nil
}

// Tensor returns a host tensor of the given dtype and shape (contiguous, row-major) that
// starts offset bytes into the buffer. It fails with ErrInvalidArgument if it does not
// fit, and with ErrClosed after Close.
func (b *HostBuffer) Tensor(offset int, dtype DType, shape []int64) (Tensor, error) {
	const what = "HostBuffer.Tensor"
	n, err := checkShape(what, shape, nil)
	if err != nil {
		return Tensor{}, err
	}
	nbytes, err := byteSize(what, dtype, n)
	if err != nil {
		return Tensor{}, err
	}
	if offset < 0 || int64(offset) > int64(b.size) || nbytes > int64(b.size)-int64(offset) {
		return Tensor{}, invalidArgument("%s: %d bytes at offset %d do not fit in a %d-byte buffer", what, nbytes, offset, b.size)
	}
	p, err := b.h.acquire(what)
	if err != nil {
		return Tensor{}, err
	}
	defer b.h.release()
	return Tensor{
		data:   unsafe.Add(p, offset),
		dtype:  dtype,
		device: DeviceCPU,
		shape:  append([]int64{}, shape...),
		owner:  &b.h,
	}, nil
}

// Close frees the buffer, or, while maps or containers still borrow it, lets the last of
// them free it. It is idempotent and returns nil.
func (b *HostBuffer) Close() error {
	if b == nil {
		return nil
	}
	_, err := b.h.close()
	return err
}

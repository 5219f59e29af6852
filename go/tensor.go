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
// it is owned. Tensors returned by the binding (ConstantMap.Find, Run.Tensor,
// HostBuffer.Tensor) remember what owns their memory; their Data is valid until that
// owner is closed (or the run ended).
//
// A Tensor can also be built by hand around memory the caller manages (C or device
// memory, say). Data must then not point to Go memory if the tensor is stored in a
// ConstantMap: the map keeps the pointer after the call returns, which the cgo pointer
// rules forbid (with cgo's checks enabled, the default, ConstantMap.Set panics on such a
// tensor). Use a HostBuffer, Container.UpdatePacked or Container.UpdateFromHost for Go
// data instead.
type Tensor struct {
	Data        unsafe.Pointer // first element; device memory for DeviceCUDA
	DType       DType
	Device      DeviceType
	DeviceIndex int32   // CUDA device ordinal (0 for host memory)
	Shape       []int64 // empty for a scalar
	Strides     []int64 // in elements; nil means contiguous row-major

	owner  *handle // what owns Data; nil for caller-managed memory
	noKeep string  // non-empty: why a ConstantMap may not borrow this tensor
}

// NumElements returns the product of the shape (1 for a scalar).
func (t Tensor) NumElements() int64 {
	n := int64(1)
	for _, d := range t.Shape {
		n *= d
	}
	return n
}

// NumBytes returns NumElements times the element size (the size of the data of a
// contiguous tensor).
func (t Tensor) NumBytes() int64 { return t.NumElements() * int64(t.DType.Size()) }

// IsContiguous reports whether the tensor is row-major without gaps (Strides nil or equal
// to the row-major strides).
func (t Tensor) IsContiguous() bool {
	if t.Strides == nil {
		return true
	}
	want := int64(1)
	for i := len(t.Shape) - 1; i >= 0; i-- {
		if t.Shape[i] != 1 && t.Strides[i] != want {
			return false
		}
		want *= t.Shape[i]
	}
	return true
}

// Bytes returns the tensor's data as a byte slice aliasing the underlying memory, or nil
// unless the tensor is contiguous host memory (DeviceCPU; a run's device memory is read
// with Run.Read). The slice is valid only until
// the tensor's owner is closed (a run: ended); it must not be used after that, and it must
// not be written when the memory belongs to Wharf (a run's constants, a file mapping),
// except for a session state of an open run, which the run may write.
func (t Tensor) Bytes() []byte {
	n := t.NumBytes()
	if t.Device != DeviceCPU || !t.IsContiguous() || t.Data == nil || n <= 0 || t.DType.Size() == 0 {
		return nil
	}
	return unsafe.Slice((*byte)(t.Data), n)
}

// Values copies a contiguous host tensor's elements into a new Go slice. The tensor's
// DType must be the one of T.
func Values[T Element](t Tensor) ([]T, error) {
	if want := DTypeOf[T](); t.DType != want {
		return nil, invalidArgument("Values: tensor has dtype %v, the Go type wants %v", t.DType, want)
	}
	if t.Device != DeviceCPU {
		return nil, invalidArgument("Values: the tensor is in %v memory; only host memory can be read", t.Device)
	}
	if !t.IsContiguous() {
		return nil, invalidArgument("Values: the tensor is not contiguous")
	}
	n := t.NumElements()
	out := make([]T, n)
	if n > 0 {
		if t.Data == nil {
			return nil, invalidArgument("Values: the tensor's data is nil")
		}
		copy(unsafe.Slice((*byte)(unsafe.Pointer(&out[0])), n*int64(t.DType.Size())), unsafe.Slice((*byte)(t.Data), n*int64(t.DType.Size())))
	}
	return out, nil
}

// Slice returns a contiguous host tensor's elements as a []T aliasing its memory (no copy),
// for writing a session state of an open run on the host backend, or filling a
// HostBuffer's tensor. T must be the tensor's DType. The slice is valid only while the
// tensor's memory is (a run: until End) and follows the same rules as Bytes.
func Slice[T Element](t Tensor) ([]T, error) {
	if want := DTypeOf[T](); t.DType != want {
		return nil, invalidArgument("Slice: tensor has dtype %v, the Go type wants %v", t.DType, want)
	}
	if t.Device != DeviceCPU {
		return nil, invalidArgument("Slice: the tensor is in %v memory; only host memory can be aliased", t.Device)
	}
	if !t.IsContiguous() {
		return nil, invalidArgument("Slice: the tensor is not contiguous")
	}
	n := t.NumElements()
	if n == 0 {
		return []T{}, nil
	}
	if t.Data == nil {
		return nil, invalidArgument("Slice: the tensor's data is nil")
	}
	return unsafe.Slice((*T)(t.Data), n), nil
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

// byteSize returns n elements of dtype in bytes, checking the dtype and overflow.
func byteSize(what string, dtype DType, n int64) (int64, error) {
	size := int64(dtype.Size())
	if size == 0 {
		return 0, invalidArgument("%s: unknown dtype value %d", what, int32(dtype))
	}
	if n > math.MaxInt64/size {
		return 0, invalidArgument("%s: byte size overflows", what)
	}
	return n * size, nil
}

// HostBuffer is host memory allocated with C.malloc, for tensor data that Wharf borrows
// beyond a single call (a ConstantMap entry, a bound constant). Go code fills it through
// Bytes or HostSlice, which alias the C memory.
//
// A HostBuffer is safe for concurrent use, but the memory itself is not synchronized:
// don't write it while Wharf may read it (during an update from a map that borrows it,
// or while it is bound to a container). Maps and containers that borrow the buffer keep
// it allocated after Close until they release it; slices obtained from Bytes or HostSlice
// must not be used after Close.
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
		copy(b.Bytes(), unsafe.Slice((*byte)(unsafe.Pointer(&data[0])), n))
	}
	return b, nil
}

// Len returns the buffer's size in bytes.
func (b *HostBuffer) Len() int { return b.size }

// Bytes returns the buffer's memory as a byte slice (nil after Close). The slice aliases
// C memory and must not be used after Close.
func (b *HostBuffer) Bytes() []byte {
	p, err := b.h.acquire("HostBuffer.Bytes")
	if err != nil {
		return nil
	}
	defer b.h.release()
	return unsafe.Slice((*byte)(p), b.size)
}

// HostSlice returns the buffer's memory as a []T of Len()/sizeof(T) elements (nil after
// Close). The slice aliases C memory (malloc'd, so suitably aligned) and must not be used
// after Close.
func HostSlice[T Element](b *HostBuffer) []T {
	p, err := b.h.acquire("HostSlice")
	if err != nil {
		return nil
	}
	defer b.h.release()
	return unsafe.Slice((*T)(p), b.size/int(unsafe.Sizeof(*new(T))))
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
		Data:   unsafe.Add(p, offset),
		DType:  dtype,
		Device: DeviceCPU,
		Shape:  append([]int64(nil), shape...),
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

package wharf

/*
#include <stdlib.h>
#include "wharf.h"
*/
import "C"

import (
	"fmt"
	"unsafe"
)

// DType is a tensor element type (wharf_dtype).
type DType int32

// The element types of wharf.h.
const (
	DTypeF32    DType = C.WHARF_DTYPE_F32
	DTypeF16    DType = C.WHARF_DTYPE_F16
	DTypeBF16   DType = C.WHARF_DTYPE_BF16
	DTypeF64    DType = C.WHARF_DTYPE_F64
	DTypeF8E4M3 DType = C.WHARF_DTYPE_F8_E4M3
	DTypeF8E5M2 DType = C.WHARF_DTYPE_F8_E5M2
	DTypeI8     DType = C.WHARF_DTYPE_I8
	DTypeU8     DType = C.WHARF_DTYPE_U8
	DTypeI16    DType = C.WHARF_DTYPE_I16
	DTypeI32    DType = C.WHARF_DTYPE_I32
	DTypeI64    DType = C.WHARF_DTYPE_I64
	DTypeBool   DType = C.WHARF_DTYPE_BOOL
)

// Size returns the bytes per element, or 0 for a value outside the known types.
func (d DType) Size() int { return int(C.wharf_dtype_size(C.wharf_dtype(d))) }

// String returns the safetensors spelling ("F32", "BF16", ...), or "DType(n)" for an
// unknown value.
func (d DType) String() string {
	if name := C.wharf_dtype_name(C.wharf_dtype(d)); name != nil {
		return C.GoString(name)
	}
	return fmt.Sprintf("DType(%d)", int32(d))
}

// ParseDType parses a safetensors dtype name ("F32"). Unknown names give ErrNotFound.
func ParseDType(name string) (DType, error) {
	cname := C.CString(name)
	defer C.free(unsafe.Pointer(cname))
	var out C.wharf_dtype
	if err := statusError(C.wharf_dtype_from_name(cname, &out)); err != nil {
		return 0, err
	}
	return DType(out), nil
}

// Element is the set of Go types whose slices map directly onto a DType.
type Element interface {
	float32 | float64 | int8 | uint8 | int16 | int32 | int64
}

// DTypeOf returns the DType of the Go element type T.
func DTypeOf[T Element]() DType {
	var zero T
	switch any(zero).(type) {
	case float32:
		return DTypeF32
	case float64:
		return DTypeF64
	case int8:
		return DTypeI8
	case uint8:
		return DTypeU8
	case int16:
		return DTypeI16
	case int32:
		return DTypeI32
	default: // int64, the only type left in Element
		return DTypeI64
	}
}

// DeviceType says where a tensor's memory lives (wharf_device_type).
type DeviceType int32

// The device types of wharf.h.
const (
	DeviceCPU  DeviceType = C.WHARF_DEVICE_CPU  // host memory, pageable or pinned
	DeviceCUDA DeviceType = C.WHARF_DEVICE_CUDA // CUDA device memory
)

// String returns "cpu", "cuda", or "DeviceType(n)".
func (d DeviceType) String() string {
	switch d {
	case DeviceCPU:
		return "cpu"
	case DeviceCUDA:
		return "cuda"
	}
	return fmt.Sprintf("DeviceType(%d)", int32(d))
}

// Backend selects the runtime's device backend (wharf_backend).
type Backend int32

// The backends of wharf.h.
const (
	BackendAuto Backend = C.WHARF_BACKEND_AUTO // CUDA when usable, else the host backend
	BackendCUDA Backend = C.WHARF_BACKEND_CUDA // a CUDA GPU
	BackendHost Backend = C.WHARF_BACKEND_HOST // host memory and worker-thread streams
)

// String returns "auto", "cuda", "host", or "Backend(n)".
func (b Backend) String() string {
	switch b {
	case BackendAuto:
		return "auto"
	case BackendCUDA:
		return "cuda"
	case BackendHost:
		return "host"
	}
	return fmt.Sprintf("Backend(%d)", int32(b))
}

// Placement says where a container keeps a constant (wharf_placement).
type Placement int32

// The placements of wharf.h.
const (
	PlacementDevice Placement = C.WHARF_PLACEMENT_DEVICE // device memory (host memory on the host backend)
	PlacementHost   Placement = C.WHARF_PLACEMENT_HOST   // pinned host memory, even for a CUDA model
)

// String returns "device", "host", or "Placement(n)".
func (p Placement) String() string {
	switch p {
	case PlacementDevice:
		return "device"
	case PlacementHost:
		return "host"
	}
	return fmt.Sprintf("Placement(%d)", int32(p))
}

// ConstantFlags are a constant declaration's flags.
type ConstantFlags uint32

// ConstantDerived marks a constant computed by an update's Fold callback, never read
// from a map.
const ConstantDerived ConstantFlags = C.WHARF_CONSTANT_DERIVED

// UpdateTarget says which generation an update writes (wharf_update_target).
type UpdateTarget int32

// The update targets of wharf.h.
const (
	// TargetInactive writes the inactive generation; Swap publishes it.
	TargetInactive UpdateTarget = C.WHARF_TARGET_INACTIVE
	// TargetActiveInPlace writes and publishes at once, overwriting storage nothing else
	// uses (no extra memory). It waits for open runs that pinned a written constant up to
	// UpdateOptions.InPlaceMaxWait, then gives that constant fresh storage; runs begun
	// after it returns see the new data.
	TargetActiveInPlace UpdateTarget = C.WHARF_TARGET_ACTIVE_IN_PLACE
)

// MemoryTag indexes the per-tag figures of MemoryStats (wharf_memory_tag).
type MemoryTag int

// The allocation tags of wharf.h.
const (
	MemConstants MemoryTag = C.WHARF_MEM_CONSTANTS
	MemState     MemoryTag = C.WHARF_MEM_STATE
	MemStaging   MemoryTag = C.WHARF_MEM_STAGING
	MemWorkspace MemoryTag = C.WHARF_MEM_WORKSPACE
	MemOffload   MemoryTag = C.WHARF_MEM_OFFLOAD
	MemGraph     MemoryTag = C.WHARF_MEM_GRAPH
)

// MemTagCapacity is the number of slots in MemoryStats.Current and Peak.
const MemTagCapacity = C.WHARF_MEM_TAG_CAPACITY

// MaxDims is the largest number of dimensions a tensor may have.
const MaxDims = C.WHARF_MAX_DIMS

// SPDX-License-Identifier: Apache-2.0

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
	// Since 0.3: the rest of the safetensors format's dtypes.
	DTypeU16        DType = C.WHARF_DTYPE_U16
	DTypeU32        DType = C.WHARF_DTYPE_U32
	DTypeU64        DType = C.WHARF_DTYPE_U64
	DTypeC64        DType = C.WHARF_DTYPE_C64         // complex of two F32 (real, imaginary)
	DTypeF8E8M0     DType = C.WHARF_DTYPE_F8_E8M0     // OCP MX scale: 8-bit exponent only
	DTypeF8E4M3FNUZ DType = C.WHARF_DTYPE_F8_E4M3FNUZ // FP8 E4M3, finite, unsigned zero
	DTypeF8E5M2FNUZ DType = C.WHARF_DTYPE_F8_E5M2FNUZ // FP8 E5M2, finite, unsigned zero
	DTypeF4         DType = C.WHARF_DTYPE_F4          // OCP MXFP4 E2M1: 4 bits, two per byte
	DTypeF6E2M3     DType = C.WHARF_DTYPE_F6_E2M3     // OCP MXFP6: 6 bits, four per three bytes
	DTypeF6E3M2     DType = C.WHARF_DTYPE_F6_E3M2     // OCP MXFP6: 6 bits, four per three bytes
)

// Size returns the bytes per element; 0 for a dtype narrower than a byte (F4, F6_*: see
// Bits) and for a value outside the known types.
func (d DType) Size() int { return int(C.wharf_dtype_size(C.wharf_dtype(d))) }

// Bits returns the bits per element (4, 6, 8, 16, 32 or 64), or 0 for a value outside the
// known types. A tensor of n elements holds n * Bits / 8 bytes; tensors of the sub-byte
// dtypes must be contiguous and a whole number of bytes.
func (d DType) Bits() int { return int(C.wharf_dtype_bits(C.wharf_dtype(d))) }

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
	float32 | float64 | int8 | uint8 | int16 | int32 | int64 | uint16 | uint32 | uint64 | complex64
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
	case uint16:
		return DTypeU16
	case uint32:
		return DTypeU32
	case uint64:
		return DTypeU64
	case complex64:
		return DTypeC64
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

// SPDX-License-Identifier: Apache-2.0

package wharf

/*
#include "wharf.h"
*/
import "C"

import (
	"runtime"
	"unsafe"
)

// RuntimeOptions configures NewRuntime. The zero value (or a nil pointer) means the
// library's defaults: backend AUTO, device 0, no memory cap, automatic thread and staging
// sizes.
type RuntimeOptions struct {
	Backend           Backend // BackendAuto, BackendCUDA or BackendHost
	DeviceIndex       int32   // CUDA device ordinal
	DeviceMemoryLimit uint64  // bytes of device memory Wharf may hold; 0 = no cap
	CopyThreads       uint32  // host threads filling the pinned staging ring; 0 = auto
	StagingBytes      uint64  // size of the pinned staging ring; 0 = auto (4 MiB per copy thread)
}

// Runtime is one device (a CUDA GPU or the host backend), its streams, allocator and
// memory accounting. It is safe for concurrent use. Close it when done; containers
// created from it keep it alive until they are closed too.
type Runtime struct {
	h handle
}

// NewRuntime creates a runtime. opts may be nil for defaults. It fails if the loaded
// library's ABI differs from the binding's (see CheckVersion), with ErrUnsupported when
// CUDA is asked for but unavailable, and with ErrInvalidArgument for bad option values.
func NewRuntime(opts *RuntimeOptions) (*Runtime, error) {
	if err := CheckVersion(); err != nil {
		return nil, err
	}
	var o C.wharf_runtime_options
	C.wharf_runtime_options_init_sized(&o, C.sizeof_wharf_runtime_options) // this binding's struct size
	if opts != nil {
		o.backend = C.wharf_backend(opts.Backend)
		o.device_index = C.int32_t(opts.DeviceIndex)
		o.device_memory_limit = C.uint64_t(opts.DeviceMemoryLimit)
		o.copy_threads = C.uint32_t(opts.CopyThreads)
		o.staging_bytes = C.uint64_t(opts.StagingBytes)
	}
	var out *C.wharf_runtime
	if err := statusError(C.wharf_runtime_create(&o, &out)); err != nil {
		return nil, err
	}
	r := &Runtime{}
	r.h.init("runtime", unsafe.Pointer(out), func(p unsafe.Pointer) error {
		C.wharf_runtime_free((*C.wharf_runtime)(p))
		return nil
	})
	runtime.SetFinalizer(r, func(r *Runtime) { leaked(&r.h, "Close") })
	return r, nil
}

// Close releases the runtime. Later calls on it return an error matching ErrClosed.
// Containers still open keep the C runtime alive; it is freed (after its streams drain)
// when the last of them is closed. Close is idempotent and always returns nil.
func (r *Runtime) Close() error {
	if r == nil {
		return nil
	}
	_, err := r.h.close()
	return err
}

// Backend returns the backend the runtime chose (never BackendAuto), or BackendAuto if
// the runtime is closed.
func (r *Runtime) Backend() Backend {
	p, err := r.h.acquire("Runtime.Backend")
	if err != nil {
		return BackendAuto
	}
	defer r.h.release()
	b := Backend(C.wharf_runtime_backend((*C.wharf_runtime)(p)))
	runtime.KeepAlive(r)
	return b
}

// DeviceInfo describes a runtime's device.
type DeviceInfo struct {
	Backend      Backend
	DeviceIndex  int32
	Name         string // "NVIDIA H100 80GB HBM3", or "host"
	TotalMemory  uint64 // bytes; host backend: physical memory
	FreeMemory   uint64 // bytes at the time of the call
	ComputeMajor int32  // CUDA compute capability; 0 on the host backend
	ComputeMinor int32
}

// DeviceInfo describes the runtime's device.
func (r *Runtime) DeviceInfo() (DeviceInfo, error) {
	p, err := r.h.acquire("Runtime.DeviceInfo")
	if err != nil {
		return DeviceInfo{}, err
	}
	defer r.h.release()
	var info C.wharf_device_info
	info.struct_size = C.uint32_t(unsafe.Sizeof(info))
	err = statusError(C.wharf_runtime_get_device_info((*C.wharf_runtime)(p), &info))
	runtime.KeepAlive(r)
	if err != nil {
		return DeviceInfo{}, err
	}
	return DeviceInfo{
		Backend:      Backend(info.backend),
		DeviceIndex:  int32(info.device_index),
		Name:         C.GoString(&info.name[0]),
		TotalMemory:  uint64(info.total_memory),
		FreeMemory:   uint64(info.free_memory),
		ComputeMajor: int32(info.compute_major),
		ComputeMinor: int32(info.compute_minor),
	}, nil
}

// MemoryStats are the bytes Wharf holds. Current[tag] and Peak[tag] count every
// allocation with that tag (index them with MemConstants, MemStaging, ...), device and
// pinned host alike; Device* count device memory only (what DeviceMemoryLimit caps; on
// the host backend the host memory standing in for it); PinnedHost* count page-locked
// host memory.
type MemoryStats struct {
	Current           [MemTagCapacity]uint64
	Peak              [MemTagCapacity]uint64
	DeviceCurrent     uint64
	DevicePeak        uint64
	PinnedHostCurrent uint64
	PinnedHostPeak    uint64
}

// MemoryStats reads the runtime's memory figures.
func (r *Runtime) MemoryStats() (MemoryStats, error) {
	p, err := r.h.acquire("Runtime.MemoryStats")
	if err != nil {
		return MemoryStats{}, err
	}
	defer r.h.release()
	var s C.wharf_memory_stats
	s.struct_size = C.uint32_t(unsafe.Sizeof(s))
	err = statusError(C.wharf_runtime_get_memory_stats((*C.wharf_runtime)(p), &s))
	runtime.KeepAlive(r)
	if err != nil {
		return MemoryStats{}, err
	}
	var out MemoryStats
	for i := 0; i < MemTagCapacity; i++ {
		out.Current[i] = uint64(s.current[i])
		out.Peak[i] = uint64(s.peak[i])
	}
	out.DeviceCurrent = uint64(s.device_current)
	out.DevicePeak = uint64(s.device_peak)
	out.PinnedHostCurrent = uint64(s.pinned_host_current)
	out.PinnedHostPeak = uint64(s.pinned_host_peak)
	return out, nil
}

// ResetPeak sets every peak figure to its current value. It does nothing on a closed
// runtime.
func (r *Runtime) ResetPeak() {
	p, err := r.h.acquire("Runtime.ResetPeak")
	if err != nil {
		return
	}
	defer r.h.release()
	C.wharf_runtime_reset_peak((*C.wharf_runtime)(p))
	runtime.KeepAlive(r)
}

// Synchronize waits until all work Wharf enqueued on the runtime's own streams has
// finished. Errors: ErrDeviceError naming the failed work.
func (r *Runtime) Synchronize() error {
	p, err := r.h.acquire("Runtime.Synchronize")
	if err != nil {
		return err
	}
	defer r.h.release()
	err = statusError(C.wharf_runtime_synchronize((*C.wharf_runtime)(p)))
	runtime.KeepAlive(r)
	return err
}

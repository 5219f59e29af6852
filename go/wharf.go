// SPDX-License-Identifier: Apache-2.0

// Package wharf is the Go binding of Wharf, a runtime that keeps an inference model's
// weights (constants) and per-conversation state on a device and lets a serving process
// change them while it serves. Containers of one WeightStore share their weights; a
// Session holds one conversation's state (a KV cache, say) and is named on every run.
//
// The binding is a thin, safe layer over the library's C API (include/wharf/wharf.h):
//
//   - Every C handle is a Go type with an explicit, idempotent Close (End for a Run). A
//     finalizer frees a handle that was never closed, but only as a backstop: it logs the
//     leak through the standard log package.
//   - Handles keep their parents alive: a Container holds its Runtime and WeightStore, a
//     WeightStore its Runtime, a Session its Runtime and Containers, a Run its Container
//     and Session, and a ConstantMap the HostBuffers and maps whose memory it borrows.
//     Closing a parent first is allowed: the parent stops accepting calls at once (they
//     return an error matching ErrClosed), and its C object is freed when its last
//     dependent is closed. Close on a nil handle is a no-op.
//   - Every type is safe for concurrent use by multiple goroutines. Close never waits:
//     the handle refuses new calls at once, and its C object is freed when the last call
//     in progress returns. Callbacks (an update's fold) that call back into the API get
//     an error, never a deadlock.
//   - Errors from the library are *Error values carrying a Code and the library's message;
//     errors.Is(err, wharf.ErrNotFound) and errors.As(err, &werr) work as usual.
//
// # Go memory and the cgo pointer rules
//
// A wharf_constant_map keeps the data pointers of its tensors after the call that stored
// them returns, which the cgo rules forbid for Go memory. The binding therefore offers
// three ways to get tensor data into Wharf:
//
//   - HostBuffer: memory allocated with C.malloc that Go code can fill through an ordinary
//     slice. Tensors in it can be stored in a ConstantMap (no copy), saved to safetensors,
//     and bound to a container without a copy (Container.BindTensor).
//   - Container.UpdatePacked: an update straight from one Go []byte (no copy). It is legal
//     because the buffer is passed as a direct argument of a single C call that builds a
//     temporary map, updates the container and frees the map before returning; C keeps
//     no copy of the pointer.
//   - Container.UpdateFromHost: an update from any number of Go slices; the slices are
//     copied once into C memory, because one cgo call cannot legally receive a
//     variable number of Go pointers (an array of them would be Go or C memory holding
//     Go pointers, which the rules forbid).
//
// Memory Wharf itself owns (a safetensors file mapping, a run's tensors) is exposed as a
// Tensor that holds a reference to its owner: once the owner ends (Run.End,
// ConstantMap.Close), the tensor's accessors fail with ErrClosed instead of reading freed
// memory. No Go slice ever aliases memory Wharf or C owns (Values, Bytes, WithSlice and a
// HostBuffer's ReadAt, WriteAt, Bytes and HostSlice all copy), so safe Go code cannot reach
// freed memory; Tensor.Pointer and NewTensor are the unsafe.Pointer escape hatches.
//
// # Building
//
// The package carries its own copy of wharf.h and links against libwharf.so found with
// pkg-config (wharf.pc of an installed prefix), for example:
//
//	PKG_CONFIG_PATH=/opt/wharf/lib/pkgconfig CGO_LDFLAGS=-Wl,-rpath,/opt/wharf/lib go build
//
// With -tags wharf_no_pkg_config it links with -lwharf and takes the directory from
// CGO_LDFLAGS instead. The experimental tier of wharf.h (models) is compiled only in the
// files that use it.
package wharf

/*
#include "wharf.h"

// The binding's structs and constants were written against ABI 1.
_Static_assert(WHARF_ABI_VERSION == 1, "the Go binding was written for WHARF_ABI_VERSION 1");
*/
import "C"

import (
	"fmt"
	"sync"
)

// wharf.h is a copy of the repository's include/wharf/wharf.h, so that the module builds
// on its own; TestHeaderCopyEqualsPublicHeader keeps the two equal.
//go:generate cp ../include/wharf/wharf.h wharf.h

// ABIVersion is the ABI major version this binding was written for. The binding refuses
// (NewRuntime returns an error) a library whose wharf_abi_version() differs.
const ABIVersion = 1

// BindingVersion is the wharf.h version ("MAJOR.MINOR.PATCH") this binding was written
// against; the library may be newer (Version, VersionNumber).
const BindingVersion = "0.3.0"

// Version returns the library's version as "MAJOR.MINOR.PATCH".
func Version() string { return C.GoString(C.wharf_version()) }

// VersionNumber returns the library's version as major*10000 + minor*100 + patch (0.3.0 is
// 300).
func VersionNumber() uint32 { return uint32(C.wharf_version_number()) }

// LibraryABIVersion returns the ABI major version of the loaded libwharf.
func LibraryABIVersion() uint32 { return uint32(C.wharf_abi_version()) }

var versionOnce struct {
	sync.Once
	err error
}

// CheckVersion reports whether the loaded library speaks this binding's ABI. NewRuntime
// calls it, so programs need not; it is exported for programs that want to fail early.
func CheckVersion() error {
	versionOnce.Do(func() { versionOnce.err = checkABI(LibraryABIVersion()) })
	return versionOnce.err
}

func checkABI(library uint32) error {
	if library != ABIVersion {
		return &Error{
			Code: CodeFailedPrecondition,
			Message: fmt.Sprintf("libwharf ABI version %d does not match the Go binding's ABI version %d",
				library, ABIVersion),
		}
	}
	return nil
}

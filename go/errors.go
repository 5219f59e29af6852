// SPDX-License-Identifier: Apache-2.0

package wharf

/*
#include "wharf.h"
*/
import "C"

import (
	"errors"
	"fmt"
)

// Code is a Wharf result code (wharf_code). Values are stable across releases.
type Code int32

// The result codes of wharf.h.
const (
	CodeOK                 Code = C.WHARF_OK
	CodeInvalidArgument    Code = C.WHARF_INVALID_ARGUMENT    // an argument is malformed
	CodeNotFound           Code = C.WHARF_NOT_FOUND           // a named thing does not exist
	CodeAlreadyExists      Code = C.WHARF_ALREADY_EXISTS      // a name is taken
	CodeOutOfMemory        Code = C.WHARF_OUT_OF_MEMORY       // an allocation or the memory limit failed
	CodeResourceExhausted  Code = C.WHARF_RESOURCE_EXHAUSTED  // a budget other than memory was exceeded
	CodeFailedPrecondition Code = C.WHARF_FAILED_PRECONDITION // the object's state does not allow the call
	CodeBusy               Code = C.WHARF_BUSY                // in use by another caller; try later
	CodeUnsupported        Code = C.WHARF_UNSUPPORTED         // not available in this build or backend
	CodeDeviceError        Code = C.WHARF_DEVICE_ERROR        // the CUDA driver or runtime failed
	CodeIOError            Code = C.WHARF_IO_ERROR            // reading or writing a file failed
	CodeDataCorrupt        Code = C.WHARF_DATA_CORRUPT        // a file's contents are malformed
	CodeInternal           Code = C.WHARF_INTERNAL            // a bug in Wharf
	CodeCancelled          Code = C.WHARF_CANCELLED           // a progress callback cancelled the call; nothing changed
)

// String returns the library's name for the code ("INVALID_ARGUMENT"), or "UNKNOWN".
func (c Code) String() string { return C.GoString(C.wharf_code_name(C.wharf_code(c))) }

// Error is an error reported by the library (or by the binding's own argument checks,
// which use the same codes). Compare with errors.Is against the Err* sentinels, which
// match any *Error with the same Code, or use errors.As to read Code and Message.
type Error struct {
	Code    Code   // what kind of failure
	Message string // the library's message, naming the object and value at fault
}

// Error formats the error as "wharf: CODE: message".
func (e *Error) Error() string {
	if e.Message == "" {
		return "wharf: " + e.Code.String()
	}
	return "wharf: " + e.Code.String() + ": " + e.Message
}

// Is reports whether target is an *Error with the same Code and either no Message (the
// sentinels) or the same Message.
func (e *Error) Is(target error) bool {
	t, ok := target.(*Error)
	if !ok || t == nil {
		return false
	}
	return t.Code == e.Code && (t.Message == "" || t.Message == e.Message)
}

// Sentinels, one per code, for errors.Is.
var (
	ErrInvalidArgument    = &Error{Code: CodeInvalidArgument}
	ErrNotFound           = &Error{Code: CodeNotFound}
	ErrAlreadyExists      = &Error{Code: CodeAlreadyExists}
	ErrOutOfMemory        = &Error{Code: CodeOutOfMemory}
	ErrResourceExhausted  = &Error{Code: CodeResourceExhausted}
	ErrFailedPrecondition = &Error{Code: CodeFailedPrecondition}
	ErrBusy               = &Error{Code: CodeBusy}
	ErrUnsupported        = &Error{Code: CodeUnsupported}
	ErrDeviceError        = &Error{Code: CodeDeviceError}
	ErrIOError            = &Error{Code: CodeIOError}
	ErrDataCorrupt        = &Error{Code: CodeDataCorrupt}
	ErrInternal           = &Error{Code: CodeInternal}
	ErrCancelled          = &Error{Code: CodeCancelled}
)

// ErrClosed is matched (errors.Is) by the error a method returns when its handle, or the
// parent it needs, has already been closed.
var ErrClosed = errors.New("wharf: handle is closed")

// closedError reports a call on a closed handle; it matches ErrClosed.
type closedError struct{ op, kind string }

func (e *closedError) Error() string { return "wharf: " + e.op + ": the " + e.kind + " is closed" }
func (e *closedError) Unwrap() error { return ErrClosed }

func invalidArgument(format string, args ...any) error {
	return &Error{Code: CodeInvalidArgument, Message: fmt.Sprintf(format, args...)}
}

// statusError converts a wharf_status* to an error, taking ownership: the message is
// copied and the status is freed. NULL gives nil.
func statusError(st *C.wharf_status) error {
	if st == nil {
		return nil
	}
	e := &Error{
		Code:    Code(C.wharf_status_code(st)),
		Message: C.GoString(C.wharf_status_message(st)),
	}
	C.wharf_status_free(st)
	return e
}

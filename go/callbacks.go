// SPDX-License-Identifier: Apache-2.0

package wharf

// The Go functions C calls back. A file with //export may only declare in its preamble.

/*
#include <stdint.h>
#include <stdlib.h>
#include "helpers.h"
*/
import "C"

import (
	"errors"
	"fmt"
	"log"
	"runtime/cgo"
	"unsafe"
)

// wharfGoFold runs an update's Fold callback (the cgo.Handle h holds its *foldCall) on the
// updating goroutine's thread. A Go error or panic must not cross C++ frames, so both are
// stored in the foldCall and the update is aborted with a status made by wharf_status_create
// (foldStatus).
//
//export wharfGoFold
func wharfGoFold(run *C.wharf_run, h C.uintptr_t) (st *C.wharf_status) {
	fc := cgo.Handle(h).Value().(*foldCall)
	fr := &FoldRun{}
	fr.h.init("fold run", unsafe.Pointer(run), func(unsafe.Pointer) error { return nil })
	defer func() {
		fr.h.close() // the run belongs to the update: invalid once the callback returns
		if v := recover(); v != nil {
			fc.panicked, fc.panicVal = true, v
			st = newStatus(CodeInternal, fmt.Sprintf("the Go fold callback panicked: %v", v))
		}
	}()
	if err := fc.fn(fr); err != nil {
		fc.err = err
		return foldStatus(err)
	}
	return nil
}

// foldStatus is the status a failed Fold hands the library: an *Error's code and message
// (errors.As), or CodeFailedPrecondition and the error's text for any other error.
func foldStatus(err error) *C.wharf_status {
	var we *Error
	if errors.As(err, &we) {
		return newStatus(we.Code, we.Message)
	}
	return newStatus(CodeFailedPrecondition, err.Error())
}

// newStatus makes a library status (wharf_status_create copies the message).
func newStatus(code Code, message string) *C.wharf_status {
	cmsg := C.CString(message)
	defer C.free(unsafe.Pointer(cmsg))
	return C.wharf_status_create(C.wharf_code(code), cmsg)
}

// wharfGoRelease is called (from any thread, possibly a Wharf worker) once Wharf no longer
// references memory bound by Container.BindTensor. Releasing the owner may free a
// ConstantMap, a call into Wharf that a release callback must not make, so it is handed
// to a goroutine.
//
//export wharfGoRelease
func wharfGoRelease(h C.uintptr_t) {
	handle := cgo.Handle(h)
	release := handle.Value().(func())
	handle.Delete()
	go release()
}

// wharfGoLog forwards one log line to the handler installed by SetLogHandler.
//
//export wharfGoLog
func wharfGoLog(level C.int, message *C.char) {
	if fn := logHandler.Load(); fn != nil {
		msg := C.GoString(message)
		defer func() {
			if v := recover(); v != nil {
				// A panic must not unwind into the library's thread.
				log.Printf("wharf: the log handler panicked: %v", v)
			}
		}()
		(*fn)(LogLevel(level), msg)
	}
}

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

// wharfGoFold runs an update's Fold callback (the cgo.Handle h holds its *foldCall). It is
// called on the updating C thread, inside the library's update frames, so the callback
// itself runs on a helper goroutine (runFold) while this one waits: no Go control flow of
// the callback (an error, a panic, runtime.Goexit as t.FailNow calls it) can cross those C
// frames. Whatever the helper ended with comes back as a status made by
// wharf_status_create; withUpdate re-raises a panic or a Goexit once the library has
// returned.
//
//export wharfGoFold
func wharfGoFold(run *C.wharf_run, h C.uintptr_t) *C.wharf_status {
	fc := cgo.Handle(h).Value().(*foldCall)
	fr := &FoldRun{}
	fr.h.init("fold run", unsafe.Pointer(run), func(unsafe.Pointer) error { return nil })
	fr.h.shortRefs = true
	done := make(chan struct{})
	go runFold(fc, fr, foldStoresFor(fc.store), done)
	<-done
	// The run belongs to the update: invalid once the callback returns. Goroutines the
	// callback started may still be inside a FoldRun or tensor call (binding code only,
	// never a user callback): the library must not end the run under them.
	fr.h.closeAndWait()
	switch {
	case fc.panicked:
		return newStatus(CodeInternal, fmt.Sprintf("the Go fold callback panicked: %v", fc.panicVal))
	case fc.goexit:
		return newStatus(CodeInternal, "the Go fold callback called runtime.Goexit (as t.FailNow does) instead of returning")
	case fc.err != nil:
		return foldStatus(fc.err)
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

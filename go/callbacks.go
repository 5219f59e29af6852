package wharf

// The Go functions C calls back. A file with //export may only declare in its preamble.

/*
#include <stdint.h>
#include "helpers.h"
*/
import "C"

import (
	"log"
	"runtime/cgo"
	"unsafe"
)

// wharfGoFold runs an update's Fold callback (the cgo.Handle h holds its *foldCall) on the
// updating goroutine's thread. A Go error or panic must not cross C++ frames, so both are
// stored in the foldCall and the update is aborted with a library status.
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
			st = C.wharf_go_abort_status()
		}
	}()
	if err := fc.fn(fr); err != nil {
		fc.err = err
		return C.wharf_go_abort_status()
	}
	return nil
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

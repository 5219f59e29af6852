// SPDX-License-Identifier: Apache-2.0

package wharf

import (
	"runtime"
	"sync"
	"syscall"
)

// foldCall carries one update's Fold callback through C (as a cgo.Handle) and brings its
// outcome back.
type foldCall struct {
	fn       func(*FoldRun) error
	store    *handle // the weight store being updated; nil for a container's update
	err      error
	panicked bool
	panicVal any
	goexit   bool // the callback ended its goroutine (runtime.Goexit) instead of returning
}

// runFold runs the callback on a helper goroutine (see wharfGoFold) and closes done when
// the callback has returned, panicked or called runtime.Goexit. The goroutine is locked to
// its thread so that the weight store calls it makes can be recognised as coming from
// inside the store's own update (see foldStores).
func runFold(fc *foldCall, fr *FoldRun, stores []*handle, done chan<- struct{}) {
	runtime.LockOSThread()
	tid := syscall.Gettid()
	setFoldStores(tid, stores)
	returned := false
	defer func() {
		setFoldStores(tid, nil)
		if v := recover(); v != nil {
			fc.panicked, fc.panicVal = true, v
		} else if !returned {
			fc.goexit = true // runtime.Goexit, or panic(nil)
		}
		runtime.UnlockOSThread()
		close(done)
	}()
	fc.err = fc.fn(fr)
	returned = true
}

// foldStores maps the thread of a running fold goroutine to the weight stores whose update
// it is inside (its own update's store, and those of the updates it is nested in). The
// library refuses a store update or swap made on the thread running that store's update
// (FAILED_PRECONDITION rather than a wait that would never end); a fold goroutine runs on
// another thread, so the binding makes the same check for it (checkNotInStoreFold). Only a
// goroutine locked to a thread can be on a thread recorded here.
var foldStores struct {
	sync.Mutex
	byThread map[int][]*handle
}

func setFoldStores(tid int, stores []*handle) {
	foldStores.Lock()
	defer foldStores.Unlock()
	if stores == nil {
		delete(foldStores.byThread, tid)
		return
	}
	if foldStores.byThread == nil {
		foldStores.byThread = map[int][]*handle{}
	}
	foldStores.byThread[tid] = stores
}

// foldStoresFor returns the stores a fold started on the calling thread (a C callback's) is
// inside: those of the fold goroutine whose update called it, if any, plus store.
func foldStoresFor(store *handle) []*handle {
	foldStores.Lock()
	defer foldStores.Unlock()
	stores := append([]*handle{}, foldStores.byThread[syscall.Gettid()]...)
	if store != nil {
		stores = append(stores, store)
	}
	return stores
}

// checkNotInStoreFold fails with ErrFailedPrecondition when called from a fold goroutine
// of an update of store (or replica group) s, as the library does on the updating thread.
func checkNotInStoreFold(s *handle, what string) error {
	foldStores.Lock()
	defer foldStores.Unlock()
	for _, h := range foldStores.byThread[syscall.Gettid()] {
		if h == s {
			return &Error{Code: CodeFailedPrecondition, Message: what + ": called from inside this weight store's or replica group's update (a fold callback); it is busy with that update"}
		}
	}
	return nil
}

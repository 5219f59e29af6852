// SPDX-License-Identifier: Apache-2.0

package wharf

/*
#include "helpers.h"
*/
import "C"

import (
	"context"
	"errors"
	"runtime"
	"runtime/cgo"
)

// Progress and cancellation of long calls (wharf_progress_fn): the *Context variants of
// the updates, of NewContainerFromMap and of LoadModel take a context.Context, and their
// options a Progress func. The library calls back on the calling thread, inside the call,
// every 16 MiB copied and once more with done == total before it publishes or stages
// anything; the binding answers "cancel" once the context is done. The call then stops
// copying, waits for the copies in flight, releases what it allocated and returns an error
// that matches both ErrCancelled and the context's error (context.Canceled or
// context.DeadlineExceeded) under errors.Is, having changed nothing.

// progressCall is what one call's progress callback (wharfGoProgress) works with.
type progressCall struct {
	ctx      context.Context // nil: no context to watch
	fn       func(done, total uint64)
	byCtx    bool // the callback cancelled because ctx was done
	panicked bool
	panicVal any
	goexit   bool // fn ended its goroutine (runtime.Goexit) instead of returning
}

// newProgressCall returns nil when there is nothing to call back for: no Progress func and
// a context that can never be done.
func newProgressCall(ctx context.Context, fn func(done, total uint64)) *progressCall {
	if fn == nil && ctx.Done() == nil {
		return nil
	}
	return &progressCall{ctx: ctx, fn: fn}
}

// withProgress checks ctx, then runs call with the handle to pass as the C callback's
// user pointer (0 = no callback) and turns its status into the call's error: a panic or a
// runtime.Goexit of Progress is re-raised here, once the library has returned (having
// changed nothing), and a cancellation the context caused is wrapped with ctx.Err().
// inPlace: an in-place update, which refuses a callback (it cannot stop midway): without a
// Progress func it gets none, and ctx is checked only before the call.
func withProgress(what string, ctx context.Context, fn func(done, total uint64), inPlace bool, call func(h C.uintptr_t) error) error {
	if ctx == nil {
		return invalidArgument("%s: the context is nil", what)
	}
	if err := ctx.Err(); err != nil {
		return &cancelledError{status: &Error{Code: CodeCancelled, Message: what + ": the context was done before the call"}, cause: err}
	}
	pc := newProgressCall(ctx, fn)
	if pc == nil || (inPlace && fn == nil) {
		return call(0)
	}
	h := cgo.NewHandle(pc)
	defer h.Delete()
	err := call(C.uintptr_t(h))
	if pc.panicked {
		panic(pc.panicVal)
	}
	if pc.goexit {
		runtime.Goexit()
	}
	var we *Error
	if pc.byCtx && errors.As(err, &we) && we.Code == CodeCancelled {
		return &cancelledError{status: we, cause: ctx.Err()}
	}
	return err
}

// cancelledError is the error of a call its context cancelled: errors.Is matches both
// ErrCancelled (its status, also reachable with errors.As) and the context's error.
type cancelledError struct {
	status *Error
	cause  error
}

func (e *cancelledError) Error() string { return e.status.Error() + ": " + e.cause.Error() }

// Unwrap returns the library's status (an *Error with CodeCancelled).
func (e *cancelledError) Unwrap() error { return e.status }

// Is matches the context's error.
func (e *cancelledError) Is(target error) bool { return errors.Is(e.cause, target) }

// wharfGoProgress is the progress callback of every call made with a progressCall (the
// cgo.Handle h). It runs on the calling thread inside the library's frames, so Progress
// itself runs on a helper goroutine while this one waits: neither a panic nor
// runtime.Goexit can cross those C frames; either cancels the call.
//
//export wharfGoProgress
func wharfGoProgress(done, total C.uint64_t, h C.uintptr_t) C.int32_t {
	pc := cgo.Handle(h).Value().(*progressCall)
	if pc.fn != nil {
		finished := make(chan struct{})
		go runProgress(pc, uint64(done), uint64(total), finished)
		<-finished
		if pc.panicked || pc.goexit {
			return 1
		}
	}
	if pc.ctx != nil {
		select {
		case <-pc.ctx.Done():
			pc.byCtx = true
			return 1
		default:
		}
	}
	return 0
}

func runProgress(pc *progressCall, done, total uint64, finished chan<- struct{}) {
	returned := false
	defer func() {
		if v := recover(); v != nil {
			pc.panicked, pc.panicVal = true, v
		} else if !returned {
			pc.goexit = true
		}
		close(finished)
	}()
	pc.fn(done, total)
	returned = true
}

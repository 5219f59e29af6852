// SPDX-License-Identifier: Apache-2.0

package wharf

import (
	"errors"
	"runtime"
	"testing"
	"time"
)

// noHang runs f and fails the test if it has not returned within 10 s (a deadlock).
func noHang(t *testing.T, what string, f func()) {
	t.Helper()
	done := make(chan struct{})
	go func() {
		defer close(done)
		f()
	}()
	select {
	case <-done:
	case <-time.After(10 * time.Second):
		t.Fatalf("%s hangs", what)
	}
}

// A fold callback that calls back into the API gets an error (or, for Close, a handle
// closed once the update is done), never a hang.
func TestFoldCallingBackIntoTheAPI(t *testing.T) {
	c := foldContainer(t)
	w := []HostTensor{HostTensorOf("w", []int64{2, 3}, []float32{0, 1, 2, 3, 4, 5})}
	var nested []error
	fold := func(calls ...func() error) func(*FoldRun) error {
		return func(r *FoldRun) error {
			nested = nested[:0]
			for _, call := range calls {
				nested = append(nested, call())
			}
			return transpose(r)
		}
	}

	// Updating the container being updated: BUSY (the library admits one writer).
	noHang(t, "an update from a fold", func() {
		err := c.UpdateFromHost(w, &UpdateOptions{Fold: fold(
			func() error { return c.UpdateFromHost(w, &UpdateOptions{Fold: transpose}) },
			func() error {
				return c.UpdatePacked(make([]byte, 24), []PackedTensor{{Name: "w", DType: DTypeF32, Shape: []int64{2, 3}}}, &UpdateOptions{Fold: transpose})
			},
		)})
		must(t, err)
	})
	wantCode(t, nested[0], ErrBusy)
	wantCode(t, nested[1], ErrBusy)
	must(t, c.Swap())

	// The map being read by the update cannot change under it: Set answers BUSY.
	_, wt := bufferTensor(t, []int64{2, 3}, []float32{5, 4, 3, 2, 1, 0})
	m, err := NewConstantMap()
	must(t, err)
	defer m.Close()
	must(t, m.Set("w", wt))
	_, extra := bufferTensor(t, []int64{1}, []float32{9})
	noHang(t, "a map Set from a fold", func() {
		must(t, c.Update(m, &UpdateOptions{Fold: fold(func() error { return m.Set("extra", extra) })}))
	})
	wantCode(t, nested[0], ErrBusy, "extra")
	must(t, m.Set("extra", extra)) // fine once the update is done
	must(t, c.Swap())
	if v, _ := readRun[float32](t, c, "wt"); !equal(v, []float32{5, 2, 4, 1, 3, 0}) {
		t.Fatalf("wt = %v", v)
	}

	// Closing the container (and its runtime) inside its own update's fold: the handles
	// close at once, the C objects are freed when the update returns.
	rt := c.Runtime()
	noHang(t, "Close from a fold", func() {
		must(t, c.UpdateFromHost(w, &UpdateOptions{Fold: fold(c.Close, rt.Close)}))
	})
	must(t, nested[0])
	must(t, nested[1])
	if !freed(&c.h) || !freed(&rt.h) {
		t.Fatal("the container or runtime closed in a fold was not freed after the update")
	}
	wantClosed(t, c.Swap())
}

func TestStoreFoldCallingBackIntoTheAPI(t *testing.T) {
	store, plain, folded := foldStore(t)
	w := []HostTensor{HostTensorOf("w", []int64{2, 3}, []float32{0, 1, 2, 3, 4, 5})}
	var swapErr, updateErr, memberErr error
	noHang(t, "store calls from a store update's fold", func() {
		err := store.UpdateFromHost(w, &UpdateOptions{Fold: func(r *FoldRun) error {
			swapErr = store.Swap()
			updateErr = store.UpdateFromHost(w, &UpdateOptions{Fold: transpose})
			memberErr = folded.UpdateFromHost(w, &UpdateOptions{Fold: transpose})
			return transpose(r)
		}})
		must(t, err)
	})
	wantCode(t, swapErr, ErrFailedPrecondition)
	wantCode(t, updateErr, ErrFailedPrecondition)
	wantCode(t, memberErr, ErrBusy)
	must(t, store.Swap())
	if v, _ := readRun[float32](t, folded, "wt"); !equal(v, []float32{0, 3, 1, 4, 2, 5}) {
		t.Fatalf("wt = %v", v)
	}

	// A fold whose nested error aborts the update: the update fails with that code.
	noHang(t, "a fold returning a nested error", func() {
		err := store.UpdateFromHost(w, &UpdateOptions{Fold: func(*FoldRun) error { return store.Swap() }})
		var fe *FoldError
		if !errors.As(err, &fe) || fe.Status == nil || fe.Status.Code != CodeFailedPrecondition {
			t.Fatalf("update with a fold returning store.Swap's error: %v", err)
		}
	})
	noHang(t, "closing the store from its update's fold", func() {
		must(t, store.UpdateFromHost(w, &UpdateOptions{Fold: func(r *FoldRun) error {
			if err := store.Close(); err != nil {
				return err
			}
			return transpose(r)
		}}))
	})
	wantClosed(t, store.Swap())
	_ = plain
}

// goexitFold runs update with a fold that calls runtime.Goexit (what t.FailNow does) on a
// goroutine of its own, and reports whether that goroutine ended through the Goexit
// (rather than update returning).
func goexitFold(t *testing.T, update func(fold func(*FoldRun) error) error) {
	t.Helper()
	exited := make(chan bool, 1)
	go func() {
		returned := false
		defer func() { exited <- !returned }()
		_ = update(func(*FoldRun) error {
			runtime.Goexit()
			return nil
		})
		returned = true
	}()
	select {
	case goexit := <-exited:
		if !goexit {
			t.Fatal("the update returned although its fold called runtime.Goexit (it must reach the caller)")
		}
	case <-time.After(10 * time.Second):
		t.Fatal("an update whose fold called runtime.Goexit hangs")
	}
}

// runtime.Goexit in a fold unwinds no C frame: the update fails and changes nothing, the
// caller's goroutine exits after the library returned, and the container (or store) takes
// the next update instead of answering BUSY forever.
func TestFoldGoexitLeavesTheContainerUsable(t *testing.T) {
	c := foldContainer(t)
	w := []HostTensor{HostTensorOf("w", []int64{2, 3}, []float32{0, 1, 2, 3, 4, 5})}
	goexitFold(t, func(fold func(*FoldRun) error) error {
		return c.UpdateFromHost(w, &UpdateOptions{Fold: fold})
	})
	wantCode(t, c.Swap(), ErrFailedPrecondition) // nothing was staged
	noHang(t, "an update after a fold's Goexit", func() {
		must(t, c.UpdateFromHost(w, &UpdateOptions{Fold: transpose}))
	})
	must(t, c.Swap())
	if v, _ := readRun[float32](t, c, "wt"); !equal(v, []float32{0, 3, 1, 4, 2, 5}) {
		t.Fatalf("wt = %v", v)
	}

	store, _, folded := foldStore(t)
	goexitFold(t, func(fold func(*FoldRun) error) error {
		return store.UpdateFromHost(w, &UpdateOptions{Fold: fold})
	})
	noHang(t, "a store update after a fold's Goexit", func() {
		must(t, store.UpdateFromHost(w, &UpdateOptions{Fold: transpose}))
	})
	must(t, store.Swap())
	if v, _ := readRun[float32](t, folded, "wt"); !equal(v, []float32{0, 3, 1, 4, 2, 5}) {
		t.Fatalf("store member wt = %v", v)
	}
}

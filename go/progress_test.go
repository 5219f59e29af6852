// SPDX-License-Identifier: Apache-2.0

package wharf

import (
	"context"
	"errors"
	"path/filepath"
	"testing"
	"time"
)

// Progress and cancellation through a context: the C callback fires every 16 MiB, so the
// updates here move 48 MiB (three 16 MiB tensors) through a 1 MiB staging ring.

const progressFloats = 4 << 20 // 16 MiB of F32 per tensor

// progressWeights is a map of three host tensors "a", "b", "c", each filled with v.
func progressWeights(t *testing.T, v float32) *ConstantMap {
	t.Helper()
	m, err := NewConstantMap()
	must(t, err)
	t.Cleanup(func() { m.Close() })
	data := make([]float32, progressFloats)
	for i := range data {
		data[i] = v
	}
	for _, name := range []string{"a", "b", "c"} {
		_, tensor := bufferTensor(t, []int64{progressFloats}, data)
		must(t, m.Set(name, tensor))
	}
	return m
}

func progressRuntime(t *testing.T) *Runtime {
	return hostRuntime(t, func(o *RuntimeOptions) { o.CopyThreads = 2; o.StagingBytes = 1 << 20 })
}

// firstValues reads the first and last float of a, b and c through a run.
func firstValues(t *testing.T, c *Container) []float32 {
	t.Helper()
	var out []float32
	for _, name := range []string{"a", "b", "c"} {
		v, _ := readRun[float32](t, c, name)
		out = append(out, v[0], v[len(v)-1])
	}
	return out
}

func allEqual(vs []float32, want float32) bool {
	for _, v := range vs {
		if v != want {
			return false
		}
	}
	return true
}

// progressLog records the calls and checks their contract: total fixed, done never
// decreasing.
type progressLog struct {
	t    *testing.T
	seen [][2]uint64
}

func (p *progressLog) record(done, total uint64) {
	if n := len(p.seen); n > 0 && (done < p.seen[n-1][0] || total != p.seen[n-1][1]) {
		p.t.Errorf("progress went from %v to (%d, %d)", p.seen[n-1], done, total)
	}
	p.seen = append(p.seen, [2]uint64{done, total})
}

func wantCancelled(t *testing.T, err error, ctxErr error) {
	t.Helper()
	if !errors.Is(err, ErrCancelled) || !errors.Is(err, ctxErr) {
		t.Fatalf("got %v; want an error matching ErrCancelled and %v", err, ctxErr)
	}
	var we *Error
	if !errors.As(err, &we) || we.Code != CodeCancelled {
		t.Fatalf("errors.As(%v) gives no *Error with CodeCancelled", err)
	}
}

func TestUpdateContextCancelledMidCopyChangesNothing(t *testing.T) {
	rt := progressRuntime(t)
	c, err := NewContainerFromMap(rt, progressWeights(t, 1), "m")
	must(t, err)
	defer c.Close()
	gen := c.Generation()
	v2 := progressWeights(t, 2)

	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	log := &progressLog{t: t}
	err = c.UpdateContext(ctx, v2, &UpdateOptions{Progress: func(done, total uint64) {
		log.record(done, total)
		cancel() // the binding's check after this call answers "cancel"
	}})
	wantCancelled(t, err, context.Canceled)
	if len(log.seen) != 1 || log.seen[0][0] >= log.seen[0][1] {
		t.Fatalf("progress calls %v: want one, mid-copy", log.seen)
	}
	if c.Generation() != gen {
		t.Fatalf("generation %d after a cancelled update, want %d", c.Generation(), gen)
	}
	wantCode(t, c.Swap(), ErrFailedPrecondition) // nothing was staged
	if v := firstValues(t, c); !allEqual(v, 1) {
		t.Fatalf("values %v after a cancelled update", v)
	}

	// The next update goes through, reporting monotone progress that ends at the total.
	log = &progressLog{t: t}
	must(t, c.UpdateContext(context.Background(), v2, &UpdateOptions{Progress: log.record}))
	const total = 3 * 4 * progressFloats
	if len(log.seen) < 2 || log.seen[len(log.seen)-1] != [2]uint64{total, total} {
		t.Fatalf("progress calls %v: want several, the last (%d, %d)", log.seen, total, total)
	}
	must(t, c.Swap())
	if v := firstValues(t, c); !allEqual(v, 2) {
		t.Fatalf("values %v after the update", v)
	}
}

func TestUpdateContextDeadlineAndDoneContexts(t *testing.T) {
	rt := progressRuntime(t)
	c, err := NewContainerFromMap(rt, progressWeights(t, 1), "m")
	must(t, err)
	defer c.Close()
	v2 := progressWeights(t, 2)

	// A context already done: the call does not start.
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	wantCancelled(t, c.UpdateContext(ctx, v2, nil), context.Canceled)

	// A deadline passing mid-copy (no Progress func: the context alone installs the callback).
	ctx, cancel = context.WithTimeout(context.Background(), time.Hour)
	defer cancel()
	dl, cancelDL := context.WithDeadline(ctx, time.Now())
	defer cancelDL()
	<-dl.Done()
	wantCancelled(t, c.UpdateContext(dl, v2, nil), context.DeadlineExceeded)

	// A nil context is an argument error.
	//nolint:staticcheck // on purpose
	wantCode(t, c.UpdateContext(nil, v2, nil), ErrInvalidArgument, "context")
	if v := firstValues(t, c); !allEqual(v, 1) {
		t.Fatalf("values %v after refused updates", v)
	}
}

func TestProgressPanicCancelsAndIsReraised(t *testing.T) {
	rt := progressRuntime(t)
	c, err := NewContainerFromMap(rt, progressWeights(t, 1), "m")
	must(t, err)
	defer c.Close()
	v2 := progressWeights(t, 2)
	func() {
		defer func() {
			if r := recover(); r != "boom" {
				t.Fatalf("recovered %v, want the callback's panic", r)
			}
		}()
		_ = c.Update(v2, &UpdateOptions{Progress: func(done, total uint64) { panic("boom") }})
		t.Fatal("Update returned after its Progress panicked")
	}()
	wantCode(t, c.Swap(), ErrFailedPrecondition)
	if v := firstValues(t, c); !allEqual(v, 1) {
		t.Fatalf("values %v after a panicking Progress", v)
	}
	must(t, c.Update(v2, nil))
}

func TestStoreFileAndCreateContextsCancel(t *testing.T) {
	rt := progressRuntime(t)
	v1 := progressWeights(t, 1)

	// NewContainerFromMapContext: a cancelled load creates nothing.
	ctx, cancel := context.WithCancel(context.Background())
	c, err := NewContainerFromMapContext(ctx, rt, v1, &ContainerOptions{Name: "m", Progress: func(done, total uint64) { cancel() }})
	wantCancelled(t, err, context.Canceled)
	if c != nil {
		t.Fatal("a cancelled NewContainerFromMapContext returned a container")
	}
	log := &progressLog{t: t}
	c, err = NewContainerFromMapContext(context.Background(), rt, v1, &ContainerOptions{Name: "m", Progress: log.record})
	must(t, err)
	defer c.Close()
	if n := len(log.seen); n == 0 || log.seen[n-1][0] != log.seen[n-1][1] {
		t.Fatalf("create progress %v does not end at its total", log.seen)
	}

	// From a file.
	path := filepath.Join(t.TempDir(), "v2.safetensors")
	must(t, progressWeights(t, 2).Save(path))
	ctx, cancel = context.WithCancel(context.Background())
	err = c.UpdateFromFileContext(ctx, path, &UpdateOptions{Progress: func(done, total uint64) { cancel() }})
	wantCancelled(t, err, context.Canceled)
	wantCode(t, c.Swap(), ErrFailedPrecondition)

	// A weight store: no member staged.
	store, err := NewWeightStore(rt)
	must(t, err)
	defer store.Close()
	member, err := NewContainerFromMapOptions(rt, v1, &ContainerOptions{Name: "member", Store: store})
	must(t, err)
	defer member.Close()
	ctx, cancel = context.WithCancel(context.Background())
	err = store.UpdateContext(ctx, progressWeights(t, 3), &UpdateOptions{Progress: func(done, total uint64) { cancel() }})
	wantCancelled(t, err, context.Canceled)
	wantCode(t, store.Swap(), ErrFailedPrecondition)
	ctx, cancel = context.WithCancel(context.Background())
	err = store.UpdateFromFileContext(ctx, path, &UpdateOptions{Progress: func(done, total uint64) { cancel() }})
	wantCancelled(t, err, context.Canceled)
	must(t, store.UpdateFromFileContext(context.Background(), path, nil))
	must(t, store.Swap())
	if v := firstValues(t, member); !allEqual(v, 2) {
		t.Fatalf("member values %v after the store update", v)
	}
}

func TestInPlaceUpdateContextWatchesTheContextOnlyBeforeTheCall(t *testing.T) {
	rt := hostRuntime(t)
	c, err := NewContainerFromMap(rt, replicaMap(t, 1), "m")
	must(t, err)
	defer c.Close()
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	inPlace := &UpdateOptions{Target: TargetActiveInPlace}
	must(t, c.UpdateContext(ctx, replicaMap(t, 2), inPlace)) // no callback: the library refuses one here
	if w, _ := readRun[float32](t, c, "w"); w[0] != 2 {
		t.Fatalf("in-place update with a context: %v", w)
	}
	wantCode(t, c.UpdateContext(ctx, replicaMap(t, 3), &UpdateOptions{Target: TargetActiveInPlace,
		Progress: func(done, total uint64) {}}), ErrUnsupported)
	cancel()
	wantCancelled(t, c.UpdateContext(ctx, replicaMap(t, 3), inPlace), context.Canceled)
}

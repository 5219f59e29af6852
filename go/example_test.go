// SPDX-License-Identifier: Apache-2.0

package wharf_test

import (
	"context"
	"errors"
	"fmt"
	"log"
	"os"
	"path/filepath"

	"wharf.dev/wharf"
)

// The README's example: write a safetensors file, serve it from a container, and hot-swap
// new weights from Go memory while a run of the old generation is still open.
func Example() {
	dir, err := os.MkdirTemp("", "wharf-example")
	if err != nil {
		log.Fatal(err)
	}
	defer os.RemoveAll(dir)
	path := filepath.Join(dir, "model.safetensors")

	// 1. Write a checkpoint. Map entries borrow their data, so it lives in C memory.
	weights, err := wharf.NewHostBufferFrom([]float32{1, 2, 3, 4, 5, 6})
	if err != nil {
		log.Fatal(err)
	}
	defer weights.Close()
	w, err := weights.Tensor(0, wharf.DTypeF32, []int64{2, 3})
	if err != nil {
		log.Fatal(err)
	}
	m, err := wharf.NewConstantMap()
	if err != nil {
		log.Fatal(err)
	}
	if err := m.Set("layers.0.weight", w); err != nil {
		log.Fatal(err)
	}
	if err := m.Save(path); err != nil {
		log.Fatal(err)
	}
	m.Close()

	// 2. Serve it: a runtime (host backend here; BackendAuto picks a GPU when there is
	// one) and a container created from the memory-mapped file.
	rt, err := wharf.NewRuntime(&wharf.RuntimeOptions{Backend: wharf.BackendHost})
	if err != nil {
		log.Fatal(err)
	}
	defer rt.Close()
	file, err := wharf.LoadSafetensors(path)
	if err != nil {
		log.Fatal(err)
	}
	model, err := wharf.NewContainerFromMap(rt, file, "demo")
	file.Close() // the container holds its own copy of the weights
	if err != nil {
		log.Fatal(err)
	}
	defer model.Close()

	// 3. A run pins the active generation and resolves constants to storage.
	before, err := model.BeginRun()
	if err != nil {
		log.Fatal(err)
	}
	t, err := before.Tensor("layers.0.weight")
	if err != nil {
		log.Fatal(err)
	}
	old, _ := wharf.Values[float32](t)
	fmt.Println("generation", before.Generation(), "weight", t.Shape(), old)

	// 4. Hot update from Go memory into the inactive generation, then swap.
	fresh := []float32{10, 20, 30, 40, 50, 60}
	err = model.UpdateFromHost([]wharf.HostTensor{
		wharf.HostTensorOf("layers.0.weight", []int64{2, 3}, fresh),
	}, nil)
	if err != nil {
		log.Fatal(err)
	}
	if err := model.Swap(); err != nil {
		log.Fatal(err)
	}

	// 5. New runs see the new weights; the open run still sees the old ones.
	after, err := model.BeginRun()
	if err != nil {
		log.Fatal(err)
	}
	t2, _ := after.Tensor("layers.0.weight")
	now, _ := wharf.Values[float32](t2)
	stale, _ := wharf.Values[float32](t)
	fmt.Println("generation", after.Generation(), "weight", now)
	fmt.Println("open run still reads", stale)
	if err := after.End(); err != nil {
		log.Fatal(err)
	}
	if err := before.End(); err != nil {
		log.Fatal(err)
	}
	// Output:
	// generation 1 weight [2 3] [1 2 3 4 5 6]
	// generation 2 weight [10 20 30 40 50 60]
	// open run still reads [1 2 3 4 5 6]
}

// The README's sessions example: two methods of one model share their weights through a
// weight store, and every conversation keeps its own state in a session.
func Example_sessions() {
	check := func(err error) {
		if err != nil {
			log.Fatal(err)
		}
	}
	rt, err := wharf.NewRuntime(&wharf.RuntimeOptions{Backend: wharf.BackendHost})
	check(err)
	defer rt.Close()

	// 1. Prefill and decode share "embed" through a store, and both declare the
	// per-conversation state "kv" (zeros to start with).
	store, err := wharf.NewWeightStore(rt)
	check(err)
	defer store.Close()
	var methods []*wharf.Container
	for _, name := range []string{"prefill", "decode"} {
		c, err := wharf.NewContainer(rt, &wharf.ContainerOptions{
			Name:      name,
			Store:     store,
			Constants: []wharf.ConstantDecl{{FQN: "embed", DType: wharf.DTypeF32, Shape: []int64{1024}}},
			States:    []wharf.StateDecl{{FQN: "kv", DType: wharf.DTypeF32, Shape: []int64{4}}},
		})
		check(err)
		defer c.Close()
		methods = append(methods, c)
	}
	prefill, decode := methods[0], methods[1]

	// 2. One store update writes "embed" once for both; the swap publishes it to both.
	check(store.UpdateFromHost([]wharf.HostTensor{
		wharf.HostTensorOf("embed", []int64{1024}, make([]float32, 1024)),
	}, nil))
	check(store.Swap())
	stats, err := store.Stats()
	check(err)
	fmt.Println("weights:", stats.NumUniqueConstants, "stored,", stats.NumReferences, "used, bytes saved:", stats.SavedBytes)

	// 3. A session per conversation, named on every run (one run at a time). A state is
	// initialised on the run's stream: Read waits for it before the host writes the state.
	chat, err := wharf.NewSession(rt, []*wharf.Container{prefill, decode}, nil)
	check(err)
	defer chat.Close()
	run, err := prefill.BeginRunWithSession(chat)
	check(err)
	kv, err := wharf.ReadValues[float32](run, "kv")
	check(err)
	fmt.Println("new conversation:", kv)
	t, err := run.Tensor("kv")
	check(err)
	check(wharf.SetValues(t, []float32{1, 2, 3, 4})) // host memory on the host backend
	check(run.End())

	// 4. Decode sees what prefill wrote in the same session; a fork branches the
	// conversation; Reset starts it over.
	branch, err := chat.Fork()
	check(err)
	defer branch.Close()
	check(chat.Reset())
	for _, s := range []*wharf.Session{branch, chat} {
		run, err := decode.BeginRunWithSession(s)
		check(err)
		kv, err := wharf.ReadValues[float32](run, "kv")
		check(err)
		fmt.Println("decode reads:", kv)
		check(run.End())
	}
	// Output:
	// weights: 1 stored, 2 used, bytes saved: 4096
	// new conversation: [0 0 0 0]
	// decode reads: [1 2 3 4]
	// decode reads: [0 0 0 0]
}

// The README's cancellation example: an update that its context cancels changes nothing.
func Example_cancellation() {
	check := func(err error) {
		if err != nil {
			log.Fatal(err)
		}
	}
	rt, err := wharf.NewRuntime(&wharf.RuntimeOptions{Backend: wharf.BackendHost})
	check(err)
	defer rt.Close()
	buf, err := wharf.NewHostBufferFrom([]float32{1, 2, 3, 4})
	check(err)
	defer buf.Close()
	w, err := buf.Tensor(0, wharf.DTypeF32, []int64{4})
	check(err)
	weights, err := wharf.NewConstantMap()
	check(err)
	defer weights.Close()
	check(weights.Set("w", w))
	model, err := wharf.NewContainerFromMap(rt, weights, "demo")
	check(err)
	defer model.Close()

	// Progress is told the bytes copied (every 16 MiB, and once at the end, before
	// anything is staged); the library checks ctx at each of these points.
	ctx, cancel := context.WithCancel(context.Background())
	err = model.UpdateContext(ctx, weights, &wharf.UpdateOptions{
		Progress: func(done, total uint64) {
			fmt.Println("copied", done, "of", total, "bytes; cancelling")
			cancel() // as a deadline or a client going away would
		},
	})
	fmt.Println(errors.Is(err, context.Canceled), errors.Is(err, wharf.ErrCancelled))
	fmt.Println("staged:", model.Swap() == nil) // a cancelled update changes nothing
	// Output:
	// copied 16 of 16 bytes; cancelling
	// true true
	// staged: false
}

// The README's model example (experimental tier): the committed tiny decoder
// (tests/data/models/tiny_decoder, compiled by PyTorch's AOTInductor without libtorch)
// served by Wharf: the weights file, the model, a session, prefill and greedy decoding
// with Model.Run, then a hot weight update. It needs a GPU, a CUDA build of libwharf and
// its libwharf_aoti_shim.so; without a GPU it says so and returns. go test compiles it;
// TestExampleModel runs it and checks its tokens against PyTorch's.
func Example_model() {
	check := func(err error) {
		if err != nil {
			log.Fatal(err)
		}
	}
	dir := "../tests/data/models/tiny_decoder"
	if d := os.Getenv("WHARF_MODEL_DIR"); d != "" {
		dir = d
	}
	rt, err := wharf.NewRuntime(&wharf.RuntimeOptions{Backend: wharf.BackendCUDA})
	if err != nil {
		fmt.Println("skipped: this example needs a GPU:", err)
		return
	}
	defer rt.Close()

	// 1. The weights file, plus the KV caches' shapes and zero initial values (the
	// model's mutated buffers become per-session state).
	weights, err := wharf.LoadSafetensors(filepath.Join(dir, "tiny_decoder.safetensors"))
	check(err)
	defer weights.Close()
	zeros, err := wharf.NewHostBuffer(4 * 64 * 16 * 4)
	check(err)
	defer zeros.Close()
	cache, err := zeros.Tensor(0, wharf.DTypeF32, []int64{1, 4, 64, 16})
	check(err)
	for _, name := range []string{"layers.0.k_cache", "layers.0.v_cache", "layers.1.k_cache", "layers.1.v_cache"} {
		check(weights.Set(name, cache))
	}

	// 2. The model: its parameters become the constants of its container, loaded and active.
	model, err := wharf.LoadModel(rt, filepath.Join(dir, "tiny_decoder.so"), weights, &wharf.ModelOptions{Name: "tiny"})
	check(err)
	defer model.Close()
	fmt.Println("inputs:", model.NumInputs(), "outputs:", model.NumOutputs())

	// 3. The prompt, and the tokens PyTorch decoded from it.
	ref, err := wharf.LoadSafetensors(filepath.Join(dir, "reference.safetensors"))
	check(err)
	defer ref.Close()
	p, err := ref.Find("prompt")
	check(err)
	prompt, err := wharf.Values[int64](p)
	check(err)
	w, err := ref.Find("tokens")
	check(err)
	want, err := wharf.Values[int64](w)
	check(err)

	// 4. A session holds the conversation's KV caches. One run per step: prefill with the
	// prompt, then greedy decoding one token at a time. Inputs in Go memory are copied to
	// the device on the run's stream; the outputs are device tensors the run owns.
	chat, err := wharf.NewSession(rt, []*wharf.Container{model.Container()}, nil)
	check(err)
	defer chat.Close()
	var got []int64
	var logits wharf.Tensor
	tokens, pos := prompt, int64(0)
	for len(got) < len(want) {
		positions := make([]int64, len(tokens))
		for i := range positions {
			positions[i] = pos + int64(i)
		}
		run, err := model.Container().BeginRunWithSession(chat)
		check(err)
		outs, err := model.Run(run,
			wharf.HostTensorOf("tokens", []int64{1, int64(len(tokens))}, tokens),
			wharf.HostTensorOf("positions", []int64{int64(len(positions))}, positions))
		check(err)
		logits = outs[0] // [1, len(tokens), vocab] F32 on the device
		all, err := wharf.ReadTensorValues[float32](run, logits)
		check(err)
		check(run.End()) // the outputs are freed after the run's work
		vocab := int(logits.Shape()[2])
		last, next := all[len(all)-vocab:], 0
		for i := range last {
			if last[i] > last[next] {
				next = i
			}
		}
		got = append(got, int64(next))
		pos += int64(len(tokens))
		tokens = []int64{int64(next)}
	}
	fmt.Println("tokens:", got)
	fmt.Println("same as PyTorch:", fmt.Sprint(got) == fmt.Sprint(want))
	_, err = logits.Pointer()
	fmt.Println("an output after its run ended:", errors.Is(err, wharf.ErrClosed))

	// 5. A hot update from Go memory and a swap: the conversation goes on with new weights.
	c := model.Container()
	norm := make([]float32, 64)
	for i := range norm {
		norm[i] = 1.5
	}
	check(c.UpdateFromHost([]wharf.HostTensor{wharf.HostTensorOf("norm.weight", []int64{64}, norm)}, nil))
	check(c.Swap())
	run, err := c.BeginRunWithSession(chat)
	check(err)
	seen, err := wharf.ReadValues[float32](run, "norm.weight")
	check(err)
	check(run.End())
	fmt.Println("norm.weight after the update:", seen[0])
}

// A model package (docs/model-package.md, written by tools/export) loaded in one call:
// prefill the prompt, decode greedily, then update every method's weights from a file.
// It needs a GPU and a package ($WHARF_MODEL_PACKAGE); TestExamplePackage runs it there.
func Example_package() {
	check := func(err error) {
		if err != nil {
			log.Fatal(err)
		}
	}
	dir := os.Getenv("WHARF_MODEL_PACKAGE") // a package directory, "llama.wharf" say
	if dir == "" {
		fmt.Println("skipped: this example needs a model package: set $WHARF_MODEL_PACKAGE")
		return
	}
	rt, err := wharf.NewRuntime(&wharf.RuntimeOptions{Backend: wharf.BackendCUDA})
	if err != nil {
		fmt.Println("skipped: this example needs a GPU:", err)
		return
	}
	defer rt.Close()

	// 1. The package in one call: the weights once, every method over them, the state
	// (KV caches) declared with its shapes and initial values.
	pkg, err := wharf.LoadModelPackage(rt, dir, nil)
	check(err)
	defer pkg.Close()
	prefill, err := pkg.Method("prefill")
	check(err)
	defer prefill.Close()
	decode, err := pkg.Method("decode")
	check(err)
	defer decode.Close()

	// 2. A conversation: one session over every method, so prefill and decode share its
	// KV cache.
	chat, err := pkg.NewSession(nil)
	check(err)
	defer chat.Close()

	// step runs a method on tokens at positions pos, pos+1, ... and returns the most
	// likely next token (the argmax of the last position's logits).
	step := func(m *wharf.Model, tokens []int64, pos int64) int64 {
		positions := make([]int64, len(tokens))
		for i := range positions {
			positions[i] = pos + int64(i)
		}
		run, err := m.Container().BeginRunWithSession(chat)
		check(err)
		outs, err := m.Run(run,
			wharf.HostTensorOf("input_ids", []int64{1, int64(len(tokens))}, tokens),
			wharf.HostTensorOf("cache_position", []int64{int64(len(positions))}, positions))
		check(err)
		logits, err := wharf.ReadTensorValues[float32](run, outs[0]) // F32 [1, T or 1, vocab]
		check(err)
		check(run.End())
		shape := outs[0].Shape()
		last, next := logits[len(logits)-int(shape[len(shape)-1]):], 0
		for i := range last {
			if last[i] > last[next] {
				next = i
			}
		}
		return int64(next)
	}

	// 3. Prefill the prompt, then decode greedily, one token per step.
	prompt := []int64{1, 7, 42, 3}
	tokens := []int64{step(prefill, prompt, 0)}
	for len(tokens) < 8 {
		pos := int64(len(prompt) + len(tokens) - 1)
		tokens = append(tokens, step(decode, tokens[len(tokens)-1:], pos))
	}
	fmt.Println("tokens:", tokens)

	// 4. New weights from a checkpoint with the same FQNs (a fine-tune; here the package's
	// own file again) reach every method at once; the conversation goes on.
	check(pkg.Store().UpdateFromFile(filepath.Join(dir, "weights", "model.safetensors"), nil))
	check(pkg.Store().Swap())
	fmt.Println("after the update:", step(decode, tokens[len(tokens)-1:], int64(len(prompt)+len(tokens)-1)))
}

// State arenas and a batched run on the host backend (README.md, "State arenas, batched
// runs and CUDA graphs").
func Example_arena() {
	check := func(err error) {
		if err != nil {
			log.Fatal(err)
		}
	}
	rt, err := wharf.NewRuntime(&wharf.RuntimeOptions{Backend: wharf.BackendHost})
	check(err)
	defer rt.Close()

	// prefill makes an arena of 64 sessions; decode keeps its states in it too.
	states := []wharf.StateDecl{{FQN: "kv", DType: wharf.DTypeF32, Shape: []int64{4}}}
	prefill, err := wharf.NewContainer(rt, &wharf.ContainerOptions{Name: "prefill", States: states, SessionCapacity: 64})
	check(err)
	defer prefill.Close()
	decode, err := wharf.NewContainer(rt, &wharf.ContainerOptions{Name: "decode", States: states, StateArenaOf: prefill})
	check(err)
	defer decode.Close()
	check(decode.UpdateFromHost(nil, nil)) // no constants: an empty first generation
	check(decode.Swap())

	// Each session takes a slot; one run pins a generation for both.
	a, err := wharf.NewSession(rt, []*wharf.Container{prefill, decode}, nil)
	check(err)
	defer a.Close()
	b, err := wharf.NewSession(rt, []*wharf.Container{prefill, decode}, nil)
	check(err)
	defer b.Close()
	run, err := decode.BeginBatch(b, a)
	check(err)
	idx, err := run.SlotIndices() // int64 [2]: b's slot, a's slot
	check(err)
	slots, err := wharf.ReadTensorValues[int64](run, idx)
	check(err)
	kv, err := run.Tensor("kv") // the whole arena; a kernel on run.Stream() writes its rows
	check(err)
	fmt.Println("slots:", slots[0] == b.Slot(), slots[1] == a.Slot(), "arena:", kv.Shape())
	check(run.End())
	stats, err := prefill.StateArenaStats()
	check(err)
	fmt.Printf("%d of %d slots used, %d bytes\n", stats.NumSlotsUsed, stats.NumSlots, stats.Bytes)
	// Output:
	// slots: true true arena: [64 4]
	// 2 of 64 slots used, 1024 bytes
}

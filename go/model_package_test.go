// SPDX-License-Identifier: Apache-2.0

package wharf

import (
	"context"
	"encoding/binary"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"unsafe"
)

// Model packages on the host backend: a package crafted here (manifest, safetensors
// shards, a state file, placeholder method files: what tests/unit/model_package_test.cpp
// writes) is checked whole before its first method, which needs the CUDA backend; the
// refusals before that surface as *Error values with the library's codes and messages.

// testManifest is the valid manifest every test starts from.
const testManifest = `{
  "format": "wharf-model-package",
  "format_version": 1,
  "name": "tiny",
  "dtype": "float32",
  "max_seq_len": 64,
  "weights": {
    "files": ["weights/model-00001-of-00002.safetensors", "weights/model-00002-of-00002.safetensors"],
    "parameters": [
      {"fqn": "embed.weight", "dtype": "float32", "shape": [8, 4]},
      {"fqn": "norm.weight", "dtype": "bfloat16", "shape": [4]},
      {"fqn": "lm_head.weight", "dtype": "F32", "shape": [8, 4]}
    ]
  },
  "state": [
    {"fqn": "cache.key_0", "dtype": "float32", "shape": [1, 2, 64, 2], "initial": "zeros"},
    {"fqn": "cache.pos", "dtype": "int64", "shape": [1], "initial": {"tensor": "pos0"}}
  ],
  "state_file": "state.safetensors",
  "methods": [
    {"name": "prefill", "file": "methods/prefill.so",
     "inputs": [{"name": "input_ids", "dtype": "int64", "shape": [1, "T"]},
                {"name": "cache_position", "dtype": "int64", "shape": ["T"]}],
     "outputs": [{"name": "logits", "dtype": "float32", "shape": [1, 1, 8]}],
     "dims": {"T": {"min": 1, "max": 64}}},
    {"name": "decode", "file": "methods/decode.so",
     "inputs": [{"name": "input_ids", "dtype": "int64", "shape": [1, 1]},
                {"name": "cache_position", "dtype": "int64", "shape": [1]}],
     "outputs": [{"name": "logits", "dtype": "float32", "shape": [1, 1, 8]}]}
  ]
}`

// stTensor is one tensor of a crafted safetensors file (zero-filled data).
type stTensor struct {
	name, dtype, shape string
	bytes              int
}

// safetensorsImage lays the tensors out as the reference implementation does.
func safetensorsImage(ts ...stTensor) []byte {
	var h strings.Builder
	h.WriteString("{")
	off := 0
	for i, t := range ts {
		if i > 0 {
			h.WriteString(",")
		}
		fmt.Fprintf(&h, `"%s":{"dtype":"%s","shape":%s,"data_offsets":[%d,%d]}`, t.name, t.dtype, t.shape, off, off+t.bytes)
		off += t.bytes
	}
	h.WriteString("}")
	header := h.String()
	for len(header)%8 != 0 {
		header += " "
	}
	out := binary.LittleEndian.AppendUint64(nil, uint64(len(header)))
	out = append(out, header...)
	return append(out, make([]byte, off)...)
}

// writePackage writes a valid package, with manifest (which edit may change), into a
// new temporary directory and returns its path (".../tiny.wharf").
func writePackage(t *testing.T, edit func(manifest string) string) string {
	t.Helper()
	dir := filepath.Join(t.TempDir(), "tiny.wharf")
	files := map[string][]byte{
		"weights/model-00001-of-00002.safetensors": safetensorsImage(
			stTensor{"embed.weight", "F32", "[8,4]", 128}, stTensor{"norm.weight", "BF16", "[4]", 8}),
		"weights/model-00002-of-00002.safetensors": safetensorsImage(stTensor{"lm_head.weight", "F32", "[8,4]", 128}),
		"state.safetensors":                        safetensorsImage(stTensor{"pos0", "I64", "[1]", 8}),
		"methods/prefill.so":                       []byte("placeholder: the host backend never opens it"),
		"methods/decode.so":                        []byte("placeholder"),
	}
	manifest := testManifest
	if edit != nil {
		manifest = edit(manifest)
	}
	files["manifest.json"] = []byte(manifest)
	for name, data := range files {
		p := filepath.Join(dir, name)
		must(t, os.MkdirAll(filepath.Dir(p), 0o755))
		must(t, os.WriteFile(p, data, 0o644))
	}
	return dir
}

// replaceOnce replaces from, which must occur once in s.
func replaceOnce(t *testing.T, s, from, to string) string {
	t.Helper()
	if strings.Count(s, from) != 1 {
		t.Fatalf("%q occurs %d times in the manifest", from, strings.Count(s, from))
	}
	return strings.Replace(s, from, to, 1)
}

// loadRefused loads dir, expects the refusal sentinel with every fragment in its message,
// and checks that nothing was left behind: no package, no reference to the runtime, no
// device memory.
func loadRefused(t *testing.T, rt *Runtime, dir string, opts *ModelPackageOptions, sentinel *Error, fragments ...string) {
	t.Helper()
	pkg, err := LoadModelPackage(rt, dir, opts)
	wantCode(t, err, sentinel, fragments...)
	if pkg != nil {
		t.Fatal("a refused load returned a package")
	}
	if n := rt.h.deps.Load(); n != 0 {
		t.Fatalf("a refused load kept %d references to the runtime", n)
	}
	ms, err := rt.MemoryStats()
	must(t, err)
	for tag, n := range ms.Current {
		if n != 0 {
			t.Fatalf("a refused load left %d bytes under memory tag %d", n, tag)
		}
	}
}

// A valid package is checked whole, then its first method needs the CUDA backend: the
// error names the package, the method and CUDA.
func TestModelPackageOnHostStopsAtTheFirstMethod(t *testing.T) {
	rt := hostRuntime(t)
	dir := writePackage(t, nil)
	loadRefused(t, rt, dir, nil, ErrUnsupported, "tiny.wharf", "method 'prefill'", "CUDA backend")
	// Every option reaches the library and changes nothing about that answer.
	loadRefused(t, rt, dir, &ModelPackageOptions{
		ShimPath: "/nonexistent/libwharf_aoti_shim.so", MaxSessionBytes: 1 << 20,
		Progress: func(done, total uint64) {},
	}, ErrUnsupported, "tiny.wharf", "CUDA backend")
	_, err := LoadModelPackageContext(context.Background(), rt, dir, nil)
	wantCode(t, err, ErrUnsupported, "method 'prefill'")
}

// The refusals of docs/model-package.md's table, each with its code, naming what is at
// fault.
func TestModelPackageRefusals(t *testing.T) {
	rt := hostRuntime(t)

	// No manifest.json: NOT_FOUND naming the package.
	dir := writePackage(t, nil)
	must(t, os.Remove(filepath.Join(dir, "manifest.json")))
	loadRefused(t, rt, dir, nil, ErrNotFound, "tiny.wharf", "no manifest.json")
	// No such directory.
	loadRefused(t, rt, filepath.Join(t.TempDir(), "missing.wharf"), nil, ErrNotFound, "missing.wharf")

	// A newer format: UNSUPPORTED.
	dir = writePackage(t, func(m string) string {
		return replaceOnce(t, m, `"format_version": 1`, `"format_version": 2`)
	})
	loadRefused(t, rt, dir, nil, ErrUnsupported, "format_version 2 is newer than this loader reads (1)")

	// A listed parameter in no weight file: INVALID_ARGUMENT naming it.
	dir = writePackage(t, nil)
	must(t, os.WriteFile(filepath.Join(dir, "weights/model-00002-of-00002.safetensors"), safetensorsImage(), 0o644))
	loadRefused(t, rt, dir, nil, ErrInvalidArgument, "weights.parameters[2]", "parameter 'lm_head.weight' is in no weight file")

	// A malformed manifest field, named.
	dir = writePackage(t, func(m string) string {
		return replaceOnce(t, m, `{"name": "input_ids", "dtype": "int64", "shape": [1, 1]}`,
			`{"name": "input_ids", "dtype": "int65", "shape": [1, 1]}`)
	})
	loadRefused(t, rt, dir, nil, ErrInvalidArgument, "manifest.json: methods[1].inputs[0].dtype: 'int65' is not a dtype")
}

// The Go side's argument checks, and a closed runtime.
func TestModelPackageArguments(t *testing.T) {
	rt := hostRuntime(t)
	dir := writePackage(t, nil)
	_, err := LoadModelPackage(nil, dir, nil)
	wantCode(t, err, ErrInvalidArgument, "runtime is nil")
	_, err = LoadModelPackage(rt, "", nil)
	wantCode(t, err, ErrInvalidArgument, "empty")
	_, err = LoadModelPackage(rt, dir+"\x00x", nil)
	wantCode(t, err, ErrInvalidArgument, "NUL")
	//nolint:staticcheck // a nil context is what is tested
	_, err = LoadModelPackageContext(nil, rt, dir, nil)
	wantCode(t, err, ErrInvalidArgument, "context is nil")

	closed, err := NewRuntime(&RuntimeOptions{Backend: BackendHost})
	must(t, err)
	must(t, closed.Close())
	_, err = LoadModelPackage(closed, dir, nil)
	wantClosed(t, err)
}

// A context done before the call cancels it before the library is called: the error
// matches ErrCancelled and the context's error.
func TestModelPackageContextDoneBeforeTheCall(t *testing.T) {
	rt := hostRuntime(t)
	dir := writePackage(t, nil)
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	pkg, err := LoadModelPackageContext(ctx, rt, dir, nil)
	if pkg != nil || !errors.Is(err, ErrCancelled) || !errors.Is(err, context.Canceled) {
		t.Fatalf("LoadModelPackageContext with a done context: %v, %v", pkg, err)
	}
}

// ModelPackageOptions become the wharf_model_package_options the load passes: filled by
// the library's sized init with this binding's struct size, then the fields set.
func TestModelPackageOptionsRoundTrip(t *testing.T) {
	var arena cArena
	defer arena.free()
	o := modelPackageOptions(&arena, nil)
	if o.shim_path != nil || o.max_session_bytes != 0 || o.progress != nil || o.session_capacity != 0 || uintptr(o.struct_size) != unsafe.Sizeof(o) {
		t.Fatalf("defaults: %+v (sizeof %d)", o, unsafe.Sizeof(o))
	}
	o = modelPackageOptions(&arena, &ModelPackageOptions{ShimPath: "/opt/wharf/lib/libwharf_aoti_shim.so", MaxSessionBytes: 1 << 20, SessionCapacity: 8})
	if cString(unsafe.Pointer(o.shim_path)) != "/opt/wharf/lib/libwharf_aoti_shim.so" || o.max_session_bytes != 1<<20 ||
		o.session_capacity != 8 ||
		uintptr(o.struct_size) != unsafe.Sizeof(o) {
		t.Fatalf("round trip: %+v", o)
	}
}

// fakePackage is a ModelPackage around no C package (never passed to C: these tests
// close it first, or use only what the binding answers itself).
func fakePackage(rt *Runtime) *ModelPackage {
	var dummy, dummyStore byte
	spec := TensorSpec{Name: "input_ids", DType: DTypeI64, Shape: []int64{1, -1},
		Dims: []DimSpec{{Min: 1, Max: 1}, {Name: "T", Min: 1, Max: 64}}}
	p := &ModelPackage{rt: rt, name: "tiny", maxSeqLen: 64, methods: []packageMethod{
		{name: "prefill", inputs: []TensorSpec{spec}, outputs: []TensorSpec{{Name: "logits", DType: DTypeF32, Shape: []int64{1, 1, 8}, Dims: make([]DimSpec, 3)}}},
		{name: "decode"},
	}}
	p.h.init("model package", unsafe.Pointer(&dummy), func(unsafe.Pointer) error { return nil })
	p.h.retain()
	p.store = &WeightStore{rt: rt}
	p.store.h.init("weight store", unsafe.Pointer(&dummyStore), func(unsafe.Pointer) error { return nil }, &p.h)
	return p
}

func TestModelPackageNilAndClosedHandles(t *testing.T) {
	var nilPkg *ModelPackage
	if nilPkg.Name() != "" || nilPkg.MaxSeqLen() != 0 || nilPkg.Methods() != nil || nilPkg.Store() != nil || nilPkg.Runtime() != nil {
		t.Fatal("a nil package reports something")
	}
	_, err := nilPkg.Method("decode")
	wantCode(t, err, ErrInvalidArgument, "nil")
	_, err = nilPkg.NewSession(nil)
	wantCode(t, err, ErrInvalidArgument, "nil")
	_, err = nilPkg.MethodInputs("decode")
	wantCode(t, err, ErrInvalidArgument, "nil")
	must(t, nilPkg.Close())

	rt := hostRuntime(t)
	p := fakePackage(rt)
	if p.Name() != "tiny" || p.MaxSeqLen() != 64 || fmt.Sprint(p.Methods()) != "[prefill decode]" || p.Runtime() != rt {
		t.Fatalf("package: %q %d %v", p.Name(), p.MaxSeqLen(), p.Methods())
	}
	in, err := p.MethodInputs("prefill")
	must(t, err)
	if len(in) != 1 || in[0].Name != "input_ids" || in[0].Shape[1] != -1 || in[0].Dims[1].Name != "T" || in[0].Dims[1].Max != 64 {
		t.Fatalf("inputs: %+v", in)
	}
	in[0].Shape[1] = 7 // a copy: the package's stays
	if again, _ := p.MethodInputs("prefill"); again[0].Shape[1] != -1 {
		t.Fatal("MethodInputs returned the package's own slice")
	}
	out, err := p.MethodOutputs("prefill")
	must(t, err)
	if len(out) != 1 || out[0].DType != DTypeF32 {
		t.Fatalf("outputs: %+v", out)
	}
	_, err = p.MethodOutputs("generate")
	wantCode(t, err, ErrNotFound, "no method 'generate'", "prefill, decode")
	_, err = p.Method("a\x00b")
	wantCode(t, err, ErrInvalidArgument, "NUL")

	if p.Store() != p.Store() {
		t.Fatal("Store returns a new object each time")
	}
	must(t, p.Close())
	must(t, p.Close()) // idempotent
	_, err = p.Method("decode")
	wantClosed(t, err)
	_, err = p.NewSession(nil)
	wantClosed(t, err)
	wantClosed(t, p.Store().Swap()) // Close closed the package's store
	_, err = p.Store().Stats()
	wantClosed(t, err)
	wantClosed(t, p.Store().UpdateFromFile("weights.safetensors", nil))
	if p.h.ptr != nil || p.h.deps.Load() != 0 {
		t.Fatal("the package was not freed once its store was closed")
	}

	// The store may be closed first; it holds the package until then.
	q := fakePackage(rt)
	must(t, q.Store().Close())
	if q.h.deps.Load() != 0 {
		t.Fatal("the closed store still holds the package")
	}
	must(t, q.Close())
	if q.h.ptr != nil {
		t.Fatal("the package was not freed")
	}
}

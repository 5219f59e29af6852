// SPDX-License-Identifier: Apache-2.0

package wharf

import (
	"bytes"
	"errors"
	"fmt"
	"log"
	"os"
	"path/filepath"
	"regexp"
	"runtime"
	"strings"
	"sync"
	"testing"
	"time"
	"unsafe"
)

// ---- helpers --------------------------------------------------------------------------

func hostRuntime(t *testing.T, opts ...func(*RuntimeOptions)) *Runtime {
	t.Helper()
	o := RuntimeOptions{Backend: BackendHost, CopyThreads: 1, StagingBytes: 128 << 10}
	for _, f := range opts {
		f(&o)
	}
	rt, err := NewRuntime(&o)
	if err != nil {
		t.Fatalf("NewRuntime: %v", err)
	}
	t.Cleanup(func() { rt.Close() })
	return rt
}

func must(t *testing.T, err error) {
	t.Helper()
	if err != nil {
		t.Fatal(err)
	}
}

// wantCode fails unless err is a *Error with the code (checked both ways: errors.Is with
// the sentinel and errors.As) whose message contains every fragment.
func wantCode(t *testing.T, err error, sentinel *Error, fragments ...string) {
	t.Helper()
	if err == nil {
		t.Fatalf("got nil error, want %v", sentinel.Code)
	}
	if !errors.Is(err, sentinel) {
		t.Fatalf("errors.Is(%v, %v) = false", err, sentinel.Code)
	}
	var we *Error
	if !errors.As(err, &we) {
		t.Fatalf("errors.As(%v, *Error) = false", err)
	}
	if we.Code != sentinel.Code {
		t.Fatalf("code %v, want %v", we.Code, sentinel.Code)
	}
	for _, f := range fragments {
		if !strings.Contains(we.Message, f) {
			t.Fatalf("message %q does not contain %q", we.Message, f)
		}
	}
}

func wantClosed(t *testing.T, err error) {
	t.Helper()
	if !errors.Is(err, ErrClosed) {
		t.Fatalf("got %v, want an error matching ErrClosed", err)
	}
	var we *Error
	if errors.As(err, &we) {
		t.Fatalf("a closed-handle error should not be a library *Error: %v", err)
	}
}

// bufferTensor copies data into a new HostBuffer and returns a tensor over all of it.
func bufferTensor[T Element](t *testing.T, shape []int64, data []T) (*HostBuffer, Tensor) {
	t.Helper()
	b, err := NewHostBufferFrom(data)
	must(t, err)
	t.Cleanup(func() { b.Close() })
	tt, err := b.Tensor(0, DTypeOf[T](), shape)
	must(t, err)
	return b, tt
}

func values[T Element](t *testing.T, tensor Tensor, err error) []T {
	t.Helper()
	must(t, err)
	v, err := Values[T](tensor)
	must(t, err)
	return v
}

// pointer returns a tensor's Pointer, failing the test on error.
func pointer(t *testing.T, tensor Tensor) unsafe.Pointer {
	t.Helper()
	p, err := tensor.Pointer()
	must(t, err)
	return p
}

func equal[T comparable](a, b []T) bool {
	if len(a) != len(b) {
		return false
	}
	for i := range a {
		if a[i] != b[i] {
			return false
		}
	}
	return true
}

// freed reports whether a handle's C object has been freed (waiting a little for
// releases handed to goroutines).
func freed(h *handle) bool {
	for i := 0; i < 200; i++ {
		h.mu.RLock()
		p := h.ptr
		h.mu.RUnlock()
		if p == nil {
			return true
		}
		time.Sleep(5 * time.Millisecond)
	}
	return false
}

func stillAllocated(h *handle) bool {
	h.mu.RLock()
	defer h.mu.RUnlock()
	return h.ptr != nil
}

// twoConstantContainer declares "a" (F32 [2,3]) and "b" (I32 [4]).
func twoConstantContainer(t *testing.T, rt *Runtime) *Container {
	t.Helper()
	c, err := NewContainer(rt, &ContainerOptions{Name: "two", Constants: []ConstantDecl{
		{FQN: "a", DType: DTypeF32, Shape: []int64{2, 3}},
		{FQN: "b", DType: DTypeI32, Shape: []int64{4}, Placement: PlacementHost},
	}})
	must(t, err)
	t.Cleanup(func() { c.Close() })
	return c
}

func readRun[T Element](t *testing.T, c *Container, fqn string) ([]T, uint64) {
	t.Helper()
	r, err := c.BeginRun()
	must(t, err)
	defer func() { must(t, r.End()) }()
	tensor, err := r.Tensor(fqn)
	return values[T](t, tensor, err), r.Generation()
}

// ---- versions, codes, dtypes ----------------------------------------------------------

func TestVersion(t *testing.T) {
	if !regexp.MustCompile(`^\d+\.\d+\.\d+$`).MatchString(Version()) {
		t.Fatalf("Version() = %q", Version())
	}
	if LibraryABIVersion() != ABIVersion {
		t.Fatalf("library ABI %d, binding %d", LibraryABIVersion(), ABIVersion)
	}
	must(t, CheckVersion())
	err := checkABI(ABIVersion + 1)
	wantCode(t, err, ErrFailedPrecondition, "ABI version 2", "ABI version 1")
	if checkABI(ABIVersion) != nil {
		t.Fatal("checkABI accepted nothing")
	}
}

func TestCodes(t *testing.T) {
	names := map[Code]string{
		CodeOK: "OK", CodeInvalidArgument: "INVALID_ARGUMENT", CodeNotFound: "NOT_FOUND",
		CodeAlreadyExists: "ALREADY_EXISTS", CodeOutOfMemory: "OUT_OF_MEMORY",
		CodeResourceExhausted: "RESOURCE_EXHAUSTED", CodeFailedPrecondition: "FAILED_PRECONDITION",
		CodeBusy: "BUSY", CodeUnsupported: "UNSUPPORTED", CodeDeviceError: "DEVICE_ERROR",
		CodeIOError: "IO_ERROR", CodeDataCorrupt: "DATA_CORRUPT", CodeInternal: "INTERNAL",
		Code(99): "UNKNOWN",
	}
	for c, want := range names {
		if c.String() != want {
			t.Errorf("Code(%d).String() = %q, want %q", int32(c), c.String(), want)
		}
	}
	sentinels := []*Error{ErrInvalidArgument, ErrNotFound, ErrAlreadyExists, ErrOutOfMemory,
		ErrResourceExhausted, ErrFailedPrecondition, ErrBusy, ErrUnsupported, ErrDeviceError,
		ErrIOError, ErrDataCorrupt, ErrInternal}
	for i, s := range sentinels {
		if s.Code != Code(i+1) {
			t.Errorf("sentinel %d has code %v", i, s.Code)
		}
	}
}

func TestErrorIsAndAs(t *testing.T) {
	err := error(&Error{Code: CodeNotFound, Message: "constant 'x' is not in the map"})
	if err.Error() != "wharf: NOT_FOUND: constant 'x' is not in the map" {
		t.Fatalf("Error() = %q", err.Error())
	}
	if !errors.Is(err, ErrNotFound) || errors.Is(err, ErrBusy) {
		t.Fatal("errors.Is does not compare by code")
	}
	if !errors.Is(err, &Error{Code: CodeNotFound, Message: "constant 'x' is not in the map"}) ||
		errors.Is(err, &Error{Code: CodeNotFound, Message: "other"}) {
		t.Fatal("errors.Is does not compare messages when the target has one")
	}
	wrapped := &FoldError{Err: err}
	var we *Error
	if !errors.As(wrapped, &we) || we.Code != CodeNotFound || !errors.Is(wrapped, ErrNotFound) {
		t.Fatal("errors.As/Is do not see through FoldError")
	}
	if errors.Is(errors.New("x"), ErrNotFound) || errors.Is(err, (*Error)(nil)) {
		t.Fatal("unrelated errors match")
	}
}

func TestDTypes(t *testing.T) {
	cases := []struct {
		d    DType
		name string
		size int
	}{
		{DTypeF32, "F32", 4}, {DTypeF16, "F16", 2}, {DTypeBF16, "BF16", 2}, {DTypeF64, "F64", 8},
		{DTypeF8E4M3, "F8_E4M3", 1}, {DTypeF8E5M2, "F8_E5M2", 1}, {DTypeI8, "I8", 1}, {DTypeU8, "U8", 1},
		{DTypeI16, "I16", 2}, {DTypeI32, "I32", 4}, {DTypeI64, "I64", 8}, {DTypeBool, "BOOL", 1},
	}
	for _, c := range cases {
		if c.d.String() != c.name || c.d.Size() != c.size {
			t.Errorf("%d: got %q/%d, want %q/%d", int32(c.d), c.d.String(), c.d.Size(), c.name, c.size)
		}
		d, err := ParseDType(c.name)
		if err != nil || d != c.d {
			t.Errorf("ParseDType(%q) = %v, %v", c.name, d, err)
		}
	}
	if DType(77).String() != "DType(77)" || DType(77).Size() != 0 {
		t.Errorf("unknown dtype: %q %d", DType(77).String(), DType(77).Size())
	}
	_, err := ParseDType("F33")
	wantCode(t, err, ErrNotFound, "F33")
	if DTypeOf[float32]() != DTypeF32 || DTypeOf[float64]() != DTypeF64 || DTypeOf[int8]() != DTypeI8 ||
		DTypeOf[uint8]() != DTypeU8 || DTypeOf[int16]() != DTypeI16 || DTypeOf[int32]() != DTypeI32 ||
		DTypeOf[int64]() != DTypeI64 {
		t.Fatal("DTypeOf maps a Go type to the wrong dtype")
	}
	if BackendHost.String() != "host" || DeviceCUDA.String() != "cuda" || PlacementHost.String() != "host" ||
		LogWarn.String() != "warn" {
		t.Fatal("enum String methods")
	}
}

// ---- runtime --------------------------------------------------------------------------

func TestRuntime(t *testing.T) {
	rt := hostRuntime(t)
	if rt.Backend() != BackendHost {
		t.Fatalf("backend %v", rt.Backend())
	}
	info, err := rt.DeviceInfo()
	must(t, err)
	if info.Backend != BackendHost || info.Name != "host" || info.TotalMemory == 0 || info.ComputeMajor != 0 {
		t.Fatalf("device info %+v", info)
	}
	must(t, rt.Synchronize())
	st, err := rt.MemoryStats()
	must(t, err)
	if st.DeviceCurrent > st.DevicePeak {
		t.Fatalf("stats %+v", st)
	}
	rt.ResetPeak()

	must(t, rt.Close())
	must(t, rt.Close()) // idempotent
	if rt.Backend() != BackendAuto {
		t.Fatal("Backend of a closed runtime")
	}
	_, err = rt.DeviceInfo()
	wantClosed(t, err)
	_, err = rt.MemoryStats()
	wantClosed(t, err)
	wantClosed(t, rt.Synchronize())
	rt.ResetPeak() // no-op, no crash
	_, err = NewContainer(rt, nil)
	wantClosed(t, err)
	if !freed(&rt.h) {
		t.Fatal("a closed runtime without containers was not freed")
	}
}

func TestRuntimeOptionErrors(t *testing.T) {
	_, err := NewRuntime(&RuntimeOptions{Backend: Backend(9)})
	wantCode(t, err, ErrInvalidArgument, "backend", "9")
	_, err = NewRuntime(&RuntimeOptions{Backend: BackendHost, StagingBytes: 1})
	wantCode(t, err, ErrInvalidArgument, "staging_bytes")
	_, err = NewRuntime(&RuntimeOptions{Backend: BackendHost, DeviceIndex: -1})
	wantCode(t, err, ErrInvalidArgument, "device_index")
}

func TestMemoryStatsAndLimit(t *testing.T) {
	rt := hostRuntime(t, func(o *RuntimeOptions) { o.DeviceMemoryLimit = 64 << 10 })
	c, err := NewContainer(rt, &ContainerOptions{Constants: []ConstantDecl{
		{FQN: "small", DType: DTypeF32, Shape: []int64{256}},
		{FQN: "big", DType: DTypeF32, Shape: []int64{32 << 10}}, // 128 KiB > the limit
	}})
	must(t, err)
	defer c.Close()
	small := make([]float32, 256)
	must(t, c.UpdateFromHost([]HostTensor{HostTensorOf("small", []int64{256}, small)}, nil))
	st, err := rt.MemoryStats()
	must(t, err)
	if st.Current[MemConstants] < 1024 || st.Peak[MemConstants] < st.Current[MemConstants] || st.DeviceCurrent < 1024 {
		t.Fatalf("constants not accounted: %+v", st)
	}
	big := make([]float32, 32<<10)
	err = c.UpdateFromHost([]HostTensor{HostTensorOf("big", []int64{32 << 10}, big)}, nil)
	wantCode(t, err, ErrOutOfMemory)
	after, err := rt.MemoryStats()
	must(t, err)
	if after.Current[MemConstants] != st.Current[MemConstants] {
		t.Fatalf("a failed update kept memory: %d -> %d", st.Current[MemConstants], after.Current[MemConstants])
	}
}

// ---- constant maps and host buffers ---------------------------------------------------

func TestConstantMap(t *testing.T) {
	m, err := NewConstantMap()
	must(t, err)
	defer m.Close()
	_, ta := bufferTensor(t, []int64{2, 3}, []float32{0, 1, 2, 3, 4, 5})
	_, tb := bufferTensor(t, []int64{4}, []int32{7, 8, 9, 10})
	must(t, m.Set("a", ta))
	must(t, m.Set("b", tb))
	if m.Len() != 2 {
		t.Fatalf("Len = %d", m.Len())
	}
	names, err := m.Names()
	must(t, err)
	if !equal(names, []string{"a", "b"}) {
		t.Fatalf("names %v", names)
	}
	f, err := m.Find("b")
	if got := values[int32](t, f, err); !equal(got, []int32{7, 8, 9, 10}) {
		t.Fatalf("Find(b) = %v", got)
	}
	if !equal(f.Shape(), []int64{4}) || f.DType() != DTypeI32 || f.Device() != DeviceCPU || pointer(t, f) != pointer(t, tb) || f.Writable() {
		t.Fatalf("Find(b) tensor %+v", f)
	}
	name, e, err := m.Entry(0)
	must(t, err)
	if eb, err := e.Bytes(); name != "a" || !equal(e.Shape(), []int64{2, 3}) || e.NumBytes() != 24 || err != nil || len(eb) != 24 {
		t.Fatalf("Entry(0) = %q %+v", name, e)
	}
	md, err := m.Metadata()
	must(t, err)
	if len(md) != 0 {
		t.Fatalf("metadata of a built map: %v", md)
	}
	_, err = Values[float32](f)
	wantCode(t, err, ErrInvalidArgument, "I32")

	wantCode(t, m.Set("a", ta), ErrAlreadyExists, "a")
	wantCode(t, m.Set("", ta), ErrInvalidArgument)
	// Tensors NewTensor refuses, built field by field (the library checks them too).
	pa := pointer(t, ta)
	wantCode(t, m.Set("nil", Tensor{dtype: DTypeF32, shape: []int64{3}}), ErrInvalidArgument, "nil")
	wantCode(t, m.Set("bad", Tensor{data: pa, dtype: DType(50), shape: []int64{1}}), ErrInvalidArgument, "dtype")
	wantCode(t, m.Set("neg", Tensor{data: pa, dtype: DTypeF32, shape: []int64{-1}}), ErrInvalidArgument, "negative")
	wantCode(t, m.Set("strides", Tensor{data: pa, dtype: DTypeF32, shape: []int64{2, 3}, strides: []int64{1}}),
		ErrInvalidArgument, "strides")
	wantCode(t, m.Set("dims", Tensor{data: pa, dtype: DTypeF32, shape: make([]int64, MaxDims+1)}),
		ErrInvalidArgument, "dimensions")
	_, err = m.Find("zzz")
	wantCode(t, err, ErrNotFound, "zzz")
	_, _, err = m.Entry(2)
	wantCode(t, err, ErrInvalidArgument, "out of range")
	_, _, err = m.Entry(-1)
	wantCode(t, err, ErrInvalidArgument)
	if m.Len() != 2 {
		t.Fatal("a failed Set changed the map")
	}

	must(t, m.Close())
	must(t, m.Close())
	if m.Len() != 0 {
		t.Fatal("Len of a closed map")
	}
	wantClosed(t, m.Set("c", ta))
	_, err = m.Find("a")
	wantClosed(t, err)
	_, _, err = m.Entry(0)
	wantClosed(t, err)
	_, err = m.Metadata()
	wantClosed(t, err)
	wantClosed(t, m.Save(filepath.Join(t.TempDir(), "x.safetensors")))
}

func TestSafetensorsRoundTrip(t *testing.T) {
	path := filepath.Join(t.TempDir(), "w.safetensors")
	// A 2x3 matrix stored transposed (a strided view): saved contiguous.
	buf, err := NewHostBufferFrom([]float32{0, 3, 1, 4, 2, 5})
	must(t, err)
	defer buf.Close()
	transposed, err := NewTensor(bufferData(buf), DTypeF32, DeviceCPU, 0, []int64{2, 3}, []int64{1, 2})
	must(t, err)
	if b, err := transposed.Bytes(); transposed.IsContiguous() || b != nil || err == nil {
		t.Fatal("a strided tensor claims to be contiguous")
	}
	_, ids := bufferTensor(t, []int64{3}, []int64{-1, 1 << 40, 3})
	m, err := NewConstantMap()
	must(t, err)
	must(t, m.Set("w", transposed))
	must(t, m.Set("ids", ids))
	must(t, m.Save(path))
	must(t, m.Close())

	loaded, err := LoadSafetensors(path)
	must(t, err)
	defer loaded.Close()
	if loaded.Len() != 2 {
		t.Fatalf("loaded %d tensors", loaded.Len())
	}
	w, err := loaded.Find("w")
	if got := values[float32](t, w, err); !equal(got, []float32{0, 1, 2, 3, 4, 5}) {
		t.Fatalf("w = %v", got)
	}
	ids2, err := loaded.Find("ids")
	if got := values[int64](t, ids2, err); !equal(got, []int64{-1, 1 << 40, 3}) {
		t.Fatalf("ids = %v", got)
	}
}

// bufferData is the first byte of a buffer, for hand-built tensors.
func bufferData(b *HostBuffer) unsafe.Pointer { return b.h.ptr }

func TestSafetensorsMetadataAndErrors(t *testing.T) {
	dir := t.TempDir()
	// Hand-written file with __metadata__: one U8 tensor of 2 bytes.
	header := `{"__metadata__":{"format":"pt","step":"7"},"x":{"dtype":"U8","shape":[2],"data_offsets":[0,2]}}`
	var file bytes.Buffer
	n := uint64(len(header))
	for i := 0; i < 8; i++ {
		file.WriteByte(byte(n >> (8 * i)))
	}
	file.WriteString(header)
	file.Write([]byte{5, 6})
	good := filepath.Join(dir, "meta.safetensors")
	must(t, os.WriteFile(good, file.Bytes(), 0o644))
	m, err := LoadSafetensors(good)
	must(t, err)
	defer m.Close()
	md, err := m.Metadata()
	must(t, err)
	if len(md) != 2 || md["format"] != "pt" || md["step"] != "7" {
		t.Fatalf("metadata %v", md)
	}
	x, err := m.Find("x")
	if got := values[uint8](t, x, err); !equal(got, []uint8{5, 6}) {
		t.Fatalf("x = %v", got)
	}

	_, err = LoadSafetensors(filepath.Join(dir, "missing.safetensors"))
	if !errors.Is(err, ErrNotFound) && !errors.Is(err, ErrIOError) {
		t.Fatalf("missing file: %v", err)
	}
	corrupt := filepath.Join(dir, "corrupt.safetensors")
	bad := append([]byte{}, file.Bytes()...)
	bad = bad[:len(bad)-1] // the data section is one byte short
	must(t, os.WriteFile(corrupt, bad, 0o644))
	_, err = LoadSafetensors(corrupt)
	wantCode(t, err, ErrDataCorrupt, "x")

	// Save refuses a CUDA tensor (no GPU access happens: validation comes first).
	cm, err := NewConstantMap()
	must(t, err)
	defer cm.Close()
	hb, _ := bufferTensor(t, []int64{1}, []float32{1})
	// Labelled CUDA memory (never dereferenced: Save validates before it reads).
	gpu, err := NewTensor(bufferData(hb), DTypeF32, DeviceCUDA, 0, []int64{1}, nil)
	must(t, err)
	must(t, cm.Set("gpu", gpu))
	wantCode(t, cm.Save(filepath.Join(dir, "gpu.safetensors")), ErrInvalidArgument, "gpu")
}

func TestSaveIOError(t *testing.T) {
	cm, err := NewConstantMap()
	must(t, err)
	defer cm.Close()
	_, x := bufferTensor(t, []int64{1}, []float32{1})
	must(t, cm.Set("x", x))
	wantCode(t, cm.Save(filepath.Join(t.TempDir(), "no-such-dir", "x.safetensors")), ErrIOError)
}

func TestSetRejectsGoMemory(t *testing.T) {
	if strings.Contains(os.Getenv("GODEBUG"), "cgocheck=0") {
		t.Skip("cgo pointer checks are disabled")
	}
	m, err := NewConstantMap()
	must(t, err)
	defer m.Close()
	goData := make([]float32, 4)
	defer func() {
		v := recover()
		if v == nil {
			t.Fatal("storing Go memory in a map did not panic")
		}
		if !strings.Contains(strings.ToLower(toString(v)), "go pointer") {
			t.Fatalf("unexpected panic: %v", v)
		}
		if m.Len() != 0 {
			t.Fatal("the map kept the Go pointer")
		}
	}()
	goTensor, err := NewTensor(unsafe.Pointer(&goData[0]), DTypeF32, DeviceCPU, 0, []int64{4}, nil)
	must(t, err)
	_ = m.Set("go", goTensor)
}

func toString(v any) string {
	if e, ok := v.(error); ok {
		return e.Error()
	}
	if s, ok := v.(string); ok {
		return s
	}
	return ""
}

func TestHostBuffer(t *testing.T) {
	b, err := NewHostBuffer(16)
	must(t, err)
	if b.Len() != 16 || len(b.Bytes()) != 16 || b.Bytes()[3] != 0 {
		t.Fatal("a new buffer is not 16 zero bytes")
	}
	f := HostSlice[float32](b)
	if len(f) != 4 {
		t.Fatalf("HostSlice len %d", len(f))
	}
	f[1] = 2.5 // a copy: the buffer is unchanged
	if v := HostSlice[float32](b); v[1] != 0 {
		t.Fatalf("HostSlice aliases the buffer: %v", v)
	}
	if n, err := b.WriteAt(asBytes(f[1:2]), 4); n != 4 || err != nil {
		t.Fatalf("WriteAt: %d, %v", n, err)
	}
	_, err = b.WriteAt(make([]byte, 4), 13)
	wantCode(t, err, ErrInvalidArgument, "do not fit")
	_, err = b.ReadAt(make([]byte, 1), -1)
	wantCode(t, err, ErrInvalidArgument, "do not fit")
	tt, err := b.Tensor(4, DTypeF32, []int64{3})
	if got := values[float32](t, tt, err); !equal(got, []float32{2.5, 0, 0}) {
		t.Fatalf("tensor at offset 4: %v", got)
	}
	_, err = b.Tensor(8, DTypeF32, []int64{3})
	wantCode(t, err, ErrInvalidArgument, "do not fit")
	_, err = b.Tensor(-1, DTypeF32, []int64{1})
	wantCode(t, err, ErrInvalidArgument)
	_, err = b.Tensor(0, DType(40), []int64{1})
	wantCode(t, err, ErrInvalidArgument, "dtype")
	_, err = b.Tensor(0, DTypeF32, []int64{1 << 62, 1 << 62})
	wantCode(t, err, ErrInvalidArgument, "overflow")
	_, err = NewHostBuffer(-1)
	wantCode(t, err, ErrInvalidArgument)
	z, err := NewHostBuffer(0)
	must(t, err)
	if _, err := z.Tensor(0, DTypeF32, []int64{0}); err != nil {
		t.Fatal(err)
	}
	must(t, z.Close())

	// A map borrowing the buffer keeps it allocated after Close.
	m, err := NewConstantMap()
	must(t, err)
	must(t, m.Set("t", tt))
	must(t, b.Close())
	must(t, b.Close())
	if b.Bytes() != nil || HostSlice[int8](b) != nil {
		t.Fatal("Bytes after Close")
	}
	_, err = b.ReadAt(make([]byte, 1), 0)
	wantClosed(t, err)
	_, err = b.WriteAt(make([]byte, 1), 0)
	wantClosed(t, err)
	_, err = b.Tensor(0, DTypeF32, []int64{1})
	wantClosed(t, err)
	wantClosed(t, m.Set("u", tt)) // the owner is closed: it cannot be borrowed any more
	if !stillAllocated(&b.h) {
		t.Fatal("the buffer was freed while a map borrowed it")
	}
	got, err := m.Find("t")
	if v := values[float32](t, got, err); !equal(v, []float32{2.5, 0, 0}) {
		t.Fatalf("borrowed data after the buffer's Close: %v", v)
	}
	must(t, m.Close())
	if !freed(&b.h) {
		t.Fatal("the buffer was not freed with the map that borrowed it")
	}
}

func TestMapBorrowsFromMap(t *testing.T) {
	path := filepath.Join(t.TempDir(), "x.safetensors")
	src, err := NewConstantMap()
	must(t, err)
	_, x := bufferTensor(t, []int64{2}, []int16{-3, 4})
	must(t, src.Set("x", x))
	must(t, src.Save(path))
	must(t, src.Close())
	file, err := LoadSafetensors(path)
	must(t, err)
	ft, err := file.Find("x")
	must(t, err)
	dst, err := NewConstantMap()
	must(t, err)
	must(t, dst.Set("x2", ft))
	must(t, dst.Set("self", mustFind(t, dst, "x2"))) // borrowing from itself is no cycle
	must(t, file.Close())
	if !stillAllocated(&file.h) {
		t.Fatal("a file map was unmapped while another map borrowed it")
	}
	got, err := dst.Find("self")
	if v := values[int16](t, got, err); !equal(v, []int16{-3, 4}) {
		t.Fatalf("data through two maps: %v", v)
	}
	must(t, dst.Close())
	if !freed(&dst.h) || !freed(&file.h) {
		t.Fatal("maps were not freed")
	}
}

func mustFind(t *testing.T, m *ConstantMap, name string) Tensor {
	t.Helper()
	tt, err := m.Find(name)
	must(t, err)
	return tt
}

// ---- containers, updates, runs --------------------------------------------------------

func TestContainerLifecycle(t *testing.T) {
	rt := hostRuntime(t)
	c := twoConstantContainer(t, rt)
	if c.Runtime() != rt || c.NumConstants() != 2 || c.Generation() != 0 {
		t.Fatalf("fresh container: %d constants, generation %d", c.NumConstants(), c.Generation())
	}
	info, err := c.ConstantInfo(1)
	must(t, err)
	if info.FQN != "b" || info.DType != DTypeI32 || !equal(info.Shape, []int64{4}) ||
		info.Placement != PlacementHost || info.Flags != 0 || info.NBytes != 16 {
		t.Fatalf("ConstantInfo(1) = %+v", info)
	}
	all, err := c.Constants()
	must(t, err)
	if len(all) != 2 || all[0].FQN != "a" || all[0].NBytes != 24 {
		t.Fatalf("Constants() = %+v", all)
	}
	_, err = c.ConstantInfo(2)
	wantCode(t, err, ErrInvalidArgument, "out of range")

	_, err = c.BeginRun()
	wantCode(t, err, ErrFailedPrecondition)
	wantCode(t, c.Swap(), ErrFailedPrecondition)

	m, err := NewConstantMap()
	must(t, err)
	defer m.Close()
	_, ta := bufferTensor(t, []int64{2, 3}, []float32{1, 2, 3, 4, 5, 6})
	must(t, m.Set("a", ta))
	must(t, c.Update(m, nil))
	err = c.Swap() // "b" was never written
	wantCode(t, err, ErrFailedPrecondition, "b")
	_, tb := bufferTensor(t, []int64{4}, []int32{1, 2, 3, 4})
	must(t, m.Set("b", tb))
	must(t, c.Update(m, &UpdateOptions{RequireFull: true}))
	must(t, c.Swap())
	if c.Generation() == 0 {
		t.Fatal("generation did not change")
	}
	g1 := c.Generation()
	got, gen := readRun[float32](t, c, "a")
	if !equal(got, []float32{1, 2, 3, 4, 5, 6}) || gen != g1 {
		t.Fatalf("run read %v in generation %d", got, gen)
	}

	// A partial update copies on write; swapping twice rolls back.
	must(t, c.UpdateFromHost([]HostTensor{HostTensorOf("b", []int64{4}, []int32{9, 9, 9, 9})}, nil))
	must(t, c.Swap())
	g2 := c.Generation()
	if g2 == g1 {
		t.Fatal("swap kept the generation id")
	}
	if b, _ := readRun[int32](t, c, "b"); !equal(b, []int32{9, 9, 9, 9}) {
		t.Fatalf("b after update = %v", b)
	}
	if a, _ := readRun[float32](t, c, "a"); !equal(a, []float32{1, 2, 3, 4, 5, 6}) {
		t.Fatalf("a (not updated) = %v", a)
	}
	must(t, c.Swap())
	if b, _ := readRun[int32](t, c, "b"); !equal(b, []int32{1, 2, 3, 4}) {
		t.Fatalf("b after rollback = %v", b)
	}
	must(t, c.FreeInactive())
	wantCode(t, c.Swap(), ErrFailedPrecondition)

	must(t, c.Close())
	must(t, c.Close())
	if c.Generation() != 0 || c.NumConstants() != 0 {
		t.Fatal("a closed container reports state")
	}
	for _, err := range []error{c.Swap(), c.FreeInactive(), c.Update(m, nil), c.UpdatePacked(nil, nil, nil),
		c.UpdateFromHost(nil, nil), c.BindTensor("a", ta)} {
		wantClosed(t, err)
	}
	_, err = c.BeginRun()
	wantClosed(t, err)
	_, err = c.ConstantInfo(0)
	wantClosed(t, err)
	_, err = c.Constants()
	wantClosed(t, err)
}

func TestContainerErrors(t *testing.T) {
	rt := hostRuntime(t)
	_, err := NewContainer(rt, &ContainerOptions{Constants: []ConstantDecl{
		{FQN: "x", DType: DTypeF32, Shape: []int64{1}}, {FQN: "x", DType: DTypeF32, Shape: []int64{1}}}})
	wantCode(t, err, ErrInvalidArgument, "x")
	_, err = NewContainer(rt, &ContainerOptions{Constants: []ConstantDecl{{FQN: "", DType: DTypeF32}}})
	wantCode(t, err, ErrInvalidArgument)
	_, err = NewContainer(rt, &ContainerOptions{Constants: []ConstantDecl{{FQN: "d", DType: DType(30)}}})
	wantCode(t, err, ErrInvalidArgument, "dtype")
	_, err = NewContainer(rt, &ContainerOptions{Constants: []ConstantDecl{{FQN: "n", DType: DTypeF32, Shape: []int64{-2}}}})
	wantCode(t, err, ErrInvalidArgument, "negative")

	c := twoConstantContainer(t, rt)
	a := make([]float32, 6)
	err = c.UpdateFromHost([]HostTensor{HostTensorOf("nope", []int64{6}, a)}, nil)
	wantCode(t, err, ErrNotFound, "nope")
	err = c.UpdateFromHost([]HostTensor{HostTensorOf("a", []int64{6}, a)}, nil)
	wantCode(t, err, ErrInvalidArgument, "a")
	err = c.UpdateFromHost([]HostTensor{HostTensorOf("a", []int64{2, 3}, make([]int32, 6))}, nil)
	wantCode(t, err, ErrInvalidArgument, "a")
	err = c.UpdateFromHost([]HostTensor{HostTensorOf("a", []int64{2, 3}, a)}, &UpdateOptions{RequireFull: true})
	wantCode(t, err, ErrInvalidArgument, "b")
	err = c.UpdateFromHost([]HostTensor{HostTensorOf("a", []int64{2, 3}, a[:5])}, nil)
	wantCode(t, err, ErrInvalidArgument, "20 bytes")
	err = c.UpdateFromHost([]HostTensor{HostTensorOf("a", []int64{2, 3}, a)}, &UpdateOptions{Target: TargetActiveInPlace})
	wantCode(t, err, ErrFailedPrecondition, "in place")
	err = c.UpdateFromHost([]HostTensor{HostTensorOf("a", []int64{2, 3}, a)}, &UpdateOptions{Target: UpdateTarget(7)})
	wantCode(t, err, ErrInvalidArgument, "target")
	wantCode(t, c.Swap(), ErrFailedPrecondition) // none of the failed updates staged anything

	// NewContainerFromMap reports update errors (a nil-data tensor is caught by Set first;
	// an empty map declares an empty container, which is fine).
	empty, err := NewConstantMap()
	must(t, err)
	defer empty.Close()
	ec, err := NewContainerFromMap(rt, empty, "empty")
	must(t, err)
	if ec.NumConstants() != 0 {
		t.Fatal("a container from an empty map declares constants")
	}
	must(t, ec.Close())
}

func TestUpdatePacked(t *testing.T) {
	rt := hostRuntime(t)
	c := twoConstantContainer(t, rt)
	buf := make([]byte, 64)
	f := unsafe.Slice((*float32)(unsafe.Pointer(&buf[0])), 6)
	copy(f, []float32{6, 5, 4, 3, 2, 1})
	i := unsafe.Slice((*int32)(unsafe.Pointer(&buf[32])), 4)
	copy(i, []int32{-1, -2, -3, -4})
	layout := []PackedTensor{
		{Name: "a", DType: DTypeF32, Shape: []int64{2, 3}, Offset: 0},
		{Name: "b", DType: DTypeI32, Shape: []int64{4}, Offset: 32},
	}
	must(t, c.UpdatePacked(buf, layout, &UpdateOptions{RequireFull: true}))
	must(t, c.Swap())
	if a, _ := readRun[float32](t, c, "a"); !equal(a, []float32{6, 5, 4, 3, 2, 1}) {
		t.Fatalf("a = %v", a)
	}
	if b, _ := readRun[int32](t, c, "b"); !equal(b, []int32{-1, -2, -3, -4}) {
		t.Fatalf("b = %v", b)
	}
	bad := []PackedTensor{{Name: "b", DType: DTypeI32, Shape: []int64{4}, Offset: 50}}
	wantCode(t, c.UpdatePacked(buf, bad, nil), ErrInvalidArgument, "do not fit")
	bad[0].Offset = -4
	wantCode(t, c.UpdatePacked(buf, bad, nil), ErrInvalidArgument)
	wantCode(t, c.UpdatePacked(buf, []PackedTensor{{Name: "", DType: DTypeI32, Shape: []int64{1}}}, nil), ErrInvalidArgument, "empty name")
	wantCode(t, c.UpdatePacked(buf, []PackedTensor{{Name: "b\x00", DType: DTypeI32, Shape: []int64{1}}}, nil), ErrInvalidArgument, "NUL")
	wantCode(t, c.UpdatePacked(buf, []PackedTensor{{Name: "x", DType: DTypeI32, Shape: []int64{1}}}, nil), ErrNotFound, "x")
	wantCode(t, c.UpdatePacked(nil, []PackedTensor{{Name: "b", DType: DTypeI32, Shape: []int64{4}}}, nil), ErrInvalidArgument)
	must(t, c.UpdatePacked(nil, nil, nil)) // an empty update is fine
}

func TestUpdateInPlace(t *testing.T) {
	rt := hostRuntime(t)
	c := twoConstantContainer(t, rt)
	must(t, c.UpdateFromHost([]HostTensor{
		HostTensorOf("a", []int64{2, 3}, []float32{1, 1, 1, 1, 1, 1}),
		HostTensorOf("b", []int64{4}, []int32{1, 1, 1, 1}),
	}, nil))
	must(t, c.Swap())
	gen := c.Generation()
	before, err := rt.MemoryStats()
	must(t, err)

	open, err := c.BeginRun()
	must(t, err)
	done := make(chan error, 1)
	go func() {
		done <- c.UpdateFromHost([]HostTensor{HostTensorOf("a", []int64{2, 3}, []float32{8, 8, 8, 8, 8, 8})},
			&UpdateOptions{Target: TargetActiveInPlace})
	}()
	select {
	case err := <-done:
		t.Fatalf("the in-place update did not wait for the open run: %v", err)
	case <-time.After(50 * time.Millisecond):
	}
	a, err := open.Tensor("a")
	if v := values[float32](t, a, err); v[0] != 1 {
		t.Fatalf("the open run saw %v", v)
	}
	must(t, open.End())
	must(t, <-done)
	after, err := rt.MemoryStats()
	must(t, err)
	if after.Current[MemConstants] != before.Current[MemConstants] {
		t.Fatalf("in-place update allocated: %d -> %d", before.Current[MemConstants], after.Current[MemConstants])
	}
	// An in-place update publishes a new generation id (0.3): runs begun afterwards report it.
	v, g := readRun[float32](t, c, "a")
	if v[0] != 8 || g <= gen || c.Generation() != g {
		t.Fatalf("after in-place update: %v in generation %d (was %d, container says %d)", v, g, gen, c.Generation())
	}
}

func TestRun(t *testing.T) {
	rt := hostRuntime(t)
	c := twoConstantContainer(t, rt)
	must(t, c.UpdateFromHost([]HostTensor{
		HostTensorOf("a", []int64{2, 3}, []float32{1, 2, 3, 4, 5, 6}),
		HostTensorOf("b", []int64{4}, []int32{1, 2, 3, 4}),
	}, nil))
	must(t, c.Swap())
	r, err := c.BeginRun()
	must(t, err)
	if r.Container() != c || r.Generation() != c.Generation() || r.Stream() != nil {
		t.Fatal("run accessors")
	}
	a, err := r.Tensor("a")
	must(t, err)
	if ab, err := a.Bytes(); a.Device() != DeviceCPU || a.DType() != DTypeF32 || !equal(a.Shape(), []int64{2, 3}) || err != nil || len(ab) != 24 || a.Writable() {
		t.Fatalf("run tensor %+v", a)
	}
	_, err = r.Tensor("zz")
	wantCode(t, err, ErrNotFound, "zz")

	// Read copies through the run's stream into Go memory.
	got := make([]byte, 8)
	must(t, r.Read("b", 4, got))
	if v := unsafe.Slice((*int32)(unsafe.Pointer(&got[0])), 2); v[0] != 2 || v[1] != 3 {
		t.Fatalf("Read(b, 4, 8 bytes) = %v", v)
	}
	if v, err := ReadValues[float32](r, "a"); err != nil || !equal(v, []float32{1, 2, 3, 4, 5, 6}) {
		t.Fatalf("ReadValues(a) = %v, %v", v, err)
	}
	must(t, r.Read("b", 16, nil)) // an empty read at the end is fine
	wantCode(t, r.Read("b", 12, make([]byte, 8)), ErrInvalidArgument, "b")
	wantCode(t, r.Read("zz", 0, got), ErrNotFound, "zz")
	_, err = ReadValues[int64](r, "a")
	wantCode(t, err, ErrInvalidArgument, "F32")
	m, err := NewConstantMap()
	must(t, err)
	defer m.Close()
	wantCode(t, m.Set("a", a), ErrInvalidArgument, "run")
	wantCode(t, c.BindTensor("a", a), ErrInvalidArgument)

	// Runs begun on many goroutines at once.
	var wg sync.WaitGroup
	for i := 0; i < 8; i++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			v, _ := readRun[int32](t, c, "b")
			if !equal(v, []int32{1, 2, 3, 4}) {
				t.Errorf("concurrent run read %v", v)
			}
		}()
	}
	wg.Wait()

	must(t, r.End())
	must(t, r.End()) // idempotent
	_, err = r.Tensor("a")
	wantClosed(t, err)
	wantClosed(t, r.Read("a", 0, got))
	if r.Generation() != 0 || r.Stream() != nil {
		t.Fatal("an ended run reports state")
	}
}

func TestRunsSeeOneGenerationDuringSwaps(t *testing.T) {
	rt := hostRuntime(t)
	c, err := NewContainer(rt, &ContainerOptions{Constants: []ConstantDecl{
		{FQN: "x", DType: DTypeI64, Shape: []int64{256}}, {FQN: "y", DType: DTypeI64, Shape: []int64{256}}}})
	must(t, err)
	defer c.Close()
	fill := func(v int64) []int64 {
		s := make([]int64, 256)
		for i := range s {
			s[i] = v
		}
		return s
	}
	update := func(v int64) error {
		return c.UpdateFromHost([]HostTensor{HostTensorOf("x", []int64{256}, fill(v)), HostTensorOf("y", []int64{256}, fill(v))}, nil)
	}
	must(t, update(1))
	must(t, c.Swap())
	stop := make(chan struct{})
	var wg sync.WaitGroup
	for g := 0; g < 4; g++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for {
				select {
				case <-stop:
					return
				default:
				}
				r, err := c.BeginRun()
				if err != nil {
					t.Error(err)
					return
				}
				x, err1 := r.Tensor("x")
				y, err2 := r.Tensor("y")
				if err1 != nil || err2 != nil {
					t.Error(err1, err2)
				}
				xs, _ := Values[int64](x)
				ys, _ := Values[int64](y)
				for i := range xs {
					if xs[i] != xs[0] || ys[i] != xs[0] {
						t.Errorf("run saw a mix of generations: x[%d]=%d y[%d]=%d x[0]=%d", i, xs[i], i, ys[i], xs[0])
						break
					}
				}
				if err := r.End(); err != nil {
					t.Error(err)
				}
			}
		}()
	}
	for v := int64(2); v < 30; v++ {
		if err := update(v); err != nil && !errors.Is(err, ErrBusy) {
			t.Error(err)
		}
		if err := c.Swap(); err != nil {
			t.Error(err)
		}
	}
	close(stop)
	wg.Wait()
}

func TestNewContainerFromMap(t *testing.T) {
	rt := hostRuntime(t)
	m, err := NewConstantMap()
	must(t, err)
	defer m.Close()
	_, w := bufferTensor(t, []int64{3}, []float64{0.5, 1.5, 2.5})
	must(t, m.Set("layers.0.w", w))
	c, err := NewContainerFromMap(rt, m, "from-map")
	must(t, err)
	defer c.Close()
	if c.Generation() == 0 || c.NumConstants() != 1 {
		t.Fatalf("from map: generation %d, %d constants", c.Generation(), c.NumConstants())
	}
	info, err := c.ConstantInfo(0)
	must(t, err)
	if info.FQN != "layers.0.w" || info.Placement != PlacementDevice || info.DType != DTypeF64 {
		t.Fatalf("info %+v", info)
	}
	if v, _ := readRun[float64](t, c, "layers.0.w"); !equal(v, []float64{0.5, 1.5, 2.5}) {
		t.Fatalf("read %v", v)
	}
	must(t, m.Close())
	_, err = NewContainerFromMap(rt, m, "")
	wantClosed(t, err)
}

// ---- fold callbacks -------------------------------------------------------------------

func foldContainer(t *testing.T) *Container {
	rt := hostRuntime(t)
	c, err := NewContainer(rt, &ContainerOptions{Name: "folded", Constants: []ConstantDecl{
		{FQN: "w", DType: DTypeF32, Shape: []int64{2, 3}},
		{FQN: "wt", DType: DTypeF32, Shape: []int64{3, 2}, Flags: ConstantDerived},
	}})
	must(t, err)
	t.Cleanup(func() { c.Close() })
	return c
}

func transpose(run *FoldRun) error {
	w, err := run.Tensor("w")
	if err != nil {
		return err
	}
	wt, err := run.Tensor("wt")
	if err != nil {
		return err
	}
	src, err := Values[float32](w)
	if err != nil {
		return err
	}
	return WithSlice(wt, func(dst []float32) error {
		for i := 0; i < 2; i++ {
			for j := 0; j < 3; j++ {
				dst[j*2+i] = src[i*3+j]
			}
		}
		return nil
	})
}

func TestFold(t *testing.T) {
	c := foldContainer(t)
	info, err := c.ConstantInfo(1)
	must(t, err)
	if info.Flags&ConstantDerived == 0 {
		t.Fatal("the derived flag is lost")
	}
	w := []HostTensor{HostTensorOf("w", []int64{2, 3}, []float32{0, 1, 2, 3, 4, 5})}
	wantCode(t, c.UpdateFromHost(w, nil), ErrInvalidArgument, "fold")

	sentinel := errors.New("my fold failed")
	err = c.UpdateFromHost(w, &UpdateOptions{Fold: func(*FoldRun) error { return sentinel }})
	var fe *FoldError
	if !errors.Is(err, sentinel) || !errors.As(err, &fe) {
		t.Fatalf("fold error not propagated: %v", err)
	}
	wantCode(t, c.Swap(), ErrFailedPrecondition) // the failed update staged nothing

	// A library error returned by the callback keeps its code.
	err = c.UpdateFromHost(w, &UpdateOptions{Fold: func(r *FoldRun) error {
		_, err := r.Tensor("missing")
		return err
	}})
	wantCode(t, err, ErrNotFound, "missing")

	// The callback's status crosses the C API (wharf_status_create) and comes back with its
	// code and message; any other error crosses as FAILED_PRECONDITION with its text.
	mine := &Error{Code: CodeResourceExhausted, Message: "fold scratch budget of 64 bytes exceeded"}
	err = c.UpdateFromHost(w, &UpdateOptions{Fold: func(*FoldRun) error { return mine }})
	if !errors.As(err, &fe) || fe.Status == nil {
		t.Fatalf("fold error without the library's status: %v", err)
	}
	if fe.Status.Code != CodeResourceExhausted ||
		fe.Status.Message != "container 'folded': fold callback: fold scratch budget of 64 bytes exceeded" {
		t.Fatalf("the library reported %v", fe.Status)
	}
	if !errors.Is(err, mine) || !errors.Is(err, ErrResourceExhausted) {
		t.Fatalf("the callback's error is not reachable: %v", err)
	}
	err = c.UpdateFromHost(w, &UpdateOptions{Fold: func(*FoldRun) error { return sentinel }})
	if !errors.As(err, &fe) || fe.Status == nil || fe.Status.Code != CodeFailedPrecondition ||
		!strings.HasSuffix(fe.Status.Message, ": my fold failed") {
		t.Fatalf("a plain error crossed as %v", fe.Status)
	}
	wantCode(t, c.Swap(), ErrFailedPrecondition) // nothing was staged

	var kept *FoldRun
	calls := 0
	err = c.UpdateFromHost(w, &UpdateOptions{Fold: func(r *FoldRun) error {
		calls++
		kept = r
		if r.Stream() != nil {
			return errors.New("a host-backend fold got a stream")
		}
		if err := transpose(r); err != nil {
			return err
		}
		back := make([]byte, 4)
		if err := r.Read("wt", 4, back); err != nil {
			return err
		}
		if v := *(*float32)(unsafe.Pointer(&back[0])); v != 3 {
			return fmt.Errorf("FoldRun.Read(wt[1]) = %v", v)
		}
		return nil
	}})
	must(t, err)
	if calls != 1 {
		t.Fatalf("fold called %d times", calls)
	}
	_, err = kept.Tensor("w")
	wantClosed(t, err) // a FoldRun is invalid after its callback
	wantClosed(t, kept.Read("w", 0, make([]byte, 4)))
	must(t, c.Swap())
	if v, _ := readRun[float32](t, c, "wt"); !equal(v, []float32{0, 3, 1, 4, 2, 5}) {
		t.Fatalf("derived wt = %v", v)
	}

	// A map may not supply a derived constant.
	err = c.UpdateFromHost([]HostTensor{HostTensorOf("wt", []int64{3, 2}, make([]float32, 6))}, &UpdateOptions{Fold: transpose})
	wantCode(t, err, ErrInvalidArgument, "derived")
}

// A fold may write only derived constants and the constants its update writes: the others
// share their storage with the active generation, which open and new runs read (issue 23,
// defect 1). Writing one used to change what the open run below read, with no swap.
func TestFoldCannotWriteConstantsItsUpdateDidNotWrite(t *testing.T) {
	rt := hostRuntime(t)
	c, err := NewContainer(rt, &ContainerOptions{Name: "folded", Constants: []ConstantDecl{
		{FQN: "a", DType: DTypeF32, Shape: []int64{4}},
		{FQN: "b", DType: DTypeF32, Shape: []int64{4}},
		{FQN: "d", DType: DTypeF32, Shape: []int64{4}, Flags: ConstantDerived},
	}})
	must(t, err)
	defer c.Close()
	sum := func(r *FoldRun) error {
		a, err := r.Tensor("a")
		if err != nil {
			return err
		}
		b, err := r.Tensor("b")
		if err != nil {
			return err
		}
		d, err := r.Tensor("d")
		if err != nil {
			return err
		}
		av, err := Values[float32](a)
		if err != nil {
			return err
		}
		bv, err := Values[float32](b)
		if err != nil {
			return err
		}
		return SetValues(d, []float32{av[0] + bv[0], av[1] + bv[1], av[2] + bv[2], av[3] + bv[3]})
	}
	must(t, c.UpdateFromHost([]HostTensor{
		HostTensorOf("a", []int64{4}, []float32{1, 1, 1, 1}),
		HostTensorOf("b", []int64{4}, []float32{10, 10, 10, 10}),
	}, &UpdateOptions{Fold: sum}))
	must(t, c.Swap())

	open, err := c.BeginRun()
	must(t, err)
	defer open.End()
	var writeB, writeA, writable error
	must(t, c.UpdateFromHost([]HostTensor{HostTensorOf("a", []int64{4}, []float32{2, 2, 2, 2})},
		&UpdateOptions{Fold: func(r *FoldRun) error {
			b, err := r.Tensor("b") // not written by this update: the active generation's
			if err != nil {
				return err
			}
			if b.Writable() {
				writable = errors.New("b is writable")
			}
			writeB = SetValues(b, []float32{99, 99, 99, 99})
			a, err := r.Tensor("a") // written by this update: fresh storage
			if err != nil {
				return err
			}
			writeA = SetValues(a, []float32{3, 3, 3, 3})
			return sum(r)
		}}))
	if writable != nil {
		t.Fatal(writable)
	}
	wantCode(t, writeB, ErrFailedPrecondition, "read-only", "does not write")
	must(t, writeA)
	if v, err := ReadValues[float32](open, "b"); err != nil || !equal(v, []float32{10, 10, 10, 10}) {
		t.Fatalf("the open run reads b = %v, %v", v, err)
	}
	must(t, c.Swap())
	if v, _ := readRun[float32](t, c, "d"); !equal(v, []float32{13, 13, 13, 13}) {
		t.Fatalf("derived d = %v", v)
	}
}

func TestFoldPanicIsReraised(t *testing.T) {
	c := foldContainer(t)
	w := []HostTensor{HostTensorOf("w", []int64{2, 3}, make([]float32, 6))}
	func() {
		defer func() {
			if v := recover(); v != "boom" {
				t.Fatalf("recovered %v, want the callback's panic", v)
			}
		}()
		_ = c.UpdateFromHost(w, &UpdateOptions{Fold: func(*FoldRun) error { panic("boom") }})
		t.Fatal("no panic")
	}()
	// The container is usable afterwards (the C++ update's locks were released).
	must(t, c.UpdateFromHost(w, &UpdateOptions{Fold: transpose}))
	must(t, c.Swap())
}

func TestConcurrentUpdateIsBusy(t *testing.T) {
	c := foldContainer(t)
	w := []HostTensor{HostTensorOf("w", []int64{2, 3}, make([]float32, 6))}
	inFold, release := make(chan struct{}), make(chan struct{})
	done := make(chan error, 1)
	go func() {
		done <- c.UpdateFromHost(w, &UpdateOptions{Fold: func(r *FoldRun) error {
			close(inFold)
			<-release
			return transpose(r)
		}})
	}()
	<-inFold
	err := c.UpdateFromHost(w, &UpdateOptions{Fold: transpose})
	wantCode(t, err, ErrBusy)
	close(release)
	must(t, <-done)
}

// ---- bound user memory ----------------------------------------------------------------

func TestBindTensor(t *testing.T) {
	rt := hostRuntime(t)
	c := twoConstantContainer(t, rt)
	b, err := NewHostBufferFrom([]int32{4, 3, 2, 1})
	must(t, err)
	tb, err := b.Tensor(0, DTypeI32, []int64{4})
	must(t, err)
	must(t, c.UpdateFromHost([]HostTensor{HostTensorOf("a", []int64{2, 3}, make([]float32, 6))}, nil))
	must(t, c.BindTensor("b", tb))
	must(t, c.Swap())
	r, err := c.BeginRun()
	must(t, err)
	rb, err := r.Tensor("b")
	must(t, err)
	if pointer(t, rb) != pointer(t, tb) {
		t.Fatal("the bound constant was copied")
	}
	must(t, r.End())
	must(t, b.Close())
	if !stillAllocated(&b.h) {
		t.Fatal("a bound buffer was freed while the container used it")
	}
	if v, _ := readRun[int32](t, c, "b"); !equal(v, []int32{4, 3, 2, 1}) {
		t.Fatalf("bound b = %v", v)
	}

	wrong, err := NewHostBufferFrom([]float32{1, 2, 3, 4})
	must(t, err)
	defer wrong.Close()
	tw, err := wrong.Tensor(0, DTypeF32, []int64{4})
	must(t, err)
	wantCode(t, c.BindTensor("b", tw), ErrInvalidArgument, "b")
	wantCode(t, c.BindTensor("zz", tw), ErrNotFound, "zz")
	if wrong.h.deps.Load() != 0 {
		t.Fatal("a failed bind kept a reference to the buffer")
	}
	external, err := NewTensor(pointer(t, tw), DTypeI32, DeviceCPU, 0, []int64{4}, nil)
	must(t, err)
	wantCode(t, c.BindTensor("b", external), ErrInvalidArgument, "HostBuffer")

	must(t, c.Close())
	if !freed(&b.h) {
		t.Fatal("the bound buffer was not released when the container was freed")
	}
}

// ---- lifetimes ------------------------------------------------------------------------

func TestRuntimeClosedBeforeContainer(t *testing.T) {
	rt, err := NewRuntime(&RuntimeOptions{Backend: BackendHost})
	must(t, err)
	c, err := NewContainer(rt, &ContainerOptions{Constants: []ConstantDecl{{FQN: "x", DType: DTypeU8, Shape: []int64{3}}}})
	must(t, err)
	must(t, rt.Close())
	if !stillAllocated(&rt.h) {
		t.Fatal("the runtime was freed under a live container")
	}
	_, err = NewContainer(rt, nil)
	wantClosed(t, err)
	// The container keeps working.
	must(t, c.UpdateFromHost([]HostTensor{HostTensorOf("x", []int64{3}, []uint8{7, 8, 9})}, nil))
	must(t, c.Swap())
	if v, _ := readRun[uint8](t, c, "x"); !equal(v, []uint8{7, 8, 9}) {
		t.Fatalf("x = %v", v)
	}
	must(t, c.Close())
	if !freed(&c.h) || !freed(&rt.h) {
		t.Fatal("closing the last container did not free the runtime")
	}
}

func TestContainerClosedBeforeRun(t *testing.T) {
	rt := hostRuntime(t)
	c, err := NewContainer(rt, &ContainerOptions{Constants: []ConstantDecl{{FQN: "x", DType: DTypeU8, Shape: []int64{2}}}})
	must(t, err)
	must(t, c.UpdateFromHost([]HostTensor{HostTensorOf("x", []int64{2}, []uint8{1, 2})}, nil))
	must(t, c.Swap())
	r, err := c.BeginRun()
	must(t, err)
	must(t, c.Close())
	must(t, rt.Close())
	_, err = c.BeginRun()
	wantClosed(t, err)
	x, err := r.Tensor("x")
	if v := values[uint8](t, x, err); !equal(v, []uint8{1, 2}) {
		t.Fatalf("a run outliving its container's Close read %v", v)
	}
	if !stillAllocated(&c.h) || !stillAllocated(&rt.h) {
		t.Fatal("parents were freed under an open run")
	}
	must(t, r.End())
	if !freed(&c.h) || !freed(&rt.h) {
		t.Fatal("ending the last run did not free the closed parents")
	}
}

func TestFinalizerBackstop(t *testing.T) {
	var logs bytes.Buffer
	var mu sync.Mutex
	log.SetOutput(writerFunc(func(p []byte) (int, error) {
		mu.Lock()
		defer mu.Unlock()
		return logs.Write(p)
	}))
	defer log.SetOutput(os.Stderr)
	func() {
		m, err := NewConstantMap()
		must(t, err)
		_ = m.Len()
	}()
	for i := 0; i < 100; i++ {
		runtime.GC()
		time.Sleep(10 * time.Millisecond)
		mu.Lock()
		s := logs.String()
		mu.Unlock()
		if strings.Contains(s, "constant map was garbage-collected without Close") {
			return
		}
	}
	t.Fatalf("no leak was logged; log: %q", logs.String())
}

type writerFunc func([]byte) (int, error)

func (f writerFunc) Write(p []byte) (int, error) { return f(p) }

// ---- logging --------------------------------------------------------------------------

func TestLogHandler(t *testing.T) {
	var mu sync.Mutex
	var lines []string
	SetLogHandler(func(level LogLevel, msg string) {
		mu.Lock()
		defer mu.Unlock()
		lines = append(lines, level.String()+": "+msg)
	}, LogInfo)
	defer SetLogHandler(nil, LogWarn)
	rt, err := NewRuntime(nil) // AUTO logs its choice (WARN when a CUDA build falls back to the host)
	must(t, err)
	must(t, rt.Close())
	mu.Lock()
	got := strings.Join(lines, "\n")
	mu.Unlock()
	if !strings.Contains(got, "info: runtime: backend AUTO chose") && !strings.Contains(got, "warn: runtime: backend AUTO chose") {
		t.Fatalf("log lines: %q", got)
	}
	SetLogHandler(nil, LogWarn)
	mu.Lock()
	lines = nil
	mu.Unlock()
	rt, err = NewRuntime(nil)
	must(t, err)
	must(t, rt.Close())
	mu.Lock()
	defer mu.Unlock()
	if len(lines) != 0 {
		t.Fatalf("a removed handler still received %q", lines)
	}
}

// The adapters for the ecosystem's loggers: the standard log package (LogTo) and log/slog's
// levels (SlogLevel; log/slog itself needs Go 1.21).
func TestLogAdapters(t *testing.T) {
	var buf bytes.Buffer
	var mu sync.Mutex
	logger := log.New(writerFunc(func(p []byte) (int, error) {
		mu.Lock()
		defer mu.Unlock()
		return buf.Write(p)
	}), "", 0)
	SetLogHandler(LogTo(logger), LogDebug)
	defer SetLogHandler(nil, LogWarn)
	c := twoConstantContainer(t, hostRuntime(t))
	must(t, c.UpdateFromHost([]HostTensor{HostTensorOf("b", []int64{4}, []int32{1, 2, 3, 4})}, nil))
	mu.Lock()
	got := buf.String()
	mu.Unlock()
	if !strings.Contains(got, "wharf: debug: container 'two': update of 1 constants") {
		t.Fatalf("log lines: %q", got)
	}
	for level, want := range map[LogLevel]int{LogDebug: -4, LogInfo: 0, LogWarn: 4, LogError: 8} {
		if level.SlogLevel() != want {
			t.Errorf("%v.SlogLevel() = %d, want %d", level, level.SlogLevel(), want)
		}
	}
}

// SPDX-License-Identifier: Apache-2.0

package wharf

import (
	"os"
	"path/filepath"
	"testing"
)

// ---- 0.3 additions: dtypes, metadata on any map, updates from files -------------------

func TestDTypesSince03(t *testing.T) {
	cases := []struct {
		d          DType
		name       string
		bits, size int
	}{
		{DTypeU16, "U16", 16, 2}, {DTypeU32, "U32", 32, 4}, {DTypeU64, "U64", 64, 8}, {DTypeC64, "C64", 64, 8},
		{DTypeF8E8M0, "F8_E8M0", 8, 1}, {DTypeF8E4M3FNUZ, "F8_E4M3FNUZ", 8, 1},
		{DTypeF8E5M2FNUZ, "F8_E5M2FNUZ", 8, 1}, {DTypeF4, "F4", 4, 0}, {DTypeF6E2M3, "F6_E2M3", 6, 0},
		{DTypeF6E3M2, "F6_E3M2", 6, 0}, {DTypeF32, "F32", 32, 4}, {DTypeBool, "BOOL", 8, 1},
	}
	for _, c := range cases {
		if c.d.String() != c.name || c.d.Bits() != c.bits || c.d.Size() != c.size {
			t.Errorf("%d: got %q, %d bits, %d bytes; want %q, %d, %d", int32(c.d), c.d.String(), c.d.Bits(),
				c.d.Size(), c.name, c.bits, c.size)
		}
		if d, err := ParseDType(c.name); err != nil || d != c.d {
			t.Errorf("ParseDType(%q) = %v, %v", c.name, d, err)
		}
	}
	if DType(77).Bits() != 0 {
		t.Error("an unknown dtype has bits")
	}
	if DTypeOf[uint16]() != DTypeU16 || DTypeOf[uint32]() != DTypeU32 || DTypeOf[uint64]() != DTypeU64 ||
		DTypeOf[complex64]() != DTypeC64 {
		t.Fatal("DTypeOf maps a Go type to the wrong dtype")
	}
}

func TestSubByteAndNewDTypesRoundTrip(t *testing.T) {
	buf, err := NewHostBufferFrom([]uint8{0x21, 0x43, 0x65, 0x87, 0xa9, 0xcb})
	must(t, err)
	defer buf.Close()
	f4, err := buf.Tensor(0, DTypeF4, []int64{2, 6}) // 12 elements of 4 bits: 6 bytes
	must(t, err)
	if f4.NumBytes() != 6 {
		t.Fatalf("F4 [2 6] NumBytes = %d, want 6", f4.NumBytes())
	}
	f6, err := buf.Tensor(0, DTypeF6E2M3, []int64{8}) // 8 elements of 6 bits: 6 bytes
	must(t, err)
	_, err = buf.Tensor(0, DTypeF4, []int64{3}) // 12 bits
	wantCode(t, err, ErrInvalidArgument, "12 bits")
	_, u64 := bufferTensor(t, []int64{2}, []uint64{1 << 40, 7})
	_, c64 := bufferTensor(t, []int64{1}, []complex64{complex(1.5, -2)})

	m, err := NewConstantMap()
	must(t, err)
	defer m.Close()
	must(t, m.Set("f4", f4))
	must(t, m.Set("f6", f6))
	must(t, m.Set("u64", u64))
	must(t, m.Set("c64", c64))
	path := filepath.Join(t.TempDir(), "dtypes.safetensors")
	must(t, m.Save(path))
	back, err := LoadSafetensors(path)
	must(t, err)
	defer back.Close()
	got, err := back.Find("f4")
	must(t, err)
	if b, err := got.Bytes(); err != nil || got.DType() != DTypeF4 || !equal(b, []byte{0x21, 0x43, 0x65, 0x87, 0xa9, 0xcb}) {
		t.Fatalf("f4 read back as %v %v (%v)", got.DType(), b, err)
	}
	got, err = back.Find("f6")
	must(t, err)
	if got.DType() != DTypeF6E2M3 || got.NumBytes() != 6 {
		t.Fatalf("f6 read back as %v, %d bytes", got.DType(), got.NumBytes())
	}
	got, err = back.Find("u64")
	if v := values[uint64](t, got, err); !equal(v, []uint64{1 << 40, 7}) {
		t.Fatalf("u64 = %v", v)
	}
	got, err = back.Find("c64")
	if v := values[complex64](t, got, err); !equal(v, []complex64{complex(1.5, -2)}) {
		t.Fatalf("c64 = %v", v)
	}
}

func TestSetMetadata(t *testing.T) {
	m, err := NewConstantMap()
	must(t, err)
	defer m.Close()
	_, w := bufferTensor(t, []int64{2}, []float32{1, 2})
	must(t, m.Set("w", w))
	must(t, m.SetMetadata("format", "pt"))
	must(t, m.SetMetadata("step", "1"))
	must(t, m.SetMetadata("format", "np")) // replaced in place
	must(t, m.SetMetadata("", ""))         // empty key and value are allowed
	wantCode(t, m.SetMetadata("bad\xff", "x"), ErrInvalidArgument, "UTF-8")
	wantCode(t, m.SetMetadata("nul", "a\x00b"), ErrInvalidArgument, "NUL", "nul")
	md, err := m.Metadata()
	must(t, err)
	if len(md) != 3 || md["format"] != "np" || md["step"] != "1" || md[""] != "" {
		t.Fatalf("metadata %v", md)
	}
	path := filepath.Join(t.TempDir(), "meta.safetensors")
	must(t, m.Save(path))
	back, err := LoadSafetensors(path)
	must(t, err)
	defer back.Close()
	if md, err := back.Metadata(); err != nil || len(md) != 3 || md["format"] != "np" || md["step"] != "1" {
		t.Fatalf("metadata read back: %v %v", md, err)
	}
	must(t, m.Close())
	wantClosed(t, m.SetMetadata("k", "v"))
}

// saveFloats writes a safetensors file of F32 tensors.
func saveFloats(t *testing.T, path string, tensors map[string][]float32, order ...string) {
	t.Helper()
	m := hostMap(t, tensors, order...)
	must(t, m.Save(path))
}

func TestContainerUpdateFromFile(t *testing.T) {
	rt := hostRuntime(t)
	dir := t.TempDir()
	base := hostMap(t, map[string][]float32{"a": {1, 2}, "b": {3, 4, 5}}, "a", "b")
	c, err := NewContainerFromMap(rt, base, "file")
	must(t, err)
	defer c.Close()
	g1 := c.Generation()

	// A partial file: b only.
	partial := filepath.Join(dir, "b.safetensors")
	saveFloats(t, partial, map[string][]float32{"b": {-3, -4, -5}}, "b")
	must(t, c.UpdateFromFile(partial, nil))
	must(t, c.Swap())
	if v, g := readRun[float32](t, c, "b"); !equal(v, []float32{-3, -4, -5}) || g == g1 {
		t.Fatalf("after the file update: b = %v, generation %d (was %d)", v, g, g1)
	}
	if v, _ := readRun[float32](t, c, "a"); !equal(v, []float32{1, 2}) {
		t.Fatalf("a (not in the file) = %v", v)
	}
	// RequireFull refuses the partial file.
	wantCode(t, c.UpdateFromFile(partial, &UpdateOptions{RequireFull: true}), ErrInvalidArgument, "a")

	// Failures change nothing: a missing file, a corrupt one, an unknown tensor, a wrong shape.
	g2 := c.Generation()
	err = c.UpdateFromFile(filepath.Join(dir, "missing.safetensors"), nil)
	wantCode(t, err, ErrNotFound)
	corrupt := filepath.Join(dir, "corrupt.safetensors")
	data, err := os.ReadFile(partial)
	must(t, err)
	must(t, os.WriteFile(corrupt, data[:len(data)-1], 0o644))
	wantCode(t, c.UpdateFromFile(corrupt, nil), ErrDataCorrupt)
	unknown := filepath.Join(dir, "unknown.safetensors")
	saveFloats(t, unknown, map[string][]float32{"a": {9, 9}, "zz": {1}}, "a", "zz")
	wantCode(t, c.UpdateFromFile(unknown, nil), ErrNotFound, "zz")
	shape := filepath.Join(dir, "shape.safetensors")
	saveFloats(t, shape, map[string][]float32{"a": {9, 9, 9}}, "a")
	wantCode(t, c.UpdateFromFile(shape, nil), ErrInvalidArgument, "a")
	if c.Generation() != g2 {
		t.Fatal("a failed file update changed the generation")
	}
	if v, _ := readRun[float32](t, c, "a"); !equal(v, []float32{1, 2}) {
		t.Fatalf("a failed file update wrote a: %v", v)
	}
	// In place: published at once.
	whole := filepath.Join(dir, "whole.safetensors")
	saveFloats(t, whole, map[string][]float32{"a": {7, 8}, "b": {0, 0, 1}}, "a", "b")
	must(t, c.UpdateFromFile(whole, &UpdateOptions{Target: TargetActiveInPlace, RequireFull: true}))
	if v, _ := readRun[float32](t, c, "a"); !equal(v, []float32{7, 8}) {
		t.Fatalf("after the in-place file update: a = %v", v)
	}
	must(t, c.Close())
	wantClosed(t, c.UpdateFromFile(whole, nil))
}

func TestStoreUpdateFromFile(t *testing.T) {
	rt := hostRuntime(t)
	store := newStore(t, rt)
	prefill, decode := twoSharingContainers(t, rt, store)
	dir := t.TempDir()
	path := filepath.Join(dir, "store.safetensors")
	saveFloats(t, path, map[string][]float32{"embed": filled(embedN, 5), "b.w": {6, 7, 8}}, "embed", "b.w")
	must(t, store.UpdateFromFile(path, nil))
	must(t, store.Swap())
	for _, c := range []*Container{prefill, decode} {
		if v, _ := readRun[float32](t, c, "embed"); v[0] != 5 || v[embedN-1] != 5 {
			t.Fatalf("after the store file update, embed = %v", v[0])
		}
	}
	if v, _ := readRun[float32](t, decode, "b.w"); !equal(v, []float32{6, 7, 8}) {
		t.Fatalf("decode's b.w = %v", v)
	}
	// A file naming a tensor no member declares stages nothing anywhere.
	bad := filepath.Join(dir, "bad.safetensors")
	saveFloats(t, bad, map[string][]float32{"embed": filled(embedN, 9), "nobody": {1}}, "embed", "nobody")
	wantCode(t, store.UpdateFromFile(bad, nil), ErrNotFound, "nobody")
	wantCode(t, store.Swap(), ErrFailedPrecondition, "nothing staged")
	if v, _ := readRun[float32](t, prefill, "embed"); v[0] != 5 {
		t.Fatalf("a failed store file update wrote embed: %v", v[0])
	}
}

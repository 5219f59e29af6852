// SPDX-License-Identifier: Apache-2.0

package wharf

import (
	"bytes"
	"os"
	"path/filepath"
	"testing"
)

// The module carries its own copy of the public header (wharf.h, so that it builds outside
// the repository); inside the repository it must equal include/wharf/wharf.h.
func TestHeaderCopyEqualsPublicHeader(t *testing.T) {
	original := filepath.Join("..", "include", "wharf", "wharf.h")
	want, err := os.ReadFile(original)
	if os.IsNotExist(err) {
		t.Skipf("%s not found: the module is used outside the repository", original)
	}
	must(t, err)
	got, err := os.ReadFile("wharf.h")
	must(t, err)
	if !bytes.Equal(got, want) {
		t.Fatalf("go/wharf.h differs from include/wharf/wharf.h: refresh the copy with `go generate` in go/ (or cp include/wharf/wharf.h go/wharf.h)")
	}
}

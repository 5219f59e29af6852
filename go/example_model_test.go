// SPDX-License-Identifier: Apache-2.0

package wharf_test

import (
	"io"
	"os"
	"strings"
	"testing"
)

// TestExampleModel runs Example_model (which has no "Output:" comment, since it needs a
// GPU) and checks what it printed; it skips where the example did (no GPU).
func TestExampleModel(t *testing.T) {
	r, w, err := os.Pipe()
	if err != nil {
		t.Fatal(err)
	}
	stdout := os.Stdout
	os.Stdout = w
	printed := make(chan string)
	go func() {
		b, _ := io.ReadAll(r)
		printed <- string(b)
	}()
	func() {
		defer func() { os.Stdout = stdout; w.Close() }()
		Example_model()
	}()
	out := <-printed
	if strings.HasPrefix(out, "skipped") {
		t.Skip(strings.TrimSpace(out))
	}
	t.Logf("Example_model printed:\n%s", out)
	for _, want := range []string{
		"inputs: 2 outputs: 1\n",
		"same as PyTorch: true\n",
		"an output after its run ended: true\n",
		"norm.weight after the update: 1.5\n",
	} {
		if !strings.Contains(out, want) {
			t.Errorf("Example_model did not print %q", want)
		}
	}
}

// TestExamplePackage runs Example_package (no "Output:" comment: it needs a GPU and a
// package) and checks what it printed; it skips where the example did.
func TestExamplePackage(t *testing.T) {
	r, w, err := os.Pipe()
	if err != nil {
		t.Fatal(err)
	}
	stdout := os.Stdout
	os.Stdout = w
	printed := make(chan string)
	go func() {
		b, _ := io.ReadAll(r)
		printed <- string(b)
	}()
	func() {
		defer func() { os.Stdout = stdout; w.Close() }()
		Example_package()
	}()
	out := <-printed
	if strings.HasPrefix(out, "skipped") {
		t.Skip(strings.TrimSpace(out))
	}
	t.Logf("Example_package printed:\n%s", out)
	for _, want := range []string{"tokens: [", "after the update: "} {
		if !strings.Contains(out, want) {
			t.Errorf("Example_package did not print %q", want)
		}
	}
}

// SPDX-License-Identifier: Apache-2.0

package wharf

import (
	"os"
	"strings"
	"testing"
)

// exampleBody returns the body of func name in example_test.go, dedented one tab.
func exampleBody(t *testing.T, name string) string {
	t.Helper()
	src, err := os.ReadFile("example_test.go")
	must(t, err)
	start := "func " + name + "() {\n"
	i := strings.Index(string(src), start)
	if i < 0 {
		t.Fatalf("example_test.go has no %s", name)
	}
	rest := string(src)[i+len(start):]
	end := strings.Index(rest, "\n}\n")
	if end < 0 {
		t.Fatalf("%s does not end", name)
	}
	var body []string
	for _, line := range strings.Split(rest[:end], "\n") {
		body = append(body, strings.TrimPrefix(line, "\t"))
	}
	return strings.Join(body, "\n")
}

// The README's sessions, model, cancellation, model package and arena snippets are the
// bodies of Example_sessions, Example_model, Example_cancellation, Example_package and
// Example_arena (example_test.go), which go test compiles (and runs: Example_sessions,
// Example_cancellation and Example_arena always, Example_model and Example_package
// through TestExampleModel and TestExamplePackage on a GPU): keep them equal.
func TestReadmeSnippets(t *testing.T) {
	readme, err := os.ReadFile("README.md")
	must(t, err)
	var blocks []string
	for _, part := range strings.Split(string(readme), "```go\n")[1:] {
		if j := strings.Index(part, "```"); j >= 0 {
			blocks = append(blocks, strings.TrimSuffix(part[:j], "\n"))
		}
	}
	for _, name := range []string{"Example_sessions", "Example_model", "Example_cancellation", "Example_package", "Example_arena"} {
		want := exampleBody(t, name)
		found := false
		for _, b := range blocks {
			if b == want {
				found = true
			}
		}
		if !found {
			t.Errorf("no ```go block of README.md is the body of %s (dedented one tab):\n%s", name, want)
		}
	}
}

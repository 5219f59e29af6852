package wharf

import (
	"os"
	"strings"
	"testing"
)

// The README's sessions snippet is the body of Example_sessions (example_test.go), which
// go test runs and checks: keep the two equal.
func TestReadmeSessionsSnippet(t *testing.T) {
	src, err := os.ReadFile("example_test.go")
	must(t, err)
	readme, err := os.ReadFile("README.md")
	must(t, err)
	const start = "func Example_sessions() {\n"
	i := strings.Index(string(src), start)
	if i < 0 {
		t.Fatal("example_test.go has no Example_sessions")
	}
	rest := string(src)[i+len(start):]
	end := strings.Index(rest, "\n}\n")
	if end < 0 {
		t.Fatal("Example_sessions does not end")
	}
	var body []string
	for _, line := range strings.Split(rest[:end], "\n") {
		body = append(body, strings.TrimPrefix(line, "\t"))
	}
	want := strings.Join(body, "\n")
	for _, part := range strings.Split(string(readme), "```go\n")[1:] {
		if j := strings.Index(part, "```"); j >= 0 {
			block := strings.TrimSuffix(part[:j], "\n")
			if block == want {
				return
			}
		}
	}
	t.Fatalf("no ```go block of README.md is the body of Example_sessions (dedented one tab):\n%s", want)
}

// SPDX-License-Identifier: Apache-2.0

package wharf

import (
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
)

// consumerMain is a program of another module that uses this one: it writes a
// safetensors file, serves it, updates, swaps and runs.
const consumerMain = `package main

import (
	"fmt"
	"log"
	"os"
	"path/filepath"

	"wharf.dev/wharf"
)

func main() {
	check := func(err error) {
		if err != nil {
			log.Fatal(err)
		}
	}
	dir, err := os.MkdirTemp("", "wharf-consumer")
	check(err)
	defer os.RemoveAll(dir)
	path := filepath.Join(dir, "w.safetensors")
	buf, err := wharf.NewHostBufferFrom([]float32{1, 2, 3, 4})
	check(err)
	defer buf.Close()
	w, err := buf.Tensor(0, wharf.DTypeF32, []int64{4})
	check(err)
	m, err := wharf.NewConstantMap()
	check(err)
	check(m.Set("w", w))
	check(m.Save(path))
	check(m.Close())

	rt, err := wharf.NewRuntime(&wharf.RuntimeOptions{Backend: wharf.BackendHost})
	check(err)
	defer rt.Close()
	file, err := wharf.LoadSafetensors(path)
	check(err)
	c, err := wharf.NewContainerFromMap(rt, file, "consumer")
	check(err)
	defer c.Close()
	check(file.Close())
	check(c.UpdateFromHost([]wharf.HostTensor{wharf.HostTensorOf("w", []int64{4}, []float32{5, 6, 7, 8})}, nil))
	check(c.Swap())
	run, err := c.BeginRun()
	check(err)
	v, err := wharf.ReadValues[float32](run, "w")
	check(err)
	gen := run.Generation()
	check(run.End())
	fmt.Println("consumer", wharf.Version(), gen, v)
}
`

// The module builds and runs from another module outside the repository: its files
// (copied to a temporary directory, so nothing outside go/ can be reached) are named by a
// replace directive, and libwharf is found through pkg-config (PKG_CONFIG_PATH, as
// go/test.sh sets it) or CGO_LDFLAGS with -tags wharf_no_pkg_config.
func TestModuleBuildsOutsideTheRepository(t *testing.T) {
	if testing.Short() {
		t.Skip("builds another module")
	}
	goBin, err := exec.LookPath("go")
	if err != nil {
		t.Skip("no go command in PATH")
	}
	root := t.TempDir()
	module := filepath.Join(root, "wharf")
	must(t, os.MkdirAll(module, 0o755))
	entries, err := os.ReadDir(".")
	must(t, err)
	copied := 0
	for _, e := range entries {
		name := e.Name()
		if e.IsDir() || strings.HasSuffix(name, "_test.go") ||
			!(strings.HasSuffix(name, ".go") || strings.HasSuffix(name, ".c") || strings.HasSuffix(name, ".h") || name == "go.mod") {
			continue
		}
		data, err := os.ReadFile(name)
		must(t, err)
		must(t, os.WriteFile(filepath.Join(module, name), data, 0o644))
		copied++
	}
	if copied < 5 {
		t.Fatalf("copied only %d files of the module", copied)
	}
	consumer := filepath.Join(root, "consumer")
	must(t, os.MkdirAll(consumer, 0o755))
	goMod := "module example.com/consumer\n\ngo 1.19\n\nrequire wharf.dev/wharf v0.3.0\n\nreplace wharf.dev/wharf => ../wharf\n"
	must(t, os.WriteFile(filepath.Join(consumer, "go.mod"), []byte(goMod), 0o644))
	must(t, os.WriteFile(filepath.Join(consumer, "main.go"), []byte(consumerMain), 0o644))
	args := []string{"run"}
	for _, tag := range buildTags() {
		args = append(args, "-tags", tag)
	}
	cmd := exec.Command(goBin, append(args, ".")...)
	cmd.Dir = consumer
	cmd.Env = append(os.Environ(), "GOFLAGS=-mod=mod", "GOPROXY=off", "GOWORK=off")
	out, err := cmd.CombinedOutput()
	if err != nil {
		t.Fatalf("go run of a consumer module: %v\n%s", err, out)
	}
	want := "consumer " + Version() + " 2 [5 6 7 8]"
	if got := strings.TrimSpace(string(out)); got != want {
		t.Fatalf("consumer printed %q, want %q", got, want)
	}
}

// SPDX-License-Identifier: Apache-2.0

// A Go program of another module that uses wharf.dev/wharf through a replace directive
// (tests/consumers/go_consumer.sh): it loads a safetensors file (w = [1, 2, 3, 4]), serves
// it, updates w, swaps and reads w back through a run.
package main

import (
	"fmt"
	"log"
	"os"

	"wharf.dev/wharf"
)

func main() {
	if len(os.Args) != 2 {
		log.Fatalf("usage: %s FILE.safetensors", os.Args[0])
	}
	check := func(err error) {
		if err != nil {
			log.Fatal(err)
		}
	}
	rt, err := wharf.NewRuntime(&wharf.RuntimeOptions{Backend: wharf.BackendHost})
	check(err)
	defer rt.Close()
	file, err := wharf.LoadSafetensors(os.Args[1])
	check(err)
	model, err := wharf.NewContainerFromMap(rt, file, "consumer")
	check(err)
	defer model.Close()
	check(file.Close())

	fresh := []float32{5, 6, 7, 8}
	check(model.UpdateFromHost([]wharf.HostTensor{wharf.HostTensorOf("w", []int64{4}, fresh)}, nil))
	check(model.Swap())
	run, err := model.BeginRun()
	check(err)
	w, err := wharf.ReadValues[float32](run, "w")
	check(err)
	gen := run.Generation()
	check(run.End())
	fmt.Printf("wharf %s, generation %d: w = %v\n", wharf.Version(), gen, w)
}

package main

import (
	"fmt"
	"io"
	"os"

	"github.com/outrigger-dev/outrigger/pkg/proxy/hotrestart"
)

// runHotRestarter runs this binary's epochs under the hot restarter.
func runHotRestarter(args []string, stderr io.Writer) int {
	bin, err := os.Executable()
	if err != nil {
		fmt.Fprintf(stderr, "error: hot-restarter: cannot find this binary: %v\n", err)
		return 1
	}
	return hotrestart.RunRestarter(bin, args, stderr)
}

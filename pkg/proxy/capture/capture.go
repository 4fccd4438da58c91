package capture

import (
	"errors"
	"fmt"
	"io"
)

// Run is the `sidecar capture` subcommand with its arguments (those after
// "capture"); it returns the exit code: 0 when the rules are installed
// (or removed, or printed), 1 with a message on stderr for bad input or
// when the kernel refuses them.
func Run(args []string, stdout, stderr io.Writer) int {
	c, err := ParseArgs(args, stdout)
	if errors.Is(err, errHelp) {
		return 0
	}
	if err != nil {
		fmt.Fprintf(stderr, "error: capture: %v\n", err)
		return 1
	}
	if c.DryRun {
		fmt.Fprint(stdout, c.Text())
		return 0
	}
	if err := apply(c); err != nil {
		fmt.Fprintf(stderr, "error: capture: %v\n", err)
		return 1
	}
	return 0
}

// Command kubectl-outrigger is the kubectl plugin of Outrigger: with the
// binary on the PATH, `kubectl outrigger ...` shows and changes the proxies
// of pods. See docs/debugging.md.
package main

import (
	"context"
	"os"
	"os/signal"
	"syscall"

	"github.com/outrigger-dev/outrigger/pkg/kubectl"
)

func main() {
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	code := kubectl.Run(ctx, os.Args[1:], os.Stdout, os.Stderr)
	stop()
	os.Exit(code)
}

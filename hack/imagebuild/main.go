// Command imagebuild builds the OCI images of the sidecar and the controller
// without a container engine, and pushes them.
//
//	imagebuild build [flags]   cross-compile the binaries, write OCI layouts
//	imagebuild push  [flags]   the same build, then push every image (index)
//
// Each image is assembled from scratch with go-containerregistry: a layer
// of base files (/etc/passwd and /etc/group with the nonroot user 65532,
// the build machine's CA bundle, /tmp) and a layer holding the static
// binary at /usr/local/bin/<name>; one image per platform, gathered in an
// image index. Every input is fixed (file times and the created time come
// from SOURCE_DATE_EPOCH or the commit time), so the same source gives the
// same digests. `make image` and `make push` run it; see docs/chart.md.
package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"os/signal"
	"strings"
	"syscall"
)

func main() {
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	code := run(ctx, os.Args[1:], os.Stdout, os.Stderr)
	stop()
	os.Exit(code)
}

// errUsage marks a bad command line; its message is printed with the usage.
var errUsage = errors.New("usage")

// run is main with its context and outputs passed in; it returns the exit
// code: 0, or 1 with one "error: ..." line on stderr.
func run(ctx context.Context, args []string, stdout, stderr io.Writer) int {
	if err := dispatch(ctx, args, stdout, stderr); err != nil {
		if errors.Is(err, flag.ErrHelp) {
			return 0
		}
		fmt.Fprintf(stderr, "error: %v\n", err)
		return 1
	}
	return 0
}

// dispatch parses the subcommand and its flags and runs it.
func dispatch(ctx context.Context, args []string, stdout, stderr io.Writer) error {
	if len(args) == 0 || (args[0] != "build" && args[0] != "push") {
		if len(args) > 0 && (args[0] == "-h" || args[0] == "--help" || args[0] == "help") {
			fmt.Fprint(stdout, usage)
			return flag.ErrHelp
		}
		fmt.Fprint(stderr, usage)
		return fmt.Errorf("%w: the first argument is build or push", errUsage)
	}
	cmd := args[0]
	o, err := parseFlags(cmd, args[1:], stderr)
	if err != nil {
		return err
	}
	if cmd == "push" {
		// Checked before building: a missing registry must not cost a
		// cross-compilation first.
		if err := o.checkPush(); err != nil {
			return err
		}
	}
	built, err := build(ctx, o, stderr)
	if err != nil {
		return err
	}
	for _, b := range built {
		fmt.Fprintf(stdout, "%s %s@%s\n", b.name, b.layout, b.digest)
	}
	if cmd == "push" {
		return push(ctx, o, built, stdout, stderr)
	}
	return nil
}

const usage = `Usage: imagebuild build|push [flags]

  build  cross-compiles the sidecar and the controller (CGO_ENABLED=0,
         -trimpath, stamped with the VCS revision like make build) and writes
         one OCI image layout per component under -out.
  push   does the same build, then pushes <registry>/<name>:<tag> for each
         component (the image index with every platform).

Flags (the Makefile passes REGISTRY, TAG and INSECURE=1 as these flags):
  -out DIR               output folder (default bin/images)
  -tag TAG               image tag (default: the chart's appVersion)
  -platforms LIST        comma-separated os/arch (default linux/amd64,linux/arm64)
  -components LIST       comma-separated components (default sidecar,controller)
  -ca-certs FILE         CA bundle copied to /etc/ssl/certs/ca-certificates.crt
                         (default /etc/ssl/certs/ca-certificates.crt; "" or a
                         missing file leaves it out, with a note)
  -source-date-epoch N   image creation time, Unix seconds (default
                         $SOURCE_DATE_EPOCH, else the commit time)
  -registry HOST/PATH    push: registry and path prefix, e.g. ghcr.io/you
  -insecure              push: plain HTTP / unverified TLS to the registry
`

// splitList splits a comma-separated flag value, dropping empty items.
func splitList(s string) []string {
	var out []string
	for _, f := range strings.Split(s, ",") {
		if f = strings.TrimSpace(f); f != "" {
			out = append(out, f)
		}
	}
	return out
}

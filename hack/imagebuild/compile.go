package main

import (
	"context"
	"debug/buildinfo"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"time"

	v1 "github.com/google/go-containerregistry/pkg/v1"
)

// component is one image: a command of this repository.
type component struct {
	name        string // image and binary name
	pkg         string // Go package of the command
	description string
}

// components are the images this program knows, in build order.
var components = []component{
	{name: "sidecar", pkg: "./cmd/sidecar", description: "Outrigger sidecar proxy, configured like Envoy"},
	{name: "controller", pkg: "./cmd/controller", description: "Outrigger controller: sidecar injection and admin operations on the proxies"},
}

// findComponent returns the component called n.
func findComponent(n string) (component, bool) {
	for _, c := range components {
		if c.name == n {
			return c, true
		}
	}
	return component{}, false
}

// platformDir is the folder name of a platform's binaries, e.g. linux_amd64.
func platformDir(p v1.Platform) string { return p.OS + "_" + p.Architecture }

// compile builds every component for platform p into dir with one go build
// (the packages they share compile once). The flags are those of
// `make build` (VCS stamping) plus what a container image wants: static
// (CGO_ENABLED=0), no build paths (-trimpath), no symbol tables (-s -w;
// the build information --version reads stays). The microarchitecture
// levels are pinned to Go's defaults so that the caller's environment does
// not change the result.
func compile(ctx context.Context, cs []component, p v1.Platform, dir string, log io.Writer) error {
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return err
	}
	goCmd := os.Getenv("GO")
	if goCmd == "" {
		goCmd = "go"
	}
	args := []string{"build", "-trimpath", "-buildvcs=auto", "-ldflags=-s -w", "-o", dir + string(filepath.Separator)}
	for _, c := range cs {
		args = append(args, c.pkg)
	}
	cmd := exec.CommandContext(ctx, goCmd, args...)
	cmd.Env = append(os.Environ(), "CGO_ENABLED=0", "GOOS="+p.OS, "GOARCH="+p.Architecture, "GOAMD64=v1", "GOARM64=v8.0")
	cmd.Stdout, cmd.Stderr = log, log
	start := time.Now()
	if err := cmd.Run(); err != nil {
		return fmt.Errorf("go build for %s: %v", p.String(), err)
	}
	fmt.Fprintf(log, "imagebuild: compiled %s in %s\n", p.String(), time.Since(start).Round(time.Millisecond))
	return nil
}

// vcsStamp is the source revision a binary was built from, as recorded in
// its build information (what --version prints).
type vcsStamp struct {
	revision string
	time     time.Time
	modified bool
}

// readStamp reads the VCS stamp of the binary at path; a binary built
// outside a checkout has none (zero revision).
func readStamp(path string) (vcsStamp, error) {
	info, err := buildinfo.ReadFile(path)
	if err != nil {
		return vcsStamp{}, fmt.Errorf("%s: %v", path, err)
	}
	var s vcsStamp
	for _, kv := range info.Settings {
		switch kv.Key {
		case "vcs.revision":
			s.revision = kv.Value
		case "vcs.time":
			if t, err := time.Parse(time.RFC3339, kv.Value); err == nil {
				s.time = t.UTC()
			}
		case "vcs.modified":
			s.modified = kv.Value == "true"
		}
	}
	return s, nil
}

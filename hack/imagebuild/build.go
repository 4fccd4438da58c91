package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"time"

	v1 "github.com/google/go-containerregistry/pkg/v1"
	"github.com/google/go-containerregistry/pkg/v1/empty"
	"github.com/google/go-containerregistry/pkg/v1/layout"
)

// binariesDir is the folder under -out holding the compiled binaries,
// one subfolder per platform (binaries/linux_amd64/sidecar, ...).
const binariesDir = "binaries"

// built is one component's image as written.
type built struct {
	name   string
	layout string  // the OCI layout folder
	digest v1.Hash // the image index's digest
	ref    string  // the layout's ref.name annotation: the tag
}

// build compiles the components for every platform and writes one OCI
// image layout per component, <out>/<name>.
func build(ctx context.Context, o options, log io.Writer) ([]built, error) {
	for _, c := range o.components {
		if _, err := os.Stat(filepath.FromSlash(c.pkg)); err != nil {
			return nil, fmt.Errorf("%s: %v (run from the repository root)", c.pkg, err)
		}
		if err := checkReplaceable(filepath.Join(o.out, c.name)); err != nil {
			return nil, err
		}
	}
	for _, p := range o.platforms {
		if err := compile(ctx, o.components, p, filepath.Join(o.out, binariesDir, platformDir(p)), log); err != nil {
			return nil, err
		}
	}
	// Every binary is stamped from the same checkout: the first one tells.
	first := filepath.Join(o.out, binariesDir, platformDir(o.platforms[0]), o.components[0].name)
	stamp, err := readStamp(first)
	if err != nil {
		return nil, err
	}
	created := creationTime(o, stamp, log)
	if stamp.modified {
		fmt.Fprintf(log, "imagebuild: note: the tree has uncommitted changes; the images are labelled with revision %s but built from a modified tree (--version says Modified)\n", stamp.revision)
	}
	certs, err := readCACerts(o.caCerts, log)
	if err != nil {
		return nil, err
	}
	base, err := newLayer(baseEntries(certs), created)
	if err != nil {
		return nil, err
	}
	var out []built
	for _, c := range o.components {
		lbl := labels(c, stamp, created)
		imgs := make([]v1.Image, len(o.platforms))
		for i, p := range o.platforms {
			bin := filepath.Join(o.out, binariesDir, platformDir(p), c.name)
			if imgs[i], err = platformImage(c, p, base, bin, lbl, created); err != nil {
				return nil, fmt.Errorf("%s %s: %v", c.name, p.String(), err)
			}
		}
		idx := imageIndex(imgs, o.platforms, lbl)
		dir := filepath.Join(o.out, c.name)
		if err := writeLayout(dir, idx, o.tag); err != nil {
			return nil, fmt.Errorf("%s: %v", dir, err)
		}
		d, err := idx.Digest()
		if err != nil {
			return nil, err
		}
		out = append(out, built{name: c.name, layout: dir, digest: d, ref: o.tag})
	}
	return out, nil
}

// creationTime is the images' creation time: SOURCE_DATE_EPOCH when given,
// else the commit time the binaries were stamped with, else the Unix epoch.
func creationTime(o options, stamp vcsStamp, log io.Writer) time.Time {
	switch {
	case o.created != nil:
		return time.Unix(*o.created, 0).UTC()
	case !stamp.time.IsZero():
		return stamp.time
	default:
		fmt.Fprintln(log, "imagebuild: note: no VCS information in the binaries (not built from a git checkout?) and no SOURCE_DATE_EPOCH: the images' creation time is the Unix epoch")
		return time.Unix(0, 0).UTC()
	}
}

// readCACerts reads the CA bundle at path; an empty path or a missing file
// leaves the bundle out of the images, with a note (the proxy then trusts
// only the CAs its configuration names).
func readCACerts(path string, log io.Writer) ([]byte, error) {
	if path == "" {
		fmt.Fprintln(log, "imagebuild: note: no CA bundle (-ca-certs \"\"): the images have no /etc/ssl/certs/ca-certificates.crt")
		return nil, nil
	}
	b, err := os.ReadFile(path)
	if errors.Is(err, os.ErrNotExist) {
		fmt.Fprintf(log, "imagebuild: note: %s not found (install Debian's ca-certificates to include it): the images have no /etc/ssl/certs/ca-certificates.crt\n", path)
		return nil, nil
	}
	if err != nil {
		return nil, err
	}
	if len(b) == 0 {
		return nil, fmt.Errorf("CA bundle %s is empty", path)
	}
	return b, nil
}

// checkReplaceable refuses to replace dir unless it is missing or an OCI
// layout (holds an oci-layout file): -out must not wipe unrelated files.
func checkReplaceable(dir string) error {
	if _, err := os.Stat(dir); errors.Is(err, os.ErrNotExist) {
		return nil
	}
	if _, err := os.Stat(filepath.Join(dir, "oci-layout")); err != nil {
		return fmt.Errorf("%s exists and is not an OCI image layout; remove it or choose another -out", dir)
	}
	return nil
}

// writeLayout replaces dir with an OCI image layout holding idx, tagged
// tag (the org.opencontainers.image.ref.name annotation).
func writeLayout(dir string, idx v1.ImageIndex, tag string) error {
	if err := os.RemoveAll(dir); err != nil {
		return err
	}
	p, err := layout.Write(dir, empty.Index)
	if err != nil {
		return err
	}
	return p.AppendIndex(idx, layout.WithAnnotations(map[string]string{"org.opencontainers.image.ref.name": tag}))
}

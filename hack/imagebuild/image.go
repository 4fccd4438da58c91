package main

import (
	"fmt"
	"os"
	"time"

	v1 "github.com/google/go-containerregistry/pkg/v1"
	"github.com/google/go-containerregistry/pkg/v1/empty"
	"github.com/google/go-containerregistry/pkg/v1/mutate"
	"github.com/google/go-containerregistry/pkg/v1/types"

	proxyoptions "github.com/outrigger-dev/outrigger/pkg/proxy/options"
)

// source is the repository the images are built from (the OCI source label).
const source = "https://github.com/outrigger-dev/outrigger"

// labels are the OCI annotations of component c's image config and index.
// The version is the release the binaries report; the revision is the
// commit they were stamped with (left out when they carry none).
func labels(c component, stamp vcsStamp, created time.Time) map[string]string {
	l := map[string]string{
		"org.opencontainers.image.title":       "outrigger-" + c.name,
		"org.opencontainers.image.description": c.description,
		"org.opencontainers.image.version":     proxyoptions.Release,
		"org.opencontainers.image.source":      source,
		"org.opencontainers.image.created":     created.Format(time.RFC3339),
	}
	if stamp.revision != "" {
		l["org.opencontainers.image.revision"] = stamp.revision
	}
	return l
}

// platformImage is component c's image for platform p: the shared base
// layer, then the binary at /usr/local/bin/<name>.
func platformImage(c component, p v1.Platform, base v1.Layer, binPath string, lbl map[string]string, created time.Time) (v1.Image, error) {
	bin, err := os.ReadFile(binPath)
	if err != nil {
		return nil, err
	}
	binLayer, err := newLayer(binaryEntries(c.name, bin), created)
	if err != nil {
		return nil, err
	}
	at := v1.Time{Time: created}
	img, err := mutate.Append(empty.Image,
		mutate.Addendum{Layer: base, History: v1.History{Created: at, CreatedBy: "imagebuild: users, groups, CA certificates, /tmp"}},
		mutate.Addendum{Layer: binLayer, History: v1.History{Created: at, CreatedBy: "imagebuild: /usr/local/bin/" + c.name}})
	if err != nil {
		return nil, err
	}
	cf, err := img.ConfigFile()
	if err != nil {
		return nil, err
	}
	cf = cf.DeepCopy()
	cf.Created = at
	cf.OS, cf.Architecture, cf.Variant = p.OS, p.Architecture, p.Variant
	cf.Author = source
	cf.Config = v1.Config{
		User:       fmt.Sprintf("%d:%d", nonroot, nonroot),
		Entrypoint: []string{"/usr/local/bin/" + c.name},
		WorkingDir: "/",
		Env:        []string{"PATH=/usr/local/bin:/usr/bin:/bin"},
		Labels:     lbl,
	}
	img, err = mutate.ConfigFile(img, cf)
	if err != nil {
		return nil, err
	}
	img = mutate.MediaType(img, types.OCIManifestSchema1)
	return mutate.ConfigMediaType(img, types.OCIConfigJSON), nil
}

// imageIndex gathers one image per platform in an OCI image index carrying
// the same annotations as the images' labels.
func imageIndex(imgs []v1.Image, ps []v1.Platform, lbl map[string]string) v1.ImageIndex {
	adds := make([]mutate.IndexAddendum, len(imgs))
	for i, img := range imgs {
		adds[i] = mutate.IndexAddendum{Add: img, Descriptor: v1.Descriptor{Platform: &ps[i]}}
	}
	idx := mutate.IndexMediaType(mutate.AppendManifests(empty.Index, adds...), types.OCIImageIndex)
	return mutate.Annotations(idx, lbl).(v1.ImageIndex)
}

package main

import (
	"archive/tar"
	"bytes"
	"compress/gzip"
	"io"
	"time"

	v1 "github.com/google/go-containerregistry/pkg/v1"
	"github.com/google/go-containerregistry/pkg/v1/tarball"
	"github.com/google/go-containerregistry/pkg/v1/types"
)

// nonroot is the user and group the images run as: distroless's nonroot,
// the uid the chart's securityContext and the transparent-capture rules
// expect.
const nonroot = 65532

// passwd and group name root, nobody and nonroot as distroless images do;
// nothing can log in.
const (
	passwd = "root:x:0:0:root:/root:/sbin/nologin\n" +
		"nobody:x:65534:65534:nobody:/nonexistent:/sbin/nologin\n" +
		"nonroot:x:65532:65532:nonroot:/home/nonroot:/sbin/nologin\n"
	group = "root:x:0:\n" +
		"nobody:x:65534:\n" +
		"nonroot:x:65532:\n"
)

// entry is one file or folder of a layer.
type entry struct {
	path     string // without a leading slash
	mode     int64  // permission bits, with the sticky bit where wanted
	dir      bool
	uid, gid int
	data     []byte
}

// baseEntries are the files every image shares: users and groups, the CA
// bundle when there is one (nil leaves it out), a sticky world-writable
// /tmp and the nonroot user's home.
func baseEntries(caCerts []byte) []entry {
	es := []entry{
		{path: "etc/", mode: 0o755, dir: true},
		{path: "etc/group", mode: 0o644, data: []byte(group)},
		{path: "etc/passwd", mode: 0o644, data: []byte(passwd)},
	}
	if caCerts != nil {
		es = append(es,
			entry{path: "etc/ssl/", mode: 0o755, dir: true},
			entry{path: "etc/ssl/certs/", mode: 0o755, dir: true},
			entry{path: "etc/ssl/certs/ca-certificates.crt", mode: 0o644, data: caCerts})
	}
	return append(es,
		entry{path: "home/", mode: 0o755, dir: true},
		entry{path: "home/nonroot/", mode: 0o700, dir: true, uid: nonroot, gid: nonroot},
		entry{path: "tmp/", mode: 0o1777, dir: true})
}

// binaryEntries put the binary at /usr/local/bin/<name>.
func binaryEntries(name string, binary []byte) []entry {
	return []entry{
		{path: "usr/", mode: 0o755, dir: true},
		{path: "usr/local/", mode: 0o755, dir: true},
		{path: "usr/local/bin/", mode: 0o755, dir: true},
		{path: "usr/local/bin/" + name, mode: 0o755, data: binary},
	}
}

// newLayer is an OCI layer (gzip-compressed tar) of es, every entry with
// modification time mtime. The tar and the compression depend on nothing
// else, so the same entries always give the same digest.
func newLayer(es []entry, mtime time.Time) (v1.Layer, error) {
	var buf bytes.Buffer
	zw, err := gzip.NewWriterLevel(&buf, gzip.DefaultCompression)
	if err != nil {
		return nil, err
	}
	tw := tar.NewWriter(zw)
	for _, e := range es {
		h := &tar.Header{
			Name:    e.path,
			Mode:    e.mode,
			Uid:     e.uid,
			Gid:     e.gid,
			ModTime: mtime,
			Format:  tar.FormatPAX,
		}
		if e.dir {
			h.Typeflag = tar.TypeDir
		} else {
			h.Typeflag = tar.TypeReg
			h.Size = int64(len(e.data))
		}
		if err := tw.WriteHeader(h); err != nil {
			return nil, err
		}
		if _, err := tw.Write(e.data); err != nil {
			return nil, err
		}
	}
	if err := tw.Close(); err != nil {
		return nil, err
	}
	if err := zw.Close(); err != nil {
		return nil, err
	}
	compressed := buf.Bytes()
	return tarball.LayerFromOpener(func() (io.ReadCloser, error) {
		return io.NopCloser(bytes.NewReader(compressed)), nil
	}, tarball.WithMediaType(types.OCILayer))
}

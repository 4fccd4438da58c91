package main

import (
	"archive/tar"
	"io"
	"os"
	"strings"
	"testing"
	"time"

	"sigs.k8s.io/yaml"
)

// TestDefaultTag checks that the tag defaults to the chart's appVersion,
// the tag the chart installs when none is set.
func TestDefaultTag(t *testing.T) {
	t.Chdir("../..")
	raw, err := os.ReadFile(chartFile)
	if err != nil {
		t.Fatal(err)
	}
	var chart struct {
		AppVersion string `json:"appVersion"`
	}
	if err := yaml.Unmarshal(raw, &chart); err != nil || chart.AppVersion == "" {
		t.Fatalf("%s: appVersion %q (%v)", chartFile, chart.AppVersion, err)
	}
	o, err := parseFlags("build", nil, io.Discard)
	if err != nil {
		t.Fatal(err)
	}
	if o.tag != chart.AppVersion {
		t.Errorf("default tag %q, want the chart's appVersion %q", o.tag, chart.AppVersion)
	}
	if len(o.platforms) != 2 || o.platforms[0].String() != "linux/amd64" || o.platforms[1].String() != "linux/arm64" {
		t.Errorf("default platforms %v", o.platforms)
	}
}

// TestBadFlags checks that every bad command line is refused with a
// message naming what is wrong.
func TestBadFlags(t *testing.T) {
	for _, tc := range []struct {
		cmd  string
		args []string
		want string
	}{
		{"build", []string{"-platforms", "linux/s390x"}, `platform "linux/s390x": supported are linux/amd64 and linux/arm64`},
		{"build", []string{"-platforms", "linux/amd64,linux/amd64"}, "given twice"},
		{"build", []string{"-platforms", ""}, "no platform given"},
		{"build", []string{"-components", "sidecar,proxy"}, `component "proxy"`},
		{"build", []string{"-source-date-epoch", "yesterday"}, "want Unix seconds"},
		{"build", []string{"-source-date-epoch", "-5"}, "want Unix seconds"},
		{"build", []string{"-tag", "a b"}, `tag "a b"`},
		{"build", []string{"-registry", "example.com"}, "push flags"},
		{"build", []string{"extra"}, `unexpected argument "extra"`},
	} {
		_, err := parseFlags(tc.cmd, append([]string{"-tag", "t"}, tc.args...), io.Discard)
		if err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("%s %q: error %v, want it to contain %q", tc.cmd, tc.args, err, tc.want)
		}
	}
}

// TestPushReference checks the pushed names and the missing or bad
// registry refusals.
func TestPushReference(t *testing.T) {
	o, err := parseFlags("push", []string{"-tag", "v1", "-registry", "ghcr.io/you/"}, io.Discard)
	if err != nil {
		t.Fatal(err)
	}
	if err := o.checkPush(); err != nil {
		t.Fatal(err)
	}
	ref, err := o.reference(components[0])
	if err != nil || ref.String() != "ghcr.io/you/sidecar:v1" {
		t.Errorf("reference %v (%v), want ghcr.io/you/sidecar:v1", ref, err)
	}
	o.registry = ""
	if err := o.checkPush(); err == nil || !strings.Contains(err.Error(), "set REGISTRY") {
		t.Errorf("no registry: %v, want it to say to set REGISTRY", err)
	}
	o.registry = "Bad Registry"
	if err := o.checkPush(); err == nil || !strings.Contains(err.Error(), "bad reference") {
		t.Errorf("bad registry: %v", err)
	}
}

// TestLayerReproducible checks that a layer depends only on its entries
// and their time, and holds them as given.
func TestLayerReproducible(t *testing.T) {
	at := time.Unix(1700000000, 0).UTC()
	es := append(baseEntries([]byte("CERTS")), binaryEntries("sidecar", []byte("ELF"))...)
	a, err := newLayer(es, at)
	if err != nil {
		t.Fatal(err)
	}
	b, err := newLayer(es, at)
	if err != nil {
		t.Fatal(err)
	}
	c, err := newLayer(es, at.Add(time.Second))
	if err != nil {
		t.Fatal(err)
	}
	da, _ := a.Digest()
	db, _ := b.Digest()
	dc, _ := c.Digest()
	if da != db {
		t.Errorf("same entries, digests %s and %s", da, db)
	}
	if da == dc {
		t.Errorf("another time, same digest %s", da)
	}

	rc, err := a.Uncompressed()
	if err != nil {
		t.Fatal(err)
	}
	defer rc.Close()
	tr := tar.NewReader(rc)
	var names []string
	for {
		h, err := tr.Next()
		if err == io.EOF {
			break
		}
		if err != nil {
			t.Fatal(err)
		}
		names = append(names, h.Name)
		if !h.ModTime.Equal(at) || h.Uname != "" || h.Gname != "" {
			t.Errorf("%s: time %s owner names %q/%q", h.Name, h.ModTime, h.Uname, h.Gname)
		}
		if h.Name == "tmp/" && h.Mode != 0o1777 {
			t.Errorf("tmp/ mode %o, want 1777", h.Mode)
		}
	}
	want := "etc/ etc/group etc/passwd etc/ssl/ etc/ssl/certs/ etc/ssl/certs/ca-certificates.crt home/ home/nonroot/ tmp/ usr/ usr/local/ usr/local/bin/ usr/local/bin/sidecar"
	if got := strings.Join(names, " "); got != want {
		t.Errorf("layer entries\n%s\nwant\n%s", got, want)
	}
	if got := baseEntries(nil); len(got) != 6 {
		t.Errorf("without a CA bundle: %d base entries, want 6 (no etc/ssl)", len(got))
	}
}

package main

import (
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"sigs.k8s.io/yaml"
)

// manifest is the part of a krew plugin manifest krew checks.
type manifest struct {
	APIVersion string `json:"apiVersion"`
	Kind       string `json:"kind"`
	Metadata   struct {
		Name string `json:"name"`
	} `json:"metadata"`
	Spec struct {
		Version          string `json:"version"`
		Homepage         string `json:"homepage"`
		ShortDescription string `json:"shortDescription"`
		Description      string `json:"description"`
		Platforms        []struct {
			Selector struct {
				MatchLabels map[string]string `json:"matchLabels"`
			} `json:"selector"`
			URI    string `json:"uri"`
			SHA256 string `json:"sha256"`
			Bin    string `json:"bin"`
		} `json:"platforms"`
	} `json:"spec"`
}

// TestKrewManifest checks the manifest template against what krew
// requires (the name is the file's and the command's, every platform has
// a selector, uri, sha256 and bin) and against hack/plugin-dist.sh: one
// platform per archive it builds, each with the placeholders it fills.
func TestKrewManifest(t *testing.T) {
	path := filepath.Join("..", "..", "hack", "krew", "outrigger.yaml")
	raw, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	var m manifest
	if err := yaml.UnmarshalStrict(raw, &m); err != nil {
		t.Fatalf("%s: %v", path, err)
	}
	if m.APIVersion != "krew.googlecontainertools.github.com/v1alpha2" || m.Kind != "Plugin" {
		t.Errorf("apiVersion %q, kind %q", m.APIVersion, m.Kind)
	}
	if m.Metadata.Name+".yaml" != filepath.Base(path) {
		t.Errorf("metadata.name %q does not match the file name", m.Metadata.Name)
	}
	if m.Spec.Version != "${VERSION}" || m.Spec.Homepage == "" || m.Spec.ShortDescription == "" || m.Spec.Description == "" {
		t.Errorf("spec: %+v", m.Spec)
	}
	script, err := os.ReadFile(filepath.Join("..", "..", "hack", "plugin-dist.sh"))
	if err != nil {
		t.Fatal(err)
	}
	var platforms []string
	for _, p := range m.Spec.Platforms {
		goos, arch := p.Selector.MatchLabels["os"], p.Selector.MatchLabels["arch"]
		platform := goos + "/" + arch
		platforms = append(platforms, platform)
		if !strings.Contains(string(script), " "+platform) && !strings.Contains(string(script), "("+platform) {
			t.Errorf("%s: hack/plugin-dist.sh does not build it", platform)
		}
		wantURI := "https://github.com/outrigger-dev/outrigger/releases/download/${VERSION}/kubectl-outrigger_" + goos + "_" + arch + ".tar.gz"
		if p.URI != wantURI {
			t.Errorf("%s: uri %q, want %q (the archive hack/plugin-dist.sh names)", platform, p.URI, wantURI)
		}
		if p.SHA256 != "${SHA256_"+goos+"_"+arch+"}" {
			t.Errorf("%s: sha256 %q is not the placeholder hack/plugin-dist.sh fills", platform, p.SHA256)
		}
		if p.Bin != "kubectl-"+m.Metadata.Name {
			t.Errorf("%s: bin %q, want kubectl-%s", platform, p.Bin, m.Metadata.Name)
		}
	}
	slices.Sort(platforms)
	if want := []string{"darwin/amd64", "darwin/arm64", "linux/amd64", "linux/arm64"}; !slices.Equal(platforms, want) {
		t.Errorf("platforms %q, want %q", platforms, want)
	}
	if !strings.Contains(string(script), `archive="$DIST/kubectl-outrigger_${os}_${arch}.tar.gz"`) {
		t.Error("hack/plugin-dist.sh no longer names its archives kubectl-outrigger_<os>_<arch>.tar.gz")
	}
}

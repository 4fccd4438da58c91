package controller_test

import (
	"os"
	"path/filepath"
	"testing"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/yaml"
)

// TestSamples creates every example of config/samples, which the README
// shows, so that they stay valid.
func TestSamples(t *testing.T) {
	t.Parallel()
	h := newHarness(t)
	files, err := filepath.Glob(filepath.Join(repoRoot(), "config", "samples", "*.yaml"))
	if err != nil || len(files) != 3 {
		t.Fatalf("samples %v, %v", files, err)
	}
	for _, f := range files {
		t.Run(filepath.Base(f), func(t *testing.T) {
			raw, err := os.ReadFile(f)
			if err != nil {
				t.Fatal(err)
			}
			var u unstructured.Unstructured
			if err := yaml.UnmarshalStrict(raw, &u.Object); err != nil {
				t.Fatal(err)
			}
			u.SetNamespace(h.ns)
			if err := h.c.Create(t.Context(), &u, client.FieldValidation("Strict")); err != nil {
				t.Fatalf("create %s: %v", filepath.Base(f), err)
			}
		})
	}
}

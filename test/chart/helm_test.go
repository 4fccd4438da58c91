package chart

import (
	"bytes"
	"context"
	"errors"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"runtime"
	"testing"
	"time"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	utilyaml "k8s.io/apimachinery/pkg/util/yaml"
)

// helmTimeout bounds every helm run: rendering takes well under a second, so
// a run that takes this long is hung.
const helmTimeout = 60 * time.Second

// repoRoot is the repository's root folder.
func repoRoot(t testing.TB) string {
	t.Helper()
	_, file, _, ok := runtime.Caller(0)
	if !ok {
		t.Fatal("cannot locate the test's source file")
	}
	return filepath.Join(filepath.Dir(file), "..", "..")
}

// chartDir is the chart under test.
func chartDir(t testing.TB) string {
	t.Helper()
	return filepath.Join(repoRoot(t), "charts", "outrigger")
}

// requiredEnv returns the environment variable name, failing (not skipping:
// a skip would hide an untested chart) when it is unset.
func requiredEnv(t testing.TB, name string) string {
	t.Helper()
	v := os.Getenv(name)
	if v == "" {
		t.Fatalf("%s is not set: run `make test-chart`, which builds helm and the test assets and sets HELM and KUBEBUILDER_ASSETS", name)
	}
	return v
}

// helmResult is one helm run's outputs.
type helmResult struct {
	stdout, stderr string
	err            error
}

// runHelm runs the pinned helm with args, its cache, config and data homes
// in a temporary folder so that the run neither reads nor writes the user's.
func runHelm(t testing.TB, args ...string) helmResult {
	t.Helper()
	bin := requiredEnv(t, "HELM")
	ctx, cancel := context.WithTimeout(context.Background(), helmTimeout)
	defer cancel()
	home := t.TempDir()
	cmd := exec.CommandContext(ctx, bin, args...)
	cmd.Env = append(os.Environ(),
		"HELM_CACHE_HOME="+filepath.Join(home, "cache"),
		"HELM_CONFIG_HOME="+filepath.Join(home, "config"),
		"HELM_DATA_HOME="+filepath.Join(home, "data"),
		"KUBECONFIG="+filepath.Join(home, "kubeconfig"),
	)
	var stdout, stderr bytes.Buffer
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	err := cmd.Run()
	if ctx.Err() != nil {
		t.Fatalf("helm %q did not finish within %v", args, helmTimeout)
	}
	return helmResult{stdout: stdout.String(), stderr: stderr.String(), err: err}
}

// mustHelm is runHelm for runs that must succeed; it returns stdout.
func mustHelm(t testing.TB, args ...string) string {
	t.Helper()
	r := runHelm(t, args...)
	if r.err != nil {
		t.Fatalf("helm %q: %v\n%s", args, r.err, r.stderr)
	}
	return r.stdout
}

// renderArgs are the `helm template` arguments of a release named release in
// namespace, with the values file at values (none when empty).
func renderArgs(t testing.TB, release, namespace, values string) []string {
	t.Helper()
	args := []string{"template", release, chartDir(t), "--namespace", namespace}
	if values != "" {
		args = append(args, "--values", values)
	}
	return args
}

// decodeObjects splits a multi-document manifest into objects, leaving out
// empty documents.
func decodeObjects(t testing.TB, manifest string) []*unstructured.Unstructured {
	t.Helper()
	dec := utilyaml.NewYAMLOrJSONDecoder(bytes.NewReader([]byte(manifest)), 4096)
	var objs []*unstructured.Unstructured
	for {
		var m map[string]any
		err := dec.Decode(&m)
		if errors.Is(err, io.EOF) {
			return objs
		}
		if err != nil {
			t.Fatalf("decode the rendered manifest: %v", err)
		}
		if len(m) == 0 {
			continue
		}
		objs = append(objs, &unstructured.Unstructured{Object: m})
	}
}

// secretLine matches the lines that carry generated key material, which
// changes at every render.
var secretLine = regexp.MustCompile(`(?m)^(\s*(?:tls\.crt|tls\.key|ca\.crt|caBundle): )\S+$`)

// maskSecrets replaces the generated certificates, keys and CA bundle with
// a fixed marker so that the rest of the manifest can be compared.
func maskSecrets(manifest string) string {
	return secretLine.ReplaceAllString(manifest, "${1}<masked>")
}

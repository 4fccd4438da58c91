package logging

import (
	"os"
	"path/filepath"
	"testing"
)

func TestRelativePath(t *testing.T) {
	cases := map[string]struct{ file, root, want string }{
		"under the module root": {"/work/main/pkg/proxy/server/server.go", "/work/main/", "pkg/proxy/server/server.go"},
		"trimpath build":        {"github.com/outrigger-dev/outrigger/pkg/admin/admin.go", "", "pkg/admin/admin.go"},
		"another checkout":      {"/src/github.com/outrigger-dev/outrigger/cmd/sidecar/main.go", "/work/main/", "cmd/sidecar/main.go"},
		"outside the module":    {"/root/go/pkg/mod/github.com/go-logr/logr@v1.4.4/logr.go", "/work/main/", "/root/go/pkg/mod/github.com/go-logr/logr@v1.4.4/logr.go"},
		"unknown":               {"", "/work/main/", ""},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			if got := relativePath(tc.file, tc.root); got != tc.want {
				t.Errorf("relativePath(%q, %q) = %q, want %q", tc.file, tc.root, got, tc.want)
			}
		})
	}
}

func TestShortFunction(t *testing.T) {
	cases := map[string]struct{ in, want string }{
		"method":            {"github.com/outrigger-dev/outrigger/pkg/proxy/server.(*Server).Start", "server.(*Server).Start"},
		"function":          {"github.com/outrigger-dev/outrigger/cmd/sidecar.main", "sidecar.main"},
		"closure":           {"github.com/x/y.F.func1", "y.F.func1"},
		"generic with path": {"github.com/x/y.Map[go.shape.struct { a/b.T }]", "y.Map[go.shape.struct { a/b.T }]"},
		"no path":           {"main.main", "main.main"},
		"empty":             {"", ""},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			if got := shortFunction(tc.in); got != tc.want {
				t.Errorf("shortFunction(%q) = %q, want %q", tc.in, got, tc.want)
			}
		})
	}
}

func TestModuleRoot(t *testing.T) {
	root := moduleRoot()
	if root == "" {
		t.Skip("built without source paths")
	}
	// The module root holds go.mod; this package's directory is below it.
	if _, err := os.Stat(filepath.Join(root, "go.mod")); err != nil {
		t.Errorf("module root %q has no go.mod: %v", root, err)
	}
}

package admin

import (
	"bytes"
	"flag"
	"fmt"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

var update = flag.Bool("update", false, "rewrite golden files")

// checkGolden compares got with testdata/<name>.golden, or rewrites the file
// under -update.
func checkGolden(t *testing.T, name string, got []byte) {
	t.Helper()
	path := filepath.Join("testdata", name+".golden")
	if *update {
		if err := os.WriteFile(path, got, 0o644); err != nil {
			t.Fatalf("write golden file: %v", err)
		}
		return
	}
	want, err := os.ReadFile(path)
	if err != nil {
		t.Fatalf("read golden file (run go test -update to create it): %v", err)
	}
	if !bytes.Equal(got, want) {
		t.Errorf("%s differs from the golden file:\n%s", name, firstDifference(string(got), string(want)))
	}
}

// checkResponseGolden compares the status, content type and body of rec with
// a golden file.
// Each replacer pair (old, new) is applied to the body first, to hide
// values that change between runs, such as temporary paths.
func checkResponseGolden(t *testing.T, name string, rec *httptest.ResponseRecorder, replacer ...string) {
	t.Helper()
	body := strings.NewReplacer(replacer...).Replace(rec.Body.String())
	checkGolden(t, name, fmt.Appendf(nil, "status: %d\ncontent-type: %s\n\n%s",
		rec.Code, rec.Header().Get("Content-Type"), body))
}

// firstDifference shows the first line where got and want part.
func firstDifference(got, want string) string {
	g, w := strings.SplitAfter(got, "\n"), strings.SplitAfter(want, "\n")
	for i := 0; i < len(g) || i < len(w); i++ {
		var gl, wl string
		if i < len(g) {
			gl = g[i]
		}
		if i < len(w) {
			wl = w[i]
		}
		if gl != wl {
			return fmt.Sprintf("line %d:\n got: %q\nwant: %q", i+1, gl, wl)
		}
	}
	return "(same lines)"
}

package admin

import (
	"fmt"
	"net/http/httptest"
	"path/filepath"
	"strings"
	"testing"

	"github.com/outrigger-dev/outrigger/internal/golden"
)

// checkGolden compares got with testdata/<name>.golden, or rewrites the file
// under -update.
func checkGolden(t *testing.T, name string, got []byte) {
	t.Helper()
	golden.Check(t, filepath.Join("testdata", name+".golden"), got)
}

// checkResponseGolden compares the status, content type and body of rec with
// a golden file.
// Each replacer pair (old, new) is applied to the body first, to hide
// values that change between runs, such as temporary paths. The HTML
// pages' shared style sheet is shown as a placeholder, so that a style
// change does not rewrite every page's golden file.
func checkResponseGolden(t *testing.T, name string, rec *httptest.ResponseRecorder, replacer ...string) {
	t.Helper()
	replacer = append(replacer, pageStyle, "/* pageStyle (html.go) */\n")
	body := strings.NewReplacer(replacer...).Replace(rec.Body.String())
	checkGolden(t, name, fmt.Appendf(nil, "status: %d\ncontent-type: %s\n\n%s",
		rec.Code, rec.Header().Get("Content-Type"), body))
}

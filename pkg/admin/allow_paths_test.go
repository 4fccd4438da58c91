package admin

import (
	"net/http"
	"strings"
	"testing"
)

func TestAllowPaths(t *testing.T) {
	var seen []string
	allow := func(p string) bool {
		seen = append(seen, p)
		return strings.HasPrefix(p, "/server_info") || p == "/ready"
	}
	tests := map[string]struct {
		target string
		status int
		sees   string
	}{
		"allowed exactly":                    {"/ready", http.StatusOK, "/ready"},
		"allowed by prefix, with its query":  {"/server_info?x=1", http.StatusOK, "/server_info?x=1"},
		"exact path with a query":            {"/ready?verbose", http.StatusForbidden, "/ready?verbose"},
		"known endpoint outside the list":    {"/config_dump", http.StatusForbidden, "/config_dump"},
		"unknown path outside the list":      {"/nope", http.StatusForbidden, "/nope"},
		"normalized before matching":         {"/x/../ready", http.StatusOK, "/ready"},
		"mutation outside the list, by POST": {"/quitquitquit", http.StatusForbidden, "/quitquitquit"},
	}
	for name, tc := range tests {
		t.Run(name, func(t *testing.T) {
			seen = nil
			ta := newTestAdmin(t, func(o *Options) { o.AllowPath = allow })
			quit := false
			ta.f.onQuit = func() { quit = true }
			method := http.MethodGet
			if tc.target == "/quitquitquit" {
				method = http.MethodPost
			}
			rec := serve(t, ta.Handler(), request{method: method, target: tc.target})
			if rec.Code != tc.status {
				t.Fatalf("status %d, want %d; body %q", rec.Code, tc.status, rec.Body.String())
			}
			if len(seen) != 1 || seen[0] != tc.sees {
				t.Errorf("matched %q, want [%q]", seen, tc.sees)
			}
			if quit {
				t.Error("a forbidden mutation ran")
			}
		})
	}
}

package admin

import (
	"io"
	"net/http"
	"net/http/httptest"
	"testing"
)

func TestLifecycleEndpoints(t *testing.T) {
	runEndpointCases(t, "lifecycle", map[string]endpointCase{
		"healthcheck_fail": {
			req:   request{method: "POST", target: "/healthcheck/fail"},
			calls: []string{"Health.FailHealthChecks"},
		},
		"healthcheck_ok": {
			req:   request{method: "POST", target: "/healthcheck/ok"},
			calls: []string{"Health.PassHealthChecks"},
		},
		"quitquitquit": {
			req:   request{method: "POST", target: "/quitquitquit"},
			calls: []string{"Quit.Quit"},
		},
	})
}

// TestQuitAnswersBeforeQuitting checks that the answer is flushed to the
// client before Quit runs: a real shutdown may close the connection then.
func TestQuitAnswersBeforeQuitting(t *testing.T) {
	// With the access log on, the flush crosses its response wrapper too.
	ta := newTestAdmin(t, func(o *Options) { o.AccessLog = lineLogger(io.Discard) })
	rec := httptest.NewRecorder()
	var flushedBody string
	ta.f.onQuit = func() {
		if rec.Flushed {
			flushedBody = rec.Body.String()
		}
	}
	ta.Handler().ServeHTTP(rec, httptest.NewRequest(http.MethodPost, "/quitquitquit", nil))
	if flushedBody != "OK\n" {
		t.Errorf("body flushed before Quit = %q, want %q", flushedBody, "OK\n")
	}
}

// TestQuitOverTheWire runs /quitquitquit on a loopback server whose Quit
// closes the client connections, as a shutdown does, and checks the client
// still gets its answer.
func TestQuitOverTheWire(t *testing.T) {
	ta := newTestAdmin(t)
	srv := newLoopbackServer(t, ta.Handler())
	ta.f.onQuit = srv.CloseClientConnections

	resp, err := srv.Client().Post(srv.URL+"/quitquitquit", "", nil)
	if err != nil {
		t.Fatalf("POST /quitquitquit: %v", err)
	}
	defer resp.Body.Close()
	body, err := io.ReadAll(resp.Body)
	if err != nil {
		t.Fatalf("read answer: %v", err)
	}
	if resp.StatusCode != http.StatusOK || string(body) != "OK\n" {
		t.Errorf("answer = %d %q, want 200 %q", resp.StatusCode, body, "OK\n")
	}
}

package admin

import (
	"bytes"
	"context"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

func TestCommonHeaders(t *testing.T) {
	tests := map[string]struct {
		req         request
		contentType string
	}{
		"text":           {req: request{target: "/ready"}, contentType: ContentTypeText},
		"json":           {req: request{target: "/memory"}, contentType: ContentTypeJSON},
		"html":           {req: request{target: "/"}, contentType: ContentTypeHTML},
		"not found":      {req: request{target: "/nope"}, contentType: ContentTypeText},
		"refused method": {req: request{target: "/quitquitquit"}, contentType: ContentTypeText},
		"cross-origin refusal": {
			req:         request{method: http.MethodPost, target: "/healthcheck/ok", header: http.Header{"Sec-Fetch-Site": {"cross-site"}}},
			contentType: ContentTypeText,
		},
	}
	for name, tc := range tests {
		t.Run(name, func(t *testing.T) {
			ta := newTestAdmin(t)
			h := serve(t, ta.Handler(), tc.req).Header()
			want := map[string]string{
				"Content-Type":           tc.contentType,
				"Cache-Control":          "no-cache, max-age=0",
				"X-Content-Type-Options": "nosniff",
				"Server":                 "outrigger",
			}
			for k, v := range want {
				if got := h.Get(k); got != v {
					t.Errorf("%s = %q, want %q", k, got, v)
				}
			}
		})
	}
}

func TestHandlerMayReplaceCacheControl(t *testing.T) {
	a := newAdmin(Options{}, []Route{{
		Path: "/cached",
		Help: "cacheable",
		Handler: func(w *Response, _ *Request) {
			w.Header().Set("Cache-Control", "max-age=60")
			w.Text(http.StatusOK, "x")
		},
	}})
	if got := serve(t, a.Handler(), request{target: "/cached"}).Header().Get("Cache-Control"); got != "max-age=60" {
		t.Errorf("Cache-Control = %q, want the handler's", got)
	}
}

// TestCrossOriginProtection checks that browsers on other sites cannot
// drive mutations, while curl and the home page's own forms can.
func TestCrossOriginProtection(t *testing.T) {
	tests := map[string]struct {
		method  string
		header  http.Header
		allowed bool
	}{
		"curl":                         {method: http.MethodPost, allowed: true},
		"same-origin form":             {method: http.MethodPost, header: http.Header{"Sec-Fetch-Site": {"same-origin"}}, allowed: true},
		"typed into the address bar":   {method: http.MethodPost, header: http.Header{"Sec-Fetch-Site": {"none"}}, allowed: true},
		"origin matching host":         {method: http.MethodPost, header: http.Header{"Origin": {"http://127.0.0.1:9901"}}, allowed: true},
		"cross-site":                   {method: http.MethodPost, header: http.Header{"Sec-Fetch-Site": {"cross-site"}}},
		"same-site, other origin":      {method: http.MethodPost, header: http.Header{"Sec-Fetch-Site": {"same-site"}}},
		"foreign origin, old browser":  {method: http.MethodPost, header: http.Header{"Origin": {"http://evil.example"}}},
		"cross-site GET is only a GET": {method: http.MethodGet, header: http.Header{"Sec-Fetch-Site": {"cross-site"}}},
		"form posted from another origin": {method: http.MethodPost, header: http.Header{
			"Origin": {"http://localhost:8080"}, "Content-Type": {formContentType}}},
		"sandboxed page (origin null)": {method: http.MethodPost, header: http.Header{"Origin": {"null"}}},
		"cross-site despite a matching origin": {method: http.MethodPost, header: http.Header{
			"Sec-Fetch-Site": {"cross-site"}, "Origin": {"http://127.0.0.1:9901"}}},
	}
	for name, tc := range tests {
		t.Run(name, func(t *testing.T) {
			ta := newTestAdmin(t)
			rec := serve(t, ta.Handler(), request{method: tc.method, target: "/healthcheck/fail", header: tc.header})
			calls := ta.f.rec.take()
			switch {
			case tc.allowed:
				if rec.Code != http.StatusOK || len(calls) != 1 {
					t.Errorf("status %d, calls %q; want 200 and the mutation", rec.Code, calls)
				}
			case tc.method == http.MethodPost:
				if rec.Code != http.StatusForbidden || len(calls) != 0 {
					t.Errorf("status %d, calls %q; want 403 and no call", rec.Code, calls)
				}
			default: // a safe method passes the protection and is refused as a GET
				if rec.Code != http.StatusBadRequest || len(calls) != 0 {
					t.Errorf("status %d, calls %q; want 400 and no call", rec.Code, calls)
				}
			}
		})
	}
}

// TestRebindingRefused checks that a browser's request is answered only
// for a host that cannot be a re-pointed DNS name, and that tools without
// browser headers are unaffected.
func TestRebindingRefused(t *testing.T) {
	tests := map[string]struct {
		host    string
		header  http.Header
		allowed bool
	}{
		"browser on the address":       {host: "127.0.0.1:9901", header: http.Header{"Sec-Fetch-Site": {"none"}}, allowed: true},
		"browser on localhost":         {host: "localhost:9901", header: http.Header{"Sec-Fetch-Site": {"same-origin"}}, allowed: true},
		"browser on IPv6 loopback":     {host: "[::1]:9901", header: http.Header{"Sec-Fetch-Site": {"none"}}, allowed: true},
		"browser on a .localhost name": {host: "admin.localhost:9901", header: http.Header{"Sec-Fetch-Site": {"none"}}, allowed: true},
		"rebound name":                 {host: "evil.example:9901", header: http.Header{"Sec-Fetch-Site": {"same-origin"}}},
		"rebound name, old browser":    {host: "evil.example:9901", header: http.Header{"Origin": {"http://evil.example:9901"}}},
		"localhost-looking name":       {host: "localhost.evil.example", header: http.Header{"Sec-Fetch-Site": {"none"}}},
		"curl by name":                 {host: "proxy-admin", allowed: true},
	}
	for name, tc := range tests {
		t.Run(name, func(t *testing.T) {
			ta := newTestAdmin(t)
			hr := httptest.NewRequest(http.MethodGet, "/ready", nil)
			hr.Host = tc.host
			for k, vs := range tc.header {
				hr.Header[k] = vs
			}
			rec := serveHTTP(ta.Handler(), hr)
			if tc.allowed != (rec.Code == http.StatusOK) || (!tc.allowed && rec.Code != http.StatusForbidden) {
				t.Errorf("status %d %q; allowed %v", rec.Code, rec.Body.String(), tc.allowed)
			}
		})
	}
}

// TestCrossOriginControllerClient checks that the controller's requests
// pass: a Go client's POST, sent over a connection the controller dialed
// itself (the port-forward), with its placeholder host and no browser
// header.
func TestCrossOriginControllerClient(t *testing.T) {
	ta := newTestAdmin(t)
	srv := newLoopbackServer(t, ta.Handler())
	client := &http.Client{Timeout: 5 * time.Second, Transport: &http.Transport{
		DialContext: func(ctx context.Context, network, _ string) (net.Conn, error) {
			return (&net.Dialer{}).DialContext(ctx, network, srv.Listener.Addr().String())
		},
	}}
	resp, err := client.Post("http://proxy-admin/healthcheck/fail", "", nil)
	if err != nil {
		t.Fatal(err)
	}
	_ = resp.Body.Close()
	if calls := ta.f.rec.take(); resp.StatusCode != http.StatusOK || len(calls) != 1 {
		t.Errorf("status %d, calls %q; want 200 and the mutation", resp.StatusCode, calls)
	}
}

func TestCrossOriginRefusalGolden(t *testing.T) {
	ta := newTestAdmin(t)
	rec := serve(t, ta.Handler(), request{method: http.MethodPost, target: "/quitquitquit", header: http.Header{"Sec-Fetch-Site": {"cross-site"}}})
	checkResponseGolden(t, "middleware-cross-origin", rec)
}

// TestPanicRecovery checks that a panicking handler gives 500, is logged
// and logged in the access log, and that the admin keeps serving.
func TestPanicRecovery(t *testing.T) {
	var access bytes.Buffer
	logs := &logSink{}
	f := newFakes()
	o := f.options(filepath.Join(t.TempDir(), "proxy.prof"), logs.logger())
	o.AccessLog = lineLogger(&access)
	a := newAdmin(o, []Route{{
		Path:    "/boom",
		Help:    "panics",
		Handler: func(*Response, *Request) { panic("kaboom") },
	}})

	rec := serve(t, a.Handler(), request{target: "/boom"})
	if rec.Code != http.StatusInternalServerError {
		t.Errorf("status = %d, want 500", rec.Code)
	}
	if log := logs.text(); !strings.Contains(log, "admin handler panicked") || !strings.Contains(log, "kaboom") {
		t.Errorf("log lacks the panic:\n%s", log)
	}
	if line := access.String(); !strings.Contains(line, `"GET /boom HTTP/1.1" 500 `) {
		t.Errorf("access log = %q, want a 500 line", line)
	}
	if rec := serve(t, a.Handler(), request{target: "/ready"}); rec.Code != http.StatusOK {
		t.Errorf("after a panic, GET /ready = %d, want 200", rec.Code)
	}
}

// TestOverTheWire serves the admin on a loopback listener and checks what a
// client really receives.
func TestOverTheWire(t *testing.T) {
	ta := newTestAdmin(t)
	srv := newLoopbackServer(t, ta.Handler())

	resp, err := srv.Client().Get(srv.URL + "/ready")
	if err != nil {
		t.Fatalf("GET /ready: %v", err)
	}
	body, err := io.ReadAll(resp.Body)
	resp.Body.Close()
	if err != nil {
		t.Fatalf("read body: %v", err)
	}
	if resp.StatusCode != http.StatusOK || string(body) != "LIVE\n" {
		t.Errorf("GET /ready = %d %q", resp.StatusCode, body)
	}
	for k, v := range map[string]string{"Server": "outrigger", "X-Content-Type-Options": "nosniff", "Content-Type": ContentTypeText} {
		if got := resp.Header.Get(k); got != v {
			t.Errorf("%s = %q, want %q", k, got, v)
		}
	}
	if resp.Header.Get("Date") == "" {
		t.Errorf("no Date header")
	}

	req, err := http.NewRequest(http.MethodHead, srv.URL+"/quitquitquit", nil)
	if err != nil {
		t.Fatalf("build HEAD: %v", err)
	}
	resp, err = srv.Client().Do(req)
	if err != nil {
		t.Fatalf("HEAD /quitquitquit: %v", err)
	}
	resp.Body.Close()
	if resp.StatusCode != http.StatusBadRequest {
		t.Errorf("HEAD /quitquitquit = %d, want 400", resp.StatusCode)
	}
	if calls := ta.f.rec.take(); len(calls) != 1 || calls[0] != "Server.State" {
		t.Errorf("calls = %q, want only the /ready one", calls)
	}
}

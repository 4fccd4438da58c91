package admin

import (
	"fmt"
	"net/http"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/go-logr/logr"
)

// echoRoute answers its parameters, one "name=value" line each, in order.
var echoRoute = Route{
	Path: "/echo",
	Help: "echo the parameters",
	Params: []Param{
		{Name: "s", Help: "a string", Kind: ParamString},
		{Name: "e", Help: "an enum", Kind: ParamEnum, Values: []string{"a", "b"}},
		{Name: "f", Help: "a flag", Kind: ParamFlag},
	},
	Handler: func(w *Response, r *Request) {
		var b strings.Builder
		fmt.Fprintf(&b, "%s %s\n", r.Method, r.Path)
		for _, n := range r.Params.Names() {
			fmt.Fprintf(&b, "%s=%s\n", n, r.Params.Get(n))
		}
		w.Text(http.StatusOK, b.String())
	},
}

func TestNotFound(t *testing.T) {
	ta := newTestAdmin(t)
	checkResponseGolden(t, "dispatch-not-found", serve(t, ta.Handler(), request{target: "/nope?x=1"}))
}

func TestPathNormalizationAndExactMatch(t *testing.T) {
	tests := map[string]struct {
		target string
		status int
	}{
		"exact":                  {"/ready", http.StatusOK},
		"with query":             {"/ready?verbose", http.StatusOK},
		"merged slashes":         {"//ready", http.StatusOK},
		"dot segment":            {"/./ready", http.StatusOK},
		"dot-dot segment":        {"/stats/../ready", http.StatusOK},
		"dot-dot above the root": {"/../ready", http.StatusOK},
		"percent-encoded letter": {"/%72eady", http.StatusOK},
		"trailing slash":         {"/ready/", http.StatusNotFound},
		"case differs":           {"/Ready", http.StatusNotFound},
		"prefix only":            {"/rea", http.StatusNotFound},
		"longer":                 {"/ready/now", http.StatusNotFound},
	}
	for name, tc := range tests {
		t.Run(name, func(t *testing.T) {
			ta := newTestAdmin(t)
			rec := serve(t, ta.Handler(), request{target: tc.target})
			if rec.Code != tc.status {
				t.Fatalf("GET %s = %d, want %d", tc.target, rec.Code, tc.status)
			}
			ran := slices.Equal(ta.f.rec.take(), []string{"Server.State"})
			if ran != (tc.status == http.StatusOK) {
				t.Errorf("GET %s: /ready ran = %v, want %v", tc.target, ran, tc.status == http.StatusOK)
			}
		})
	}
}

// TestMutatingRoutesRefuseOtherMethods is generated from the route table, so
// every mutation added later is covered: any method but POST gets 400, the
// error is logged, and nothing is called or started.
func TestMutatingRoutesRefuseOtherMethods(t *testing.T) {
	probe := newTestAdmin(t)
	var mutating []string
	for _, r := range probe.Routes() {
		if r.Mutates {
			mutating = append(mutating, r.Path)
		}
	}
	// The table must hold at least today's mutations, or this test would
	// pass vacuously.
	for _, p := range []string{"/cpuprofiler", "/healthcheck/fail", "/healthcheck/ok", "/heapprofiler", "/logging", "/quitquitquit", "/reopen_logs", "/runtime_modify"} {
		if !slices.Contains(mutating, p) {
			t.Errorf("route %s is not marked as mutating", p)
		}
	}

	for _, path := range mutating {
		for _, method := range []string{http.MethodGet, http.MethodHead, http.MethodPut, http.MethodDelete, http.MethodPatch, "OPTIONS"} {
			t.Run(method+" "+path, func(t *testing.T) {
				ta := newTestAdmin(t)
				// Parameters that would make each mutation act if it ran.
				rec := serve(t, ta.Handler(), request{method: method, target: path + "?enable=y&level=debug&key=value"})
				if rec.Code != http.StatusBadRequest {
					t.Errorf("status = %d, want 400", rec.Code)
				}
				if want := "Method " + method + " not allowed, POST required."; method != http.MethodHead && rec.Body.String() != want {
					t.Errorf("body = %q, want %q", rec.Body.String(), want)
				}
				if calls := ta.f.rec.take(); len(calls) != 0 {
					t.Errorf("the fakes were called: %q", calls)
				}
				if _, err := os.Stat(ta.profilePath); !os.IsNotExist(err) {
					t.Errorf("a profile was started (stat: %v)", err)
				}
				wantLog := fmt.Sprintf(`admin path \"%s\" mutates state, method=%s rather than POST`, path, method)
				if !strings.Contains(ta.logs.text(), wantLog) {
					t.Errorf("log lacks %q:\n%s", wantLog, ta.logs.text())
				}
			})
		}
	}
}

func TestMutationWithGetGolden(t *testing.T) {
	ta := newTestAdmin(t)
	checkResponseGolden(t, "dispatch-mutation-with-get", serve(t, ta.Handler(), request{target: "/healthcheck/fail"}))
}

func TestParameters(t *testing.T) {
	tests := map[string]struct {
		req  request
		want string
	}{
		"query": {
			req:  request{target: "/echo?s=x%20y&e=a&f=false&other=1&s=ignored"},
			want: "GET /echo\ns=x y\ne=a\nf=false\nother=1\n",
		},
		"empty string and enum values are absent, flags stay": {
			req:  request{target: "/echo?s=&e=&f=&other="},
			want: "GET /echo\nf=\nother=\n",
		},
		"form body when the query is empty": {
			req:  request{method: http.MethodPost, target: "/echo?", body: "s=from+body&f", header: formHeader()},
			want: "POST /echo\ns=from body\nf=\n",
		},
		"form body on GET too": {
			req:  request{target: "/echo", body: "e=b", header: formHeader()},
			want: "GET /echo\ne=b\n",
		},
		"query wins over the body": {
			req:  request{method: http.MethodPost, target: "/echo?e=a", body: "s=body", header: formHeader()},
			want: "POST /echo\ne=a\n",
		},
		"body of another type ignored": {
			req:  request{method: http.MethodPost, target: "/echo", body: "s=body", header: http.Header{"Content-Type": {"text/plain"}}},
			want: "POST /echo\n",
		},
	}
	for name, tc := range tests {
		t.Run(name, func(t *testing.T) {
			a := newAdmin(Options{}, []Route{echoRoute})
			rec := serve(t, a.Handler(), tc.req)
			if rec.Code != http.StatusOK || rec.Body.String() != tc.want {
				t.Errorf("got %d %q, want 200 %q", rec.Code, rec.Body.String(), tc.want)
			}
		})
	}
}

func TestBodyTooLarge(t *testing.T) {
	ta := newTestAdmin(t)
	body := "a=" + strings.Repeat("x", maxBodyBytes)
	rec := serve(t, ta.Handler(), request{method: http.MethodPost, target: "/runtime_modify", body: body, header: formHeader()})
	checkResponseGolden(t, "dispatch-body-too-large", rec)
	if calls := ta.f.rec.take(); len(calls) != 0 {
		t.Errorf("the fakes were called: %q", calls)
	}
}

func TestCheckRoutes(t *testing.T) {
	ok := func(*Response, *Request) {}
	tests := map[string]struct {
		routes []Route
		err    string
	}{
		"valid": {routes: []Route{{Path: "/a", Help: "h", Handler: ok}, {Path: "/a/b", Help: "h", Handler: ok}}},
		"duplicate": {
			routes: []Route{{Path: "/a", Help: "h", Handler: ok}, {Path: "/a", Help: "h", Handler: ok}},
			err:    `route "/a": registered twice`,
		},
		"relative":       {routes: []Route{{Path: "a", Help: "h", Handler: ok}}, err: `route "a": path is not normalized`},
		"not normalized": {routes: []Route{{Path: "/a//b", Help: "h", Handler: ok}}, err: `route "/a//b": path is not normalized`},
		"no handler":     {routes: []Route{{Path: "/a", Help: "h"}}, err: `route "/a": no handler`},
		"no help":        {routes: []Route{{Path: "/a", Handler: ok}}, err: `route "/a": no help text`},
		"enum no values": {routes: []Route{{Path: "/a", Help: "h", Handler: ok, Params: []Param{{Name: "e", Kind: ParamEnum}}}}, err: `route "/a": enum parameter "e" has no values`},
		"repeated param": {routes: []Route{{Path: "/a", Help: "h", Handler: ok, Params: []Param{{Name: "p"}, {Name: "p"}}}}, err: `route "/a": parameter "p" is empty or repeated`},
		"unnamed param":  {routes: []Route{{Path: "/a", Help: "h", Handler: ok, Params: []Param{{}}}}, err: `route "/a": parameter "" is empty or repeated`},
	}
	for name, tc := range tests {
		t.Run(name, func(t *testing.T) {
			err := checkRoutes(tc.routes)
			got := ""
			if err != nil {
				got = err.Error()
			}
			if got != tc.err {
				t.Errorf("checkRoutes() = %q, want %q", got, tc.err)
			}
		})
	}
}

func TestNewPanicsOnABadTable(t *testing.T) {
	defer func() {
		if r := recover(); r == nil || !strings.Contains(fmt.Sprint(r), `route "/help": registered twice`) {
			t.Errorf("recover() = %v, want a duplicate-route panic", r)
		}
	}()
	newAdmin(Options{}, []Route{{Path: "/help", Help: "again", Handler: echoRoute.Handler}})
}

func TestRoutesTable(t *testing.T) {
	ta := newTestAdmin(t)
	routes := ta.Routes()
	paths := make([]string, len(routes))
	for i, r := range routes {
		paths[i] = r.Path
	}
	want := []string{"/", "/certs", "/contention", "/cpuprofiler", "/healthcheck/fail", "/healthcheck/ok",
		"/heapprofiler", "/help", "/hot_restart_version", "/logging", "/memory", "/quitquitquit", "/ready",
		"/reopen_logs", "/runtime", "/runtime_modify", "/server_info"}
	if !slices.Equal(paths, want) {
		t.Errorf("paths = %q, want %q", paths, want)
	}

	// Routes is a copy: changing it changes nothing served.
	for i := range routes {
		routes[i].Mutates = false
		for j := range routes[i].Params {
			routes[i].Params[j].Values = nil
		}
	}
	if rec := serve(t, ta.Handler(), request{target: "/quitquitquit"}); rec.Code != http.StatusBadRequest {
		t.Errorf("changing Routes() changed the admin: GET /quitquitquit = %d", rec.Code)
	}
	if !strings.Contains(ta.help, "One of (y, n)") {
		t.Errorf("changing Routes() changed the enum values")
	}
}

// TestNilSourcesLeaveRoutesOut checks that an admin without sources serves
// only what needs none.
func TestNilSourcesLeaveRoutesOut(t *testing.T) {
	a := New(Options{})
	var paths []string
	for _, r := range a.Routes() {
		paths = append(paths, r.Path)
	}
	want := []string{"/", "/contention", "/cpuprofiler", "/heapprofiler", "/help", "/hot_restart_version"}
	if !slices.Equal(paths, want) {
		t.Errorf("paths = %q, want %q", paths, want)
	}
	if rec := serve(t, a.Handler(), request{target: "/server_info"}); rec.Code != http.StatusNotFound {
		t.Errorf("GET /server_info without a source = %d, want 404", rec.Code)
	}
}

// FuzzRequest sends arbitrary paths, queries and form bodies with GET: no
// input may panic or be reported as an internal error.
func FuzzRequest(f *testing.F) {
	for _, s := range [][3]string{
		{"/logging", "level=debug", ""},
		{"/runtime", "", "a=1"},
		{"//help/..", "x=%zz", ""},
		{"/echo", "s=&e=b&f", "s=x"},
		{"/ready", "", ""},
	} {
		f.Add(s[0], s[1], s[2])
	}
	profilePath := filepath.Join(f.TempDir(), "proxy.prof") // never written: GET mutates nothing
	f.Fuzz(func(t *testing.T, path, query, body string) {
		a := newAdmin(newFakes().options(profilePath, logr.Discard()), []Route{echoRoute})
		hr, err := http.NewRequest(http.MethodGet, "http://127.0.0.1:9901/", strings.NewReader(body))
		if err != nil {
			t.Fatalf("build request: %v", err)
		}
		hr.URL.Path, hr.URL.RawQuery = path, query
		hr.Header.Set("Content-Type", formContentType)
		rec := serveHTTP(a.Handler(), hr)
		if rec.Code >= 500 {
			t.Fatalf("GET path %q query %q body %q = %d: %s", path, query, body, rec.Code, rec.Body)
		}
	})
}

package httpconn

import (
	"io"
	"net/http"
	"net/http/httptest"
	"strconv"
	"strings"
	"testing"

	corev3 "github.com/envoyproxy/go-control-plane/envoy/config/core/v3"
	routev3 "github.com/envoyproxy/go-control-plane/envoy/config/route/v3"
	previousroutesv3 "github.com/envoyproxy/go-control-plane/envoy/extensions/internal_redirect/previous_routes/v3"
	safeschemev3 "github.com/envoyproxy/go-control-plane/envoy/extensions/internal_redirect/safe_cross_scheme/v3"
	"google.golang.org/protobuf/types/known/anypb"
	"google.golang.org/protobuf/types/known/wrapperspb"

	"github.com/outrigger-dev/outrigger/pkg/proxy/stats"
)

// redirectUpstream answers /r/<code>?to=<url> with that code and a
// Location of the url (after reading the body whole), with x-copy: from-302
// beside it; any other path is echoed. It speaks HTTP/1.1 and h2c.
func redirectUpstream(t *testing.T) *httptest.Server {
	t.Helper()
	return h2cServer(t, http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		code, ok := strings.CutPrefix(r.URL.Path, "/r/")
		if !ok {
			echo(w, r)
			return
		}
		_, _ = io.Copy(io.Discard, r.Body)
		n, _ := strconv.Atoi(code)
		w.Header().Set("Location", r.URL.Query().Get("to"))
		w.Header().Set("X-Copy", "from-"+code)
		w.WriteHeader(n)
		_, _ = io.WriteString(w, "redirect body")
	}))
}

// noFollow makes a client show redirects instead of following them.
func noFollow(c *http.Client) *http.Client {
	c.CheckRedirect = func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse }
	return c
}

// redirectProxy routes /r/ to cluster "r" with policy, and the rest to
// cluster "echo" (route "to-echo"); both are the same redirectUpstream.
func redirectProxy(t *testing.T, upstreamH2 bool, policy *routev3.InternalRedirectPolicy) *proxy {
	t.Helper()
	up := redirectUpstream(t)
	st := stats.NewStore()
	r := newFakeCluster(st, "r", upstreamH2, hostOf(up))
	e := newFakeCluster(st, "echo", upstreamH2, hostOf(up))
	t.Cleanup(r.closeIdle)
	t.Cleanup(e.closeIdle)
	rc := routeConfig(
		clusterRoute("/r/", "r", func(a *routev3.RouteAction) { a.InternalRedirectPolicy = policy }),
		clusterRoute("/", "echo"),
	)
	return startProxy(t, hcm(rc), Deps{Stats: st, Upstreams: fakeUpstreams{"r": r, "echo": e}})
}

func TestInternalRedirect(t *testing.T) {
	all := &routev3.InternalRedirectPolicy{RedirectResponseCodes: []uint32{301, 302, 303, 307, 308}, ResponseHeadersToCopy: []string{"x-copy"}}
	for _, upstreamH2 := range []bool{false, true} {
		for _, clientH2 := range []bool{false, true} {
			name := map[bool]string{false: "h1", true: "h2"}
			t.Run(name[clientH2]+"-to-"+name[upstreamH2], func(t *testing.T) {
				p := redirectProxy(t, upstreamH2, all)
				c := client()
				if clientH2 {
					c = noFollow(h2cClient())
				}
				body := strings.Repeat("payload-", 500)
				// 307 keeps the method and the body; the fragment goes.
				status, hdr, got := do(t, c, "POST", p.url("/r/307?to=http://elsewhere.test:81/target?q=1%23x"), strings.NewReader(body), map[string]string{"x-copy": "request"})
				if status != 200 || hdr.Get("x-upstream") != "echo" {
					t.Fatalf("307: %d %q, want the echo's 200", status, got)
				}
				for _, want := range []string{"POST /target?q=1 HTTP", "host: elsewhere.test:81\n", "x-copy: from-307\n", "x-envoy-original-url: http://" + p.addr + "/r/307?to=", "content-length: 4000\n"} {
					if !strings.Contains(got, want) {
						t.Errorf("307: the redirected request lacks %q:\n%.600s", want, got)
					}
				}
				if !strings.HasSuffix(got, "\n\n"+body) {
					t.Errorf("307: the body was not replayed:\n%.200s", got)
				}
				// 303 turns a POST into a GET without a body.
				status, _, got = do(t, c, "POST", p.url("/r/303?to=http://x.test/after"), strings.NewReader(body), nil)
				if status != 200 || !strings.HasPrefix(got, "GET /after ") || strings.Contains(got, "payload") || strings.Contains(got, "content-length: 4") {
					t.Errorf("303: %d\n%.300s\nwant a GET without the body", status, got)
				}
				// A relative Location is no URL to follow: passed through.
				status, hdr, got = do(t, c, "GET", p.url("/r/302?to=/relative"), nil, nil)
				if status != 302 || hdr.Get("Location") != "/relative" || got != "redirect body" {
					t.Errorf("relative Location: %d %q, want the 302 passed through", status, got)
				}
				// An https target from an http request: refused.
				status, _, _ = do(t, c, "GET", p.url("/r/302?to=https://x.test/target"), nil, nil)
				if status != 302 {
					t.Errorf("cross-scheme: %d, want the 302 passed through", status)
				}
				// The target redirects again: one redirect only.
				status, hdr, _ = do(t, c, "GET", p.url("/r/302?to="+strings.ReplaceAll("http://x.test/r/302?to=http://x.test/end", "?", "%3F")), nil, nil)
				if status != 302 || !strings.HasSuffix(hdr.Get("Location"), "/end") {
					t.Errorf("second redirect: %d %q, want the second 302 passed through", status, hdr.Get("Location"))
				}
				for name, want := range map[string]uint64{
					"cluster.r.upstream_internal_redirect_succeeded_total":       3,
					"cluster.r.upstream_internal_redirect_failed_total":          3,
					"http.test.passthrough_internal_redirect_bad_location":       1,
					"http.test.passthrough_internal_redirect_unsafe_scheme":      1,
					"http.test.passthrough_internal_redirect_too_many_redirects": 1,
					"http.test.downstream_rq_total":                              5,
					"http.test.downstream_rq_3xx":                                3,
				} {
					// The stream's stats are counted as it ends, which
					// may be just after the client has its response.
					p.waitCounter(t, name, want)
				}
			})
		}
	}
}

// A body above the buffer limit is not kept: its redirect passes through.
func TestInternalRedirectBodyTooLarge(t *testing.T) {
	p := redirectProxy(t, false, &routev3.InternalRedirectPolicy{})
	body := strings.Repeat("x", 2<<20)
	status, _, _ := do(t, client(), "POST", p.url("/r/302?to=http://x.test/target"), strings.NewReader(body), nil)
	if status != 302 {
		t.Fatalf("status %d, want the 302 passed through", status)
	}
	p.waitCounter(t, "cluster.r.upstream_internal_redirect_failed_total", 1)
}

// max_internal_redirects bounds the redirects of one request, the codes
// not listed pass through.
func TestInternalRedirectMaxAndCodes(t *testing.T) {
	p := redirectProxy(t, false, &routev3.InternalRedirectPolicy{MaxInternalRedirects: wrapperspb.UInt32(2)})
	loc := "http://x.test/r/302?to=" + strings.ReplaceAll("http://x.test/end", "?", "%3F")
	status, _, got := do(t, client(), "GET", p.url("/r/302?to="+strings.ReplaceAll(loc, "?", "%3F")), nil, nil)
	if status != 200 || !strings.HasPrefix(got, "GET /end ") {
		t.Errorf("two hops: %d %.80q, want /end echoed", status, got)
	}
	// The original URL is the first request's.
	if !strings.Contains(got, "x-envoy-original-url: http://x.test/r/302") {
		t.Errorf("x-envoy-original-url: %s", got)
	}
	status, _, _ = do(t, client(), "GET", p.url("/r/301?to=http://x.test/end"), nil, nil)
	if status != 301 {
		t.Errorf("301 without it in redirect_response_codes: %d, want it passed through", status)
	}
}

// A hedged request follows the redirect the winning attempt answers.
func TestInternalRedirectHedged(t *testing.T) {
	for _, upstreamH2 := range []bool{false, true} {
		log := &eventLog{}
		st := stats.NewStore()
		slow := hedgeUpstream(t, log, "slow", 200, -1)
		fast := redirectUpstream(t)
		fc := newFakeCluster(st, "up", upstreamH2, hostOf(slow), hostOf(fast))
		ec := newFakeCluster(st, "echo", upstreamH2, hostOf(fast))
		t.Cleanup(fc.closeIdle)
		t.Cleanup(ec.closeIdle)
		route := hedgeRoute(1, true)
		route.GetRoute().InternalRedirectPolicy = &routev3.InternalRedirectPolicy{}
		rc := routeConfig(clusterRoute("/done", "echo"), route)
		p := startProxy(t, internalHCM(rc), Deps{Stats: st, Upstreams: fakeUpstreams{"up": fc, "echo": ec}})
		status, _, body := do(t, client(), "POST", p.url("/r/302?to=http://x.test/done"), strings.NewReader("req"), nil)
		if status != 200 || !strings.HasPrefix(body, "POST /done ") || !strings.HasSuffix(body, "\n\nreq") {
			t.Errorf("h2 upstream %v: %d %.100q; want the redirect followed with the body", upstreamH2, status, body)
		}
		p.waitCounter(t, "cluster.up.upstream_internal_redirect_succeeded_total", 1)
	}
}

// A request's redirect state does not outlive it: previous_routes sees
// the routes of this request's redirects only, on a kept-alive
// connection too.
func TestInternalRedirectStatePerRequest(t *testing.T) {
	prev, _ := anypb.New(&previousroutesv3.PreviousRoutesConfig{})
	safe, _ := anypb.New(&safeschemev3.SafeCrossSchemeConfig{})
	p := redirectProxy(t, false, &routev3.InternalRedirectPolicy{AllowCrossSchemeRedirect: true,
		Predicates: []*corev3.TypedExtensionConfig{{Name: "p", TypedConfig: prev}, {Name: "s", TypedConfig: safe}}})
	c := client()
	// previous_routes records the echo route, then safe_cross_scheme
	// refuses the https target.
	if status, _, _ := do(t, c, "GET", p.url("/r/302?to=https://x.test/echo"), nil, nil); status != 302 {
		t.Fatalf("https target: %d, want the 302 passed through", status)
	}
	// The next request on the connection goes to the echo route.
	if status, _, body := do(t, c, "GET", p.url("/r/302?to=http://x.test/echo"), nil, nil); status != 200 || !strings.HasPrefix(body, "GET /echo ") {
		t.Errorf("next request: %d %.60q, want the redirect followed", status, body)
	}
}

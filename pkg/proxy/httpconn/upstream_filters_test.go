package httpconn

import (
	"io"
	"net/http"
	"net/http/httptest"
	"slices"
	"strings"
	"sync"
	"testing"

	routev3 "github.com/envoyproxy/go-control-plane/envoy/config/route/v3"
	bufferv3 "github.com/envoyproxy/go-control-plane/envoy/extensions/filters/http/buffer/v3"
	hmv3 "github.com/envoyproxy/go-control-plane/envoy/extensions/filters/http/header_mutation/v3"
	routerv3 "github.com/envoyproxy/go-control-plane/envoy/extensions/filters/http/router/v3"
	upstreamcodecv3 "github.com/envoyproxy/go-control-plane/envoy/extensions/filters/http/upstream_codec/v3"
	hcmv3 "github.com/envoyproxy/go-control-plane/envoy/extensions/filters/network/http_connection_manager/v3"
	"google.golang.org/protobuf/encoding/protojson"
	"google.golang.org/protobuf/proto"
	"google.golang.org/protobuf/types/known/wrapperspb"

	"github.com/outrigger-dev/outrigger/pkg/proxy/extension"
	"github.com/outrigger-dev/outrigger/pkg/proxy/filters/http/buffer"
	"github.com/outrigger-dev/outrigger/pkg/proxy/filters/http/router"
	"github.com/outrigger-dev/outrigger/pkg/proxy/filters/http/upstreamcodec"
	"github.com/outrigger-dev/outrigger/pkg/proxy/httpfilter"
	"github.com/outrigger-dev/outrigger/pkg/proxy/stats"
)

// denyFactory builds an upstream-capable test filter that answers a
// request carrying x-deny itself, 403 "denied upstream".
type denyFactory struct{}

func (denyFactory) UpstreamCapable() {}

func (denyFactory) Compile(proto.Message, httpfilter.Context) (httpfilter.Config, error) {
	return denyFilter{}, nil
}

type denyFilter struct{}

func (f denyFilter) NewFilter() httpfilter.Filter { return f }

func (denyFilter) DecodeHeaders(s httpfilter.Stream) httpfilter.Status {
	if _, ok := s.RequestHeaders().Get("x-deny"); ok {
		s.SendLocalReply(403, "denied upstream", 0, "upstream_denied")
		return httpfilter.Stop
	}
	return httpfilter.Continue
}

// upstreamFilterRegistry has the router, the buffer filter, the deny test
// filter and upstream_codec.
func upstreamFilterRegistry(t testing.TB) *extension.Registry {
	t.Helper()
	reg, err := extension.New(
		extension.Of(router.Name, httpFiltersCategory, &routerv3.Router{}, router.Factory{}),
		extension.Of(buffer.Name, httpFiltersCategory, &bufferv3.Buffer{}, buffer.Factory{}).WithRouteConfig(&bufferv3.BufferPerRoute{}),
		extension.Of("proxy.filters.http.deny", httpFiltersCategory, &wrapperspb.BoolValue{}, denyFactory{}),
		extension.Of(upstreamcodec.Name, httpfilter.UpstreamCategory, &upstreamcodecv3.UpstreamCodec{}, upstreamcodec.Factory{}),
	)
	if err != nil {
		t.Fatal(err)
	}
	return reg
}

// upstreamFilters is an upstream filter list: filters, then the codec.
func upstreamFilters(filters ...*hcmv3.HttpFilter) []*hcmv3.HttpFilter {
	return append(filters, filter("envoy.filters.http.upstream_codec", &upstreamcodecv3.UpstreamCodec{}))
}

// bufferFilter is a buffer filter entry of limit max bytes.
func bufferFilter(max uint32) *hcmv3.HttpFilter {
	return filter("envoy.filters.http.buffer", &bufferv3.Buffer{MaxRequestBytes: wrapperspb.UInt32(max)})
}

// withUpstreamFilters makes the router of cfg run filters upstream.
func withUpstreamFilters(cfg *hcmv3.HttpConnectionManager, filters []*hcmv3.HttpFilter) *hcmv3.HttpConnectionManager {
	cfg.HttpFilters[len(cfg.HttpFilters)-1] = filter("envoy.filters.http.router", &routerv3.Router{UpstreamHttpFilters: filters})
	return cfg
}

// bodyRecorder is an upstream that keeps the body of every request it
// gets, answers the first failFirst of them 503 and echoes the others.
type bodyRecorder struct {
	mu        sync.Mutex
	bodies    []string
	failFirst int
}

func (b *bodyRecorder) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	body, err := io.ReadAll(r.Body)
	if err != nil {
		http.Error(w, err.Error(), 500)
		return
	}
	b.mu.Lock()
	b.bodies = append(b.bodies, string(body))
	n := len(b.bodies)
	b.mu.Unlock()
	if n <= b.failFirst {
		w.WriteHeader(http.StatusServiceUnavailable)
		return
	}
	_, _ = w.Write(body)
}

// got returns the bodies received so far, and forgets them.
func (b *bodyRecorder) got() []string {
	b.mu.Lock()
	defer b.mu.Unlock()
	got := b.bodies
	b.bodies = nil
	return got
}

// retry5xx is a retry policy of one retry on 5xx.
func retry5xx(a *routev3.RouteAction) {
	a.RetryPolicy = &routev3.RetryPolicy{RetryOn: "5xx", NumRetries: wrapperspb.UInt32(1)}
}

// TestUpstreamBufferFilter checks the buffer filter in the router's
// upstream chain: each attempt of a retried request gets the whole body,
// over HTTP/1.1 and HTTP/2 upstreams, for bodies of known and unknown
// length; a body over the limit is answered 413 without reaching the
// upstream, without a retry and without counting downstream_rq_too_large.
func TestUpstreamBufferFilter(t *testing.T) {
	rec := &bodyRecorder{}
	up := startRecorder(t, rec, false)
	h2up := startRecorder(t, rec, true)
	st := stats.NewStore()
	ups := fakeUpstreams{"h1": newFakeCluster(st, "h1", false, hostOf(up)), "h2": newFakeCluster(st, "h2", true, hostOf(h2up))}
	cfg := withUpstreamFilters(hcm(routeConfig(clusterRoute("/h2", "h2", retry5xx), clusterRoute("/", "h1", retry5xx))),
		upstreamFilters(bufferFilter(16)))
	cfg.AccessLog = textLog("log", "%RESPONSE_CODE% rx=%BYTES_RECEIVED%\n")
	log := &syncBuffer{}
	p := startProxy(t, cfg, Deps{Stats: st, Upstreams: ups, AccessLogs: logTo(log)})

	for _, path := range []string{"/h1", "/h2"} {
		for _, chunked := range []bool{false, true} {
			name := path
			if chunked {
				name += " chunked"
			}
			t.Run(name, func(t *testing.T) {
				body := func(s string) io.Reader {
					if chunked {
						// An unknown length: the client sends it
						// chunked.
						return io.MultiReader(strings.NewReader(s))
					}
					return strings.NewReader(s)
				}
				rec.mu.Lock()
				rec.failFirst = 1
				rec.mu.Unlock()
				status, _, got := do(t, client(), "POST", p.url(path), body("0123456789abcdef"), nil)
				if status != 200 || got != "0123456789abcdef" {
					t.Errorf("status %d body %q, want 200 and the body", status, got)
				}
				if b := rec.got(); len(b) != 2 || b[0] != "0123456789abcdef" || b[1] != b[0] {
					t.Errorf("the upstream got %q, want the whole body on both attempts", b)
				}
				// The body's bytes counted once, whatever the attempts.
				waitLogLine(t, log, `(^|\n)200 rx=16$`)

				status, _, got = do(t, client(), "POST", p.url(path), body("0123456789abcdefg"), nil)
				if status != 413 || got != "Payload Too Large" {
					t.Errorf("status %d body %q, want 413 Payload Too Large", status, got)
				}
				if b := rec.got(); len(b) != 0 {
					t.Errorf("the upstream got %q, want nothing", b)
				}
				waitLogLine(t, log, `\n413 rx=17$`)
			})
		}
	}
	if n := p.counter("http.test.downstream_rq_too_large"); n != 0 {
		t.Errorf("downstream_rq_too_large %d, want 0 (an upstream filter's 413)", n)
	}
	if n := p.counter("cluster.h1.upstream_rq_retry"); n != 2 {
		t.Errorf("cluster.h1.upstream_rq_retry %d, want 2 (none for the 413s)", n)
	}
}

// TestUpstreamLocalReply checks that an upstream filter's local reply
// ends the request: the upstream sees nothing, the reply is not retried,
// and the connection manager's filters see it as the response.
func TestUpstreamLocalReply(t *testing.T) {
	rec := &bodyRecorder{}
	up := startRecorder(t, rec, false)
	st := stats.NewStore()
	ups := fakeUpstreams{"h1": newFakeCluster(st, "h1", false, hostOf(up))}
	cfg := withUpstreamFilters(hcm(routeConfig(clusterRoute("/", "h1", retry5xx))),
		upstreamFilters(filter("deny", wrapperspb.Bool(true)), bufferFilter(4)))
	p := startProxy(t, cfg, Deps{Stats: st, Upstreams: ups, Extensions: upstreamFilterRegistry(t)})

	status, _, got := do(t, client(), "POST", p.url("/a"), strings.NewReader("0123456789"), map[string]string{"x-deny": "1"})
	if status != 403 || got != "denied upstream" {
		t.Errorf("status %d body %q, want 403 denied upstream", status, got)
	}
	// The connection still carries requests: the unread body was
	// skipped or the connection closed, either way a new request works.
	status, _, got = do(t, client(), "POST", p.url("/a"), strings.NewReader("0123"), nil)
	if status != 200 || got != "0123" {
		t.Errorf("status %d body %q, want 200 0123", status, got)
	}
	if b := rec.got(); len(b) != 1 {
		t.Errorf("the upstream got %q, want only the second request", b)
	}
	if n := p.counter("cluster.h1.upstream_rq_retry"); n != 0 {
		t.Errorf("upstream_rq_retry %d, want 0", n)
	}
}

// TestUpstreamShadowBuffer checks that a shadow cluster's upstream buffer
// filter drops the copies whose body is over its limit (its 413), and
// sends the others whole.
func TestUpstreamShadowBuffer(t *testing.T) {
	rec, shadowRec := &bodyRecorder{}, &bodyRecorder{}
	up := startRecorder(t, rec, false)
	sup := startRecorder(t, shadowRec, false)
	st := stats.NewStore()
	shadow := newFakeCluster(st, "shadow", false, hostOf(sup))
	chain, err := httpfilter.CompileUpstream("http_filters", upstreamFilters(bufferFilter(4)), httpfilter.Context{Extensions: upstreamFilterRegistry(t), LookupByName: true})
	if err != nil {
		t.Fatal(err)
	}
	shadow.upFilters = chain
	ups := fakeUpstreams{"h1": newFakeCluster(st, "h1", false, hostOf(up)), "shadow": shadow}
	mirror := func(a *routev3.RouteAction) {
		a.RequestMirrorPolicies = []*routev3.RouteAction_RequestMirrorPolicy{{Cluster: "shadow"}}
	}
	p := startProxy(t, hcm(routeConfig(clusterRoute("/", "h1", mirror))), Deps{Stats: st, Upstreams: ups, Extensions: upstreamFilterRegistry(t)})

	for _, body := range []string{"0123456789", "abc"} {
		if status, _, got := do(t, client(), "POST", p.url("/a"), strings.NewReader(body), nil); status != 200 || got != body {
			t.Errorf("status %d body %q, want 200 %q", status, got, body)
		}
	}
	// The copies go out in order, the first one not at all: once the
	// second has arrived, nothing else will.
	var got []string
	eventually(t, "the shadow's request", func() bool {
		got = append(got, shadowRec.got()...)
		return len(got) > 0
	})
	if len(got) != 1 || got[0] != "abc" {
		t.Errorf("the shadow got %q, want only the body under its filter's limit", got)
	}
}

// startRecorder serves rec over HTTP/1.1, or h2c with prior knowledge.
func startRecorder(t testing.TB, rec *bodyRecorder, h2 bool) *httptest.Server {
	t.Helper()
	srv := httptest.NewUnstartedServer(rec)
	if h2 {
		srv.Config.Protocols = new(http.Protocols)
		srv.Config.Protocols.SetUnencryptedHTTP2(true)
	}
	srv.Start()
	t.Cleanup(srv.Close)
	return srv
}

// TestUpstreamBufferHedged checks that a hedged attempt's upstream buffer
// filter buffers the whole body again: the attempt started on the
// per-try timeout sends it whole, over both upstream protocols.
func TestUpstreamBufferHedged(t *testing.T) {
	for _, upstreamH2 := range []bool{false, true} {
		log := &eventLog{}
		st := stats.NewStore()
		fc := slowFastCluster(t, log, st, upstreamH2)
		cfg := withUpstreamFilters(internalHCM(routeConfig(hedgeRoute(1, true))), upstreamFilters(bufferFilter(16)))
		p := startProxy(t, cfg, Deps{Stats: st, Upstreams: fakeUpstreams{"up": fc}, Extensions: upstreamFilterRegistry(t)})
		status, _, body := do(t, client(), "POST", p.url("/x"), strings.NewReader("req"), nil)
		if status != 200 || body != "fast:req" {
			t.Errorf("h2 upstream %v: %d %q; want 200 from the fast host with the whole body", upstreamH2, status, body)
		}
		log.waitFor(t, "slow:cancelled")
	}
}

// trailerRecorder is an HTTP/2 upstream that keeps "path trailers" of
// every request it gets (its trailers sorted, name=value), and answers
// the first failFirst 503.
func trailerRecorder(t testing.TB, failFirst int) (*httptest.Server, func() []string) {
	t.Helper()
	return requestRecorder(t, failFirst, func(r *http.Request) string {
		_, _ = io.Copy(io.Discard, r.Body)
		var tr []string
		for k, vs := range r.Trailer {
			for _, v := range vs {
				tr = append(tr, strings.ToLower(k)+"="+v)
			}
		}
		slices.Sort(tr)
		return r.URL.RequestURI() + " " + strings.Join(tr, ",")
	})
}

// requestRecorder is an upstream, HTTP/1.1 and h2c, that keeps what
// record makes of every request it gets, and answers the first failFirst
// 503, the others 200.
func requestRecorder(t testing.TB, failFirst int, record func(*http.Request) string) (*httptest.Server, func() []string) {
	t.Helper()
	var (
		mu   sync.Mutex
		seen []string
	)
	srv := httptest.NewUnstartedServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		got := record(r)
		mu.Lock()
		seen = append(seen, got)
		n := len(seen)
		mu.Unlock()
		if n <= failFirst {
			w.WriteHeader(http.StatusServiceUnavailable)
		}
	}))
	srv.Config.Protocols = new(http.Protocols)
	srv.Config.Protocols.SetHTTP1(true)
	srv.Config.Protocols.SetUnencryptedHTTP2(true)
	srv.Start()
	t.Cleanup(srv.Close)
	return srv, func() []string {
		mu.Lock()
		defer mu.Unlock()
		return append([]string(nil), seen...)
	}
}

// TestUpstreamHeaderMutationPerAttempt checks header_mutation's query
// and trailer edits in the router's upstream chain: the query is edited
// on the path as rewritten for the upstream, and each attempt's
// trailers are the client's as the filter edits them.
func TestUpstreamHeaderMutationPerAttempt(t *testing.T) {
	up, seen := trailerRecorder(t, 1)
	st := stats.NewStore()
	ups := fakeUpstreams{"up": newFakeCluster(st, "up", true, hostOf(up))}
	var hm hmv3.HeaderMutation
	if err := protojson.Unmarshal([]byte(`{"mutations": {
		"query_parameter_mutations": [{"append": {"record": {"key": "q", "value": "1"}, "action": "OVERWRITE_IF_EXISTS_OR_ADD"}}],
		"request_trailers_mutations": [{"append": {"header": {"key": "x-up-trailer", "value": "t"}, "append_action": "OVERWRITE_IF_EXISTS_OR_ADD"}}]}}`), &hm); err != nil {
		t.Fatal(err)
	}
	rewrite := func(a *routev3.RouteAction) {
		retry5xx(a)
		a.PrefixRewrite = "/new"
	}
	cfg := withUpstreamFilters(hcm(routeConfig(clusterRoute("/old", "up", rewrite))), upstreamFilters(filter("hm", &hm)))
	p := startProxy(t, cfg, Deps{Stats: st, Upstreams: ups})

	req, err := http.NewRequest("POST", p.url("/old/x?a=b"), io.MultiReader(strings.NewReader("body")))
	if err != nil {
		t.Fatal(err)
	}
	// x-up-trailer declared, never sent by the client: Go's server
	// keeps only the trailers the request head declares.
	req.Trailer = http.Header{"X-Client-Trailer": {"c"}, "X-Up-Trailer": nil}
	resp, err := h2cClient().Do(req)
	if err != nil {
		t.Fatal(err)
	}
	_, _ = io.Copy(io.Discard, resp.Body)
	_ = resp.Body.Close()
	if resp.StatusCode != 200 {
		t.Errorf("status %d, want 200 (the retry)", resp.StatusCode)
	}
	want := "/new/x?a=b&q=1 x-client-trailer=c,x-up-trailer=t"
	if got := seen(); len(got) != 2 || got[0] != want || got[1] != want {
		t.Errorf("the upstream saw %q, want %q on both attempts", got, want)
	}
}

// closingConfig is an upstream filter configuration that holds a
// resource: it counts its closes.
type closingConfig struct {
	denyFilter
	closes *int
}

func (c closingConfig) Close() error {
	*c.closes++
	return nil
}

// The router's upstream_http_filters are closed with the chain that holds
// them, as http_filters are: a listener that goes away releases what its
// upstream filters hold.
func TestFilterChainClosesUpstreamFilters(t *testing.T) {
	var closes int
	fc := filterChain{upstream: &httpfilter.UpstreamChain{Filters: []httpfilter.UpstreamFilter{
		{Name: "first", Config: closingConfig{closes: &closes}},
		{Name: "plain", Config: denyFilter{}},
		{Name: "second", Config: closingConfig{closes: &closes}},
	}}}
	fc.close()
	if closes != 2 {
		t.Errorf("%d upstream filter configurations closed, want 2", closes)
	}
	(&filterChain{}).close() // no upstream filters: nothing to close
}

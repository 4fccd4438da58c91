package httpconn

import (
	"bufio"
	"cmp"
	"io"
	"net"
	"path/filepath"
	"regexp"
	"strings"
	"testing"

	corev3 "github.com/envoyproxy/go-control-plane/envoy/config/core/v3"
	routev3 "github.com/envoyproxy/go-control-plane/envoy/config/route/v3"
	hcmv3 "github.com/envoyproxy/go-control-plane/envoy/extensions/filters/network/http_connection_manager/v3"
	"google.golang.org/protobuf/types/known/wrapperspb"

	"github.com/outrigger-dev/outrigger/internal/golden"
	"github.com/outrigger-dev/outrigger/pkg/proxy/stats"
)

// uuidPattern finds generated request ids, which differ on every run.
var uuidPattern = regexp.MustCompile(`[0-9a-f]{8}-[0-9a-f]{4}-4[0-9a-f]{3}-[89ab][0-9a-f]{3}-[0-9a-f]{12}`)

// stable replaces what changes from run to run in an echoed request.
func stable(s, upstreamAddr string) string {
	s = uuidPattern.ReplaceAllString(s, "<uuid>")
	return strings.ReplaceAll(s, upstreamAddr, "<upstream>")
}

// echoProxy runs a proxy whose /echo routes go to an echo upstream over
// HTTP/1.1, with the given manager tweaks.
func echoProxy(t *testing.T, tweak func(*hcmProxyConfig)) (*proxy, *fakeCluster, string) {
	t.Helper()
	up := echoUpstream(t)
	st := stats.NewStore()
	cl := newFakeCluster(st, "echo", false, hostOf(up))
	cfg := &hcmProxyConfig{routes: []*routev3.Route{
		clusterRoute("/rewrite/", "echo", func(a *routev3.RouteAction) {
			a.PrefixRewrite = "/new/"
			a.HostRewriteSpecifier = &routev3.RouteAction_HostRewriteLiteral{HostRewriteLiteral: "rewritten.example"}
		}),
		clusterRoute("/", "echo"),
	}}
	if tweak != nil {
		tweak(cfg)
	}
	c := hcm(routeConfig(cfg.routes...))
	if cfg.edit != nil {
		cfg.edit(c)
	}
	p := startProxy(t, c, Deps{Stats: st, Upstreams: fakeUpstreams{"echo": cl}})
	return p, cl, hostOf(up)
}

// hcmProxyConfig lets a test adjust echoProxy's configuration.
type hcmProxyConfig struct {
	routes []*routev3.Route
	edit   func(*hcmv3.HttpConnectionManager)
}

func TestProxyRequests(t *testing.T) {
	p, _, upAddr := echoProxy(t, nil)
	tests := map[string]struct {
		raw    string
		method string
	}{
		"get": {
			raw: "GET /echo/a?b=c HTTP/1.1\r\nHost: example.com\r\nUser-Agent: test\r\nAccept: */*\r\n\r\n",
		},
		"post with content-length": {
			raw: "POST /echo HTTP/1.1\r\nHost: example.com\r\nContent-Length: 11\r\nContent-Type: text/plain\r\n\r\nhello world",
		},
		"post chunked": {
			raw: "POST /echo HTTP/1.1\r\nHost: example.com\r\nTransfer-Encoding: chunked\r\n\r\n5\r\nhello\r\n6;ext=1\r\n world\r\n0\r\nTrailer: dropped\r\n\r\n",
		},
		"hop-by-hop fields stay behind": {
			raw: "GET /echo HTTP/1.1\r\nHost: example.com\r\nConnection: keep-alive, X-Secret\r\nX-Secret: 1\r\n" +
				"Keep-Alive: timeout=5\r\nTE: trailers\r\nUpgrade: websocket\r\nProxy-Connection: keep-alive\r\nX-Kept: yes\r\n\r\n",
		},
		"client request id is kept": {
			raw: "GET /echo HTTP/1.1\r\nHost: example.com\r\nX-Request-Id: client-chosen\r\n\r\n",
		},
		"prefix and host rewrite": {
			raw: "GET /rewrite/path?q=1 HTTP/1.1\r\nHost: example.com\r\n\r\n",
		},
		"absolute-form target": {
			raw: "GET http://absolute.example/echo?x HTTP/1.1\r\nHost: ignored.example\r\n\r\n",
		},
		"expect 100-continue": {
			raw: "PUT /echo HTTP/1.1\r\nHost: example.com\r\nExpect: 100-continue\r\nContent-Length: 4\r\n\r\nbody",
		},
		"head": {
			raw: "HEAD /echo HTTP/1.1\r\nHost: example.com\r\n\r\n", method: "HEAD",
		},
	}
	for name, tc := range tests {
		t.Run(name, func(t *testing.T) {
			c := dialRaw(t, p.addr)
			c.send(tc.raw)
			method := tc.method
			if method == "" {
				method = "GET"
			}
			resp, body := c.response(method)
			if strings.Contains(tc.raw, "100-continue") {
				if resp.StatusCode != 100 {
					t.Fatalf("first response = %d, want 100 Continue", resp.StatusCode)
				}
				resp, body = c.response(method)
			}
			if resp.StatusCode != 200 {
				t.Fatalf("status = %d, body %q", resp.StatusCode, body)
			}
			for name, want := range map[string]string{"server": "outrigger", "x-upstream": "echo"} {
				if got := resp.Header.Get(name); got != want {
					t.Errorf("%s = %q, want %q", name, got, want)
				}
			}
			for _, name := range []string{"x-envoy-upstream-service-time", "date"} {
				if resp.Header.Get(name) == "" {
					t.Errorf("response has no %s header", name)
				}
			}
			file := strings.ReplaceAll(name, " ", "_") + ".golden"
			golden.Check(t, filepath.Join("testdata", "proxy", file), []byte(stable(body, upAddr)))
		})
	}
}

func TestProxyHeaderOptions(t *testing.T) {
	remoteAddress := func(c *hcmv3.HttpConnectionManager) { c.UseRemoteAddress = wrapperspb.Bool(true) }
	loopbackInternal := func(c *hcmv3.HttpConnectionManager) {
		c.UseRemoteAddress = wrapperspb.Bool(true)
		c.InternalAddressConfig = &hcmv3.HttpConnectionManager_InternalAddressConfig{
			CidrRanges: []*corev3.CidrRange{{AddressPrefix: "127.0.0.0", PrefixLen: wrapperspb.UInt32(8)}},
		}
	}
	const internalOnly = "X-Envoy-Retry-On: 5xx\r\nX-Envoy-Force-Trace: 1\r\nX-Envoy-Downstream-Service-Cluster: web\r\nX-Envoy-Internal: true\r\n"
	tests := map[string]struct {
		edit    func(*hcmv3.HttpConnectionManager)
		target  string // the request target; /echo when empty
		host    string // the host; example.com when empty
		headers string
		line    string   // the request line the upstream must get
		want    []string // lines the echoed request must hold
		absent  []string // header names it must not hold
		status  int      // the response status; 200 when 0
		resp    map[string]string
	}{
		"use_remote_address appends the peer to x-forwarded-for": {
			edit:    func(c *hcmv3.HttpConnectionManager) { c.UseRemoteAddress = wrapperspb.Bool(true) },
			headers: "X-Forwarded-For: 203.0.113.1\r\n",
			want:    []string{"x-forwarded-for: 203.0.113.1, 127.0.0.1"},
		},
		"use_remote_address starts x-forwarded-for": {
			edit: func(c *hcmv3.HttpConnectionManager) { c.UseRemoteAddress = wrapperspb.Bool(true) },
			want: []string{"x-forwarded-for: 127.0.0.1"},
		},
		"skip_xff_append": {
			edit: func(c *hcmv3.HttpConnectionManager) {
				c.UseRemoteAddress = wrapperspb.Bool(true)
				c.SkipXffAppend = true
			},
			absent: []string{"x-forwarded-for"},
		},
		"x-forwarded-proto is overwritten at the edge without trusted hops": {
			edit:    remoteAddress,
			headers: "X-Forwarded-Proto: https\r\n",
			want:    []string{"x-forwarded-proto: http"},
		},
		"x-forwarded-proto is kept behind trusted hops": {
			edit: func(c *hcmv3.HttpConnectionManager) {
				c.UseRemoteAddress = wrapperspb.Bool(true)
				c.XffNumTrustedHops = 1
			},
			headers: "X-Forwarded-Proto: https\r\n",
			want:    []string{"x-forwarded-proto: https"},
		},
		"x-forwarded-proto is kept without use_remote_address": {
			headers: "X-Forwarded-Proto: https\r\n",
			want:    []string{"x-forwarded-proto: https"},
		},
		"x-forwarded-proto is added when absent": {
			want: []string{"x-forwarded-proto: http"},
		},
		"internal headers are dropped from requests that are not internal": {
			headers: internalOnly,
			// Not an edge request (no use_remote_address): the
			// downstream service headers stay.
			want:   []string{"x-envoy-downstream-service-cluster: web"},
			absent: []string{"x-envoy-retry-on", "x-envoy-force-trace", "x-envoy-internal", "x-envoy-external-address"},
		},
		"edge requests lose the service headers too, and get x-envoy-external-address": {
			edit:    remoteAddress,
			headers: internalOnly,
			want:    []string{"x-envoy-external-address: 127.0.0.1"},
			absent:  []string{"x-envoy-retry-on", "x-envoy-downstream-service-cluster", "x-envoy-internal"},
		},
		"an internal client keeps them and is marked": {
			edit:    loopbackInternal,
			headers: internalOnly,
			want:    []string{"x-envoy-force-trace: 1", "x-envoy-downstream-service-cluster: web", "x-envoy-internal: true"},
			// The router consumes the retry headers, as Envoy's does.
			absent: []string{"x-envoy-external-address", "x-envoy-retry-on"},
		},
		"a client behind another hop is not internal": {
			edit:    loopbackInternal,
			headers: internalOnly + "X-Forwarded-For: 10.0.0.1\r\n",
			want:    []string{"x-forwarded-for: 10.0.0.1, 127.0.0.1", "x-envoy-external-address: 127.0.0.1"},
			absent:  []string{"x-envoy-retry-on", "x-envoy-internal"},
		},
		"the client address comes from x-forwarded-for behind trusted hops": {
			edit: func(c *hcmv3.HttpConnectionManager) {
				c.UseRemoteAddress = wrapperspb.Bool(true)
				c.XffNumTrustedHops = 1
			},
			headers: "X-Forwarded-For: 203.0.113.7, 198.51.100.2\r\n",
			want:    []string{"x-envoy-external-address: 198.51.100.2", "x-forwarded-for: 203.0.113.7, 198.51.100.2, 127.0.0.1"},
		},
		"an edge request gets a new x-request-id": {
			edit:    remoteAddress,
			headers: "X-Request-Id: from-outside\r\n",
			absent:  []string{"x-request-id: from-outside"},
		},
		"preserve_external_request_id keeps it": {
			edit: func(c *hcmv3.HttpConnectionManager) {
				c.UseRemoteAddress = wrapperspb.Bool(true)
				c.PreserveExternalRequestId = true
			},
			headers: "X-Request-Id: from-outside\r\n",
			want:    []string{"x-request-id: from-outside"},
		},
		"an inner hop keeps x-request-id": {
			headers: "X-Request-Id: from-edge\r\n",
			want:    []string{"x-request-id: from-edge"},
		},
		"normalize_path": {
			edit:   func(c *hcmv3.HttpConnectionManager) { c.NormalizePath = wrapperspb.Bool(true) },
			target: "/a/./b/../c/%7e%2a\\d?x=/../y",
			line:   "GET /a/c/~%2A/d?x=/../y HTTP/1.1",
		},
		"paths are left alone by default": {
			target: "/a/./b/../c//d%2Fe",
			line:   "GET /a/./b/../c//d%2Fe HTTP/1.1",
		},
		"merge_slashes": {
			edit:   func(c *hcmv3.HttpConnectionManager) { c.MergeSlashes = true },
			target: "//a///b/?q=//",
			line:   "GET /a/b/?q=// HTTP/1.1",
		},
		"escaped slashes forwarded unescaped": {
			edit: func(c *hcmv3.HttpConnectionManager) {
				c.PathWithEscapedSlashesAction = hcmv3.HttpConnectionManager_UNESCAPE_AND_FORWARD
			},
			target: "/a%2fb%5Cc",
			line:   "GET /a/b\\c HTTP/1.1",
		},
		"escaped slashes refused": {
			edit: func(c *hcmv3.HttpConnectionManager) {
				c.PathWithEscapedSlashesAction = hcmv3.HttpConnectionManager_REJECT_REQUEST
			},
			target: "/a%2Fb",
			status: 400,
		},
		"escaped slashes redirected": {
			edit: func(c *hcmv3.HttpConnectionManager) {
				c.PathWithEscapedSlashesAction = hcmv3.HttpConnectionManager_UNESCAPE_AND_REDIRECT
			},
			target: "/a%2Fb?q=%2F",
			status: 307,
			resp:   map[string]string{"location": "/a/b?q=%2F"},
		},
		"headers with underscores are dropped": {
			edit: func(c *hcmv3.HttpConnectionManager) {
				c.CommonHttpProtocolOptions = &corev3.HttpProtocolOptions{HeadersWithUnderscoresAction: corev3.HttpProtocolOptions_DROP_HEADER}
			},
			headers: "X_Secret: 1\r\nX-Fine: 2\r\n",
			want:    []string{"x-fine: 2"},
			absent:  []string{"x_secret"},
		},
		"headers with underscores are refused": {
			edit: func(c *hcmv3.HttpConnectionManager) {
				c.CommonHttpProtocolOptions = &corev3.HttpProtocolOptions{HeadersWithUnderscoresAction: corev3.HttpProtocolOptions_REJECT_REQUEST}
			},
			headers: "X_Secret: 1\r\n",
			status:  400,
		},
		"headers with underscores are allowed by default": {
			headers: "X_Secret: 1\r\n",
			want:    []string{"x_secret: 1"},
		},
		"strip_any_host_port": {
			edit: func(c *hcmv3.HttpConnectionManager) {
				c.StripPortMode = &hcmv3.HttpConnectionManager_StripAnyHostPort{StripAnyHostPort: true}
			},
			host: "example.com:8443",
			want: []string{"host: example.com"},
		},
		"strip_matching_host_port leaves another port": {
			edit: func(c *hcmv3.HttpConnectionManager) { c.StripMatchingHostPort = true },
			host: "example.com:1",
			want: []string{"host: example.com:1"},
		},
		"generate_request_id false": {
			edit:   func(c *hcmv3.HttpConnectionManager) { c.GenerateRequestId = wrapperspb.Bool(false) },
			absent: []string{"x-request-id"},
		},
		"via on both sides": {
			edit:    func(c *hcmv3.HttpConnectionManager) { c.Via = "1.1 outrigger" },
			headers: "Via: 1.0 earlier\r\n",
			want:    []string{"via: 1.0 earlier, 1.1 outrigger"},
			resp:    map[string]string{"via": "1.1 outrigger"},
		},
		"server_name": {
			edit: func(c *hcmv3.HttpConnectionManager) { c.ServerName = "custom" },
			resp: map[string]string{"server": "custom"},
		},
		"pass-through server header": {
			edit: func(c *hcmv3.HttpConnectionManager) {
				c.ServerHeaderTransformation = hcmv3.HttpConnectionManager_PASS_THROUGH
			},
			resp: map[string]string{"server": ""},
		},
		"always_set_request_id_in_response": {
			edit:    func(c *hcmv3.HttpConnectionManager) { c.AlwaysSetRequestIdInResponse = true },
			headers: "X-Request-Id: abc\r\n",
			resp:    map[string]string{"x-request-id": "abc"},
		},
	}
	for name, tc := range tests {
		t.Run(name, func(t *testing.T) {
			p, _, _ := echoProxy(t, func(c *hcmProxyConfig) { c.edit = tc.edit })
			c := dialRaw(t, p.addr)
			target, host := cmp.Or(tc.target, "/echo"), cmp.Or(tc.host, "example.com")
			c.send("GET " + target + " HTTP/1.1\r\nHost: " + host + "\r\n" + tc.headers + "\r\n")
			resp, body := c.response("GET")
			if want := cmp.Or(tc.status, 200); resp.StatusCode != want {
				t.Fatalf("status %d, want %d", resp.StatusCode, want)
			}
			head, _, _ := strings.Cut(body, "\n\n")
			lines := strings.Split(head, "\n")
			if tc.line != "" && lines[0] != tc.line {
				t.Errorf("upstream request line %q, want %q", lines[0], tc.line)
			}
			for _, w := range tc.want {
				if !slicesContains(lines, w) {
					t.Errorf("upstream request lacks %q:\n%s", w, head)
				}
			}
			for _, a := range tc.absent {
				for _, l := range lines {
					if strings.HasPrefix(l, a+":") || l == a {
						t.Errorf("upstream request has %q", l)
					}
				}
			}
			for k, v := range tc.resp {
				if got := resp.Header.Get(k); got != v {
					t.Errorf("response %s = %q, want %q", k, got, v)
				}
			}
		})
	}
}

func slicesContains(lines []string, want string) bool {
	for _, l := range lines {
		if l == want {
			return true
		}
	}
	return false
}

// TestRouteHeaderEdits checks that a route's header additions and removals
// reach the upstream request and the response.
func TestRouteHeaderEdits(t *testing.T) {
	p, _, _ := echoProxy(t, func(c *hcmProxyConfig) {
		r := clusterRoute("/", "echo")
		r.RequestHeadersToAdd = []*corev3.HeaderValueOption{{Header: &corev3.HeaderValue{Key: "x-added", Value: "yes"}}}
		r.RequestHeadersToRemove = []string{"x-removed"}
		r.ResponseHeadersToAdd = []*corev3.HeaderValueOption{{Header: &corev3.HeaderValue{Key: "x-resp", Value: "added"}}}
		r.ResponseHeadersToRemove = []string{"x-upstream"}
		c.routes = []*routev3.Route{r}
	})
	c := dialRaw(t, p.addr)
	c.send("GET /echo HTTP/1.1\r\nHost: example.com\r\nX-Removed: 1\r\n\r\n")
	resp, body := c.response("GET")
	if !strings.Contains(body, "\nx-added: yes\n") || strings.Contains(body, "x-removed") {
		t.Errorf("upstream request headers not edited:\n%s", body)
	}
	if resp.Header.Get("x-resp") != "added" || resp.Header.Get("x-upstream") != "" {
		t.Errorf("response headers not edited: %v", resp.Header)
	}
}

func TestKeepAliveReusesUpstream(t *testing.T) {
	p, cl, _ := echoProxy(t, nil)
	c := dialRaw(t, p.addr)
	for i := range 5 {
		c.send("GET /echo HTTP/1.1\r\nHost: example.com\r\n\r\n")
		resp, _ := c.response("GET")
		if resp.StatusCode != 200 || resp.Close {
			t.Fatalf("request %d: status %d, close %v", i, resp.StatusCode, resp.Close)
		}
	}
	if n := cl.dials.Load(); n != 1 {
		t.Errorf("upstream dials = %d for 5 sequential requests, want 1", n)
	}
	p.waitCounter(t, "http.test.downstream_rq_2xx", 5)
	p.waitCounter(t, "cluster.echo.upstream_rq_200", 5)
	if got := p.counter("http.test.downstream_cx_total"); got != 1 {
		t.Errorf("downstream_cx_total = %d, want 1", got)
	}
}

func TestPipelining(t *testing.T) {
	p, _, _ := echoProxy(t, nil)
	c := dialRaw(t, p.addr)
	// Three requests in one write, one with a body between the others.
	c.send("GET /echo/1 HTTP/1.1\r\nHost: a\r\n\r\n" +
		"POST /echo/2 HTTP/1.1\r\nHost: a\r\nContent-Length: 3\r\n\r\nabc" +
		"GET /echo/3 HTTP/1.1\r\nHost: a\r\nConnection: close\r\n\r\n")
	for i, want := range []string{"GET /echo/1 ", "POST /echo/2 ", "GET /echo/3 "} {
		resp, body := c.response("GET")
		if resp.StatusCode != 200 || !strings.HasPrefix(body, want) {
			t.Fatalf("response %d: %d %q, want a body starting %q", i, resp.StatusCode, body, want)
		}
		if i == 2 && !resp.Close {
			t.Error("the last response does not close the connection")
		}
	}
	if !c.closed() {
		t.Error("connection still open after Connection: close")
	}
}

func TestUpstreamResponseFraming(t *testing.T) {
	tests := map[string]struct {
		response  string
		proto     string // the client's version
		wantBody  string
		wantChunk bool // chunked towards the client
		wantClose bool
	}{
		"content-length": {
			response: "HTTP/1.1 200 OK\r\nContent-Length: 5\r\n\r\nhello", proto: "1.1", wantBody: "hello",
		},
		"chunked is re-chunked": {
			response: "HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n3\r\nabc\r\n2\r\nde\r\n0\r\n\r\n", proto: "1.1",
			wantBody: "abcde", wantChunk: true,
		},
		"until close becomes chunked": {
			response: "HTTP/1.1 200 OK\r\nConnection: close\r\n\r\nall of it", proto: "1.1",
			wantBody: "all of it", wantChunk: true,
		},
		"until close to http/1.0 closes": {
			response: "HTTP/1.1 200 OK\r\nConnection: close\r\n\r\nall of it", proto: "1.0",
			wantBody: "all of it", wantClose: true,
		},
		"interim responses are skipped": {
			response: "HTTP/1.1 100 Continue\r\n\r\nHTTP/1.1 103 Early Hints\r\nLink: x\r\n\r\nHTTP/1.1 201 Created\r\nContent-Length: 2\r\n\r\nok",
			proto:    "1.1", wantBody: "ok",
		},
	}
	for name, tc := range tests {
		t.Run(name, func(t *testing.T) {
			addr := rawUpstream(t, func(c net.Conn, r *bufio.Reader) {
				readRequestHead(r)
				_, _ = io.WriteString(c, tc.response)
			})
			st := stats.NewStore()
			cl := newFakeCluster(st, "raw", false, addr)
			cfg := hcm(routeConfig(clusterRoute("/", "raw")))
			cfg.HttpProtocolOptions = &corev3.Http1ProtocolOptions{AcceptHttp_10: true}
			p := startProxy(t, cfg, Deps{Stats: st, Upstreams: fakeUpstreams{"raw": cl}})
			c := dialRaw(t, p.addr)
			c.send("GET / HTTP/" + tc.proto + "\r\nHost: h\r\n\r\n")
			resp, body := c.response("GET")
			if body != tc.wantBody {
				t.Errorf("body = %q, want %q", body, tc.wantBody)
			}
			chunked := len(resp.TransferEncoding) > 0 && resp.TransferEncoding[0] == "chunked"
			if chunked != tc.wantChunk {
				t.Errorf("chunked = %v, want %v", chunked, tc.wantChunk)
			}
			if tc.wantClose && !c.closed() {
				t.Error("connection open after a close-delimited body")
			}
		})
	}
}

package httpconn

import (
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"

	routev3 "github.com/envoyproxy/go-control-plane/envoy/config/route/v3"
	hcmv3 "github.com/envoyproxy/go-control-plane/envoy/extensions/filters/network/http_connection_manager/v3"

	"github.com/outrigger-dev/outrigger/pkg/proxy/stats"
)

// protocolProxy routes /h1 to an HTTP/1.1 echo upstream and /h2 to an h2c
// one.
func protocolProxy(t *testing.T, codec hcmv3.HttpConnectionManager_CodecType, drain Drainer) *proxy {
	t.Helper()
	st := stats.NewStore()
	ups := fakeUpstreams{
		"h1": newFakeCluster(st, "h1", false, hostOf(echoUpstream(t))),
		"h2": newFakeCluster(st, "h2", true, hostOf(h2cUpstream(t))),
	}
	t.Cleanup(func() {
		for _, c := range ups {
			c.closeIdle()
		}
	})
	cfg := hcm(routeConfig(
		clusterRoute("/h1", "h1", func(a *routev3.RouteAction) { a.PrefixRewrite = "/up" }),
		clusterRoute("/h2", "h2", func(a *routev3.RouteAction) { a.PrefixRewrite = "/up" }),
	))
	cfg.CodecType = codec
	return startProxy(t, cfg, Deps{Stats: st, Upstreams: ups, Drain: drain})
}

func TestProtocols(t *testing.T) {
	tests := map[string]struct {
		client        *http.Client
		path          string
		wantDownProto string
		wantUpProto   string
	}{
		"h1 to h1":   {client: client(), path: "/h1", wantDownProto: "HTTP/1.1", wantUpProto: "HTTP/1.1"},
		"h1 to h2c":  {client: client(), path: "/h2", wantDownProto: "HTTP/1.1", wantUpProto: "HTTP/2.0"},
		"h2c to h1":  {client: h2cClient(), path: "/h1", wantDownProto: "HTTP/2.0", wantUpProto: "HTTP/1.1"},
		"h2c to h2c": {client: h2cClient(), path: "/h2", wantDownProto: "HTTP/2.0", wantUpProto: "HTTP/2.0"},
	}
	p := protocolProxy(t, hcmv3.HttpConnectionManager_AUTO, nil)
	for name, tc := range tests {
		t.Run(name, func(t *testing.T) {
			// Idle HTTP/2 connections would hold the proxy's shutdown.
			defer tc.client.CloseIdleConnections()
			for _, method := range []string{"GET", "POST"} {
				req, _ := http.NewRequest(method, p.url(tc.path+"/x?y=1"), nil)
				if method == "POST" {
					req, _ = http.NewRequest(method, p.url(tc.path+"/x?y=1"), strings.NewReader("payload"))
				}
				req.Host = "example.com"
				resp, err := tc.client.Do(req)
				if err != nil {
					t.Fatal(err)
				}
				body := readAll(t, resp)
				if resp.Proto != tc.wantDownProto || resp.StatusCode != 200 {
					t.Fatalf("%s: got %s %d, want %s 200", method, resp.Proto, resp.StatusCode, tc.wantDownProto)
				}
				first, _, _ := strings.Cut(body, "\n")
				if want := method + " /up/x?y=1 " + tc.wantUpProto; first != want {
					t.Errorf("%s: upstream saw %q, want %q", method, first, want)
				}
				if !strings.Contains(body, "\nhost: example.com\n") {
					t.Errorf("%s: upstream authority lost:\n%s", method, body)
				}
				if method == "POST" && !strings.HasSuffix(body, "\n\npayload") {
					t.Errorf("POST body lost:\n%s", body)
				}
				if resp.Header.Get("server") != ServerName || resp.Header.Get("x-upstream") != "echo" {
					t.Errorf("response headers: %v", resp.Header)
				}
			}
		})
	}
	p.waitCounter(t, "http.test.downstream_rq_http2_total", 4)
}

func TestCodecTypes(t *testing.T) {
	tests := map[string]struct {
		codec    hcmv3.HttpConnectionManager_CodecType
		client   *http.Client
		wantFail bool
	}{
		"http1 codec serves http/1.1":  {codec: hcmv3.HttpConnectionManager_HTTP1, client: client()},
		"http1 codec refuses h2c":      {codec: hcmv3.HttpConnectionManager_HTTP1, client: h2cClient(), wantFail: true},
		"http2 codec serves h2c":       {codec: hcmv3.HttpConnectionManager_HTTP2, client: h2cClient()},
		"http2 codec refuses http/1.1": {codec: hcmv3.HttpConnectionManager_HTTP2, client: client(), wantFail: true},
	}
	for name, tc := range tests {
		t.Run(name, func(t *testing.T) {
			p := protocolProxy(t, tc.codec, nil)
			defer tc.client.CloseIdleConnections()
			resp, err := tc.client.Get(p.url("/h1"))
			if err == nil {
				readAll(t, resp)
			}
			failed := err != nil || resp.StatusCode != 200
			if failed != tc.wantFail {
				t.Fatalf("failed = %v (%v), want %v", failed, err, tc.wantFail)
			}
		})
	}
}

// TestDrainClose checks that a draining listener's responses close HTTP/1
// connections and send GOAWAY on HTTP/2 ones, with every response intact.
func TestDrainClose(t *testing.T) {
	for name, c := range map[string]*http.Client{"http/1.1": client(), "h2c": h2cClient()} {
		t.Run(name, func(t *testing.T) {
			drain := &fakeDrain{}
			p := protocolProxy(t, hcmv3.HttpConnectionManager_AUTO, drain)
			get := func() *http.Response {
				resp, err := c.Get(p.url("/h1"))
				if err != nil {
					t.Fatal(err)
				}
				readAll(t, resp)
				if resp.StatusCode != 200 {
					t.Fatalf("status %d", resp.StatusCode)
				}
				return resp
			}
			get()
			get()
			if got := p.counter("http.test.downstream_cx_total"); got != 1 {
				t.Fatalf("downstream_cx_total = %d before draining, want 1 (keep-alive)", got)
			}
			drain.close.Store(true)
			resp := get()
			if name == "http/1.1" && !resp.Close {
				t.Error("draining response lacks Connection: close")
			}
			// The next request needs a new connection, which the drain
			// closes too.
			get()
			p.waitCounter(t, "http.test.downstream_cx_total", 2)
			p.waitCounter(t, "http.test.downstream_cx_drain_close", 2)
		})
	}
}

func readAll(t *testing.T, resp *http.Response) string {
	t.Helper()
	defer resp.Body.Close()
	b, err := io.ReadAll(resp.Body)
	if err != nil {
		t.Fatalf("reading body: %v", err)
	}
	return string(b)
}

// TestHTTP2TrailersAndTE checks what gRPC needs end to end over h2c: TE
// trailers reaches the upstream and the upstream's trailers reach the
// client.
func TestHTTP2TrailersAndTE(t *testing.T) {
	up := httptest.NewUnstartedServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Trailer", "Grpc-Status")
		w.Header().Set("X-Te", r.Header.Get("Te"))
		_, _ = io.WriteString(w, "payload")
		w.Header().Set("Grpc-Status", "0")
	}))
	up.Config.Protocols = new(http.Protocols)
	up.Config.Protocols.SetUnencryptedHTTP2(true)
	up.Start()
	t.Cleanup(up.Close)
	st := stats.NewStore()
	cl := newFakeCluster(st, "grpc", true, hostOf(up))
	t.Cleanup(cl.closeIdle)
	p := startProxy(t, hcm(routeConfig(clusterRoute("/", "grpc"))), Deps{Stats: st, Upstreams: fakeUpstreams{"grpc": cl}})
	c := h2cClient()
	defer c.CloseIdleConnections()
	req, _ := http.NewRequest("POST", p.url("/svc/Method"), strings.NewReader("x"))
	req.Header.Set("Te", "trailers")
	resp, err := c.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	body := readAll(t, resp)
	if body != "payload" || resp.Header.Get("X-Te") != "trailers" {
		t.Errorf("body %q, upstream saw te %q; want payload and trailers", body, resp.Header.Get("X-Te"))
	}
	if got := resp.Trailer.Get("Grpc-Status"); got != "0" {
		t.Errorf("grpc-status trailer = %q, want 0 (trailers %v)", got, resp.Trailer)
	}
}

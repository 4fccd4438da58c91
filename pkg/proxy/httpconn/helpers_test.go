package httpconn

import (
	"bufio"
	"context"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"slices"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	corev3 "github.com/envoyproxy/go-control-plane/envoy/config/core/v3"
	routev3 "github.com/envoyproxy/go-control-plane/envoy/config/route/v3"
	routerv3 "github.com/envoyproxy/go-control-plane/envoy/extensions/filters/http/router/v3"
	hcmv3 "github.com/envoyproxy/go-control-plane/envoy/extensions/filters/network/http_connection_manager/v3"
	"github.com/go-logr/logr"
	"google.golang.org/protobuf/types/known/anypb"
	"google.golang.org/protobuf/types/known/durationpb"

	"github.com/outrigger-dev/outrigger/pkg/proxy/builtin"
	"github.com/outrigger-dev/outrigger/pkg/proxy/httpfilter"
	"github.com/outrigger-dev/outrigger/pkg/proxy/stats"
	"github.com/outrigger-dev/outrigger/pkg/proxy/upstream"
)

// testTimeout bounds every wait of the tests.
const testTimeout = 10 * time.Second

// fakeCluster is an UpstreamCluster over real loopback connections, with a
// plain LIFO pool, counting what it dials.
type fakeCluster struct {
	name     string
	metadata *corev3.Metadata
	stats    *upstream.ClusterStats
	hosts    []*upstream.Host
	http2    bool
	// hashed picks hosts by the pick's hash key (as ring hash does),
	// round robin without one; hashes counts the keys computed.
	hashed bool
	hashes atomic.Int32
	// maxDuration is the cluster's max_stream_duration.
	maxDuration time.Duration
	next        atomic.Uint32
	dials       atomic.Int32
	mu          sync.Mutex
	idle        []*upstream.Conn
	h2          *http.Transport
	// buffers, if set, lends each dialled connection's read buffer
	// while a response is read (upstream.Conn.Buffers).
	buffers func(net.Conn) upstream.ReadBuffers
	// upFilters is the cluster's own upstream filter chain, nil for
	// none (the router's then).
	upFilters *httpfilter.UpstreamChain
	// format is the cluster's HTTP/1.1 format, the default one: given by
	// pointer, as a cluster keeps its own (a new one per request was an
	// allocation the benchmarks counted).
	format upstream.HTTP1Format
}

func newFakeCluster(st *stats.Store, name string, http2 bool, addrs ...string) *fakeCluster {
	fc := &fakeCluster{name: name, http2: http2, stats: upstream.NewClusterStats(st.Scope("cluster." + name + "."))}
	for _, a := range addrs {
		fc.hosts = append(fc.hosts, &upstream.Host{Address: a, Cluster: name, Weight: 1})
	}
	protocols := new(http.Protocols)
	protocols.SetUnencryptedHTTP2(true)
	fc.h2 = &http.Transport{Protocols: protocols}
	return fc
}

func (fc *fakeCluster) Name() string { return fc.name }

// UpstreamFilters is the cluster's own upstream filter chain.
func (fc *fakeCluster) UpstreamFilters() *httpfilter.UpstreamChain { return fc.upFilters }
func (fc *fakeCluster) Metadata() *corev3.Metadata                 { return fc.metadata }
func (fc *fakeCluster) Stats() *upstream.ClusterStats              { return fc.stats }
func (fc *fakeCluster) HTTP2For(bool) bool                         { return fc.http2 }
func (fc *fakeCluster) HTTP1Format() *upstream.HTTP1Format         { return &fc.format }
func (fc *fakeCluster) HTTP1Trailers() bool                        { return false }
func (fc *fakeCluster) MaxResponseHeadBytes() int                  { return 80 << 10 }

func (fc *fakeCluster) MaxStreamDuration() time.Duration { return fc.maxDuration }
func (fc *fakeCluster) AutoSNI() *upstream.AutoSNI       { return nil }

func (fc *fakeCluster) PickHost(pc *upstream.PickContext) *upstream.Host {
	if len(fc.hosts) == 0 {
		return nil
	}
	if fc.hashed {
		if h, ok := pc.RequestHash(); ok {
			fc.hashes.Add(1)
			return fc.hosts[h%uint64(len(fc.hosts))]
		}
	}
	return fc.hosts[int(fc.next.Add(1)-1)%len(fc.hosts)]
}

func (fc *fakeCluster) AcquireHTTP1For(ctx context.Context, h *upstream.Host, _ upstream.Acquire) (*upstream.Conn, error) {
	fc.mu.Lock()
	for i := len(fc.idle) - 1; i >= 0; i-- {
		if c := fc.idle[i]; c.Host == h {
			fc.idle = append(fc.idle[:i], fc.idle[i+1:]...)
			fc.mu.Unlock()
			c.Requests++
			return c, nil
		}
	}
	fc.mu.Unlock()
	fc.dials.Add(1)
	d := net.Dialer{Timeout: time.Second}
	nc, err := d.DialContext(ctx, "tcp", h.Address)
	if err != nil {
		return nil, err
	}
	uc := &upstream.Conn{Conn: nc, Host: h, R: bufio.NewReader(nc), Requests: 1}
	if fc.buffers != nil {
		uc.Buffers = fc.buffers(nc)
	}
	return uc, nil
}

func (fc *fakeCluster) ReleaseHTTP1(c *upstream.Conn, reusable bool) {
	_ = c.SetDeadline(time.Time{})
	if !reusable || c.R.Buffered() > 0 {
		_ = c.Close()
		return
	}
	fc.mu.Lock()
	fc.idle = append(fc.idle, c)
	fc.mu.Unlock()
}

func (fc *fakeCluster) RoundTripHTTP2(req *http.Request, h *upstream.Host) (*http.Response, error) {
	req.URL.Scheme = "http"
	req.URL.Host = h.Address
	return fc.h2.RoundTrip(req)
}

func (fc *fakeCluster) TryRetry(bool) bool { return true }
func (fc *fakeCluster) ReleaseRetry(bool)  {}

func (fc *fakeCluster) DropOverload() bool { return false }

func (fc *fakeCluster) HealthChecked() bool                     { return false }
func (fc *fakeCluster) ImmediateHealthCheckFail(*upstream.Host) {}

func (fc *fakeCluster) ConnectHost(ctx context.Context, h *upstream.Host) (net.Conn, error) {
	d := net.Dialer{Timeout: time.Second}
	return d.DialContext(ctx, "tcp", h.Address)
}

// closeIdle closes the pooled connections.
func (fc *fakeCluster) closeIdle() {
	fc.mu.Lock()
	defer fc.mu.Unlock()
	for _, c := range fc.idle {
		_ = c.Close()
	}
	fc.idle = nil
	fc.h2.CloseIdleConnections()
}

// fakeUpstreams resolves cluster names.
type fakeUpstreams map[string]*fakeCluster

func (u fakeUpstreams) Cluster(name string) UpstreamCluster {
	if c, ok := u[name]; ok {
		return c
	}
	return nil
}

// fakeDrain is a Drainer whose answer the test sets.
type fakeDrain struct{ close atomic.Bool }

func (d *fakeDrain) DrainClose() bool { return d.close.Load() }
func (d *fakeDrain) Draining() bool   { return d.close.Load() }

// fakeHealth is a HealthState whose answer the test sets.
type fakeHealth struct{ failed atomic.Bool }

func (h *fakeHealth) HealthChecksFailed() bool { return h.failed.Load() }

// proxy is a running manager behind a loopback listener.
type proxy struct {
	m     *Manager
	addr  string
	store *stats.Store
}

// startProxy builds a manager from cfg and serves it on 127.0.0.1. deps
// gets a store and a discarding logger when it has none.
func startProxy(t testing.TB, cfg *hcmv3.HttpConnectionManager, deps Deps) *proxy {
	t.Helper()
	if deps.Stats == nil {
		deps.Stats = stats.NewStore()
	}
	if deps.Log.GetSink() == nil {
		deps.Log = logr.Discard()
	}
	if deps.Extensions == nil {
		deps.Extensions = builtin.Registry()
	}
	m, err := New(cfg, deps)
	if err != nil {
		t.Fatalf("New: %v", err)
	}
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	var wg sync.WaitGroup
	wg.Add(1)
	go func() {
		defer wg.Done()
		for {
			c, err := ln.Accept()
			if err != nil {
				return
			}
			wg.Add(1)
			go func() { defer wg.Done(); m.HandleConn(c) }()
		}
	}()
	t.Cleanup(func() {
		_ = ln.Close()
		ctx, cancel := context.WithTimeout(context.Background(), time.Second)
		defer cancel()
		_ = m.Shutdown(ctx)
		wg.Wait()
	})
	return &proxy{m: m, addr: ln.Addr().String(), store: deps.Stats}
}

// url returns the proxy's URL for path.
func (p *proxy) url(path string) string { return "http://" + p.addr + path }

// counter reads a stat of the proxy's store.
func (p *proxy) counter(name string) uint64 { return p.store.Counter(name).Value() }

// gauge reads a gauge of the proxy's store.
func (p *proxy) gauge(name string) int64 { return p.store.Gauge(name).Value() }

// routeConfig builds a route configuration of one catch-all virtual host.
func routeConfig(routes ...*routev3.Route) *routev3.RouteConfiguration {
	return &routev3.RouteConfiguration{
		Name:         "test",
		VirtualHosts: []*routev3.VirtualHost{{Name: "all", Domains: []string{"*"}, Routes: routes}},
	}
}

// clusterRoute routes a path prefix to a cluster; edit adjusts the action.
func clusterRoute(prefix, cluster string, edit ...func(*routev3.RouteAction)) *routev3.Route {
	a := &routev3.RouteAction{ClusterSpecifier: &routev3.RouteAction_Cluster{Cluster: cluster}}
	for _, e := range edit {
		e(a)
	}
	return &routev3.Route{
		Name:   "to-" + cluster,
		Match:  &routev3.RouteMatch{PathSpecifier: &routev3.RouteMatch_Prefix{Prefix: prefix}},
		Action: &routev3.Route_Route{Route: a},
	}
}

// directRoute answers an exact path itself.
func directRoute(path string, status uint32, body string) *routev3.Route {
	return &routev3.Route{
		Name:  "direct",
		Match: &routev3.RouteMatch{PathSpecifier: &routev3.RouteMatch_Path{Path: path}},
		Action: &routev3.Route_DirectResponse{DirectResponse: &routev3.DirectResponseAction{
			Status: status, Body: &corev3.DataSource{Specifier: &corev3.DataSource_InlineString{InlineString: body}},
		}},
	}
}

// withTimeout sets a route's timeout.
func withTimeout(d time.Duration) func(*routev3.RouteAction) {
	return func(a *routev3.RouteAction) { a.Timeout = durationpb.New(d) }
}

// hcm builds a connection manager configuration with the router filter.
func hcm(rc *routev3.RouteConfiguration, filters ...*hcmv3.HttpFilter) *hcmv3.HttpConnectionManager {
	return &hcmv3.HttpConnectionManager{
		StatPrefix:     "test",
		CodecType:      hcmv3.HttpConnectionManager_AUTO,
		RouteSpecifier: &hcmv3.HttpConnectionManager_RouteConfig{RouteConfig: rc},
		HttpFilters:    append(filters, routerFilter()),
	}
}

// routerFilter is the router filter entry.
func routerFilter() *hcmv3.HttpFilter {
	tc, _ := anypb.New(&routerv3.Router{})
	return &hcmv3.HttpFilter{Name: "envoy.filters.http.router", ConfigType: &hcmv3.HttpFilter_TypedConfig{TypedConfig: tc}}
}

// echoUpstream is an HTTP/1.1 upstream that answers with what it received:
// "METHOD PATH" on the first line, then each header "name: value" sorted,
// then the body, and sets x-upstream to its address.
func echoUpstream(t testing.TB) *httptest.Server {
	t.Helper()
	srv := httptest.NewServer(http.HandlerFunc(echo))
	t.Cleanup(srv.Close)
	return srv
}

// echo is echoUpstream's handler.
func echo(w http.ResponseWriter, r *http.Request) {
	body, err := io.ReadAll(r.Body)
	if err != nil {
		http.Error(w, err.Error(), 500)
		return
	}
	var b strings.Builder
	b.WriteString(r.Method + " " + r.RequestURI + " " + r.Proto + "\n")
	b.WriteString("host: " + r.Host + "\n")
	names := make([]string, 0, len(r.Header))
	for k := range r.Header {
		if k != "Content-Length" {
			names = append(names, k)
		}
	}
	slices.Sort(names)
	for _, k := range names {
		for _, v := range r.Header[k] {
			b.WriteString(strings.ToLower(k) + ": " + v + "\n")
		}
	}
	if r.ContentLength >= 0 {
		b.WriteString("content-length: " + strconv.FormatInt(r.ContentLength, 10) + "\n")
	}
	if len(r.TransferEncoding) > 0 {
		b.WriteString("transfer-encoding: " + strings.Join(r.TransferEncoding, ",") + "\n")
	}
	b.WriteString("\n")
	b.Write(body)
	w.Header().Set("x-upstream", "echo")
	_, _ = io.WriteString(w, b.String())
}

// h2cUpstream is echoUpstream speaking HTTP/2 with prior knowledge.
func h2cUpstream(t testing.TB) *httptest.Server {
	t.Helper()
	return h2cServer(t, http.HandlerFunc(echo))
}

// h2cServer serves h over HTTP/1.1 and HTTP/2 with prior knowledge,
// closed when the test ends.
func h2cServer(t testing.TB, h http.Handler) *httptest.Server {
	t.Helper()
	srv := httptest.NewUnstartedServer(h)
	srv.Config.Protocols = new(http.Protocols)
	srv.Config.Protocols.SetUnencryptedHTTP2(true)
	srv.Config.Protocols.SetHTTP1(true)
	srv.Start()
	t.Cleanup(srv.Close)
	return srv
}

// hostOf is a test server's "ip:port".
func hostOf(srv *httptest.Server) string { return strings.TrimPrefix(srv.URL, "http://") }

// client is an HTTP/1.1 client that shows redirects instead of following
// them.
func client() *http.Client {
	return &http.Client{
		Timeout:       testTimeout,
		Transport:     &http.Transport{DisableCompression: true},
		CheckRedirect: func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse },
	}
}

// h2cClient speaks HTTP/2 with prior knowledge.
func h2cClient() *http.Client {
	protocols := new(http.Protocols)
	protocols.SetUnencryptedHTTP2(true)
	return &http.Client{Timeout: testTimeout, Transport: &http.Transport{Protocols: protocols, DisableCompression: true}}
}

// get does a request and returns the status, headers and body.
func do(t testing.TB, c *http.Client, method, url string, body io.Reader, hdr map[string]string) (int, http.Header, string) {
	t.Helper()
	req, err := http.NewRequest(method, url, body)
	if err != nil {
		t.Fatal(err)
	}
	for k, v := range hdr {
		if strings.EqualFold(k, "host") {
			req.Host = v
			continue
		}
		req.Header.Set(k, v)
	}
	resp, err := c.Do(req)
	if err != nil {
		t.Fatalf("%s %s: %v", method, url, err)
	}
	defer resp.Body.Close()
	b, err := io.ReadAll(resp.Body)
	if err != nil {
		t.Fatalf("%s %s: reading body: %v", method, url, err)
	}
	return resp.StatusCode, resp.Header, string(b)
}

// rawConn is a client connection driven byte by byte.
type rawConn struct {
	t testing.TB
	net.Conn
	r *bufio.Reader
}

func dialRaw(t testing.TB, addr string) *rawConn {
	t.Helper()
	c, err := net.DialTimeout("tcp", addr, testTimeout)
	if err != nil {
		t.Fatal(err)
	}
	_ = c.SetDeadline(time.Now().Add(testTimeout))
	t.Cleanup(func() { c.Close() })
	return &rawConn{t: t, Conn: c, r: bufio.NewReader(c)}
}

func (c *rawConn) send(s string) {
	c.t.Helper()
	if _, err := io.WriteString(c.Conn, s); err != nil {
		c.t.Fatal(err)
	}
}

// response reads one response to a request with the given method.
func (c *rawConn) response(method string) (*http.Response, string) {
	c.t.Helper()
	resp, err := http.ReadResponse(c.r, &http.Request{Method: method})
	if err != nil {
		c.t.Fatalf("reading response: %v", err)
	}
	b, err := io.ReadAll(resp.Body)
	resp.Body.Close()
	if err != nil {
		c.t.Fatalf("reading response body: %v", err)
	}
	return resp, string(b)
}

// closed reports whether the proxy closed the connection (EOF on read).
func (c *rawConn) closed() bool {
	_, err := c.r.ReadByte()
	return err != nil
}

// rawUpstream serves each connection with fn, for upstreams that
// misbehave on purpose. Its connections are closed when the test ends,
// pooled ones included.
func rawUpstream(t testing.TB, fn func(c net.Conn, r *bufio.Reader)) string {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	var (
		wg    sync.WaitGroup
		mu    sync.Mutex
		conns []net.Conn
	)
	t.Cleanup(func() {
		ln.Close()
		mu.Lock()
		for _, c := range conns {
			c.Close()
		}
		mu.Unlock()
		wg.Wait()
	})
	wg.Add(1)
	go func() {
		defer wg.Done()
		for {
			c, err := ln.Accept()
			if err != nil {
				return
			}
			mu.Lock()
			conns = append(conns, c)
			mu.Unlock()
			wg.Add(1)
			go func() {
				defer wg.Done()
				defer c.Close()
				_ = c.SetDeadline(time.Now().Add(testTimeout))
				fn(c, bufio.NewReader(c))
			}()
		}
	}()
	return ln.Addr().String()
}

// readRequestHead reads a request head in a raw upstream.
func readRequestHead(r *bufio.Reader) string {
	var b strings.Builder
	for {
		line, err := r.ReadString('\n')
		b.WriteString(line)
		if err != nil || line == "\r\n" || line == "\n" {
			return b.String()
		}
	}
}

// eventually polls cond every few milliseconds until it holds or
// testTimeout passes: stats are updated after the response leaves, so a
// client can read its response before the proxy counted it.
func eventually(t testing.TB, what string, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(testTimeout)
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatalf("timed out waiting for %s", what)
		}
		time.Sleep(2 * time.Millisecond)
	}
}

// waitCounter waits until a counter of the proxy reaches want.
func (p *proxy) waitCounter(t testing.TB, name string, want uint64) {
	t.Helper()
	eventually(t, name+" = "+strconv.FormatUint(want, 10), func() bool { return p.counter(name) == want })
}

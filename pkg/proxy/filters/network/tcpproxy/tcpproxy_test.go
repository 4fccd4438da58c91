package tcpproxy

import (
	"bytes"
	"context"
	"errors"
	"io"
	"net"
	"net/http"
	"strings"
	"sync"
	"testing"
	"time"

	accesslogv3 "github.com/envoyproxy/go-control-plane/envoy/config/accesslog/v3"
	corev3 "github.com/envoyproxy/go-control-plane/envoy/config/core/v3"
	streamv3 "github.com/envoyproxy/go-control-plane/envoy/extensions/access_loggers/stream/v3"
	tcpproxyv3 "github.com/envoyproxy/go-control-plane/envoy/extensions/filters/network/tcp_proxy/v3"
	rwqv3 "github.com/envoyproxy/go-control-plane/envoy/extensions/formatter/req_without_query/v3"
	uuidv3 "github.com/envoyproxy/go-control-plane/envoy/extensions/request_id/uuid/v3"
	"google.golang.org/protobuf/types/known/anypb"
	"google.golang.org/protobuf/types/known/durationpb"
	"google.golang.org/protobuf/types/known/structpb"
	"google.golang.org/protobuf/types/known/wrapperspb"

	"github.com/outrigger-dev/outrigger/pkg/proxy/accesslog"
	"github.com/outrigger-dev/outrigger/pkg/proxy/accesslog/formatter/reqwithoutquery"
	"github.com/outrigger-dev/outrigger/pkg/proxy/accesslog/loggers"
	"github.com/outrigger-dev/outrigger/pkg/proxy/accesslog/stream"
	"github.com/outrigger-dev/outrigger/pkg/proxy/extension"
	"github.com/outrigger-dev/outrigger/pkg/proxy/netfilter"
	"github.com/outrigger-dev/outrigger/pkg/proxy/requestid"
	"github.com/outrigger-dev/outrigger/pkg/proxy/requestid/uuid"
	"github.com/outrigger-dev/outrigger/pkg/proxy/stats"
	"github.com/outrigger-dev/outrigger/pkg/proxy/upstream"
)

func TestCompileErrors(t *testing.T) {
	tests := map[string]struct {
		cfg  *tcpproxyv3.TcpProxy
		want []string
	}{
		"no stat prefix": {
			cfg:  &tcpproxyv3.TcpProxy{ClusterSpecifier: &tcpproxyv3.TcpProxy_Cluster{Cluster: "c"}},
			want: []string{"stat_prefix: required"},
		},
		"no cluster": {
			cfg:  &tcpproxyv3.TcpProxy{StatPrefix: "p"},
			want: []string{"cluster_specifier: cluster or weighted_clusters is required"},
		},
		"zero weights": {
			cfg: &tcpproxyv3.TcpProxy{StatPrefix: "p", ClusterSpecifier: &tcpproxyv3.TcpProxy_WeightedClusters{WeightedClusters: &tcpproxyv3.TcpProxy_WeightedCluster{
				Clusters: []*tcpproxyv3.TcpProxy_WeightedCluster_ClusterWeight{{Name: "a"}, {Name: "b", MetadataMatch: &corev3.Metadata{}}},
			}}},
			want: []string{
				"weighted_clusters.clusters: the weights must not all be 0",
			},
		},
		"unsupported fields": {
			cfg: &tcpproxyv3.TcpProxy{
				StatPrefix:                      "p",
				ClusterSpecifier:                &tcpproxyv3.TcpProxy_Cluster{Cluster: "c"},
				MaxConnectAttempts:              wrapperspb.UInt32(0),
				TunnelingConfig:                 &tcpproxyv3.TcpProxy_TunnelingConfig{Hostname: "h"},
				MaxDownstreamConnectionDuration: durationpb.New(time.Microsecond),
			},
			want: []string{
				"max_connect_attempts: must be at least 1",
				"max_downstream_connection_duration: must be at least 1ms",
			},
		},
	}
	for name, tc := range tests {
		t.Run(name, func(t *testing.T) {
			_, err := compile(tc.cfg)
			if err == nil {
				t.Fatal("compile succeeded")
			}
			got := strings.Split(err.Error(), "\n")
			if strings.Join(got, "\n") != strings.Join(tc.want, "\n") {
				t.Errorf("errors:\n%s\nwant:\n%s", err, strings.Join(tc.want, "\n"))
			}
		})
	}
}

func TestCompileDefaults(t *testing.T) {
	c, err := compile(&tcpproxyv3.TcpProxy{StatPrefix: "p", ClusterSpecifier: &tcpproxyv3.TcpProxy_Cluster{Cluster: "c"}})
	if err != nil {
		t.Fatal(err)
	}
	if c.idleTimeout != time.Hour || c.maxAttempts != 1 {
		t.Errorf("idle timeout %s, attempts %d; want Envoy's 1h and 1", c.idleTimeout, c.maxAttempts)
	}
	c, err = compile(&tcpproxyv3.TcpProxy{StatPrefix: "p", ClusterSpecifier: &tcpproxyv3.TcpProxy_Cluster{Cluster: "c"}, IdleTimeout: durationpb.New(0)})
	if err != nil || c.idleTimeout != 0 {
		t.Errorf("idle_timeout 0s: %v, %s; want disabled", err, c.idleTimeout)
	}
}

// fakeCluster is a cluster of fixed hosts, picked in turn, dialled for
// real.
type fakeCluster struct {
	name  string
	mu    sync.Mutex
	hosts []string
	next  int
	// h2 makes the cluster speak h2c upstream, through transport.
	h2        bool
	transport *http.Transport
	// dialed, when set, gets every connection ConnectHost opens.
	dialed func(net.Conn)
	// gate, when set, holds every connection attempt until it closes.
	gate chan struct{}
}

func (f *fakeCluster) HTTP2() bool { return f.h2 }
func (f *fakeCluster) RoundTripHTTP2(req *http.Request, h *upstream.Host) (*http.Response, error) {
	f.mu.Lock()
	if f.transport == nil {
		p := new(http.Protocols)
		p.SetUnencryptedHTTP2(true)
		f.transport = &http.Transport{Protocols: p}
	}
	tr := f.transport
	f.mu.Unlock()
	req.URL.Scheme = "http"
	req.URL.Host = h.Address
	return tr.RoundTrip(req)
}

func (f *fakeCluster) Name() string                  { return f.name }
func (f *fakeCluster) Metadata() *corev3.Metadata    { return nil }
func (f *fakeCluster) ObservabilityName() string     { return f.name }
func (f *fakeCluster) Stats() *upstream.ClusterStats { return nil }
func (f *fakeCluster) PickHost(*upstream.PickContext) *upstream.Host {
	f.mu.Lock()
	defer f.mu.Unlock()
	if len(f.hosts) == 0 {
		return nil
	}
	h := &upstream.Host{Address: f.hosts[f.next%len(f.hosts)]}
	f.next++
	return h
}
func (f *fakeCluster) ConnectHost(ctx context.Context, h *upstream.Host) (net.Conn, error) {
	if f.gate != nil {
		select {
		case <-f.gate:
		case <-ctx.Done():
			return nil, ctx.Err()
		}
	}
	var d net.Dialer
	c, err := d.DialContext(ctx, "tcp", h.Address)
	if err == nil && f.dialed != nil {
		f.dialed(c)
	}
	return c, err
}

type fakeClusters map[string]*fakeCluster

func (f fakeClusters) Cluster(name string) netfilter.Cluster {
	if c, ok := f[name]; ok {
		return c
	}
	return nil
}

// syncBuffer is an access log destination safe for concurrent use.
type syncBuffer struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (s *syncBuffer) Write(p []byte) (int, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.Write(p)
}

func (s *syncBuffer) String() string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.String()
}

// harness is a proxy listening on loopback, its stats and access log.
type harness struct {
	p     *Proxy
	store *stats.Store
	log   *syncBuffer
	addr  string
}

func newHarness(t *testing.T, cfg *tcpproxyv3.TcpProxy, clusters fakeClusters) *harness {
	t.Helper()
	return newHarnessFormat(t, cfg, clusters, "%UPSTREAM_CLUSTER% %UPSTREAM_HOST% %BYTES_RECEIVED% %BYTES_SENT% %RESPONSE_FLAGS%%REQ(X-NONE)%\n")
}

// testExtensions are the extensions the harness resolves: the stdout
// access log, the UUID request id and a formatter.
func testExtensions(t *testing.T) *extension.Registry {
	t.Helper()
	reg, err := extension.New(
		extension.Of(stream.StdoutName, loggers.Category, &streamv3.StdoutAccessLog{}, stream.Stdout{}),
		extension.Of(uuid.Name, requestid.Category, &uuidv3.UuidRequestIdConfig{}, uuid.Factory{}),
		extension.Of(reqwithoutquery.Name, accesslog.FormatterCategory, &rwqv3.ReqWithoutQuery{}, reqwithoutquery.Factory{}),
	)
	if err != nil {
		t.Fatal(err)
	}
	return reg
}

// newHarnessFormat is newHarness with the access log's format; opts
// change the filter's context.
func newHarnessFormat(t *testing.T, cfg *tcpproxyv3.TcpProxy, clusters fakeClusters, format string, opts ...func(*netfilter.Context)) *harness {
	t.Helper()
	h := &harness{store: stats.NewStore(), log: &syncBuffer{}}
	reg := testExtensions(t)
	fmtCfg, _ := anypb.New(&streamv3.StdoutAccessLog{AccessLogFormat: &streamv3.StdoutAccessLog_LogFormat{LogFormat: &corev3.SubstitutionFormatString{
		Format: &corev3.SubstitutionFormatString_TextFormatSource{TextFormatSource: &corev3.DataSource{
			Specifier: &corev3.DataSource_InlineString{InlineString: format},
		}},
	}}})
	cfg.AccessLog = []*accesslogv3.AccessLog{{Name: "stdout", ConfigType: &accesslogv3.AccessLog_TypedConfig{TypedConfig: fmtCfg}}}
	nctx := netfilter.Context{
		Stats:      h.store,
		Clusters:   clusters,
		Extensions: reg,
		AccessLogs: func(prefix string, cfgs []*accesslogv3.AccessLog) (netfilter.AccessLogger, error) {
			l, err := loggers.Compile(prefix, cfgs, loggers.Context{Registry: reg, Sink: accesslog.SinkContext{
				Open: func(accesslog.Destination, string) (io.Writer, error) { return h.log, nil },
			}})
			return &l, err
		},
	}
	for _, o := range opts {
		o(&nctx)
	}
	f, err := Factory{}.Compile(cfg, nctx)
	if err != nil {
		t.Fatal(err)
	}
	h.p = f.(*Proxy)
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	h.addr = ln.Addr().String()
	var wg sync.WaitGroup
	wg.Add(1)
	go func() {
		defer wg.Done()
		for {
			c, err := ln.Accept()
			if err != nil {
				return
			}
			go h.p.HandleConn(c)
		}
	}()
	t.Cleanup(func() {
		_ = ln.Close()
		wg.Wait()
		ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		defer cancel()
		_ = h.p.Shutdown(ctx)
	})
	return h
}

func (h *harness) counter(name string) uint64 { return h.store.Counter(name).Value() }

// echoServer answers every byte it reads and half-closes when its peer
// does; it returns its address.
func echoServer(t *testing.T) string {
	t.Helper()
	return serveTCP(t, func(c net.Conn) {
		_, _ = io.Copy(c, c)
		_ = c.(*net.TCPConn).CloseWrite()
	})
}

// serveTCP serves each connection to a loopback listener with serve (the
// connection closes when it returns) until the test ends, and returns
// its address.
func serveTCP(t *testing.T, serve func(c net.Conn)) string {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = ln.Close() })
	go func() {
		for {
			c, err := ln.Accept()
			if err != nil {
				return
			}
			go func() {
				defer c.Close()
				serve(c)
			}()
		}
	}()
	return ln.Addr().String()
}

// waitFor polls cond for up to 10 seconds.
func waitFor(t *testing.T, what string, cond func() bool) {
	t.Helper()
	for range 1000 {
		if cond() {
			return
		}
		time.Sleep(10 * time.Millisecond)
	}
	t.Fatalf("timed out waiting for %s", what)
}

func clusterCfg(name string) *tcpproxyv3.TcpProxy {
	return &tcpproxyv3.TcpProxy{StatPrefix: "p", ClusterSpecifier: &tcpproxyv3.TcpProxy_Cluster{Cluster: name}}
}

func TestProxyEchoAndHalfClose(t *testing.T) {
	echo := echoServer(t)
	h := newHarness(t, clusterCfg("echo"), fakeClusters{"echo": {name: "echo", hosts: []string{echo}}})
	c, err := net.Dial("tcp", h.addr)
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	_ = c.SetDeadline(time.Now().Add(10 * time.Second))
	msg := bytes.Repeat([]byte("0123456789"), 10000) // 100 kB: several chunks
	go func() {
		_, _ = c.Write(msg)
		// The half-close reaches the echo server, whose own FIN comes
		// back after the echo.
		_ = c.(*net.TCPConn).CloseWrite()
	}()
	got, err := io.ReadAll(c)
	if err != nil {
		t.Fatal(err)
	}
	if !bytes.Equal(got, msg) {
		t.Fatalf("echoed %d bytes, want %d the same", len(got), len(msg))
	}
	waitFor(t, "the access log", func() bool { return h.log.String() != "" })
	if want := "echo " + echo + " 100000 100000 --\n"; h.log.String() != want {
		t.Errorf("access log %q, want %q", h.log.String(), want)
	}
	for name, want := range map[string]uint64{
		"tcp.p.downstream_cx_total":          1,
		"tcp.p.downstream_cx_rx_bytes_total": 100000,
		"tcp.p.downstream_cx_tx_bytes_total": 100000,
		"tcp.p.downstream_cx_no_route":       0,
	} {
		if got := h.counter(name); got != want {
			t.Errorf("%s = %d, want %d", name, got, want)
		}
	}
	if g := h.store.Gauge("tcp.p.downstream_cx_rx_bytes_buffered").Value(); g != 0 {
		t.Errorf("rx buffered %d after the end, want 0", g)
	}
}

// TestHalfCloseFromUpstream: the upstream answers and closes its side
// first; the client still sends afterwards, and that reaches it.
func TestHalfCloseFromUpstream(t *testing.T) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	received := make(chan string, 1)
	go func() {
		c, err := ln.Accept()
		if err != nil {
			return
		}
		defer c.Close()
		_, _ = c.Write([]byte("hello"))
		_ = c.(*net.TCPConn).CloseWrite()
		b, _ := io.ReadAll(c)
		received <- string(b)
	}()
	h := newHarness(t, clusterCfg("u"), fakeClusters{"u": {name: "u", hosts: []string{ln.Addr().String()}}})
	c, err := net.Dial("tcp", h.addr)
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	_ = c.SetDeadline(time.Now().Add(10 * time.Second))
	got, err := io.ReadAll(c) // ends with the upstream's FIN
	if err != nil || string(got) != "hello" {
		t.Fatalf("read %q, %v; want hello then the end of the stream", got, err)
	}
	if _, err := c.Write([]byte("after")); err != nil {
		t.Fatal(err)
	}
	_ = c.(*net.TCPConn).CloseWrite()
	select {
	case s := <-received:
		if s != "after" {
			t.Errorf("upstream received %q, want after", s)
		}
	case <-time.After(10 * time.Second):
		t.Fatal("the upstream never saw the client's bytes and FIN")
	}
}

func TestNoCluster(t *testing.T) {
	h := newHarness(t, clusterCfg("missing"), fakeClusters{})
	c, err := net.Dial("tcp", h.addr)
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	_ = c.SetDeadline(time.Now().Add(10 * time.Second))
	if _, err := io.ReadAll(c); err != nil && !errors.Is(err, io.EOF) {
		t.Logf("read: %v", err)
	}
	waitFor(t, "the access log", func() bool { return h.log.String() != "" })
	if h.counter("tcp.p.downstream_cx_no_route") != 1 {
		t.Error("downstream_cx_no_route not counted")
	}
	if want := "missing - 0 0 NC-\n"; h.log.String() != want {
		t.Errorf("access log %q, want %q", h.log.String(), want)
	}
}

func TestConnectAttempts(t *testing.T) {
	// A port nobody listens on: taken, then released.
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	dead := ln.Addr().String()
	_ = ln.Close()
	cfg := clusterCfg("dead")
	cfg.MaxConnectAttempts = wrapperspb.UInt32(3)
	h := newHarness(t, cfg, fakeClusters{"dead": {name: "dead", hosts: []string{dead}}})
	c, err := net.Dial("tcp", h.addr)
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	_ = c.SetDeadline(time.Now().Add(10 * time.Second))
	_, _ = io.ReadAll(c)
	waitFor(t, "the access log", func() bool { return h.log.String() != "" })
	if got := h.counter("cluster.dead.upstream_cx_connect_attempts_exceeded"); got != 1 {
		t.Errorf("upstream_cx_connect_attempts_exceeded = %d, want 1", got)
	}
	if want := "dead " + dead + " 0 0 UF,URX-\n"; h.log.String() != want {
		t.Errorf("access log %q, want %q", h.log.String(), want)
	}
}

func TestIdleTimeout(t *testing.T) {
	echo := echoServer(t)
	cfg := clusterCfg("echo")
	cfg.IdleTimeout = durationpb.New(50 * time.Millisecond)
	h := newHarness(t, cfg, fakeClusters{"echo": {name: "echo", hosts: []string{echo}}})
	c, err := net.Dial("tcp", h.addr)
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	_ = c.SetDeadline(time.Now().Add(10 * time.Second))
	if _, err := c.Write([]byte("x")); err != nil {
		t.Fatal(err)
	}
	b := make([]byte, 1)
	if _, err := io.ReadFull(c, b); err != nil {
		t.Fatal(err)
	}
	// Then silence: the proxy closes the connection.
	if _, err := io.ReadAll(c); err != nil {
		t.Logf("read: %v", err)
	}
	if got := h.counter("tcp.p.idle_timeout"); got != 1 {
		t.Errorf("idle_timeout = %d, want 1", got)
	}
}

func TestMaxDuration(t *testing.T) {
	echo := echoServer(t)
	cfg := clusterCfg("echo")
	cfg.MaxDownstreamConnectionDuration = durationpb.New(50 * time.Millisecond)
	h := newHarness(t, cfg, fakeClusters{"echo": {name: "echo", hosts: []string{echo}}})
	c, err := net.Dial("tcp", h.addr)
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	_ = c.SetDeadline(time.Now().Add(10 * time.Second))
	_, _ = io.ReadAll(c)
	if got := h.counter("tcp.p.max_downstream_connection_duration"); got != 1 {
		t.Errorf("max_downstream_connection_duration = %d, want 1", got)
	}
}

func TestWeightedClusters(t *testing.T) {
	a, b := echoServer(t), echoServer(t)
	cfg := &tcpproxyv3.TcpProxy{StatPrefix: "p", ClusterSpecifier: &tcpproxyv3.TcpProxy_WeightedClusters{WeightedClusters: &tcpproxyv3.TcpProxy_WeightedCluster{
		Clusters: []*tcpproxyv3.TcpProxy_WeightedCluster_ClusterWeight{{Name: "a", Weight: 1}, {Name: "b", Weight: 1}, {Name: "never", Weight: 0}},
	}}}
	h := newHarness(t, cfg, fakeClusters{"a": {name: "a", hosts: []string{a}}, "b": {name: "b", hosts: []string{b}}})
	const n = 40
	for range n {
		c, err := net.Dial("tcp", h.addr)
		if err != nil {
			t.Fatal(err)
		}
		_ = c.SetDeadline(time.Now().Add(10 * time.Second))
		_ = c.(*net.TCPConn).CloseWrite()
		_, _ = io.ReadAll(c)
		_ = c.Close()
	}
	waitFor(t, "every access log line", func() bool { return strings.Count(h.log.String(), "\n") == n })
	na, nb := strings.Count(h.log.String(), "a "+a), strings.Count(h.log.String(), "b "+b)
	// Both are picked (the chance that 40 fair draws all pick one is
	// 2^-39); the zero-weight cluster never is.
	if na == 0 || nb == 0 || na+nb != n {
		t.Errorf("a picked %d times, b %d times, of %d:\n%s", na, nb, n, h.log.String())
	}
}

func TestShutdownClosesConnections(t *testing.T) {
	echo := echoServer(t)
	h := newHarness(t, clusterCfg("echo"), fakeClusters{"echo": {name: "echo", hosts: []string{echo}}})
	c, err := net.Dial("tcp", h.addr)
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	_ = c.SetDeadline(time.Now().Add(10 * time.Second))
	if _, err := c.Write([]byte("x")); err != nil {
		t.Fatal(err)
	}
	b := make([]byte, 1)
	if _, err := io.ReadFull(c, b); err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	if err := h.p.Shutdown(ctx); err != nil {
		t.Fatalf("shutdown: %v", err)
	}
	if _, err := io.ReadAll(c); err != nil {
		t.Logf("read: %v", err)
	}
	if n := h.p.ActiveConnections(); n != 0 {
		t.Errorf("%d connections left after shutdown", n)
	}
}

// TestAccessLogOptions: entries when the connection is accepted and when
// the upstream is connected, besides the one at its end; a request
// operator prints as missing.
func TestAccessLogOptions(t *testing.T) {
	echo := echoServer(t)
	cfg := clusterCfg("echo")
	cfg.AccessLogOptions = &tcpproxyv3.TcpProxy_TcpAccessLogOptions{FlushAccessLogOnStart: true, FlushAccessLogOnConnected: true}
	h := newHarness(t, cfg, fakeClusters{"echo": {name: "echo", hosts: []string{echo}}})
	c, err := net.Dial("tcp", h.addr)
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	_ = c.SetDeadline(time.Now().Add(10 * time.Second))
	if _, err := c.Write([]byte("abc")); err != nil {
		t.Fatal(err)
	}
	_ = c.(*net.TCPConn).CloseWrite()
	if _, err := io.ReadAll(c); err != nil {
		t.Fatal(err)
	}
	want := "echo - 0 0 --\n" + "echo " + echo + " 0 0 --\n" + "echo " + echo + " 3 3 --\n"
	waitFor(t, "three access log entries", func() bool { return strings.Count(h.log.String(), "\n") == 3 })
	if h.log.String() != want {
		t.Errorf("access log:\n%s\nwant:\n%s", h.log.String(), want)
	}
}

// TestFlowControl: an upstream that stops reading stops the reading of
// the client; what the proxy holds stays within one buffer.
func TestFlowControl(t *testing.T) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	release := make(chan struct{})
	go func() {
		c, err := ln.Accept()
		if err != nil {
			return
		}
		defer c.Close()
		<-release // reads nothing until released
		_, _ = io.Copy(io.Discard, c)
	}()
	h := newHarness(t, clusterCfg("slow"), fakeClusters{"slow": {name: "slow", hosts: []string{ln.Addr().String()}}})
	c, err := net.Dial("tcp", h.addr)
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	_ = c.SetDeadline(time.Now().Add(20 * time.Second))
	const total = 64 << 20 // far more than every socket buffer on the way
	written := make(chan int64, 1)
	go func() {
		n, _ := io.Copy(c, io.LimitReader(zeros{}, total))
		written <- n
	}()
	waitFor(t, "the client's reading to pause", func() bool { return h.counter("tcp.p.downstream_flow_control_paused_reading_total") > 0 })
	if b := h.store.Gauge("tcp.p.downstream_cx_rx_bytes_buffered").Value(); b < 0 || b > maxChunk {
		t.Errorf("%d bytes buffered, want at most one buffer (%d)", b, maxChunk)
	}
	if rx := h.counter("tcp.p.downstream_cx_rx_bytes_total"); rx >= total {
		t.Errorf("the proxy read all %d bytes from the client while its upstream read none", rx)
	}
	close(release)
	if n := <-written; n != total {
		t.Errorf("client wrote %d bytes, want %d", n, total)
	}
	waitFor(t, "every byte to be read", func() bool { return h.counter("tcp.p.downstream_cx_rx_bytes_total") == total })
	if p, r := h.counter("tcp.p.downstream_flow_control_paused_reading_total"), h.counter("tcp.p.downstream_flow_control_resumed_reading_total"); p != r {
		t.Errorf("paused %d times, resumed %d", p, r)
	}
}

// zeros reads as an endless run of zero bytes.
type zeros struct{}

func (zeros) Read(p []byte) (int, error) {
	clear(p)
	return len(p), nil
}

// TestCompileMetadataMatch checks the criteria that choose a subset: the
// filter's "envoy.lb" entry, and a weighted cluster's merged over it (a
// weighted cluster without its own takes the filter's), as Envoy's.
func TestCompileMetadataMatch(t *testing.T) {
	lb := func(fields map[string]any) *corev3.Metadata {
		s, err := structpb.NewStruct(fields)
		if err != nil {
			t.Fatal(err)
		}
		return &corev3.Metadata{FilterMetadata: map[string]*structpb.Struct{"envoy.lb": s, "other": s}}
	}
	key := func(fields map[string]any) string {
		s, _ := structpb.NewStruct(fields)
		return upstream.NewMetadataMatch(s.GetFields()).Key()
	}
	c, err := compile(&tcpproxyv3.TcpProxy{
		StatPrefix:    "p",
		MetadataMatch: lb(map[string]any{"stage": "canary", "v": "1.0"}),
		ClusterSpecifier: &tcpproxyv3.TcpProxy_WeightedClusters{WeightedClusters: &tcpproxyv3.TcpProxy_WeightedCluster{
			Clusters: []*tcpproxyv3.TcpProxy_WeightedCluster_ClusterWeight{
				{Name: "a", Weight: 1, MetadataMatch: lb(map[string]any{"stage": "prod"})},
				{Name: "b", Weight: 1},
			},
		}},
	})
	if err != nil {
		t.Fatal(err)
	}
	if got, want := c.metadataMatch.Key(), key(map[string]any{"stage": "canary", "v": "1.0"}); got != want {
		t.Errorf("filter criteria %q, want %q", got, want)
	}
	if got, want := c.weighted[0].metadataMatch.Key(), key(map[string]any{"stage": "prod", "v": "1.0"}); got != want {
		t.Errorf("weighted cluster a's criteria %q, want %q", got, want)
	}
	if c.weighted[1].metadataMatch != c.metadataMatch {
		t.Error("weighted cluster b, without criteria, does not take the filter's")
	}
	plain, err := compile(&tcpproxyv3.TcpProxy{StatPrefix: "p", ClusterSpecifier: &tcpproxyv3.TcpProxy_Cluster{Cluster: "c"},
		MetadataMatch: &corev3.Metadata{FilterMetadata: map[string]*structpb.Struct{"other": {}}}})
	if err != nil || plain.metadataMatch != nil {
		t.Errorf("metadata_match without envoy.lb: criteria %v, err %v; want none", plain.metadataMatch, err)
	}
}

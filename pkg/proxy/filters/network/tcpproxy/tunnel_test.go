package tcpproxy

import (
	"bufio"
	"fmt"
	"io"
	"net"
	"net/http"
	"strings"
	"testing"
	"time"

	corev3 "github.com/envoyproxy/go-control-plane/envoy/config/core/v3"
	tcpproxyv3 "github.com/envoyproxy/go-control-plane/envoy/extensions/filters/network/tcp_proxy/v3"
	"google.golang.org/protobuf/types/known/durationpb"
	"google.golang.org/protobuf/types/known/wrapperspb"

	"github.com/outrigger-dev/outrigger/pkg/proxy/netfilter"
	"github.com/outrigger-dev/outrigger/pkg/proxy/stats"
)

// tunnelRequest is what a tunnel server saw of the tunnel's request.
type tunnelRequest struct {
	method, host, path, header string
}

// startHTTP1Tunnel serves HTTP/1.1 CONNECT with status: on 200, it sends
// "early" with its answer, then echoes. It returns its address and the
// requests it saw.
func startHTTP1Tunnel(t *testing.T, status int) (string, chan tunnelRequest) {
	t.Helper()
	seen := make(chan tunnelRequest, 10)
	addr := serveConnect(t, func(c net.Conn, br *bufio.Reader, req *http.Request) {
		seen <- tunnelRequest{method: req.Method, host: req.Host, header: req.Header.Get("X-Tunnel")}
		if status != 200 {
			fmt.Fprintf(c, "HTTP/1.1 %d Nope\r\nContent-Length: 0\r\n\r\n", status)
			return
		}
		_, _ = io.WriteString(c, "HTTP/1.1 200 Connection established\r\n\r\nearly")
		_, _ = io.Copy(c, br)
		_ = c.(*net.TCPConn).CloseWrite()
	})
	return addr, seen
}

// serveConnect serves HTTP/1.1 tunnel requests: handle answers each
// request read from br, the rest of c's bytes.
func serveConnect(t *testing.T, handle func(c net.Conn, br *bufio.Reader, req *http.Request)) string {
	t.Helper()
	return serveTCP(t, func(c net.Conn) {
		_ = c.SetDeadline(time.Now().Add(10 * time.Second))
		br := bufio.NewReader(c)
		req, err := http.ReadRequest(br)
		if err != nil {
			return
		}
		handle(c, br, req)
	})
}

// startHTTP2Tunnel serves h2c CONNECT and POST streams by echoing their
// bodies.
func startHTTP2Tunnel(t *testing.T) (string, chan tunnelRequest) {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	seen := make(chan tunnelRequest, 10)
	p := new(http.Protocols)
	p.SetUnencryptedHTTP2(true)
	srv := &http.Server{Protocols: p, ReadHeaderTimeout: 10 * time.Second, Handler: http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		seen <- tunnelRequest{method: r.Method, host: r.Host, path: r.URL.Path, header: r.Header.Get("X-Tunnel")}
		w.WriteHeader(200)
		rc := http.NewResponseController(w)
		_ = rc.Flush()
		buf := make([]byte, 1024)
		for {
			n, err := r.Body.Read(buf)
			if n > 0 {
				_, _ = w.Write(buf[:n])
				_ = rc.Flush()
			}
			if err != nil {
				return
			}
		}
	})}
	go func() { _ = srv.Serve(ln) }()
	t.Cleanup(func() { _ = srv.Close() })
	return ln.Addr().String(), seen
}

func tunnelCfg(cluster string, tc *tcpproxyv3.TcpProxy_TunnelingConfig) *tcpproxyv3.TcpProxy {
	cfg := clusterCfg(cluster)
	cfg.TunnelingConfig = tc
	return cfg
}

// roundTrip sends msg through the proxy, half-closes and reads all.
func roundTrip(t *testing.T, addr, msg string) string {
	t.Helper()
	c, err := net.Dial("tcp", addr)
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	_ = c.SetDeadline(time.Now().Add(10 * time.Second))
	if _, err := io.WriteString(c, msg); err != nil {
		t.Fatal(err)
	}
	_ = c.(*net.TCPConn).CloseWrite()
	got, err := io.ReadAll(c)
	if err != nil {
		t.Fatalf("read: %v (got %q)", err, got)
	}
	return string(got)
}

func TestTunnelHTTP1(t *testing.T) {
	addr, seen := startHTTP1Tunnel(t, 200)
	h := newHarness(t, tunnelCfg("proxy", &tcpproxyv3.TcpProxy_TunnelingConfig{
		Hostname: "%UPSTREAM_CLUSTER%.example:443",
		HeadersToAdd: []*corev3.HeaderValueOption{
			{Header: &corev3.HeaderValue{Key: "x-tunnel", Value: "from %DOWNSTREAM_REMOTE_ADDRESS_WITHOUT_PORT%"}},
		},
	}), fakeClusters{"proxy": {name: "proxy", hosts: []string{addr}}})
	if got := roundTrip(t, h.addr, "hello"); got != "earlyhello" {
		t.Errorf("got %q, want earlyhello", got)
	}
	want := tunnelRequest{method: "CONNECT", host: "proxy.example:443", header: "from 127.0.0.1"}
	if r := <-seen; r != want {
		t.Errorf("tunnel request %+v, want %+v", r, want)
	}
}

func TestTunnelRefusedCountsAsConnectFailure(t *testing.T) {
	addr, _ := startHTTP1Tunnel(t, 403)
	cfg := tunnelCfg("proxy", &tcpproxyv3.TcpProxy_TunnelingConfig{Hostname: "b:1"})
	cfg.MaxConnectAttempts = wrapperspb.UInt32(2)
	h := newHarness(t, cfg, fakeClusters{"proxy": {name: "proxy", hosts: []string{addr}}})
	if got := roundTrip(t, h.addr, ""); got != "" {
		t.Errorf("got %q through a refused tunnel", got)
	}
	waitFor(t, "the access log", func() bool { return h.log.String() != "" })
	if want := "proxy " + addr + " 0 0 UF,URX-\n"; h.log.String() != want {
		t.Errorf("access log %q, want %q", h.log.String(), want)
	}
	if got := h.counter("cluster.proxy.upstream_cx_connect_attempts_exceeded"); got != 1 {
		t.Errorf("upstream_cx_connect_attempts_exceeded = %d, want 1", got)
	}
}

func TestTunnelHTTP2(t *testing.T) {
	for _, post := range []bool{false, true} {
		t.Run(fmt.Sprintf("post=%v", post), func(t *testing.T) {
			addr, seen := startHTTP2Tunnel(t)
			tc := &tcpproxyv3.TcpProxy_TunnelingConfig{
				Hostname:     "backend.example:443",
				HeadersToAdd: []*corev3.HeaderValueOption{{Header: &corev3.HeaderValue{Key: "x-tunnel", Value: "yes"}}},
			}
			want := tunnelRequest{method: "CONNECT", host: "backend.example:443", header: "yes"}
			if post {
				tc.UsePost, tc.PostPath = true, "/tunnel"
				want.method, want.path = "POST", "/tunnel"
			}
			h := newHarness(t, tunnelCfg("proxy", tc), fakeClusters{"proxy": {name: "proxy", hosts: []string{addr}, h2: true}})
			msg := strings.Repeat("0123456789", 5000)
			if got := roundTrip(t, h.addr, msg); got != msg {
				t.Errorf("echoed %d bytes, want the %d sent", len(got), len(msg))
			}
			if r := <-seen; r != want {
				t.Errorf("tunnel request %+v, want %+v", r, want)
			}
		})
	}
}

func TestTunnelConfigErrors(t *testing.T) {
	_, err := compile(tunnelCfg("c", &tcpproxyv3.TcpProxy_TunnelingConfig{
		PostPath:     "/x",
		HeadersToAdd: []*corev3.HeaderValueOption{{Header: &corev3.HeaderValue{Key: ":path", Value: "v"}}},
	}))
	want := []string{
		"tunneling_config.hostname: required",
		"tunneling_config.post_path: needs use_post",
		`tunneling_config.headers_to_add[0].header.key: ":path" cannot be set (pseudo-headers and host are the tunnel's)`,
	}
	if err == nil || err.Error() != strings.Join(want, "\n") {
		t.Errorf("errors:\n%v\nwant:\n%s", err, strings.Join(want, "\n"))
	}
}

func TestPostTunnelNeedsHTTP2(t *testing.T) {
	cfg := tunnelCfg("h1", &tcpproxyv3.TcpProxy_TunnelingConfig{Hostname: "b:1", UsePost: true})
	_, err := Factory{}.Compile(cfg, netfilter.Context{Stats: stats.NewStore(), Clusters: fakeClusters{"h1": {name: "h1"}}})
	want := `tunneling_config.use_post: cluster "h1" speaks HTTP/1.1; POST tunnels need an HTTP/2 cluster in Outrigger`
	if err == nil || err.Error() != want {
		t.Errorf("error %v, want %s", err, want)
	}
	if _, err := (Factory{}).Compile(cfg, netfilter.Context{Stats: stats.NewStore(), Clusters: fakeClusters{"h1": {name: "h1", h2: true}}}); err != nil {
		t.Errorf("an HTTP/2 cluster was refused: %v", err)
	}
}

// TestTunnelSilentProxy: an upstream proxy that never answers the tunnel
// request holds the connection no longer than the idle timeout.
func TestTunnelSilentProxy(t *testing.T) {
	for _, h2 := range []bool{false, true} {
		t.Run(fmt.Sprintf("h2=%v", h2), func(t *testing.T) {
			ln, err := net.Listen("tcp", "127.0.0.1:0")
			if err != nil {
				t.Fatal(err)
			}
			defer ln.Close()
			release := make(chan struct{})
			defer close(release)
			if h2 {
				p := new(http.Protocols)
				p.SetUnencryptedHTTP2(true)
				srv := &http.Server{Protocols: p, ReadHeaderTimeout: 10 * time.Second, Handler: http.HandlerFunc(func(http.ResponseWriter, *http.Request) {
					select {
					case <-release:
					case <-time.After(10 * time.Second):
					}
				})}
				go func() { _ = srv.Serve(ln) }()
				defer srv.Close()
			} else {
				go func() {
					c, err := ln.Accept()
					if err != nil {
						return
					}
					defer c.Close()
					select {
					case <-release:
					case <-time.After(10 * time.Second):
					}
				}()
			}
			cfg := tunnelCfg("proxy", &tcpproxyv3.TcpProxy_TunnelingConfig{Hostname: "b:1"})
			cfg.IdleTimeout = durationpb.New(100 * time.Millisecond)
			h := newHarness(t, cfg, fakeClusters{"proxy": {name: "proxy", hosts: []string{ln.Addr().String()}, h2: h2}})
			if got := roundTrip(t, h.addr, ""); got != "" {
				t.Errorf("got %q through a silent proxy", got)
			}
			waitFor(t, "the access log", func() bool { return h.log.String() != "" })
			if !strings.Contains(h.log.String(), "UF,URX") {
				t.Errorf("access log %q, want a failed connection", h.log.String())
			}
		})
	}
}

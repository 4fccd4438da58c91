//go:build linux

package cluster

import (
	"context"
	"errors"
	"net"
	"net/netip"
	"testing"

	"golang.org/x/sys/unix"

	"github.com/outrigger-dev/outrigger/pkg/proxy/upstream"
)

// canTransparent reports whether this process may set IP_TRANSPARENT
// (CAP_NET_ADMIN), which original_src connections need.
func canTransparent(t *testing.T) bool {
	t.Helper()
	fd, err := unix.Socket(unix.AF_INET, unix.SOCK_STREAM, 0)
	if err != nil {
		t.Fatal(err)
	}
	defer unix.Close(fd)
	return unix.SetsockoptInt(fd, unix.SOL_IP, unix.IP_TRANSPARENT, 1) == nil
}

// localIP is the IP address conn is bound to.
func localIP(conn net.Conn) netip.Addr {
	return conn.LocalAddr().(*net.TCPAddr).AddrPort().Addr().Unmap()
}

// TestHTTP1PoolBySource: an original_src request gets a connection bound
// to its source, shared only with requests from the same source; requests
// without one never get such a connection. Without CAP_NET_ADMIN the
// connection fails as a local connection failure. The request says its
// source in its context (AcquireHTTP1) or, as the connection manager
// does, with its acquisition too (AcquireHTTP1For): the pool keys by the
// latter without looking through the context.
func TestHTTP1PoolBySource(t *testing.T) {
	t.Run("context", func(t *testing.T) {
		testHTTP1PoolBySource(t, func(c *Cluster, ctx context.Context, h *upstream.Host) (*upstream.Conn, error) {
			return c.AcquireHTTP1(ctx, h)
		})
	})
	t.Run("acquire", func(t *testing.T) {
		testHTTP1PoolBySource(t, func(c *Cluster, ctx context.Context, h *upstream.Host) (*upstream.Conn, error) {
			return c.AcquireHTTP1For(ctx, h, upstream.Acquire{Source: upstream.SourceFrom(ctx)})
		})
	})
}

func testHTTP1PoolBySource(t *testing.T, acquire func(*Cluster, context.Context, *upstream.Host) (*upstream.Conn, error)) {
	srv := newUpstreamServer(t, nil)
	m, store, _ := newTestManager(t, clusterFor("", srv.port()))
	c := m.Cluster("up")
	h := c.PickHost(nil)
	a := upstream.Source{Addr: netip.MustParseAddr("127.0.0.3")}
	b := upstream.Source{Addr: netip.MustParseAddr("127.0.0.4")}
	ctxA, ctxB := upstream.WithSource(t.Context(), a), upstream.WithSource(t.Context(), b)

	if !canTransparent(t) {
		_, err := acquire(c, ctxA, h)
		var le *upstream.LocalConnectError
		if !errors.As(err, &le) || le.Bind {
			t.Fatalf("without CAP_NET_ADMIN: error %v, want a socket option failure", err)
		}
		if got := store.Counter("cluster.up.upstream_cx_connect_fail").Value(); got != 1 {
			t.Errorf("upstream_cx_connect_fail = %d, want 1", got)
		}
		return
	}
	first, err := acquire(c, ctxA, h)
	if err != nil {
		t.Fatal(err)
	}
	if got := localIP(first); got != a.Addr {
		t.Errorf("connection from %v, want %v", got, a.Addr)
	}
	roundTrip(t, first)
	c.ReleaseHTTP1(first, true)

	other, err := acquire(c, ctxB, h)
	if err != nil {
		t.Fatal(err)
	}
	if other == first || localIP(other) != b.Addr {
		t.Errorf("the second source got connection from %v (reused %v), want a new one from %v", localIP(other), other == first, b.Addr)
	}
	roundTrip(t, other)
	c.ReleaseHTTP1(other, true)

	again, err := acquire(c, ctxA, h)
	if err != nil {
		t.Fatal(err)
	}
	if again != first {
		t.Error("the first source did not get its idle connection back")
	}
	roundTrip(t, again)
	c.ReleaseHTTP1(again, true)

	plain, err := acquire(c, t.Context(), h)
	if err != nil {
		t.Fatal(err)
	}
	if got := localIP(plain); got == a.Addr || got == b.Addr {
		t.Errorf("a request without a source got a connection from %v", got)
	}
	roundTrip(t, plain)
	c.ReleaseHTTP1(plain, true)
	if got := srv.accepted.Load(); got != 3 {
		t.Errorf("upstream accepted %d connections, want 3", got)
	}
}

// TestSourceBindError: a source the kernel refuses to bind (a link-local
// IPv6 address without its interface) fails the connection with Envoy's
// reason and counts bind_errors; without CAP_NET_ADMIN the socket option
// fails first.
func TestSourceBindError(t *testing.T) {
	m, store, _ := newTestManager(t, "- name: up\n  connect_timeout: 2s\n  load_assignment:\n    cluster_name: up\n    endpoints:\n    - lb_endpoints:\n      - endpoint: {address: {socket_address: {address: '::1', port_value: 9}}}\n")
	c := m.Cluster("up")
	ctx := upstream.WithSource(context.Background(), upstream.Source{Addr: netip.MustParseAddr("fe80::1"), Mark: 7})
	_, err := c.ConnectHost(ctx, c.PickHost(nil))
	var le *upstream.LocalConnectError
	if !errors.As(err, &le) {
		t.Fatalf("error %v, want a local connection failure", err)
	}
	if store.Counter("cluster.up.upstream_cx_connect_fail").Value() != 1 {
		t.Errorf("upstream_cx_connect_fail = %d, want 1", store.Counter("cluster.up.upstream_cx_connect_fail").Value())
	}
	if !canTransparent(t) {
		if le.Bind {
			t.Errorf("without CAP_NET_ADMIN: %v, want a socket option failure", err)
		}
		return
	}
	if want := "failed to bind to [fe80::1]:0: Invalid argument"; !le.Bind || le.Reason != want {
		t.Errorf("reason %q (bind %v), want %q", le.Reason, le.Bind, want)
	}
	if got := store.Counter("cluster.up.bind_errors").Value(); got != 1 {
		t.Errorf("bind_errors = %d, want 1", got)
	}
}

// TestBindConfigBindError: upstream_bind_config.source_address that the
// kernel refuses (an address the host does not have, without freebind)
// is a bind error too, as in Envoy.
func TestBindConfigBindError(t *testing.T) {
	m, store, _ := newTestManager(t, clusterFor("  upstream_bind_config: {source_address: {address: 192.0.2.1, port_value: 0}}\n", 9))
	c := m.Cluster("up")
	_, err := c.ConnectHost(t.Context(), c.PickHost(nil))
	var le *upstream.LocalConnectError
	if want := "failed to bind to 192.0.2.1:0: Cannot assign requested address"; !errors.As(err, &le) || !le.Bind || le.Reason != want {
		t.Fatalf("error %v, want a bind error %q", err, want)
	}
	if got := store.Counter("cluster.up.bind_errors").Value(); got != 1 {
		t.Errorf("bind_errors = %d, want 1", got)
	}
}

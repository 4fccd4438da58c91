package listener

import (
	"context"
	"net"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	listenerv3 "github.com/envoyproxy/go-control-plane/envoy/config/listener/v3"
	"github.com/go-logr/logr"

	"github.com/outrigger-dev/outrigger/pkg/proxy/stats"
	"github.com/outrigger-dev/outrigger/pkg/proxy/udpfilter"
)

// echoUDP answers every datagram with "echo:" and the datagram, from the
// listener's socket.
type echoUDP struct{ closed atomic.Int32 }

func (e *echoUDP) OnDatagram(d udpfilter.Datagram) {
	_ = d.Socket.WriteTo(append([]byte("echo:"), d.Data...), d.Peer)
}
func (e *echoUDP) OnReceiveError()                    {}
func (e *echoUDP) Close() error                       { e.closed.Add(1); return nil }
func (e *echoUDP) Shutdown(ctx context.Context) error { return e.Close() }

// buildUDPListener builds a UDP listener from YAML whose listener filters
// are all f.
func buildUDPListener(t *testing.T, text string, f udpfilter.Filter) (*Listener, *stats.Store, error) {
	t.Helper()
	st := stats.NewStore()
	l, err := Build(parseListener(t, text), Deps{
		Stats: st,
		Log:   logr.Discard(),
		BuildUDPFilter: func(*listenerv3.ListenerFilter) (udpfilter.Filter, error) {
			return f, nil
		},
	})
	return l, st, err
}

func TestUDPListenerServesAndStops(t *testing.T) {
	for _, tc := range []struct{ ip, scope string }{{"127.0.0.1", "listener.127.0.0.1_0."}, {"::1", "listener.[__1]_0."}} {
		t.Run(tc.ip, func(t *testing.T) { testUDPListener(t, tc.ip, tc.scope) })
	}
}

// testUDPListener serves datagrams on a UDP listener on ip, then stops it.
func testUDPListener(t *testing.T, ip, scope string) {
	f := &echoUDP{}
	l, st, err := buildUDPListener(t, `
name: u
address: {socket_address: {address: "`+ip+`", port_value: 0, protocol: UDP}}
udp_listener_config: {downstream_socket_config: {max_rx_datagram_size: 8}}
listener_filters: [{name: envoy.filters.udp_listener.udp_proxy}]
`, f)
	if err != nil {
		t.Fatal(err)
	}
	if err := l.Bind(); err != nil {
		t.Fatal(err)
	}
	go func() { _ = l.Serve() }()
	addr := l.Addr().(*net.UDPAddr)
	c, err := net.DialUDP("udp", nil, addr)
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	_ = c.SetDeadline(time.Now().Add(ioTimeout))
	if _, err := c.Write([]byte("123456789")); err != nil { // over 8 bytes: dropped
		t.Fatal(err)
	}
	if _, err := c.Write([]byte("12345678")); err != nil {
		t.Fatal(err)
	}
	buf := make([]byte, 64)
	n, err := c.Read(buf)
	if err != nil || string(buf[:n]) != "echo:12345678" {
		t.Fatalf("reply %q, %v", buf[:n], err)
	}
	if v := st.Scope(scope).Counter("udp.downstream_rx_datagram_dropped").Value(); v != 1 {
		t.Errorf("udp.downstream_rx_datagram_dropped = %d, want 1", v)
	}
	if got := l.Addresses()[0].GetSocketAddress().GetPortValue(); got != uint32(addr.Port) {
		t.Errorf("Addresses port %d, want %d", got, addr.Port)
	}
	l.Stop()
	select {
	case <-l.Done():
	case <-time.After(ioTimeout):
		t.Fatal("Serve did not return after Stop")
	}
	if f.closed.Load() != 1 {
		t.Errorf("filter closed %d times by Stop, want 1", f.closed.Load())
	}
}

func TestUDPListenerRefusals(t *testing.T) {
	_, _, err := buildUDPListener(t, `
address: {socket_address: {address: 127.0.0.1, port_value: 0, protocol: UDP}}
additional_addresses: [{address: {socket_address: {address: 127.0.0.2, port_value: 0}}}]
filter_chains: [{filters: []}]
per_connection_buffer_limit_bytes: 10
udp_listener_config: {downstream_socket_config: {prefer_gro: true}, quic_options: {}}
`, &echoUDP{})
	if err == nil {
		t.Fatal("built")
	}
	for _, want := range []string{
		"additional_addresses[0].address.socket_address.protocol:",
		"filter_chains: a UDP listener takes no filter chains",
		"per_connection_buffer_limit_bytes: not supported on a UDP listener",
		"udp_listener_config.downstream_socket_config.prefer_gro: not supported",
		"udp_listener_config.quic_options: not supported",
		"listener_filters: a UDP listener needs a UDP listener filter",
	} {
		if !strings.Contains(err.Error(), want) {
			t.Errorf("error %q lacks %q", err, want)
		}
	}
}

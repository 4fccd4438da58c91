package tcpstats

import (
	"io"
	"net"
	"testing"

	tcpstatsv3 "github.com/envoyproxy/go-control-plane/envoy/extensions/transport_sockets/tcp_stats/v3"

	"github.com/outrigger-dev/outrigger/pkg/proxy/stats"
)

// TestTCPStatsRecordsAConnection checks that a connection's TCP_INFO goes
// to Envoy's stats when it finishes: the bytes TCP sent and received, its
// segments, and the gauges back at zero.
func TestTCPStatsRecordsAConnection(t *testing.T) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	done := make(chan struct{})
	defer close(done)
	go func() {
		c, err := ln.Accept()
		if err != nil {
			return
		}
		defer c.Close()
		_, _ = io.CopyN(c, c, 1000)
		<-done // no FIN before the reading: TCP would count it as a byte
	}()
	store := stats.NewStore()
	s, err := Compile(&tcpstatsv3.Config{}, store.Scope("cluster.c."))
	if err != nil {
		t.Fatal(err)
	}
	conn, err := net.Dial("tcp", ln.Addr().String())
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close()
	r := s.Watch(conn)
	if r == nil {
		t.Fatal("no recorder for a TCP connection")
	}
	if _, err := conn.Write(make([]byte, 1000)); err != nil {
		t.Fatal(err)
	}
	if _, err := io.ReadFull(conn, make([]byte, 1000)); err != nil {
		t.Fatal(err)
	}
	r.Finish()
	r.Finish() // once only
	for name, want := range map[string]uint64{"cx_tx_bytes_sent": 1000, "cx_rx_bytes_received": 1000} {
		if got := store.Counter("cluster.c.tcp_stats." + name).Value(); got != want {
			t.Errorf("%s = %d, want %d", name, got, want)
		}
	}
	for _, name := range []string{"cx_tx_segments", "cx_rx_segments", "cx_tx_data_segments", "cx_rx_data_segments"} {
		if store.Counter("cluster.c.tcp_stats."+name).Value() == 0 {
			t.Errorf("%s = 0, want the connection's segments", name)
		}
	}
	for _, name := range []string{"cx_tx_unsent_bytes", "cx_tx_unacked_segments"} {
		if g := store.Gauge("cluster.c.tcp_stats." + name).Value(); g != 0 {
			t.Errorf("%s = %d after the connection, want 0", name, g)
		}
	}
}

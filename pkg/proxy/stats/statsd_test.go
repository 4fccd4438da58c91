package stats

import (
	"bufio"
	"context"
	"errors"
	"net"
	"slices"
	"strings"
	"testing"
	"time"

	corev3 "github.com/envoyproxy/go-control-plane/envoy/config/core/v3"
	metricsv3 "github.com/envoyproxy/go-control-plane/envoy/config/metrics/v3"
	graphitev3 "github.com/envoyproxy/go-control-plane/envoy/extensions/stat_sinks/graphite_statsd/v3"
	"github.com/google/go-cmp/cmp"
	"google.golang.org/protobuf/proto"
	"google.golang.org/protobuf/types/known/anypb"
	"google.golang.org/protobuf/types/known/wrapperspb"
)

func mustAny(t *testing.T, m proto.Message) *anypb.Any {
	t.Helper()
	a, err := anypb.New(m)
	if err != nil {
		t.Fatal(err)
	}
	return a
}

func socketAddress(port int, protocol corev3.SocketAddress_Protocol) *corev3.Address {
	return &corev3.Address{Address: &corev3.Address_SocketAddress{SocketAddress: &corev3.SocketAddress{
		Address: "127.0.0.1", Protocol: protocol, PortSpecifier: &corev3.SocketAddress_PortValue{PortValue: uint32(port)},
	}}}
}

func sinkConfig(t *testing.T, m proto.Message) []*metricsv3.StatsSink {
	t.Helper()
	return []*metricsv3.StatsSink{{Name: "s", ConfigType: &metricsv3.StatsSink_TypedConfig{TypedConfig: mustAny(t, m)}}}
}

// udpServer is a statsd server on a loopback UDP port.
type udpServer struct {
	pc   net.PacketConn
	port int
}

func newUDPServer(t *testing.T) *udpServer {
	t.Helper()
	pc, err := net.ListenPacket("udp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = pc.Close() })
	return &udpServer{pc: pc, port: pc.LocalAddr().(*net.UDPAddr).Port}
}

// datagram reads one datagram (bounded in time) and returns it as is.
func (u *udpServer) datagram(t *testing.T) string {
	t.Helper()
	buf := make([]byte, 65536)
	_ = u.pc.SetReadDeadline(time.Now().Add(5 * time.Second))
	n, _, err := u.pc.ReadFrom(buf)
	if err != nil {
		t.Fatal(err)
	}
	return string(buf[:n])
}

// lines reads datagrams until it has n lines, and returns them sorted.
func (u *udpServer) lines(t *testing.T, n int) []string {
	t.Helper()
	var got []string
	for len(got) < n {
		got = append(got, strings.Split(u.datagram(t), "\n")...)
	}
	slices.Sort(got)
	return got
}

func TestStatsdSinksOverUDP(t *testing.T) {
	cases := map[string]struct {
		sink   func(port int) proto.Message
		record func(s *Store)
		first  []string
		second []string
	}{
		"statsd with prefix": {
			sink: func(port int) proto.Message {
				return &metricsv3.StatsdSink{Prefix: "pfx", StatsdSpecifier: &metricsv3.StatsdSink_Address{Address: socketAddress(port, corev3.SocketAddress_UDP)}}
			},
			record: func(s *Store) {
				s.Counter("cluster.c1.upstream_rq_200").Add(3)
				s.Counter("unused")
				s.Gauge("server.live").Set(1)
			},
			first: []string{"pfx.cluster.c1.upstream_rq_200:3|c", "pfx.server.live:1|g"},
			// Envoy sends every used counter at every flush, with its delta.
			second: []string{"pfx.cluster.c1.upstream_rq_200:0|c", "pfx.server.live:1|g"},
		},
		"statsd default prefix": {
			sink: func(port int) proto.Message {
				return &metricsv3.StatsdSink{StatsdSpecifier: &metricsv3.StatsdSink_Address{Address: socketAddress(port, corev3.SocketAddress_UDP)}}
			},
			record: func(s *Store) { s.Counter("a").Add(1) },
			first:  []string{"proxy.a:1|c"},
			second: []string{"proxy.a:0|c"},
		},
		"address protocol is not read: always UDP": {
			sink: func(port int) proto.Message {
				return &metricsv3.StatsdSink{StatsdSpecifier: &metricsv3.StatsdSink_Address{Address: socketAddress(port, corev3.SocketAddress_TCP)}}
			},
			record: func(s *Store) { s.Gauge("g").Set(7) },
			first:  []string{"proxy.g:7|g"},
			second: []string{"proxy.g:7|g"},
		},
		"dog_statsd tags": {
			sink: func(port int) proto.Message {
				return &metricsv3.DogStatsdSink{DogStatsdSpecifier: &metricsv3.DogStatsdSink_Address{Address: socketAddress(port, corev3.SocketAddress_UDP)}}
			},
			record: func(s *Store) {
				s.Counter("cluster.c1.upstream_rq_200").Add(3)
				s.Gauge("server.live").Set(1)
			},
			first:  []string{"proxy.cluster.upstream_rq:3|c|#proxy.response_code:200,proxy.cluster_name:c1", "proxy.server.live:1|g"},
			second: []string{"proxy.cluster.upstream_rq:0|c|#proxy.response_code:200,proxy.cluster_name:c1", "proxy.server.live:1|g"},
		},
		"dog_statsd prefix and histogram tags": {
			sink: func(port int) proto.Message {
				return &metricsv3.DogStatsdSink{Prefix: "dd", DogStatsdSpecifier: &metricsv3.DogStatsdSink_Address{Address: socketAddress(port, corev3.SocketAddress_UDP)}}
			},
			record: func(s *Store) { s.HistogramWithUnit("cluster.c1.upstream_rq_time", UnitMilliseconds).Record(12) },
			first:  []string{"dd.cluster.upstream_rq_time:12|ms|#proxy.cluster_name:c1"},
		},
		"histogram values as timers, one line per value": {
			sink: func(port int) proto.Message {
				return &metricsv3.StatsdSink{StatsdSpecifier: &metricsv3.StatsdSink_Address{Address: socketAddress(port, corev3.SocketAddress_UDP)}}
			},
			record: func(s *Store) {
				h := s.HistogramWithUnit("http.in.downstream_rq_time", UnitMilliseconds)
				h.Record(3)
				h.Record(3)
				h.Record(47)
				h.Record(0)
				h.Record(300) // bin [300,310): its midpoint is sent
			},
			first: []string{
				"proxy.http.in.downstream_rq_time:0|ms",
				"proxy.http.in.downstream_rq_time:305|ms",
				"proxy.http.in.downstream_rq_time:3|ms",
				"proxy.http.in.downstream_rq_time:3|ms",
				"proxy.http.in.downstream_rq_time:47|ms",
			},
		},
		"percent histograms as fractions": {
			sink: func(port int) proto.Message {
				return &metricsv3.StatsdSink{StatsdSpecifier: &metricsv3.StatsdSink_Address{Address: socketAddress(port, corev3.SocketAddress_UDP)}}
			},
			// 50% lands in the bin [50%, 51%), whose midpoint is sent.
			record: func(s *Store) { s.HistogramWithUnit("cluster.c1.usage", UnitPercent).Record(PercentScale / 2) },
			first:  []string{"proxy.cluster.c1.usage:0.505|h"},
		},
		"microseconds as recorded by default": {
			sink: func(port int) proto.Message {
				return &metricsv3.StatsdSink{StatsdSpecifier: &metricsv3.StatsdSink_Address{Address: socketAddress(port, corev3.SocketAddress_UDP)}}
			},
			record: func(s *Store) { s.HistogramWithUnit("x.us", UnitMicroseconds).Record(1500) },
			first:  []string{"proxy.x.us:1550|ms"},
		},
		"microseconds scaled to milliseconds": {
			sink: func(port int) proto.Message {
				return &metricsv3.StatsdSink{ScaleHistogramUnitsToMilliseconds: true,
					StatsdSpecifier: &metricsv3.StatsdSink_Address{Address: socketAddress(port, corev3.SocketAddress_UDP)}}
			},
			record: func(s *Store) {
				s.HistogramWithUnit("x.us", UnitMicroseconds).Record(1500)
				s.HistogramWithUnit("x.ms", UnitMilliseconds).Record(15)
			},
			first: []string{"proxy.x.ms:15|ms", "proxy.x.us:1.55|ms"},
		},
		"DogStatsD microseconds scaled to milliseconds": {
			sink: func(port int) proto.Message {
				return &metricsv3.DogStatsdSink{ScaleHistogramUnitsToMilliseconds: true,
					DogStatsdSpecifier: &metricsv3.DogStatsdSink_Address{Address: socketAddress(port, corev3.SocketAddress_UDP)}}
			},
			record: func(s *Store) {
				s.HistogramWithUnit("x.us", UnitMicroseconds).Record(1500)
				s.HistogramWithUnit("x.ms", UnitMilliseconds).Record(15)
			},
			first: []string{"proxy.x.ms:15|ms", "proxy.x.us:1.55|ms"},
		},
		"graphite_statsd tags after the name": {
			sink: func(port int) proto.Message {
				return &graphitev3.GraphiteStatsdSink{StatsdSpecifier: &graphitev3.GraphiteStatsdSink_Address{Address: socketAddress(port, corev3.SocketAddress_UDP)}}
			},
			record: func(s *Store) {
				s.Counter("cluster.c1.upstream_rq_200").Add(3)
				s.Gauge("server.live").Set(1)
			},
			first:  []string{"proxy.cluster.upstream_rq;proxy.response_code=200;proxy.cluster_name=c1:3|c", "proxy.server.live:1|g"},
			second: []string{"proxy.cluster.upstream_rq;proxy.response_code=200;proxy.cluster_name=c1:0|c", "proxy.server.live:1|g"},
		},
		"graphite_statsd prefix, histograms and unsafe bytes": {
			sink: func(port int) proto.Message {
				return &graphitev3.GraphiteStatsdSink{Prefix: "gr;x", ScaleHistogramUnitsToMilliseconds: true,
					StatsdSpecifier: &graphitev3.GraphiteStatsdSink_Address{Address: socketAddress(port, corev3.SocketAddress_UDP)}}
			},
			record: func(s *Store) {
				s.HistogramWithUnit("cluster.c=1;a:b.upstream_rq_time", UnitMicroseconds).Record(1500)
				s.Counter("odd;name").Inc()
			},
			first: []string{"gr_x.cluster.upstream_rq_time;proxy.cluster_name=c_1_a_b:1.55|ms", "gr_x.odd_name:1|c"},
		},
		"negative gauges go through zero": {
			sink: func(port int) proto.Message {
				return &metricsv3.StatsdSink{StatsdSpecifier: &metricsv3.StatsdSink_Address{Address: socketAddress(port, corev3.SocketAddress_UDP)}}
			},
			record: func(s *Store) { s.Gauge("g").Set(-2) },
			first:  []string{"proxy.g:-2|g", "proxy.g:0|g"},
		},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			srv := newUDPServer(t)
			sinks, err := NewSinks(sinkConfig(t, tc.sink(srv.port)), SinkDeps{})
			if err != nil {
				t.Fatal(err)
			}
			s := NewStore()
			tc.record(s)
			f := NewFlusher(s, sinks, FlusherOptions{})
			defer f.Close()
			if err := f.Flush(); err != nil {
				t.Fatal(err)
			}
			if diff := cmp.Diff(tc.first, srv.lines(t, len(tc.first))); diff != "" {
				t.Errorf("first flush (-want +got):\n%s", diff)
			}
			if tc.second == nil {
				return
			}
			if err := f.Flush(); err != nil {
				t.Fatal(err)
			}
			if diff := cmp.Diff(tc.second, srv.lines(t, len(tc.second))); diff != "" {
				t.Errorf("second flush (-want +got):\n%s", diff)
			}
		})
	}
}

// TestStatsdBatchesDatagrams: lines fill datagrams up to the size bound,
// and no line is split or lost.
func TestStatsdBatchesDatagrams(t *testing.T) {
	cases := map[string]struct {
		max      *wrapperspb.UInt64Value
		want     int // bound on a datagram's size
		graphite bool
	}{
		"default bound":                   {want: 1432},
		"max_bytes_per_datagram":          {max: wrapperspb.UInt64(200), want: 200},
		"graphite max_bytes_per_datagram": {max: wrapperspb.UInt64(300), want: 300, graphite: true},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			srv := newUDPServer(t)
			var cfg proto.Message = &metricsv3.DogStatsdSink{MaxBytesPerDatagram: tc.max,
				DogStatsdSpecifier: &metricsv3.DogStatsdSink_Address{Address: socketAddress(srv.port, corev3.SocketAddress_UDP)}}
			if tc.graphite {
				cfg = &graphitev3.GraphiteStatsdSink{MaxBytesPerDatagram: tc.max,
					StatsdSpecifier: &graphitev3.GraphiteStatsdSink_Address{Address: socketAddress(srv.port, corev3.SocketAddress_UDP)}}
			}
			sinks, err := NewSinks(sinkConfig(t, cfg), SinkDeps{})
			if err != nil {
				t.Fatal(err)
			}
			s := NewStore()
			const n = 200
			var want []string
			for i := range n {
				name := "counter_number_" + itoa(i)
				s.Counter(name).Inc()
				want = append(want, "proxy."+name+":1|c")
			}
			slices.Sort(want)
			f := NewFlusher(s, sinks, FlusherOptions{})
			defer f.Close()
			if err := f.Flush(); err != nil {
				t.Fatal(err)
			}
			var got []string
			datagrams := 0
			for len(got) < n {
				d := srv.datagram(t)
				datagrams++
				if len(d) > tc.want {
					t.Errorf("datagram of %d bytes, bound %d", len(d), tc.want)
				}
				got = append(got, strings.Split(d, "\n")...)
			}
			slices.Sort(got)
			if diff := cmp.Diff(want, got); diff != "" {
				t.Errorf("lines (-want +got):\n%s", diff)
			}
			if datagrams < 2 {
				t.Errorf("%d datagrams: lines were not batched under the bound", datagrams)
			}
		})
	}
}

func TestStatsdOverTCPCluster(t *testing.T) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	cfg := &metricsv3.StatsdSink{Prefix: "edge", StatsdSpecifier: &metricsv3.StatsdSink_TcpClusterName{TcpClusterName: "statsd"}}
	deps := SinkDeps{
		HasCluster: func(name string) bool { return name == "statsd" },
		DialCluster: func(ctx context.Context, cluster string) (net.Conn, error) {
			if cluster != "statsd" {
				t.Errorf("dialed cluster %q", cluster)
			}
			var d net.Dialer
			return d.DialContext(ctx, "tcp", ln.Addr().String())
		},
	}
	sinks, err := NewSinks(sinkConfig(t, cfg), deps)
	if err != nil {
		t.Fatal(err)
	}
	s := NewStore()
	s.Counter("a").Add(1)
	s.Gauge("b").Set(2)
	s.HistogramWithUnit("c", UnitMilliseconds).Record(9)
	f := NewFlusher(s, sinks, FlusherOptions{})
	defer f.Close()
	if err := f.Flush(); err != nil {
		t.Fatal(err)
	}
	conn, err := ln.Accept()
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close()
	_ = conn.SetReadDeadline(time.Now().Add(5 * time.Second))
	r := bufio.NewReader(conn)
	var got []string
	for range 3 {
		line, err := r.ReadString('\n')
		if err != nil {
			t.Fatal(err)
		}
		got = append(got, strings.TrimSuffix(line, "\n"))
	}
	if diff := cmp.Diff([]string{"edge.a:1|c", "edge.b:2|g", "edge.c:9|ms"}, got); diff != "" {
		t.Errorf("lines (-want +got):\n%s", diff)
	}
}

// TestStatsdReconnects: a failed write drops the connection and the next
// flush dials again.
func TestStatsdReconnects(t *testing.T) {
	broken, brokenPeer := net.Pipe()
	_ = brokenPeer.Close() // writes to broken now fail at once
	working, server := net.Pipe()
	defer server.Close()
	conns := make(chan net.Conn, 2)
	conns <- broken
	conns <- working
	sink := NewStatsdSink(StatsdOptions{Dial: func(context.Context) (net.Conn, error) {
		select {
		case c := <-conns:
			return c, nil
		default:
			return nil, errors.New("dialed too often")
		}
	}})
	s := NewStore()
	s.Counter("a").Inc()
	f := NewFlusher(s, []Sink{sink}, FlusherOptions{})
	defer f.Close()

	if err := f.Flush(); err == nil {
		t.Error("a flush to a closed connection did not fail")
	}
	got := make(chan string, 1)
	go func() {
		line, _ := bufio.NewReader(server).ReadString('\n')
		got <- line
	}()
	if err := f.Flush(); err != nil {
		t.Fatalf("second flush: %v", err)
	}
	if line := <-got; line != "proxy.a:0|c\n" {
		t.Errorf("second flush sent %q", line)
	}
	if len(conns) != 0 {
		t.Error("the second flush did not dial again")
	}
}

// BenchmarkStatsdFlush measures one flush of 10,000 used counters and
// gauges and one histogram of 1,000 values to a UDP statsd sink (the
// datagrams go to a loopback socket nobody reads).
func BenchmarkStatsdFlush(b *testing.B) {
	for _, dog := range []bool{false, true} {
		name := "statsd"
		if dog {
			name = "dog_statsd"
		}
		b.Run(name, func(b *testing.B) {
			pc, err := net.ListenPacket("udp", "127.0.0.1:0")
			if err != nil {
				b.Fatal(err)
			}
			defer pc.Close()
			addr := pc.LocalAddr().String()
			sink := NewStatsdSink(StatsdOptions{DogStatsD: dog, UDP: true, Dial: func(ctx context.Context) (net.Conn, error) {
				var d net.Dialer
				return d.DialContext(ctx, "udp", addr)
			}})
			s := NewStore()
			counters := make([]*Counter, 5000)
			for i := range counters {
				counters[i] = s.Counter("cluster.c" + itoa(i%50) + ".upstream_rq_" + itoa(200+i/50))
				s.Gauge("cluster.c" + itoa(i%50) + ".gauge_" + itoa(i/50)).Set(int64(i))
			}
			h := s.HistogramWithUnit("cluster.c0.upstream_rq_time", UnitMilliseconds)
			f := NewFlusher(s, []Sink{sink}, FlusherOptions{})
			defer f.Close()
			b.ReportAllocs()
			b.ResetTimer()
			for range b.N {
				for _, c := range counters {
					c.Inc()
				}
				for v := range 1000 {
					h.Record(uint64(v))
				}
				if err := f.Flush(); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
}

// TestStatsdBinValues: a bin's value is its integer lower bound, or its
// midpoint, without the floating-point noise of the bounds (a timer of
// 115 ms is sent as 115, not 115.00000000000001); real fractions stay.
func TestStatsdBinValues(t *testing.T) {
	for _, tc := range []struct {
		bin   Bin
		unit  Unit
		scale bool
		want  string
	}{
		{Bin{LowerBound: 7, Width: 1}, UnitMilliseconds, false, "7"},
		{Bin{LowerBound: 110.00000000000001, Width: 10}, UnitMilliseconds, false, "115"},
		{Bin{LowerBound: 1099.9999999999998, Width: 100}, UnitMilliseconds, false, "1150"},
		{Bin{LowerBound: 1500, Width: 1}, UnitMicroseconds, true, "1.5"},
		{Bin{LowerBound: 0.25, Width: 0}, UnitMilliseconds, false, "0.25"},
	} {
		if got := string(appendBinValue(nil, tc.bin, tc.unit, tc.scale)); got != tc.want {
			t.Errorf("bin %+v (unit %v, scale %v) = %q, want %q", tc.bin, tc.unit, tc.scale, got, tc.want)
		}
	}
}

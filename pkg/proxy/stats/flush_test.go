package stats

import (
	"bufio"
	"context"
	"net"
	"slices"
	"strings"
	"testing"
	"time"

	corev3 "github.com/envoyproxy/go-control-plane/envoy/config/core/v3"
	metricsv3 "github.com/envoyproxy/go-control-plane/envoy/config/metrics/v3"
	"github.com/google/go-cmp/cmp"
	"google.golang.org/protobuf/proto"
	"google.golang.org/protobuf/types/known/anypb"
	"google.golang.org/protobuf/types/known/structpb"
)

// fakeTicker is a flush timer the test drives.
type fakeTicker struct {
	c       chan time.Time
	stopped chan struct{}
	period  time.Duration
}

func (f *fakeTicker) newTicker(d time.Duration) (<-chan time.Time, func()) {
	f.period = d
	return f.c, func() { close(f.stopped) }
}

// countingSink signals each flush.
type countingSink struct{ flushed chan *Snapshot }

func (c countingSink) Flush(sn *Snapshot) error {
	c.flushed <- sn
	return nil
}

func TestFlusherTimer(t *testing.T) {
	s := NewStore()
	tk := &fakeTicker{c: make(chan time.Time), stopped: make(chan struct{})}
	sink := countingSink{flushed: make(chan *Snapshot, 1)}
	hooked := 0
	f := NewFlusher(s, []Sink{sink}, FlusherOptions{NewTicker: tk.newTicker})
	f.AddHook(func() { hooked++ })
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error)
	go func() { done <- f.Run(ctx) }()
	for i := range 3 {
		tk.c <- time.Unix(int64(i), 0)
		<-sink.flushed
	}
	cancel()
	if err := <-done; err != nil {
		t.Fatal(err)
	}
	<-tk.stopped
	if tk.period != DefaultFlushInterval {
		t.Errorf("period %v, want %v", tk.period, DefaultFlushInterval)
	}
	if hooked != 3 {
		t.Errorf("hook ran %d times, want 3", hooked)
	}
}

func TestFlusherOnAdminHasNoTimer(t *testing.T) {
	s := NewStore()
	f := NewFlusher(s, nil, FlusherOptions{OnAdmin: true, Interval: time.Second,
		NewTicker: func(time.Duration) (<-chan time.Time, func()) {
			t.Error("a timer was made with stats_flush_on_admin")
			return nil, func() {}
		}})
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	if err := f.Run(ctx); err != nil {
		t.Fatal(err)
	}
	if !f.OnAdmin() || f.Interval() != time.Second {
		t.Errorf("OnAdmin %v Interval %v", f.OnAdmin(), f.Interval())
	}
}

func TestSnapshotHasUsedStatsOnly(t *testing.T) {
	s := NewStore()
	s.Counter("used").Add(2)
	s.Counter("unused")
	s.Gauge("g").Set(-3)
	s.Gauge("g_unused")
	s.Histogram("h").Record(1)
	s.Histogram("h_unused")
	sink := &recordingSink{}
	if err := NewFlusher(s, []Sink{sink}, FlusherOptions{}).Flush(); err != nil {
		t.Fatal(err)
	}
	if diff := cmp.Diff(map[string]uint64{"used": 2}, sink.counters); diff != "" {
		t.Errorf("counters (-want +got):\n%s", diff)
	}
	if diff := cmp.Diff(map[string]int64{"g": -3}, sink.gauges); diff != "" {
		t.Errorf("gauges (-want +got):\n%s", diff)
	}
	if diff := cmp.Diff([]string{"h"}, sink.hists); diff != "" {
		t.Errorf("histograms (-want +got):\n%s", diff)
	}
	if got := s.Histogram("h").IntervalStatistics().SampleCount; got != 1 {
		t.Errorf("flush did not roll the histogram interval: %d", got)
	}
}

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

func TestStatsdSinksOverUDP(t *testing.T) {
	cases := map[string]struct {
		sink func(port int) proto.Message
		want []string
	}{
		"statsd with prefix": {
			sink: func(port int) proto.Message {
				return &metricsv3.StatsdSink{Prefix: "pfx", StatsdSpecifier: &metricsv3.StatsdSink_Address{Address: socketAddress(port, corev3.SocketAddress_UDP)}}
			},
			want: []string{"pfx.cluster.c1.upstream_rq_200:3|c", "pfx.server.live:1|g"},
		},
		"statsd default prefix": {
			sink: func(port int) proto.Message {
				return &metricsv3.StatsdSink{StatsdSpecifier: &metricsv3.StatsdSink_Address{Address: socketAddress(port, corev3.SocketAddress_UDP)}}
			},
			want: []string{"proxy.cluster.c1.upstream_rq_200:3|c", "proxy.server.live:1|g"},
		},
		"dog_statsd tags": {
			sink: func(port int) proto.Message {
				return &metricsv3.DogStatsdSink{DogStatsdSpecifier: &metricsv3.DogStatsdSink_Address{Address: socketAddress(port, corev3.SocketAddress_UDP)}}
			},
			want: []string{"proxy.cluster.upstream_rq:3|c|#proxy.response_code:200,proxy.cluster_name:c1", "proxy.server.live:1|g"},
		},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			pc, err := net.ListenPacket("udp", "127.0.0.1:0")
			if err != nil {
				t.Fatal(err)
			}
			defer pc.Close()
			port := pc.LocalAddr().(*net.UDPAddr).Port
			sinks, err := NewSinks([]*metricsv3.StatsSink{{Name: "s", ConfigType: &metricsv3.StatsSink_TypedConfig{TypedConfig: mustAny(t, tc.sink(port))}}}, SinkDeps{})
			if err != nil {
				t.Fatal(err)
			}
			s := NewStore()
			s.Counter("cluster.c1.upstream_rq_200").Add(3)
			s.Counter("unused")
			s.Gauge("server.live").Set(1)
			f := NewFlusher(s, sinks, FlusherOptions{})
			if err := f.Flush(); err != nil {
				t.Fatal(err)
			}
			got := readDatagram(t, pc)
			if diff := cmp.Diff(tc.want, got); diff != "" {
				t.Errorf("first flush (-want +got):\n%s", diff)
			}
			// A second flush sends deltas: no counter line, the gauge again.
			if err := f.Flush(); err != nil {
				t.Fatal(err)
			}
			if got := readDatagram(t, pc); len(got) != 1 || !strings.Contains(got[0], "server.live:1|g") {
				t.Errorf("second flush: %q", got)
			}
		})
	}
}

func readDatagram(t *testing.T, pc net.PacketConn) []string {
	t.Helper()
	buf := make([]byte, 65536)
	_ = pc.SetReadDeadline(time.Now().Add(5 * time.Second))
	n, _, err := pc.ReadFrom(buf)
	if err != nil {
		t.Fatal(err)
	}
	lines := strings.Split(string(buf[:n]), "\n")
	slices.Sort(lines)
	return lines
}

func TestStatsdOverTCP(t *testing.T) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	port := ln.Addr().(*net.TCPAddr).Port
	cases := map[string]struct {
		cfg  *metricsv3.StatsdSink
		deps SinkDeps
	}{
		"address with tcp protocol": {
			cfg: &metricsv3.StatsdSink{StatsdSpecifier: &metricsv3.StatsdSink_Address{Address: socketAddress(port, corev3.SocketAddress_TCP)}},
		},
		"tcp cluster": {
			cfg: &metricsv3.StatsdSink{StatsdSpecifier: &metricsv3.StatsdSink_TcpClusterName{TcpClusterName: "statsd"}},
			deps: SinkDeps{DialCluster: func(ctx context.Context, cluster string) (net.Conn, error) {
				if cluster != "statsd" {
					t.Errorf("dialed cluster %q", cluster)
				}
				var d net.Dialer
				return d.DialContext(ctx, "tcp", ln.Addr().String())
			}},
		},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			sinks, err := NewSinks([]*metricsv3.StatsSink{{ConfigType: &metricsv3.StatsSink_TypedConfig{TypedConfig: mustAny(t, tc.cfg)}}}, tc.deps)
			if err != nil {
				t.Fatal(err)
			}
			defer sinks[0].(*StatsdSink).Close()
			s := NewStore()
			s.Counter("a").Add(1)
			s.Counter("b").Add(2)
			if err := NewFlusher(s, sinks, FlusherOptions{}).Flush(); err != nil {
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
			for range 2 {
				line, err := r.ReadString('\n')
				if err != nil {
					t.Fatal(err)
				}
				got = append(got, strings.TrimSuffix(line, "\n"))
			}
			if diff := cmp.Diff([]string{"proxy.a:1|c", "proxy.b:2|c"}, got); diff != "" {
				t.Errorf("lines (-want +got):\n%s", diff)
			}
		})
	}
}

func TestNewSinksErrors(t *testing.T) {
	st, _ := structpb.NewStruct(map[string]any{"a": 1})
	cases := map[string]*metricsv3.StatsSink{
		"no typed config":  {Name: "x"},
		"unsupported type": {ConfigType: &metricsv3.StatsSink_TypedConfig{TypedConfig: mustAny(t, st)}},
		"no address":       {ConfigType: &metricsv3.StatsSink_TypedConfig{TypedConfig: mustAny(t, &metricsv3.StatsdSink{})}},
		"tcp cluster without dialer": {ConfigType: &metricsv3.StatsSink_TypedConfig{TypedConfig: mustAny(t,
			&metricsv3.StatsdSink{StatsdSpecifier: &metricsv3.StatsdSink_TcpClusterName{TcpClusterName: "c"}})}},
		"hystrix without factory": {ConfigType: &metricsv3.StatsSink_TypedConfig{TypedConfig: mustAny(t, &metricsv3.HystrixSink{})}},
	}
	for name, cfg := range cases {
		t.Run(name, func(t *testing.T) {
			if _, err := NewSinks([]*metricsv3.StatsSink{cfg}, SinkDeps{}); err == nil {
				t.Error("no error")
			}
		})
	}
	hystrix := &metricsv3.StatsSink{ConfigType: &metricsv3.StatsSink_TypedConfig{TypedConfig: mustAny(t, &metricsv3.HystrixSink{})}}
	built := false
	_, err := NewSinks([]*metricsv3.StatsSink{hystrix}, SinkDeps{Factories: map[string]func(*metricsv3.StatsSink) (Sink, error){
		"envoy.config.metrics.v3.HystrixSink": func(*metricsv3.StatsSink) (Sink, error) { built = true; return &recordingSink{}, nil },
	}})
	if err != nil || !built {
		t.Errorf("factory sink: built %v err %v", built, err)
	}
}

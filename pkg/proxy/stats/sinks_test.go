package stats

import (
	"context"
	"errors"
	"net"
	"strings"
	"testing"

	corev3 "github.com/envoyproxy/go-control-plane/envoy/config/core/v3"
	metricsv3 "github.com/envoyproxy/go-control-plane/envoy/config/metrics/v3"
	"google.golang.org/protobuf/types/known/anypb"
	"google.golang.org/protobuf/types/known/structpb"
)

func TestNewSinksErrors(t *testing.T) {
	st, err := structpb.NewStruct(map[string]any{"a": 1})
	if err != nil {
		t.Fatal(err)
	}
	dialer := func(context.Context, string) (net.Conn, error) { return nil, errors.New("unused") }
	typed := func(m *anypb.Any) *metricsv3.StatsSink {
		return &metricsv3.StatsSink{ConfigType: &metricsv3.StatsSink_TypedConfig{TypedConfig: m}}
	}
	cases := map[string]struct {
		cfg  *metricsv3.StatsSink
		deps SinkDeps
		want string
	}{
		"no typed config": {
			cfg:  &metricsv3.StatsSink{Name: "x"},
			want: "stats_sinks[0]: typed_config is required",
		},
		"undecodable typed config": {
			cfg:  typed(&anypb.Any{TypeUrl: "type.googleapis.com/no.such.Type"}),
			want: "stats_sinks[0].typed_config: ",
		},
		"unsupported type": {
			cfg:  typed(mustAny(t, st)),
			want: "stats_sinks[0].typed_config: google.protobuf.Struct is not supported by Outrigger",
		},
		"statsd without address": {
			cfg:  typed(mustAny(t, &metricsv3.StatsdSink{})),
			want: "stats_sinks[0].typed_config.address: a socket_address is required",
		},
		"dog_statsd without host": {
			cfg: typed(mustAny(t, &metricsv3.DogStatsdSink{DogStatsdSpecifier: &metricsv3.DogStatsdSink_Address{
				Address: &corev3.Address{Address: &corev3.Address_SocketAddress{SocketAddress: &corev3.SocketAddress{
					PortSpecifier: &corev3.SocketAddress_PortValue{PortValue: 8125}}}}}})),
			want: "stats_sinks[0].typed_config.address.socket_address: an address and a port_value are required",
		},
		"tcp cluster without dialer": {
			cfg:  typed(mustAny(t, &metricsv3.StatsdSink{StatsdSpecifier: &metricsv3.StatsdSink_TcpClusterName{TcpClusterName: "c"}})),
			want: "stats_sinks[0].typed_config.tcp_cluster_name: no cluster dialer available",
		},
		"tcp cluster unknown": {
			cfg:  typed(mustAny(t, &metricsv3.StatsdSink{StatsdSpecifier: &metricsv3.StatsdSink_TcpClusterName{TcpClusterName: "c"}})),
			deps: SinkDeps{DialCluster: dialer, HasCluster: func(string) bool { return false }},
			want: `stats_sinks[0].typed_config.tcp_cluster_name: unknown cluster "c"`,
		},
		"hystrix without factory": {
			cfg:  typed(mustAny(t, &metricsv3.HystrixSink{})),
			want: "stats_sinks[0].typed_config: envoy.config.metrics.v3.HystrixSink is not supported by Outrigger",
		},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			sinks, err := NewSinks([]*metricsv3.StatsSink{tc.cfg}, tc.deps)
			if err == nil {
				t.Fatalf("no error, want %q", tc.want)
			}
			if got := err.Error(); !strings.HasPrefix(got, tc.want) {
				t.Errorf("error %q, want it to start with %q", got, tc.want)
			}
			if sinks != nil {
				t.Errorf("sinks returned with an error: %v", sinks)
			}
		})
	}
}

// TestNewSinksReportsEveryError: each bad sink is reported, with its own
// index.
func TestNewSinksReportsEveryError(t *testing.T) {
	cfgs := []*metricsv3.StatsSink{
		{Name: "a"},
		{ConfigType: &metricsv3.StatsSink_TypedConfig{TypedConfig: mustAny(t, &metricsv3.StatsdSink{Prefix: "ok",
			StatsdSpecifier: &metricsv3.StatsdSink_Address{Address: socketAddress(8125, 0)}})}},
		{Name: "c"},
	}
	_, err := NewSinks(cfgs, SinkDeps{})
	want := "stats_sinks[0]: typed_config is required\nstats_sinks[2]: typed_config is required"
	if err == nil || err.Error() != want {
		t.Errorf("error %v, want %q", err, want)
	}
}

func TestNewSinksFactories(t *testing.T) {
	hystrix := &metricsv3.StatsSink{Name: "envoy.stat_sinks.hystrix",
		ConfigType: &metricsv3.StatsSink_TypedConfig{TypedConfig: mustAny(t, &metricsv3.HystrixSink{NumBuckets: 3})}}
	var gotName string
	want := NewHystrixSink(HystrixOptions{})
	sinks, err := NewSinks([]*metricsv3.StatsSink{hystrix}, SinkDeps{Factories: map[string]func(*metricsv3.StatsSink) (Sink, error){
		"envoy.config.metrics.v3.HystrixSink": func(cfg *metricsv3.StatsSink) (Sink, error) {
			gotName = cfg.GetName()
			return want, nil
		},
	}})
	if err != nil {
		t.Fatal(err)
	}
	if len(sinks) != 1 || sinks[0] != want || gotName != "envoy.stat_sinks.hystrix" {
		t.Errorf("factory sink: %v (config %q)", sinks, gotName)
	}
	failing := errors.New("num_buckets: too many")
	_, err = NewSinks([]*metricsv3.StatsSink{hystrix}, SinkDeps{Factories: map[string]func(*metricsv3.StatsSink) (Sink, error){
		"envoy.config.metrics.v3.HystrixSink": func(*metricsv3.StatsSink) (Sink, error) { return nil, failing },
	}})
	if !errors.Is(err, failing) || err.Error() != "stats_sinks[0].typed_config.num_buckets: too many" {
		t.Errorf("factory error %v", err)
	}
}

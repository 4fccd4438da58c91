package server

import (
	"context"
	"errors"
	"fmt"
	"net"
	"strconv"
	"time"

	clusterv3 "github.com/envoyproxy/go-control-plane/envoy/config/cluster/v3"
	corev3 "github.com/envoyproxy/go-control-plane/envoy/config/core/v3"
	metricsv3 "github.com/envoyproxy/go-control-plane/envoy/config/metrics/v3"
	otlpsinkv3 "github.com/envoyproxy/go-control-plane/envoy/extensions/stat_sinks/open_telemetry/v3"
	"google.golang.org/protobuf/proto"

	"github.com/outrigger-dev/outrigger/pkg/proxy/cluster"
	"github.com/outrigger-dev/outrigger/pkg/proxy/stats"
	"github.com/outrigger-dev/outrigger/pkg/proxy/stats/metricsservice"
	"github.com/outrigger-dev/outrigger/pkg/proxy/stats/otlpsink"
)

// defaultConnectTimeout is a cluster's connect_timeout when unset
// (Envoy's default).
const defaultConnectTimeout = 5 * time.Second

// hystrixSinkType is the full name of the dashboard sink's configuration.
var hystrixSinkType = string(proto.MessageName(&metricsv3.HystrixSink{}))

// buildSinks builds the bootstrap's stats_sinks. A statsd sink's
// tcp_cluster_name must name a static cluster, whose endpoints it dials.
func (s *Server) buildSinks(cfgs []*metricsv3.StatsSink) ([]stats.Sink, error) {
	return stats.NewSinks(cfgs, stats.SinkDeps{
		DialCluster: s.dialCluster,
		HasCluster:  func(name string) bool { return s.staticCluster(name) != nil },
		Factories: map[string]func(*metricsv3.StatsSink) (stats.Sink, error){
			hystrixSinkType: s.newHystrixSink,
			otlpSinkType:    s.newOTLPSink,
			metricsSvcType:  s.newMetricsServiceSink,
		},
	})
}

// otlpSinkType is the full name of the OpenTelemetry sink's configuration.
var otlpSinkType = string(proto.MessageName(&otlpsinkv3.SinkConfig{}))

// newOTLPSink builds an OpenTelemetry metrics sink, whose exports go
// through the configuration's clusters.
func (s *Server) newOTLPSink(cfg *metricsv3.StatsSink) (stats.Sink, error) {
	var sc otlpsinkv3.SinkConfig
	if err := cfg.GetTypedConfig().UnmarshalTo(&sc); err != nil {
		return nil, err
	}
	return otlpsink.New(&sc, otlpsink.Deps{
		OpenGRPC:   s.openGRPC,
		Cluster:    s.grpcCluster,
		Extensions: s.ext,
		Log:        s.logs.Logger("stats"),
	})
}

// metricsSvcType is the full name of the metrics service sink's
// configuration.
var metricsSvcType = string(proto.MessageName(&metricsv3.MetricsServiceConfig{}))

// newMetricsServiceSink builds a metrics service sink, which streams to
// a gRPC service through the configuration's clusters.
func (s *Server) newMetricsServiceSink(cfg *metricsv3.StatsSink) (stats.Sink, error) {
	var mc metricsv3.MetricsServiceConfig
	if err := cfg.GetTypedConfig().UnmarshalTo(&mc); err != nil {
		return nil, err
	}
	return metricsservice.New(&mc, metricsservice.Deps{
		OpenGRPC: s.openGRPC,
		Node:     s.node(),
		Log:      s.logs.Logger("stats"),
	})
}

// newHystrixSink builds the circuit-breaker dashboard sink; there is one
// stream per server, so a second one is a configuration error.
func (s *Server) newHystrixSink(cfg *metricsv3.StatsSink) (stats.Sink, error) {
	var hc metricsv3.HystrixSink
	if err := cfg.GetTypedConfig().UnmarshalTo(&hc); err != nil {
		return nil, err
	}
	if s.statsRT.hystrix != nil {
		return nil, errors.New("only one circuit-breaker dashboard sink may be configured")
	}
	if hc.GetNumBuckets() < 0 {
		return nil, fmt.Errorf("num_buckets: %d is negative", hc.GetNumBuckets())
	}
	sink := stats.NewHystrixSink(stats.HystrixOptions{
		NumBuckets: int(hc.GetNumBuckets()),
		Interval:   s.boot.GetStatsFlushInterval().AsDuration(),
		Clusters:   s.hystrixClusters,
	})
	s.statsRT.hystrix = sink
	return sink, nil
}

// hystrixClusters lists the static clusters for the dashboard, with the
// name their stats are kept under (alt_stat_name, when set) and their
// default-priority max_pending_requests in force (runtime overrides
// included, as Envoy reads it from the cluster's resource manager).
func (s *Server) hystrixClusters() []stats.HystrixCluster {
	cfgs := s.boot.GetStaticResources().GetClusters()
	out := make([]stats.HystrixCluster, 0, len(cfgs))
	for _, c := range cfgs {
		out = append(out, stats.HystrixCluster{Name: c.GetName(), StatName: c.GetAltStatName(), MaxPendingRequests: s.maxPendingRequests(c.GetName())})
	}
	return out
}

// maxPendingRequests is the default-priority max_pending_requests in
// force for the named cluster.
func (s *Server) maxPendingRequests(name string) uint64 {
	if s.clusters != nil {
		if c := s.clusters.Cluster(name); c != nil {
			return uint64(c.Thresholds(corev3.RoutingPriority_DEFAULT).MaxPendingRequests)
		}
	}
	return cluster.DefaultMaxPendingRequests
}

// BreakerEventsEnabled reports whether a circuit-breaker dashboard sink is
// configured; only then is /breaker_event_stream served.
func (s *Server) BreakerEventsEnabled() bool { return s.statsRT.hystrix != nil }

// SubscribeBreakerEvents implements admin.BreakerEventSource: one event
// set per stats flush, until cancel or shutdown (the channel then closes).
// Without a dashboard sink the channel is closed at once.
func (s *Server) SubscribeBreakerEvents() (<-chan []byte, func()) {
	if s.statsRT.hystrix == nil {
		ch := make(chan []byte)
		close(ch)
		return ch, func() {}
	}
	return s.statsRT.hystrix.Subscribe()
}

// staticCluster returns the named static cluster, or nil.
func (s *Server) staticCluster(name string) *clusterv3.Cluster {
	for _, c := range s.boot.GetStaticResources().GetClusters() {
		if c.GetName() == name {
			return c
		}
	}
	return nil
}

// dialCluster opens a TCP connection to an endpoint of a static cluster
// (a statsd sink's tcp_cluster_name), trying the endpoints in turn from
// where the previous dial left off, so that a dead endpoint is skipped.
func (s *Server) dialCluster(ctx context.Context, name string) (net.Conn, error) {
	c := s.staticCluster(name)
	if c == nil {
		return nil, fmt.Errorf("unknown cluster %q", name)
	}
	var addrs []string
	for _, lle := range c.GetLoadAssignment().GetEndpoints() {
		for _, le := range lle.GetLbEndpoints() {
			sa := le.GetEndpoint().GetAddress().GetSocketAddress()
			if sa != nil {
				addrs = append(addrs, net.JoinHostPort(sa.GetAddress(), strconv.FormatUint(uint64(sa.GetPortValue()), 10)))
			}
		}
	}
	if len(addrs) == 0 {
		return nil, fmt.Errorf("cluster %q has no endpoint", name)
	}
	timeout := c.GetConnectTimeout().AsDuration()
	if timeout <= 0 {
		timeout = defaultConnectTimeout
	}
	var errs []error
	start := int(s.statsRT.nextEndpoint.Add(1))
	for i := range addrs {
		addr := addrs[(start+i)%len(addrs)]
		d := net.Dialer{Timeout: timeout}
		conn, err := d.DialContext(ctx, "tcp", addr)
		if err == nil {
			return conn, nil
		}
		errs = append(errs, err)
	}
	return nil, fmt.Errorf("cluster %q: %w", name, errors.Join(errs...))
}

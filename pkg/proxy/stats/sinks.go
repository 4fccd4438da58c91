package stats

import (
	"context"
	"errors"
	"fmt"
	"math"
	"net"
	"strconv"

	corev3 "github.com/envoyproxy/go-control-plane/envoy/config/core/v3"
	metricsv3 "github.com/envoyproxy/go-control-plane/envoy/config/metrics/v3"
	graphitev3 "github.com/envoyproxy/go-control-plane/envoy/extensions/stat_sinks/graphite_statsd/v3"
	"google.golang.org/protobuf/types/known/wrapperspb"
)

// SinkDeps are what sink construction needs from the rest of the server.
type SinkDeps struct {
	// DialCluster opens a TCP connection to a host of the named cluster
	// (StatsdSink.tcp_cluster_name). Nil makes such sinks a config error.
	DialCluster func(ctx context.Context, cluster string) (net.Conn, error)
	// HasCluster reports whether a cluster of that name is configured; a
	// tcp_cluster_name naming no cluster is a configuration error, as in
	// Envoy. Nil accepts every name.
	HasCluster func(name string) bool
	// Factories build other sink types (such as the circuit-breaker
	// dashboard sink), keyed by the typed_config's full message name.
	Factories map[string]func(cfg *metricsv3.StatsSink) (Sink, error)
}

// ErrUnsupportedSink is wrapped when a stats_sinks entry has a type no
// factory builds.
var ErrUnsupportedSink = errors.New("is not supported by Outrigger")

// NewSinks builds the bootstrap's stats_sinks: statsd, dog_statsd and
// graphite_statsd here, other types through deps.Factories. Errors name the field path.
// Nothing is dialed yet: sinks connect at their first flush, so building
// them (as --mode validate does) sends no traffic.
func NewSinks(cfgs []*metricsv3.StatsSink, deps SinkDeps) ([]Sink, error) {
	var sinks []Sink
	var errs []error
	for i, cfg := range cfgs {
		path := fmt.Sprintf("stats_sinks[%d]", i)
		tc := cfg.GetTypedConfig()
		if tc == nil {
			errs = append(errs, fmt.Errorf("%s: typed_config is required", path))
			continue
		}
		m, err := tc.UnmarshalNew()
		if err != nil {
			errs = append(errs, fmt.Errorf("%s.typed_config: %w", path, err))
			continue
		}
		var sink Sink
		switch c := m.(type) {
		case *metricsv3.StatsdSink:
			sink, err = newStatsdFromConfig(c, deps)
		case *metricsv3.DogStatsdSink:
			sink, err = newTaggedStatsd(c, StatsdOptions{DogStatsD: true})
		case *graphitev3.GraphiteStatsdSink:
			sink, err = newTaggedStatsd(c, StatsdOptions{Graphite: true})
		default:
			name := string(m.ProtoReflect().Descriptor().FullName())
			f, ok := deps.Factories[name]
			if !ok {
				errs = append(errs, fmt.Errorf("%s.typed_config: %s %w", path, name, ErrUnsupportedSink))
				continue
			}
			sink, err = f(cfg)
		}
		if err != nil {
			errs = append(errs, fmt.Errorf("%s.typed_config.%w", path, err))
			continue
		}
		sinks = append(sinks, sink)
	}
	if err := errors.Join(errs...); err != nil {
		return nil, err
	}
	return sinks, nil
}

// newStatsdFromConfig builds a statsd sink: to a UDP address, or over TCP
// to a host of a cluster.
func newStatsdFromConfig(c *metricsv3.StatsdSink, deps SinkDeps) (Sink, error) {
	if cluster := c.GetTcpClusterName(); cluster != "" {
		if deps.DialCluster == nil {
			return nil, errors.New("tcp_cluster_name: no cluster dialer available")
		}
		if deps.HasCluster != nil && !deps.HasCluster(cluster) {
			return nil, fmt.Errorf("tcp_cluster_name: unknown cluster %q", cluster)
		}
		return NewStatsdSink(StatsdOptions{Prefix: c.GetPrefix(), ScaleToMilliseconds: c.GetScaleHistogramUnitsToMilliseconds(),
			Dial: func(ctx context.Context) (net.Conn, error) {
				return deps.DialCluster(ctx, cluster)
			}}), nil
	}
	dial, err := dialUDP(c.GetAddress())
	if err != nil {
		return nil, err
	}
	return NewStatsdSink(StatsdOptions{Prefix: c.GetPrefix(), Dial: dial, UDP: true,
		ScaleToMilliseconds: c.GetScaleHistogramUnitsToMilliseconds()}), nil
}

// taggedStatsdConfig is what the DogStatsD and Graphite sinks'
// configurations share.
type taggedStatsdConfig interface {
	GetAddress() *corev3.Address
	GetPrefix() string
	GetMaxBytesPerDatagram() *wrapperspb.UInt64Value
	GetScaleHistogramUnitsToMilliseconds() bool
}

// newTaggedStatsd builds a DogStatsD or Graphite sink (o selects the tag
// format), always over UDP.
func newTaggedStatsd(c taggedStatsdConfig, o StatsdOptions) (Sink, error) {
	dial, err := dialUDP(c.GetAddress())
	if err != nil {
		return nil, err
	}
	o.Prefix, o.Dial, o.UDP = c.GetPrefix(), dial, true
	o.MaxDatagram = int(min(c.GetMaxBytesPerDatagram().GetValue(), math.MaxInt32))
	o.ScaleToMilliseconds = c.GetScaleHistogramUnitsToMilliseconds()
	return NewStatsdSink(o), nil
}

// dialUDP returns a dialer for a sink's address. As in Envoy, the address
// of a statsd sink is always a UDP one: its protocol field is not read
// (its default, TCP, would otherwise turn every sink into a TCP one); TCP
// goes through tcp_cluster_name.
func dialUDP(a *corev3.Address) (func(context.Context) (net.Conn, error), error) {
	sa := a.GetSocketAddress()
	if sa == nil {
		return nil, errors.New("address: a socket_address is required")
	}
	port, ok := sa.GetPortSpecifier().(*corev3.SocketAddress_PortValue)
	if !ok || sa.GetAddress() == "" {
		return nil, errors.New("address.socket_address: an address and a port_value are required")
	}
	hostport := net.JoinHostPort(sa.GetAddress(), strconv.FormatUint(uint64(port.PortValue), 10))
	var d net.Dialer
	return func(ctx context.Context) (net.Conn, error) {
		ctx, cancel := context.WithTimeout(ctx, statsdWriteTimeout)
		defer cancel()
		return d.DialContext(ctx, "udp", hostport)
	}, nil
}

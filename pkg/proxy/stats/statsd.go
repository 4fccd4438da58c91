package stats

import (
	"context"
	"errors"
	"fmt"
	"net"
	"strconv"
	"sync"
	"time"

	corev3 "github.com/envoyproxy/go-control-plane/envoy/config/core/v3"
	metricsv3 "github.com/envoyproxy/go-control-plane/envoy/config/metrics/v3"
)

// DefaultStatsdPrefix prefixes statsd names when the sink sets no prefix
// (Envoy's is "envoy"; ours follows the neutral naming).
const DefaultStatsdPrefix = "proxy"

// statsdMaxDatagram bounds one UDP datagram: lines are batched up to it,
// below common path MTUs.
const statsdMaxDatagram = 1432

// statsdWriteTimeout bounds a flush's write to a TCP statsd server, so a
// stuck server cannot stall the flusher.
const statsdWriteTimeout = time.Second

// StatsdSink sends counters (deltas, "|c") and gauges ("|g") to a statsd
// server at every flush, over UDP (lines batched into datagrams) or TCP
// (one line each). In DogStatsD mode names are tag-extracted and tags are
// appended as "|#name:value,...".
type StatsdSink struct {
	prefix  string
	dog     bool
	maxSize int
	dial    func(ctx context.Context) (net.Conn, error)
	udp     bool

	mu   sync.Mutex
	conn net.Conn
	buf  []byte
	x    Extraction
}

// StatsdOptions configure a StatsdSink.
type StatsdOptions struct {
	// Prefix starts every name; empty means DefaultStatsdPrefix.
	Prefix string
	// DogStatsD selects tag-extracted names with DogStatsD tags.
	DogStatsD bool
	// MaxDatagram bounds UDP datagrams; zero means 1432 bytes.
	MaxDatagram int
	// UDP says the connection is datagram-oriented.
	UDP bool
	// Dial opens the connection; it is called at the first flush and again
	// after a write error.
	Dial func(ctx context.Context) (net.Conn, error)
}

// NewStatsdSink returns a statsd sink.
func NewStatsdSink(o StatsdOptions) *StatsdSink {
	if o.Prefix == "" {
		o.Prefix = DefaultStatsdPrefix
	}
	if o.MaxDatagram <= 0 {
		o.MaxDatagram = statsdMaxDatagram
	}
	return &StatsdSink{prefix: o.Prefix, dog: o.DogStatsD, maxSize: o.MaxDatagram, dial: o.Dial, udp: o.UDP}
}

// Flush sends the snapshot's counters and gauges.
func (k *StatsdSink) Flush(sn *Snapshot) error {
	k.mu.Lock()
	defer k.mu.Unlock()
	if k.conn == nil {
		c, err := k.dial(context.Background())
		if err != nil {
			return fmt.Errorf("statsd sink: %w", err)
		}
		k.conn = c
	}
	var err error
	k.buf = k.buf[:0]
	sn.Counters(func(name []byte, delta, _ uint64) {
		if err == nil && delta > 0 {
			err = k.line(sn, name, strconv.AppendUint(nil, delta, 10), "|c")
		}
	})
	sn.Gauges(func(name []byte, v int64) {
		if err == nil {
			err = k.line(sn, name, strconv.AppendInt(nil, v, 10), "|g")
		}
	})
	if err == nil {
		err = k.send()
	}
	if err != nil {
		_ = k.conn.Close()
		k.conn = nil
		return fmt.Errorf("statsd sink: %w", err)
	}
	return nil
}

// line appends one metric line, sending the batch first if it would
// overflow a datagram.
func (k *StatsdSink) line(sn *Snapshot, name, value []byte, typ string) error {
	start := len(k.buf)
	if start > 0 {
		k.buf = append(k.buf, '\n')
	}
	k.buf = append(append(k.buf, k.prefix...), '.')
	if k.dog {
		sn.TagProducer().Extract(name, &k.x)
		k.buf = append(k.buf, k.x.Name...)
	} else {
		k.buf = append(k.buf, name...)
	}
	k.buf = append(append(append(k.buf, ':'), value...), typ...)
	if k.dog && len(k.x.Tags) > 0 {
		k.buf = append(k.buf, "|#"...)
		for i, t := range k.x.Tags {
			if i > 0 {
				k.buf = append(k.buf, ',')
			}
			k.buf = append(append(append(k.buf, t.Name...), ':'), t.Value...)
		}
	}
	if !k.udp {
		return nil
	}
	if len(k.buf) > k.maxSize && start > 0 {
		ln := append([]byte(nil), k.buf[start+1:]...)
		k.buf = k.buf[:start]
		if err := k.send(); err != nil {
			return err
		}
		k.buf = append(k.buf[:0], ln...)
	}
	return nil
}

func (k *StatsdSink) send() error {
	if len(k.buf) == 0 {
		return nil
	}
	if !k.udp {
		k.buf = append(k.buf, '\n')
		_ = k.conn.SetWriteDeadline(time.Now().Add(statsdWriteTimeout))
	}
	_, err := k.conn.Write(k.buf)
	k.buf = k.buf[:0]
	return err
}

// Close closes the sink's connection.
func (k *StatsdSink) Close() error {
	k.mu.Lock()
	defer k.mu.Unlock()
	if k.conn == nil {
		return nil
	}
	err := k.conn.Close()
	k.conn = nil
	return err
}

// SinkDeps are what sink construction needs from the rest of the server.
type SinkDeps struct {
	// DialCluster opens a TCP connection to a host of the named cluster
	// (StatsdSink.tcp_cluster_name). Nil makes such sinks a config error.
	DialCluster func(ctx context.Context, cluster string) (net.Conn, error)
	// Factories build other sink types (such as the circuit-breaker
	// dashboard sink), keyed by the typed_config's full message name.
	Factories map[string]func(cfg *metricsv3.StatsSink) (Sink, error)
}

// ErrUnsupportedSink is wrapped when a stats_sinks entry has a type no
// factory builds.
var ErrUnsupportedSink = errors.New("is not supported by Outrigger")

// NewSinks builds the bootstrap's stats_sinks: statsd and dog_statsd
// here, other types through deps.Factories.
func NewSinks(cfgs []*metricsv3.StatsSink, deps SinkDeps) ([]Sink, error) {
	var sinks []Sink
	for i, cfg := range cfgs {
		path := fmt.Sprintf("stats_sinks[%d]", i)
		tc := cfg.GetTypedConfig()
		if tc == nil {
			return nil, fmt.Errorf("%s: typed_config is required", path)
		}
		m, err := tc.UnmarshalNew()
		if err != nil {
			return nil, fmt.Errorf("%s.typed_config: %w", path, err)
		}
		var sink Sink
		switch c := m.(type) {
		case *metricsv3.StatsdSink:
			sink, err = newStatsdFromConfig(c, deps)
		case *metricsv3.DogStatsdSink:
			var dial func(context.Context) (net.Conn, error)
			var udp bool
			dial, udp, err = dialAddress(c.GetAddress())
			sink = NewStatsdSink(StatsdOptions{Prefix: c.GetPrefix(), DogStatsD: true, Dial: dial, UDP: udp,
				MaxDatagram: int(c.GetMaxBytesPerDatagram().GetValue())})
		default:
			name := string(m.ProtoReflect().Descriptor().FullName())
			f, ok := deps.Factories[name]
			if !ok {
				return nil, fmt.Errorf("%s.typed_config: %s %w", path, name, ErrUnsupportedSink)
			}
			sink, err = f(cfg)
		}
		if err != nil {
			return nil, fmt.Errorf("%s: %w", path, err)
		}
		sinks = append(sinks, sink)
	}
	return sinks, nil
}

func newStatsdFromConfig(c *metricsv3.StatsdSink, deps SinkDeps) (Sink, error) {
	if cluster := c.GetTcpClusterName(); cluster != "" {
		if deps.DialCluster == nil {
			return nil, errors.New("tcp_cluster_name: no cluster dialer available")
		}
		return NewStatsdSink(StatsdOptions{Prefix: c.GetPrefix(), Dial: func(ctx context.Context) (net.Conn, error) {
			return deps.DialCluster(ctx, cluster)
		}}), nil
	}
	dial, udp, err := dialAddress(c.GetAddress())
	if err != nil {
		return nil, err
	}
	return NewStatsdSink(StatsdOptions{Prefix: c.GetPrefix(), Dial: dial, UDP: udp}), nil
}

// dialAddress returns a dialer for a socket address: UDP unless the
// address says TCP.
func dialAddress(a *corev3.Address) (func(context.Context) (net.Conn, error), bool, error) {
	sa := a.GetSocketAddress()
	if sa == nil {
		return nil, false, errors.New("address: a socket_address is required")
	}
	port, ok := sa.GetPortSpecifier().(*corev3.SocketAddress_PortValue)
	if !ok || sa.GetAddress() == "" {
		return nil, false, errors.New("address: socket_address needs an address and a port_value")
	}
	network := "udp"
	if sa.GetProtocol() == corev3.SocketAddress_TCP {
		network = "tcp"
	}
	hostport := net.JoinHostPort(sa.GetAddress(), strconv.FormatUint(uint64(port.PortValue), 10))
	var d net.Dialer
	return func(ctx context.Context) (net.Conn, error) {
		ctx, cancel := context.WithTimeout(ctx, statsdWriteTimeout)
		defer cancel()
		return d.DialContext(ctx, network, hostport)
	}, network == "udp", nil
}

// Package tcpproxy is the TCP proxy network filter
// (envoy.filters.network.tcp_proxy): each downstream connection gets a
// connection to a host of the configured cluster (or of one of the
// weighted clusters), and bytes flow both ways until both sides have
// ended. A FIN from one side is forwarded to the other as a half-close,
// as Envoy does; an error on either side closes both.
//
// Each direction of a connection reads into one buffer (bounded by the
// listener's per_connection_buffer_limit_bytes) and writes it out before
// reading again: a slow receiver stops the reading of its sender, which
// is the flow control Envoy gets from its watermarks, with at most one
// buffer in flight per direction. On Linux, plain TCP connections are
// relayed by an event loop per GOMAXPROCS (evloop_linux.go, relay_linux.go)
// until a read fills the largest buffer (a bulk transfer); tunnels, TLS,
// bulk transfers and other platforms (or builds tagged
// tcpproxy_goroutines) take a goroutine per direction (session.go). Stats
// are Envoy's, under tcp.<stat_prefix>.
package tcpproxy

import (
	"errors"
	"fmt"
	"net"
	"time"

	"github.com/cespare/xxhash/v2"
	tcpproxyv3 "github.com/envoyproxy/go-control-plane/envoy/extensions/filters/network/tcp_proxy/v3"
	typev3 "github.com/envoyproxy/go-control-plane/envoy/type/v3"
	"google.golang.org/protobuf/proto"

	"github.com/outrigger-dev/outrigger/pkg/proxy/accesslog"
	"github.com/outrigger-dev/outrigger/pkg/proxy/extension"
	"github.com/outrigger-dev/outrigger/pkg/proxy/filterstate"
	"github.com/outrigger-dev/outrigger/pkg/proxy/netfilter"
	"github.com/outrigger-dev/outrigger/pkg/proxy/upstream"
)

// Name is the filter's name in the proxy. spelling.
const Name = "proxy.filters.network.tcp_proxy"

// defaultIdleTimeout is Envoy's idle timeout when idle_timeout is unset.
const defaultIdleTimeout = time.Hour

// maxEarlyData is max_early_data_bytes' largest value (1 MiB), as Envoy's
// API validates it.
const maxEarlyData = 1 << 20

// Factory compiles TcpProxy configurations.
type Factory struct{}

var _ netfilter.Factory = Factory{}

// weighted is one of weighted_clusters' clusters.
type weighted struct {
	name   string
	weight uint64
	// metadataMatch is its metadata_match merged over the filter's, the
	// filter's when it has none.
	metadataMatch *upstream.MetadataMatch
}

// config is a compiled TcpProxy.
type config struct {
	statPrefix string
	// cluster is the one cluster, when weighted is empty.
	cluster string
	// metadataMatch is metadata_match's "envoy.lb" criteria, which choose
	// a load-balancer subset of the cluster; nil for none.
	metadataMatch *upstream.MetadataMatch
	// weighted lists weighted_clusters (no zero weights), totalWeight
	// their sum.
	weighted    []weighted
	totalWeight uint64

	idleTimeout time.Duration // 0: none
	// downIdle and upIdle are downstream_idle_timeout and
	// upstream_idle_timeout: how long each peer may send nothing (0: no
	// limit).
	downIdle       time.Duration
	upIdle         time.Duration
	maxAttempts    uint32
	backoffBase    time.Duration // 0: retry at once
	backoffMax     time.Duration
	maxDuration    time.Duration // 0: none
	durationJitter float64       // percent of maxDuration, 0..100

	tunnel *tunnel // nil: plain TCP upstream
	// hash is hash_policy, nil for none.
	hash *hashPolicy

	flushInterval  time.Duration // periodic access logs; 0: none
	logOnConnected bool
	logOnStart     bool

	// pp is proxy_protocol_tlvs and its merge policy.
	pp ppTLVs
	// checkDrainClose is check_drain_close: after each read or write, a
	// connection whose listener drains may close.
	checkDrainClose bool
	// earlyData is max_early_data_bytes: the downstream is read while
	// the upstream connects, up to this many bytes (plus one read); -1
	// when unset (nothing is read before the upstream is there).
	earlyData int
	// connectOnData is upstream_connect_mode ON_DOWNSTREAM_DATA: the
	// upstream is connected once the downstream's first bytes came.
	connectOnData bool
}

// Compile implements netfilter.Factory. Errors name the field path below
// typed_config.
func (Factory) Compile(msg proto.Message, ctx netfilter.Context) (netfilter.Filter, error) {
	cfg, ok := msg.(*tcpproxyv3.TcpProxy)
	if !ok {
		return nil, fmt.Errorf("expected a %s, got %T", proto.MessageName(&tcpproxyv3.TcpProxy{}), msg)
	}
	c, err := compileWith(cfg, ctx.Extensions)
	if err != nil {
		return nil, err
	}
	if err := checkPostTunnel(c, ctx.Clusters); err != nil {
		return nil, err
	}
	var logs netfilter.AccessLogger = noLogs{}
	if len(cfg.GetAccessLog()) > 0 {
		if ctx.AccessLogs == nil {
			return nil, errors.New("access_log: no access loggers in this context")
		}
		if logs, err = ctx.AccessLogs("access_log", cfg.GetAccessLog()); err != nil {
			return nil, err
		}
	}
	od, err := compileOnDemand(cfg, ctx)
	if err != nil {
		return nil, err
	}
	p := newProxy(c, logs, ctx)
	p.onDemand = od
	return p, nil
}

// compile is compileWith without extensions.
func compile(cfg *tcpproxyv3.TcpProxy) (*config, error) { return compileWith(cfg, nil) }

// compileWith checks a TcpProxy and reads what it configures; reg resolves
// the extensions it names (nil resolves none). Fields that
// Outrigger does not implement are refused with their path (the loader's
// support check refuses them too; this guards other callers).
func compileWith(cfg *tcpproxyv3.TcpProxy, reg *extension.Registry) (*config, error) {
	var errs []error
	fail := func(format string, args ...any) { errs = append(errs, fmt.Errorf(format, args...)) }
	c := &config{statPrefix: cfg.GetStatPrefix(), maxAttempts: 1, idleTimeout: defaultIdleTimeout}
	if c.statPrefix == "" {
		fail("stat_prefix: required")
	}
	// As Envoy's: only the "envoy.lb" entry counts, and a weighted
	// cluster's criteria merge over the filter's.
	if s, ok := cfg.GetMetadataMatch().GetFilterMetadata()[upstream.LBMetadataKey]; ok {
		c.metadataMatch = upstream.NewMetadataMatch(s.GetFields())
	}
	switch spec := cfg.GetClusterSpecifier().(type) {
	case *tcpproxyv3.TcpProxy_Cluster:
		if spec.Cluster == "" {
			fail("cluster: must not be empty")
		}
		c.cluster = spec.Cluster
	case *tcpproxyv3.TcpProxy_WeightedClusters:
		cls := spec.WeightedClusters.GetClusters()
		if len(cls) == 0 {
			fail("weighted_clusters.clusters: at least one cluster is required")
		}
		for i, cw := range cls {
			p := fmt.Sprintf("weighted_clusters.clusters[%d]", i)
			if cw.GetName() == "" {
				fail("%s.name: must not be empty", p)
			}
			if cw.GetWeight() == 0 {
				continue // never picked, as in Envoy
			}
			w := weighted{name: cw.GetName(), weight: uint64(cw.GetWeight()), metadataMatch: c.metadataMatch}
			if s, ok := cw.GetMetadataMatch().GetFilterMetadata()[upstream.LBMetadataKey]; ok {
				w.metadataMatch = c.metadataMatch.Merge(s.GetFields())
			}
			c.weighted = append(c.weighted, w)
			c.totalWeight += uint64(cw.GetWeight())
		}
		if len(cls) > 0 && c.totalWeight == 0 {
			fail("weighted_clusters.clusters: the weights must not all be 0")
		}
	default:
		fail("cluster_specifier: cluster or weighted_clusters is required")
	}
	if d := cfg.GetIdleTimeout(); d != nil {
		c.idleTimeout = d.AsDuration()
		if c.idleTimeout < 0 {
			fail("idle_timeout: must not be negative")
		}
	}
	if n := cfg.GetMaxConnectAttempts(); n != nil {
		if n.GetValue() < 1 {
			fail("max_connect_attempts: must be at least 1")
		}
		c.maxAttempts = n.GetValue()
	}
	if b := cfg.GetBackoffOptions(); b != nil {
		c.backoffBase = b.GetBaseInterval().AsDuration()
		c.backoffMax = 10 * c.backoffBase
		if b.GetMaxInterval() != nil {
			c.backoffMax = b.GetMaxInterval().AsDuration()
		}
		if c.backoffBase <= 0 {
			fail("backoff_options.base_interval: must be greater than 0")
		}
		if c.backoffMax < c.backoffBase {
			fail("backoff_options.max_interval: must not be less than base_interval")
		}
	}
	if d := cfg.GetMaxDownstreamConnectionDuration(); d != nil {
		c.maxDuration = d.AsDuration()
		if c.maxDuration < time.Millisecond {
			fail("max_downstream_connection_duration: must be at least 1ms")
		}
		if j := cfg.GetMaxDownstreamConnectionDurationJitterPercentage(); j != nil {
			c.durationJitter = j.GetValue()
			if c.durationJitter < 0 || c.durationJitter > 100 {
				fail("max_downstream_connection_duration_jitter_percentage.value: must be between 0 and 100")
			}
		}
	}
	// The deprecated fields apply unless access_log_options has its own,
	// as in Envoy.
	//lint:ignore SA1019 Envoy still accepts the deprecated fields.
	if d := cfg.GetAccessLogFlushInterval(); d != nil {
		c.flushInterval = d.AsDuration()
	}
	//lint:ignore SA1019 Envoy still accepts the deprecated fields.
	c.logOnConnected = cfg.GetFlushAccessLogOnConnected()
	if o := cfg.GetAccessLogOptions(); o != nil {
		if d := o.GetAccessLogFlushInterval(); d != nil {
			c.flushInterval = d.AsDuration()
		}
		if o.GetFlushAccessLogOnConnected() {
			c.logOnConnected = true
		}
		c.logOnStart = o.GetFlushAccessLogOnStart()
	}
	if c.flushInterval != 0 && c.flushInterval < time.Millisecond {
		fail("access_log_options.access_log_flush_interval: must be at least 1ms")
	}
	if d := cfg.GetDownstreamIdleTimeout(); d != nil {
		c.downIdle = d.AsDuration()
		if c.downIdle < 0 {
			fail("downstream_idle_timeout: must not be negative")
		}
	}
	if d := cfg.GetUpstreamIdleTimeout(); d != nil {
		c.upIdle = d.AsDuration()
		if c.upIdle < 0 {
			fail("upstream_idle_timeout: must not be negative")
		}
	}
	if hp := cfg.GetHashPolicy(); len(hp) > 0 {
		h, err := compileHashPolicy(hp)
		if err != nil {
			errs = append(errs, err)
		}
		c.hash = h
	}
	if tc := cfg.GetTunnelingConfig(); tc != nil {
		t, err := compileTunnel(tc, reg)
		if err != nil {
			errs = append(errs, prefixErrors("tunneling_config.", err)...)
		}
		c.tunnel = t
	}
	pp, err := compilePPTLVs(cfg)
	if err != nil {
		errs = append(errs, err)
	}
	c.pp = pp
	c.earlyData = -1
	if m := cfg.GetMaxEarlyDataBytes(); m != nil {
		if m.GetValue() > maxEarlyData {
			fail("max_early_data_bytes.value: must be at most %d", maxEarlyData)
		}
		c.earlyData = int(min(m.GetValue(), maxEarlyData))
	}
	// ON_DOWNSTREAM_TLS_HANDSHAKE is IMMEDIATE here: the listener hands a
	// TLS connection to its filter chain once its handshake is done.
	if mode := cfg.GetUpstreamConnectMode(); mode != tcpproxyv3.UpstreamConnectMode_IMMEDIATE && c.earlyData < 0 {
		fail("max_early_data_bytes: must be set when upstream_connect_mode is %s", mode)
	}
	c.connectOnData = cfg.GetUpstreamConnectMode() == tcpproxyv3.UpstreamConnectMode_ON_DOWNSTREAM_DATA
	c.checkDrainClose = cfg.GetCheckDrainClose().GetValue()
	if err := errors.Join(errs...); err != nil {
		return nil, err
	}
	return c, nil
}

// hashPolicy is tcp_proxy's hash_policy: the hash key ring hash and
// maglev clusters route a connection on, as Envoy's network HashPolicyImpl
// computes it.
type hashPolicy struct {
	// sourceIP hashes the downstream's address; otherwise filterState
	// names a connection filter state object, which hashes when it is
	// hashable (set_filter_state's envoy.hashable_string); no hash
	// otherwise, as Envoy's when the object is missing or is not.
	sourceIP    bool
	filterState string
}

// compileHashPolicy reads hash_policy (one entry at most, as the API
// allows).
func compileHashPolicy(list []*typev3.HashPolicy) (*hashPolicy, error) {
	if len(list) > 1 {
		return nil, errors.New("hash_policy: at most one entry is allowed")
	}
	switch spec := list[0].GetPolicySpecifier().(type) {
	case *typev3.HashPolicy_SourceIp_:
		return &hashPolicy{sourceIP: true}, nil
	case *typev3.HashPolicy_FilterState_:
		if spec.FilterState.GetKey() == "" {
			return nil, errors.New("hash_policy[0].filter_state.key: required")
		}
		return &hashPolicy{filterState: spec.FilterState.GetKey()}, nil
	default:
		return nil, errors.New("hash_policy[0].policy_specifier: source_ip or filter_state is required")
	}
}

// of computes the hash key of a downstream connection: the xxHash64 of
// its remote IP (without port), or its filter state object's hash, or
// nothing.
func (h *hashPolicy) of(c net.Conn) (uint64, bool) {
	if h == nil {
		return 0, false
	}
	if !h.sourceIP {
		v, _ := netfilter.FilterStateOf(c, h.filterState)
		if o, ok := v.(filterstate.Hashable); ok {
			return o.Hash()
		}
		return 0, false
	}
	ta, ok := c.RemoteAddr().(*net.TCPAddr)
	if !ok {
		return 0, false
	}
	return xxhash.Sum64String(ta.AddrPort().Addr().String()), true
}

// noLogs is the access_log list of a proxy without one.
type noLogs struct{}

func (noLogs) Empty() bool                                        { return true }
func (noLogs) Log(buf []byte, _ *accesslog.Entry) ([]byte, error) { return buf, nil }
func (noLogs) Close() error                                       { return nil }

// prefixErrors prefixes every error joined in err.
func prefixErrors(prefix string, err error) []error {
	if multi, ok := err.(interface{ Unwrap() []error }); ok {
		var out []error
		for _, e := range multi.Unwrap() {
			out = append(out, prefixErrors(prefix, e)...)
		}
		return out
	}
	return []error{fmt.Errorf("%s%w", prefix, err)}
}

// checkPostTunnel refuses a POST tunnel to a known cluster that speaks
// HTTP/1.1: the stream would have to be chunked both ways, which
// Outrigger does not do. A cluster unknown now fails its connections.
func checkPostTunnel(c *config, clusters netfilter.Clusters) error {
	if c.tunnel == nil || !c.tunnel.usePost || clusters == nil {
		return nil
	}
	names := []string{c.cluster}
	if len(c.weighted) > 0 {
		names = names[:0]
		for _, w := range c.weighted {
			names = append(names, w.name)
		}
	}
	for _, n := range names {
		if cl := clusters.Cluster(n); cl != nil && !cl.HTTP2() {
			return fmt.Errorf("tunneling_config.use_post: cluster %q speaks HTTP/1.1; POST tunnels need an HTTP/2 cluster in Outrigger", n)
		}
	}
	return nil
}

// Package udpproxy is the UDP proxy listener filter
// (envoy.filters.udp_listener.udp_proxy): a non-transparent proxy between
// UDP clients and servers. Datagrams from one client (a session, keyed by
// the listener address they came in on and the client's address) go to one
// host of the routed cluster, picked by the cluster's load balancer, from
// a socket of the session's own; the host's datagrams go back to the
// client from the listener's socket. A session ends after idle_timeout
// without datagrams either way. Sessions count against the cluster's
// max_connections circuit breaker, which bounds them. With
// tunneling_config a session goes instead over an HTTP/2 stream to a host
// of the cluster, a CONNECT-UDP extended CONNECT (RFC 9298) or a POST
// (tunnel.go). Stats are Envoy's, under udp.<stat_prefix>. and
// cluster.<name>.udp.
package udpproxy

import (
	"errors"
	"fmt"
	"net/netip"
	"time"

	"github.com/cespare/xxhash/v2"
	accesslogv3 "github.com/envoyproxy/go-control-plane/envoy/config/accesslog/v3"
	udpproxyv3 "github.com/envoyproxy/go-control-plane/envoy/extensions/filters/udp/udp_proxy/v3"
	"google.golang.org/protobuf/proto"

	"github.com/outrigger-dev/outrigger/pkg/proxy/netfilter"
	"github.com/outrigger-dev/outrigger/pkg/proxy/sockopt"
	"github.com/outrigger-dev/outrigger/pkg/proxy/udpfilter"
)

// Name is the filter's name in the proxy. spelling.
const Name = "proxy.filters.udp_listener.udp_proxy"

// defaultIdleTimeout is Envoy's session idle timeout.
const defaultIdleTimeout = time.Minute

// Factory compiles UdpProxyConfig configurations.
type Factory struct{}

var _ udpfilter.Factory = Factory{}

// config is a compiled UdpProxyConfig.
type config struct {
	statPrefix string
	// cluster is the deprecated single cluster; else matcher routes.
	cluster string
	matcher *matcher
	// clusters are every cluster the configuration names.
	clusters map[string]bool

	idleTimeout time.Duration
	perPacket   bool
	// hash is the hash_policies entry, nil for none.
	hash *hashPolicy
	// maxDatagram is the upstream sockets' largest datagram.
	maxDatagram int
	// flushInterval is access_log_options.access_log_flush_interval:
	// sessions are also logged periodically (0: only when they end).
	flushInterval time.Duration
	// originalSrc is use_original_src_ip: the upstream sockets send from
	// the client's IP address.
	originalSrc bool
	// sessionFilters are session_filters, compiled: each session gets
	// its own filter of each.
	sessionFilters []udpfilter.SessionFilterConfig
	// tunnel is tunneling_config, nil without: sessions then go over
	// HTTP/2 streams instead of UDP sockets.
	tunnel *tunnelConfig
	// flushOnTunnelConnected logs each session when its tunnel opens
	// (access_log_options.flush_access_log_on_tunnel_connected).
	flushOnTunnelConnected bool
}

// hashPolicy is Envoy's UDP hash policy: the downstream's IP, or a fixed
// key.
type hashPolicy struct {
	sourceIP bool
	key      uint64
}

// of is the hash key of a session from peer, as Envoy's UDP HashPolicyImpl
// computes it: the xxHash64 of the source IP (without port) or of the key.
func (h *hashPolicy) of(peer netip.AddrPort) (uint64, bool) {
	if h == nil {
		return 0, false
	}
	if h.sourceIP {
		return xxhash.Sum64String(peer.Addr().Unmap().String()), true
	}
	return h.key, true
}

// Compile implements udpfilter.Factory. Errors name the field path below
// typed_config.
func (Factory) Compile(msg proto.Message, ctx udpfilter.Context) (udpfilter.Filter, error) {
	cfg, ok := msg.(*udpproxyv3.UdpProxyConfig)
	if !ok {
		return nil, fmt.Errorf("expected a %s, got %T", proto.MessageName(&udpproxyv3.UdpProxyConfig{}), msg)
	}
	c, err := compile(cfg)
	if err != nil {
		return nil, err
	}
	if tc := cfg.GetTunnelingConfig(); tc != nil {
		if c.tunnel, err = compileTunnel(tc, ctx.Extensions); err != nil {
			return nil, errors.Join(prefixErrors("tunneling_config.", err)...)
		}
		if err := checkTunnelClusters(c, ctx.Clusters); err != nil {
			return nil, err
		}
	}
	if c.sessionFilters, err = compileSessionFilters(ctx, cfg.GetSessionFilters()); err != nil {
		return nil, err
	}
	logs, err := compileLogs(ctx, "access_log", cfg.GetAccessLog())
	if err != nil {
		return nil, err
	}
	proxyLogs, err := compileLogs(ctx, "proxy_access_log", cfg.GetProxyAccessLog())
	if err != nil {
		return nil, err
	}
	return newProxy(c, logs, proxyLogs, ctx), nil
}

// compileLogs compiles an access log list; nil for none.
func compileLogs(ctx udpfilter.Context, field string, cfgs []*accesslogv3.AccessLog) (netfilter.AccessLogger, error) {
	if len(cfgs) == 0 {
		return nil, nil
	}
	if ctx.AccessLogs == nil {
		return nil, errors.New(field + ": no access loggers in this context")
	}
	return ctx.AccessLogs(field, cfgs)
}

// compile checks a UdpProxyConfig and reads what it configures. Fields
// that Outrigger does not implement are refused with their path (the
// loader's support check refuses them too; this guards other callers).
func compile(cfg *udpproxyv3.UdpProxyConfig) (*config, error) {
	var errs []error
	fail := func(format string, args ...any) { errs = append(errs, fmt.Errorf(format, args...)) }
	c := &config{
		statPrefix:  cfg.GetStatPrefix(),
		idleTimeout: defaultIdleTimeout,
		perPacket:   cfg.GetUsePerPacketLoadBalancing(),
		clusters:    map[string]bool{},
		maxDatagram: udpfilter.DefaultMaxDatagramSize,
	}
	if c.statPrefix == "" {
		fail("stat_prefix: required")
	}
	switch spec := cfg.GetRouteSpecifier().(type) {
	case *udpproxyv3.UdpProxyConfig_Cluster:
		//lint:ignore SA1019 Envoy still accepts the deprecated field.
		c.cluster = spec.Cluster
		if c.cluster == "" {
			fail("cluster: must not be empty")
		}
		c.clusters[c.cluster] = true
	case *udpproxyv3.UdpProxyConfig_Matcher:
		m, err := compileMatcher(spec.Matcher, c.clusters)
		if err != nil {
			errs = append(errs, fmt.Errorf("matcher.%w", err))
		}
		c.matcher = m
	default:
		fail("route_specifier: matcher (or the deprecated cluster) is required")
	}
	if d := cfg.GetIdleTimeout(); d != nil {
		c.idleTimeout = d.AsDuration()
		if c.idleTimeout <= 0 {
			fail("idle_timeout: must be greater than 0")
		}
	}
	if hp := cfg.GetHashPolicies(); len(hp) > 0 {
		if len(hp) > 1 {
			fail("hash_policies: at most one entry is allowed")
		}
		switch spec := hp[0].GetPolicySpecifier().(type) {
		case *udpproxyv3.UdpProxyConfig_HashPolicy_SourceIp:
			if !spec.SourceIp {
				fail("hash_policies[0].source_ip: must be true")
			}
			c.hash = &hashPolicy{sourceIP: true}
		case *udpproxyv3.UdpProxyConfig_HashPolicy_Key:
			if spec.Key == "" {
				fail("hash_policies[0].key: must not be empty")
			}
			c.hash = &hashPolicy{key: xxhash.Sum64String(spec.Key)}
		default:
			fail("hash_policies[0].policy_specifier: source_ip or key is required")
		}
	}
	if sc := cfg.GetUpstreamSocketConfig(); sc != nil {
		n, err := udpfilter.CompileSocketConfig(sc)
		if err != nil {
			errs = append(errs, fmt.Errorf("upstream_socket_config.%w", err))
		}
		c.maxDatagram = n
	}
	if cfg.GetUseOriginalSrcIp() {
		// As Envoy, a platform without transparent sockets refuses it.
		if _, err := sockopt.Transparent(false); err != nil {
			fail("use_original_src_ip: %v", err)
		}
		c.originalSrc = true
	}
	if cfg.GetTunnelingConfig() != nil && c.perPacket {
		// As Envoy: a tunnel is per session.
		fail("tunneling_config: cannot be set with use_per_packet_load_balancing")
	}
	if o := cfg.GetAccessLogOptions(); o != nil {
		if d := o.GetAccessLogFlushInterval(); d != nil {
			c.flushInterval = d.AsDuration()
			if c.flushInterval < time.Millisecond {
				fail("access_log_options.access_log_flush_interval: must be at least 1ms")
			}
		}
		// As Envoy, without a tunnel it has nothing to do.
		c.flushOnTunnelConnected = o.GetFlushAccessLogOnTunnelConnected()
	}
	if err := errors.Join(errs...); err != nil {
		return nil, err
	}
	return c, nil
}

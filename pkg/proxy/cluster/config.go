package cluster

import (
	"fmt"
	"maps"
	"math"
	"net"
	"slices"
	"time"

	clusterv3 "github.com/envoyproxy/go-control-plane/envoy/config/cluster/v3"
	corev3 "github.com/envoyproxy/go-control-plane/envoy/config/core/v3"

	"github.com/outrigger-dev/outrigger/pkg/proxy/extension"
	"github.com/outrigger-dev/outrigger/pkg/proxy/healthcheck"
	"github.com/outrigger-dev/outrigger/pkg/proxy/lb"
	"github.com/outrigger-dev/outrigger/pkg/proxy/outlier"
	"github.com/outrigger-dev/outrigger/pkg/proxy/router"
	taptransport "github.com/outrigger-dev/outrigger/pkg/proxy/tap/transport"
	"github.com/outrigger-dev/outrigger/pkg/proxy/tcpstats"
	"github.com/outrigger-dev/outrigger/pkg/proxy/tlsconfig"
	"github.com/outrigger-dev/outrigger/pkg/proxy/upstream"
	"github.com/outrigger-dev/outrigger/pkg/proxy/upstreamproxyprotocol"
)

// defaultConnectTimeout applies when connect_timeout is unset (Envoy's).
const defaultConnectTimeout = 5 * time.Second

// defaultReadBuffer is the size of an HTTP/1.1 connection's read buffer;
// per_connection_buffer_limit_bytes can only make it smaller. The buffer
// is held while the connection is lent, not while it is idle in its pool
// (see http1Pool.put). A
// connection the connection manager waits on for its response gives it
// back meanwhile and reads the response with a responseReadBuffer: 32 KiB
// for every lent connection would cost more resident memory under load
// than pooled connections holding 16 KiB each, as the buffers in use
// follow the requests in flight.
const defaultReadBuffer = 16 << 10

// responseReadBuffer is the read buffer of an HTTP/1.1 connection that
// takes it only once its response is readable (upstream.ReadBuffers):
// a 16 KiB body with its head in one read. Such a buffer is held only
// while a response is read, not while a lent connection waits for one,
// so the buffers in use follow the responses being read, a handful.
const responseReadBuffer = 32 << 10

// minReadBuffer keeps a tiny per_connection_buffer_limit_bytes from making
// status lines and headers unreadable.
const minReadBuffer = 4 << 10

// settings is a cluster's configuration, checked and converted.
type settings struct {
	name              string
	observabilityName string
	// metadata is the cluster's metadata (%CLUSTER_METADATA%), nil when
	// it has none.
	metadata       *corev3.Metadata
	connectTimeout time.Duration
	// bufferLimit is per_connection_buffer_limit_bytes, 0 when unset.
	bufferLimit uint32
	// preconnect is preconnect_policy.per_upstream_preconnect_ratio, 0
	// for none (preconnect.go).
	preconnect float64
	// track is track_cluster_stats (and the deprecated
	// track_timeout_budgets): the optional histograms to keep.
	track    trackedStats
	protocol protocolSettings
	// keepalive is upstream_connection_options.tcp_keepalive, nil for
	// none (Envoy enables no TCP keep-alive upstream by default).
	keepalive *net.KeepAliveConfig
	// happyEyeballs orders the addresses of endpoints with
	// additional_addresses (upstream_connection_options.happy_eyeballs_config).
	happyEyeballs happyEyeballs
	// drop is load_assignment.policy.drop_overloads (see
	// buildDropOverload).
	drop dropOverload
	// bind is upstream_bind_config, nil for none.
	bind *bindSettings
	// tls is the transport_socket's upstream TLS, nil for plaintext
	// (built by the manager, which has the secrets).
	tls *tlsconfig.Client
	// tap is the tap transport socket over the TLS or plaintext one, nil
	// for none.
	tap *taptransport.Socket
	// pp is the upstream PROXY protocol transport socket, nil for none:
	// each new connection starts with its header.
	pp *upstreamproxyprotocol.Socket
	// iu is the internal_upstream transport socket, nil for none: the
	// metadata its connections to internal listeners pass on.
	iu *internalUpstream
	// h11 is the http_11_proxy transport socket, nil for none: hosts with
	// a proxy are reached through it with CONNECT.
	h11 *http11Proxy
	// tcpStats is the tcp_stats transport socket, nil for none: each
	// connection's TCP_INFO goes to cluster.<name>.tcp_stats.
	tcpStats   *tcpstats.Stats
	thresholds [numPriorities]Thresholds
	// perHostCx is each priority's per_host_thresholds max_connections
	// (buildPerHostThresholds).
	perHostCx [numPriorities]perHostLimit
	// sockets are transport_socket_matches (socketmatch.go).
	sockets socketMatches
	// outlier is outlier_detection, nil for none (outlier.go).
	outlier *outlier.Config
	lb      lb.Config
	// policy is the load-balancing policy (lb_policy with its config, or
	// load_balancing_policy); nil for an ORIGINAL_DST cluster, which
	// balances by its own rules.
	policy lb.Policy
	// hashPolicy is the policy's own hash_policy (lb.HashPolicyOf), nil
	// when it has none: see withLbHashPolicy.
	hashPolicy *router.HashPolicy
	// zone is the zone-aware routing's parameters, used when the cluster
	// manager has a local cluster.
	zone zoneSettings
	// subsets is lb_subset_config, nil without subsets.
	subsets *lb.SubsetConfig
	// priorities are a STATIC cluster's hosts; dns is a DNS cluster's
	// resolution (its hosts come from the answers).
	priorities [][]*upstream.Host
	dns        *dnsSettings
	// origDst is an ORIGINAL_DST cluster's settings (its hosts are
	// created as connections arrive), nil for other types.
	origDst *origDstSettings
	// eds is an EDS cluster's settings (its hosts come from the endpoint
	// discovery service), nil for other types.
	eds *edsSettings
	// dfp is a dynamic_forward_proxy cluster's settings (cluster_type;
	// its hosts come from a DNS cache), nil for other types.
	dfp *dfpSettings
	// aggregate is an aggregate cluster's settings (aggregate.go), nil
	// for other types.
	aggregate *aggregateSettings
	// hc is the cluster's health check, nil for none;
	// ignoreHealthOnRemoval is ignore_health_on_host_removal.
	hc                    *healthcheck.Config
	ignoreHealthOnRemoval bool
	// closeOnHealthFailure is close_connections_on_host_health_failure:
	// a host that active health checking fails or outlier detection
	// ejects loses its TCP proxy connections at once (hostFailed).
	closeOnHealthFailure bool
	// closeOnSetChange is common_lb_config.close_connections_on_host_set_change:
	// every host's connections drain when hosts join or leave (see
	// drainAllHosts).
	closeOnSetChange bool
	// overrideStatuses are the health statuses a host asked for by
	// address may have (common_lb_config.override_host_status).
	overrideStatuses overrideStatuses
	// notes are things worth a warning that are not errors: settings
	// Envoy ignores for the cluster's type, accepted as Envoy does.
	notes []string
}

// readBufferSize is the read buffer of the cluster's HTTP/1.1
// connections: the default, or the buffer limit when that is smaller.
func (s *settings) readBufferSize() int {
	if s.bufferLimit == 0 || s.bufferLimit >= defaultReadBuffer {
		return defaultReadBuffer
	}
	return max(int(s.bufferLimit), minReadBuffer)
}

// responseBufferSize is the read buffer a connection takes once its
// response is readable: responseReadBuffer, or the buffer limit when
// that is smaller, and never smaller than readBufferSize.
func (s *settings) responseBufferSize() int {
	if s.bufferLimit == 0 || s.bufferLimit >= responseReadBuffer {
		return responseReadBuffer
	}
	return max(int(s.bufferLimit), s.readBufferSize())
}

// buildSettings checks a cluster's configuration and converts it. Every
// problem is reported, each with the path of its field relative to the
// cluster. Fields that validation already refuses (unsupported types and
// policies) are checked again, so that a cluster never runs with a setting
// it would silently ignore.
func buildSettings(c *clusterv3.Cluster, reg *extension.Registry) (*settings, []error) {
	var errs []error
	s := &settings{
		name:              c.GetName(),
		observabilityName: c.GetName(),
		metadata:          c.GetMetadata(),
		connectTimeout:    defaultConnectTimeout,
		bufferLimit:       orDefault(c.GetPerConnectionBufferLimitBytes(), 0),
		track:             trackedStatsOf(c),
		lb: lb.Config{
			OverprovisioningFactor: lb.DefaultOverprovisioningFactor,
			PanicThreshold:         lb.DefaultPanicThreshold,
		},
	}
	if s.name == "" {
		errs = append(errs, configErrorf("name", "required"))
	}
	if alt := c.GetAltStatName(); alt != "" {
		s.observabilityName = alt
	}
	// The DNS cluster extension is a DNS cluster in another form.
	dnsType, fromType := fromDNSClusterType(c, reg)
	if fromType {
		c = dnsType.cluster
		s.notes = append(s.notes, dnsType.notes...)
		errs = append(errs, dnsType.errs...)
	}
	isDNS, isOrigDst, isEDS, isCustom, isAggregate := false, false, false, false, false
	switch t := c.GetType(); {
	case c.GetClusterType() != nil && isAggregateType(c.GetClusterType().GetName()):
		isAggregate = true
	case c.GetClusterType() != nil:
		isCustom = true
	case t == clusterv3.Cluster_EDS:
		isEDS = true
	case t == clusterv3.Cluster_STRICT_DNS || t == clusterv3.Cluster_LOGICAL_DNS:
		isDNS = true
	case t == clusterv3.Cluster_ORIGINAL_DST:
		isOrigDst = true
	case t != clusterv3.Cluster_STATIC:
		errs = append(errs, configErrorf("type", "%s is not supported by Outrigger yet (supported: STATIC, STRICT_DNS, LOGICAL_DNS, ORIGINAL_DST, EDS)", t))
	}
	var lbNotes []string
	switch p := c.GetLbPolicy(); {
	case isOrigDst || isCustom || isAggregate:
		// buildOrigDst, buildClusterType and buildAggregate check it.
	case p == clusterv3.Cluster_CLUSTER_PROVIDED && c.GetLoadBalancingPolicy() == nil:
		errs = append(errs, configErrorf("lb_policy", "CLUSTER_PROVIDED is only valid for a cluster type that provides its load balancer (ORIGINAL_DST); %s does not", c.GetType()))
	default:
		if typedClusterProvided(c) {
			// Envoy's cluster manager's words.
			errs = append(errs, configErrorf("load_balancing_policy", "cluster provided LB specified but cluster %q did not provide one. Check cluster documentation.", c.GetName()))
			break
		}
		var perrs []error
		s.policy, perrs = lb.ForCluster(c, reg)
		s.hashPolicy = lb.HashPolicyOf(s.policy)
		for _, err := range perrs {
			errs = append(errs, prefixed("", err))
		}
		if f := lb.LegacyConfigIgnored(c); f != "" {
			lbNotes = append(lbNotes, fmt.Sprintf("%s has no effect with this load balancing policy (Envoy ignores it too)", f))
		}
		if s.policy != nil && !s.policy.HashBased() && c.GetCommonLbConfig().GetConsistentHashingLbConfig() != nil {
			lbNotes = append(lbNotes, fmt.Sprintf("common_lb_config.consistent_hashing_lb_config has no effect with %s (Envoy ignores it too)", s.policy.Name()))
		}
	}
	if t := c.GetConnectTimeout(); t != nil {
		if err := t.CheckValid(); err != nil || t.AsDuration() <= 0 {
			errs = append(errs, configErrorf("connect_timeout", "must be a positive duration"))
		} else {
			s.connectTimeout = t.AsDuration()
		}
	}
	if pt := c.GetCommonLbConfig().GetHealthyPanicThreshold(); pt != nil {
		v := pt.GetValue()
		if math.IsNaN(v) || v < 0 || v > 100 {
			errs = append(errs, configErrorf("common_lb_config.healthy_panic_threshold.value", "%v is not a percentage (0 to 100)", v))
		} else {
			// Envoy rounds the percentage to an integer.
			s.lb.PanicThreshold = uint32(math.Round(v))
		}
	}
	if l := lb.LocalityOf(s.policy); l != nil {
		// The typed policy's own (lb refuses common_lb_config's with it).
		errs = append(errs, s.applyLocality(localityFromTyped(l), "load_balancing_policy")...)
	} else {
		errs = append(errs, s.applyLocality(localityFromCommon(c.GetCommonLbConfig()), "common_lb_config.zone_aware_lb_config")...)
	}
	if s.lb.LocalityWeighted && s.policy != nil && s.policy.HashBased() {
		// Envoy folds the locality weights into one ring (or table) over
		// the level, rather than picking a locality first, which would
		// break the hash's stickiness.
		s.policy = lb.WithLocalityWeights(s.policy)
		s.lb.LocalityWeighted = false
	}
	errs = append(errs, s.buildSubsets(c)...)
	if s.subsets != nil && lb.FoldsLocalityWeights(s.policy) {
		errs = append(errs, configErrorf("lb_subset_config", "not supported by Outrigger with %s and locality weights (the subsets' rings or tables would not weigh their localities as Envoy's do)", s.policy.Name()))
	}

	var errList []error
	s.protocol, errList = buildProtocol(c, reg)
	errs = append(errs, errList...)
	if r, err := buildPreconnect(c, &s.protocol); err != nil {
		errs = append(errs, err)
	} else {
		s.preconnect = r
	}
	//lint:ignore SA1019 Envoy still honours the cluster-level max_requests_per_connection
	if v := c.GetMaxRequestsPerConnection(); v != nil {
		switch {
		case s.protocol.maxRequestsPerConn != 0:
			errs = append(errs, configErrorf("max_requests_per_connection", "cannot be combined with common_http_protocol_options.max_requests_per_connection; set it there"))
		case s.protocol.http2 || s.protocol.downstream || s.protocol.auto:
			errs = append(errs, configErrorf("max_requests_per_connection", "%s", errH2MaxRequests))
		}
		s.protocol.maxRequestsPerConn = v.GetValue()
	}
	if ka := c.GetUpstreamConnectionOptions().GetTcpKeepalive(); ka != nil {
		s.keepalive = keepaliveConfig(ka)
	}
	if he, err := buildHappyEyeballs(c.GetUpstreamConnectionOptions().GetHappyEyeballsConfig()); err != nil {
		errs = append(errs, prefixed("upstream_connection_options", err))
	} else {
		s.happyEyeballs = he
	}
	s.bind, errList = buildBind(c.GetUpstreamBindConfig())
	errs = append(errs, errList...)
	s.hc, errList = buildHealthCheck(c, s, isOrigDst)
	errs = append(errs, errList...)
	if c.GetCommonLbConfig().GetIgnoreNewHostsUntilFirstHc() {
		// Envoy marks the hosts its dynamic clusters add; a STATIC
		// cluster's hosts are there from the start.
		switch t := c.GetType(); {
		case s.hc == nil:
			s.notes = append(s.notes, "common_lb_config.ignore_new_hosts_until_first_hc has no effect without health_checks (as in Envoy)")
		case c.GetClusterType() == nil && (t == clusterv3.Cluster_STRICT_DNS || t == clusterv3.Cluster_EDS):
			s.hc.PendingNewHosts = true
		default:
			s.notes = append(s.notes, fmt.Sprintf("common_lb_config.ignore_new_hosts_until_first_hc has no effect on a %s cluster, whose hosts do not come and go by discovery (as in Envoy)", t))
		}
	}
	s.ignoreHealthOnRemoval = c.GetIgnoreHealthOnHostRemoval()
	s.closeOnHealthFailure = c.GetCloseConnectionsOnHostHealthFailure()
	s.closeOnSetChange = c.GetCommonLbConfig().GetCloseConnectionsOnHostSetChange()
	s.overrideStatuses = buildOverrideStatuses(c)
	if w := c.GetCommonLbConfig().GetUpdateMergeWindow(); w != nil && w.AsDuration() != 0 {
		// Outrigger applies every host set update at once: Envoy's
		// behaviour with a window of 0s, the only one accepted.
		errs = append(errs, configErrorf("common_lb_config.update_merge_window", "%s is not supported by Outrigger (host set updates apply at once, as with 0s)", w.AsDuration()))
	}

	s.thresholds, errList = buildThresholds(c.GetCircuitBreakers())
	var perHostNotes []string
	var perHostErrs []error
	s.perHostCx, perHostNotes, perHostErrs = buildPerHostThresholds(c.GetCircuitBreakers())
	s.notes = append(s.notes, perHostNotes...)
	errList = append(errList, perHostErrs...)
	for _, err := range errList {
		errs = append(errs, prefixed("circuit_breakers", err))
	}
	s.outlier, errList = buildOutlier(c.GetOutlierDetection())
	errs = append(errs, errList...)

	la := c.GetLoadAssignment()
	if f := la.GetPolicy().GetOverprovisioningFactor(); f != nil {
		if f.GetValue() == 0 {
			errs = append(errs, configErrorf("load_assignment.policy.overprovisioning_factor", "must be above 0"))
		} else {
			s.lb.OverprovisioningFactor = f.GetValue()
		}
	}
	s.lb.WeightedPriorityHealth = la.GetPolicy().GetWeightedPriorityHealth()
	if la.GetPolicy().GetEndpointStaleAfter() != nil {
		// Only an EDS update arms it; an EDS cluster has no
		// load_assignment (buildEDS).
		s.notes = append(s.notes, "load_assignment.policy.endpoint_stale_after has no effect on a cluster whose endpoints are not discovered (Envoy ignores it too)")
	}
	drop, err := buildDropOverload(la.GetPolicy())
	if err != nil {
		errs = append(errs, prefixed("load_assignment.policy", err))
	}
	s.drop = drop
	s.notes = append(s.notes, lbNotes...)
	if isDNS {
		s.dns, errList = buildDNS(c, s.name, reg)
		if fromType {
			errList = dnsTypeErrors(errList)
			s.dns.cfg.MinRefreshRate = dnsType.minRefresh
		}
		errs = append(errs, errList...)
		s.notes = append(s.notes, ignoredOrigDstFields(c)...)
		return s, errs
	}
	if isAggregate {
		s.aggregate, errList = buildAggregate(c)
		errs = append(errs, errList...)
		s.priorities = [][]*upstream.Host{nil}
		return s, errs
	}
	s.notes = append(s.notes, ignoredDNSFields(c)...)
	if isEDS {
		s.eds, errList = buildEDS(c)
		errs = append(errs, errList...)
		s.notes = append(s.notes, ignoredOrigDstFields(c)...)
		s.priorities = [][]*upstream.Host{nil}
		return s, errs
	}
	if isCustom {
		s.dfp, errList = buildClusterType(c, reg)
		errs = append(errs, errList...)
		s.notes = append(s.notes, ignoredOrigDstFields(c)...)
		s.priorities = [][]*upstream.Host{nil}
		return s, errs
	}
	if isOrigDst {
		s.origDst, errList = buildOrigDst(c)
		errs = append(errs, errList...)
		s.priorities = [][]*upstream.Host{nil}
		return s, errs
	}
	s.notes = append(s.notes, ignoredOrigDstFields(c)...)
	s.priorities, errList = buildHosts(s.name, la, nil)
	for _, err := range errList {
		errs = append(errs, prefixed("load_assignment", err))
	}
	return s, errs
}

// sortedKeys returns a map's keys in order, so that errors come out in a
// stable order.
func sortedKeys[V any](m map[string]V) []string {
	if len(m) == 0 {
		// Most clusters have none of the maps asked about: no iterator
		// and no slice for them.
		return nil
	}
	return slices.Sorted(maps.Keys(m))
}

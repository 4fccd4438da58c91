package cluster

import (
	"net/netip"
	"slices"
	"strings"
	"sync"

	clusterv3 "github.com/envoyproxy/go-control-plane/envoy/config/cluster/v3"
	dfpclusterv3 "github.com/envoyproxy/go-control-plane/envoy/extensions/clusters/dynamic_forward_proxy/v3"
	"github.com/go-logr/logr"

	"github.com/outrigger-dev/outrigger/pkg/proxy/dns"
	"github.com/outrigger-dev/outrigger/pkg/proxy/dnscache"
	"github.com/outrigger-dev/outrigger/pkg/proxy/extension"
	"github.com/outrigger-dev/outrigger/pkg/proxy/filterstate"
	"github.com/outrigger-dev/outrigger/pkg/proxy/netfilter"
	"github.com/outrigger-dev/outrigger/pkg/proxy/upstream"
)

// dfpTypeConfig is the path of a custom cluster type's configuration.
const dfpTypeConfig = "cluster_type.typed_config"

// dfpSettings are a dynamic_forward_proxy cluster's: its hosts are those
// of a DNS cache, which the HTTP dynamic_forward_proxy filter and the SNI
// dynamic forward proxy filter load.
type dfpSettings struct {
	cacheCfg *dnscache.Config
	// cache is the cache itself, found by the manager (clusterSettings).
	cache *dnscache.Cache
	// autoSNI sends each host's name as the SNI of its TLS connections
	// and checks the server's certificate against it (auto_sni and
	// auto_san_validation, which Envoy sets on these clusters unless
	// allow_insecure_cluster_options says otherwise).
	autoSNI bool
	// sub is sub_clusters_config, nil when the cluster follows a DNS
	// cache (dfpsub.go); source is the cluster's configuration, which
	// its sub-clusters copy.
	sub    *subClusterSettings
	source *clusterv3.Cluster
}

// buildDFP checks a dynamic_forward_proxy cluster's settings, with
// Envoy's rules. Errors are relative to the cluster.
func buildDFP(c *clusterv3.Cluster, cfg *dfpclusterv3.ClusterConfig, reg *extension.Registry) (*dfpSettings, []error) {
	var errs []error
	d := &dfpSettings{autoSNI: true, source: c}
	if p := c.GetLbPolicy(); p != clusterv3.Cluster_CLUSTER_PROVIDED {
		errs = append(errs, configErrorf("lb_policy", "LB policy %s is not valid for Cluster type %s. Only 'CLUSTER_PROVIDED' is allowed with cluster type '%s'", p, c.GetClusterType().GetName(), c.GetClusterType().GetName()))
	}
	if otherPolicyOnProvider(c) {
		errs = append(errs, configErrorf("load_balancing_policy", "a dynamic_forward_proxy cluster balances by its own rules: only envoy.load_balancing_policies.cluster_provided is allowed"))
	}
	if len(c.GetLoadAssignment().GetEndpoints()) > 0 {
		errs = append(errs, configErrorf("load_assignment", "a dynamic_forward_proxy cluster's hosts come from its DNS cache; it takes no endpoints"))
	}
	if len(c.GetHealthChecks()) > 0 {
		errs = append(errs, configErrorf("health_checks", "not supported by Outrigger on a dynamic_forward_proxy cluster"))
	}
	if sc := cfg.GetSubClustersConfig(); sc != nil {
		var serrs []error
		d.sub, serrs = buildSubClusters(sc)
		errs = append(errs, serrs...)
	}
	if cfg.GetAllowCoalescedConnections() {
		errs = append(errs, configErrorf(dfpTypeConfig+".allow_coalesced_connections", "not supported by Outrigger yet (see docs/compat.md)"))
	}
	if dc := cfg.GetDnsCacheConfig(); dc == nil {
		if cfg.GetSubClustersConfig() == nil {
			errs = append(errs, configErrorf(dfpTypeConfig+".dns_cache_config", "required"))
		}
	} else {
		var cerrs []error
		d.cacheCfg, cerrs = dnscache.Compile(dc, reg)
		for _, err := range cerrs {
			errs = append(errs, prefixed(dfpTypeConfig+".dns_cache_config", err))
		}
	}
	// Envoy sets auto_sni and auto_san_validation on the cluster's legacy
	// upstream_http_protocol_options; typed HttpProtocolOptions replace
	// them, and Outrigger's have no upstream_http_protocol_options (the
	// support check refuses it): without them, Envoy requires
	// allow_insecure_cluster_options.
	typed := false
	for key := range c.GetTypedExtensionProtocolOptions() {
		typed = typed || httpOptionsKeys[key]
	}
	if typed {
		if !cfg.GetAllowInsecureClusterOptions() {
			errs = append(errs, configErrorf(dfpTypeConfig, "dynamic_forward_proxy cluster must have auto_sni and auto_san_validation true unless allow_insecure_cluster_options is set."))
		}
		d.autoSNI = false
	}
	return d, errs
}

// dfpHosts are a dynamic_forward_proxy cluster's hosts: one per host of
// its cache with an address, keyed as the cache keys them (host:port).
type dfpHosts struct {
	c     *Cluster
	cache *dnscache.Cache
	mu    sync.RWMutex
	byKey map[string]dfpHost
}

type dfpHost struct {
	host  *upstream.Host
	entry *dnscache.Host
}

var _ dnscache.Subscriber = (*dfpHosts)(nil)

// HostChanged implements dnscache.Subscriber: a new host, or a new address
// for one (a new host of the same name, whose pool replaces the old one's).
func (d *dfpHosts) HostChanged(e *dnscache.Host, addr netip.AddrPort) {
	h := &upstream.Host{Address: addr.String(), Hostname: e.Key, Cluster: d.c.settings.name, Weight: MinWeight}
	// The install happens under d.mu: two hosts resolved at once must not
	// install their lists out of order, losing one.
	d.mu.Lock()
	defer d.mu.Unlock()
	d.byKey[e.Key] = dfpHost{host: h, entry: e}
	d.c.install([][]*upstream.Host{d.listLocked()}, true)
}

// HostRemoved implements dnscache.Subscriber.
func (d *dfpHosts) HostRemoved(e *dnscache.Host) {
	d.mu.Lock()
	defer d.mu.Unlock()
	if cur, ok := d.byKey[e.Key]; !ok || cur.entry != e {
		// Already replaced by a newer host of the same name.
		return
	}
	delete(d.byKey, e.Key)
	d.c.install([][]*upstream.Host{d.listLocked()}, true)
}

// listLocked is the hosts in key order. d.mu is held.
func (d *dfpHosts) listLocked() []*upstream.Host {
	keys := make([]string, 0, len(d.byKey))
	for k := range d.byKey {
		keys = append(keys, k)
	}
	slices.Sort(keys)
	out := make([]*upstream.Host, len(keys))
	for i, k := range keys {
		out[i] = d.byKey[k].host
	}
	return out
}

// defaultPort is the port of a host named without one: 443 when the
// cluster speaks TLS, else 80, as Envoy's dynamic forward proxy.
func (c *Cluster) defaultPort() uint16 {
	if c.settings.tls != nil {
		return 443
	}
	return 80
}

// DynamicForwardProxy reports whether the cluster is a
// dynamic_forward_proxy cluster, and the port of hosts named without one:
// what the dynamic forward proxy filters load into its DNS cache.
func (c *Cluster) DynamicForwardProxy() (defaultPort uint16, ok bool) {
	if c.dfp == nil && c.subs == nil {
		return 0, false
	}
	return c.defaultPort(), true
}

// pickDFP returns the host pc names, in Envoy's order: the filter state's
// envoy.upstream.dynamic_host, else the request's Host, else the
// connection's server name; the port when it names none is the filter
// state's envoy.upstream.dynamic_port (the SNI filter's), else the
// cluster's default. Nil when the cache has not resolved that host (the
// filters load it first).
func (c *Cluster) pickDFP(pc *upstream.PickContext) *upstream.Host {
	if pc == nil {
		return nil
	}
	raw := pc.Authority
	if raw == "" {
		raw = pc.ServerName
	}
	port := c.defaultPort()
	if p := pc.DynamicPort; p > 0 && p <= 65535 {
		port = uint16(p)
	}
	if pc.FilterState != nil {
		if v, ok := pc.FilterState.FilterState(netfilter.DynamicHostStateKey); ok {
			if h, ok := filterstate.StringAccessorOf(v); ok {
				raw = h
			}
		}
		if v, ok := pc.FilterState.FilterState(netfilter.DynamicPortStateKey); ok {
			if p, ok := v.(filterstate.UInt32); ok && p > 0 && p <= 65535 {
				port = uint16(p)
			}
		}
	}
	if c.subs != nil {
		return c.pickSubCluster(raw, port, pc)
	}
	key := dnscache.Key(raw, port)
	if key == "" {
		return nil
	}
	d := c.dfp
	d.mu.RLock()
	e, ok := d.byKey[key]
	d.mu.RUnlock()
	if !ok {
		return nil
	}
	e.entry.Touch()
	return e.host
}

// dfpServerName is the SNI of a connection to h with auto_sni: its name
// without the port.
func dfpServerName(h *upstream.Host) string {
	name := h.Hostname
	if i := strings.LastIndexByte(name, ':'); i >= 0 && !strings.HasSuffix(name, "]") {
		name = name[:i]
	}
	return strings.Trim(name, "[]")
}

// attachDNSCache finds the cluster's DNS cache among caches (made the
// first time), and refuses what the cluster's connections cannot do with
// it. Errors are relative to the cluster.
func (s *settings) attachDNSCache(caches *dnscache.Manager) []error {
	var errs []error
	if s.tls != nil && (s.protocol.http2 || s.protocol.auto || s.protocol.downstream) {
		// The HTTP/2 pool shares connections by address, whatever the
		// host name its TLS session was made for.
		errs = append(errs, configErrorf("cluster_type", "HTTP/2 upstream over TLS is not supported by Outrigger on a dynamic_forward_proxy cluster yet (see docs/compat.md)"))
	}
	if s.dfp.cacheCfg == nil || caches == nil {
		return errs
	}
	c, err := caches.Get(s.dfp.cacheCfg)
	if err != nil {
		return append(errs, configErrorf(dfpTypeConfig+".dns_cache_config.name", "%v", err))
	}
	s.dfp.cache = c
	return errs
}

// DNSCaches are the manager's DNS caches, which the dynamic forward proxy
// filters share with its dynamic_forward_proxy clusters.
func (m *Manager) DNSCaches() *dnscache.Manager {
	if m == nil {
		return nil
	}
	return m.caches
}

// newDNSCaches makes the manager's DNS caches: their resolvers, when a
// cache names none, are the server's when the bootstrap's is a typed one
// (a resolver of its own for each cache, with the server's
// configuration), else c-ares with the cache's deprecated
// use_tcp_for_dns_lookups.
func newDNSCaches(o Options) *dnscache.Manager {
	env := o.ResolverEnv
	if env.Stats == nil {
		env.Stats = o.Stats
	}
	if env.Log.GetSink() == nil {
		env.Log = logr.Discard()
	}
	spec := o.Resolver
	if spec == nil {
		spec = dns.CaresSpec(dns.CaresOptions{})
	}
	return dnscache.NewManager(dnscache.Options{
		Stats:         o.Stats,
		Extensions:    o.Extensions,
		Resolver:      func() dns.Resolver { return spec.New(env) },
		Env:           env,
		ServerUntyped: o.ResolverUntyped,
		Log:           o.Log,
		Runtime:       o.Runtime,
		Now:           o.Now,
		Rand:          o.Rand,
	})
}

package cluster

import (
	"fmt"
	"net/netip"
	"slices"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	clusterv3 "github.com/envoyproxy/go-control-plane/envoy/config/cluster/v3"
	corev3 "github.com/envoyproxy/go-control-plane/envoy/config/core/v3"
	endpointv3 "github.com/envoyproxy/go-control-plane/envoy/config/endpoint/v3"
	dfpclusterv3 "github.com/envoyproxy/go-control-plane/envoy/extensions/clusters/dynamic_forward_proxy/v3"
	"google.golang.org/protobuf/proto"
	"google.golang.org/protobuf/types/known/anypb"

	"github.com/outrigger-dev/outrigger/pkg/proxy/upstream"
)

// Envoy's defaults of a SubClustersConfig.
const (
	defaultMaxSubClusters = 1024
	defaultSubClusterTTL  = 5 * time.Minute
)

// dnsClusterExtension is the DNS cluster extension's name, which
// sub-clusters of dns_cluster_config name in their cluster_type.
const dnsClusterExtension = "envoy.cluster.dns"

// SubClusterPrefix starts the name of every sub-cluster of a dynamic
// forward proxy cluster: DFPCluster:<host>:<port>, as Envoy names them.
const SubClusterPrefix = "DFPCluster:"

// subClusterSettings are a dynamic_forward_proxy cluster's
// sub_clusters_config: instead of following a DNS cache, the cluster
// makes a STRICT_DNS cluster per host:port that requests ask for.
type subClusterSettings struct {
	lbPolicy clusterv3.Cluster_LbPolicy
	max      int
	ttl      time.Duration
	// preresolve are preresolve_clusters: the sub-clusters made when the
	// cluster starts, before any request asks for them.
	preresolve []subClusterAddr
	// dnsCluster is dns_cluster_config: the sub-clusters are then of the
	// DNS cluster extension with these settings rather than STRICT_DNS
	// copies of the parent's DNS fields; nil for none.
	dnsCluster *anypb.Any
}

// subClusterAddr is the host and port of a sub-cluster.
type subClusterAddr struct {
	host string
	port uint16
}

// buildSubClusters checks a sub_clusters_config. Errors are relative to
// the cluster.
func buildSubClusters(sc *dfpclusterv3.SubClustersConfig) (*subClusterSettings, []error) {
	path := dfpTypeConfig + ".sub_clusters_config"
	s := &subClusterSettings{lbPolicy: sc.GetLbPolicy(), max: defaultMaxSubClusters, ttl: defaultSubClusterTTL}
	var errs []error
	if s.lbPolicy == clusterv3.Cluster_CLUSTER_PROVIDED {
		// Envoy's words.
		errs = append(errs, configErrorf(path+".lb_policy", "unsupported lb_policy 'CLUSTER_PROVIDED' in sub_cluster_config"))
	}
	if m := sc.GetMaxSubClusters(); m != nil {
		s.max = int(m.GetValue())
	}
	if d := sc.GetSubClusterTtl(); d != nil {
		if err := d.CheckValid(); err != nil || d.AsDuration() < time.Millisecond {
			errs = append(errs, configErrorf(path+".sub_cluster_ttl", "must be at least 1ms"))
		} else {
			s.ttl = d.AsDuration().Truncate(time.Millisecond)
		}
	}
	for i, sa := range sc.GetPreresolveClusters() {
		p := fmt.Sprintf("%s.preresolve_clusters[%d]", path, i)
		if sa.GetAddress() == "" {
			errs = append(errs, configErrorf(p+".address", "required"))
			continue
		}
		if sa.GetPortValue() == 0 || sa.GetPortValue() > 65535 {
			errs = append(errs, configErrorf(p+".port_value", "must be a port (1 to 65535)"))
			continue
		}
		s.preresolve = append(s.preresolve, subClusterAddr{host: sa.GetAddress(), port: uint16(sa.GetPortValue())})
	}
	if dc := sc.GetDnsClusterConfig(); dc != nil {
		a, err := anypb.New(dc)
		if err != nil {
			errs = append(errs, configErrorf(path+".dns_cluster_config", "%v", err))
		}
		s.dnsCluster = a
	}
	return s, errs
}

// subClusterConfig is the configuration of the sub-cluster name of parent,
// for host:port, as Envoy's createSubClusterConfig derives it: the
// parent's configuration, named name, of type STRICT_DNS with the
// sub_clusters_config's lb_policy, and the one endpoint host:port. With
// autoSNI the parent's auto_sni and auto_san_validation (which Envoy sets
// on the dynamic forward proxy cluster) come along.
func subClusterConfig(parent *clusterv3.Cluster, sub *subClusterSettings, autoSNI bool, name, host string, port uint16) *clusterv3.Cluster {
	cfg := proto.Clone(parent).(*clusterv3.Cluster)
	cfg.Name = name
	// The type replaces cluster_type (one oneof): STRICT_DNS, or the DNS
	// cluster extension with dns_cluster_config, whose settings then
	// replace the parent's DNS fields.
	cfg.ClusterDiscoveryType = &clusterv3.Cluster_Type{Type: clusterv3.Cluster_STRICT_DNS}
	if sub.dnsCluster != nil {
		cfg.ClusterDiscoveryType = &clusterv3.Cluster_ClusterType{ClusterType: &clusterv3.Cluster_CustomClusterType{
			Name: dnsClusterExtension, TypedConfig: sub.dnsCluster,
		}}
	}
	cfg.LbPolicy = sub.lbPolicy
	//lint:ignore SA1019 Envoy sets the legacy field, as the configuration shows it
	if autoSNI && cfg.GetUpstreamHttpProtocolOptions() == nil {
		//lint:ignore SA1019 as above
		cfg.UpstreamHttpProtocolOptions = &corev3.UpstreamHttpProtocolOptions{AutoSni: true, AutoSanValidation: true}
	}
	cfg.LoadAssignment = &endpointv3.ClusterLoadAssignment{
		ClusterName: name,
		Endpoints: []*endpointv3.LocalityLbEndpoints{{LbEndpoints: []*endpointv3.LbEndpoint{{
			HostIdentifier: &endpointv3.LbEndpoint_Endpoint{Endpoint: &endpointv3.Endpoint{
				Address: &corev3.Address{Address: &corev3.Address_SocketAddress{SocketAddress: &corev3.SocketAddress{
					Address:       host,
					PortSpecifier: &corev3.SocketAddress_PortValue{PortValue: uint32(port)},
				}}},
			}},
		}}}},
	}
	return cfg
}

// subClusterTarget splits a host as a request names it (host, host:port,
// [v6]:port) into the host and port of its sub-cluster, as Envoy's
// parseAuthority: an IP literal loses its brackets; without a port (or
// with one that does not parse) the default applies.
func subClusterTarget(raw string, defaultPort uint16) (string, uint16) {
	host, port := raw, defaultPort
	if i := strings.LastIndexByte(raw, ':'); i >= 0 && !strings.HasSuffix(raw, "]") {
		if n, err := strconv.ParseUint(raw[i+1:], 10, 16); err == nil {
			host, port = raw[:i], uint16(n)
		}
	}
	if len(host) > 1 && host[0] == '[' && host[len(host)-1] == ']' {
		if _, err := netip.ParseAddr(host[1 : len(host)-1]); err == nil {
			host = host[1 : len(host)-1]
		}
	}
	return host, port
}

// SubClusterName is the name of the sub-cluster of host:port.
func SubClusterName(host string, port uint16) string {
	return SubClusterPrefix + host + ":" + strconv.Itoa(int(port))
}

// subClusterHost is what a dynamic forward proxy cluster with sub-clusters
// asks of its manager: adding a sub-cluster (ready is closed once it
// serves) and removing one it made.
type subClusterHost interface {
	addSubCluster(parent *Cluster, cfg *clusterv3.Cluster, ready chan struct{}) error
	removeSubCluster(parent *Cluster, name string)
}

// dfpSubClusters are the sub-clusters of a dynamic_forward_proxy cluster
// with sub_clusters_config, as Envoy's cluster map: an entry per name
// from its first request, bounded by max_sub_clusters, and removed by a
// timer that runs every sub_cluster_ttl once unused that long.
type dfpSubClusters struct {
	parent *Cluster
	cfg    *subClusterSettings
	host   subClusterHost
	now    func() time.Time

	mu      sync.Mutex
	byName  map[string]*subClusterEntry
	timer   *time.Timer
	stopped bool
}

// subClusterEntry is one sub-cluster: when it was last used, and its
// readiness.
type subClusterEntry struct {
	lastUsed atomic.Int64
	// ready is closed once the sub-cluster serves.
	ready chan struct{}
}

// newDFPSubClusters returns the sub-cluster state of parent.
func newDFPSubClusters(parent *Cluster, cfg *subClusterSettings, host subClusterHost, now func() time.Time) *dfpSubClusters {
	return &dfpSubClusters{parent: parent, cfg: cfg, host: host, now: now, byName: map[string]*subClusterEntry{}}
}

// start arms the idle timer (Envoy's checkIdleSubCluster) and makes the
// preresolve_clusters sub-clusters, as Envoy's cluster does when it is
// created: each counts against max_sub_clusters and expires like the
// others once unused for the TTL. They are made on a goroutine: the
// caller may hold the manager's locks, which adding a sub-cluster takes.
func (d *dfpSubClusters) start() {
	d.mu.Lock()
	defer d.mu.Unlock()
	if d.stopped || d.timer != nil {
		return
	}
	d.timer = time.AfterFunc(d.cfg.ttl, d.checkIdle)
	if len(d.cfg.preresolve) > 0 {
		go func() {
			for _, a := range d.cfg.preresolve {
				d.parent.loadSubCluster(a.host, a.port)
			}
		}()
	}
}

// stop ends the timer and forgets the sub-clusters; the caller removes
// them from the manager (removeAll).
func (d *dfpSubClusters) stop() {
	d.mu.Lock()
	defer d.mu.Unlock()
	d.stopped = true
	if d.timer != nil {
		d.timer.Stop()
	}
}

// names returns the sub-clusters' names.
func (d *dfpSubClusters) names() []string {
	d.mu.Lock()
	defer d.mu.Unlock()
	out := make([]string, 0, len(d.byName))
	for n := range d.byName {
		out = append(out, n)
	}
	slices.Sort(out)
	return out
}

// checkIdle removes the sub-clusters unused for longer than the TTL, then
// runs again after the TTL.
func (d *dfpSubClusters) checkIdle() {
	now := d.now().UnixNano()
	var expired []string
	d.mu.Lock()
	if d.stopped {
		d.mu.Unlock()
		return
	}
	for name, e := range d.byName {
		if time.Duration(now-e.lastUsed.Load()) > d.cfg.ttl {
			delete(d.byName, name)
			expired = append(expired, name)
		}
	}
	d.timer = time.AfterFunc(d.cfg.ttl, d.checkIdle)
	d.mu.Unlock()
	slices.Sort(expired)
	for _, name := range expired {
		d.host.removeSubCluster(d.parent, name)
	}
}

// UsesSubClusters reports whether the cluster is a dynamic_forward_proxy
// cluster with sub_clusters_config: the dynamic forward proxy filter then
// loads the sub-cluster of each request's host (LoadSubCluster) rather
// than resolving it in a DNS cache.
func (c *Cluster) UsesSubClusters() bool { return c.subs != nil }

// LoadSubCluster finds or makes the sub-cluster of the host a request
// names (host or host:port, the port defaulting to the cluster's) and
// marks it used, as Envoy's dynamic forward proxy filter loads it. A
// sub-cluster being made returns upstream.SubClusterWarming and the channel that
// closes once it serves.
func (c *Cluster) LoadSubCluster(raw string, defaultPort uint16) (<-chan struct{}, upstream.SubClusterStatus) {
	if c.subs == nil {
		return nil, upstream.SubClusterFailed
	}
	host, port := subClusterTarget(raw, defaultPort)
	return c.loadSubCluster(host, port)
}

// loadSubCluster finds or makes the sub-cluster of host:port (see
// LoadSubCluster).
func (c *Cluster) loadSubCluster(host string, port uint16) (<-chan struct{}, upstream.SubClusterStatus) {
	d := c.subs
	name := SubClusterName(host, port)
	now := d.now().UnixNano()
	d.mu.Lock()
	if d.stopped {
		d.mu.Unlock()
		return nil, upstream.SubClusterFailed
	}
	if e := d.byName[name]; e != nil {
		e.lastUsed.Store(now)
		d.mu.Unlock()
		select {
		case <-e.ready:
			return nil, upstream.SubClusterReady
		default:
			return e.ready, upstream.SubClusterWarming
		}
	}
	if len(d.byName) >= d.cfg.max {
		d.mu.Unlock()
		return nil, upstream.SubClusterOverflow
	}
	// raw may view a request's buffer, which is reused.
	host = strings.Clone(host)
	e := &subClusterEntry{ready: make(chan struct{})}
	e.lastUsed.Store(now)
	d.byName[name] = e
	d.mu.Unlock()
	cfg := subClusterConfig(c.settings.dfp.source, d.cfg, c.settings.dfp.autoSNI, name, host, port)
	if err := d.host.addSubCluster(c, cfg, e.ready); err != nil {
		d.mu.Lock()
		if d.byName[name] == e {
			delete(d.byName, name)
		}
		d.mu.Unlock()
		return nil, upstream.SubClusterFailed
	}
	select {
	case <-e.ready:
		return nil, upstream.SubClusterReady
	default:
		return e.ready, upstream.SubClusterWarming
	}
}

// pickSubCluster picks a host of the sub-cluster of raw (the host the
// request names) with that sub-cluster's balancer; nil when it has none
// or does not serve (yet, or any more).
func (c *Cluster) pickSubCluster(raw string, port uint16, pc *upstream.PickContext) *upstream.Host {
	if raw == "" || c.lookup == nil {
		return nil
	}
	host, port := subClusterTarget(raw, port)
	sub := c.lookup(SubClusterName(host, port))
	if sub == nil || sub.dynamic == nil || sub.dynamic.subOf != c {
		return nil
	}
	return sub.pickHost(pc)
}

// subClusterOf is the sub-cluster of c that h belongs to, nil when none
// serves.
func (c *Cluster) subClusterOf(h *upstream.Host) *Cluster {
	if h == nil || c.lookup == nil {
		return nil
	}
	sub := c.lookup(h.Cluster)
	if sub == nil || sub.dynamic == nil || sub.dynamic.subOf != c {
		return nil
	}
	return sub
}

package cluster

import (
	"bufio"
	"net/http"
	"slices"
	"sync"
	"sync/atomic"
	"time"

	corev3 "github.com/envoyproxy/go-control-plane/envoy/config/core/v3"

	"github.com/outrigger-dev/outrigger/pkg/proxy/lb"
	"github.com/outrigger-dev/outrigger/pkg/proxy/stats"
	"github.com/outrigger-dev/outrigger/pkg/proxy/upstream"
)

// Cluster is one upstream cluster: its hosts, its load balancer, its
// connection pools and its stats. Its methods are safe for concurrent use.
type Cluster struct {
	settings *settings
	stats    *upstream.ClusterStats
	extra    extraStats

	hosts    []*upstream.Host // priority order, then configuration order
	canaries map[string]bool  // addresses of canary hosts; nil when none
	balancer atomic.Pointer[lb.Balancer]

	dial DialFunc
	now  func() time.Time

	// h1 holds the HTTP/1.1 pool of each host (nil for an HTTP/2
	// cluster); byAddr finds hosts for the HTTP/2 transport's dials. Both
	// are built once and only read.
	h1     map[*upstream.Host]*http1Pool
	byAddr map[string]*upstream.Host
	h2     *http.Transport
	// h2Stats creates the cluster's HTTP/2 codec stats with its first
	// HTTP/2 connection.
	h2Stats func() *h2UpstreamStats
	readers sync.Pool

	// conns are the open connections, so that Close can end them all.
	// closed is set under connsMu, so that no connection is tracked after
	// Close has collected them, and read without it where a connection is
	// released or dialled.
	connsMu sync.Mutex
	conns   map[*trackedConn]struct{}
	closed  atomic.Bool
}

// clusterDeps are what the manager hands every cluster.
type clusterDeps struct {
	stats *stats.Store
	dial  DialFunc
	now   func() time.Time
	rand  func() uint64
}

// newCluster builds a cluster from checked settings.
func newCluster(s *settings, d clusterDeps) *Cluster {
	scope := d.stats.Scope("cluster." + s.observabilityName + ".")
	c := &Cluster{
		settings: s,
		stats:    upstream.NewClusterStats(scope),
		extra:    newExtraStats(scope),
		dial:     d.dial,
		now:      d.now,
		conns:    map[*trackedConn]struct{}{},
	}
	for _, level := range s.priorities {
		c.hosts = append(c.hosts, level...)
	}
	for _, h := range c.hosts {
		if h.Canary {
			if c.canaries == nil {
				c.canaries = map[string]bool{}
			}
			c.canaries[h.Address] = true
		}
	}
	cfg := s.lb
	cfg.Rand = d.rand
	c.balancer.Store(lb.New(s.priorities, cfg))

	size := s.readBufferSize()
	c.readers.New = func() any { return bufio.NewReaderSize(nil, size) }
	if s.protocol.http2 {
		c.byAddr = make(map[string]*upstream.Host, len(c.hosts))
		for _, h := range c.hosts {
			c.byAddr[h.Address] = h
		}
		c.h2 = c.newHTTP2Transport()
		c.h2Stats = sync.OnceValue(func() *h2UpstreamStats { return newH2UpstreamStats(scope) })
	} else {
		c.h1 = make(map[*upstream.Host]*http1Pool, len(c.hosts))
		for _, h := range c.hosts {
			c.h1[h] = &http1Pool{}
		}
	}
	c.publishMembership()
	return c
}

// publishMembership sets the membership gauges from the hosts' health.
func (c *Cluster) publishMembership() {
	var healthy, degraded int64
	var maxWeight uint32
	for _, h := range c.hosts {
		switch {
		case !h.Healthy():
		case h.Degraded():
			degraded++
		default:
			healthy++
		}
		maxWeight = max(maxWeight, h.Weight)
	}
	c.stats.MembershipTotal.Set(int64(len(c.hosts)))
	c.stats.MembershipHealthy.Set(healthy)
	c.stats.MembershipDegraded.Set(degraded)
	c.stats.MembershipExcluded.Set(0)
	c.stats.MembershipChange.Inc()
	c.extra.maxHostWeight.Set(int64(maxWeight))
}

// Name is the cluster's name.
func (c *Cluster) Name() string { return c.settings.name }

// ObservabilityName is the name the cluster's stats and /clusters use:
// alt_stat_name when configured, else the name.
func (c *Cluster) ObservabilityName() string { return c.settings.observabilityName }

// AddedViaAPI reports whether the cluster came from cluster discovery;
// static clusters did not.
func (c *Cluster) AddedViaAPI() bool { return false }

// Stats are the cluster's stats (scope "cluster.<observability name>.").
func (c *Cluster) Stats() *upstream.ClusterStats { return c.stats }

// Hosts returns the hosts in priority order, then configuration order,
// the order /clusters lists them in.
func (c *Cluster) Hosts() []*upstream.Host { return slices.Clone(c.hosts) }

// IsCanary reports whether the host at address ("ip:port") is a canary.
func (c *Cluster) IsCanary(address string) bool { return c.canaries[address] }

// Thresholds returns the circuit-breaker thresholds of a routing priority
// (DEFAULT or HIGH; any other reads as DEFAULT).
func (c *Cluster) Thresholds(p corev3.RoutingPriority) Thresholds {
	if p != corev3.RoutingPriority_HIGH {
		p = corev3.RoutingPriority_DEFAULT
	}
	return c.settings.thresholds[p]
}

// HTTP2 reports whether requests go upstream over HTTP/2.
func (c *Cluster) HTTP2() bool { return c.settings.protocol.http2 }

// PickHost chooses the host of one request with the cluster's load
// balancer, or returns nil (counted as upstream_cx_none_healthy) when no
// host can take it.
func (c *Cluster) PickHost() *upstream.Host {
	h, panicked := c.balancer.Load().Pick()
	if panicked {
		c.extra.lbHealthyPanic.Inc()
	}
	if h == nil {
		c.extra.noneHealthy.Inc()
	}
	return h
}

// track records an open connection; false once the cluster is closed.
func (c *Cluster) track(tc *trackedConn) bool {
	c.connsMu.Lock()
	defer c.connsMu.Unlock()
	if c.closed.Load() {
		return false
	}
	c.conns[tc] = struct{}{}
	return true
}

// untrack forgets a closed connection.
func (c *Cluster) untrack(tc *trackedConn) {
	c.connsMu.Lock()
	delete(c.conns, tc)
	c.connsMu.Unlock()
}

func (c *Cluster) isClosed() bool { return c.closed.Load() }

// Close closes every connection of the cluster, idle or lent, and makes
// later acquisitions fail with ErrClosed. Requests in flight fail.
func (c *Cluster) Close() {
	c.connsMu.Lock()
	if c.closed.Load() {
		c.connsMu.Unlock()
		return
	}
	c.closed.Store(true)
	open := make([]*trackedConn, 0, len(c.conns))
	for tc := range c.conns {
		open = append(open, tc)
	}
	c.connsMu.Unlock()

	for _, p := range c.h1 {
		p.closeIdle()
	}
	if c.h2 != nil {
		c.h2.CloseIdleConnections()
	}
	for _, tc := range open {
		_ = tc.Close()
	}
}

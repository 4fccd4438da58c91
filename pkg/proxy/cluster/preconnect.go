package cluster

import (
	"context"

	clusterv3 "github.com/envoyproxy/go-control-plane/envoy/config/cluster/v3"

	"github.com/outrigger-dev/outrigger/pkg/proxy/upstream"
)

// preconnectPerCall is how many connections one request may open ahead of
// demand at most, as Envoy's tryCreateNewConnections.
const preconnectPerCall = 3

// buildPreconnect reads preconnect_policy: the per-upstream ratio (0 for
// none: connections open as requests need them). Envoy's API bounds it to
// 1..3; predictive_preconnect_ratio is refused by the support check.
func buildPreconnect(c *clusterv3.Cluster, ps *protocolSettings) (float64, error) {
	v := c.GetPreconnectPolicy().GetPerUpstreamPreconnectRatio()
	if v == nil {
		return 0, nil
	}
	r := v.GetValue()
	switch {
	case !(r >= 1 && r <= 3):
		return 0, configErrorf("preconnect_policy.per_upstream_preconnect_ratio", "%v is not between 1 and 3", r)
	case ps.http2 || ps.downstream || ps.auto:
		return 0, configErrorf("preconnect_policy.per_upstream_preconnect_ratio",
			"not supported on a cluster whose requests may go over HTTP/2: Go's HTTP/2 transport opens its connections itself")
	}
	return r, nil
}

// preconnect opens connections of HTTP/1.1 pool p to h ahead of demand
// once a request got its connection, as Envoy's pools do with
// per_upstream_preconnect_ratio: while the requests the pool serves times
// the ratio exceed its connections (connecting, busy or idle), up to
// preconnectPerCall of them, within max_connections, to a healthy host
// only. The new connections go to the pool's idle list (or a request
// waiting for one) once made; ctx's values (source, server name) say what
// they are made with.
func (c *Cluster) preconnect(ctx context.Context, h *upstream.Host, p *http1Pool, res *resources) {
	ratio := c.settings.preconnect
	if !h.Healthy() {
		return
	}
	ctx = context.WithoutCancel(ctx)
	for range preconnectPerCall {
		open := p.open.Load()
		if float64(p.active.Load())*ratio <= float64(open) {
			return
		}
		if hostFull(h, res, int64(open)) || !res.cx.tryAcquire() {
			return
		}
		p.open.Add(1)
		go c.preconnectOne(ctx, h, p, &res.cx)
	}
}

// preconnectOne dials one connection for preconnect, holding the
// max_connections unit cx, and pools it idle.
func (c *Cluster) preconnectOne(ctx context.Context, h *upstream.Host, p *http1Pool, cx *resource) {
	tc, err := c.connect(ctx, h, alpnHTTP1)
	if err != nil {
		p.open.Add(-1)
		c.releaseConnSlot(cx)
		return
	}
	tc.cx, tc.pool, tc.http = cx, p, true
	c.stats.UpstreamCxHTTP1Total().Inc()
	tc.probe.init(tc.Conn)
	tc.up = upstream.Conn{Conn: tc, Host: h, Buffers: tc}
	p.put(c, tc, c.now())
}

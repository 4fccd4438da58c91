package cluster

import (
	"context"
	"net"
	"net/http"
	"slices"
	"sync"

	"github.com/outrigger-dev/outrigger/pkg/proxy/tlsconfig"
	"github.com/outrigger-dev/outrigger/pkg/proxy/upstream"
)

// maxSNIPools bounds the HTTP/2 pools a cluster keeps for requests with a
// pool key, one per server name and SAN (auto_sni), source address
// (original_src) and downstream side of an upstream PROXY protocol header
// its requests asked for: past it, the least recently made
// one is dropped (its idle connections closed; streams in progress
// finish), so that clients naming ever new hosts, or coming from ever new
// addresses, cannot grow the proxy's memory without bound.
const maxSNIPools = 64

// sniPools are an HTTP/2 cluster's pools by pool key (see poolKey): Go's
// HTTP/2 transport pools connections by address alone, so each server
// name (auto_sni) and each source (original_src) gets a transport of its
// own, as Envoy keeps a pool per transport socket and socket options.
type sniPools struct {
	c     *Cluster
	mu    sync.Mutex
	byKey map[poolKey]*http.Transport
	order []poolKey // oldest first
}

// transport is the pool of requests asking for key, made on first use.
func (p *sniPools) transport(key poolKey) *http.Transport {
	p.mu.Lock()
	defer p.mu.Unlock()
	if t := p.byKey[key]; t != nil {
		return t
	}
	if len(p.order) >= maxSNIPools {
		oldest := p.order[0]
		p.order = slices.Delete(p.order, 0, 1)
		p.byKey[oldest].CloseIdleConnections()
		delete(p.byKey, oldest)
	}
	t := p.c.newHTTP2Transport()
	t.DialContext = func(ctx context.Context, _, addr string) (net.Conn, error) {
		return p.c.dialHTTP2(p.c.withPoolProxyProtocol(upstream.WithSource(tlsconfig.WithOverride(ctx, key.tls), key.src), key.pp), addr)
	}
	p.byKey[key] = t
	p.order = append(p.order, key)
	return t
}

// withPoolProxyProtocol is the context of a connection of the pool of
// PROXY protocol key pp: the downstream side of the request that opens it
// when it belongs to the pool (its TLVs are the header's, as the first
// user's are in Envoy), else pp itself.
func (c *Cluster) withPoolProxyProtocol(ctx context.Context, pp upstream.ProxyProtocolData) context.Context {
	if c.settings.pp == nil || !pp.Src.IsValid() {
		return ctx
	}
	if d, ok := upstream.ProxyProtocolFrom(ctx); ok && c.settings.pp.PoolKey(d) == pp {
		return ctx
	}
	return upstream.WithProxyProtocol(ctx, pp)
}

// closeIdle closes the idle connections of every pool.
func (p *sniPools) closeIdle() {
	if p == nil {
		return
	}
	p.mu.Lock()
	defer p.mu.Unlock()
	for _, t := range p.byKey {
		t.CloseIdleConnections()
	}
}

// closeIdleHTTP2 closes the idle connections of every HTTP/2 pool of the
// cluster.
func (c *Cluster) closeIdleHTTP2() {
	c.h2.CloseIdleConnections()
	c.h2x.CloseIdleConnections()
	c.h2SNI.closeIdle()
}

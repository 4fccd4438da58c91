package cluster

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"sync/atomic"

	"github.com/outrigger-dev/outrigger/pkg/proxy/tlsconfig"
	"github.com/outrigger-dev/outrigger/pkg/proxy/upstream"
)

// newHTTP2Transport builds the cluster's HTTP/2 pool: a transport that
// speaks only cleartext HTTP/2 with prior knowledge (h2c), multiplexing
// requests to a host over few connections and opening another when one is
// full.
func (c *Cluster) newHTTP2Transport() *http.Transport {
	protocols := new(http.Protocols)
	protocols.SetUnencryptedHTTP2(true)
	return &http.Transport{
		Protocols: protocols,
		DialContext: func(ctx context.Context, _, addr string) (net.Conn, error) {
			return c.dialHTTP2(ctx, addr)
		},
		// A proxy passes bodies through as they are.
		DisableCompression: true,
		IdleConnTimeout:    c.settings.protocol.idleTimeout,
		HTTP2: &http.HTTP2Config{
			MaxReceiveBufferPerStream:     c.settings.protocol.h2.streamWindow,
			MaxReceiveBufferPerConnection: c.settings.protocol.h2.connWindow,
			// hpack_table_size: announced, and the encoder's bound.
			MaxDecoderHeaderTableSize: c.settings.protocol.h2.hpackTableSize,
			MaxEncoderHeaderTableSize: c.settings.protocol.h2.hpackTableSize,
			// connection_keepalive (h2guard.go counts the timeouts).
			SendPingTimeout: c.settings.protocol.h2.pingInterval,
			PingTimeout:     c.settings.protocol.h2.pingTimeout,
		},
	}
}

// dialHTTP2 opens a connection for the HTTP/2 transport to the host at
// addr (the transport knows hosts only by the URL's authority). A host
// that a DNS answer or an EDS update removed after the request picked it
// is still dialled, as Envoy's request keeps the host it chose: the
// request carries its host in ctx (see pickedHost).
func (c *Cluster) dialHTTP2(ctx context.Context, addr string) (net.Conn, error) {
	addr = hostAddress(addr)
	h := c.set.Load().byAddr[addr]
	if h == nil {
		h = pickedHost(ctx, c.settings.name, addr)
	}
	if h == nil {
		return nil, fmt.Errorf("address %s is not a host of cluster %s", addr, c.settings.name)
	}
	res := c.breakersFor(ctx)
	cx := &res.cx
	if hostFull(h, res, -1) || !cx.tryAcquire() {
		c.extraCounter(extraCxOverflow).Inc()
		if h.Stats.CxActive.Load() > 0 {
			// The transport has a connection to the host, full: the
			// request fails rather than waiting (see RoundTripHTTP2).
			return nil, upstream.ErrOverflow
		}
		// The host's first connection opens past the limits, as in
		// Envoy, or requests to it could never go.
		if !cx.tryAcquire() {
			cx.force()
		}
	}
	tc, err := c.connect(ctx, h, alpnHTTP2)
	if err != nil {
		c.releaseConnSlot(cx)
		return nil, err
	}
	tc.cx, tc.http = cx, true
	c.stats.UpstreamCxHTTP2Total().Inc()
	var nc net.Conn = tc
	if max := c.settings.protocol.h2.maxStreams; max > 0 {
		c.h2Opening.add()
		nc = newStreamCapConn(nc, max, c.h2Opening.done)
	}
	g := newH2GuardConn(nc, &c.settings.protocol.h2, c.h2Stats())
	g.streamStats.track(tc, c.stats)
	return g, nil
}

// RoundTripHTTP2 sends req to h over the cluster's HTTP/2 connections and
// returns the response, whose body the caller must close. It points
// req.URL at h (scheme http, host h.Address); req.Host, when set, stays the
// :authority sent upstream. Headers go as they are: no Accept-Encoding or
// User-Agent is added. An extended CONNECT (a :protocol header) goes on
// the extended CONNECT pool's connections.
//
// The request counts against max_requests until its response body is
// closed (or the round trip fails); at the limit it is refused with
// upstream.ErrOverflow, counted in upstream_rq_pending_overflow as
// Envoy's pools count it. A new connection the request needs and
// max_connections refuses fails the round trip with upstream.ErrOverflow
// too: the transport does not queue requests for a connection the way
// Envoy's pool does, so HTTP/2 requests are never pending.
func (c *Cluster) RoundTripHTTP2(req *http.Request, h *upstream.Host) (*http.Response, error) {
	if c.Delegates() {
		u := c.carrier(h)
		if u == nil {
			return nil, errHostGone
		}
		return u.RoundTripHTTP2(req, h)
	}
	if c.h2 == nil {
		return nil, fmt.Errorf("cluster %s uses HTTP/1.1", c.settings.name)
	}
	res := c.breakersFor(req.Context())
	rq := &res.rq
	if !rq.tryAcquire() {
		c.extraCounter(extraRqPendingOverflow).Inc()
		return nil, upstream.ErrOverflow
	}
	res.startRequest()
	// moved is the request's host when it may leave the set before the
	// transport dials it or while the request runs.
	var moved *upstream.Host
	if c.hostsMove() {
		moved = h
		req = req.WithContext(withPickedHost(req.Context(), h))
	}
	resp, err := c.roundTripHTTP2(req, h)
	if err != nil {
		rq.release()
		c.afterHTTP2(moved)
		return nil, err
	}
	resp.Body = &requestBody{ReadCloser: resp.Body, rq: rq, c: c, moved: moved}
	return resp, nil
}

// requestBody is an HTTP/2 response body that gives its request's
// max_requests unit back when closed.
// On a cluster whose hosts change, it also knows the request's host
// (moved, see closeStray).
type requestBody struct {
	io.ReadCloser
	rq       *resource
	released atomic.Bool
	c        *Cluster
	moved    *upstream.Host
}

// Close closes the body and releases the request, once.
func (b *requestBody) Close() error {
	err := b.ReadCloser.Close()
	if b.released.CompareAndSwap(false, true) {
		b.rq.release()
		b.c.afterHTTP2(b.moved)
	}
	return err
}

// roundTripHTTP2 is RoundTripHTTP2 once the request holds its
// max_requests unit.
func (c *Cluster) roundTripHTTP2(req *http.Request, h *upstream.Host) (*http.Response, error) {
	if c.settings.protocol.h2.maxStreams > 0 {
		c.h2Opening.wait(req.Context(), c.settings.connectTimeout)
	}
	req.URL.Scheme = "http"
	req.URL.Host = transportHost(h.Address)
	if _, ok := req.Header["User-Agent"]; !ok {
		// The transport would send its own User-Agent; a proxy forwards
		// the client's, or none. An empty value tells it to send none.
		if req.Header == nil {
			req.Header = http.Header{}
		}
		req.Header["User-Agent"] = []string{""}
	}
	key := c.requestKey(req.Context())
	if isExtendedConnect(req) {
		switch {
		case key.tls != (tlsconfig.Override{}):
			// Its pool keeps one connection per address: it cannot
			// honour the request's server name
			return nil, errExtendedConnectAutoSNI
		case key.src.Addr.IsValid():
			// nor its source address
			return nil, errExtendedConnectSource
		case key.pp != (upstream.ProxyProtocolData{}):
			// nor the downstream side of its PROXY protocol header.
			return nil, errExtendedConnectProxyProtocol
		}
		return c.h2x.RoundTrip(req)
	}
	if key != (poolKey{}) {
		return c.h2SNI.transport(key).RoundTrip(req)
	}
	return c.h2.RoundTrip(req)
}

// errExtendedConnectAutoSNI fails an HTTP/2 upgrade (extended CONNECT) to
// an auto_sni cluster rather than send it with another server name.
var errExtendedConnectAutoSNI = errors.New("HTTP/2 upgrades (extended CONNECT) to a cluster with auto_sni or auto_san_validation are not supported by Outrigger")

// errExtendedConnectProxyProtocol fails an HTTP/2 upgrade (extended
// CONNECT) to a cluster with the upstream PROXY protocol transport socket
// rather than send it under another downstream's PROXY header.
var errExtendedConnectProxyProtocol = errors.New("HTTP/2 upgrades (extended CONNECT) to a cluster with the upstream PROXY protocol transport socket are not supported by Outrigger")

// errExtendedConnectSource fails an HTTP/2 upgrade (extended CONNECT) of a
// request with an original source rather than send it from another
// address.
var errExtendedConnectSource = errors.New("HTTP/2 upgrades (extended CONNECT) with original_src are not supported by Outrigger")

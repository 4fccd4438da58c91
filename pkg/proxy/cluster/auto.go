package cluster

import (
	"context"
	"crypto/tls"
	"sync"
	"sync/atomic"

	"github.com/outrigger-dev/outrigger/pkg/proxy/tlsconfig"
)

// What an auto_config cluster learned its upstream speaks.
const (
	protoUnknown int32 = iota
	protoHTTP11
	protoHTTP2
)

// alpnAuto are the protocols the learning connection offers, Envoy's
// auto_config order.
var alpnAuto = []string{tlsconfig.ALPNHTTP2, tlsconfig.ALPNHTTP11}

// autoProtocol is an auto_config cluster's knowledge of its upstream's
// protocol: learned once, from the first connection's ALPN.
type autoProtocol struct {
	learned atomic.Int32
	// mu makes concurrent first requests learn with one connection.
	mu sync.Mutex
}

// autoHTTP2 reports whether requests of an auto_config cluster go over
// HTTP/2: what ALPN chose on the cluster's first connection, opened now
// when there was none (then closed: the pools open their own, offering
// the protocol learned). A cluster that cannot connect yet goes on over
// HTTP/1.1, whose connection attempt then reports the failure.
func (c *Cluster) autoHTTP2() bool {
	if v := c.alpn.learned.Load(); v != protoUnknown {
		return v == protoHTTP2
	}
	c.alpn.mu.Lock()
	defer c.alpn.mu.Unlock()
	if v := c.alpn.learned.Load(); v != protoUnknown {
		return v == protoHTTP2
	}
	for _, h := range c.set.Load().hosts {
		if !h.Healthy() {
			continue
		}
		tc, err := c.connect(context.Background(), h, alpnAuto)
		if err != nil {
			return false
		}
		learned := protoHTTP11
		// A TLS connection, or a tap over one.
		if t, ok := tc.Conn.(interface{ ConnectionState() tls.ConnectionState }); ok && t.ConnectionState().NegotiatedProtocol == tlsconfig.ALPNHTTP2 {
			learned = protoHTTP2
		}
		_ = tc.Close()
		c.alpn.learned.Store(learned)
		return learned == protoHTTP2
	}
	return false
}

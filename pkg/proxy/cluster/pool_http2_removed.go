package cluster

import (
	"context"

	"github.com/outrigger-dev/outrigger/pkg/proxy/upstream"
)

// pickedHostKey carries an HTTP/2 request's host to the transport's dial:
// the transport names the host it dials by address only, and the host
// may have left the cluster's set since the request picked it.
type pickedHostKey struct{}

// withPickedHost returns ctx carrying h, the host of the request.
func withPickedHost(ctx context.Context, h *upstream.Host) context.Context {
	return context.WithValue(ctx, pickedHostKey{}, h)
}

// pickedHost is the host ctx carries when it is a host of the cluster
// named cluster at addr, else nil: a dial for another address (the
// transport dials for the request's address only, but a connection is
// shared) never takes it.
func pickedHost(ctx context.Context, cluster, addr string) *upstream.Host {
	h, _ := ctx.Value(pickedHostKey{}).(*upstream.Host)
	if h == nil || h.Address != addr || h.Cluster != cluster {
		return nil
	}
	return h
}

// hostsMove reports whether the cluster's hosts can leave its set while
// it runs (DNS answers, EDS updates, an original destination's or a
// dynamic forward proxy's hosts expiring); a STATIC cluster's cannot.
func (c *Cluster) hostsMove() bool {
	s := c.settings
	return s.dns != nil || s.eds != nil || s.origDst != nil || s.dfp != nil
}

// afterHTTP2 ends what an HTTP/2 request to h left open once the request
// is over, when nothing would pick it again: the connection dialled or
// kept for it would stay idle in the transport, so the idle connections
// go, as they went when the host or the cluster was removed (the
// transport cannot close one host's alone). That is when the cluster is
// out of service (a request that held it across its removal), or h, a
// host that could leave the set while the request ran (nil: one that
// cannot), is no longer a member. Envoy closes a removed host's or
// cluster's connections as their last stream ends in the same way.
func (c *Cluster) afterHTTP2(h *upstream.Host) {
	switch {
	case c.retired.Load():
	case h == nil || c.set.Load().byAddr[h.Address] != nil:
		return
	}
	c.closeIdleHTTP2()
}

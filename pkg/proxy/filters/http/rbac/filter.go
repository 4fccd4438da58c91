package rbac

import (
	"net/netip"
	"sync/atomic"

	"github.com/outrigger-dev/outrigger/pkg/proxy/filters/rbacengine"
	"github.com/outrigger-dev/outrigger/pkg/proxy/httpfilter"
)

// Envoy's answer to a denied request.
const (
	deniedStatus = 403
	deniedBody   = "RBAC: access denied"
)

// filterConfig is the compiled filter.
type filterConfig struct {
	// name is the key of the filter's per-route configurations.
	name  string
	rules *rules
	stats rbacengine.Stats
	// filter is the one filter of every request: it keeps no state.
	filter filter
}

// NewFilter implements httpfilter.Config.
func (c *filterConfig) NewFilter() httpfilter.Filter { return &c.filter }

// filter decides requests with its configuration's rules.
type filter struct {
	c *filterConfig
}

var _ httpfilter.Decoder = (*filter)(nil)

// DecodeHeaders implements httpfilter.Decoder, as Envoy's decodeHeaders:
// the shadow rules are evaluated and counted first, then the rules decide.
func (f *filter) DecodeHeaders(s httpfilter.Stream) httpfilter.Status {
	c := f.c
	r := c.rules
	if rc, ok := s.RouteConfig(c.name).(*rules); ok {
		r = rc
	}
	if r.enforced == nil && r.shadow == nil {
		return httpfilter.Continue
	}
	var in rbacengine.Input
	fillInput(&in, s, r.needs)
	if r.shadow != nil {
		c.stats.RecordShadow(r.shadow.Evaluate(&in))
	}
	if r.enforced == nil {
		return httpfilter.Continue
	}
	d := r.enforced.Evaluate(&in)
	c.stats.Record(d)
	if d.Allowed {
		return httpfilter.Continue
	}
	s.SendLocalReply(deniedStatus, deniedBody, 0, d.Details())
	return httpfilter.Stop
}

// fillInput reads what the rules need of the stream.
func fillInput(in *rbacengine.Input, s httpfilter.Stream, needs rbacengine.Needs) {
	in.Request = s.Request()
	if needs == 0 {
		return
	}
	info := s.Info()
	if needs&rbacengine.NeedAddresses != 0 {
		in.Local, _ = netip.ParseAddrPort(info.LocalAddress)
		direct, _ := netip.ParseAddrPort(info.DirectRemoteAddress)
		source, _ := netip.ParseAddrPort(info.RemoteAddress)
		in.DirectRemote, in.Source = direct.Addr(), source.Addr()
		// The connection manager's view of the client: x-forwarded-for
		// as use_remote_address and xff_num_trusted_hops trust it.
		in.Remote, _ = netip.ParseAddr(s.RemoteIP())
	}
	if needs&rbacengine.NeedRoute != 0 {
		if rt := s.Route(); rt != nil {
			in.HasRoute, in.RouteMetadata = true, rt.Metadata
		}
	}
	if needs&rbacengine.NeedTLS != 0 {
		in.ServerName = info.RequestedServerName
		if info.TLS != nil {
			in.TLS = true
			if cert := info.TLS.PeerCertificate; cert != nil {
				slot := s.ConnectionState(peerKey{}, newPeerSlot).(*atomic.Pointer[rbacengine.Peer])
				p := slot.Load()
				if p == nil {
					p = rbacengine.NewPeer(cert)
					slot.Store(p)
				}
				in.Peer = p
			}
		}
	}
}

// peerKey keys the connection's rendered peer identity, kept so that
// each request on a connection does not render the certificate again.
type peerKey struct{}

func newPeerSlot() any { return new(atomic.Pointer[rbacengine.Peer]) }

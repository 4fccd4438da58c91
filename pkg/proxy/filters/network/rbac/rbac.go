// Package rbac is the role-based access control network filter
// (envoy.filters.network.rbac): a read filter whose rules decide, from the
// connection's addresses, SNI and peer certificate, whether a connection
// goes on to the next filter (tcp_proxy, the HTTP connection manager) or
// is closed, after delay_deny when set. Its shadow rules are evaluated and
// counted without effect. The rules may take the matcher form (matcher,
// shadow_matcher: an xDS matcher over the connection's inputs, see
// rbacengine.CompileMatcher). Stats are Envoy's, under
// <stat_prefix>.rbac.
//
// The rules are evaluated once per connection, when the listener hands it
// to the filter chain (after the TLS handshake), rather than when its
// first byte arrives as in Envoy: a denied connection then never reaches
// the upstream, even with a protocol where the server speaks first. The
// inputs cannot change during a connection, so CONTINUOUS enforcement
// decides as ONE_TIME_ON_FIRST_BYTE does.
package rbac

import (
	"crypto/tls"
	"errors"
	"fmt"
	"net"
	"net/netip"
	"time"

	netrbacv3 "github.com/envoyproxy/go-control-plane/envoy/extensions/filters/network/rbac/v3"
	"github.com/go-logr/logr"
	"google.golang.org/protobuf/proto"

	"github.com/outrigger-dev/outrigger/pkg/proxy/accesslog"
	"github.com/outrigger-dev/outrigger/pkg/proxy/filters/rbacengine"
	"github.com/outrigger-dev/outrigger/pkg/proxy/netfilter"
)

// Name is the filter's name in the proxy. spelling.
const Name = "proxy.filters.network.rbac"

// Factory compiles the filter's configuration.
type Factory struct{}

var _ netfilter.Factory = Factory{}

// filter is the compiled filter: one value serves every connection.
type filter struct {
	enforced, shadow *rbacengine.Engine
	stats            rbacengine.Stats
	delayDeny        time.Duration
	log              logr.Logger
}

var _ netfilter.DataFilter = (*filter)(nil)

// Compile implements netfilter.Factory. Errors name the field path below
// typed_config.
func (Factory) Compile(m proto.Message, ctx netfilter.Context) (netfilter.Filter, error) {
	p, ok := m.(*netrbacv3.RBAC)
	if !ok {
		return nil, fmt.Errorf("expected a %s, got %T", proto.MessageName(&netrbacv3.RBAC{}), m)
	}
	switch {
	case p.GetStatPrefix() == "":
		return nil, errors.New("stat_prefix: must be set")
	case ctx.Stats == nil:
		return nil, errors.New("no stat store")
	}
	f := &filter{
		stats: rbacengine.NewStats(ctx.Stats, p.GetStatPrefix(), "", p.GetShadowRulesStatPrefix()),
		log:   ctx.Log,
	}
	if d := p.GetDelayDeny(); d != nil {
		f.delayDeny = d.AsDuration()
		if f.delayDeny < 0 {
			return nil, errors.New("delay_deny: must not be negative")
		}
	}
	var err error
	if f.enforced, err = rbacengine.CompileForm(p.GetRules(), p.GetMatcher(), rbacengine.NetworkFilter, "rules", "matcher"); err != nil {
		return nil, err
	}
	if f.shadow, err = rbacengine.CompileForm(p.GetShadowRules(), p.GetShadowMatcher(), rbacengine.NetworkFilter, "shadow_rules", "shadow_matcher"); err != nil {
		return nil, err
	}
	return f, nil
}

// OnData implements netfilter.DataFilter: after the TLS handshake (the
// peer's certificate is known), the shadow rules are counted, then the
// rules decide; a denied connection is refused (and closed by the chain)
// once delay_deny has passed.
func (f *filter) OnData(c net.Conn) *netfilter.Refusal {
	if f.enforced == nil && f.shadow == nil {
		return nil
	}
	var in rbacengine.Input
	fillInput(&in, c)
	if f.shadow != nil {
		f.stats.RecordShadow(f.shadow.Evaluate(&in))
	}
	if f.enforced == nil {
		return nil
	}
	d := f.enforced.Evaluate(&in)
	f.stats.Record(d)
	if d.Allowed {
		return nil
	}
	f.log.V(1).Info("connection denied", "remote", in.Source.String(), "details", d.Details())
	if f.delayDeny > 0 {
		// Envoy holds a denied connection, reading nothing, for
		// delay_deny before it closes it.
		t := time.NewTimer(f.delayDeny)
		<-t.C
	}
	// Envoy sets no response flag: the connection's termination details
	// name the policy.
	return &netfilter.Refusal{Reason: d.Details()}
}

// fillInput reads the connection's addresses, SNI and TLS peer.
func fillInput(in *rbacengine.Input, c net.Conn) {
	in.Local = addrPort(c.LocalAddr())
	src := addrPort(c.RemoteAddr())
	in.Source, in.SourcePort = src.Addr(), src.Port()
	in.Remote = in.Source
	in.DirectRemote = in.Source
	if d, ok := c.(interface{ DirectRemoteAddr() net.Addr }); ok {
		in.DirectRemote = addrPort(d.DirectRemoteAddr()).Addr()
	}
	in.ServerName = accesslog.RequestedServerName(c)
	if fs, ok := c.(netfilter.FilterStater); ok {
		// What the read filters before it kept (set_filter_state).
		in.FilterState = fs.FilterState
	}
	if t, ok := c.(interface {
		TLSConnectionState() (tls.ConnectionState, bool)
	}); ok {
		if cs, ok := t.TLSConnectionState(); ok {
			in.TLS = true
			if len(cs.PeerCertificates) > 0 {
				in.Peer = rbacengine.NewPeer(cs.PeerCertificates[0])
			}
		}
	}
	if v, ok := c.(interface{ PeerCertificateValidated() bool }); ok {
		in.PeerValidated = v.PeerCertificateValidated()
	}
}

// addrPort is a TCP address as a netip.AddrPort, the zero value for
// another kind of address.
func addrPort(a net.Addr) netip.AddrPort {
	if t, ok := a.(*net.TCPAddr); ok {
		return t.AddrPort()
	}
	if a == nil {
		return netip.AddrPort{}
	}
	ap, _ := netip.ParseAddrPort(a.String())
	return ap
}

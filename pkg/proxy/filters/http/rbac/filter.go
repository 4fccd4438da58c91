package rbac

import (
	"net/netip"
	"sync/atomic"

	"google.golang.org/protobuf/types/known/structpb"

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
	// policies are the per-policy counters (track_per_rule_stats).
	policies *policyStats
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
	var shadow *rbacengine.Decision
	if r.shadow != nil {
		d := r.shadow.Evaluate(&in)
		c.stats.RecordShadow(d)
		if r.perRule {
			c.policies.record(d, true)
		}
		shadow = &d
	}
	keys := c.rules
	if r.ownKeys {
		keys = r
	}
	if r.enforced == nil {
		s.SetDynamicMetadata(metadataNamespace, keys.shadowMetadata(*shadow))
		return httpfilter.Continue
	}
	d := r.enforced.Evaluate(&in)
	c.stats.Record(d)
	if r.perRule {
		c.policies.record(d, false)
	}
	if shadow != nil {
		// Recorded once the rules have run, as Envoy does: they do not
		// see it.
		s.SetDynamicMetadata(metadataNamespace, keys.shadowMetadata(*shadow))
	}
	if hint, set := d.AccessLogHint(); set {
		// Whether the request should be logged, for the access logs'
		// metadata filters, as Envoy shares it.
		s.SetDynamicMetadata(commonNamespace, &structpb.Struct{Fields: map[string]*structpb.Value{
			accessLogHint: structpb.NewBoolValue(hint),
		}})
	}
	if d.Allowed {
		return httpfilter.Continue
	}
	s.SendLocalReply(deniedStatus, deniedBody, 0, d.Details())
	return httpfilter.Stop
}

// Envoy's dynamic metadata of the filter.
const (
	metadataNamespace = "envoy.filters.http.rbac"
	commonNamespace   = "envoy.common"
	accessLogHint     = "access_log_hint"
)

// shadowMetadata is the shadow rules' result as dynamic metadata: the
// engine result and, when a policy matched, its name.
func (r *rules) shadowMetadata(d rbacengine.Decision) *structpb.Struct {
	result := "denied"
	if d.Allowed {
		result = "allowed"
	}
	st := &structpb.Struct{Fields: map[string]*structpb.Value{r.shadowResultKey: structpb.NewStringValue(result)}}
	if d.Matched {
		st.Fields[r.shadowPolicyKey] = structpb.NewStringValue(d.Policy)
	}
	return st
}

// fillInput reads what the rules need of the stream.
func fillInput(in *rbacengine.Input, s httpfilter.Stream, needs rbacengine.Needs) {
	in.Request = s.Request()
	// What earlier filters (and the shadow rules) recorded.
	in.Metadata = s.DynamicMetadata()
	if needs == 0 {
		return
	}
	info := s.Info()
	if needs&rbacengine.NeedAddresses != 0 {
		in.Local, _ = netip.ParseAddrPort(info.LocalAddress)
		direct, _ := netip.ParseAddrPort(info.DirectRemoteAddress)
		source, _ := netip.ParseAddrPort(info.RemoteAddress)
		in.DirectRemote, in.Source, in.SourcePort = direct.Addr(), source.Addr(), source.Port()
		// The connection manager's view of the client: x-forwarded-for
		// as use_remote_address and xff_num_trusted_hops trust it.
		in.Remote, _ = netip.ParseAddr(s.RemoteIP())
	}
	if needs&rbacengine.NeedFilterState != 0 {
		in.FilterState = s.FilterStateValue
	}
	if needs&rbacengine.NeedRoute != 0 {
		if rt := s.Route(); rt != nil {
			in.HasRoute, in.RouteMetadata = true, rt.Metadata
		}
	}
	if needs&rbacengine.NeedTLS != 0 {
		in.ServerName = info.RequestedServerName
		if info.TLS != nil {
			in.TLS, in.PeerValidated = true, info.TLS.PeerValidated
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

package router

import (
	routev3 "github.com/envoyproxy/go-control-plane/envoy/config/route/v3"

	"github.com/outrigger-dev/outrigger/pkg/proxy/accesslog"
)

// tlsMatch is a compiled RouteMatch.tls_context: what the downstream
// connection's client certificate must be, as Envoy's
// evaluateTlsContextMatch reads it. A plaintext connection has presented
// and validated none.
type tlsMatch struct {
	// presented and validated are the values required when their
	// ...Set is true; an unset option requires nothing.
	presented, presentedSet bool
	validated, validatedSet bool
}

// compileTLSMatch reads RouteMatch.tls_context into rm.
func compileTLSMatch(m *routev3.RouteMatch, rm *routeMatch) {
	tc := m.GetTlsContext()
	if tc == nil {
		return
	}
	t := &tlsMatch{}
	if p := tc.GetPresented(); p != nil {
		t.presented, t.presentedSet = p.GetValue(), true
	}
	if v := tc.GetValidated(); v != nil {
		t.validated, t.validatedSet = v.GetValue(), true
	}
	rm.tls = t
}

// matches reports whether the connection's TLS (nil: plaintext) meets
// the options: presented, a client certificate was sent; validated, a
// validation context checked it and every check passed.
func (t *tlsMatch) matches(info *accesslog.TLSInfo) bool {
	if t.presentedSet && t.presented != (info != nil && info.PeerCertificate != nil) {
		return false
	}
	return !t.validatedSet || t.validated == (info != nil && info.PeerValidated)
}

package httpfilter

import (
	"net/netip"
	"net/url"

	"github.com/outrigger-dev/outrigger/pkg/proxy/cel"
)

// FillCEL fills the CEL attributes (package cel) that a stream knows
// beyond its request head: the downstream addresses (source.*,
// destination.*), the connection's TLS attributes (connection.*), the
// request's protocol and start time. Callers fill the request head and
// metadata from what they already hold.
func FillCEL(s Stream, a *cel.Activation) {
	info := s.Info()
	a.Source, _ = netip.ParseAddrPort(info.RemoteAddress)
	// The client as the connection manager trusts it (x-forwarded-for):
	// Envoy's remote address then has port 0.
	if ip, err := netip.ParseAddr(s.RemoteIP()); err == nil && ip != a.Source.Addr() {
		a.Source = netip.AddrPortFrom(ip, 0)
	}
	a.Destination, _ = netip.ParseAddrPort(info.LocalAddress)
	if a.Request != nil {
		a.Request.Protocol = info.Protocol
		a.Request.Time = info.Start
	}
	c := &cel.Connection{RequestedServerName: info.RequestedServerName}
	if t := info.TLS; t != nil {
		c.TLS, c.TLSVersion = true, t.Version
		c.LocalSubject = t.LocalSubject()
		if lc := t.LocalCertificate; lc != nil {
			c.LocalURISAN, c.LocalDNSSAN = firstURI(lc.URIs), first(lc.DNSNames)
		}
		if pc := t.PeerCertificate; pc != nil {
			c.MTLS = true // a certificate presented, as Envoy's peerCertificatePresented
			c.PeerSubject = t.PeerSubject()
			c.PeerURISAN, c.PeerDNSSAN = firstURI(pc.URIs), first(pc.DNSNames)
		}
	}
	a.Connection = c
}

// FillStreamCEL fills a with all the attributes of s: its request head,
// its dynamic metadata, what FillCEL fills, and the response's code and
// headers when response is true (once the response head is there).
func FillStreamCEL(s Stream, response bool, a *cel.Activation) {
	a.Metadata = s.DynamicMetadata()
	if r := s.Request(); r != nil {
		a.Request = &cel.Request{Headers: r.Headers, Path: r.Path, Host: r.Host, Scheme: r.Scheme, Method: r.Method}
	}
	FillCEL(s, a)
	if response {
		a.Response = &cel.Response{Code: s.ResponseStatus(), Headers: s.ResponseHeaders()}
	}
}

// first is the first of names, "" for none.
func first(names []string) string {
	if len(names) == 0 {
		return ""
	}
	return names[0]
}

// firstURI is the first of uris, rendered; "" for none.
func firstURI(uris []*url.URL) string {
	if len(uris) == 0 {
		return ""
	}
	return uris[0].String()
}

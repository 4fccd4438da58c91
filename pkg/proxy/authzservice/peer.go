package authzservice

import (
	"crypto/x509"

	authv3 "github.com/envoyproxy/go-control-plane/envoy/service/auth/v3"

	"github.com/outrigger-dev/outrigger/pkg/proxy/accesslog"
)

// SetTLSPeers fills the TLS parts of a check's source (the client) and
// destination (this proxy) as Envoy's CheckRequestUtils::setAttrContextPeer
// does, from the downstream connection's TLS info (nil for a plaintext
// connection, which leaves them alone): each side's principal, the
// certificate's first URI SAN, else its first DNS SAN, else its subject
// (RFC 2253); with includeCert, the client's certificate in URL-encoded
// PEM.
func SetTLSPeers(source, destination *authv3.AttributeContext_Peer, info *accesslog.TLSInfo, includeCert bool) {
	if info == nil {
		return
	}
	source.Principal = principal(info.PeerCertificate)
	destination.Principal = principal(info.LocalCertificate)
	if includeCert && info.PeerCertificate != nil {
		source.Certificate = accesslog.URLEncodedPEM([]*x509.Certificate{info.PeerCertificate})
	}
}

// principal is a certificate's identity as Envoy names it in a check:
// the first URI SAN, else the first DNS SAN, else the subject; "" without
// a certificate.
func principal(c *x509.Certificate) string {
	switch {
	case c == nil:
		return ""
	case len(c.URIs) > 0:
		return SanitizeUTF8([]byte(c.URIs[0].String()))
	case len(c.DNSNames) > 0:
		return SanitizeUTF8([]byte(c.DNSNames[0]))
	}
	return SanitizeUTF8([]byte(c.Subject.String()))
}

// TLSSession is a check's tls_session as Envoy's setTLSSession fills it:
// on a TLS connection (info not nil), the SNI the client sent ("" for
// none); nil on a plaintext one.
func TLSSession(info *accesslog.TLSInfo, sni string) *authv3.AttributeContext_TLSSession {
	if info == nil {
		return nil
	}
	return &authv3.AttributeContext_TLSSession{Sni: sni}
}

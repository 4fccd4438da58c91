package authzservice

import (
	"crypto/tls"
	"crypto/x509"
	"net"

	authv3 "github.com/envoyproxy/go-control-plane/envoy/service/auth/v3"

	"github.com/outrigger-dev/outrigger/pkg/proxy/accesslog"
	"github.com/outrigger-dev/outrigger/pkg/proxy/tlsconfig"
)

// ConnPeers are a downstream connection's source (the client) and
// destination (this proxy) as Envoy's CheckRequestUtils::setAttrContextPeer
// fills them: each address and, on a TLS connection, each side's
// principal: the certificate's first URI SAN, else its first DNS SAN, else
// its subject (RFC 2253). With includeCert the source carries the client's
// certificate, URL-encoded PEM. Destination labels are left to the caller.
func ConnPeers(c net.Conn, includeCert bool) (source, destination *authv3.AttributeContext_Peer) {
	source = &authv3.AttributeContext_Peer{Address: SocketAddress(accesslog.AddressString(c.RemoteAddr()))}
	destination = &authv3.AttributeContext_Peer{Address: SocketAddress(accesslog.AddressString(c.LocalAddr()))}
	info := tlsconfig.AccessLogInfo(c)
	if info == nil {
		return source, destination
	}
	source.Principal = principal(info.PeerCertificate)
	destination.Principal = principal(info.LocalCertificate)
	if includeCert && info.PeerCertificate != nil {
		source.Certificate = accesslog.URLEncodedPEM([]*x509.Certificate{info.PeerCertificate})
	}
	return source, destination
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

// TLSSession is a downstream connection's tls_session as Envoy's
// setTLSSession fills it: on a TLS connection, the SNI the client sent
// in its handshake ("" for none); nil on a plaintext one.
func TLSSession(c net.Conn) *authv3.AttributeContext_TLSSession {
	t, ok := c.(interface {
		TLSConnectionState() (tls.ConnectionState, bool)
	})
	if !ok {
		return nil
	}
	cs, ok := t.TLSConnectionState()
	if !ok {
		return nil
	}
	return &authv3.AttributeContext_TLSSession{Sni: cs.ServerName}
}

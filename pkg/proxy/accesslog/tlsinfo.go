package accesslog

import (
	"crypto/x509"
	"net"
)

// TLSInfo is what the access log shows of a downstream TLS connection,
// rendered once per connection (tlsconfig.AccessLogInfo): %DOWNSTREAM_TLS_VERSION%,
// %DOWNSTREAM_TLS_CIPHER% and the peer certificate's
// %DOWNSTREAM_PEER_URI_SAN%, %DOWNSTREAM_PEER_SUBJECT%,
// %DOWNSTREAM_PEER_FINGERPRINT_256% and %DOWNSTREAM_PEER_SERIAL%.
type TLSInfo struct {
	Version, Cipher                string
	PeerURISAN, PeerSubject        string
	PeerFingerprint256, PeerSerial string
	// LocalURISAN and LocalSubject describe the certificate the proxy
	// served (%DOWNSTREAM_LOCAL_URI_SAN%, %DOWNSTREAM_LOCAL_SUBJECT%).
	LocalURISAN, LocalSubject string
	// PeerCertificate is the client's certificate itself, nil when it
	// sent none: what RBAC's authenticated principals match.
	PeerCertificate *x509.Certificate
	// PeerChain is the chain the client sent, leaf first (nil when it
	// sent none); LocalCertificate is the certificate the proxy served.
	// x-forwarded-client-cert is made of them.
	PeerChain        []*x509.Certificate
	LocalCertificate *x509.Certificate
}

// RequestedServerName is the server name a downstream connection asked
// for (SNI), "" when unknown.
func RequestedServerName(c net.Conn) string {
	if r, ok := c.(interface{ RequestedServerName() string }); ok {
		return r.RequestedServerName()
	}
	return ""
}

// tlsField is one of TLSInfo's strings, "" when the connection is not TLS.
func tlsField(e *Entry, get func(*TLSInfo) string) string {
	if e.TLS == nil {
		return ""
	}
	return get(e.TLS)
}

package tlsconfig

import (
	"crypto/sha256"
	"crypto/tls"
	"crypto/x509"
	"encoding/hex"
	"net"
	"strings"

	"github.com/outrigger-dev/outrigger/pkg/proxy/accesslog"
)

// AccessLogInfo returns the TLS information of a downstream connection (one
// that reports its TLS state, as the listener's connections do), nil for
// a plaintext one.
func AccessLogInfo(c net.Conn) *accesslog.TLSInfo {
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
	var local *x509.Certificate
	if l, ok := c.(interface{ TLSLocalCertificate() *x509.Certificate }); ok {
		local = l.TLSLocalCertificate()
	}
	return ConnInfo(cs, local)
}

// ConnInfo is the access log's TLSInfo of a connection in state cs,
// local being the certificate this proxy presented (nil for none).
func ConnInfo(cs tls.ConnectionState, local *x509.Certificate) *accesslog.TLSInfo {
	info := &accesslog.TLSInfo{Version: VersionName(cs.Version), Cipher: CipherName(cs.CipherSuite)}
	if local != nil {
		info.LocalCertificate = local
		info.LocalURISAN, info.LocalSubject = uriSANs(local), local.Subject.String()
	}
	if len(cs.PeerCertificates) > 0 {
		peer := cs.PeerCertificates[0]
		info.PeerCertificate, info.PeerChain = peer, cs.PeerCertificates
		// Envoy's renderings: SANs joined with ",", the subject in RFC
		// 2253 form, the SHA-256 of the DER and the serial in lower-case
		// hex.
		info.PeerURISAN = uriSANs(peer)
		info.PeerSubject = peer.Subject.String()
		sum := sha256.Sum256(peer.Raw)
		info.PeerFingerprint256 = hex.EncodeToString(sum[:])
		info.PeerSerial = peer.SerialNumber.Text(16)
	}
	return info
}

// uriSANs joins a certificate's URI SANs with ",", as Envoy shows them.
func uriSANs(c *x509.Certificate) string {
	uris := make([]string, len(c.URIs))
	for i, u := range c.URIs {
		uris[i] = u.String()
	}
	return strings.Join(uris, ",")
}

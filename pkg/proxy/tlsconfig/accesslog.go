package tlsconfig

import (
	"crypto/tls"
	"crypto/x509"
	"net"

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
	info := ConnInfo(cs, local)
	if v, ok := c.(interface{ PeerCertificateValidated() bool }); ok {
		info.PeerValidated = v.PeerCertificateValidated()
	}
	return info
}

// ConnInfo is the access log's TLSInfo of a connection in state cs,
// local being the certificate this proxy presented (nil for none). The
// certificates' renderings are left to the TLSInfo, made when asked for.
func ConnInfo(cs tls.ConnectionState, local *x509.Certificate) *accesslog.TLSInfo {
	info := &accesslog.TLSInfo{Version: VersionName(cs.Version), Cipher: CipherName(cs.CipherSuite), LocalCertificate: local}
	if len(cs.PeerCertificates) > 0 {
		info.PeerCertificate, info.PeerChain = cs.PeerCertificates[0], cs.PeerCertificates
	}
	return info
}

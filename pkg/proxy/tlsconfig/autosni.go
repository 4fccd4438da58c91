package tlsconfig

import (
	"context"
	"crypto/tls"
	"errors"
	"net"
)

// HandshakeAs is Handshake for a host known by name, with the upstream
// options auto_sni and auto_san_validation, as a dynamic forward proxy
// cluster always has them: the client sends serverName as its SNI, and,
// when the context validates the server's certificate, the certificate
// must be valid for serverName (its DNS SANs, wildcards included, or its
// IP SANs for an address) in place of the configured SAN matchers; the
// trusted CA and the pins still apply.
func (cl *Client) HandshakeAs(ctx context.Context, c net.Conn, fallbackALPN []string, st *Stats, serverName string) (*tls.Conn, error) {
	cl = cl.current()
	cfg := cl.cfg.Clone()
	cfg.ServerName = serverName
	if protos := cl.protocols(fallbackALPN); len(protos) > 0 {
		cfg.NextProtos = protos
	}
	if cl.v.active() {
		v := *cl.v
		v.sans = nil
		cfg.VerifyConnection = func(cs tls.ConnectionState) error {
			if err := v.verify(cs.PeerCertificates); err != nil {
				return err
			}
			if err := cs.PeerCertificates[0].VerifyHostname(serverName); err != nil {
				return &VerifyError{Reason: FailSAN, Err: errors.New("no subject alt name matches " + serverName)}
			}
			return nil
		}
	}
	return runClientHandshake(ctx, c, cfg, st)
}

package tlsconfig

import (
	"context"
	"crypto/tls"
	"testing"
	"time"

	tlsv3 "github.com/envoyproxy/go-control-plane/envoy/extensions/transport_sockets/tls/v3"

	"github.com/outrigger-dev/outrigger/pkg/proxy/tlsconfig/tlstest"
)

// TestPeerValidated checks Handshaked.PeerValidated: set for a client
// certificate the validation context checked and passed, not for one no
// validation context checks, nor for one ACCEPT_UNTRUSTED let through
// failing, nor without a certificate.
func TestPeerValidated(t *testing.T) {
	p := newPKI(t)
	// A client certificate of another CA.
	_, leaves := tlstest.Leaves(t, tlstest.Options{CommonName: "stranger", Client: true})
	stranger := leaves[0]
	trusting := func(mode tlsv3.CertificateValidationContext_TrustChainVerification) *tlsv3.DownstreamTlsContext {
		dc := p.context()
		dc.CommonTlsContext.ValidationContextType = &tlsv3.CommonTlsContext_ValidationContext{ValidationContext: &tlsv3.CertificateValidationContext{
			TrustedCa: file(p.caFile), TrustChainVerification: mode,
		}}
		return dc
	}
	tests := map[string]struct {
		dc     *tlsv3.DownstreamTlsContext
		client *tls.Config
		want   bool
	}{
		"verified against trusted_ca":    {trusting(tlsv3.CertificateValidationContext_VERIFY_TRUST_CHAIN), p.clientConfig(t, true), true},
		"no validation context":          {p.context(), p.clientConfig(t, true), false},
		"no certificate":                 {trusting(tlsv3.CertificateValidationContext_VERIFY_TRUST_CHAIN), p.clientConfig(t, false), false},
		"untrusted, accepted":            {trusting(tlsv3.CertificateValidationContext_ACCEPT_UNTRUSTED), p.clientWith(t, stranger), false},
		"trusted, with ACCEPT_UNTRUSTED": {trusting(tlsv3.CertificateValidationContext_ACCEPT_UNTRUSTED), p.clientConfig(t, true), true},
	}
	for name, tc := range tests {
		t.Run(name, func(t *testing.T) {
			s, err := CompileServer(tc.dc)
			if err != nil {
				t.Fatal(err)
			}
			a, b := loopbackPair(t)
			ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
			defer cancel()
			go func() {
				c := tls.Client(b, tc.client)
				if c.HandshakeContext(ctx) == nil {
					_, _ = c.Read(make([]byte, 1))
				}
			}()
			tc2, hs, err := s.HandshakeState(ctx, a, nil)
			if err != nil {
				t.Fatal(err)
			}
			_ = tc2.Close()
			if hs.PeerValidated != tc.want {
				t.Errorf("PeerValidated = %v, want %v", hs.PeerValidated, tc.want)
			}
			if hs.Local == nil {
				t.Error("no local certificate")
			}
		})
	}
}

package tlsconfig

import (
	"crypto/x509"
	"errors"
	"testing"

	tlsv3 "github.com/envoyproxy/go-control-plane/envoy/extensions/transport_sockets/tls/v3"
	"google.golang.org/protobuf/types/known/wrapperspb"

	"github.com/outrigger-dev/outrigger/pkg/proxy/tlsconfig/tlstest"
)

// TestEnforceRSAKeyUsage checks the key usage check of server
// certificates, which Envoy always makes (enforce_rsa_key_usage is
// deprecated and ignored, false included): an RSA certificate allowing
// keyEncipherment only is refused over TLS 1.3 (the key signs), an ECDSA
// or digitalSignature one passes.
func TestEnforceRSAKeyUsage(t *testing.T) {
	p := newPKI(t)
	for _, tc := range []struct {
		name    string
		leaf    tlstest.Options
		enforce bool
		fails   bool
	}{
		{"encipherment only, enforced", tlstest.Options{RSA: true, KeyUsage: x509.KeyUsageKeyEncipherment}, true, true},
		{"encipherment only, enforce_rsa_key_usage false", tlstest.Options{RSA: true, KeyUsage: x509.KeyUsageKeyEncipherment}, false, true},
		{"signature, enforced", tlstest.Options{RSA: true, KeyUsage: x509.KeyUsageDigitalSignature}, true, false},
		{"ecdsa, enforced", tlstest.Options{KeyUsage: x509.KeyUsageKeyEncipherment}, true, false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			leaf, err := p.ca.Issue(tc.leaf)
			if err != nil {
				t.Fatal(err)
			}
			s, err := CompileServer(&tlsv3.DownstreamTlsContext{CommonTlsContext: &tlsv3.CommonTlsContext{
				TlsCertificates: []*tlsv3.TlsCertificate{{CertificateChain: file(p.write(t, "ku.pem", leaf.CertPEM)), PrivateKey: file(p.write(t, "ku-key.pem", leaf.KeyPEM))}},
			}})
			if err != nil {
				t.Fatal(err)
			}
			uc := &tlsv3.UpstreamTlsContext{Sni: "localhost", CommonTlsContext: &tlsv3.CommonTlsContext{}}
			//lint:ignore SA1019 the deprecated field is accepted and ignored, as in Envoy
			uc.EnforceRsaKeyUsage = wrapperspb.Bool(tc.enforce)
			cl, err := CompileClient(uc)
			if err != nil {
				t.Fatal(err)
			}
			err = clientHandshake(t, cl, s, nil)
			if tc.fails != (err != nil) {
				t.Fatalf("handshake error %v, want failure %v", err, tc.fails)
			}
			if tc.fails && !errors.Is(err, errKeyUsage) {
				t.Errorf("error %v, want the key usage error", err)
			}
		})
	}
}

package bootstrap

import (
	"strings"
	"testing"

	corev3 "github.com/envoyproxy/go-control-plane/envoy/config/core/v3"
	tlsv3 "github.com/envoyproxy/go-control-plane/envoy/extensions/transport_sockets/tls/v3"

	"github.com/outrigger-dev/outrigger/pkg/proxy/builtin"
)

// TestValidateSecretPrivateKeyProvider: a private key provider is refused
// with its path and why, even with a fallback key beside it.
func TestValidateSecretPrivateKeyProvider(t *testing.T) {
	file := func(n string) *corev3.DataSource {
		return &corev3.DataSource{Specifier: &corev3.DataSource_Filename{Filename: n}}
	}
	sec := &tlsv3.Secret{Name: "s", Type: &tlsv3.Secret_TlsCertificate{TlsCertificate: &tlsv3.TlsCertificate{
		CertificateChain:   file("/c.pem"),
		PrivateKey:         file("/k.pem"),
		PrivateKeyProvider: &tlsv3.PrivateKeyProvider{ProviderName: "cryptomb", Fallback: true},
	}}}
	err := ValidateSecret(sec, builtin.Registry())
	const want = "tls_certificate.private_key_provider: not supported by Outrigger: private key providers (CryptoMB, QAT)"
	if err == nil || !strings.Contains(err.Error(), want) {
		t.Errorf("ValidateSecret = %v, want %q", err, want)
	}
	sec.GetTlsCertificate().PrivateKeyProvider = nil
	if err := ValidateSecret(sec, builtin.Registry()); err != nil {
		t.Errorf("without the provider: %v", err)
	}
}

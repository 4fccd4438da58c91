package tlsconfig

import (
	"testing"

	tlsv3 "github.com/envoyproxy/go-control-plane/envoy/extensions/transport_sockets/tls/v3"
)

// TestSystemRootCerts points Go's system pool at the test's CA with
// SSL_CERT_FILE. The pool is read once per process: no other test of
// the package may read it first (none asks for system_root_certs).
func TestSystemRootCerts(t *testing.T) {
	p := newPKI(t)
	other := newPKI(t) // a server certificate from a CA the system does not trust
	t.Setenv("SSL_CERT_FILE", p.caFile)
	t.Setenv("SSL_CERT_DIR", t.TempDir())
	system := &tlsv3.CertificateValidationContext{SystemRootCerts: &tlsv3.CertificateValidationContext_SystemRootCerts{}}
	withCA := &tlsv3.CertificateValidationContext{TrustedCa: file(other.caFile), SystemRootCerts: &tlsv3.CertificateValidationContext_SystemRootCerts{}}
	for _, tc := range []struct {
		name   string
		vc     *tlsv3.CertificateValidationContext
		server *testPKI
		ok     bool
	}{
		{"a server the system trusts", system, p, true},
		{"a server the system does not trust", system, other, false},
		{"trusted_ca wins over the system's roots", withCA, p, false},
		{"trusted_ca's own server", withCA, other, true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			cl, err := CompileClient(&tlsv3.UpstreamTlsContext{Sni: "localhost", CommonTlsContext: &tlsv3.CommonTlsContext{
				ValidationContextType: &tlsv3.CommonTlsContext_ValidationContext{ValidationContext: tc.vc}}})
			if err != nil {
				t.Fatal(err)
			}
			s, err := CompileServer(tc.server.context())
			if err != nil {
				t.Fatal(err)
			}
			store, st := newStats()
			err = clientHandshake(t, cl, s, st)
			if tc.ok != (err == nil) {
				t.Fatalf("handshake error %v, want success %v", err, tc.ok)
			}
			if got := store.Counter("listener.test.ssl.fail_verify_error").Value(); !tc.ok && got != 1 {
				t.Errorf("fail_verify_error = %d, want 1", got)
			}
		})
	}
}

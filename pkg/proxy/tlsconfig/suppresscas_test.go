package tlsconfig

import (
	"crypto/tls"
	"testing"

	tlsv3 "github.com/envoyproxy/go-control-plane/envoy/extensions/transport_sockets/tls/v3"
)

// TestSuppressClientCAList checks that suppress_client_ca_list empties
// the CertificateRequest's CA names while trusted_ca still verifies the
// client's certificate.
func TestSuppressClientCAList(t *testing.T) {
	p := newPKI(t)
	for _, suppress := range []bool{false, true} {
		s := suppressingServer(t, p, suppress)
		cfg := p.clientConfig(t, true)
		cert := cfg.Certificates[0]
		cfg.Certificates = nil
		var named [][]byte
		cfg.GetClientCertificate = func(cri *tls.CertificateRequestInfo) (*tls.Certificate, error) {
			named = cri.AcceptableCAs
			return &cert, nil
		}
		_, serr, cerr := handshake(t, s, nil, cfg)
		if serr != nil || cerr != nil {
			t.Fatalf("suppress %v: refused: server %v, client %v", suppress, serr, cerr)
		}
		if suppress != (len(named) == 0) {
			t.Errorf("suppress %v: CertificateRequest named %d CAs", suppress, len(named))
		}
	}
	// The CA still verifies: a certificate of another CA is refused.
	other := newPKI(t)
	s := suppressingServer(t, p, true)
	if _, serr, _ := handshake(t, s, nil, p.clientWith(t, other.client)); serr == nil {
		t.Error("accepted a client certificate of another CA")
	}
}

// suppressingServer is the PKI's server verifying clients with its CA,
// with suppress_client_ca_list as given.
func suppressingServer(t *testing.T, p *testPKI, suppress bool) *Server {
	t.Helper()
	ctx := p.context()
	ctx.CommonTlsContext.ValidationContextType = &tlsv3.CommonTlsContext_ValidationContext{
		ValidationContext: &tlsv3.CertificateValidationContext{TrustedCa: file(p.caFile), SuppressClientCaList: suppress},
	}
	s, err := CompileServer(ctx)
	if err != nil {
		t.Fatal(err)
	}
	return s
}

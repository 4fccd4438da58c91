package tlsconfig

import (
	"crypto/tls"
	"strings"
	"testing"

	tlsv3 "github.com/envoyproxy/go-control-plane/envoy/extensions/transport_sockets/tls/v3"

	"github.com/outrigger-dev/outrigger/pkg/proxy/tlsconfig/tlstest"
)

// TestCertificateTLSParams serves an RSA certificate for rsa.example.com
// limited to TLS 1.2 by its own tls_params, and an ECDSA one for
// ecdsa.example.com with the context's (TLS 1.3 allowed).
func TestCertificateTLSParams(t *testing.T) {
	p := newPKI(t)
	ctx := &tlsv3.DownstreamTlsContext{CommonTlsContext: &tlsv3.CommonTlsContext{
		TlsParams: &tlsv3.TlsParameters{EcdhCurves: []string{"X25519", "P-256"}}}}
	for _, c := range []struct {
		name   string
		rsa    bool
		params *tlsv3.TlsParameters
	}{
		{"rsa.example.com", true, &tlsv3.TlsParameters{TlsMaximumProtocolVersion: tlsv3.TlsParameters_TLSv1_2,
			CipherSuites: []string{"ECDHE-RSA-AES256-GCM-SHA384"}}},
		{"ecdsa.example.com", false, nil},
	} {
		l, err := p.ca.Issue(tlstest.Options{CommonName: c.name, DNS: []string{c.name}, RSA: c.rsa})
		if err != nil {
			t.Fatal(err)
		}
		ctx.CommonTlsContext.TlsCertificates = append(ctx.CommonTlsContext.TlsCertificates, &tlsv3.TlsCertificate{
			CertificateChain: file(p.write(t, c.name+".pem", l.CertPEM)), PrivateKey: file(p.write(t, c.name+"-key.pem", l.KeyPEM)),
			TlsParams: c.params,
		})
	}
	s, err := CompileServer(ctx)
	if err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		sni     string
		version uint16
		suite   uint16 // 0: any
		curve   tls.CurveID
	}{
		{"rsa.example.com", tls.VersionTLS12, tls.TLS_ECDHE_RSA_WITH_AES_256_GCM_SHA384, tls.X25519},
		{"ecdsa.example.com", tls.VersionTLS13, 0, tls.X25519},
	} {
		t.Run(tc.sni, func(t *testing.T) {
			cfg := p.clientConfig(t, false)
			cfg.ServerName = tc.sni
			cfg.CurvePreferences = []tls.CurveID{tls.X25519}
			cs, serr, cerr := handshake(t, s, nil, cfg)
			if serr != nil || cerr != nil {
				t.Fatalf("server %v, client %v", serr, cerr)
			}
			if cs.Version != tc.version || (tc.suite != 0 && cs.CipherSuite != tc.suite) || cs.CurveID != tc.curve {
				t.Errorf("version %x suite %s curve %v, want %x %s %v", cs.Version, tls.CipherSuiteName(cs.CipherSuite), cs.CurveID,
					tc.version, tls.CipherSuiteName(tc.suite), tc.curve)
			}
		})
	}
	// The certificate's suite alone: a TLS 1.2 client without it fails,
	// no other certificate is tried.
	cfg := p.clientConfig(t, false)
	cfg.ServerName, cfg.MaxVersion = "rsa.example.com", tls.VersionTLS12
	cfg.CipherSuites = []uint16{tls.TLS_ECDHE_RSA_WITH_AES_128_GCM_SHA256, tls.TLS_ECDHE_ECDSA_WITH_AES_128_GCM_SHA256}
	if _, serr, cerr := handshake(t, s, nil, cfg); serr == nil || cerr == nil {
		t.Error("handshake without the certificate's suite succeeded")
	}
	s.chosen.Range(func(k, _ any) bool {
		t.Errorf("a handshake left its certificate pinned: %v", k)
		return true
	})
}

func TestCertificateTLSParamsErrors(t *testing.T) {
	p := newPKI(t)
	ctx := p.context()
	ctx.CommonTlsContext.TlsCertificates[0].TlsParams = &tlsv3.TlsParameters{EcdhCurves: []string{"P-999"}}
	_, err := CompileServer(ctx)
	if err == nil || !strings.Contains(err.Error(), `common_tls_context.tls_certificates[0].tls_params.ecdh_curves[0]: unknown or unsupported curve "P-999"`) {
		t.Errorf("server error %v", err)
	}
	_, err = CompileClient(&tlsv3.UpstreamTlsContext{CommonTlsContext: &tlsv3.CommonTlsContext{TlsCertificates: []*tlsv3.TlsCertificate{{
		CertificateChain: file(p.certFile), PrivateKey: file(p.keyFile), TlsParams: &tlsv3.TlsParameters{}}}}})
	if err == nil || !strings.Contains(err.Error(), "common_tls_context.tls_certificates[0].tls_params: not supported on a client certificate") {
		t.Errorf("client error %v", err)
	}
}

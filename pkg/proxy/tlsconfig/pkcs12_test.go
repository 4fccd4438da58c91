package tlsconfig

import (
	"strings"
	"testing"

	corev3 "github.com/envoyproxy/go-control-plane/envoy/config/core/v3"
	tlsv3 "github.com/envoyproxy/go-control-plane/envoy/extensions/transport_sockets/tls/v3"
	"software.sslmate.com/src/go-pkcs12"
)

// TestPKCS12 checks a tls_certificates entry given as a PKCS#12 file:
// served with its chain, its password applied, and Envoy's errors.
func TestPKCS12(t *testing.T) {
	p := newPKI(t)
	key, err := ParsePrivateKey(p.server.KeyPEM)
	if err != nil {
		t.Fatal(err)
	}
	pfx, err := pkcs12.Modern.Encode(key, p.server.Cert, nil, "secret")
	if err != nil {
		t.Fatal(err)
	}
	pfxFile := p.write(t, "server.p12", pfx)
	inline := func(s string) *corev3.DataSource {
		return &corev3.DataSource{Specifier: &corev3.DataSource_InlineString{InlineString: s}}
	}
	ctx := func(tc *tlsv3.TlsCertificate) *tlsv3.DownstreamTlsContext {
		return &tlsv3.DownstreamTlsContext{CommonTlsContext: &tlsv3.CommonTlsContext{TlsCertificates: []*tlsv3.TlsCertificate{tc}}}
	}
	s, err := CompileServer(ctx(&tlsv3.TlsCertificate{Pkcs12: file(pfxFile), Password: inline("secret")}))
	if err != nil {
		t.Fatal(err)
	}
	if got, want := servedSerialOf(t, s, p), p.server.Cert.SerialNumber.Text(16); got != want {
		t.Fatalf("serves %s, want %s", got, want)
	}
	if got := s.certs.chain[0].path; got != pfxFile {
		t.Errorf("/certs path %q, want %q", got, pfxFile)
	}
	for name, tc := range map[string]struct {
		cert *tlsv3.TlsCertificate
		want string
	}{
		"wrong password": {&tlsv3.TlsCertificate{Pkcs12: file(pfxFile), Password: inline("wrong")},
			"tls_certificates[0].pkcs12: Failed to load pkcs12 from " + pfxFile},
		"with a chain": {&tlsv3.TlsCertificate{Pkcs12: file(pfxFile), CertificateChain: file(p.certFile)},
			"tls_certificates[0].pkcs12: Certificate configuration can't have both pkcs12 and certificate_chain"},
		"not pkcs12": {&tlsv3.TlsCertificate{Pkcs12: file(p.certFile)}, "Failed to load pkcs12 from " + p.certFile},
	} {
		t.Run(name, func(t *testing.T) {
			_, err := CompileServer(ctx(tc.cert))
			if err == nil || !strings.Contains(err.Error(), tc.want) {
				t.Fatalf("error %v, want %q", err, tc.want)
			}
		})
	}
}

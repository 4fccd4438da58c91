package tlsconfig

import (
	"crypto/tls"
	"crypto/x509"
	"encoding/base64"
	"encoding/pem"
	"fmt"
	"strings"
	"testing"
	"time"

	corev3 "github.com/envoyproxy/go-control-plane/envoy/config/core/v3"
	tlsv3 "github.com/envoyproxy/go-control-plane/envoy/extensions/transport_sockets/tls/v3"
	matcherv3 "github.com/envoyproxy/go-control-plane/envoy/type/matcher/v3"
	"google.golang.org/protobuf/types/known/anypb"
	"google.golang.org/protobuf/types/known/wrapperspb"

	"github.com/outrigger-dev/outrigger/pkg/proxy/tlsconfig/tlstest"
)

// spiffePKI is two trust domains, a.example (the test PKI's CA, which
// also signs the server certificate) and b.example, with their bundles
// in files.
type spiffePKI struct {
	*testPKI
	caB          *tlstest.CA
	fileA, fileB string
}

func newSPIFFEPKI(t *testing.T) *spiffePKI {
	t.Helper()
	p := newPKI(t)
	caB, err := tlstest.NewCA("b.example CA")
	if err != nil {
		t.Fatal(err)
	}
	return &spiffePKI{testPKI: p, caB: caB, fileA: p.caFile, fileB: p.write(t, "b.pem", caB.PEM)}
}

// svid issues a client certificate of ca with the URI SANs uris.
func svid(t *testing.T, ca *tlstest.CA, o tlstest.Options, uris ...string) *tlstest.Leaf {
	t.Helper()
	o.Client, o.URIs = true, uris
	l, err := ca.Issue(o)
	if err != nil {
		t.Fatal(err)
	}
	return l
}

// spiffeConfig is a custom_validator_config of the SPIFFE validator.
func spiffeConfig(t testing.TB, cfg *tlsv3.SPIFFECertValidatorConfig) *corev3.TypedExtensionConfig {
	t.Helper()
	a, err := anypb.New(cfg)
	if err != nil {
		t.Fatal(err)
	}
	return &corev3.TypedExtensionConfig{Name: SPIFFEValidatorName, TypedConfig: a}
}

// domains is a SPIFFE config of the two trust domains.
func (p *spiffePKI) domains() *tlsv3.SPIFFECertValidatorConfig {
	return &tlsv3.SPIFFECertValidatorConfig{TrustDomains: []*tlsv3.SPIFFECertValidatorConfig_TrustDomain{
		{Name: "a.example", TrustBundle: file(p.fileA)},
		{Name: "b.example", TrustBundle: file(p.fileB)},
	}}
}

// server is a listener context validating clients with vc.
func (p *spiffePKI) server(t *testing.T, vc *tlsv3.CertificateValidationContext) *Server {
	t.Helper()
	dc := p.context()
	dc.CommonTlsContext.ValidationContextType = &tlsv3.CommonTlsContext_ValidationContext{ValidationContext: vc}
	s, err := CompileServer(dc)
	if err != nil {
		t.Fatal(err)
	}
	return s
}

func TestSPIFFEListener(t *testing.T) {
	p := newSPIFFEPKI(t)
	uriExact := func(s string) *tlsv3.SubjectAltNameMatcher {
		return &tlsv3.SubjectAltNameMatcher{SanType: tlsv3.SubjectAltNameMatcher_URI,
			Matcher: &matcherv3.StringMatcher{MatchPattern: &matcherv3.StringMatcher_Exact{Exact: s}}}
	}
	dnsExact := &tlsv3.SubjectAltNameMatcher{SanType: tlsv3.SubjectAltNameMatcher_DNS,
		Matcher: &matcherv3.StringMatcher{MatchPattern: &matcherv3.StringMatcher_Exact{Exact: "nothing.example"}}}
	for _, tc := range []struct {
		name    string
		sans    []*tlsv3.SubjectAltNameMatcher
		expired bool
		leaf    *tlstest.Leaf // nil: no client certificate
		counter string        // "": accepted
	}{
		{name: "a.example SVID", leaf: svid(t, p.ca, tlstest.Options{}, "spiffe://a.example/ns/x")},
		{name: "b.example SVID", leaf: svid(t, p.caB, tlstest.Options{}, "spiffe://b.example/ns/y")},
		{name: "b.example's CA minting an a.example ID", leaf: svid(t, p.caB, tlstest.Options{}, "spiffe://a.example/ns/x"), counter: "fail_verify_error"},
		{name: "unknown trust domain", leaf: svid(t, p.ca, tlstest.Options{}, "spiffe://c.example/ns/x"), counter: "fail_verify_error"},
		{name: "no path in the ID", leaf: svid(t, p.ca, tlstest.Options{}, "spiffe://a.example"), counter: "fail_verify_error"},
		{name: "no URI SAN", leaf: svid(t, p.ca, tlstest.Options{}), counter: "fail_verify_error"},
		{name: "the first URI SAN picks the domain", leaf: svid(t, p.ca, tlstest.Options{}, "spiffe://b.example/ns/x", "spiffe://a.example/ns/x"), counter: "fail_verify_error"},
		{name: "a leaf that signs certificates", leaf: svid(t, p.ca, tlstest.Options{KeyUsage: x509.KeyUsageDigitalSignature | x509.KeyUsageCertSign}, "spiffe://a.example/ns/x"), counter: "fail_verify_error"},
		{name: "no client certificate", counter: "fail_verify_no_cert"},
		{name: "URI matcher matches", sans: []*tlsv3.SubjectAltNameMatcher{uriExact("spiffe://a.example/ns/x")}, leaf: svid(t, p.ca, tlstest.Options{}, "spiffe://a.example/ns/x")},
		{name: "URI matcher does not match", sans: []*tlsv3.SubjectAltNameMatcher{uriExact("spiffe://a.example/ns/other")}, leaf: svid(t, p.ca, tlstest.Options{}, "spiffe://a.example/ns/x"), counter: "fail_verify_san"},
		// Envoy's SPIFFE validator keeps only URI matchers: a DNS one
		// alone leaves none, so any valid SVID passes.
		{name: "DNS matcher is not read", sans: []*tlsv3.SubjectAltNameMatcher{dnsExact}, leaf: svid(t, p.ca, tlstest.Options{}, "spiffe://a.example/ns/x")},
		{name: "expired SVID", leaf: svid(t, p.ca, tlstest.Options{NotBefore: time.Now().Add(-48 * time.Hour), NotAfter: time.Now().Add(-time.Hour)}, "spiffe://a.example/ns/x"), counter: "fail_verify_error"},
		{name: "expired SVID with allow_expired_certificate", expired: true, leaf: svid(t, p.ca, tlstest.Options{NotBefore: time.Now().Add(-48 * time.Hour), NotAfter: time.Now().Add(-time.Hour)}, "spiffe://a.example/ns/x")},
	} {
		t.Run(tc.name, func(t *testing.T) {
			s := p.server(t, &tlsv3.CertificateValidationContext{
				CustomValidatorConfig:     spiffeConfig(t, p.domains()),
				MatchTypedSubjectAltNames: tc.sans,
				AllowExpiredCertificate:   tc.expired,
			})
			cfg := p.clientConfig(t, false)
			if tc.leaf != nil {
				cfg = p.clientWith(t, tc.leaf)
			}
			store, st := newStats()
			_, serr, cerr := handshake(t, s, st, cfg)
			if tc.counter == "" {
				if serr != nil || cerr != nil {
					t.Fatalf("handshake refused: %v / %v", serr, cerr)
				}
				return
			}
			if serr == nil || cerr == nil {
				t.Fatalf("handshake accepted (server %v, client %v)", serr, cerr)
			}
			if got := store.Counter("listener.test.ssl." + tc.counter).Value(); got != 1 {
				t.Errorf("%s = %d, want 1 (server error %v)", tc.counter, got, serr)
			}
		})
	}
}

// TestSPIFFEClientCAs checks that a listener names every trust domain's
// CA in its CertificateRequest, as Envoy's SPIFFE validator does.
func TestSPIFFEClientCAs(t *testing.T) {
	p := newSPIFFEPKI(t)
	s := p.server(t, &tlsv3.CertificateValidationContext{CustomValidatorConfig: spiffeConfig(t, p.domains())})
	var names int
	cfg := p.clientConfig(t, false)
	leaf := svid(t, p.ca, tlstest.Options{}, "spiffe://a.example/ns/x")
	c, err := tls.X509KeyPair(leaf.CertPEM, leaf.KeyPEM)
	if err != nil {
		t.Fatal(err)
	}
	cfg.GetClientCertificate = func(cri *tls.CertificateRequestInfo) (*tls.Certificate, error) {
		names = len(cri.AcceptableCAs)
		return &c, nil
	}
	if _, serr, cerr := handshake(t, s, nil, cfg); serr != nil || cerr != nil {
		t.Fatalf("handshake: %v / %v", serr, cerr)
	}
	if names != 2 {
		t.Errorf("CertificateRequest names %d CAs, want 2", names)
	}
	// /certs shows the first trust domain's first CA as Envoy names it.
	if got, want := s.certs.ca.path, "a.example: "+p.fileA; got != want {
		t.Errorf("/certs CA path %q, want %q", got, want)
	}
}

func TestSPIFFETrustBundleMap(t *testing.T) {
	p := newSPIFFEPKI(t)
	bundle := func(ca *tlstest.CA) string {
		return fmt.Sprintf(`{"spiffe_sequence": 1, "keys": [{"use": "jwt-svid", "kty": "EC"}, {"use": "x509-svid", "kty": "EC", "x5c": [%q]}]}`,
			base64.StdEncoding.EncodeToString(ca.Cert.Raw))
	}
	m := fmt.Sprintf(`{"trust_domains": {"a.example": %s, "b.example": %s}}`, bundle(p.ca), bundle(p.caB))
	cfg := &tlsv3.SPIFFECertValidatorConfig{TrustBundles: &corev3.DataSource{Specifier: &corev3.DataSource_InlineString{InlineString: m}}}
	s := p.server(t, &tlsv3.CertificateValidationContext{CustomValidatorConfig: spiffeConfig(t, cfg)})
	if _, serr, cerr := handshake(t, s, nil, p.clientWith(t, svid(t, p.caB, tlstest.Options{}, "spiffe://b.example/w"))); serr != nil || cerr != nil {
		t.Fatalf("b.example SVID refused: %v / %v", serr, cerr)
	}
	if _, serr, _ := handshake(t, s, nil, p.clientWith(t, svid(t, p.ca, tlstest.Options{}, "spiffe://b.example/w"))); serr == nil {
		t.Fatal("a.example's CA minting a b.example ID accepted")
	}
}

func TestSPIFFEUpstream(t *testing.T) {
	p := newSPIFFEPKI(t)
	// Servers presenting an SVID as their certificate.
	serve := func(ca *tlstest.CA, uri string) *Server {
		l, err := ca.Issue(tlstest.Options{URIs: []string{uri}, DNS: []string{"localhost"}})
		if err != nil {
			t.Fatal(err)
		}
		s, err := CompileServer(&tlsv3.DownstreamTlsContext{CommonTlsContext: &tlsv3.CommonTlsContext{
			TlsCertificates: []*tlsv3.TlsCertificate{{
				CertificateChain: &corev3.DataSource{Specifier: &corev3.DataSource_InlineBytes{InlineBytes: l.CertPEM}},
				PrivateKey:       &corev3.DataSource{Specifier: &corev3.DataSource_InlineBytes{InlineBytes: l.KeyPEM}},
			}}}})
		if err != nil {
			t.Fatal(err)
		}
		return s
	}
	cl, err := CompileClient(&tlsv3.UpstreamTlsContext{CommonTlsContext: &tlsv3.CommonTlsContext{
		ValidationContextType: &tlsv3.CommonTlsContext_ValidationContext{ValidationContext: &tlsv3.CertificateValidationContext{
			CustomValidatorConfig: spiffeConfig(t, p.domains())}}}})
	if err != nil {
		t.Fatal(err)
	}
	if err := clientHandshake(t, cl, serve(p.caB, "spiffe://b.example/server"), nil); err != nil {
		t.Fatalf("b.example server refused: %v", err)
	}
	_, st := newStats()
	store := st
	err = clientHandshake(t, cl, serve(p.caB, "spiffe://a.example/server"), store)
	if err == nil || !strings.Contains(err.(*HandshakeError).FailureReason(), "CERTIFICATE_VERIFY_FAILED") {
		t.Fatalf("wrong trust domain: %v", err)
	}
}

func TestSPIFFEConfigErrors(t *testing.T) {
	p := newSPIFFEPKI(t)
	td := func(name, f string) *tlsv3.SPIFFECertValidatorConfig_TrustDomain {
		return &tlsv3.SPIFFECertValidatorConfig_TrustDomain{Name: name, TrustBundle: file(f)}
	}
	const at = "common_tls_context.validation_context.custom_validator_config."
	for _, tc := range []struct {
		name string
		vc   *tlsv3.CertificateValidationContext
		want string
	}{
		{"duplicate trust domain", &tlsv3.CertificateValidationContext{CustomValidatorConfig: spiffeConfig(t, &tlsv3.SPIFFECertValidatorConfig{
			TrustDomains: []*tlsv3.SPIFFECertValidatorConfig_TrustDomain{td("a.example", p.fileA), td("a.example", p.fileB)}})},
			at + "typed_config.trust_domains[1].name: Multiple trust bundles are given for one trust domain for a.example"},
		{"bundle without a CA", &tlsv3.CertificateValidationContext{CustomValidatorConfig: spiffeConfig(t, &tlsv3.SPIFFECertValidatorConfig{
			TrustDomains: []*tlsv3.SPIFFECertValidatorConfig_TrustDomain{td("a.example", p.keyFile)}})},
			"Failed to load trusted CA certificate for a.example"},
		{"missing bundle file", &tlsv3.CertificateValidationContext{CustomValidatorConfig: spiffeConfig(t, &tlsv3.SPIFFECertValidatorConfig{
			TrustDomains: []*tlsv3.SPIFFECertValidatorConfig_TrustDomain{td("a.example", p.dir+"/nope.pem")}})},
			at + "typed_config.trust_domains[0].trust_bundle.filename"},
		{"workload trust domain", &tlsv3.CertificateValidationContext{CustomValidatorConfig: spiffeConfig(t, &tlsv3.SPIFFECertValidatorConfig{
			TrustDomains: []*tlsv3.SPIFFECertValidatorConfig_TrustDomain{{Name: "a.example", TrustBundle: file(p.fileA), WorkloadTrustDomain: "w"}}})},
			at + "typed_config.trust_domains[0].workload_trust_domain"},
		{"trust_bundles from a file", &tlsv3.CertificateValidationContext{CustomValidatorConfig: spiffeConfig(t, &tlsv3.SPIFFECertValidatorConfig{
			TrustBundles: file(p.fileA)})}, at + "typed_config.trust_bundles.filename"},
		{"trust_bundles not JSON", &tlsv3.CertificateValidationContext{CustomValidatorConfig: spiffeConfig(t, &tlsv3.SPIFFECertValidatorConfig{
			TrustBundles: &corev3.DataSource{Specifier: &corev3.DataSource_InlineString{InlineString: "{"}}})},
			at + "typed_config.trust_bundles: inline: invalid SPIFFE trust bundle map"},
		{"x5c of two", &tlsv3.CertificateValidationContext{CustomValidatorConfig: spiffeConfig(t, &tlsv3.SPIFFECertValidatorConfig{
			TrustBundles: &corev3.DataSource{Specifier: &corev3.DataSource_InlineString{InlineString: `{"trust_domains": {"a": {"keys": [{"use": "x509-svid", "x5c": ["", ""]}]}}}`}}})},
			"expected exactly one certificate in x5c, found 2"},
		{"trust_domains beside trust_bundles", &tlsv3.CertificateValidationContext{CustomValidatorConfig: spiffeConfig(t, &tlsv3.SPIFFECertValidatorConfig{
			TrustDomains: []*tlsv3.SPIFFECertValidatorConfig_TrustDomain{td("a.example", p.fileA)},
			TrustBundles: &corev3.DataSource{Specifier: &corev3.DataSource_InlineString{InlineString: "{}"}}})},
			at + "typed_config.trust_domains: Envoy ignores them when trust_bundles is set"},
		{"trusted_ca beside", &tlsv3.CertificateValidationContext{TrustedCa: file(p.fileA), CustomValidatorConfig: spiffeConfig(t, p.domains())},
			"common_tls_context.validation_context.trusted_ca: not read by the envoy.tls.cert_validator.spiffe validator"},
		{"max_verify_depth beside", &tlsv3.CertificateValidationContext{MaxVerifyDepth: wrapperspb.UInt32(2), CustomValidatorConfig: spiffeConfig(t, p.domains())},
			"common_tls_context.validation_context.max_verify_depth: not read"},
		{"unknown validator", &tlsv3.CertificateValidationContext{CustomValidatorConfig: &corev3.TypedExtensionConfig{Name: "envoy.tls.cert_validator.other", TypedConfig: spiffeConfig(t, p.domains()).GetTypedConfig()}},
			at + "name: unknown certificate validator \"envoy.tls.cert_validator.other\""},
		{"wrong config type", &tlsv3.CertificateValidationContext{CustomValidatorConfig: &corev3.TypedExtensionConfig{Name: SPIFFEValidatorName, TypedConfig: mustAny(t, &tlsv3.CertificateValidationContext{})}},
			at + "typed_config: envoy.tls.cert_validator.spiffe takes an envoy.extensions.transport_sockets.tls.v3.SPIFFECertValidatorConfig"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			dc := p.context()
			dc.CommonTlsContext.ValidationContextType = &tlsv3.CommonTlsContext_ValidationContext{ValidationContext: tc.vc}
			_, err := CompileServer(dc)
			if err == nil || !strings.Contains(err.Error(), tc.want) {
				t.Fatalf("error %v, want %q", err, tc.want)
			}
		})
	}
}

// TestSPIFFEDefaultByName checks that naming Envoy's default validator
// keeps the default validation (trusted_ca here).
func TestSPIFFEDefaultByName(t *testing.T) {
	p := newSPIFFEPKI(t)
	cv := spiffeConfig(t, &tlsv3.SPIFFECertValidatorConfig{})
	cv.Name = DefaultValidatorName
	s := p.server(t, &tlsv3.CertificateValidationContext{TrustedCa: file(p.fileB), CustomValidatorConfig: cv})
	if _, serr, cerr := handshake(t, s, nil, p.clientWith(t, svid(t, p.caB, tlstest.Options{}))); serr != nil || cerr != nil {
		t.Fatalf("b CA's client refused: %v / %v", serr, cerr)
	}
	if _, serr, _ := handshake(t, s, nil, p.clientWith(t, svid(t, p.ca, tlstest.Options{}, "spiffe://a.example/x"))); serr == nil {
		t.Fatal("a client of another CA accepted")
	}
}

func mustAny(t *testing.T, m *tlsv3.CertificateValidationContext) *anypb.Any {
	t.Helper()
	a, err := anypb.New(m)
	if err != nil {
		t.Fatal(err)
	}
	return a
}

// TestSPIFFEBundleCRL checks that CRLs in a trust domain's bundle are
// applied: a revoked SVID is refused, another one accepted.
func TestSPIFFEBundleCRL(t *testing.T) {
	p := newSPIFFEPKI(t)
	good := svid(t, p.ca, tlstest.Options{}, "spiffe://a.example/good")
	revoked := svid(t, p.ca, tlstest.Options{}, "spiffe://a.example/revoked")
	cert, err := x509.ParseCertificate(pemBytes(t, revoked.CertPEM))
	if err != nil {
		t.Fatal(err)
	}
	crl, err := p.ca.CRL(time.Now().Add(time.Hour), cert)
	if err != nil {
		t.Fatal(err)
	}
	bundle := p.write(t, "a-with-crl.pem", append(append([]byte{}, p.ca.PEM...), crl...))
	s := p.server(t, &tlsv3.CertificateValidationContext{CustomValidatorConfig: spiffeConfig(t, &tlsv3.SPIFFECertValidatorConfig{
		TrustDomains: []*tlsv3.SPIFFECertValidatorConfig_TrustDomain{{Name: "a.example", TrustBundle: file(bundle)}}})})
	if _, serr, cerr := handshake(t, s, nil, p.clientWith(t, good)); serr != nil || cerr != nil {
		t.Fatalf("unrevoked SVID refused: %v / %v", serr, cerr)
	}
	if _, serr, _ := handshake(t, s, nil, p.clientWith(t, revoked)); serr == nil || !strings.Contains(serr.Error(), "revoked") {
		t.Fatalf("revoked SVID: %v", serr)
	}
}

func pemBytes(t *testing.T, b []byte) []byte {
	t.Helper()
	blk, _ := pem.Decode(b)
	if blk == nil {
		t.Fatal("no PEM block")
	}
	return blk.Bytes
}

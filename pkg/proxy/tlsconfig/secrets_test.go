package tlsconfig

import (
	"context"
	"crypto/tls"
	"errors"
	"runtime"
	"strings"
	"testing"
	"time"

	corev3 "github.com/envoyproxy/go-control-plane/envoy/config/core/v3"
	tlsv3 "github.com/envoyproxy/go-control-plane/envoy/extensions/transport_sockets/tls/v3"
	matcherv3 "github.com/envoyproxy/go-control-plane/envoy/type/matcher/v3"

	"github.com/outrigger-dev/outrigger/pkg/proxy/tlsconfig/tlstest"
)

// certSecret is a TLS certificate secret of leaf, inline.
func certSecret(name string, leaf *tlstest.Leaf) *tlsv3.Secret {
	inline := func(b []byte) *corev3.DataSource {
		return &corev3.DataSource{Specifier: &corev3.DataSource_InlineBytes{InlineBytes: b}}
	}
	return &tlsv3.Secret{Name: name, Type: &tlsv3.Secret_TlsCertificate{TlsCertificate: &tlsv3.TlsCertificate{
		CertificateChain: inline(leaf.CertPEM), PrivateKey: inline(leaf.KeyPEM),
	}}}
}

// resolverOf resolves names to the given providers.
func resolverOf(ps ...*Provider) SecretResolver {
	return func(sc *tlsv3.SdsSecretConfig) (*Provider, error) {
		for _, p := range ps {
			if p.Name() == sc.GetName() {
				return p, nil
			}
		}
		return nil, &unknownSecret{sc.GetName()}
	}
}

type unknownSecret struct{ name string }

func (e *unknownSecret) Error() string { return "name: Unknown static secret: " + e.name }

// servedSerialOf is the serial of the certificate s serves.
func servedSerialOf(t *testing.T, s *Server, p *testPKI) string {
	t.Helper()
	a, b := loopbackPair(t)
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	done := make(chan struct{})
	go func() {
		defer close(done)
		_, _, _ = s.Handshake(ctx, a, nil)
		_ = a.Close()
	}()
	cc := tls.Client(b, p.clientConfig(t, false))
	err := cc.HandshakeContext(ctx)
	_ = b.Close()
	<-done
	if err != nil {
		t.Fatal(err)
	}
	return cc.ConnectionState().PeerCertificates[0].SerialNumber.Text(16)
}

func TestServerFollowsSecret(t *testing.T) {
	p := newPKI(t)
	second, err := p.ca.Issue(tlstest.Options{})
	if err != nil {
		t.Fatal(err)
	}
	prov := NewProvider("cert", certSecret("cert", p.server))
	s, err := CompileServerWithSecrets(&tlsv3.DownstreamTlsContext{CommonTlsContext: &tlsv3.CommonTlsContext{
		TlsCertificateSdsSecretConfigs: []*tlsv3.SdsSecretConfig{{Name: "cert"}},
	}}, resolverOf(prov), nil)
	if err != nil {
		t.Fatal(err)
	}
	if got, want := servedSerialOf(t, s, p), p.server.Cert.SerialNumber.Text(16); got != want {
		t.Fatalf("serves %s, want the first certificate %s", got, want)
	}
	if err := prov.Update(certSecret("cert", second)); err != nil {
		t.Fatal(err)
	}
	want := second.Cert.SerialNumber.Text(16)
	if got := servedSerialOf(t, s, p); got != want {
		t.Fatalf("after the update serves %s, want %s", got, want)
	}
	if got := s.Certificates(second.Cert.NotBefore).GetCertChain()[0].GetSerialNumber(); got != want {
		t.Errorf("/certs shows %s, want %s", got, want)
	}
	bad := certSecret("cert", second)
	bad.GetTlsCertificate().CertificateChain = &corev3.DataSource{Specifier: &corev3.DataSource_InlineString{InlineString: "junk"}}
	if err := prov.Update(bad); err == nil || !strings.Contains(err.Error(), "no PEM certificate found") {
		t.Fatalf("bad update: error %v, want the parse error", err)
	}
	if got := servedSerialOf(t, s, p); got != want {
		t.Fatalf("after a rejected update serves %s, want %s", got, want)
	}
	if prov.Secret().GetTlsCertificate().GetCertificateChain().GetInlineString() == "junk" {
		t.Error("the rejected value became current")
	}
}

func TestCombinedValidationContext(t *testing.T) {
	p := newPKI(t)
	ca := NewProvider("ca", &tlsv3.Secret{Name: "ca", Type: &tlsv3.Secret_ValidationContext{ValidationContext: &tlsv3.CertificateValidationContext{TrustedCa: file(p.caFile)}}})
	compile := func(san string) *Client {
		t.Helper()
		cl, err := CompileClientWithSecrets(&tlsv3.UpstreamTlsContext{CommonTlsContext: &tlsv3.CommonTlsContext{
			ValidationContextType: &tlsv3.CommonTlsContext_CombinedValidationContext{CombinedValidationContext: &tlsv3.CommonTlsContext_CombinedCertificateValidationContext{
				DefaultValidationContext: &tlsv3.CertificateValidationContext{MatchTypedSubjectAltNames: []*tlsv3.SubjectAltNameMatcher{{
					SanType: tlsv3.SubjectAltNameMatcher_DNS, Matcher: &matcherv3.StringMatcher{MatchPattern: &matcherv3.StringMatcher_Exact{Exact: san}},
				}}},
				ValidationContextSdsSecretConfig: &tlsv3.SdsSecretConfig{Name: "ca"},
			}},
		}}, resolverOf(ca), nil)
		if err != nil {
			t.Fatal(err)
		}
		return cl
	}
	s, err := CompileServer(p.context())
	if err != nil {
		t.Fatal(err)
	}
	if err := clientHandshake(t, compile("localhost"), s, nil); err != nil {
		t.Errorf("matching SAN and trusted CA: %v", err)
	}
	err = clientHandshake(t, compile("other.example.com"), s, nil)
	if ve := (*VerifyError)(nil); !errors.As(err, &ve) || ve.Reason != FailSAN {
		t.Errorf("SAN of the default context not applied: %v", err)
	}
	if _, err := CompileClientWithSecrets(&tlsv3.UpstreamTlsContext{CommonTlsContext: &tlsv3.CommonTlsContext{
		ValidationContextType: &tlsv3.CommonTlsContext_ValidationContextSdsSecretConfig{ValidationContextSdsSecretConfig: &tlsv3.SdsSecretConfig{Name: "nowhere"}},
	}}, resolverOf(ca), nil); err == nil || err.Error() != "common_tls_context.validation_context_sds_secret_config.name: Unknown static secret: nowhere" {
		t.Errorf("unknown secret: %v", err)
	}
}

func TestGoneContextUnsubscribed(t *testing.T) {
	p := newPKI(t)
	prov := NewProvider("cert", certSecret("cert", p.server))
	func() {
		if _, err := CompileServerWithSecrets(&tlsv3.DownstreamTlsContext{CommonTlsContext: &tlsv3.CommonTlsContext{
			TlsCertificateSdsSecretConfigs: []*tlsv3.SdsSecretConfig{{Name: "cert"}},
		}}, resolverOf(prov), nil); err != nil {
			t.Fatal(err)
		}
	}()
	for range 20 {
		runtime.GC()
		if err := prov.Update(certSecret("cert", p.server)); err != nil {
			t.Fatal(err)
		}
		prov.mu.Lock()
		n := len(prov.users)
		prov.mu.Unlock()
		if n == 0 {
			return
		}
	}
	t.Error("a context nothing uses is still subscribed")
}

package tlsconfig

import (
	"errors"
	"testing"

	tlsv3 "github.com/envoyproxy/go-control-plane/envoy/extensions/transport_sockets/tls/v3"
)

// A context whose secrets come from discovery has no TLS until every one
// has a value: its handshakes fail, Ready stays open, and a secret that
// comes while another is still awaited is accepted without a build.
func TestServerWaitsForPendingSecrets(t *testing.T) {
	p := newPKI(t)
	cert := NewProvider("cert", nil)
	ca := NewProvider("ca", nil)
	s, err := CompileServerWithSecrets(&tlsv3.DownstreamTlsContext{CommonTlsContext: &tlsv3.CommonTlsContext{
		TlsCertificateSdsSecretConfigs: []*tlsv3.SdsSecretConfig{{Name: "cert"}},
		ValidationContextType:          &tlsv3.CommonTlsContext_ValidationContextSdsSecretConfig{ValidationContextSdsSecretConfig: &tlsv3.SdsSecretConfig{Name: "ca"}},
	}}, resolverOf(cert, ca), nil)
	if err != nil {
		t.Fatal(err)
	}
	select {
	case <-s.Ready():
		t.Fatal("ready before its secrets came")
	default:
	}
	if _, err, _ := handshake(t, s, nil, p.clientConfig(t, false)); !errors.Is(err, errSecretsNotReady) {
		t.Fatalf("handshake without secrets: %v, want %v", err, errSecretsNotReady)
	}

	if err := cert.Update(certSecret("cert", p.server)); err != nil {
		t.Fatalf("the first secret, the other still awaited: %v", err)
	}
	select {
	case <-s.Ready():
		t.Fatal("ready with a secret still awaited")
	default:
	}
	caSecret := &tlsv3.Secret{Name: "ca", Type: &tlsv3.Secret_ValidationContext{ValidationContext: &tlsv3.CertificateValidationContext{
		TrustedCa: file(p.write(t, "ca.pem", p.ca.PEM)),
	}}}
	if err := ca.Update(caSecret); err != nil {
		t.Fatal(err)
	}
	<-s.Ready()
	if got, want := servedSerialOf(t, s, p), p.server.Cert.SerialNumber.Text(16); got != want {
		t.Fatalf("served %s, want %s", got, want)
	}
}

// MarkReady ends the wait without a value (an initial fetch timeout): the
// context is ready, and its handshakes still fail until the secret comes.
func TestProviderMarkReadyWithoutValue(t *testing.T) {
	p := newPKI(t)
	cert := NewProvider("cert", nil)
	cl, err := CompileClientWithSecrets(&tlsv3.UpstreamTlsContext{CommonTlsContext: &tlsv3.CommonTlsContext{
		TlsCertificateSdsSecretConfigs: []*tlsv3.SdsSecretConfig{{Name: "cert"}},
	}}, resolverOf(cert), nil)
	if err != nil {
		t.Fatal(err)
	}
	cert.MarkReady()
	<-cl.Ready()
	a, b := loopbackPair(t)
	defer a.Close()
	defer b.Close()
	if _, err := cl.Handshake(t.Context(), a, nil, nil); !errors.Is(err, errSecretsNotReady) {
		t.Fatalf("handshake without the secret: %v, want %v", err, errSecretsNotReady)
	}
	if err := cert.Update(certSecret("cert", p.server)); err != nil {
		t.Fatal(err)
	}
	if cl.current().cfg == nil {
		t.Fatal("no context once the secret came")
	}
}

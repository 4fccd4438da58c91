package tlsconfig

import (
	"context"
	"strings"
	"testing"
	"time"

	tlsv3 "github.com/envoyproxy/go-control-plane/envoy/extensions/transport_sockets/tls/v3"
	"google.golang.org/protobuf/types/known/wrapperspb"

	"github.com/outrigger-dev/outrigger/pkg/proxy/stats"
)

// clientHandshake runs cl's handshake against s over loopback and
// returns the client's error.
func clientHandshake(t *testing.T, cl *Client, s *Server, st *Stats) error {
	t.Helper()
	a, b := loopbackPair(t)
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	done := make(chan struct{})
	go func() {
		defer close(done)
		if tc, _, err := s.Handshake(ctx, a, nil); err == nil {
			// The client reads its session ticket (TLS 1.3) with the
			// first byte.
			_, _ = tc.Write([]byte("x"))
		}
		_ = a.Close()
	}()
	tc, err := cl.Handshake(ctx, b, nil, st)
	if err == nil {
		_, _ = tc.Read(make([]byte, 1))
	}
	_ = b.Close()
	<-done
	return err
}

func TestClientSessionResumption(t *testing.T) {
	p := newPKI(t)
	s, err := CompileServer(p.context())
	if err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		name   string
		keys   *wrapperspb.UInt32Value
		reused uint64
	}{
		{"default keeps one session", nil, 1},
		{"max_session_keys 0 keeps none", wrapperspb.UInt32(0), 0},
	} {
		t.Run(tc.name, func(t *testing.T) {
			cl, err := CompileClient(&tlsv3.UpstreamTlsContext{Sni: "localhost", MaxSessionKeys: tc.keys,
				CommonTlsContext: &tlsv3.CommonTlsContext{ValidationContextType: &tlsv3.CommonTlsContext_ValidationContext{
					ValidationContext: &tlsv3.CertificateValidationContext{TrustedCa: file(p.caFile)}}}})
			if err != nil {
				t.Fatal(err)
			}
			store := stats.NewStore()
			st := NewStats(store.Scope("cluster.c.ssl."))
			for range 2 {
				if err := clientHandshake(t, cl, s, st); err != nil {
					t.Fatal(err)
				}
			}
			if got := store.Counter("cluster.c.ssl.handshake").Value(); got != 2 {
				t.Errorf("handshake = %d, want 2", got)
			}
			if got := store.Counter("cluster.c.ssl.session_reused").Value(); got != tc.reused {
				t.Errorf("session_reused = %d, want %d", got, tc.reused)
			}
		})
	}
}

func TestClientVerifyFailureReason(t *testing.T) {
	p := newPKI(t)
	s, err := CompileServer(p.context())
	if err != nil {
		t.Fatal(err)
	}
	cl, err := CompileClient(&tlsv3.UpstreamTlsContext{CommonTlsContext: &tlsv3.CommonTlsContext{
		ValidationContextType: &tlsv3.CommonTlsContext_ValidationContext{ValidationContext: &tlsv3.CertificateValidationContext{
			TrustedCa: file(p.caFile), VerifyCertificateHash: []string{strings.Repeat("00", 32)}}},
	}})
	if err != nil {
		t.Fatal(err)
	}
	store := stats.NewStore()
	st := NewStats(store.Scope("cluster.c.ssl."))
	err = clientHandshake(t, cl, s, st)
	he, ok := err.(*HandshakeError)
	if !ok {
		t.Fatalf("error %v (%T), want a *HandshakeError", err, err)
	}
	if want := "TLS_error:|268435581:SSL routines:OPENSSL_internal:CERTIFICATE_VERIFY_FAILED:TLS_error_end"; he.FailureReason() != want {
		t.Errorf("FailureReason() = %q, want %q", he.FailureReason(), want)
	}
	if got := store.Counter("cluster.c.ssl.fail_verify_cert_hash").Value(); got != 1 {
		t.Errorf("fail_verify_cert_hash = %d, want 1", got)
	}
}

func TestCompileClientErrors(t *testing.T) {
	p := newPKI(t)
	cert := &tlsv3.TlsCertificate{CertificateChain: file(p.certFile), PrivateKey: file(p.keyFile)}
	_, err := CompileClient(&tlsv3.UpstreamTlsContext{
		Sni: "a\x00b", AllowRenegotiation: true,
		CommonTlsContext: &tlsv3.CommonTlsContext{TlsCertificates: []*tlsv3.TlsCertificate{cert, cert}},
	})
	if err == nil {
		t.Fatal("no error")
	}
	for _, want := range []string{
		"sni: SNI names containing NULL-byte are not allowed",
		"allow_renegotiation: TLS renegotiation is not supported by Outrigger",
		"common_tls_context.tls_certificates: Multiple TLS certificates are not supported for client contexts",
	} {
		if !strings.Contains(err.Error(), want) {
			t.Errorf("error %q lacks %q", err, want)
		}
	}
}

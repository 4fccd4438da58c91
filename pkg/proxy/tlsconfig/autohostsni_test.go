package tlsconfig

import (
	"context"
	"crypto/tls"
	"strings"
	"testing"
	"time"

	tlsv3 "github.com/envoyproxy/go-control-plane/envoy/extensions/transport_sockets/tls/v3"
	matcherv3 "github.com/envoyproxy/go-control-plane/envoy/type/matcher/v3"

	"github.com/outrigger-dev/outrigger/pkg/proxy/stats"
	"github.com/outrigger-dev/outrigger/pkg/proxy/tlsconfig/tlstest"
)

// sniServer answers one handshake on a loopback socket with leaf and
// returns the server name the client sent, and the client's outcome of
// HandshakeWith(ov).
func sniServer(t *testing.T, cl *Client, leaf *tlstest.Leaf, ov Override, st *Stats) (string, error) {
	t.Helper()
	cert, err := tls.X509KeyPair(leaf.CertPEM, leaf.KeyPEM)
	if err != nil {
		t.Fatal(err)
	}
	a, b := loopbackPair(t)
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	sent := make(chan string, 1)
	go func() {
		srv := tls.Server(a, &tls.Config{GetCertificate: func(h *tls.ClientHelloInfo) (*tls.Certificate, error) {
			sent <- h.ServerName
			return &cert, nil
		}})
		if srv.HandshakeContext(ctx) == nil {
			_, _ = srv.Write([]byte("x"))
		}
		_ = a.Close()
	}()
	tc, _, err := cl.HandshakeWith(ctx, b, nil, ov, st)
	if err == nil {
		_, _ = tc.Read(make([]byte, 1))
	}
	_ = b.Close()
	select {
	case name := <-sent:
		return name, err
	case <-ctx.Done():
		t.Fatal("the server saw no ClientHello")
		return "", err
	}
}

func TestAutoHostSNI(t *testing.T) {
	p := newPKI(t)
	leaf, err := p.ca.Issue(tlstest.Options{DNS: []string{"a.example.com"}})
	if err != nil {
		t.Fatal(err)
	}
	vc := &tlsv3.CertificateValidationContext{TrustedCa: file(p.caFile)}
	for _, tc := range []struct {
		name     string
		autoHost bool
		ov       Override
		want     string
	}{
		{"the host's hostname replaces sni", true, Override{HostName: "a.example.com"}, "a.example.com"},
		{"a host without hostname keeps sni", true, Override{}, "configured.example.com"},
		{"a request's override wins over the hostname", true, Override{ServerName: "b.example.com", HostName: "a.example.com"}, "b.example.com"},
		{"without auto_host_sni the hostname is not sent", false, Override{HostName: "a.example.com"}, "configured.example.com"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			cl, err := CompileClient(&tlsv3.UpstreamTlsContext{Sni: "configured.example.com", AutoHostSni: tc.autoHost,
				CommonTlsContext: &tlsv3.CommonTlsContext{ValidationContextType: &tlsv3.CommonTlsContext_ValidationContext{ValidationContext: vc}}})
			if err != nil {
				t.Fatal(err)
			}
			got, err := sniServer(t, cl, leaf, tc.ov, nil)
			if err != nil {
				t.Fatal(err)
			}
			if got != tc.want {
				t.Errorf("server name sent %q, want %q", got, tc.want)
			}
		})
	}
}

func TestAutoSNISANValidation(t *testing.T) {
	p := newPKI(t)
	leafA, err := p.ca.Issue(tlstest.Options{DNS: []string{"a.example.com"}, URIs: []string{"spiffe://b.example.com"}})
	if err != nil {
		t.Fatal(err)
	}
	wild, err := p.ca.Issue(tlstest.Options{DNS: []string{"*.example.com"}})
	if err != nil {
		t.Fatal(err)
	}
	// The configured SAN matcher matches no certificate here: with
	// auto_sni_san_validation the SNI's check replaces it.
	vc := &tlsv3.CertificateValidationContext{TrustedCa: file(p.caFile), MatchTypedSubjectAltNames: []*tlsv3.SubjectAltNameMatcher{{
		SanType: tlsv3.SubjectAltNameMatcher_DNS, Matcher: &matcherv3.StringMatcher{MatchPattern: &matcherv3.StringMatcher_Exact{Exact: "nothing.invalid"}}}}}
	for _, tc := range []struct {
		name    string
		leaf    *tlstest.Leaf
		ov      Override
		wantSAN uint64
	}{
		{"a DNS SAN equal to the host's name", leafA, Override{HostName: "A.example.com"}, 0},
		{"a wildcard DNS SAN covering it", wild, Override{HostName: "x.example.com"}, 0},
		{"no DNS SAN for the name sent", leafA, Override{HostName: "b.example.com"}, 1},
		{"a URI SAN does not count", leafA, Override{ServerName: "spiffe://b.example.com"}, 1},
		{"the wildcard covers one label only", wild, Override{HostName: "x.y.example.com"}, 1},
	} {
		t.Run(tc.name, func(t *testing.T) {
			cl, err := CompileClient(&tlsv3.UpstreamTlsContext{AutoHostSni: true, AutoSniSanValidation: true,
				CommonTlsContext: &tlsv3.CommonTlsContext{ValidationContextType: &tlsv3.CommonTlsContext_ValidationContext{ValidationContext: vc}}})
			if err != nil {
				t.Fatal(err)
			}
			store := stats.NewStore()
			st := NewStats(store.Scope("cluster.c.ssl."))
			_, err = sniServer(t, cl, tc.leaf, tc.ov, st)
			if (err != nil) != (tc.wantSAN > 0) {
				t.Fatalf("handshake error %v, want failure %v", err, tc.wantSAN > 0)
			}
			if got := store.Counter("cluster.c.ssl.fail_verify_san").Value(); got != tc.wantSAN {
				t.Errorf("fail_verify_san = %d, want %d", got, tc.wantSAN)
			}
		})
	}
}

func TestAutoSNISANValidationWithoutTrust(t *testing.T) {
	for _, tc := range []struct {
		name string
		ctc  *tlsv3.CommonTlsContext
		want string
	}{
		{"no validation context", &tlsv3.CommonTlsContext{}, "auto_sni_san_validation: 'auto_sni_san_validation' was configured without a validation context"},
		{"no trusted_ca", &tlsv3.CommonTlsContext{ValidationContextType: &tlsv3.CommonTlsContext_ValidationContext{ValidationContext: &tlsv3.CertificateValidationContext{
			VerifyCertificateSpki: []string{"NvqYIYSbgK2vCJpQhObf77vv+bQWtc5ek5RIOwPiC9A="}}}}, "auto_sni_san_validation: 'auto_sni_san_validation' was configured without configuring a trusted CA"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			_, err := CompileClient(&tlsv3.UpstreamTlsContext{Sni: "x", AutoSniSanValidation: true, CommonTlsContext: tc.ctc})
			if err == nil || !strings.Contains(err.Error(), tc.want) {
				t.Errorf("error %v, want %q", err, tc.want)
			}
		})
	}
}

package tlsconfig

import (
	"crypto/tls"
	"slices"
	"testing"

	tlsv3 "github.com/envoyproxy/go-control-plane/envoy/extensions/transport_sockets/tls/v3"
)

// TestPreferClientCiphers gives the server hellos in the client's order
// (Go's client sends its suites in Go's order whatever its config says;
// the e2e spec drives openssl for the whole handshake).
func TestPreferClientCiphers(t *testing.T) {
	p := newPKI(t) // an ECDSA server certificate
	gcm, chacha := tls.TLS_ECDHE_ECDSA_WITH_AES_128_GCM_SHA256, tls.TLS_ECDHE_ECDSA_WITH_CHACHA20_POLY1305_SHA256
	aes256 := tls.TLS_ECDHE_ECDSA_WITH_AES_256_GCM_SHA384
	tls12 := []uint16{tls.VersionTLS12}
	for _, tc := range []struct {
		name     string
		prefer   bool
		ciphers  []string // cipher_suites; empty for Envoy's defaults
		client   []uint16 // the client's suites, in its order
		versions []uint16
		want     []uint16 // the suites the handshake may pick; nil for all configured
	}{
		{name: "the client's first suite", prefer: true, client: []uint16{aes256, gcm}, versions: tls12, want: []uint16{aes256}},
		{name: "the client's first suite the server allows", prefer: true, ciphers: []string{"ECDHE-ECDSA-AES128-GCM-SHA256", "ECDHE-ECDSA-CHACHA20-POLY1305"},
			client: []uint16{aes256, chacha, gcm}, versions: tls12, want: []uint16{chacha}},
		{name: "a suite the certificate cannot sign for is passed over", prefer: true,
			client: []uint16{tls.TLS_ECDHE_RSA_WITH_AES_256_GCM_SHA384, aes256, gcm}, versions: tls12, want: []uint16{aes256}},
		{name: "without it Go's order", client: []uint16{aes256, gcm}, versions: tls12},
		{name: "TLS 1.3 is not affected", prefer: true, client: []uint16{aes256, gcm}, versions: []uint16{tls.VersionTLS13, tls.VersionTLS12}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			ctx := p.context()
			ctx.PreferClientCiphers = tc.prefer
			if len(tc.ciphers) > 0 {
				ctx.CommonTlsContext.TlsParams = &tlsv3.TlsParameters{CipherSuites: tc.ciphers}
			}
			s, err := CompileServer(ctx)
			if err != nil {
				t.Fatal(err)
			}
			hello := &tls.ClientHelloInfo{CipherSuites: tc.client, SupportedVersions: tc.versions,
				SupportedCurves: []tls.CurveID{tls.X25519, tls.CurveP256}}
			got := s.cfg.CipherSuites
			if s.cfg.GetConfigForClient != nil {
				cfg, err := s.cfg.GetConfigForClient(hello)
				if err != nil {
					t.Fatal(err)
				}
				if cfg != nil {
					got = cfg.CipherSuites
				}
			}
			want := tc.want
			if want == nil {
				want = s.cfg.CipherSuites
			}
			if !slices.Equal(got, want) {
				t.Errorf("suites %v, want %v", got, want)
			}
		})
	}
	// A whole handshake, on the one suite both sides allow.
	ctx := p.context()
	ctx.PreferClientCiphers = true
	s, err := CompileServer(ctx)
	if err != nil {
		t.Fatal(err)
	}
	cfg := p.clientConfig(t, false)
	cfg.MaxVersion, cfg.CipherSuites = tls.VersionTLS12, []uint16{chacha, aes256}
	cs, serr, cerr := handshake(t, s, nil, cfg)
	if serr != nil || cerr != nil {
		t.Fatalf("server %v, client %v", serr, cerr)
	}
	if cs.CipherSuite != chacha && cs.CipherSuite != aes256 {
		t.Errorf("suite %s, want one the client offered", tls.CipherSuiteName(cs.CipherSuite))
	}
}

func TestClientPreferredSuiteRSA(t *testing.T) {
	p := newPKI(t)
	l, err := p.ca.Issue(tlsOptionsRSA())
	if err != nil {
		t.Fatal(err)
	}
	cert, err := tls.X509KeyPair(l.CertPEM, l.KeyPEM)
	if err != nil {
		t.Fatal(err)
	}
	cfg := &tls.Config{MinVersion: tls.VersionTLS12, MaxVersion: tls.VersionTLS13,
		CipherSuites:     []uint16{tls.TLS_ECDHE_RSA_WITH_AES_128_GCM_SHA256, tls.TLS_RSA_WITH_AES_128_GCM_SHA256},
		CurvePreferences: []tls.CurveID{tls.CurveP256}}
	for _, tc := range []struct {
		name   string
		hello  tls.ClientHelloInfo
		expect uint16
	}{
		{"the RSA key exchange when preferred", tls.ClientHelloInfo{SupportedVersions: []uint16{tls.VersionTLS12},
			CipherSuites:    []uint16{tls.TLS_RSA_WITH_AES_128_GCM_SHA256, tls.TLS_ECDHE_RSA_WITH_AES_128_GCM_SHA256},
			SupportedCurves: []tls.CurveID{tls.CurveP256}}, tls.TLS_RSA_WITH_AES_128_GCM_SHA256},
		{"ECDHE needs a common group", tls.ClientHelloInfo{SupportedVersions: []uint16{tls.VersionTLS12},
			CipherSuites:    []uint16{tls.TLS_ECDHE_RSA_WITH_AES_128_GCM_SHA256, tls.TLS_RSA_WITH_AES_128_GCM_SHA256},
			SupportedCurves: []tls.CurveID{tls.X25519}}, tls.TLS_RSA_WITH_AES_128_GCM_SHA256},
		{"ECDHE needs uncompressed points", tls.ClientHelloInfo{SupportedVersions: []uint16{tls.VersionTLS12},
			CipherSuites:    []uint16{tls.TLS_ECDHE_RSA_WITH_AES_128_GCM_SHA256, tls.TLS_RSA_WITH_AES_128_GCM_SHA256},
			SupportedCurves: []tls.CurveID{tls.CurveP256}, SupportedPoints: []uint8{1}}, tls.TLS_RSA_WITH_AES_128_GCM_SHA256},
		{"none usable leaves Go's choice", tls.ClientHelloInfo{SupportedVersions: []uint16{tls.VersionTLS12},
			CipherSuites: []uint16{tls.TLS_ECDHE_ECDSA_WITH_AES_128_GCM_SHA256}}, 0},
		{"TLS 1.3 leaves Go's choice", tls.ClientHelloInfo{SupportedVersions: []uint16{tls.VersionTLS13, tls.VersionTLS12},
			CipherSuites: []uint16{tls.TLS_RSA_WITH_AES_128_GCM_SHA256}}, 0},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if got := clientPreferredSuite(&tc.hello, cfg, &cert); got != tc.expect {
				t.Errorf("got %s, want %s", tls.CipherSuiteName(got), tls.CipherSuiteName(tc.expect))
			}
		})
	}
}

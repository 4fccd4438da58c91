package tlsconfig

import (
	"crypto/ecdsa"
	"crypto/ed25519"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/tls"
	"crypto/x509"
	"strings"
	"testing"

	tlsv3 "github.com/envoyproxy/go-control-plane/envoy/extensions/transport_sockets/tls/v3"
)

func TestFIPS202205(t *testing.T) {
	p := newPKI(t)
	fips := []tlsv3.TlsParameters_CompliancePolicy{tlsv3.TlsParameters_FIPS_202205}
	for _, tc := range []struct {
		name   string
		params *tlsv3.TlsParameters
		client func(*tls.Config)
		ok     bool
		check  func(*testing.T, tls.ConnectionState)
	}{
		{name: "TLS 1.3 with AES-GCM on P-256", params: &tlsv3.TlsParameters{CompliancePolicies: fips}, client: func(*tls.Config) {}, ok: true,
			check: func(t *testing.T, cs tls.ConnectionState) {
				if cs.Version != tls.VersionTLS13 || cs.CurveID != tls.CurveP256 {
					t.Errorf("version %x curve %v, want TLS 1.3 on P-256", cs.Version, cs.CurveID)
				}
				if cs.CipherSuite != tls.TLS_AES_128_GCM_SHA256 && cs.CipherSuite != tls.TLS_AES_256_GCM_SHA384 {
					t.Errorf("suite %s, want AES-GCM", tls.CipherSuiteName(cs.CipherSuite))
				}
			}},
		{name: "the policy replaces the versions", params: &tlsv3.TlsParameters{CompliancePolicies: fips,
			TlsMaximumProtocolVersion: tlsv3.TlsParameters_TLSv1_2}, client: func(*tls.Config) {}, ok: true,
			check: func(t *testing.T, cs tls.ConnectionState) {
				if cs.Version != tls.VersionTLS13 {
					t.Errorf("version %x, want TLS 1.3", cs.Version)
				}
			}},
		{name: "the policy replaces the suites", params: &tlsv3.TlsParameters{CompliancePolicies: fips,
			CipherSuites: []string{"ECDHE-ECDSA-CHACHA20-POLY1305"}}, client: func(c *tls.Config) {
			c.MaxVersion, c.CipherSuites = tls.VersionTLS12, []uint16{tls.TLS_ECDHE_ECDSA_WITH_CHACHA20_POLY1305_SHA256}
		}},
		{name: "TLS 1.2 AES-GCM", params: &tlsv3.TlsParameters{CompliancePolicies: fips}, client: func(c *tls.Config) {
			c.MaxVersion = tls.VersionTLS12
		}, ok: true},
		{name: "X25519 is not allowed", params: &tlsv3.TlsParameters{CompliancePolicies: fips}, client: func(c *tls.Config) {
			c.CurvePreferences = []tls.CurveID{tls.X25519}
		}},
		{name: "without the policy X25519 is", params: nil, client: func(c *tls.Config) {
			c.CurvePreferences = []tls.CurveID{tls.X25519}
		}, ok: true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			ctx := p.context()
			ctx.CommonTlsContext.TlsParams = tc.params
			s, err := CompileServer(ctx)
			if err != nil {
				t.Fatal(err)
			}
			cfg := p.clientConfig(t, false)
			tc.client(cfg)
			cs, serr, cerr := handshake(t, s, nil, cfg)
			if tc.ok != (serr == nil && cerr == nil) {
				t.Fatalf("server %v, client %v; want success %v", serr, cerr, tc.ok)
			}
			if tc.check != nil {
				tc.check(t, cs)
			}
		})
	}
}

func TestFIPS202205Upstream(t *testing.T) {
	p := newPKI(t)
	s, err := CompileServer(p.context())
	if err != nil {
		t.Fatal(err)
	}
	cl, err := CompileClient(&tlsv3.UpstreamTlsContext{Sni: "localhost", CommonTlsContext: &tlsv3.CommonTlsContext{
		TlsParams: &tlsv3.TlsParameters{CompliancePolicies: []tlsv3.TlsParameters_CompliancePolicy{tlsv3.TlsParameters_FIPS_202205}},
		ValidationContextType: &tlsv3.CommonTlsContext_ValidationContext{
			ValidationContext: &tlsv3.CertificateValidationContext{TrustedCa: file(p.caFile)}}}})
	if err != nil {
		t.Fatal(err)
	}
	if err := clientHandshake(t, cl, s, nil); err != nil {
		t.Fatalf("handshake: %v", err)
	}
	// A server that allows X25519 alone has no group in common.
	ctx := p.context()
	ctx.CommonTlsContext.TlsParams = &tlsv3.TlsParameters{EcdhCurves: []string{"X25519"}}
	x25519, err := CompileServer(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if err := clientHandshake(t, cl, x25519, nil); err == nil {
		t.Error("handshake with an X25519-only server succeeded")
	}
}

func TestCheckFIPS202205(t *testing.T) {
	key := func(curve elliptic.Curve) any {
		k, err := ecdsa.GenerateKey(curve, rand.Reader)
		if err != nil {
			t.Fatal(err)
		}
		return &k.PublicKey
	}
	edPub, _, err := ed25519.GenerateKey(rand.Reader)
	if err != nil {
		t.Fatal(err)
	}
	peer := func(pub any) []*x509.Certificate { return []*x509.Certificate{{PublicKey: pub}} }
	for _, tc := range []struct {
		name string
		cs   tls.ConnectionState
		want string // "" for allowed
	}{
		{"TLS 1.3 AES-GCM", tls.ConnectionState{Version: tls.VersionTLS13, CipherSuite: tls.TLS_AES_256_GCM_SHA384}, ""},
		{"TLS 1.3 ChaCha20", tls.ConnectionState{Version: tls.VersionTLS13, CipherSuite: tls.TLS_CHACHA20_POLY1305_SHA256}, "TLS 1.3 cipher suite TLS_CHACHA20_POLY1305_SHA256"},
		{"a P-256 peer", tls.ConnectionState{Version: tls.VersionTLS12, PeerCertificates: peer(key(elliptic.P256()))}, ""},
		{"a P-384 peer", tls.ConnectionState{Version: tls.VersionTLS12, PeerCertificates: peer(key(elliptic.P384()))}, ""},
		{"a P-521 peer", tls.ConnectionState{Version: tls.VersionTLS13, CipherSuite: tls.TLS_AES_128_GCM_SHA256, PeerCertificates: peer(key(elliptic.P521()))}, "ECDSA signature on P-521"},
		// Its TLS 1.2 hash may be an allowed one, which Go does not tell.
		{"a P-521 peer in TLS 1.2", tls.ConnectionState{Version: tls.VersionTLS12, PeerCertificates: peer(key(elliptic.P521()))}, ""},
		{"an Ed25519 peer", tls.ConnectionState{Version: tls.VersionTLS12, PeerCertificates: peer(edPub)}, "Ed25519"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			err := checkFIPS202205(tc.cs)
			if tc.want == "" {
				if err != nil {
					t.Fatal(err)
				}
				return
			}
			if err == nil || !strings.Contains(err.Error(), tc.want) {
				t.Fatalf("error %v, want one with %q", err, tc.want)
			}
		})
	}
}

func TestCompliancePoliciesErrors(t *testing.T) {
	p := newPKI(t)
	for _, tc := range []struct {
		name     string
		policies []tlsv3.TlsParameters_CompliancePolicy
		want     string
	}{
		{"CNSA2", []tlsv3.TlsParameters_CompliancePolicy{tlsv3.TlsParameters_CNSA2_202603},
			"common_tls_context.tls_params.compliance_policies[0]: CNSA2_202603 is not supported by Outrigger: it needs ML-KEM-1024"},
		{"two", []tlsv3.TlsParameters_CompliancePolicy{tlsv3.TlsParameters_FIPS_202205, tlsv3.TlsParameters_FIPS_202205},
			"common_tls_context.tls_params.compliance_policies: more than one policy is not supported"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			ctx := p.context()
			ctx.CommonTlsContext.TlsParams = &tlsv3.TlsParameters{CompliancePolicies: tc.policies}
			if _, err := CompileServer(ctx); err == nil || !strings.Contains(err.Error(), tc.want) {
				t.Errorf("server error %v, want %q", err, tc.want)
			}
			_, err := CompileClient(&tlsv3.UpstreamTlsContext{CommonTlsContext: &tlsv3.CommonTlsContext{TlsParams: ctx.CommonTlsContext.TlsParams}})
			if err == nil || !strings.Contains(err.Error(), tc.want) {
				t.Errorf("client error %v, want %q", err, tc.want)
			}
		})
	}
}

package tlsconfig

import (
	"context"
	"crypto/sha256"
	"crypto/tls"
	"encoding/base64"
	"encoding/hex"
	"errors"
	"strings"
	"testing"
	"time"

	corev3 "github.com/envoyproxy/go-control-plane/envoy/config/core/v3"
	tlsv3 "github.com/envoyproxy/go-control-plane/envoy/extensions/transport_sockets/tls/v3"
	matcherv3 "github.com/envoyproxy/go-control-plane/envoy/type/matcher/v3"
	"google.golang.org/protobuf/types/known/durationpb"
	"google.golang.org/protobuf/types/known/wrapperspb"

	"github.com/outrigger-dev/outrigger/pkg/proxy/tlsconfig/tlstest"
)

func TestCompileServerErrors(t *testing.T) {
	p := newPKI(t)
	other, err := p.ca.Issue(tlstest.Options{})
	if err != nil {
		t.Fatal(err)
	}
	otherKey := p.write(t, "other-key.pem", other.KeyPEM)
	bad := p.write(t, "bad.pem", []byte("-----BEGIN CERTIFICATE-----\nnot base64\n-----END CERTIFICATE-----\n"))
	encrypted := p.write(t, "enc.pem", []byte("-----BEGIN ENCRYPTED PRIVATE KEY-----\nAAAA\n-----END ENCRYPTED PRIVATE KEY-----\n"))
	cases := map[string]struct {
		edit func(*tlsv3.DownstreamTlsContext)
		want []string
	}{
		"missing file": {
			edit: func(c *tlsv3.DownstreamTlsContext) {
				c.CommonTlsContext.TlsCertificates[0].CertificateChain = file(p.dir + "/nope.pem")
			},
			want: []string{`common_tls_context.tls_certificates[0].certificate_chain.filename: cannot read "` + p.dir + `/nope.pem": no such file or directory`},
		},
		"bad pem": {
			edit: func(c *tlsv3.DownstreamTlsContext) {
				c.CommonTlsContext.TlsCertificates[0].CertificateChain = file(bad)
			},
			want: []string{"common_tls_context.tls_certificates[0].certificate_chain: " + bad + ": no PEM certificate found"},
		},
		"mismatched key": {
			edit: func(c *tlsv3.DownstreamTlsContext) { c.CommonTlsContext.TlsCertificates[0].PrivateKey = file(otherKey) },
			want: []string{"common_tls_context.tls_certificates[0].private_key: the key in " + otherKey + " does not match the certificate in " + p.certFile},
		},
		"encrypted PKCS#8 key without a password": {
			edit: func(c *tlsv3.DownstreamTlsContext) {
				c.CommonTlsContext.TlsCertificates[0].PrivateKey = file(encrypted)
			},
			want: []string{"common_tls_context.tls_certificates[0].private_key: " + encrypted + ": the private key is encrypted (ENCRYPTED PRIVATE KEY) and no password is configured"},
		},
		"no certificates": {
			edit: func(c *tlsv3.DownstreamTlsContext) { c.CommonTlsContext.TlsCertificates = nil },
			want: []string{"common_tls_context.tls_certificates: No TLS certificates found for server context"},
		},
		"params": {
			edit: func(c *tlsv3.DownstreamTlsContext) {
				c.CommonTlsContext.TlsParams = &tlsv3.TlsParameters{
					TlsMinimumProtocolVersion: tlsv3.TlsParameters_TLSv1_3,
					TlsMaximumProtocolVersion: tlsv3.TlsParameters_TLSv1_2,
					CipherSuites:              []string{"[ECDHE-RSA-AES128-GCM-SHA256|FOO]", "ECDHE-RSA-AES256-GCM-SHA384:BAR"},
					EcdhCurves:                []string{"X25519", "brainpoolP256r1"},
				}
			},
			want: []string{
				"common_tls_context.tls_params.tls_minimum_protocol_version: TLSv1.3 is above tls_maximum_protocol_version TLSv1.2",
				`common_tls_context.tls_params.cipher_suites[0]: unknown or unsupported cipher suite "FOO"`,
				`common_tls_context.tls_params.cipher_suites[1]: unknown or unsupported cipher suite "BAR"`,
				`common_tls_context.tls_params.ecdh_curves[1]: unknown or unsupported curve "brainpoolP256r1" (supported: X25519, P-256, P-384, P-521, X25519MLKEM768)`,
			},
		},
		"validation context": {
			edit: func(c *tlsv3.DownstreamTlsContext) {
				c.CommonTlsContext.ValidationContextType = &tlsv3.CommonTlsContext_ValidationContext{ValidationContext: &tlsv3.CertificateValidationContext{
					TrustedCa:             file(bad),
					VerifyCertificateHash: []string{"zz"},
					VerifyCertificateSpki: []string{"AAAA"},
					MatchTypedSubjectAltNames: []*tlsv3.SubjectAltNameMatcher{{
						SanType: tlsv3.SubjectAltNameMatcher_DNS,
						Matcher: &matcherv3.StringMatcher{MatchPattern: &matcherv3.StringMatcher_SafeRegex{SafeRegex: &matcherv3.RegexMatcher{Regex: "("}}},
					}},
				}}
			},
			want: []string{
				"common_tls_context.validation_context.trusted_ca: " + bad + ": no PEM certificate found",
				"common_tls_context.validation_context.match_typed_subject_alt_names[0].matcher.safe_regex.regex: error parsing regexp: missing closing ): `(`",
				`common_tls_context.validation_context.verify_certificate_hash[0]: invalid hex-encoded SHA-256 "zz"`,
				`common_tls_context.validation_context.verify_certificate_spki[0]: invalid base64-encoded SHA-256 "AAAA"`,
			},
		},
		"session ticket key length": {
			edit: func(c *tlsv3.DownstreamTlsContext) {
				c.SessionTicketKeysType = &tlsv3.DownstreamTlsContext_SessionTicketKeys{SessionTicketKeys: &tlsv3.TlsSessionTicketKeys{
					Keys: []*corev3.DataSource{{Specifier: &corev3.DataSource_InlineBytes{InlineBytes: make([]byte, 48)}}},
				}}
			},
			want: []string{"session_ticket_keys.keys[0]: inline: Incorrect TLS session ticket key length. Length 48, expected length 80"},
		},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			c := p.context()
			tc.edit(c)
			_, err := CompileServer(c)
			if err == nil {
				t.Fatal("no error")
			}
			got := strings.Split(err.Error(), "\n")
			if strings.Join(got, "\n") != strings.Join(tc.want, "\n") {
				t.Errorf("errors:\n%s\nwant:\n%s", strings.Join(got, "\n"), strings.Join(tc.want, "\n"))
			}
		})
	}
}

func TestHandshakeStats(t *testing.T) {
	p := newPKI(t)
	s, err := CompileServer(p.context())
	if err != nil {
		t.Fatal(err)
	}
	store, st := newStats()
	cfg := p.clientConfig(t, false)
	cfg.MaxVersion = tls.VersionTLS12
	cfg.CipherSuites = []uint16{tls.TLS_ECDHE_ECDSA_WITH_CHACHA20_POLY1305_SHA256}
	cfg.CurvePreferences = []tls.CurveID{tls.CurveP256}
	// Twice: the second handshake counts through the counters the first
	// one created.
	for range 2 {
		cs, serr, cerr := handshake(t, s, st, cfg)
		if serr != nil || cerr != nil {
			t.Fatalf("handshake: server %v, client %v", serr, cerr)
		}
		if cs.Version != tls.VersionTLS12 {
			t.Errorf("version %x", cs.Version)
		}
	}
	for name, want := range map[string]uint64{
		"handshake":                             2,
		"no_certificate":                        2,
		"connection_error":                      0,
		"ciphers.ECDHE-ECDSA-CHACHA20-POLY1305": 2,
		"versions.TLSv1.2":                      2,
		"curves.P-256":                          2,
	} {
		if got := store.Counter("listener.test.ssl." + name).Value(); got != want {
			t.Errorf("%s = %d, want %d", name, got, want)
		}
	}
	// TLS 1.3 with Go's defaults.
	if _, serr, cerr := handshake(t, s, st, p.clientConfig(t, false)); serr != nil || cerr != nil {
		t.Fatalf("handshake: server %v, client %v", serr, cerr)
	}
	if got := store.Counter("listener.test.ssl.versions.TLSv1.3").Value(); got != 1 {
		t.Errorf("versions.TLSv1.3 = %d", got)
	}
	// A client below the default minimum (TLS 1.2) is refused.
	old := p.clientConfig(t, false)
	old.MinVersion, old.MaxVersion = tls.VersionTLS11, tls.VersionTLS11
	if _, serr, _ := handshake(t, s, st, old); serr == nil {
		t.Error("TLS 1.1 accepted")
	}
	if got := store.Counter("listener.test.ssl.connection_error").Value(); got != 1 {
		t.Errorf("connection_error = %d", got)
	}
}

func TestClientCertificateValidation(t *testing.T) {
	p := newPKI(t)
	otherCA, err := tlstest.NewCA("other")
	if err != nil {
		t.Fatal(err)
	}
	stranger, err := otherCA.Issue(tlstest.Options{CommonName: "stranger", Client: true})
	if err != nil {
		t.Fatal(err)
	}
	expired, err := p.ca.Issue(tlstest.Options{CommonName: "old", Client: true, NotBefore: time.Now().Add(-48 * time.Hour), NotAfter: time.Now().Add(-24 * time.Hour)})
	if err != nil {
		t.Fatal(err)
	}
	withCert := func(l *tlstest.Leaf) *tls.Config { return p.clientWith(t, l) }
	exact := func(s string) *matcherv3.StringMatcher {
		return &matcherv3.StringMatcher{MatchPattern: &matcherv3.StringMatcher_Exact{Exact: s}}
	}
	leafHash := sha256.Sum256(p.client.Cert.Raw)
	spki := sha256.Sum256(p.client.Cert.RawSubjectPublicKeyInfo)
	cases := map[string]struct {
		vc      *tlsv3.CertificateValidationContext
		require bool
		client  *tls.Config
		want    FailReason // 0: accepted
		counter string
	}{
		"required and none":      {require: true, client: p.clientConfig(t, false), want: FailNoCert, counter: "fail_verify_no_cert"},
		"required, any accepted": {require: true, client: withCert(stranger)},
		"trusted":                {require: true, vc: &tlsv3.CertificateValidationContext{TrustedCa: file(p.caFile)}, client: p.clientConfig(t, true)},
		"untrusted": {
			require: true, vc: &tlsv3.CertificateValidationContext{TrustedCa: file(p.caFile)}, client: withCert(stranger),
			want: FailError, counter: "fail_verify_error",
		},
		"untrusted accepted and counted": {
			require: true, client: withCert(stranger), counter: "fail_verify_error",
			vc: &tlsv3.CertificateValidationContext{TrustedCa: file(p.caFile), TrustChainVerification: tlsv3.CertificateValidationContext_ACCEPT_UNTRUSTED},
		},
		"san mismatch accepted and counted": {
			client: p.clientConfig(t, true), counter: "fail_verify_san",
			vc: &tlsv3.CertificateValidationContext{TrustedCa: file(p.caFile), TrustChainVerification: tlsv3.CertificateValidationContext_ACCEPT_UNTRUSTED,
				MatchTypedSubjectAltNames: []*tlsv3.SubjectAltNameMatcher{{SanType: tlsv3.SubjectAltNameMatcher_DNS, Matcher: exact("elsewhere")}}},
		},
		"accept untrusted still requires a certificate": {
			require: true, client: p.clientConfig(t, false), want: FailNoCert, counter: "fail_verify_no_cert",
			vc: &tlsv3.CertificateValidationContext{TrustedCa: file(p.caFile), TrustChainVerification: tlsv3.CertificateValidationContext_ACCEPT_UNTRUSTED},
		},
		"optional and none": {vc: &tlsv3.CertificateValidationContext{TrustedCa: file(p.caFile)}, client: p.clientConfig(t, false), counter: "no_certificate"},
		"expired": {
			vc: &tlsv3.CertificateValidationContext{TrustedCa: file(p.caFile)}, client: withCert(expired),
			want: FailError, counter: "fail_verify_error",
		},
		"expired allowed": {
			vc: &tlsv3.CertificateValidationContext{TrustedCa: file(p.caFile), AllowExpiredCertificate: true}, client: withCert(expired),
		},
		"uri san": {
			vc: &tlsv3.CertificateValidationContext{TrustedCa: file(p.caFile), MatchTypedSubjectAltNames: []*tlsv3.SubjectAltNameMatcher{
				{SanType: tlsv3.SubjectAltNameMatcher_URI, Matcher: exact("spiffe://cluster.local/ns/a/sa/client")},
			}},
			client: p.clientConfig(t, true),
		},
		"dns san of another type does not match": {
			vc: &tlsv3.CertificateValidationContext{TrustedCa: file(p.caFile), MatchTypedSubjectAltNames: []*tlsv3.SubjectAltNameMatcher{
				{SanType: tlsv3.SubjectAltNameMatcher_DNS, Matcher: exact("spiffe://cluster.local/ns/a/sa/client")},
			}},
			client: p.clientConfig(t, true), want: FailSAN, counter: "fail_verify_san",
		},
		"legacy san suffix": {
			//lint:ignore SA1019 the deprecated field is still accepted, as Envoy accepts it
			vc: &tlsv3.CertificateValidationContext{MatchSubjectAltNames: []*matcherv3.StringMatcher{
				{MatchPattern: &matcherv3.StringMatcher_Suffix{Suffix: ".example.com"}},
			}},
			client: p.clientConfig(t, true),
		},
		"hash": {
			vc:     &tlsv3.CertificateValidationContext{VerifyCertificateHash: []string{strings.ToUpper(hex.EncodeToString(leafHash[:]))}},
			client: p.clientConfig(t, true),
		},
		"spki": {
			vc:     &tlsv3.CertificateValidationContext{VerifyCertificateSpki: []string{base64.StdEncoding.EncodeToString(spki[:])}},
			client: p.clientConfig(t, true),
		},
		"hash mismatch": {
			vc:     &tlsv3.CertificateValidationContext{VerifyCertificateHash: []string{hex.EncodeToString(make([]byte, 32))}},
			client: p.clientConfig(t, true), want: FailCertHash, counter: "fail_verify_cert_hash",
		},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			ctx := p.context()
			if tc.vc != nil {
				ctx.CommonTlsContext.ValidationContextType = &tlsv3.CommonTlsContext_ValidationContext{ValidationContext: tc.vc}
			}
			if tc.require {
				ctx.RequireClientCertificate = wrapperspb.Bool(true)
			}
			s, err := CompileServer(ctx)
			if err != nil {
				t.Fatal(err)
			}
			store, st := newStats()
			_, serr, cerr := handshake(t, s, st, tc.client)
			var ve *VerifyError
			switch {
			case tc.want == 0 && serr != nil:
				t.Fatalf("refused: %v", serr)
			case tc.want == 0:
			case tc.want == FailNoCert && (serr == nil || !strings.Contains(serr.Error(), noClientCert)):
				t.Fatalf("server error %v, want no certificate", serr)
			case tc.want == FailNoCert:
			case !errors.As(serr, &ve) || ve.Reason != tc.want:
				t.Fatalf("server error %v, want reason %d", serr, tc.want)
			case cerr == nil:
				t.Error("the client saw no alert")
			}
			if tc.counter != "" {
				if got := store.Counter("listener.test.ssl." + tc.counter).Value(); got != 1 {
					t.Errorf("%s = %d, want 1", tc.counter, got)
				}
			}
		})
	}
}

func TestCRL(t *testing.T) {
	p := newPKI(t)
	revoked, err := p.ca.Issue(tlstest.Options{CommonName: "revoked", Client: true})
	if err != nil {
		t.Fatal(err)
	}
	crl, err := p.ca.CRL(time.Now().Add(time.Hour), revoked.Cert)
	if err != nil {
		t.Fatal(err)
	}
	stale, err := p.ca.CRL(time.Now().Add(-time.Minute))
	if err != nil {
		t.Fatal(err)
	}
	crlFile, staleFile := p.write(t, "crl.pem", crl), p.write(t, "stale.pem", stale)
	otherCA, err := tlstest.NewCA("other")
	if err != nil {
		t.Fatal(err)
	}
	foreign, err := otherCA.CRL(time.Now().Add(time.Hour))
	if err != nil {
		t.Fatal(err)
	}
	foreignFile := p.write(t, "foreign.pem", foreign)
	for name, tc := range map[string]struct {
		crl     string
		client  *tls.Config
		refused string
	}{
		"not revoked":          {crl: crlFile, client: p.clientConfig(t, true)},
		"revoked":              {crl: crlFile, client: p.clientWith(t, revoked), refused: `certificate "CN=revoked,O=Outrigger tests" is revoked`},
		"expired CRL":          {crl: staleFile, client: p.clientConfig(t, true), refused: "has expired"},
		"no CRL of the issuer": {crl: foreignFile, client: p.clientConfig(t, true), refused: "unable to get certificate CRL"},
	} {
		t.Run(name, func(t *testing.T) {
			ctx := p.context()
			ctx.CommonTlsContext.ValidationContextType = &tlsv3.CommonTlsContext_ValidationContext{ValidationContext: &tlsv3.CertificateValidationContext{
				TrustedCa: file(p.caFile), Crl: file(tc.crl),
			}}
			s, err := CompileServer(ctx)
			if err != nil {
				t.Fatal(err)
			}
			store, st := newStats()
			_, serr, _ := handshake(t, s, st, tc.client)
			if tc.refused == "" {
				if serr != nil {
					t.Fatalf("refused: %v", serr)
				}
				return
			}
			if serr == nil || !strings.Contains(serr.Error(), tc.refused) {
				t.Fatalf("error %v, want %q", serr, tc.refused)
			}
			if got := store.Counter("listener.test.ssl.fail_verify_error").Value(); got != 1 {
				t.Errorf("fail_verify_error = %d", got)
			}
		})
	}
	// A CRL needs a trusted CA, and must parse.
	ctx := p.context()
	ctx.CommonTlsContext.ValidationContextType = &tlsv3.CommonTlsContext_ValidationContext{ValidationContext: &tlsv3.CertificateValidationContext{Crl: file(crlFile)}}
	if _, err := CompileServer(ctx); err == nil || !strings.Contains(err.Error(), "common_tls_context.validation_context.crl: Failed to load CRL from "+crlFile+" without trusted CA") {
		t.Errorf("error %v", err)
	}
	ctx.CommonTlsContext.GetValidationContext().TrustedCa = file(p.caFile)
	ctx.CommonTlsContext.GetValidationContext().Crl = file(p.caFile)
	if _, err := CompileServer(ctx); err == nil || !strings.Contains(err.Error(), `validation_context.crl: `+p.caFile+`: unexpected PEM block "CERTIFICATE" (want X509 CRL)`) {
		t.Errorf("error %v", err)
	}
}

func TestCertificateBySNI(t *testing.T) {
	p := newPKI(t)
	ctx := p.context()
	for _, name := range []string{"a.example.com", "b.example.com"} {
		l, err := p.ca.Issue(tlstest.Options{CommonName: name, DNS: []string{name}})
		if err != nil {
			t.Fatal(err)
		}
		ctx.CommonTlsContext.TlsCertificates = append(ctx.CommonTlsContext.TlsCertificates, &tlsv3.TlsCertificate{
			CertificateChain: file(p.write(t, name+".pem", l.CertPEM)), PrivateKey: file(p.write(t, name+"-key.pem", l.KeyPEM)),
		})
	}
	s, err := CompileServer(ctx)
	if err != nil {
		t.Fatal(err)
	}
	for sni, want := range map[string]string{"b.example.com": "b.example.com", "a.example.com": "a.example.com", "localhost": "localhost", "": "localhost"} {
		a, b := loopbackPair(t)
		done := make(chan string, 1)
		go func() {
			_, local, err := s.Handshake(context.Background(), a, nil)
			if err != nil {
				done <- err.Error()
				return
			}
			done <- local.Subject.CommonName
		}()
		cfg := p.clientConfig(t, false)
		cfg.ServerName, cfg.InsecureSkipVerify = sni, sni == ""
		c := tls.Client(b, cfg)
		if err := c.Handshake(); err != nil {
			t.Fatalf("%q: %v", sni, err)
		}
		if got := c.ConnectionState().PeerCertificates[0].Subject.CommonName; got != want {
			t.Errorf("%q: served %q, want %q", sni, got, want)
		}
		if got := <-done; got != want {
			t.Errorf("%q: Handshake reports %q, want %q", sni, got, want)
		}
	}
}

func TestALPN(t *testing.T) {
	p := newPKI(t)
	ctx := p.context()
	ctx.CommonTlsContext.AlpnProtocols = []string{"h2", "http/1.1"}
	s, err := CompileServer(ctx)
	if err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		offer []string
		want  string
	}{
		{[]string{"http/1.1", "h2"}, "h2"}, // the server's preference
		{[]string{"http/1.1"}, "http/1.1"},
		{[]string{"spdy/3"}, ""}, // no overlap: no ALPN, as Envoy
		{nil, ""},
	} {
		cfg := p.clientConfig(t, false)
		cfg.NextProtos = tc.offer
		cs, serr, cerr := handshake(t, s, nil, cfg)
		if serr != nil || cerr != nil {
			t.Fatalf("%v: server %v, client %v", tc.offer, serr, cerr)
		}
		if cs.NegotiatedProtocol != tc.want {
			t.Errorf("%v: negotiated %q, want %q", tc.offer, cs.NegotiatedProtocol, tc.want)
		}
	}
}

func TestSessionResumption(t *testing.T) {
	p := newPKI(t)
	key := make([]byte, 80)
	key[0] = 1
	for name, tc := range map[string]struct {
		edit    func(*tlsv3.DownstreamTlsContext)
		resumed bool
	}{
		"default": {edit: func(*tlsv3.DownstreamTlsContext) {}, resumed: true},
		"disabled": {edit: func(c *tlsv3.DownstreamTlsContext) {
			c.SessionTicketKeysType = &tlsv3.DownstreamTlsContext_DisableStatelessSessionResumption{DisableStatelessSessionResumption: true}
		}},
		"keys": {edit: func(c *tlsv3.DownstreamTlsContext) {
			c.SessionTicketKeysType = &tlsv3.DownstreamTlsContext_SessionTicketKeys{SessionTicketKeys: &tlsv3.TlsSessionTicketKeys{
				Keys: []*corev3.DataSource{{Specifier: &corev3.DataSource_InlineBytes{InlineBytes: key}}},
			}}
		}, resumed: true},
	} {
		t.Run(name, func(t *testing.T) {
			ctx := p.context()
			tc.edit(ctx)
			s, err := CompileServer(ctx)
			if err != nil {
				t.Fatal(err)
			}
			store, st := newStats()
			cfg := p.clientConfig(t, false)
			cfg.ClientSessionCache = tls.NewLRUClientSessionCache(4)
			for range 2 {
				if _, serr, cerr := handshake(t, s, st, cfg); serr != nil || cerr != nil {
					t.Fatalf("server %v, client %v", serr, cerr)
				}
			}
			got := store.Counter("listener.test.ssl.session_reused").Value()
			if (got == 1) != tc.resumed {
				t.Errorf("session_reused = %d, want resumed %v", got, tc.resumed)
			}
		})
	}
}

func TestSessionTimeout(t *testing.T) {
	p := newPKI(t)
	dc := p.context()
	dc.SessionTimeout = durationpb.New(time.Minute)
	s, err := CompileServer(dc)
	if err != nil {
		t.Fatal(err)
	}
	clock := time.Now()
	applySessionTimeout(s.cfg, time.Minute, func() time.Time { return clock })
	cache := tls.NewLRUClientSessionCache(4)
	resumed := func() bool { return p.resumedOn(t, s, cache) }
	if resumed() {
		t.Fatal("the first handshake resumed")
	}
	if !resumed() {
		t.Fatal("a ticket within session_timeout was not resumed")
	}
	clock = clock.Add(2 * time.Minute)
	if resumed() {
		t.Fatal("a ticket older than session_timeout was resumed")
	}
}

func TestFullScanCertsOnSNIMismatch(t *testing.T) {
	p := newPKI(t)
	// The first certificate is RSA, the second ECDSA; the client below
	// takes ECDSA only, so the second is the one a scan finds.
	add := func(ctx *tlsv3.DownstreamTlsContext, name string, rsa bool) {
		l, err := p.ca.Issue(tlstest.Options{CommonName: name, DNS: []string{name}, RSA: rsa})
		if err != nil {
			t.Fatal(err)
		}
		ctx.CommonTlsContext.TlsCertificates = append(ctx.CommonTlsContext.TlsCertificates, &tlsv3.TlsCertificate{
			CertificateChain: file(p.write(t, name+".pem", l.CertPEM)), PrivateKey: file(p.write(t, name+"-key.pem", l.KeyPEM)),
		})
	}
	for _, tc := range []struct {
		name     string
		fullScan *wrapperspb.BoolValue
		sni      string
		want     string // "" for a failed handshake
	}{
		{"a mismatched name takes the first certificate", nil, "other.example.com", ""},
		{"false is the default", wrapperspb.Bool(false), "other.example.com", ""},
		{"a full scan finds one the client supports", wrapperspb.Bool(true), "other.example.com", "ecdsa.example.com"},
		{"without a server name the scan is always made", nil, "", "ecdsa.example.com"},
		{"a name covered by an unsupported certificate keeps it", wrapperspb.Bool(true), "rsa.example.com", ""},
	} {
		t.Run(tc.name, func(t *testing.T) {
			ctx := &tlsv3.DownstreamTlsContext{CommonTlsContext: &tlsv3.CommonTlsContext{}, FullScanCertsOnSniMismatch: tc.fullScan}
			add(ctx, "rsa.example.com", true)
			add(ctx, "ecdsa.example.com", false)
			s, err := CompileServer(ctx)
			if err != nil {
				t.Fatal(err)
			}
			served := ""
			cfg := &tls.Config{ServerName: tc.sni, InsecureSkipVerify: true, MaxVersion: tls.VersionTLS12,
				CipherSuites: []uint16{tls.TLS_ECDHE_ECDSA_WITH_AES_128_GCM_SHA256},
				VerifyConnection: func(cs tls.ConnectionState) error {
					served = cs.PeerCertificates[0].Subject.CommonName
					return nil
				}}
			_, serr, cerr := handshake(t, s, nil, cfg)
			if tc.want == "" {
				if serr == nil || cerr == nil {
					t.Fatalf("handshake succeeded with %q, want the first (RSA) certificate, which the client cannot use", served)
				}
				return
			}
			if serr != nil || cerr != nil {
				t.Fatalf("server %v, client %v", serr, cerr)
			}
			if served != tc.want {
				t.Errorf("served %q, want %q", served, tc.want)
			}
		})
	}
}

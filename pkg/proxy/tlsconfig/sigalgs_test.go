package tlsconfig

import (
	"crypto/tls"
	"strings"
	"testing"

	tlsv3 "github.com/envoyproxy/go-control-plane/envoy/extensions/transport_sockets/tls/v3"
	"google.golang.org/protobuf/types/known/wrapperspb"
)

func TestSignatureAlgorithms(t *testing.T) {
	p := newPKI(t) // an ECDSA P-256 server certificate
	for _, tc := range []struct {
		name string
		algs []string
		max  uint16
		ok   bool
	}{
		{name: "the key's algorithm", algs: []string{"ecdsa_secp256r1_sha256"}, max: tls.VersionTLS13, ok: true},
		{name: "OpenSSL's spelling", algs: []string{"RSA+SHA256:ECDSA+SHA256"}, max: tls.VersionTLS13, ok: true},
		// In TLS 1.3 a P-256 key signs with SHA-256 only.
		{name: "none the key can use", algs: []string{"ecdsa_secp384r1_sha384", "rsa_pss_rsae_sha256"}, max: tls.VersionTLS13},
		// In TLS 1.2 the curve does not bind the hash.
		{name: "TLS 1.2 with another hash", algs: []string{"ecdsa_secp384r1_sha384"}, max: tls.VersionTLS12, ok: true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			ctx := p.context()
			ctx.CommonTlsContext.TlsParams = &tlsv3.TlsParameters{SignatureAlgorithms: tc.algs}
			s, err := CompileServer(ctx)
			if err != nil {
				t.Fatal(err)
			}
			cfg := p.clientConfig(t, false)
			cfg.MaxVersion = tc.max
			_, serr, cerr := handshake(t, s, nil, cfg)
			if tc.ok != (serr == nil && cerr == nil) {
				t.Fatalf("server %v, client %v; want success %v", serr, cerr, tc.ok)
			}
		})
	}
}

func TestSignatureAlgorithmsErrors(t *testing.T) {
	p := newPKI(t)
	for _, tc := range []struct {
		name string
		edit func(*tlsv3.DownstreamTlsContext)
		want []string
	}{
		{"unknown name", func(c *tlsv3.DownstreamTlsContext) {
			c.CommonTlsContext.TlsParams = &tlsv3.TlsParameters{SignatureAlgorithms: []string{"ed25519", "ecdsa_secp256r1_sha256:dsa_sha256"}}
		}, []string{`common_tls_context.tls_params.signature_algorithms[1]: unknown signature algorithm "dsa_sha256"`}},
		{"SHA-1", func(c *tlsv3.DownstreamTlsContext) {
			c.CommonTlsContext.TlsParams = &tlsv3.TlsParameters{SignatureAlgorithms: []string{"rsa_pkcs1_sha1"}}
		}, []string{`common_tls_context.tls_params.signature_algorithms[0]: "rsa_pkcs1_sha1" is not supported by Outrigger: Go's crypto/tls does not sign with SHA-1`}},
		{"client certificates", func(c *tlsv3.DownstreamTlsContext) {
			c.CommonTlsContext.TlsParams = &tlsv3.TlsParameters{SignatureAlgorithms: []string{"ed25519"}}
			c.RequireClientCertificate = wrapperspb.Bool(true)
		}, []string{"common_tls_context.tls_params.signature_algorithms: not supported by Outrigger with client certificates"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			ctx := p.context()
			tc.edit(ctx)
			_, err := CompileServer(ctx)
			if err == nil {
				t.Fatal("compiled, want an error")
			}
			for _, w := range tc.want {
				if !strings.Contains(err.Error(), w) {
					t.Errorf("error %q lacks %q", err, w)
				}
			}
		})
	}
	_, err := CompileClient(&tlsv3.UpstreamTlsContext{CommonTlsContext: &tlsv3.CommonTlsContext{
		TlsParams: &tlsv3.TlsParameters{SignatureAlgorithms: []string{"ed25519"}}}})
	if err == nil || !strings.Contains(err.Error(), "common_tls_context.tls_params.signature_algorithms: not supported by Outrigger on an UpstreamTlsContext") {
		t.Errorf("client error %v", err)
	}
}

package rbacengine

import (
	"testing"

	"github.com/outrigger-dev/outrigger/pkg/proxy/tlsconfig/tlstest"
)

const mtlsType = "type.googleapis.com/envoy.extensions.rbac.principals.mtls_authenticated.v3.Config"

// TestMTLSAuthenticated checks the mtls_authenticated principal: a TLS
// connection with a validated client certificate, and with san_matcher
// one whose SAN of the matcher's type matches.
func TestMTLSAuthenticated(t *testing.T) {
	_, leaves := tlstest.Leaves(t, tlstest.Options{CommonName: "client", URIs: []string{"spiffe://example.org/frontend"}, DNS: []string{"frontend.example.org"}, Client: true})
	leaf := leaves[0]
	anyCert := compileJSON(t, allowIf(anyRule, `{"custom":{"name":"m","typed_config":{"@type":"`+mtlsType+`","any_validated_client_certificate":true}}}`))
	bySAN := compileJSON(t, allowIf(anyRule, `{"custom":{"name":"m","typed_config":{"@type":"`+mtlsType+`","san_matcher":{"san_type":"URI","matcher":{"prefix":"spiffe://example.org/"}}}}}`))
	byDNSNotURI := compileJSON(t, allowIf(anyRule, `{"custom":{"name":"m","typed_config":{"@type":"`+mtlsType+`","san_matcher":{"san_type":"DNS","matcher":{"prefix":"spiffe://"}}}}}`))
	if anyCert.Needs()&NeedTLS == 0 {
		t.Error("the principal does not ask for the TLS input")
	}
	tests := map[string]struct {
		tls, validated, cert      bool
		anyOK, sanOK, wrongTypeOK bool
	}{
		"plaintext":                        {},
		"TLS without a certificate":        {tls: true, validated: false},
		"a certificate not validated":      {tls: true, cert: true},
		"a validated certificate":          {tls: true, cert: true, validated: true, anyOK: true, sanOK: true},
		"validated but no certificate (!)": {tls: true, validated: true},
	}
	for name, tc := range tests {
		t.Run(name, func(t *testing.T) {
			in := request()
			in.TLS, in.PeerValidated = tc.tls, tc.validated
			if tc.cert {
				in.Peer = NewPeer(leaf.Cert)
			}
			if got := anyCert.Evaluate(in).Allowed; got != tc.anyOK {
				t.Errorf("any_validated_client_certificate: allowed %v, want %v", got, tc.anyOK)
			}
			if got := bySAN.Evaluate(in).Allowed; got != tc.sanOK {
				t.Errorf("san_matcher URI: allowed %v, want %v", got, tc.sanOK)
			}
			if got := byDNSNotURI.Evaluate(in).Allowed; got != tc.wrongTypeOK {
				t.Errorf("san_matcher DNS on a URI value: allowed %v, want %v", got, tc.wrongTypeOK)
			}
		})
	}
}

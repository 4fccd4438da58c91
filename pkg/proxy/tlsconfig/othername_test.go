package tlsconfig

import (
	"encoding/asn1"
	"strings"
	"testing"

	tlsv3 "github.com/envoyproxy/go-control-plane/envoy/extensions/transport_sockets/tls/v3"
	matcherv3 "github.com/envoyproxy/go-control-plane/envoy/type/matcher/v3"
	"google.golang.org/protobuf/types/known/wrapperspb"

	"github.com/outrigger-dev/outrigger/pkg/proxy/tlsconfig/tlstest"
)

// upnOID is the Windows user principal name's otherName type-id.
var upnOID = asn1.ObjectIdentifier{1, 3, 6, 1, 4, 1, 311, 20, 2, 3}

// TestOtherNameSAN checks OTHER_NAME matchers against a client
// certificate with an otherName SAN made here: the value under the
// matcher's oid matches, another oid's does not, and the field errors.
func TestOtherNameSAN(t *testing.T) {
	p := newPKI(t)
	leaf, err := p.ca.Issue(tlstest.Options{CommonName: "upn", DNS: []string{"client.example.com"}, Client: true,
		OtherNames: []tlstest.OtherName{{OID: upnOID, Value: "alice@corp.example"}, {OID: asn1.ObjectIdentifier{1, 2, 3, 4}, Value: "other"}}})
	if err != nil {
		t.Fatal(err)
	}
	if got := otherNames(leaf.Cert, upnOID); len(got) != 1 || got[0] != "alice@corp.example" {
		t.Fatalf("otherNames = %q", got)
	}
	if got := leaf.Cert.DNSNames; len(got) != 1 || got[0] != "client.example.com" {
		t.Fatalf("DNS SANs = %q (the extension must keep them)", got)
	}
	exact := func(s string) *matcherv3.StringMatcher {
		return &matcherv3.StringMatcher{MatchPattern: &matcherv3.StringMatcher_Exact{Exact: s}}
	}
	for name, tc := range map[string]struct {
		m      *tlsv3.SubjectAltNameMatcher
		accept bool
	}{
		"upn":                  {&tlsv3.SubjectAltNameMatcher{SanType: tlsv3.SubjectAltNameMatcher_OTHER_NAME, Oid: "1.3.6.1.4.1.311.20.2.3", Matcher: exact("alice@corp.example")}, true},
		"upn of another":       {&tlsv3.SubjectAltNameMatcher{SanType: tlsv3.SubjectAltNameMatcher_OTHER_NAME, Oid: "1.3.6.1.4.1.311.20.2.3", Matcher: exact("bob@corp.example")}, false},
		"value of another oid": {&tlsv3.SubjectAltNameMatcher{SanType: tlsv3.SubjectAltNameMatcher_OTHER_NAME, Oid: "1.2.3.4", Matcher: exact("alice@corp.example")}, false},
		"second oid":           {&tlsv3.SubjectAltNameMatcher{SanType: tlsv3.SubjectAltNameMatcher_OTHER_NAME, Oid: "1.2.3.4", Matcher: exact("other")}, true},
	} {
		t.Run(name, func(t *testing.T) {
			ctx := p.context()
			ctx.RequireClientCertificate = wrapperspb.Bool(true)
			ctx.CommonTlsContext.ValidationContextType = &tlsv3.CommonTlsContext_ValidationContext{ValidationContext: &tlsv3.CertificateValidationContext{
				TrustedCa: file(p.caFile), MatchTypedSubjectAltNames: []*tlsv3.SubjectAltNameMatcher{tc.m}}}
			s, err := CompileServer(ctx)
			if err != nil {
				t.Fatal(err)
			}
			_, serr, _ := handshake(t, s, nil, p.clientWith(t, leaf))
			if (serr == nil) != tc.accept {
				t.Fatalf("server error %v, want accepted %v", serr, tc.accept)
			}
		})
	}
	for name, tc := range map[string]struct {
		m    *tlsv3.SubjectAltNameMatcher
		want string
	}{
		"no oid":       {&tlsv3.SubjectAltNameMatcher{SanType: tlsv3.SubjectAltNameMatcher_OTHER_NAME, Matcher: exact("x")}, "match_typed_subject_alt_names[0].oid: required with san_type OTHER_NAME"},
		"bad oid":      {&tlsv3.SubjectAltNameMatcher{SanType: tlsv3.SubjectAltNameMatcher_OTHER_NAME, Oid: "1.x", Matcher: exact("x")}, `invalid object identifier "1.x"`},
		"oid with dns": {&tlsv3.SubjectAltNameMatcher{SanType: tlsv3.SubjectAltNameMatcher_DNS, Oid: "1.2.3", Matcher: exact("x")}, "oid: only read with san_type OTHER_NAME"},
	} {
		t.Run(name, func(t *testing.T) {
			_, err := compileValidation(&tlsv3.CertificateValidationContext{MatchTypedSubjectAltNames: []*tlsv3.SubjectAltNameMatcher{tc.m}})
			if err == nil || !strings.Contains(err.Error(), tc.want) {
				t.Fatalf("error %v, want %q", err, tc.want)
			}
		})
	}
}

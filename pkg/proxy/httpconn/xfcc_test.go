package httpconn

import (
	"crypto/x509"
	"crypto/x509/pkix"
	"strings"
	"testing"

	hcmv3 "github.com/envoyproxy/go-control-plane/envoy/extensions/filters/network/http_connection_manager/v3"
	"google.golang.org/protobuf/types/known/wrapperspb"
)

func TestXFCCElementWithoutURIs(t *testing.T) {
	peer := &x509.Certificate{Raw: []byte("der"), Subject: pkix.Name{}, DNSNames: []string{"a.example.com", "b.example.com"}}
	got := xfccElement(nil, []*x509.Certificate{peer}, readXFCCDetails(nil))
	if !strings.HasPrefix(got, "Hash=") || strings.Contains(got, ";") {
		t.Fatalf("no details asked: got %q", got)
	}
	details := []xfccDetail{xfccSubject, xfccURI, xfccDNS}
	got = xfccElement(nil, []*x509.Certificate{peer}, details)
	// Subject and URI stay when empty; each DNS SAN is its own key.
	want := `;Subject="";URI=;DNS=a.example.com;DNS=b.example.com`
	if !strings.HasSuffix(got, want) {
		t.Fatalf("got %q, want suffix %q", got, want)
	}
}

// TestXFCCElementIssuer checks SetCurrentClientCertDetails.issuer: the
// client certificate's issuer, quoted, after the other details.
func TestXFCCElementIssuer(t *testing.T) {
	peer := &x509.Certificate{Raw: []byte("der"), Subject: pkix.Name{CommonName: "client"},
		Issuer: pkix.Name{CommonName: "Test CA", Organization: []string{"Outrigger tests"}}, DNSNames: []string{"a.example.com"}}
	got := xfccElement(nil, []*x509.Certificate{peer}, readXFCCDetails(&hcmv3.HttpConnectionManager_SetCurrentClientCertDetails{
		Issuer: true, Dns: true, Subject: wrapperspb.Bool(true),
	}))
	want := `;Subject="CN=client";DNS=a.example.com;Issuer="CN=Test CA,O=Outrigger tests"`
	if !strings.HasSuffix(got, want) {
		t.Fatalf("got %q, want suffix %q", got, want)
	}
}

package httpconn

import (
	"crypto/x509"
	"crypto/x509/pkix"
	"strings"
	"testing"
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

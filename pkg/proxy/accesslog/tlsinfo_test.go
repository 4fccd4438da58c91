package accesslog

import (
	"crypto/x509"
	"crypto/x509/pkix"
	"math/big"
	"net"
	"net/url"
	"strings"
	"testing"
	"time"
)

func TestTLSOperators(t *testing.T) {
	start := time.Date(2026, 3, 4, 5, 6, 7, 0, time.UTC)
	peer := &x509.Certificate{
		Raw: []byte("peer"), SerialNumber: big.NewInt(0xabc), NotBefore: start, NotAfter: start.Add(time.Hour),
		Subject: pkix.Name{CommonName: "client"}, Issuer: pkix.Name{CommonName: "ca"},
		DNSNames: []string{"a.test", "b.test"}, IPAddresses: []net.IP{net.IPv4(10, 0, 0, 1)}, EmailAddresses: []string{"x@test"},
		URIs: []*url.URL{{Scheme: "spiffe", Host: "td", Path: "/ns/a"}, {Scheme: "spiffe", Host: "td", Path: "/ns/b"}},
	}
	second := &x509.Certificate{Raw: []byte("ca"), SerialNumber: big.NewInt(0x10)}
	local := &x509.Certificate{DNSNames: []string{"proxy.test"}, Subject: pkix.Name{CommonName: "proxy", Organization: []string{"o"}},
		URIs: []*url.URL{{Scheme: "spiffe", Host: "td", Path: "/proxy"}}}
	e := &Entry{
		TLS:         &TLSInfo{Version: "TLSv1.3", PeerCertificate: peer, PeerChain: []*x509.Certificate{peer, second}, LocalCertificate: local},
		UpstreamTLS: &TLSInfo{Version: "TLSv1.2"},
	}
	for format, want := range map[string]string{
		"%DOWNSTREAM_TLS_VERSION% %UPSTREAM_TLS_VERSION%":          "TLSv1.3 TLSv1.2",
		"%DOWNSTREAM_PEER_DNS_SAN% %DOWNSTREAM_PEER_IP_SAN%":       "a.test,b.test 10.0.0.1",
		"%DOWNSTREAM_PEER_EMAIL_SAN% %DOWNSTREAM_LOCAL_DNS_SAN%":   "x@test proxy.test",
		"%DOWNSTREAM_PEER_ISSUER% %DOWNSTREAM_PEER_CHAIN_SERIALS%": "CN=ca abc,10",
		// Rendered when first asked for, then kept: asked twice.
		"%DOWNSTREAM_PEER_SUBJECT% %DOWNSTREAM_PEER_SERIAL% %DOWNSTREAM_PEER_SUBJECT%":   "CN=client abc CN=client",
		"%DOWNSTREAM_PEER_URI_SAN% %DOWNSTREAM_PEER_FINGERPRINT_256%":                    "spiffe://td/ns/a,spiffe://td/ns/b 2ffc1d06387ef8bb7a34312b6c6c3f691550684508c3ce7ee3889375a18d6fa0",
		"%DOWNSTREAM_LOCAL_SUBJECT% %DOWNSTREAM_LOCAL_URI_SAN% %UPSTREAM_LOCAL_SUBJECT%": "CN=proxy,O=o spiffe://td/proxy -",
		"%DOWNSTREAM_PEER_CERT_V_START% %DOWNSTREAM_PEER_CERT_V_END(%s)%":                "2026-03-04T05:06:07.000Z " + "1772604367",
		"%UPSTREAM_PEER_SUBJECT% %UPSTREAM_PEER_CERT% %UPSTREAM_LOCAL_URI_SAN%":          "- - -",
	} {
		f, err := Text(format, false)
		if err != nil {
			t.Fatalf("%s: %v", format, err)
		}
		if got := string(f.Append(nil, e)); got != want {
			t.Errorf("%s = %q, want %q", format, got, want)
		}
	}
	// Go does not expose TLS session IDs.
	for _, op := range []string{"%DOWNSTREAM_TLS_SESSION_ID%", "%UPSTREAM_TLS_SESSION_ID%", "%UPSTREAM_PEER_NOPE%"} {
		if _, err := Text(op, false); err == nil || !strings.Contains(err.Error(), "not supported") {
			t.Errorf("%s: got %v, want refused", op, err)
		}
	}
	if _, err := Text("%DOWNSTREAM_TLS_VERSION(x)%", false); err == nil {
		t.Error("arguments to a TLS operator were accepted")
	}
}

package router

import (
	"crypto/x509"
	"testing"

	"github.com/outrigger-dev/outrigger/pkg/proxy/accesslog"
)

// tls_context matches the downstream connection's client certificate,
// presented and validated, as Envoy's evaluateTlsContextMatch does: a
// plaintext connection has presented and validated none.
func TestRouteTLSContextMatch(t *testing.T) {
	table := mustCompile(t, `
virtual_hosts:
- name: v
  domains: ["*"]
  routes:
  - match: {prefix: /, tls_context: {presented: true, validated: true}}
    route: {cluster: verified}
  - match: {prefix: /, tls_context: {presented: true}}
    route: {cluster: presented}
  - match: {prefix: /, tls_context: {validated: false}}
    route: {cluster: unvalidated}
  - match: {prefix: /}
    route: {cluster: rest}
`)
	cert := &x509.Certificate{}
	for _, c := range []struct {
		name string
		tls  *accesslog.TLSInfo
		want string
	}{
		{"validated certificate", &accesslog.TLSInfo{PeerCertificate: cert, PeerValidated: true}, "verified"},
		{"certificate not validated", &accesslog.TLSInfo{PeerCertificate: cert}, "presented"},
		{"TLS without a certificate", &accesslog.TLSInfo{}, "unvalidated"},
		{"plaintext", nil, "unvalidated"},
	} {
		req := Request{Host: "h", Path: "/", Method: "GET", TLS: c.tls}
		r := table.MatchRequest(&req)
		if r == nil || r.Cluster != c.want {
			t.Errorf("%s: route %v, want cluster %s", c.name, r, c.want)
		}
	}
	// presented: false takes the connections without a certificate.
	table = mustCompile(t, `
virtual_hosts:
- name: v
  domains: ["*"]
  routes:
  - match: {prefix: /, tls_context: {presented: false}}
    route: {cluster: anonymous}
  - match: {prefix: /}
    route: {cluster: rest}
`)
	for tls, want := range map[*accesslog.TLSInfo]string{nil: "anonymous", {}: "anonymous", {PeerCertificate: cert}: "rest"} {
		req := Request{Host: "h", Path: "/", Method: "GET", TLS: tls}
		if r := table.MatchRequest(&req); r == nil || r.Cluster != want {
			t.Errorf("presented: false, TLS %+v: route %v, want cluster %s", tls, r, want)
		}
	}
}

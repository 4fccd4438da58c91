package e2e

import (
	"crypto/sha256"
	"crypto/tls"
	"encoding/hex"
	"fmt"
	"net/http"
	"strings"
	"time"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"
)

var _ = Describe("x-forwarded-client-cert with forward_client_cert_matcher", func() {
	It("chooses the mode and details per request, falling back on the connection manager's", func() {
		dir := newDir()
		f := newTLSFiles(dir)
		echo := httpTestUpstream(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			_, _ = fmt.Fprint(w, r.Header.Get("X-Forwarded-Client-Cert"))
		}), false)
		port := freePort()
		action := func(mode, details string) string {
			return `{name: forward_client_cert, typed_config: {"@type": type.googleapis.com/envoy.extensions.filters.network.http_connection_manager.v3.HttpConnectionManager.ForwardClientCertConfig, forward_client_cert_details: ` + mode + `, set_current_client_cert_details: {` + details + `}}}`
		}
		// Requests whose x-forwarded-client-cert names the trusted
		// gateway keep it and get this hop's element appended; those
		// with x-xfcc: drop lose it; the others fall back on
		// SANITIZE_SET with the subject.
		matcher := `{matcher_list: {matchers: [
  {predicate: {single_predicate: {input: {name: xfcc, typed_config: {"@type": type.googleapis.com/envoy.type.matcher.v3.HttpRequestHeaderMatchInput, header_name: x-forwarded-client-cert}},
     value_match: {contains: trusted-gateway}}}, on_match: {action: ` + action("APPEND_FORWARD", "uri: true") + `}},
  {predicate: {single_predicate: {input: {name: drop, typed_config: {"@type": type.googleapis.com/envoy.type.matcher.v3.HttpRequestHeaderMatchInput, header_name: x-xfcc}},
     value_match: {exact: drop}}}, on_match: {action: ` + action("SANITIZE", "") + `}}]}}`
		hcm := `{name: envoy.filters.network.http_connection_manager, typed_config: {"@type": type.googleapis.com/envoy.extensions.filters.network.http_connection_manager.v3.HttpConnectionManager,
  stat_prefix: web, forward_client_cert_details: SANITIZE_SET, set_current_client_cert_details: {subject: true},
  forward_client_cert_matcher: ` + matcher + `,
  route_config: {virtual_hosts: [{name: all, domains: ["*"], routes: [{match: {prefix: /}, route: {cluster: echo}}]}]},
  http_filters: [{name: envoy.filters.http.router, typed_config: {"@type": type.googleapis.com/envoy.extensions.filters.http.router.v3.Router}}]}}`
		cfg := fmt.Sprintf(`
admin: {address: {socket_address: {address: 127.0.0.1, port_value: 0}}}
static_resources:
  clusters: [%s]
  listeners:
  - name: web
    address: {socket_address: {address: 127.0.0.1, port_value: %d}}
    filter_chains: [{filters: [%s], transport_socket: %s}]
`, tcpCluster("echo", portNum(echo)), port, hcm, f.transportSocket("", `, validation_context: {trusted_ca: {filename: `+f.ca+`}}`))
		s := Start(dir, cfg)
		s.WaitLive()

		clientCert, err := tls.LoadX509KeyPair(f.clientCert, f.clientKey)
		Expect(err).NotTo(HaveOccurred())
		client := &http.Client{Timeout: 10 * time.Second, Transport: &http.Transport{TLSClientConfig: &tls.Config{
			RootCAs: f.caPool, ServerName: "localhost", Certificates: []tls.Certificate{clientCert}}}}
		get := func(h http.Header) string {
			GinkgoHelper()
			r := httpDo(client, http.MethodGet, fmt.Sprintf("https://127.0.0.1:%d/", port), nil, h)
			Expect(r.Status).To(Equal(200), r.Body)
			return r.Body
		}
		sum := sha256.Sum256(f.client.Cert.Raw)
		hop := "By=" + serverSAN + ";Hash=" + hex.EncodeToString(sum[:])
		trusted := "By=spiffe://trusted-gateway;Hash=00"

		Expect(get(http.Header{"X-Forwarded-Client-Cert": {trusted}})).To(Equal(trusted + "," + hop + ";URI=" + clientSAN))
		Expect(get(http.Header{"X-Forwarded-Client-Cert": {trusted}, "X-Xfcc": {"drop"}})).To(Equal(trusted + "," + hop + ";URI=" + clientSAN))
		Expect(get(http.Header{"X-Forwarded-Client-Cert": {"By=intruder;Hash=01"}, "X-Xfcc": {"drop"}})).To(BeEmpty())
		fallback := get(http.Header{"X-Forwarded-Client-Cert": {"By=intruder;Hash=01"}})
		Expect(fallback).To(Equal(hop + `;Subject="CN=frontend,O=Outrigger tests"`))
		Expect(strings.Contains(fallback, "intruder")).To(BeFalse())
	})

	It("refuses an action of another type, with its path", func() {
		hcm := `{forward_client_cert_matcher: {on_no_match: {action: {name: a, typed_config: {"@type": type.googleapis.com/envoy.extensions.filters.http.composite.v3.ExecuteFilterAction}}}}}`
		r, _ := validate("bootstrap.yaml", proxySpec{Port: freePort(), HCM: hcm, Clusters: []proxyCluster{{Name: "up", Port: 1}}}.YAML())
		Expect(r.ExitCode).To(Equal(1))
		Expect(r.Stderr).To(ContainSubstring("forward_client_cert_matcher.on_no_match.action.typed_config: action envoy.extensions.filters.http.composite.v3.ExecuteFilterAction is not a forward client cert action"))
	})
})

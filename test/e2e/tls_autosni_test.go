package e2e

import (
	"fmt"
	"io"
	"net/http"
	"os"
	"strings"
	"time"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"
)

// fetchAs sends a GET to url with the Host header host and the extra
// header fields (name, value pairs), and returns the status and body.
func fetchAs(client *http.Client, url, host string, fields ...string) (int, string) {
	GinkgoHelper()
	req, err := http.NewRequest(http.MethodGet, url, nil)
	Expect(err).NotTo(HaveOccurred())
	req.Host = host
	for i := 0; i+1 < len(fields); i += 2 {
		req.Header.Set(fields[i], fields[i+1])
	}
	resp, err := client.Do(req)
	Expect(err).NotTo(HaveOccurred())
	defer resp.Body.Close()
	b, err := io.ReadAll(resp.Body)
	Expect(err).NotTo(HaveOccurred())
	return resp.StatusCode, string(b)
}

var _ = Describe("Upstream TLS auto_sni", func() {
	It("takes the upstream server name and SAN check from each request's host, keeping connections apart by name", func() {
		dir := newDir()
		f := newTLSFiles(dir)
		up := startTLSUpstream(f, false)
		trusted := upstreamTLS(`, sni: fixed.example.com, common_tls_context: {validation_context: {trusted_ca: {filename: ` + f.ca + `}}}`)
		auto := func(fields string) string {
			return ", " + unwrapFlow(httpProtocolOptions("{explicit_http_config: {http_protocol_options: {}}, upstream_http_protocol_options: {"+fields+"}}"))
		}
		autoH2 := ", " + unwrapFlow(httpProtocolOptions("{explicit_http_config: {http2_protocol_options: {}}, upstream_http_protocol_options: {auto_sni: true, auto_san_validation: true}}"))
		port := freePort()
		hcm := `{name: envoy.filters.network.http_connection_manager, typed_config: {"@type": type.googleapis.com/envoy.extensions.filters.network.http_connection_manager.v3.HttpConnectionManager,
  stat_prefix: ingress, access_log: [` + stdoutLog("SNILOG %REQ(:PATH)% %RESPONSE_CODE% %UPSTREAM_TRANSPORT_FAILURE_REASON%\n") + `],
  route_config: {virtual_hosts: [{name: all, domains: ["*"], routes: [
    {match: {prefix: /rewritten}, route: {cluster: both, host_rewrite_literal: "d.example.com:8443"}},
    {match: {prefix: /both}, route: {cluster: both}},
    {match: {prefix: /h2}, route: {cluster: h2}},
    {match: {prefix: /header}, route: {cluster: header}},
    {match: {prefix: /sanonly}, route: {cluster: sanonly}},
    {match: {prefix: /snionly}, route: {cluster: snionly}}]}]},
  http_filters: [{name: envoy.filters.http.router, typed_config: {"@type": type.googleapis.com/envoy.extensions.filters.http.router.v3.Router}}]}}`
		s := Start(dir, tlsBootstrap(port, "", []string{`{filters: [` + hcm + `]}`},
			tlsCluster("both", up, trusted, auto("auto_sni: true, auto_san_validation: true")),
			tlsCluster("h2", up, trusted, autoH2),
			tlsCluster("header", up, trusted, auto("auto_sni: true, override_auto_sni_header: X-Upstream-Host")),
			tlsCluster("sanonly", up, trusted, auto("auto_san_validation: true")),
			tlsCluster("snionly", up, trusted, auto("auto_sni: true")),
		), "--file-flush-interval-msec", "50")
		base := fmt.Sprintf("http://127.0.0.1:%d/", port)
		client := &http.Client{Timeout: 10 * time.Second}

		// The server name follows the host (without its port); requests
		// to different names never share a connection, while requests to
		// the same name do.
		for _, host := range []string{"a.example.com", "b.example.com:8080", "a.example.com", "b.example.com"} {
			code, body := fetchAs(client, base+"both", host)
			Expect(code).To(Equal(200), body)
			Expect(body).To(Equal("sni=" + strings.Split(host, ":")[0] + " alpn=http/1.1 proto=HTTP/1.1 peer=-"))
			// The connection is back in the pool before the next request
			// (the client may have its answer a moment before).
			Eventually(func() string { return statValue(s, "cluster.both.upstream_rq_active") }).Should(Equal("0"))
		}
		Expect(statValue(s, "cluster.both.upstream_cx_total")).To(Equal("2"))

		// HTTP/2 clusters keep a pool per server name as well.
		for _, host := range []string{"a.example.com", "b.example.com", "a.example.com"} {
			code, body := fetchAs(client, base+"h2", host)
			Expect(code).To(Equal(200), body)
			Expect(body).To(Equal("sni=" + host + " alpn=h2 proto=HTTP/2.0 peer=-"))
			Eventually(func() string { return statValue(s, "cluster.h2.upstream_rq_active") }).Should(Equal("0"))
		}
		Expect(statValue(s, "cluster.h2.upstream_cx_total")).To(Equal("2"))
		code, _ := fetchAs(client, base+"h2", "api.example.org")
		Expect(code).To(Equal(503))
		Expect(statValue(s, "cluster.h2.ssl.fail_verify_san")).To(Equal("1"))

		// After the route's host rewrite.
		code, body := fetchAs(client, base+"rewritten", "a.example.com")
		Expect(code).To(Equal(200), body)
		Expect(body).To(HavePrefix("sni=d.example.com "))

		// An IP address leaves the configured sni, and is checked among
		// the IP SANs.
		code, body = fetchAs(client, base+"both", "127.0.0.1:1234")
		Expect(code).To(Equal(200), body)
		Expect(body).To(HavePrefix("sni=fixed.example.com "))

		// A host the server certificate does not cover fails the SAN
		// check: 503, counted as Envoy counts it.
		code, body = fetchAs(client, base+"both", "api.example.org")
		Expect(code).To(Equal(503), body)
		Expect(body).To(ContainSubstring("CERTIFICATE_VERIFY_FAILED"))
		Expect(statValue(s, "cluster.both.ssl.fail_verify_san")).To(Equal("1"))
		Eventually(s.Stdout).Should(ContainSubstring("SNILOG /both 503 TLS_error:|268435581:SSL routines:OPENSSL_internal:CERTIFICATE_VERIFY_FAILED:TLS_error_end\n"))

		// override_auto_sni_header: its value when present, else the host.
		code, body = fetchAs(client, base+"header", "a.example.com", "x-upstream-host", "c.example.com:9")
		Expect(code).To(Equal(200), body)
		Expect(body).To(HavePrefix("sni=c.example.com "))
		code, body = fetchAs(client, base+"header", "a.example.com")
		Expect(code).To(Equal(200), body)
		Expect(body).To(HavePrefix("sni=a.example.com "))

		// auto_san_validation alone keeps the configured sni; auto_sni
		// alone checks no SAN.
		code, body = fetchAs(client, base+"sanonly", "a.example.com")
		Expect(code).To(Equal(200), body)
		Expect(body).To(HavePrefix("sni=fixed.example.com "))
		code, _ = fetchAs(client, base+"sanonly", "api.example.org")
		Expect(code).To(Equal(503))
		code, body = fetchAs(client, base+"snionly", "api.example.org")
		Expect(code).To(Equal(200), body)
		Expect(body).To(HavePrefix("sni=api.example.org "))
	})

	It("is refused on clusters whose protocol follows the client's or ALPN", func() {
		dir := newDir()
		Expect(os.MkdirAll(dir, 0o700)).To(Succeed())
		cluster := tlsCluster("h2", 1, upstreamTLS(""), ", "+unwrapFlow(httpProtocolOptions("{use_downstream_protocol_config: {http2_protocol_options: {}}, upstream_http_protocol_options: {auto_sni: true}}")))
		r, _ := validate("autosni.yaml", tlsBootstrap(freePort(), "", []string{`{filters: [` + routingHCM("%RESPONSE_CODE%", "h2") + `]}`}, cluster))
		Expect(r.ExitCode).To(Equal(1), r.Stdout+r.Stderr)
		Expect(r.Stdout + r.Stderr).To(ContainSubstring(`upstream_http_protocol_options.auto_sni`))
		Expect(r.Stdout + r.Stderr).To(ContainSubstring("use_downstream_protocol_config or auto_config"))
	})
})

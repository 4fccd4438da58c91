package e2e

import (
	"fmt"
	"io"
	"net"
	"net/http"
	"path/filepath"
	"strings"
	"time"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"
)

var _ = Describe("json_to_metadata", func() {
	It("turns JSON request and response bodies into dynamic metadata that a route header and the access log show", func() {
		// The upstream echoes the header the route added and the body
		// it got, and answers JSON naming an order.
		ln, err := net.Listen("tcp", "127.0.0.1:0")
		Expect(err).NotTo(HaveOccurred())
		srv := &http.Server{ReadHeaderTimeout: 5 * time.Second, Handler: http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			body, _ := io.ReadAll(r.Body)
			w.Header().Set("content-type", "application/json")
			fmt.Fprintf(w, `{"order":{"id":"o-%d"},"x-version":%q,"body":%q}`, len(body), r.Header.Get("x-version"), body)
		})}
		go func() { _ = srv.Serve(ln) }()
		DeferCleanup(srv.Close)

		dir := newDir()
		logPath := filepath.Join(dir, "http.log")
		port := freePort()
		listener := fmt.Sprintf(`{name: http, address: {socket_address: {address: 127.0.0.1, port_value: %d}},
			filter_chains: [{filters: [{name: envoy.filters.network.http_connection_manager, typed_config: {"@type": type.googleapis.com/envoy.extensions.filters.network.http_connection_manager.v3.HttpConnectionManager,
				stat_prefix: j2m,
				access_log: [{name: envoy.access_loggers.file, typed_config: {"@type": type.googleapis.com/envoy.extensions.access_loggers.file.v3.FileAccessLog, path: %q,
					log_format: {text_format_source: {inline_string: "%%DYNAMIC_METADATA(acme:version)%% %%DYNAMIC_METADATA(acme:order)%%\n"}}}}],
				http_filters: [
					{name: envoy.filters.http.json_to_metadata, typed_config: {"@type": type.googleapis.com/envoy.extensions.filters.http.json_to_metadata.v3.JsonToMetadata,
						request_rules: {rules: [{selectors: [{key: client}, {key: version}],
							on_present: {metadata_namespace: acme, key: version, type: STRING},
							on_missing: {metadata_namespace: acme, key: version, value: "none"},
							on_error: {metadata_namespace: acme, key: version, value: "bad-json"}}]},
						response_rules: {rules: [{selectors: [{key: order}, {key: id}],
							on_present: {metadata_namespace: acme, key: order}}]}}},
					{name: envoy.filters.http.router, typed_config: {"@type": type.googleapis.com/envoy.extensions.filters.http.router.v3.Router}}],
				route_config: {virtual_hosts: [{name: all, domains: ["*"], routes: [{match: {prefix: /}, route: {cluster: up},
					request_headers_to_add: [{header: {key: x-version, value: "%%DYNAMIC_METADATA(acme:version)%%"}}]}]}]}}}]}]}`,
			port, logPath)
		s := Start(dir, bootstrapOf([]string{listener}, []string{staticCluster("up", "127.0.0.1", ln.Addr().(*net.TCPAddr).Port)}),
			"--file-flush-interval-msec", "50")

		post := func(contentType, body string) string {
			GinkgoHelper()
			resp, err := (&http.Client{Timeout: 10 * time.Second}).Post(fmt.Sprintf("http://127.0.0.1:%d/", port), contentType, strings.NewReader(body))
			Expect(err).NotTo(HaveOccurred())
			defer resp.Body.Close()
			b, err := io.ReadAll(resp.Body)
			Expect(err).NotTo(HaveOccurred())
			Expect(resp.StatusCode).To(Equal(200), string(b))
			return string(b)
		}

		By("the request body's value reaches the route's header, and the body reaches the upstream whole")
		body := `{"client":{"version":"2.1"}}`
		Expect(post("application/json", body)).To(Equal(fmt.Sprintf(`{"order":{"id":"o-%d"},"x-version":"2.1","body":%q}`, len(body), body)))
		By("on_missing and on_error values")
		Expect(post("application/json", `{"client":{}}`)).To(ContainSubstring(`"x-version":"none"`))
		Expect(post("application/json", `{"client":`)).To(ContainSubstring(`"x-version":"bad-json"`))
		By("another content type is not read")
		Expect(post("text/plain", body)).To(ContainSubstring(`"x-version":""`))

		st := statValues(s, `^http\.j2m\.json_to_metadata\.`)
		Expect(st).To(HaveKeyWithValue("http.j2m.json_to_metadata.rq_success", "2"))
		Expect(st).To(HaveKeyWithValue("http.j2m.json_to_metadata.rq_invalid_json_body", "1"))
		Expect(st).To(HaveKeyWithValue("http.j2m.json_to_metadata.rq_mismatched_content_type", "1"))
		Expect(st).To(HaveKeyWithValue("http.j2m.json_to_metadata.resp_success", "4"))

		By("the access log shows the request's and the response's values")
		Eventually(func() string { return readFile(logPath) }).Should(And(
			ContainSubstring("2.1 o-28\n"),
			ContainSubstring("none o-13\n"),
			ContainSubstring("bad-json o-10\n"),
			ContainSubstring("- o-28\n")))
	})
})

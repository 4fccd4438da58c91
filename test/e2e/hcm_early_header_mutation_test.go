package e2e

import (
	"io"
	"net/http"
	"time"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"
)

var _ = Describe("Early header mutation extensions", func() {
	It("edit the request's headers before it is routed (envoy.http.early_header_mutation.header_mutation)", func() {
		up := httpTestUpstream(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			_, _ = io.WriteString(w, "tier="+r.Header.Get("x-tier")+" secret="+r.Header.Get("x-secret")+" internal="+r.Header.Get("x-internal-a")+" kept="+r.Header.Get("x-kept"))
		}), false)
		port := freePort()
		mutation := func(mutations string) string {
			return `{name: envoy.http.early_header_mutation.header_mutation, typed_config: ` +
				withType("type.googleapis.com/envoy.extensions.http.early_header_mutation.header_mutation.v3.HeaderMutation", `{mutations: `+mutations+`}`) + `}`
		}
		s := Start(newDir(), proxySpec{
			Port: port,
			HCM: `{early_header_mutation_extensions: [` +
				mutation(`[{remove: x-secret}, {remove_on_match: {key_matcher: {prefix: x-internal-}}}]`) + `, ` +
				mutation(`[{append: {header: {key: x-tier, value: gold}, append_action: OVERWRITE_IF_EXISTS_OR_ADD}}]`) + `]}`,
			Routes: `[{match: {prefix: /, headers: [{name: x-tier, string_match: {exact: gold}}]}, route: {cluster: up}},
 {match: {prefix: /}, direct_response: {status: 403, body: {inline_string: not gold}}}]`,
			Clusters: []proxyCluster{{Name: "up", Port: portNum(up)}},
		}.YAML())
		s.WaitLive()
		req, err := http.NewRequest("GET", listenerURL(port, "/"), nil)
		Expect(err).NotTo(HaveOccurred())
		for k, v := range map[string]string{"x-tier": "bronze", "x-secret": "s", "x-internal-a": "1", "x-kept": "k"} {
			req.Header.Set(k, v)
		}
		resp, err := (&http.Client{Timeout: 10 * time.Second}).Do(req)
		Expect(err).NotTo(HaveOccurred())
		defer resp.Body.Close()
		b, err := io.ReadAll(resp.Body)
		Expect(err).NotTo(HaveOccurred())
		Expect(resp.StatusCode).To(Equal(200))
		Expect(string(b)).To(Equal("tier=gold secret= internal= kept=k"))
	})

	It("refuses an extension of another category in early_header_mutation_extensions, with its path", func() {
		r, _ := validate("bootstrap.yaml", proxySpec{Port: freePort(),
			HCM:      `{early_header_mutation_extensions: [{name: envoy.http.original_ip_detection.xff, typed_config: {"@type": type.googleapis.com/envoy.extensions.http.original_ip_detection.xff.v3.XffConfig}}]}`,
			Clusters: []proxyCluster{{Name: "up", Port: 1}}}.YAML())
		Expect(r.ExitCode).To(Equal(1))
		Expect(r.Stderr).To(ContainSubstring(`early_header_mutation_extensions[0].typed_config: extension "proxy.http.original_ip_detection.xff" (category envoy.http.original_ip_detection) cannot be used here: expected category envoy.http.early_header_mutation`))
	})
})

package e2e

import (
	"fmt"
	"net/http"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"
)

// downstreamProtocolBootstrap routes /typed/ to a cluster with
// use_downstream_protocol_config (whose http_protocol_options are
// h1Options, a YAML flow mapping) and everything else to one with the
// deprecated protocol_selection: USE_DOWNSTREAM_PROTOCOL, both reaching
// the upstream at upPort, which speaks HTTP/1.1 and h2c.
func downstreamProtocolBootstrap(port, upPort int, h1Options string) string {
	return proxySpec{
		Port: port,
		Routes: `[{match: {prefix: /typed/}, route: {cluster: typed}},
			{match: {prefix: /}, route: {cluster: legacy}}]`,
		Clusters: []proxyCluster{
			{Name: "typed", Port: upPort, Extra: httpProtocolOptions(`{use_downstream_protocol_config: {
				http_protocol_options: ` + h1Options + `, http2_protocol_options: {max_concurrent_streams: 100}}}`)},
			{Name: "legacy", Port: upPort, Extra: "{protocol_selection: USE_DOWNSTREAM_PROTOCOL}"},
		},
	}.YAML()
}

var _ = Describe("The upstream protocol following the client's", func() {
	It("speaks HTTP/2 upstream for HTTP/2 clients and HTTP/1.1 for the others, with use_downstream_protocol_config and protocol_selection alike", func() {
		up := portNum(httpTestUpstream(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			fmt.Fprint(w, r.Proto)
		}), true))
		port := freePort()
		s := Start(newDir(), downstreamProtocolBootstrap(port, up, "{header_key_format: {proper_case_words: {}}}"))
		for _, path := range []string{"/typed/x", "/legacy"} {
			for proto, want := range map[string]string{"HTTP/1.1": "HTTP/1.1", "HTTP/2": "HTTP/2.0"} {
				r := httpDo(httpClients()[proto], "GET", listenerURL(port, path), nil, nil)
				Expect(r.Status).To(Equal(200), "%s over %s: %s %v", path, proto, r.Body, r.Header)
				Expect(r.Body).To(Equal(want), "%s over %s", path, proto)
			}
		}
		for _, c := range []string{"typed", "legacy"} {
			Expect(statValue(s, "cluster."+c+".upstream_cx_http1_total")).To(Equal("1"), c)
			Expect(statValue(s, "cluster."+c+".upstream_cx_http2_total")).To(Equal("1"), c)
		}
	})

	It("refuses a client-only option inside use_downstream_protocol_config with its path", func() {
		r, _ := validate("bootstrap.yaml", downstreamProtocolBootstrap(freePort(), 1, "{accept_http_10: true}"))
		Expect(r.ExitCode).To(Equal(1))
		Expect(r.Stderr).To(ContainSubstring(`static_resources.clusters[0].typed_extension_protocol_options["envoy.extensions.upstreams.http.v3.HttpProtocolOptions"].use_downstream_protocol_config.http_protocol_options.accept_http_10: not supported by Outrigger on a cluster (it applies to client connections only)`))
	})
})

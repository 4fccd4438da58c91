package e2e

import (
	"net/http"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"
)

// routeLibraryBootstrap is a listener on port with one gzip compressor
// filter; /br/ routes give it brotli instead (overrides.compressor_library,
// with lib as the route's library) and /plain disables it, before the
// upstream at up.
func routeLibraryBootstrap(port int, up, lib string) string {
	perRoute := func(v string) string {
		return `{envoy.filters.http.compressor: ` +
			withType("type.googleapis.com/envoy.extensions.filters.http.compressor.v3.CompressorPerRoute", v) + `}`
	}
	return proxySpec{
		Port: port,
		HCM:  "{stat_prefix: web}",
		Routes: `[{match: {prefix: /br/}, route: {cluster: up}, typed_per_filter_config: ` +
			perRoute(`{overrides: {compressor_library: {name: route_br, typed_config: `+lib+`}}}`) + `},
			{match: {prefix: /plain}, route: {cluster: up}, typed_per_filter_config: ` + perRoute("{disabled: true}") + `},
			{match: {prefix: /}, route: {cluster: up}}]`,
		Filters: "[" + httpFilter("envoy.filters.http.compressor", "type.googleapis.com/envoy.extensions.filters.http.compressor.v3.Compressor",
			`{response_direction_config: {common_config: {min_content_length: 100, content_type: [text/plain]}},
			compressor_library: {name: text, typed_config: `+withType("type.googleapis.com/envoy.extensions.compression.gzip.compressor.v3.Gzip", "{}")+`}}`) + "]",
		Clusters: []proxyCluster{{Name: "up", Port: portNum(up)}},
	}.YAML()
}

var _ = Describe("The compressor filter's per-route compressor_library", func() {
	const brotliLib = `{"@type": type.googleapis.com/envoy.extensions.compression.brotli.compressor.v3.Brotli, quality: 5}`

	for proto, c := range rawClients() {
		It("compresses a route's responses with the route's library, over "+proto, func() {
			up := httpTestUpstream(http.HandlerFunc(compressionUpstream), false)
			port := freePort()
			sc := Start(newDir(), routeLibraryBootstrap(port, up, brotliLib))
			get := func(path, accept string) Response {
				GinkgoHelper()
				return httpDo(c, http.MethodGet, listenerURL(port, path), nil, http.Header{"Accept-Encoding": {accept}})
			}
			for _, tc := range []struct{ path, accept, want string }{
				// The route's brotli replaces the filter's gzip...
				{"/br/text", "br", "br"},
				{"/br/text", "gzip;q=0.9, br;q=0.5", "br"},
				{"/br/text", "*", "br"},
				// ...which that route no longer offers.
				{"/br/text", "gzip", ""},
				// Other routes keep the filter's library.
				{"/text", "gzip", "gzip"},
				{"/text", "br", ""},
				{"/plain", "gzip", ""},
			} {
				r := get(tc.path, tc.accept)
				Expect(r.Status).To(Equal(http.StatusOK))
				Expect(r.Header.Get("Content-Encoding")).To(Equal(tc.want), "%s with Accept-Encoding %q", tc.path, tc.accept)
				Expect(decodeBody(tc.want, []byte(r.Body))).To(Equal(compressible), "%s with Accept-Encoding %q", tc.path, tc.accept)
				if tc.want != "" {
					Expect(len(r.Body)).To(BeNumerically("<", len(compressible)/4))
				}
			}
			// The filter's stats count the route's responses too.
			Expect(httpStat(sc, "http.web.compressor.text.gzip.response.compressed")).To(Equal("4"))
			Expect(httpStat(sc, "http.web.compressor.text.gzip.header_compressor_used")).To(Equal("3"))
			Expect(httpStat(sc, "http.web.compressor.text.gzip.header_wildcard")).To(Equal("1"))
		})
	}

	It("refuses a route library that is not a compressor, or a setting it cannot do, with its path", func() {
		for lib, want := range map[string]string{
			`{"@type": type.googleapis.com/envoy.extensions.compression.gzip.decompressor.v3.Gzip}`:                       "overrides.compressor_library.typed_config: compressor library type envoy.extensions.compression.gzip.decompressor.v3.Gzip is not supported",
			`{"@type": type.googleapis.com/envoy.extensions.compression.brotli.compressor.v3.Brotli, encoder_mode: TEXT}`: "overrides.compressor_library.typed_config.encoder_mode: TEXT is not supported by Outrigger",
		} {
			r, _ := validate("b.yaml", routeLibraryBootstrap(freePort(), "127.0.0.1:1", lib))
			Expect(r.ExitCode).To(Equal(1), "%s", r.Stderr)
			Expect(r.Stderr).To(ContainSubstring("typed_per_filter_config"))
			Expect(r.Stderr).To(ContainSubstring(want))
		}
	})
})

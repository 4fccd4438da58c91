package e2e

import (
	"fmt"
	"net/http"
	"os/exec"
	"strconv"
	"strings"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"
)

var _ = Describe("The compressor filter's status header", func() {
	It("says with x-envoy-compression-status whether a response was compressed, and why not", func() {
		up := httpTestUpstream(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			// The content-length is set, so that the status can give the
			// original length.
			w.Header().Set("content-length", strconv.Itoa(len(compressible)))
			compressionUpstream(w, r)
		}), false)
		port := freePort()
		Start(newDir(), proxySpec{
			Port:   port,
			HCM:    "{stat_prefix: web}",
			Routes: `[{match: {prefix: /}, route: {cluster: up}}]`,
			Filters: "[" + httpFilter("envoy.filters.http.compressor", "type.googleapis.com/envoy.extensions.filters.http.compressor.v3.Compressor",
				`{response_direction_config: {status_header_enabled: true, disable_on_etag_header: true,
					common_config: {min_content_length: 100, content_type: [text/plain]}},
				compressor_library: {name: text, typed_config: `+withType("type.googleapis.com/envoy.extensions.compression.gzip.compressor.v3.Gzip", "{}")+`}}`) + "]",
			Clusters: []proxyCluster{{Name: "up", Port: portNum(up)}},
		}.YAML())
		status := func(path string) (string, string) {
			GinkgoHelper()
			out, err := exec.Command("curl", "-sS", "--max-time", "10", "--compressed", "-D", "-", listenerURL(port, path)).CombinedOutput()
			Expect(err).NotTo(HaveOccurred(), "%s", out)
			head, body, _ := strings.Cut(string(out), "\r\n\r\n")
			for line := range strings.SplitSeq(head, "\r\n") {
				if v, ok := strings.CutPrefix(strings.ToLower(line), "x-envoy-compression-status: "); ok {
					return v, body
				}
			}
			return "", body
		}
		got, body := status("/text")
		Expect(strings.ToLower(got)).To(Equal(fmt.Sprintf("gzip;compressed;originallength=%d", len(compressible))))
		Expect(body).To(Equal(compressible))
		got, _ = status("/image")
		Expect(got).To(Equal("gzip;contenttypenotallowed"))
		got, _ = status("/etag")
		Expect(got).To(Equal("gzip;etagnotallowed"))
	})
})

package e2e

import (
	"fmt"
	"net/http"
	"time"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"
)

var _ = Describe("The header_to_metadata filter's stat_prefix", func() {
	It("counts Envoy's http_filter_name.<stat_prefix> stats at /stats", func() {
		up := portNum(httpTestUpstream(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			w.Header().Set("x-up", "1")
			fmt.Fprint(w, "upstream")
		}), false))
		port := freePort()
		s := Start(newDir(), proxySpec{
			Port: port,
			HCM:  `{stat_prefix: edge}`,
			Filters: `[` + httpFilter("envoy.filters.http.header_to_metadata", headerToMetadataType, `{stat_prefix: conv,
				request_rules: [{header: x-version, on_header_present: {key: version}, on_header_missing: {key: version, value: none}},
				                {header: x-b64, on_header_present: {key: b, encode: BASE64}}],
				response_rules: [{header: x-up, on_header_present: {key: up}}]}`) + `]`,
			Clusters: []proxyCluster{{Name: "up", Port: up}},
		}.YAML())
		client := &http.Client{Timeout: 5 * time.Second}
		Expect(httpDo(client, "GET", listenerURL(port, "/"), nil, http.Header{"X-Version": {"v2"}, "X-B64": {"!!!"}}).Status).To(Equal(200))
		Expect(httpDo(client, "GET", listenerURL(port, "/"), nil, nil).Status).To(Equal(200))
		for name, want := range map[string]string{
			"http_filter_name.conv.request_rules_processed":  "4",
			"http_filter_name.conv.request_metadata_added":   "2",
			"http_filter_name.conv.request_header_not_found": "1",
			"http_filter_name.conv.base64_decode_failed":     "1",
			"http_filter_name.conv.response_rules_processed": "2",
			"http_filter_name.conv.response_metadata_added":  "2",
		} {
			Expect(statValue(s, name)).To(Equal(want), name)
		}
	})
})

package e2e

import (
	"io"
	"net/http"
	"strconv"
	"strings"
	"time"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"
)

const bandwidthLimitType = "type.googleapis.com/envoy.extensions.filters.http.bandwidth_limit.v3.BandwidthLimit"

var _ = Describe("The bandwidth_limit filter", func() {
	It("meters response bodies through a shared token bucket, with Envoy's stats and delay trailers, and a route's own limit", func() {
		body := strings.Repeat("0123456789abcdef", 128) // 2 KiB
		up := httpTestUpstream(http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) {
			_, _ = io.WriteString(w, body)
		}), false)
		port := freePort()
		fast := `{envoy.filters.http.bandwidth_limit: ` + withType(bandwidthLimitType,
			`{stat_prefix: fast, enable_mode: RESPONSE, limit_kbps: 1000}`) + `}`
		sc := Start(newDir(), proxySpec{
			Port:   port,
			HCM:    `{stat_prefix: web, http_protocol_options: {enable_trailers: true}}`,
			Routes: `[{match: {prefix: /fast}, route: {cluster: up}, typed_per_filter_config: ` + fast + `}, {match: {prefix: /}, route: {cluster: up}}]`,
			Filters: "[" + httpFilter("envoy.filters.http.bandwidth_limit", bandwidthLimitType,
				`{stat_prefix: slow, enable_mode: RESPONSE, limit_kbps: 1, fill_interval: 0.1s, enable_response_trailers: true}`) + "]",
			Clusters: []proxyCluster{{Name: "up", Port: portNum(up)}},
		}.YAML())

		client := &http.Client{Timeout: 20 * time.Second}
		resp, err := client.Get(listenerURL(port, "/slow"))
		Expect(err).NotTo(HaveOccurred())
		got, err := io.ReadAll(resp.Body)
		resp.Body.Close()
		Expect(err).NotTo(HaveOccurred())
		Expect(string(got)).To(Equal(body))
		// 2 KiB through a bucket of 1 KiB (refilled at 1 KiB/s): the
		// filter made the body wait, and says for how long.
		delay, err := strconv.Atoi(resp.Trailer.Get("Bandwidth-Response-Filter-Delay-Ms"))
		Expect(err).NotTo(HaveOccurred(), "trailers %v", resp.Trailer)
		Expect(delay).To(BeNumerically(">=", 100))
		Expect(resp.Trailer.Get("Bandwidth-Response-Delay-Ms")).NotTo(BeEmpty())

		Expect(httpStat(sc, "slow.http_bandwidth_limit.response_enabled")).To(Equal("1"))
		enforced, _ := strconv.Atoi(httpStat(sc, "slow.http_bandwidth_limit.response_enforced"))
		Expect(enforced).To(BeNumerically(">=", 1))
		Expect(httpStat(sc, "slow.http_bandwidth_limit.response_allowed_total_size")).To(Equal("2048"))
		Expect(httpStat(sc, "slow.http_bandwidth_limit.response_incoming_total_size")).To(Equal("2048"))
		Expect(httpStat(sc, "slow.http_bandwidth_limit.response_pending")).To(Equal("0"))

		// The route's configuration, with its own bucket and stats.
		r := httpDo(client, "GET", listenerURL(port, "/fast"), nil, nil)
		Expect(r.Body).To(Equal(body))
		Expect(r.Header.Get("Content-Length")).To(Equal("2048"))
		Expect(httpStat(sc, "fast.http_bandwidth_limit.response_enabled")).To(Equal("1"))
		Expect(httpStat(sc, "fast.http_bandwidth_limit.response_enforced")).To(Equal("0"))
		Expect(httpStat(sc, "slow.http_bandwidth_limit.response_enabled")).To(Equal("1"))
	})

	It("refuses metering request bodies, and a route's configuration without a limit, with the field path", func() {
		r, _ := validate("b.yaml", tailLogSpec(freePort(), "["+httpFilter("envoy.filters.http.bandwidth_limit", bandwidthLimitType,
			`{stat_prefix: bw, enable_mode: REQUEST_AND_RESPONSE, limit_kbps: 10}`)+"]", "x"))
		Expect(r.ExitCode).To(Equal(1))
		Expect(r.Stderr).To(ContainSubstring("http_filters[0].typed_config.enable_mode: REQUEST_AND_RESPONSE is not supported by Outrigger"))
	})
})

package e2e

import (
	"fmt"
	"strings"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"
)

var _ = Describe("Listener filters: filter_disabled", func() {
	It("skips a listener filter on the connections its predicate matches, by destination port", func() {
		up := headerEchoUpstream()
		port, extra := freePort(), freePort()
		// The PROXY protocol on the main port only, as Istio disables
		// inspectors on some of a listener's ports.
		pp := proxyProtocolFilter("")
		pp = strings.TrimSuffix(pp, "}") + fmt.Sprintf(", filter_disabled: {or_match: {rules: [{destination_port_range: {start: %d, end: %d}}, {and_match: {rules: [{any_match: true}, {not_match: {any_match: true}}]}}]}}}", extra, extra+1)
		Start(newDir(), proxySpec{
			Port:     port,
			Listener: fmt.Sprintf(`{additional_addresses: [{address: {socket_address: {address: 127.0.0.1, port_value: %d}}}], listener_filters: [%s]}`, extra, pp),
			HCM:      `{use_remote_address: true}`,
			Clusters: []proxyCluster{{Name: "up", Port: up}},
		}.YAML())

		status, got := rawHTTP(port, proxyV1("203.0.113.7:51000", "198.51.100.1:443"))
		Expect(status).To(Equal(200))
		Expect(got["X-Forwarded-For"]).To(Equal("203.0.113.7"))

		// The filter does not run: no header is expected, none is read.
		status, got = rawHTTP(extra, nil)
		Expect(status).To(Equal(200))
		Expect(got["X-Forwarded-For"]).To(Equal("127.0.0.1"))
	})

	It("refuses a predicate it cannot evaluate, with its path", func() {
		cfg := proxySpec{
			Port:     freePort(),
			Listener: `{listener_filters: [` + strings.TrimSuffix(proxyProtocolFilter(""), "}") + `, filter_disabled: {destination_port_range: {start: 90, end: 80}}}]}`,
			Clusters: []proxyCluster{{Name: "up", Port: 1}},
		}.YAML()
		r, _ := validate("pred.yaml", cfg)
		Expect(r.ExitCode).To(Equal(1))
		Expect(r.Stderr).To(ContainSubstring("listener_filters[0].filter_disabled.destination_port_range: start 90 must be below end 80"))
	})
})

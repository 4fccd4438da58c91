package e2e

import (
	"io"
	"net/http"
	"syscall"
	"time"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"
)

// filtersBootstrap is a listener on port answering 200 "filtered" on
// every path, with the given http_filters (YAML flow sequence content, the
// router included).
func filtersBootstrap(port int, filters string) string {
	return proxySpec{
		Port:   port,
		HCM:    "{stat_prefix: filters, http_filters: [" + filters + "]}",
		Routes: "[{match: {prefix: /}, direct_response: {status: 200, body: {inline_string: filtered}}}]",
	}.YAML()
}

// The HTTP filters are found in the extension registry, by the type of
// their typed_config or, without one, by their name.
var _ = Describe("HTTP filters from the registry", func() {
	client := &http.Client{Timeout: 5 * time.Second}

	It("serves a router named without typed_config, in either spelling", func() {
		for _, name := range []string{"envoy.filters.http.router", "proxy.filters.http.router"} {
			port := freePort()
			s := Start(newDir(), filtersBootstrap(port, "{name: "+name+"}"))
			resp, err := client.Get(listenerURL(port, "/x"))
			Expect(err).NotTo(HaveOccurred())
			body, _ := io.ReadAll(resp.Body)
			resp.Body.Close()
			Expect(string(body)).To(Equal("filtered"), name)
			s.Signal(syscall.SIGINT)
			Expect(s.Wait(stopTimeout)).To(Equal(0))
		}
	})

	It("refuses a filter named without typed_config that is not registered, with its path", func() {
		r, _ := validate("b.yaml", filtersBootstrap(freePort(), "{name: envoy.filters.http.gzip}, {name: envoy.filters.http.router}"))
		Expect(r.ExitCode).To(Equal(1))
		Expect(r.Stderr).To(ContainSubstring(`static_resources.listeners[0].filter_chains[0].filters[0].typed_config.http_filters[0].name: filter "envoy.filters.http.gzip" without typed_config is not a registered HTTP filter`))
	})

	It("compiles a filter named without typed_config with its empty configuration, and reports what that lacks", func() {
		r, _ := validate("b.yaml", filtersBootstrap(freePort(), "{name: envoy.filters.http.health_check}, {name: envoy.filters.http.router}"))
		Expect(r.ExitCode).To(Equal(1))
		Expect(r.Stderr).To(ContainSubstring("http_filters[0].typed_config.pass_through_mode: must be set"))
	})
})

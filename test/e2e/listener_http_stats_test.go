package e2e

import (
	"fmt"
	"net/http"
	"net/url"
	"strings"
	"time"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"
)

// webChain is a filter chain (YAML flow style) whose connection manager,
// with the stat_prefix "web", answers /ok with 200, /fail with 503 and
// anything else with 404 (no route).
func webChain() string {
	return `{filters: [{name: envoy.filters.network.http_connection_manager, typed_config: {` +
		`"@type": type.googleapis.com/envoy.extensions.filters.network.http_connection_manager.v3.HttpConnectionManager, ` +
		`stat_prefix: web, route_config: {virtual_hosts: [{name: all, domains: ["*"], routes: [` +
		`{match: {path: "/ok"}, direct_response: {status: 200, body: {inline_string: ok}}}, ` +
		`{match: {path: "/fail"}, direct_response: {status: 503}}]}]}, ` +
		`http_filters: [{name: envoy.filters.http.router, typed_config: {"@type": type.googleapis.com/envoy.extensions.filters.http.router.v3.Router}}]}}]}`
}

var _ = Describe("Per-listener HTTP connection manager stats", func() {
	client := &http.Client{Timeout: 5 * time.Second, Transport: &http.Transport{DisableKeepAlives: true}}

	It("counts each listener's responses under listener.<address>.http.<stat_prefix>.", func() {
		port := freePort()
		s := Start(newDir(), listenersBootstrap(
			listenerDef{Name: "a", Chains: []string{webChain()}},
			listenerDef{Name: "b", Port: port, Chains: []string{webChain()}},
		))
		requests := []struct {
			addr, path string
			status     int
		}{
			{listenerAddr(s, "a"), "/ok", 200},
			{listenerAddr(s, "a"), "/ok", 200},
			{listenerAddr(s, "a"), "/ok", 200},
			{listenerAddr(s, "a"), "/nothing", 404},
			{listenerAddr(s, "b"), "/fail", 503},
			{listenerAddr(s, "b"), "/fail", 503},
			{listenerAddr(s, "b"), "/ok", 200},
		}
		for _, r := range requests {
			Expect(httpDo(client, http.MethodGet, "http://"+r.addr+r.path, nil, nil).Status).To(Equal(r.status), r.addr+r.path)
		}

		// The listener's own scope name: the configured address, port 0
		// kept for the kernel-chosen one.
		a, b := "listener.127.0.0.1_0.http.web.", fmt.Sprintf("listener.127.0.0.1_%d.http.web.", port)
		// A stream's per-listener downstream_rq_completed is counted last.
		Eventually(func() string { return statValue(s, a+"downstream_rq_completed") }).Should(Equal("4"))
		Eventually(func() string { return statValue(s, b+"downstream_rq_completed") }).Should(Equal("3"))
		Expect(statValues(s, `^listener\..*\.http\.web\.`)).To(Equal(map[string]string{
			a + "downstream_rq_1xx":       "0",
			a + "downstream_rq_2xx":       "3",
			a + "downstream_rq_3xx":       "0",
			a + "downstream_rq_4xx":       "1",
			a + "downstream_rq_5xx":       "0",
			a + "downstream_rq_completed": "4",
			b + "downstream_rq_1xx":       "0",
			b + "downstream_rq_2xx":       "1",
			b + "downstream_rq_3xx":       "0",
			b + "downstream_rq_4xx":       "0",
			b + "downstream_rq_5xx":       "2",
			b + "downstream_rq_completed": "3",
		}))
		// The connection manager's own stats count both listeners.
		Expect(statValues(s, `^http\.web\.downstream_rq_(\dxx|completed)$`)).To(Equal(map[string]string{
			"http.web.downstream_rq_1xx":       "0",
			"http.web.downstream_rq_2xx":       "4",
			"http.web.downstream_rq_3xx":       "0",
			"http.web.downstream_rq_4xx":       "1",
			"http.web.downstream_rq_5xx":       "2",
			"http.web.downstream_rq_completed": "7",
		}))

		// Prometheus gets the listener address and the prefix as labels.
		prom := s.Get("/stats/prometheus")
		Expect(prom.Status).To(Equal(200))
		Expect(promSample(prom.Body, "proxy_listener_http_downstream_rq_xx",
			`proxy_listener_address="127.0.0.1_0"`, `proxy_http_conn_manager_prefix="web"`, `proxy_response_code_class="2"`)).To(Equal("3"))
		Expect(promSample(prom.Body, "proxy_listener_http_downstream_rq_completed",
			fmt.Sprintf(`proxy_listener_address="127.0.0.1_%d"`, port), `proxy_http_conn_manager_prefix="web"`)).To(Equal("3"))
	})

	It("names the stats after the listener's stat_prefix when it has one", func() {
		s := Start(newDir(), listenersBootstrap(
			listenerDef{Name: "a", Fields: "stat_prefix: front", Chains: []string{webChain()}},
		))
		Expect(httpDo(client, http.MethodGet, "http://"+listenerAddr(s, "a")+"/fail", nil, nil).Status).To(Equal(503))
		Eventually(func() string { return statValue(s, "listener.front.http.web.downstream_rq_completed") }).Should(Equal("1"))
		Expect(statValue(s, "listener.front.http.web.downstream_rq_5xx")).To(Equal("1"))
		byAddress := s.Get("/stats?filter=" + url.QueryEscape(`^listener\.127\.0\.0\.1_0\.http\.`))
		Expect(byAddress.Status).To(Equal(200))
		Expect(byAddress.Body).To(BeEmpty(), "no per-listener stats under the address")
	})
})

// promSample returns the value of the one sample of metric in a Prometheus
// text exposition whose labels include every one of labels, "" if none.
func promSample(body, metric string, labels ...string) string {
	GinkgoHelper()
	found := ""
	for line := range strings.SplitSeq(body, "\n") {
		rest, ok := strings.CutPrefix(line, metric+"{")
		if !ok {
			continue
		}
		set, value, ok := strings.Cut(rest, "} ")
		if !ok {
			continue
		}
		match := true
		for _, l := range labels {
			match = match && strings.Contains(","+set+",", ","+l+",")
		}
		if match {
			Expect(found).To(BeEmpty(), "more than one %s sample with %v", metric, labels)
			found = value
		}
	}
	return found
}

package e2e

import (
	"net/url"
	"regexp"
	"strconv"
	"strings"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"
	"github.com/prometheus/common/expfmt"
	"github.com/prometheus/common/model"
)

// prometheusContentType is the exposition format 0.0.4's content type.
const prometheusContentType = "text/plain; version=0.0.4; charset=utf-8"

// adminRequestsTotal reads http.admin.downstream_rq_total from /stats.
func adminRequestsTotal(s *Sidecar) int {
	GinkgoHelper()
	r := s.Get("/stats?filter=" + url.QueryEscape(`^http\.admin\.downstream_rq_total$`))
	Expect(r.Status).To(Equal(200), r.Body)
	v, ok := strings.CutPrefix(strings.TrimSuffix(r.Body, "\n"), "http.admin.downstream_rq_total: ")
	Expect(ok).To(BeTrue(), "unexpected /stats body %q", r.Body)
	n, err := strconv.Atoi(v)
	Expect(err).NotTo(HaveOccurred())
	return n
}

var _ = Describe("Stats endpoints", func() {
	It("renders one stat in text, JSON and Prometheus", func() {
		s := Start(newDir(), Bootstrap{}.YAML())
		live := url.QueryEscape(`^server\.live$`)

		text := s.Get("/stats?filter=" + live)
		Expect(text.Status).To(Equal(200))
		Expect(text.Header.Get("Content-Type")).To(Equal("text/plain; charset=UTF-8"))
		Expect(text.Body).To(Equal("server.live: 1\n"))

		json := s.Get("/stats?format=json&filter=" + live)
		Expect(json.Status).To(Equal(200))
		Expect(json.Header.Get("Content-Type")).To(Equal("application/json"))
		Expect(json.Body).To(Equal(`{"stats":[{"name":"server.live","value":1}]}`))

		for _, path := range []string{"/stats/prometheus?filter=" + live, "/stats?format=prometheus&filter=" + live} {
			prom := s.Get(path)
			Expect(prom.Status).To(Equal(200), path)
			Expect(prom.Header.Get("Content-Type")).To(Equal(prometheusContentType), path)
			Expect(prom.Body).To(Equal("# HELP proxy_server_live 1 while the server is live (not draining or shutting down), else 0.\n"+
				"# TYPE proxy_server_live gauge\nproxy_server_live{} 1\n"), path)
		}
	})

	It("serves Prometheus output that Prometheus parses", func() {
		s := Start(newDir(), Bootstrap{}.YAML())
		r := s.Get("/stats/prometheus?text_readouts")
		Expect(r.Status).To(Equal(200))
		parser := expfmt.NewTextParser(model.UTF8Validation)
		families, err := parser.TextToMetricFamilies(strings.NewReader(r.Body))
		Expect(err).NotTo(HaveOccurred(), r.Body)
		Expect(families).To(HaveKey("proxy_server_live"))
		Expect(families).To(HaveKey("proxy_http_downstream_rq_total"))
		Expect(families["proxy_http_downstream_rq_total"].GetMetric()[0].GetLabel()[0].GetValue()).To(Equal("admin"))
	})

	DescribeTable("refuses bad parameters with 400 and the reason",
		func(path, body string) {
			s := Start(newDir(), Bootstrap{}.YAML())
			r := s.Get(path)
			Expect(r.Status).To(Equal(400))
			Expect(r.Body).To(Equal(body))
		},
		Entry("a bad filter", "/stats?filter=%5Ba", "Invalid re2 regex: missing closing ]: `[a`"),
		Entry("an unknown format", "/stats?format=xml", "usage: /stats?format=(html|active-html|json|prometheus|text)\n\n"),
		Entry("an unknown bucket mode", "/stats?histogram_buckets=linear",
			"usage: /stats?histogram_buckets=(cumulative|disjoint|detailed|summary)\n"),
		Entry("an unknown type", "/stats?type=counters", "invalid &type= param"),
		Entry("a bucket mode Prometheus lacks", "/stats/prometheus?histogram_buckets=disjoint",
			"unsupported prometheus histogram bucket mode"),
	)

	It("switches the filter to ECMAScript with the runtime key", func() {
		s := Start(newDir(), Bootstrap{Runtime: []RuntimeLayer{{Name: "admin"}}}.YAML())
		lookahead := "/stats?filter=" + url.QueryEscape(`^server\.li(?=ve$)`)
		Expect(s.Get(lookahead).Status).To(Equal(400), "RE2 has no lookahead")
		Expect(s.Post("/runtime_modify?proxy.reloadable_features.admin_stats_filter_use_re2=false").Status).To(Equal(200))
		r := s.Get(lookahead)
		Expect(r.Status).To(Equal(200), r.Body)
		Expect(r.Body).To(Equal("server.live: 1\n"))
	})

	It("tracks recent lookups only while enabled, keeping the total", func() {
		s := Start(newDir(), Bootstrap{}.YAML())
		total := regexp.MustCompile(`\ntotal: [0-9]+\n$`)

		off := s.Get("/stats/recentlookups")
		Expect(off.Status).To(Equal(200))
		Expect(off.Body).To(HavePrefix("Lookup tracking is not enabled. Use /stats/recentlookups/enable to enable.\n"))
		Expect(off.Body).To(MatchRegexp(total.String()))

		Expect(s.Get("/stats/recentlookups/enable").Status).To(Equal(400), "a mutation with GET")
		Expect(s.Post("/stats/recentlookups/enable").Body).To(Equal("OK\n"))
		on := s.Get("/stats/recentlookups")
		Expect(on.Body).To(HavePrefix("   Count Lookup\n"))
		Expect(on.Body).To(MatchRegexp(total.String()))

		Expect(s.Post("/stats/recentlookups/clear").Body).To(Equal("OK\n"))
		Expect(s.Post("/stats/recentlookups/disable").Body).To(Equal("OK\n"))
		Expect(s.Get("/stats/recentlookups").Body).To(HavePrefix("Lookup tracking is not enabled."))
	})

	It("resets counters for the admin's output", func() {
		s := Start(newDir(), Bootstrap{}.YAML())
		s.WaitLive()
		for range 3 {
			Expect(s.Get("/ready").Status).To(Equal(200))
		}
		before := adminRequestsTotal(s)
		Expect(before).To(BeNumerically(">=", 4))
		Expect(s.Get("/reset_counters").Status).To(Equal(400), "a mutation with GET")
		Expect(adminRequestsTotal(s)).To(BeNumerically(">", before), "the refused GET reset nothing")
		Expect(s.Post("/reset_counters").Body).To(Equal("OK\n"))
		// Only the request reading the counter was counted since the reset.
		Expect(adminRequestsTotal(s)).To(Equal(1))
	})
})

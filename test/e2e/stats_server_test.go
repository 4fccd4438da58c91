package e2e

import (
	"net/url"
	"strconv"
	"strings"
	"time"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"
)

// withStats is the smallest bootstrap plus top-level stats settings (YAML
// lines such as "stats_flush_interval: 1s").
func withStats(extra string) string {
	return Bootstrap{}.YAML() + "\n" + extra + "\n"
}

// statValues reads /stats?filter=<re> and returns every "name: value"
// line as a map (histograms keep their whole summary as the value).
func statValues(s *Sidecar, filter string) map[string]string {
	GinkgoHelper()
	r := s.Get("/stats?filter=" + url.QueryEscape(filter))
	Expect(r.Status).To(Equal(200), r.Body)
	out := map[string]string{}
	for _, line := range strings.Split(strings.TrimSuffix(r.Body, "\n"), "\n") {
		name, value, ok := strings.Cut(line, ": ")
		Expect(ok).To(BeTrue(), "malformed /stats line %q", line)
		out[name] = value
	}
	return out
}

// statInt is the integer value of one counter or gauge.
func statInt(s *Sidecar, name string) int64 {
	GinkgoHelper()
	v, ok := statValues(s, "^"+regexpQuote(name)+"$")[name]
	Expect(ok).To(BeTrue(), "stat %s is missing", name)
	n, err := strconv.ParseInt(v, 10, 64)
	Expect(err).NotTo(HaveOccurred(), "stat %s = %q", name, v)
	return n
}

// regexpQuote escapes the dots of a stat name for a filter.
func regexpQuote(name string) string { return strings.ReplaceAll(name, ".", `\.`) }

var _ = Describe("Server stats", func() {
	It("lists every server.* stat with sane values", func() {
		s := Start(newDir(), withStats("stats_server_version_override: 31337\nstats_flush_interval: 0.1s"), "--concurrency", "3")
		// Histograms show what the flushes merged: wait for the first one.
		Eventually(func() string {
			return statValues(s, `^server\.initialization_time_ms$`)["server.initialization_time_ms"]
		}).Should(MatchRegexp(`^P0\([0-9.]+,[0-9.]+\) `), "recorded once the server is LIVE")
		v := statValues(s, `^server\.`)
		Expect(v).To(HaveKeyWithValue("server.live", "1"))
		Expect(v).To(HaveKeyWithValue("server.state", "0"), "LIVE")
		Expect(v).To(HaveKeyWithValue("server.concurrency", "3"))
		Expect(v).To(HaveKeyWithValue("server.version", "31337"))
		Expect(v).To(HaveKeyWithValue("server.hot_restart_epoch", "0"))
		Expect(v).To(HaveKeyWithValue("server.hot_restart_generation", "1"))
		Expect(v).To(HaveKeyWithValue("server.total_connections", "0"))
		Expect(v).To(HaveKeyWithValue("server.parent_connections", "0"))
		Expect(v).To(HaveKeyWithValue("server.days_until_first_cert_expiring", "0"))
		for _, name := range []string{"server.static_unknown_fields", "server.dynamic_unknown_fields",
			"server.debug_assertion_failures", "server.proxy_bug_failures", "server.dropped_stat_flushes",
			"server.seconds_until_first_ocsp_response_expiring", "server.main_thread.watchdog_miss",
			"server.uptime", "server.stats_recent_lookups", "server.compilation_settings.fips_mode"} {
			Expect(v).To(HaveKey(name))
		}
		for _, name := range []string{"server.memory_allocated", "server.memory_heap_size", "server.memory_physical_size"} {
			n, err := strconv.ParseInt(v[name], 10, 64)
			Expect(err).NotTo(HaveOccurred())
			Expect(n).To(BeNumerically(">", 0), name)
		}
	})

	It("counts unknown static fields that were allowed", func() {
		s := Start(newDir(), withStats("no_such_field: 1\nanother_unknown: {a: 1}"), "--allow-unknown-static-fields")
		Expect(statInt(s, "server.static_unknown_fields")).To(BeEquivalentTo(2))
	})

	It("refreshes the server gauges at each flush", func() {
		s := Start(newDir(), withStats("stats_flush_interval: 0.1s"))
		Eventually(func() int64 { return statInt(s, "server.uptime") }, 5*time.Second).Should(BeNumerically(">=", 1))
	})

	It("reports draining in server.live and server.state", func() {
		s := Start(newDir(), withStats(""))
		Expect(s.Post("/healthcheck/fail").Status).To(Equal(200))
		Expect(statInt(s, "server.live")).To(BeZero())
		Expect(statInt(s, "server.state")).To(BeEquivalentTo(1), "DRAINING")
	})
})

var _ = Describe("Admin listener stats", func() {
	It("counts requests by class, connections and times", func() {
		s := Start(newDir(), withStats(""))
		s.WaitLive()
		Expect(s.Get("/ready").Status).To(Equal(200))
		Expect(s.Get("/no/such/page").Status).To(Equal(404))
		Expect(s.Get("/quitquitquit").Status).To(Equal(400), "a mutation with GET")

		v := statValues(s, `^(http|listener)\.admin\.`)
		// The /stats request itself is in flight: counted, not completed.
		Expect(v).To(HaveKeyWithValue("http.admin.downstream_rq_total", "4"))
		Expect(v).To(HaveKeyWithValue("http.admin.downstream_rq_active", "1"))
		Expect(v).To(HaveKeyWithValue("http.admin.downstream_rq_completed", "3"))
		Expect(v).To(HaveKeyWithValue("http.admin.downstream_rq_2xx", "1"))
		Expect(v).To(HaveKeyWithValue("http.admin.downstream_rq_4xx", "2"))
		Expect(v).To(HaveKeyWithValue("http.admin.downstream_rq_5xx", "0"))
		Expect(v).To(HaveKeyWithValue("http.admin.downstream_rq_http1_total", "4"))
		Expect(v).To(HaveKeyWithValue("listener.admin.http.admin.downstream_rq_4xx", "2"))
		// The test client opens a connection per request; the current one
		// is the only one still open once the others are seen closed.
		Expect(v).To(HaveKeyWithValue("http.admin.downstream_cx_total", "4"))
		Expect(v).To(HaveKeyWithValue("listener.admin.downstream_cx_total", "4"))
		Expect(v).To(HaveKeyWithValue("listener.admin.main_thread.downstream_cx_total", "4"))
		Expect(v).To(HaveKey("http.admin.downstream_rq_time"))
		Expect(v).To(HaveKey("listener.admin.downstream_cx_length_ms"))

		// Once the earlier connections are seen closed, only the current
		// request's is active, and every other one was destroyed.
		Eventually(func() []int64 {
			v := statValues(s, `^(http|listener)\.admin\.downstream_cx_(active|destroy|total)$`)
			var out []int64
			for _, p := range []string{"http.admin.", "listener.admin."} {
				active, _ := strconv.ParseInt(v[p+"downstream_cx_active"], 10, 64)
				destroy, _ := strconv.ParseInt(v[p+"downstream_cx_destroy"], 10, 64)
				total, _ := strconv.ParseInt(v[p+"downstream_cx_total"], 10, 64)
				out = append(out, active, total-destroy)
			}
			return out
		}).Should(Equal([]int64{1, 1, 1, 1}))
	})

	It("renders the admin stats with Envoy's tags for Prometheus", func() {
		s := Start(newDir(), withStats(""))
		s.WaitLive()
		Expect(s.Get("/ready").Status).To(Equal(200))
		body := s.Get("/stats/prometheus").Body
		Expect(body).To(ContainSubstring("# TYPE proxy_http_downstream_rq_xx counter\n"))
		Expect(body).To(ContainSubstring(`proxy_http_downstream_rq_xx{proxy_response_code_class="2",proxy_http_conn_manager_prefix="admin"} 1` + "\n"))
		Expect(body).To(ContainSubstring(`proxy_listener_admin_http_downstream_rq_xx{proxy_response_code_class="2",proxy_http_conn_manager_prefix="admin"} 1` + "\n"))
		Expect(body).To(ContainSubstring("proxy_server_live{} 1\n"))
	})
})

var _ = Describe("stats_config", func() {
	It("adds configured and command line tags to the Prometheus labels", func() {
		s := Start(newDir(), withStats(`stats_config:
  stats_tags:
  - {tag_name: zone, fixed_value: eu-1}
  - {tag_name: worker, regex: '^listener\.admin\.((main_thread)\.)'}`), "--stats-tag", "team:edge")
		body := s.Get("/stats/prometheus").Body
		Expect(body).To(ContainSubstring(`proxy_server_live{team="edge",zone="eu-1"} 1` + "\n"))
		// The regex's first group leaves the name, its second is the value.
		Expect(body).To(ContainSubstring("# TYPE proxy_listener_admin_downstream_cx_total counter\n" +
			`proxy_listener_admin_downstream_cx_total{team="edge",zone="eu-1"} 1` + "\n" +
			`proxy_listener_admin_downstream_cx_total{team="edge",zone="eu-1",worker="main_thread"} 1` + "\n"))
	})

	It("keeps stats out of every output with stats_matcher", func() {
		s := Start(newDir(), withStats(`stats_config: {stats_matcher: {exclusion_list: {patterns: [{prefix: "http.admin."}, {safe_regex: {regex: "^server\\.memory_.*"}}]}}}`))
		all := s.Get("/stats").Body
		Expect(all).NotTo(MatchRegexp(`(?m)^http\.admin\.`))
		Expect(all).NotTo(ContainSubstring("server.memory_"))
		Expect(all).To(ContainSubstring("listener.admin.http.admin.downstream_rq_2xx: "), "the prefix is matched, not a substring")
		Expect(all).To(ContainSubstring("listener.admin.downstream_cx_total: "))
		Expect(all).To(ContainSubstring("server.live: 1\n"))
		Expect(s.Get("/stats/prometheus").Body).NotTo(ContainSubstring("proxy_http_downstream_rq_total"))
	})

	It("lists only included stats with an inclusion list", func() {
		s := Start(newDir(), withStats(`stats_config: {stats_matcher: {inclusion_list: {patterns: [{exact: server.live}, {prefix: server.hot_}]}}}`))
		Expect(s.Get("/stats").Body).To(Equal("server.hot_restart_epoch: 0\nserver.hot_restart_generation: 1\nserver.live: 1\n"))
	})

	It("uses the configured histogram buckets", func() {
		s := Start(newDir(), withStats("stats_config: {histogram_bucket_settings: [{match: {prefix: server.}, buckets: [1, 100000]}]}\nstats_flush_on_admin: true"))
		body := s.Get("/stats?filter=initialization_time_ms&histogram_buckets=cumulative").Body
		Expect(body).To(MatchRegexp(`^server\.initialization_time_ms: B1\(\d+,\d+\) B100000\(1,1\)\n$`))
	})

	DescribeTable("refuses bad stats configuration, naming the field",
		func(extra string, args []string, want string) {
			res, _ := validate("stats.yaml", withStats(extra), args...)
			Expect(res.ExitCode).To(Equal(1), res.Stdout)
			Expect(res.Stderr).To(ContainSubstring(want))
		},
		Entry("a tag regex that does not compile", `stats_config: {stats_tags: [{tag_name: t, regex: "("}]}`, nil,
			"stats_config.stats_tags[0]: "),
		Entry("a tag given twice", `stats_config: {stats_tags: [{tag_name: team, fixed_value: a}]}`, []string{"--stats-tag", "team:b"},
			`stats_config.stats_tags[0].tag_name: tag name "team" is also given with --stats-tag`),
		Entry("a flush interval and flush on admin", "stats_flush_interval: 2s\nstats_flush_on_admin: true", nil,
			"stats_flush_on_admin: only one of stats_flush_interval and stats_flush_on_admin may be set"),
		Entry("an unsupported sink field", `stats_config: {allow_default_tag_overrides: true}`, nil,
			"stats_config.allow_default_tag_overrides: not supported by Outrigger"),
		Entry("a sink naming no cluster", `stats_sinks: [{name: envoy.stat_sinks.statsd, typed_config: {"@type": type.googleapis.com/envoy.config.metrics.v3.StatsdSink, tcp_cluster_name: nowhere}}]`, nil,
			`stats_sinks[0].typed_config.tcp_cluster_name: unknown cluster "nowhere"`),
	)
})

var _ = Describe("/stats filter engine", func() {
	It("switches from RE2 to ECMAScript with the runtime key", func() {
		s := Start(newDir(), Bootstrap{Runtime: []RuntimeLayer{{Name: "admin"}}}.YAML())
		// A lookahead is ECMAScript only.
		Expect(s.Get("/stats?filter=" + url.QueryEscape(`^server\.live(?!x)`)).Status).To(Equal(400))
		Expect(s.Post("/runtime_modify?proxy.reloadable_features.admin_stats_filter_use_re2=false").Status).To(Equal(200))
		r := s.Get("/stats?filter=" + url.QueryEscape(`^server\.live(?!x)`))
		Expect(r.Status).To(Equal(200))
		Expect(r.Body).To(Equal("server.live: 1\n"))
	})
})

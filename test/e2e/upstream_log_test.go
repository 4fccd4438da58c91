package e2e

import (
	"net/http"
	"path/filepath"
	"regexp"
	"strings"
	"time"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"
)

var _ = Describe("Router upstream_log", func() {
	It("logs each upstream attempt (retried 503, reset, per-try timeout) to a file and, filtered, to stdout, with the pool-ready and periodic entries", func() {
		up := &flakyUpstream{seen: map[string]int{}}
		addr := httpTestUpstream(up, false)
		port, dir := freePort(), newDir()
		logPath := filepath.Join(dir, "upstream.log")
		format := "UL %REQ(:PATH)% %ACCESS_LOG_TYPE% %RESPONSE_CODE% %RESPONSE_FLAGS% %UPSTREAM_HOST% %UPSTREAM_REQUEST_ATTEMPT_COUNT%\n"
		filtered := strings.TrimSuffix(stdoutLog("FL %REQ(:PATH)% %ACCESS_LOG_TYPE% %RESPONSE_CODE%\n"), "}") +
			`,"filter":{"status_code_filter":{"comparison":{"op":"GE","value":{"default_value":500,"runtime_key":"uplog.min"}}}}}`
		s := Start(dir, proxySpec{
			Port:   port,
			Routes: retryRoutes,
			Router: `{upstream_log: [` + fileLog(logPath, format) + `, ` + filtered + `],
			  upstream_log_options: {flush_upstream_log_on_upstream_stream: true, upstream_log_flush_interval: 0.1s}}`,
			HCM:      `{access_log: [` + fileLog(logPath, format) + `]}`,
			Clusters: []proxyCluster{{Name: "up", Port: portNum(addr)}},
		}.YAML(), "--file-flush-interval-msec", "20")
		s.WaitLive()
		c := &http.Client{Timeout: 15 * time.Second}
		// POSTs with a body: a request without one goes out again, as
		// the same attempt, when a reused connection turns out dead.
		for _, path := range []string{"/503/a", "/reset/b", "/hang/c"} {
			status, attempts, _ := retryGet(c, port, "POST", path, "x")
			Expect(status).To(Equal(200), path)
			Expect(attempts).To(BeEmpty())
		}
		host := addr
		lines := func(path string) []string {
			var out []string
			for _, l := range strings.Split(readFile(logPath), "\n") {
				if strings.HasPrefix(l, "UL "+path+" ") && !strings.Contains(l, " UpstreamPeriodic ") {
					out = append(out, strings.TrimPrefix(l, "UL "+path+" "))
				}
			}
			return out
		}
		want := func(first string) []string {
			return []string{
				"UpstreamPoolReady 0 - " + host + " 0",
				first,
				"UpstreamPoolReady 0 - " + host + " 0",
				"UpstreamEnd 200 - " + host + " 0",
				"DownstreamEnd 200 - " + host + " 2",
			}
		}
		By("a retried 503: the attempt's own response code")
		Eventually(func() []string { return lines("/503/a") }, 10*time.Second).Should(Equal(want("UpstreamEnd 503 - " + host + " 0")))
		By("a reset upstream: no response code, the attempt's UC")
		Eventually(func() []string { return lines("/reset/b") }, 10*time.Second).Should(Equal(want("UpstreamEnd 0 UC " + host + " 0")))
		By("a per-try timeout: no response code, the attempt's UT, periodic entries while it waited")
		Eventually(func() []string { return lines("/hang/c") }, 10*time.Second).Should(Equal(want("UpstreamEnd 0 UT " + host + " 0")))
		Expect(readFile(logPath)).To(MatchRegexp(`(?m)^UL /hang/c UpstreamPeriodic 0 - ` + regexp.QuoteMeta(host) + ` 0$`))

		By("the stdout logger's status_code_filter sees each attempt: only the 503 passes")
		Eventually(s.Stdout, 10*time.Second).Should(ContainSubstring("FL /503/a UpstreamEnd 503\n"))
		Expect(s.Stdout()).NotTo(MatchRegexp(`FL \S+ \S+ (0|200)\n`))
	})

	It("refuses upstream_log in an upgrade's own filter chain, with its path", func() {
		r, _ := validate("uplog.yaml", proxySpec{
			Port: freePort(),
			HCM: `{upgrade_configs: [{upgrade_type: websocket, filters: [{name: envoy.filters.http.router, typed_config: {
			  "@type": type.googleapis.com/envoy.extensions.filters.http.router.v3.Router, upstream_log: [` + stdoutLog("x\n") + `]}}]}]}`,
			Clusters: []proxyCluster{{Name: "up", Port: freePort()}},
		}.YAML())
		Expect(r.ExitCode).To(Equal(1))
		Expect(r.Stderr).To(ContainSubstring("upgrade_configs[0].filters[0].typed_config.upstream_log: not supported by Outrigger in an upgrade's filter chain"))
	})
})

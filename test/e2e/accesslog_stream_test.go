package e2e

import (
	"fmt"
	"io"
	"net/http"
	"strings"
	"time"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"
)

// accessLogBootstrap is a listener on port answering /ok with 200 and
// /fail with 503, with the given access_log list (YAML flow sequence
// content), and an admin with the given admin access_log list.
func accessLogBootstrap(port int, accessLog, adminAccessLog string) string {
	return accessLogSpec(port, accessLog, adminAccessLog).YAML()
}

// accessLogSpec is accessLogBootstrap's proxySpec, for a spec that adds to
// it; its runtime has an admin layer.
func accessLogSpec(port int, accessLog, adminAccessLog string) proxySpec {
	return proxySpec{
		Port: port,
		HCM:  "{stat_prefix: logs, access_log: [" + accessLog + "]}",
		Top: `{admin: {address: {socket_address: {address: 127.0.0.1, port_value: 0}}, access_log: [` + adminAccessLog + `]},
			layered_runtime: {layers: [{name: admin, admin_layer: {}}]}}`,
		Routes: `[{match: {path: /ok}, direct_response: {status: 200, body: {inline_string: ok}}},
			{match: {path: /fail}, direct_response: {status: 503, body: {inline_string: down}}}]`,
	}
}

// get requests path on the listener with the given headers and returns
// the status.
func get(port int, path string, header http.Header) int {
	req, err := http.NewRequest(http.MethodGet, listenerURL(port, path), nil)
	Expect(err).NotTo(HaveOccurred())
	for k, v := range header {
		req.Header[k] = v
	}
	resp, err := (&http.Client{Timeout: 5 * time.Second}).Do(req)
	Expect(err).NotTo(HaveOccurred())
	_, _ = io.Copy(io.Discard, resp.Body)
	resp.Body.Close()
	return resp.StatusCode
}

var _ = Describe("Access logs on the standard streams, with filters", func() {
	It("logs to stdout and stderr, each logger with its format and filter", func() {
		port := freePort()
		s := Start(newDir(), accessLogBootstrap(port, `
			{name: envoy.access_loggers.stdout},
			{name: errors,
			 filter: {status_code_filter: {comparison: {op: GE, value: {default_value: 500, runtime_key: errors.min_status}}}},
			 typed_config: {"@type": type.googleapis.com/envoy.extensions.access_loggers.stream.v3.StderrAccessLog,
			   log_format: {text_format_source: {inline_string: "ERRLOG %RESPONSE_CODE% %REQ(:PATH)% %REQ(X-CASE)%\n"}}}},
			{name: canary,
			 filter: {and_filter: {filters: [
			   {header_filter: {header: {name: x-canary, string_match: {exact: "yes"}}}},
			   {not_health_check_filter: {}}]}},
			 typed_config: {"@type": type.googleapis.com/envoy.extensions.access_loggers.stream.v3.StdoutAccessLog,
			   log_format: {json_format: {canary: "%REQ(:PATH)%", code: "%RESPONSE_CODE%"}}}}`, ""),
			"--file-flush-interval-msec", "50")

		Expect(get(port, "/ok", http.Header{"X-Case": {"a"}})).To(Equal(200))
		Expect(get(port, "/fail", http.Header{"X-Case": {"b"}})).To(Equal(503))
		Expect(get(port, "/ok", http.Header{"X-Case": {"c"}, "X-Canary": {"yes"}})).To(Equal(200))

		// The default format on stdout, for every request.
		Eventually(s.Stdout).Should(And(
			MatchRegexp(`(?m)^\[[^\]]+\] "GET /ok HTTP/1\.1" 200 - 0 2 \d+ - "-" "Go-http-client/1\.1" "[0-9a-f-]{36}" "127\.0\.0\.1:\d+" "-"$`),
			MatchRegexp(`(?m)^\[[^\]]+\] "GET /fail HTTP/1\.1" 503 - 0 4 \d+ - "-"`),
			ContainSubstring(`{"canary":"/ok","code":200}`),
		))
		// Only the failure on stderr, in its own format.
		Eventually(s.Stderr).Should(ContainSubstring("ERRLOG 503 /fail b\n"))
		Consistently(s.Stderr, 300*time.Millisecond).ShouldNot(ContainSubstring("ERRLOG 200"))
		Expect(strings.Count(s.Stdout(), `"canary"`)).To(Equal(1))

		// The filter's threshold follows its runtime key.
		Expect(s.Post("/runtime_modify?errors.min_status=200").Status).To(Equal(200))
		Expect(get(port, "/ok", http.Header{"X-Case": {"d"}})).To(Equal(200))
		Eventually(s.Stderr).Should(ContainSubstring("ERRLOG 200 /ok d\n"))
	})

	It("logs what a CEL extension filter selects, as Istio's Telemetry filters write them", func() {
		port := freePort()
		s := Start(newDir(), accessLogBootstrap(port, `
			{name: cel,
			 filter: {extension_filter: {name: envoy.access_loggers.extension_filters.cel,
			   typed_config: {"@type": type.googleapis.com/envoy.extensions.access_loggers.filters.cel.v3.ExpressionFilter,
			     expression: "response.code >= 500 || request.headers['x-log'] == 'yes'"}}},
			 typed_config: {"@type": type.googleapis.com/envoy.extensions.access_loggers.stream.v3.StdoutAccessLog,
			   log_format: {text_format_source: {inline_string: "CEL %RESPONSE_CODE% %REQ(:PATH)% %REQ(X-CASE)%\n"}}}}`, ""),
			"--file-flush-interval-msec", "50")
		Expect(get(port, "/ok", http.Header{"X-Case": {"a"}})).To(Equal(200))
		Expect(get(port, "/fail", http.Header{"X-Case": {"b"}})).To(Equal(503))
		Expect(get(port, "/ok", http.Header{"X-Case": {"c"}, "X-Log": {"yes"}})).To(Equal(200))
		Eventually(s.Stdout).Should(And(ContainSubstring("CEL 503 /fail b\n"), ContainSubstring("CEL 200 /ok c\n")))
		Consistently(s.Stdout, 300*time.Millisecond).ShouldNot(ContainSubstring("CEL 200 /ok a"))
	})

	It("leaves out the requests the health_check filter recognises with not_health_check_filter, passed through or answered", func() {
		port := freePort()
		spec := accessLogSpec(port, `
			{name: checked, filter: {not_health_check_filter: {}},
			 typed_config: {"@type": type.googleapis.com/envoy.extensions.access_loggers.stream.v3.StdoutAccessLog,
			   log_format: {text_format_source: {inline_string: "LOGGED %REQ(:PATH)% %RESPONSE_CODE%\n"}}}}`, "")
		spec.Filters = "[" + httpFilter("hc", "type.googleapis.com/envoy.extensions.filters.http.health_check.v3.HealthCheck",
			`{pass_through_mode: true, headers: [{name: ":path", string_match: {exact: /ok}}]}`) + "]"
		cfg := spec.YAML()
		s := Start(newDir(), cfg, "--file-flush-interval-msec", "50")
		Expect(get(port, "/ok", nil)).To(Equal(200))
		Expect(get(port, "/fail", nil)).To(Equal(503))
		Eventually(s.Stdout).Should(ContainSubstring("LOGGED /fail 503\n"))
		// Failing health checks are answered by the filter: still left out.
		Expect(s.Post("/healthcheck/fail").Status).To(Equal(200))
		Expect(get(port, "/ok", nil)).To(Equal(503))
		Expect(get(port, "/fail", nil)).To(Equal(503))
		Eventually(func() int { return strings.Count(s.Stdout(), "LOGGED /fail 503\n") }).Should(Equal(2))
		Consistently(s.Stdout, 300*time.Millisecond).ShouldNot(ContainSubstring("LOGGED /ok"))
	})

	It("samples with runtime_filter, its percentage set in the runtime", func() {
		port := freePort()
		s := Start(newDir(), accessLogBootstrap(port, `
			{name: sampled,
			 filter: {runtime_filter: {runtime_key: logs.sampled, percent_sampled: {numerator: 0}}},
			 typed_config: {"@type": type.googleapis.com/envoy.extensions.access_loggers.stream.v3.StdoutAccessLog,
			   log_format: {text_format_source: {inline_string: "SAMPLED %REQ(X-CASE)%\n"}}}}`, ""),
			"--file-flush-interval-msec", "50")
		for i := range 5 {
			Expect(get(port, "/ok", http.Header{"X-Case": {fmt.Sprintf("none-%d", i)}})).To(Equal(200))
		}
		Consistently(s.Stdout, 300*time.Millisecond).ShouldNot(ContainSubstring("SAMPLED"))
		Expect(s.Post("/runtime_modify?logs.sampled=100").Status).To(Equal(200))
		for i := range 5 {
			Expect(get(port, "/ok", http.Header{"X-Case": {fmt.Sprintf("all-%d", i)}})).To(Equal(200))
		}
		Eventually(func() int { return strings.Count(s.Stdout(), "SAMPLED all-") }).Should(Equal(5))
		Expect(s.Stdout()).NotTo(ContainSubstring("SAMPLED none-"))
	})

	It("logs admin requests with any logger, format and filter", func() {
		s := Start(newDir(), accessLogBootstrap(freePort(), "", `
			{name: envoy.access_loggers.stdout,
			 filter: {header_filter: {header: {name: user-agent, string_match: {prefix: "e2e-admin"}}}},
			 typed_config: {"@type": type.googleapis.com/envoy.extensions.access_loggers.stream.v3.StdoutAccessLog,
			   log_format: {text_format_source: {inline_string: "ADMIN %REQ(:METHOD)% %REQ(:PATH)% %RESPONSE_CODE% %RESP(CONTENT-TYPE)% %PROTOCOL%\n"}}}}`),
			"--file-flush-interval-msec", "50")
		Expect(s.Do(http.MethodGet, "/ready", nil, agent("e2e-admin-probe")).Status).To(Equal(200))
		Expect(s.Do(http.MethodGet, "/server_info", nil, agent("other")).Status).To(Equal(200))
		Eventually(s.Stdout).Should(ContainSubstring("ADMIN GET /ready 200 text/plain; charset=UTF-8 HTTP/1.1\n"))
		Consistently(s.Stdout, 300*time.Millisecond).ShouldNot(ContainSubstring("/server_info"))
	})

	It("refuses what it cannot build, every error with its path, in validate mode", func() {
		r, _ := validate("b.yaml", accessLogBootstrap(freePort(), `
			{name: envoy.access_loggers.fluentd},
			{name: ext, filter: {extension_filter: {name: cel, typed_config: {"@type": type.googleapis.com/envoy.extensions.access_loggers.filters.cel.v3.ExpressionFilter, expression: "nosuchfunction(1)"}}}, typed_config: {"@type": type.googleapis.com/envoy.extensions.access_loggers.stream.v3.StdoutAccessLog}},
			{name: pair, filter: {and_filter: {filters: [{not_health_check_filter: {}}]}}, typed_config: {"@type": type.googleapis.com/envoy.extensions.access_loggers.stream.v3.StdoutAccessLog}}`,
			`{name: flags, filter: {response_flag_filter: {flags: [XX]}}, typed_config: {"@type": type.googleapis.com/envoy.extensions.access_loggers.stream.v3.StderrAccessLog}}`))
		Expect(r.ExitCode).To(Equal(1))
		const hcm = "static_resources.listeners[0].filter_chains[0].filters[0].typed_config."
		Expect(r.Stderr).To(And(
			ContainSubstring(hcm+"access_log[1].filter.extension_filter.typed_config.expression: "),
			ContainSubstring("admin.access_log[0].filter.response_flag_filter.flags[0]"),
		))
	})

	It("reports the build errors of access loggers with their paths", func() {
		r, _ := validate("b.yaml", accessLogBootstrap(freePort(), `
			{name: envoy.access_loggers.fluentd},
			{name: bad-regex, filter: {header_filter: {header: {name: x, string_match: {safe_regex: {regex: "(("}}}}},
			 typed_config: {"@type": type.googleapis.com/envoy.extensions.access_loggers.stream.v3.StdoutAccessLog}}`, ""))
		Expect(r.ExitCode).To(Equal(1))
		const hcm = "static_resources.listeners[0].filter_chains[0].filters[0].typed_config."
		Expect(r.Stderr).To(And(
			ContainSubstring(hcm+`access_log[0].name: access logger "envoy.access_loggers.fluentd" without typed_config is not supported by Outrigger`),
			ContainSubstring(hcm+"access_log[1].filter.header_filter.header.string_match.safe_regex."),
		))
	})

	It("refuses loggers named without typed_config when the runtime guard forbids it, with Envoy's message", func() {
		spec := accessLogSpec(freePort(), `{name: envoy.access_loggers.stdout}`, "")
		spec.Top = "{layered_runtime: {layers: [{name: static, static_layer: {envoy.reloadable_features.no_extension_lookup_by_name: true}}, {name: admin, admin_layer: {}}]}}"
		cfg := spec.YAML()
		r, _ := validate("b.yaml", cfg)
		Expect(r.ExitCode).To(Equal(1))
		Expect(r.Stderr).To(ContainSubstring(`access_log[0].typed_config: Didn't find a registered implementation for 'envoy.access_loggers.stdout' with type URL: ''`))
	})
})

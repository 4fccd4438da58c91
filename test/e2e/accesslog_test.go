package e2e

import (
	"fmt"
	"net/http"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"syscall"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"
)

// accessLine matches one admin access log line in Envoy's default format:
// [START_TIME] "METHOD PATH PROTOCOL" CODE FLAGS RX TX DURATION UPSTREAM_TIME
// "X-FORWARDED-FOR" "USER-AGENT" "X-REQUEST-ID" "AUTHORITY" "UPSTREAM_HOST".
func accessLine(request string, code, received, sent int, xff, agent, authority string) string {
	return fmt.Sprintf(`(?m)^\[\d{4}-\d{2}-\d{2}T\d{2}:\d{2}:\d{2}\.\d{3}Z\] "%s" %d - %d %d \d+ - "%s" "%s" "-" "%s" "-"$`,
		regexp.QuoteMeta(request), code, received, sent, regexp.QuoteMeta(xff), regexp.QuoteMeta(agent), regexp.QuoteMeta(authority))
}

// agent sends a recognisable User-Agent, so a spec finds its own request.
func agent(name string) http.Header { return http.Header{"User-Agent": {name}} }

var _ = Describe("Admin access log", func() {
	var (
		s                  *Sidecar
		pathLog, loggerLog string
	)

	BeforeEach(func() {
		dir := newDir()
		pathLog = filepath.Join(dir, "admin_access_path.log")
		loggerLog = filepath.Join(dir, "admin_access_logger.log")
		cfg := Bootstrap{AccessLogPath: pathLog, AccessLogFile: loggerLog}
		s = Start(dir, cfg.YAML(), "--file-flush-interval-msec", "100")
	})

	It("logs one line per request in the default format, to access_log_path and to access_log", func() {
		r := s.Do(http.MethodGet, "/ready?probe=1", nil, http.Header{
			"User-Agent":      {"e2e-probe/1.0"},
			"X-Forwarded-For": {"10.0.0.1"},
		})
		Expect(r.Body).To(Equal("LIVE\n"))
		want := accessLine("GET /ready?probe=1 HTTP/1.1", 200, 0, len("LIVE\n"), "10.0.0.1", "e2e-probe/1.0", s.Admin)
		Eventually(func() string { return readFile(pathLog) }).Should(MatchRegexp(want))
		Eventually(func() string { return readFile(loggerLog) }).Should(MatchRegexp(want))
	})

	It("counts the bytes received and prints - for absent headers", func() {
		body := "level=info"
		r := s.Do(http.MethodPost, "/logging", strings.NewReader(body), http.Header{
			"Content-Type": {"application/x-www-form-urlencoded"},
			"User-Agent":   {""}, // Go's client then sends no User-Agent
		})
		Expect(r.Status).To(Equal(200), r.Body)
		Eventually(func() string { return readFile(pathLog) }).Should(MatchRegexp(
			accessLine("POST /logging HTTP/1.1", 200, len(body), len(r.Body), "-", "-", s.Admin)))
	})

	It("logs refused requests with their status", func() {
		Expect(s.Do(http.MethodGet, "/quitquitquit", nil, agent("e2e-refused")).Status).To(Equal(400))
		Expect(s.Do(http.MethodGet, "/no/such/page", nil, agent("e2e-missing")).Status).To(Equal(404))
		Eventually(func() string { return readFile(pathLog) }).Should(And(
			MatchRegexp(accessLine("GET /quitquitquit HTTP/1.1", 400, 0, len("Method GET not allowed, POST required."), "-", "e2e-refused", s.Admin)),
			MatchRegexp(`"GET /no/such/page HTTP/1\.1" 404 - 0 \d+ \d+ - "-" "e2e-missing"`),
		))
	})

	// reopenWith rotates both access logs, runs reopen, then checks that a
	// new request is logged into fresh files at the configured paths.
	reopenWith := func(reopen func()) {
		Expect(s.Do(http.MethodGet, "/ready", nil, agent("before-rotation")).Status).To(Equal(200))
		Eventually(func() string { return readFile(pathLog) }).Should(ContainSubstring("before-rotation"))
		Eventually(func() string { return readFile(loggerLog) }).Should(ContainSubstring("before-rotation"))
		Expect(os.Rename(pathLog, pathLog+".1")).To(Succeed())
		Expect(os.Rename(loggerLog, loggerLog+".1")).To(Succeed())

		reopen()

		Expect(s.Do(http.MethodGet, "/ready", nil, agent("after-rotation")).Status).To(Equal(200))
		for _, p := range []string{pathLog, loggerLog} {
			Eventually(func() string { return readFile(p) }).Should(
				MatchRegexp(accessLine("GET /ready HTTP/1.1", 200, 0, len("LIVE\n"), "-", "after-rotation", s.Admin)),
				"a new %s holds the requests made after the reopen", filepath.Base(p))
			Expect(readFile(p)).NotTo(ContainSubstring("before-rotation"))
			Expect(readFile(p + ".1")).To(ContainSubstring("before-rotation"))
			Expect(readFile(p + ".1")).NotTo(ContainSubstring("after-rotation"))
		}
	}

	It("is reopened by POST /reopen_logs", func() {
		reopenWith(func() {
			r := s.Post("/reopen_logs")
			Expect(r.Status).To(Equal(200))
			Expect(r.Body).To(Equal("OK\n"))
		})
	})

	It("is reopened by SIGUSR1", func() {
		reopenWith(func() {
			s.Signal(syscall.SIGUSR1)
			// The signal is handled asynchronously: wait for the new files
			// (opened on reopen) before sending the request that must land
			// in them.
			for _, p := range []string{pathLog, loggerLog} {
				Eventually(func() error { _, err := os.Stat(p); return err }).Should(Succeed())
			}
		})
	})
})

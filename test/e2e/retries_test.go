package e2e

import (
	"io"
	"net/http"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"time"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"
)

// flakyUpstream fails each path's first attempts on cue, by the path's
// first segment, then answers 200 with the request's attempt count and
// body:
//   - /503/...: 503 on the first attempt;
//   - /always/...: 503 on every attempt;
//   - /reset/...: the connection (or HTTP/2 stream) is cut on the first;
//   - /hang/...: the first waits 3 s before answering;
//   - /stuck/...: every attempt waits 3 s;
//   - /slow/...: the first sends part of its body, then waits 3 s;
//
// with an optional /idle prefix (for the route with a per-try idle timeout).
//   - /header/...: the first answers 200 with x-retry-me;
//   - /429/...: the first answers 429 with Retry-After: 1.
type flakyUpstream struct {
	mu   sync.Mutex
	seen map[string]int
}

func (f *flakyUpstream) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	f.mu.Lock()
	f.seen[r.URL.Path]++
	n := f.seen[r.URL.Path]
	f.mu.Unlock()
	body, _ := io.ReadAll(r.Body)
	kind, _, _ := strings.Cut(strings.TrimPrefix(strings.TrimPrefix(r.URL.Path, "/idle"), "/"), "/")
	first := n == 1
	switch {
	case kind == "always", kind == "503" && first:
		w.WriteHeader(http.StatusServiceUnavailable)
		_, _ = io.WriteString(w, "unavailable")
		return
	case kind == "reset" && first:
		panic(http.ErrAbortHandler)
	case kind == "hang" && first, kind == "stuck":
		select {
		case <-r.Context().Done():
		case <-time.After(3 * time.Second):
		}
		return
	case kind == "slow" && first:
		_, _ = io.WriteString(w, "partial")
		w.(http.Flusher).Flush()
		select {
		case <-r.Context().Done():
		case <-time.After(3 * time.Second):
		}
		return
	case kind == "header" && first:
		w.Header().Set("x-retry-me", "yes")
		_, _ = io.WriteString(w, "first")
		return
	case kind == "429" && first:
		w.Header().Set("Retry-After", "1")
		w.WriteHeader(http.StatusTooManyRequests)
		return
	}
	_, _ = io.WriteString(w, "attempt="+r.Header.Get("x-envoy-attempt-count")+" body="+string(body))
}

// retryRoutes is a route whose retry policy covers every cue of
// flakyUpstream.
const retryRoutes = `[{match: {prefix: /idle/}, route: {cluster: up, retry_policy: {
  retry_on: reset, per_try_idle_timeout: 0.3s, retry_back_off: {base_interval: 0.01s}}}},
 {match: {prefix: /}, route: {cluster: up, retry_policy: {
  retry_on: "5xx,retriable-headers,retriable-status-codes", num_retries: 2, per_try_timeout: 0.5s,
  retry_back_off: {base_interval: 0.01s},
  retriable_status_codes: [429], retriable_headers: [{name: x-retry-me}],
  rate_limited_retry_back_off: {reset_headers: [{name: retry-after}], max_interval: 5s}}}}]`

// internalLoopback are connection manager fields that make loopback
// clients internal, whose retry headers the router honours.
const internalLoopback = `use_remote_address: true, internal_address_config: {cidr_ranges: [{address_prefix: 127.0.0.0, prefix_len: 8}]}`

// retryGet sends method with body to the listener and returns the
// status, the response's x-envoy-attempt-count and the body.
func retryGet(c *http.Client, port int, method, path, body string) (int, string, string) {
	GinkgoHelper()
	req, err := http.NewRequest(method, listenerURL(port, path), strings.NewReader(body))
	Expect(err).NotTo(HaveOccurred())
	resp, err := c.Do(req)
	Expect(err).NotTo(HaveOccurred())
	defer resp.Body.Close()
	b, err := io.ReadAll(resp.Body)
	Expect(err).NotTo(HaveOccurred())
	return resp.StatusCode, resp.Header.Get("x-envoy-attempt-count"), string(b)
}

var _ = Describe("Retries", func() {
	for _, h2 := range []bool{false, true} {
		name := "an HTTP/1.1 upstream"
		if h2 {
			name = "an HTTP/2 upstream"
		}
		It("retries "+name+"'s failures with the route's retry_policy, counting attempts, stats and response flags", func() {
			up := &flakyUpstream{seen: map[string]int{}}
			addr := httpTestUpstream(up, h2)
			port, dir := freePort(), newDir()
			extra := http2Upstream(h2)
			logPath := filepath.Join(dir, "access.log")
			s := Start(dir, proxySpec{
				Port:        port,
				Routes:      retryRoutes,
				VirtualHost: `{include_attempt_count_in_response: true, include_request_attempt_count: true}`,
				HCM: `{access_log: [` + fileLog(logPath,
					"%REQ(:PATH)% %RESPONSE_CODE% %RESPONSE_FLAGS% %RESPONSE_CODE_DETAILS% %UPSTREAM_REQUEST_ATTEMPT_COUNT%\n") + `]}`,
				Clusters: []proxyCluster{{Name: "up", Port: portNum(addr), Extra: extra}},
			}.YAML(), "--file-flush-interval-msec", "20")
			s.WaitLive()
			c := &http.Client{Timeout: 15 * time.Second}

			status, attempts, body := retryGet(c, port, "GET", "/503/a", "")
			Expect(status).To(Equal(200))
			Expect(attempts).To(Equal("2"))
			Expect(body).To(Equal("attempt=2 body="))

			By("a request body is kept and sent again")
			status, attempts, body = retryGet(c, port, "POST", "/503/b", "payload")
			Expect(status).To(Equal(200))
			Expect(attempts).To(Equal("2"))
			Expect(body).To(Equal("attempt=2 body=payload"))

			By("a reset, a per-try timeout, a retriable header and a 429 with Retry-After")
			for _, p := range []string{"/reset/c", "/hang/d", "/header/e"} {
				status, attempts, body = retryGet(c, port, "POST", p, "x")
				Expect(status).To(Equal(200), p)
				Expect(attempts).To(Equal("2"), p)
				Expect(body).To(Equal("attempt=2 body=x"), p)
			}
			start := time.Now()
			status, attempts, _ = retryGet(c, port, "GET", "/429/f", "")
			Expect(status).To(Equal(200))
			Expect(attempts).To(Equal("2"))
			Expect(time.Since(start)).To(BeNumerically(">=", 900*time.Millisecond), "the retry waited for Retry-After")

			By("the retries run out")
			status, attempts, body = retryGet(c, port, "GET", "/always/g", "")
			Expect(status).To(Equal(503))
			Expect(attempts).To(Equal("3"))
			Expect(body).To(Equal("unavailable"))

			By("the per-try idle timeout: before the head it is retried, after it the response is cut")
			status, attempts, body = retryGet(c, port, "GET", "/idle/hang/i", "")
			Expect(status).To(Equal(200))
			Expect(attempts).To(Equal("2"))
			Expect(body).To(Equal("attempt=2 body="))
			resp, err := c.Get(listenerURL(port, "/idle/slow/j"))
			Expect(err).NotTo(HaveOccurred())
			Expect(resp.StatusCode).To(Equal(200))
			_, err = io.ReadAll(resp.Body)
			_ = resp.Body.Close()
			Expect(err).To(HaveOccurred(), "the response was cut")

			By("every attempt reaches its per-try timeout")
			status, attempts, _ = retryGet(c, port, "GET", "/stuck/h", "")
			Expect(status).To(Equal(504))
			Expect(attempts).To(Equal("3"))

			Expect(statValue(s, "cluster.up.upstream_rq_retry")).To(Equal("11"))
			Expect(statValue(s, "cluster.up.upstream_rq_retry_success")).To(Equal("7"))
			Expect(statValue(s, "cluster.up.upstream_rq_retry_limit_exceeded")).To(Equal("2"))
			Expect(statValue(s, "cluster.up.upstream_rq_per_try_timeout")).To(Equal("4"))
			Expect(statValue(s, "cluster.up.upstream_rq_timeout")).To(Equal("0"))
			Expect(statValue(s, "cluster.up.upstream_rq_retry_backoff_ratelimited")).To(Equal("1"))
			Expect(statValue(s, "cluster.up.upstream_rq_retry_backoff_exponential")).To(Equal("10"))
			Expect(statValue(s, "cluster.up.upstream_rq_per_try_idle_timeout")).To(Equal("2"))
			Expect(statValue(s, "cluster.up.upstream_rq_total")).To(Equal("21"))
			Expect(statValue(s, "cluster.up.upstream_rq_504")).To(Equal("1"))
			Eventually(func() string { return readFile(logPath) }, 10*time.Second).Should(And(
				ContainSubstring("/503/a 200 - via_upstream 2\n"),
				ContainSubstring("/hang/d 200 - via_upstream 2\n"),
				ContainSubstring("/always/g 503 URX via_upstream 3\n"),
				ContainSubstring("/stuck/h 504 UT,URX upstream_per_try_timeout 3\n"),
				ContainSubstring("/idle/hang/i 200 - via_upstream 2\n"),
				ContainSubstring("/idle/slow/j 200 UT upstream_per_try_idle_timeout 1\n"),
			))
		})
	}

	It("retries connect failures up to num_retries and answers 503 UF,URX; x-envoy-max-retries raises the limit", func() {
		port, dir := freePort(), newDir()
		logPath := filepath.Join(dir, "access.log")
		s := Start(dir, proxySpec{
			Port: port,
			Routes: `[{match: {prefix: /}, route: {cluster: down, retry_policy: {retry_on: connect-failure, num_retries: 1,
  retry_back_off: {base_interval: 0.01s}}}}]`,
			VirtualHost: `{include_attempt_count_in_response: true}`,
			HCM: `{` + internalLoopback + `, access_log: [` + fileLog(logPath,
				"%REQ(:PATH)% %RESPONSE_CODE% %RESPONSE_FLAGS%\n") + `]}`,
			Clusters: []proxyCluster{{Name: "down", Port: freePort()}},
		}.YAML(), "--file-flush-interval-msec", "20")
		s.WaitLive()
		c := &http.Client{Timeout: 15 * time.Second}
		status, attempts, _ := retryGet(c, port, "GET", "/refused", "")
		Expect(status).To(Equal(503))
		Expect(attempts).To(Equal("2"))

		// An internal (loopback) client's header sets the retries.
		req, err := http.NewRequest("GET", listenerURL(port, "/more"), nil)
		Expect(err).NotTo(HaveOccurred())
		req.Header.Set("x-envoy-max-retries", "3")
		resp, err := c.Do(req)
		Expect(err).NotTo(HaveOccurred())
		_ = resp.Body.Close()
		Expect(resp.StatusCode).To(Equal(503))
		Expect(resp.Header.Get("x-envoy-attempt-count")).To(Equal("4"))

		Expect(statValue(s, "cluster.down.upstream_rq_retry")).To(Equal("4"))
		Expect(statValue(s, "cluster.down.upstream_rq_retry_limit_exceeded")).To(Equal("2"))
		Eventually(func() string { return readFile(logPath) }, 10*time.Second).Should(And(
			ContainSubstring("/refused 503 UF,URX\n"),
			ContainSubstring("/more 503 UF,URX\n"),
		))
	})

	It("refuses retries past the cluster's max_retries with UO and upstream_rq_retry_overflow", func() {
		up := &flakyUpstream{seen: map[string]int{}}
		addr := httpTestUpstream(up, false)
		port, dir := freePort(), newDir()
		logPath := filepath.Join(dir, "access.log")
		s := Start(dir, proxySpec{
			Port:   port,
			Routes: retryRoutes,
			HCM: `{access_log: [` + fileLog(logPath,
				"%REQ(:PATH)% %RESPONSE_CODE% %RESPONSE_FLAGS%\n") + `]}`,
			Clusters: []proxyCluster{{Name: "up", Port: portNum(addr),
				Extra: "{" + breakerThresholds("max_retries: 0, track_remaining: true") + "}"}},
		}.YAML(), "--file-flush-interval-msec", "20")
		s.WaitLive()
		c := &http.Client{Timeout: 15 * time.Second}
		expectRetryOverflow(s, c, port, "/503/x", "up")
		Eventually(func() string { return readFile(logPath) }, 10*time.Second).Should(
			ContainSubstring("/503/x 503 UO\n"))
	})

	It("limits retries by the cluster's retry_budget instead of max_retries", func() {
		up := &flakyUpstream{seen: map[string]int{}}
		addr := httpTestUpstream(up, false)
		port := freePort()
		// "none": a budget of 0% and no minimum refuses every retry though
		// max_retries allows 100; "one": a minimum of 1 allows a retry
		// though max_retries is 0.
		s := Start(newDir(), proxySpec{
			Port: port,
			Routes: `[{match: {prefix: /none/}, route: {cluster: none, prefix_rewrite: /, retry_policy: {retry_on: 5xx, num_retries: 2, retry_back_off: {base_interval: 0.01s}}}},
				{match: {prefix: /}, route: {cluster: one, retry_policy: {retry_on: 5xx, num_retries: 2, retry_back_off: {base_interval: 0.01s}}}}]`,
			Clusters: []proxyCluster{
				{Name: "none", Port: portNum(addr), Extra: "{" + breakerThresholds("max_retries: 100, track_remaining: true, retry_budget: {budget_percent: {value: 0}, min_retry_concurrency: 0}") + "}"},
				{Name: "one", Port: portNum(addr), Extra: "{" + breakerThresholds("max_retries: 0, retry_budget: {budget_percent: {value: 0}, min_retry_concurrency: 1}") + "}"},
			},
		}.YAML())
		s.WaitLive()
		c := &http.Client{Timeout: 15 * time.Second}
		expectRetryOverflow(s, c, port, "/none/503/a", "none")
		status, _, body := retryGet(c, port, "GET", "/503/b", "")
		Expect(status).To(Equal(200), body)
		Expect(statValue(s, "cluster.one.upstream_rq_retry")).To(Equal("1"))
		Expect(statValue(s, "cluster.one.upstream_rq_retry_overflow")).To(Equal("0"))
	})

	It("avoids the hosts already tried with the previous_hosts predicate", func() {
		bad := httpTestUpstream(http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) {
			w.WriteHeader(http.StatusServiceUnavailable)
		}), false)
		good := httpTestUpstream(http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) {
			_, _ = io.WriteString(w, "good")
		}), false)
		port, dir := freePort(), newDir()
		endpoint := func(addr string, weight int) string {
			return `{endpoint: {address: {socket_address: {address: 127.0.0.1, port_value: ` + strconv.Itoa(portNum(addr)) +
				`}}}, load_balancing_weight: ` + strconv.Itoa(weight) + `}`
		}
		s := Start(dir, proxySpec{
			Port: port,
			Routes: `[{match: {prefix: /}, route: {cluster: two, retry_policy: {retry_on: 5xx, num_retries: 1,
  retry_back_off: {base_interval: 0.001s},
  retry_host_predicate: [{name: envoy.retry_host_predicates.previous_hosts, typed_config: {"@type": type.googleapis.com/envoy.extensions.retry.host.previous_hosts.v3.PreviousHostsPredicate}}],
  host_selection_retry_max_attempts: 5}}}]`,
			Clusters: []proxyCluster{{Name: "two", Port: portNum(bad), Extra: `{load_assignment: {cluster_name: two, endpoints: [{lb_endpoints: [` +
				endpoint(bad, 3) + `, ` + endpoint(good, 1) + `]}]}}`}},
		}.YAML())
		s.WaitLive()
		c := &http.Client{Timeout: 15 * time.Second}
		// Three in four picks are the failing host: without the
		// predicate, some retries would go to it again.
		for i := range 8 {
			status, _, body := retryGet(c, port, "GET", "/p"+strconv.Itoa(i), "")
			Expect(status).To(Equal(200), "request %d", i)
			Expect(body).To(Equal("good"))
		}
	})

	It("honours x-envoy-retry-on from an internal client and strips the retry headers", func() {
		up := &flakyUpstream{seen: map[string]int{}}
		addr := httpTestUpstream(up, false)
		port, dir := freePort(), newDir()
		s := Start(dir, proxySpec{
			Port:        port,
			VirtualHost: `{include_attempt_count_in_response: true}`,
			HCM:         `{` + internalLoopback + `}`,
			Clusters:    []proxyCluster{{Name: "up", Port: portNum(addr)}},
		}.YAML())
		s.WaitLive()
		c := &http.Client{Timeout: 15 * time.Second}
		status, attempts, _ := retryGet(c, port, "GET", "/503/plain", "")
		Expect(status).To(Equal(503), "no retry without a policy")
		Expect(attempts).To(Equal("1"))

		req, err := http.NewRequest("GET", listenerURL(port, "/503/hdr"), nil)
		Expect(err).NotTo(HaveOccurred())
		req.Header.Set("x-envoy-retry-on", "gateway-error")
		resp, err := c.Do(req)
		Expect(err).NotTo(HaveOccurred())
		b, _ := io.ReadAll(resp.Body)
		_ = resp.Body.Close()
		Expect(resp.StatusCode).To(Equal(200))
		Expect(resp.Header.Get("x-envoy-attempt-count")).To(Equal("2"))
		Expect(string(b)).To(Equal("attempt= body="), "x-envoy-attempt-count is sent upstream only with include_request_attempt_count")
		Expect(statValue(s, "cluster.up.upstream_rq_retry")).To(Equal("1"))
		Expect(strconv.Atoi(statValue(s, "cluster.up.upstream_rq_retry_success"))).To(Equal(1))
	})
})

// expectRetryOverflow GETs path, which fails once with a 503, and expects
// the 503 relayed without a retry: the cluster's retry breaker refused it
// (upstream_rq_retry_overflow, remaining_retries 0).
func expectRetryOverflow(s *Sidecar, c *http.Client, port int, path, cluster string) {
	GinkgoHelper()
	status, _, body := retryGet(c, port, "GET", path, "")
	Expect(status).To(Equal(503))
	Expect(body).To(Equal("unavailable"))
	Expect(statValue(s, "cluster."+cluster+".upstream_rq_retry_overflow")).To(Equal("1"))
	Expect(statValue(s, "cluster."+cluster+".upstream_rq_retry")).To(Equal("0"))
	Expect(statValue(s, "cluster."+cluster+".circuit_breakers.default.remaining_retries")).To(Equal("0"))
}

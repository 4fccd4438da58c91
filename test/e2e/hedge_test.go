package e2e

import (
	"fmt"
	"io"
	"net/http"
	"path/filepath"
	"strings"
	"sync"
	"time"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"
)

// hedgeEvents is what the hosts of a hedging spec saw, in order.
type hedgeEvents struct {
	mu     sync.Mutex
	events []string
}

func (e *hedgeEvents) add(ev string) {
	e.mu.Lock()
	e.events = append(e.events, ev)
	e.mu.Unlock()
}

func (e *hedgeEvents) String() string {
	e.mu.Lock()
	defer e.mu.Unlock()
	return strings.Join(e.events, ",")
}

// hedgeHost is an upstream of the hedging specs: it reads the request
// whole, notes "<name>:got", then answers status with its name after
// delay ("<name>:answered"), or, with a negative delay, holds the request
// until the proxy cancels it ("<name>:cancelled") or the spec releases it.
type hedgeHost struct {
	name    string
	status  int
	delay   time.Duration
	events  *hedgeEvents
	release chan struct{}
}

func (h *hedgeHost) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	_, _ = io.ReadAll(r.Body)
	h.events.add(h.name + ":got")
	var answer <-chan time.Time
	if h.delay >= 0 {
		answer = time.After(h.delay)
	}
	select {
	case <-r.Context().Done():
		h.events.add(h.name + ":cancelled")
		return
	case <-h.release:
		return
	case <-answer:
	}
	h.events.add(h.name + ":answered")
	w.WriteHeader(h.status)
	_, _ = io.WriteString(w, h.name)
}

// hedgeCluster is a cluster "up" with first in priority 0 and second, if
// any, in priority 1: with the retry policy's previous_priorities, the
// first attempt goes to first and the next to second.
func hedgeCluster(first, second int, h2 bool) proxyCluster {
	endpoint := func(port int) string {
		return fmt.Sprintf(`{endpoint: {address: {socket_address: {address: 127.0.0.1, port_value: %d}}}}`, port)
	}
	endpoints := `[{lb_endpoints: [` + endpoint(first) + `]}`
	if second != 0 {
		endpoints += `, {priority: 1, lb_endpoints: [` + endpoint(second) + `]}`
	}
	extra := `{load_assignment: {cluster_name: up, endpoints: ` + endpoints + `]}}`
	if h2 {
		extra = `{load_assignment: {cluster_name: up, endpoints: ` + endpoints + `]}, typed_extension_protocol_options: {envoy.extensions.upstreams.http.v3.HttpProtocolOptions: ` +
			withType("type.googleapis.com/envoy.extensions.upstreams.http.v3.HttpProtocolOptions", `{explicit_http_config: {http2_protocol_options: {}}}`) + `}}`
	}
	return proxyCluster{Name: "up", Port: first, Extra: extra}
}

// hedgeRetryPolicy retries 5xx num times with a 0.2 s per-try timeout,
// the next attempt going to the next priority.
func hedgeRetryPolicy(num int) string {
	return fmt.Sprintf(`{retry_on: 5xx, num_retries: %d, per_try_timeout: 0.2s, retry_back_off: {base_interval: 0.001s},
  retry_priority: {name: envoy.retry_priorities.previous_priorities, typed_config: {"@type": type.googleapis.com/envoy.extensions.retry.priority.previous_priorities.v3.PreviousPrioritiesConfig, update_frequency: 1}}}`, num)
}

// hedgeGet sends GET path with the headers hdr and returns the status and
// body.
func hedgeGet(port int, path string, hdr map[string]string) (int, string) {
	GinkgoHelper()
	req, err := http.NewRequest("GET", listenerURL(port, path), nil)
	Expect(err).NotTo(HaveOccurred())
	for k, v := range hdr {
		req.Header.Set(k, v)
	}
	resp, err := (&http.Client{Timeout: 15 * time.Second}).Do(req)
	Expect(err).NotTo(HaveOccurred())
	defer resp.Body.Close()
	b, err := io.ReadAll(resp.Body)
	Expect(err).NotTo(HaveOccurred())
	return resp.StatusCode, string(b)
}

var _ = Describe("Hedging", func() {
	It("refuses hedge_policy's fields Envoy does not implement, beyond their defaults, by path, saying so, and accepts hedge_on_per_try_timeout", func() {
		cfg := proxySpec{
			Port:        freePort(),
			VirtualHost: `{hedge_policy: {initial_requests: 2}}`,
			Routes: `[{match: {prefix: /a}, route: {cluster: up, hedge_policy: {hedge_on_per_try_timeout: true}}},
			 {match: {prefix: /}, route: {cluster: up, hedge_policy: {additional_request_chance: {numerator: 5}}}}]`,
			Clusters: []proxyCluster{{Name: "up", Port: 9}},
		}.YAML()
		r, _ := validate("hedge.yaml", cfg)
		Expect(r.ExitCode).NotTo(Equal(0))
		const vh = "route_config.virtual_hosts[0]"
		Expect(r.Stderr).NotTo(ContainSubstring("hedge_on_per_try_timeout"))
		Expect(r.Stderr).To(ContainSubstring(vh + ".routes[1].route.hedge_policy.additional_request_chance: 5 is not supported: Envoy does not implement additional_request_chance either"))
		Expect(r.Stderr).To(ContainSubstring(vh + ".hedge_policy.initial_requests: 2 is not supported: Envoy does not implement initial_requests either"))
	})

	It("serves an empty hedge_policy as Envoy's default: a per-try timeout resets the attempt and retries, never hedging", func() {
		up := &flakyUpstream{seen: map[string]int{}}
		addr := httpTestUpstream(up, false)
		port := freePort()
		s := Start(newDir(), proxySpec{
			Port:        port,
			Routes:      retryRoutes,
			VirtualHost: `{hedge_policy: {}, include_attempt_count_in_response: true, include_request_attempt_count: true}`,
			HCM:         `{` + internalLoopback + `}`,
			Clusters:    []proxyCluster{{Name: "up", Port: portNum(addr)}},
		}.YAML())
		s.WaitLive()
		c := &http.Client{Timeout: 15 * time.Second}
		resp, err := c.Get(listenerURL(port, "/hang/a"))
		Expect(err).NotTo(HaveOccurred())
		resp.Body.Close()
		Expect(resp.StatusCode).To(Equal(200))
		Expect(resp.Header.Get("x-envoy-attempt-count")).To(Equal("2"))
		Expect(statValue(s, "cluster.up.upstream_rq_per_try_timeout")).To(Equal("1"))
		Expect(statValue(s, "cluster.up.upstream_rq_retry")).To(Equal("1"))
	})

	const logFormat = "%REQ(:PATH)% %RESPONSE_CODE% %RESPONSE_FLAGS% %RESPONSE_CODE_DETAILS% %UPSTREAM_REQUEST_ATTEMPT_COUNT% %UPSTREAM_HOST%\n"

	// start runs a sidecar routing to hosts (the first in priority 0, the
	// second in priority 1) with the route and virtual host fields given,
	// and releases the hosts' held requests before it stops.
	start := func(hosts []*hedgeHost, h2 bool, route, vhost string) (*Sidecar, int, string, []string) {
		GinkgoHelper()
		release := make(chan struct{})
		var addrs []string
		for _, h := range hosts {
			h.release = release
			addrs = append(addrs, httpTestUpstream(h, h2))
		}
		second := 0
		if len(addrs) > 1 {
			second = portNum(addrs[1])
		}
		port, dir := freePort(), newDir()
		logPath := filepath.Join(dir, "access.log")
		s := Start(dir, proxySpec{
			Port:        port,
			Routes:      `[{match: {prefix: /}, route: {cluster: up, timeout: 3s, ` + route + `}}]`,
			VirtualHost: vhost,
			HCM:         `{` + internalLoopback + `, access_log: [` + fileLog(logPath, logFormat) + `]}`,
			Clusters:    []proxyCluster{hedgeCluster(portNum(addrs[0]), second, h2)},
		}.YAML(), "--file-flush-interval-msec", "20")
		DeferCleanup(func() { close(release) })
		s.WaitLive()
		return s, port, logPath, addrs
	}

	for _, h2 := range []bool{false, true} {
		name := "an HTTP/1.1 upstream"
		if h2 {
			name = "an HTTP/2 upstream"
		}
		It("races a second attempt at the per-try timeout over "+name+": the fast host answers, the slow one is reset after", func() {
			events := &hedgeEvents{}
			hosts := []*hedgeHost{{name: "slow", delay: -1, events: events}, {name: "fast", status: 200, events: events}}
			s, port, logPath, addrs := start(hosts, h2, `retry_policy: `+hedgeRetryPolicy(1)+`, hedge_policy: {hedge_on_per_try_timeout: true}`, "")
			status, body := hedgeGet(port, "/route", nil)
			Expect(status).To(Equal(200))
			Expect(body).To(Equal("fast"))
			Eventually(events.String, 5*time.Second).Should(Equal("slow:got,fast:got,fast:answered,slow:cancelled"))
			Expect(statValue(s, "cluster.up.upstream_rq_retry")).To(Equal("1"))
			Expect(statValue(s, "cluster.up.upstream_rq_total")).To(Equal("2"))
			// As Envoy, a per-try timeout that hedges is no failure.
			Expect(statValue(s, "cluster.up.upstream_rq_per_try_timeout")).To(Equal("0"))
			Eventually(func() string { return readFile(logPath) }, 10*time.Second).Should(
				Equal("/route 200 - via_upstream 2 " + addrs[1] + "\n"))
		})
	}

	It("hedges on x-envoy-hedge-on-per-try-timeout from an internal client, and on the virtual host's policy", func() {
		events := &hedgeEvents{}
		hosts := []*hedgeHost{{name: "slow", delay: -1, events: events}, {name: "fast", status: 200, events: events}}
		_, port, _, _ := start(hosts, false, `retry_policy: `+hedgeRetryPolicy(1), "")
		status, body := hedgeGet(port, "/header", map[string]string{"x-envoy-hedge-on-per-try-timeout": "true"})
		Expect(status).To(Equal(200))
		Expect(body).To(Equal("fast"))
		Eventually(events.String, 5*time.Second).Should(Equal("slow:got,fast:got,fast:answered,slow:cancelled"))

		events2 := &hedgeEvents{}
		hosts = []*hedgeHost{{name: "slow", delay: -1, events: events2}, {name: "fast", status: 200, events: events2}}
		_, port, _, _ = start(hosts, false, `retry_policy: `+hedgeRetryPolicy(1), `{hedge_policy: {hedge_on_per_try_timeout: true}}`)
		status, body = hedgeGet(port, "/vhost", nil)
		Expect(status).To(Equal(200))
		Expect(body).To(Equal("fast"))
		Eventually(events2.String, 5*time.Second).Should(Equal("slow:got,fast:got,fast:answered,slow:cancelled"))
	})

	It("without hedging (or with the header saying false) resets the slow attempt at its per-try timeout", func() {
		events := &hedgeEvents{}
		hosts := []*hedgeHost{{name: "slow", delay: -1, events: events}, {name: "fast", status: 200, events: events}}
		s, port, logPath, _ := start(hosts, false, `retry_policy: `+hedgeRetryPolicy(1)+`, hedge_policy: {hedge_on_per_try_timeout: true}`, "")
		status, body := hedgeGet(port, "/off", map[string]string{"x-envoy-hedge-on-per-try-timeout": "false"})
		Expect(status).To(Equal(200))
		Expect(body).To(Equal("fast"))
		// Reset at its per-try timeout, which counts (a hedge does not),
		// before the next attempt went out.
		Eventually(events.String, 5*time.Second).Should(ContainSubstring("slow:cancelled"))
		Expect(statValue(s, "cluster.up.upstream_rq_per_try_timeout")).To(Equal("1"))
		Eventually(func() string { return readFile(logPath) }, 10*time.Second).Should(ContainSubstring("/off 200 - via_upstream 2 "))
	})

	It("bounds the attempts by num_retries; the route timeout resets them all with 504 UT", func() {
		events := &hedgeEvents{}
		hosts := []*hedgeHost{{name: "stuck", delay: -1, events: events}}
		s, port, logPath, _ := start(hosts, false, `timeout: 1.2s, retry_policy: {retry_on: 5xx, num_retries: 2, per_try_timeout: 0.2s, retry_back_off: {base_interval: 0.001s}},
  hedge_policy: {hedge_on_per_try_timeout: true}`, "")
		status, _ := hedgeGet(port, "/limit", nil)
		Expect(status).To(Equal(504))
		Eventually(events.String, 5*time.Second).Should(Equal("stuck:got,stuck:got,stuck:got,stuck:cancelled,stuck:cancelled,stuck:cancelled"))
		Expect(statValue(s, "cluster.up.upstream_rq_retry")).To(Equal("2"))
		Expect(statValue(s, "cluster.up.upstream_rq_retry_limit_exceeded")).To(Equal("1"))
		Expect(statValue(s, "cluster.up.upstream_rq_timeout")).To(Equal("3"))
		Expect(statValue(s, "cluster.up.upstream_rq_504")).To(Equal("3"))
		Eventually(func() string { return readFile(logPath) }, 10*time.Second).Should(
			ContainSubstring("/limit 504 UT,URX upstream_response_timeout 3 "))
	})

	It("waits for the first attempt when the hedged one answers 5xx with no retries left", func() {
		events := &hedgeEvents{}
		hosts := []*hedgeHost{{name: "slow", status: 200, delay: 1500 * time.Millisecond, events: events}, {name: "bad", status: 503, events: events}}
		s, port, logPath, addrs := start(hosts, false, `retry_policy: `+hedgeRetryPolicy(1)+`, hedge_policy: {hedge_on_per_try_timeout: true}`, "")
		status, body := hedgeGet(port, "/bad", nil)
		Expect(status).To(Equal(200))
		Expect(body).To(Equal("slow"))
		Expect(events.String()).To(Equal("slow:got,bad:got,bad:answered,slow:answered"))
		Expect(statValue(s, "cluster.up.upstream_rq_retry_limit_exceeded")).To(Equal("1"))
		// The response's code is counted as its stream ends, which may
		// come just after the client has read the whole response.
		Eventually(func() string { return statValue(s, "cluster.up.upstream_rq_200") }, 5*time.Second).Should(Equal("1"))
		Eventually(func() string { return readFile(logPath) }, 10*time.Second).Should(
			Equal("/bad 200 URX via_upstream 2 " + addrs[0] + "\n"))
	})
})

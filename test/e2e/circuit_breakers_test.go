package e2e

import (
	"context"
	"io"
	"net/http"
	"path/filepath"
	"strconv"
	"strings"
	"time"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"
)

// gatedUpstream answers each request once its gate opens (or its client
// goes away), after announcing the request on arrived; it closes each
// connection after the answer (Connection: close), so that the proxy's
// connections end with the exchange.
type gatedUpstream struct {
	arrived chan string
	open    chan struct{}
}

func newGatedUpstream() *gatedUpstream {
	g := &gatedUpstream{arrived: make(chan string, 16), open: make(chan struct{})}
	DeferCleanup(g.release) // never leave a handler waiting past the spec
	return g
}

func (g *gatedUpstream) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	select {
	case g.arrived <- r.URL.Path:
	default:
	}
	select {
	case <-g.open:
	case <-r.Context().Done():
	case <-time.After(20 * time.Second):
	}
	w.Header().Set("Connection", "close")
	_, _ = io.WriteString(w, "done")
}

// release lets every request through, once.
func (g *gatedUpstream) release() {
	select {
	case <-g.open:
	default:
		close(g.open)
	}
}

// breakerGet sends a GET to the listener on its own connection and
// returns the status, the x-envoy-overloaded header and the body.
func breakerGet(port int, path string) (int, string, string) {
	GinkgoHelper()
	c := &http.Client{Timeout: 15 * time.Second, Transport: &http.Transport{DisableKeepAlives: true}}
	resp, err := c.Get(listenerURL(port, path))
	Expect(err).NotTo(HaveOccurred())
	defer resp.Body.Close()
	b, err := io.ReadAll(resp.Body)
	Expect(err).NotTo(HaveOccurred())
	return resp.StatusCode, resp.Header.Get("x-envoy-overloaded"), string(b)
}

// asyncGet runs breakerGet in the background; the channel gets the
// status.
func asyncGet(port int, path string) <-chan int {
	done := make(chan int, 1)
	go func() {
		defer GinkgoRecover()
		status, _, _ := breakerGet(port, path)
		done <- status
	}()
	return done
}

// breakerThresholds is a cluster's circuit_breakers (YAML flow) with one
// DEFAULT entry of the given fields.
func breakerThresholds(fields string) string {
	return "circuit_breakers: {thresholds: [{" + fields + "}]}"
}

const bodyOverflowReply = "upstream connect error or disconnect/reset before headers. reset reason: overflow"

var _ = Describe("Circuit breakers", func() {
	cb := func(s *Sidecar, cluster, name string) string {
		GinkgoHelper()
		return statValue(s, "cluster."+cluster+".circuit_breakers.default."+name)
	}

	It("holds HTTP/1.1 requests pending at max_connections and refuses those past max_pending_requests with 503 UO", func() {
		up := newGatedUpstream()
		addr := httpTestUpstream(up, false)
		port, dir := freePort(), newDir()
		s := Start(dir, proxySpec{
			Port: port,
			Top:  `{stats_flush_interval: 0.1s, stats_sinks: [` + statsdSinkYAML("HystrixSink", "num_buckets: 2") + `]}`,
			HCM: `{access_log: [` + fileLog(filepath.Join(dir, "access.log"),
				"%REQ(:PATH)% %RESPONSE_CODE% %RESPONSE_FLAGS% %RESPONSE_CODE_DETAILS% %UPSTREAM_CLUSTER%\n") + `]}`,
			Clusters: []proxyCluster{{Name: "slow", Port: portNum(addr),
				Extra: "{" + breakerThresholds("max_connections: 1, max_pending_requests: 1, track_remaining: true") + "}"}},
		}.YAML(), "--file-flush-interval-msec", "20")
		s.WaitLive()
		_, events := breakerClient(s, "/breaker_event_stream")
		Expect(cb(s, "slow", "remaining_cx")).To(Equal("1"))
		Expect(cb(s, "slow", "remaining_pending")).To(Equal("1"))
		Expect(cb(s, "slow", "remaining_rq")).To(Equal("1024"))
		Expect(cb(s, "slow", "remaining_retries")).To(Equal("3"))

		first := asyncGet(port, "/first")
		Eventually(up.arrived, 10*time.Second).Should(Receive(Equal("/first")))
		Expect(cb(s, "slow", "cx_open")).To(Equal("1"))
		Expect(cb(s, "slow", "remaining_cx")).To(Equal("0"))

		second := asyncGet(port, "/second")
		Eventually(func() string { return statValue(s, "cluster.slow.upstream_rq_pending_active") }, 10*time.Second).Should(Equal("1"))
		Expect(cb(s, "slow", "rq_pending_open")).To(Equal("1"))
		Expect(cb(s, "slow", "remaining_pending")).To(Equal("0"))
		Expect(statValue(s, "cluster.slow.upstream_cx_overflow")).To(Equal("1"))
		Consistently(up.arrived, 200*time.Millisecond).ShouldNot(Receive(), "a second connection opened past max_connections")

		status, overloaded, body := breakerGet(port, "/third")
		Expect(status).To(Equal(http.StatusServiceUnavailable))
		Expect(overloaded).To(Equal("true"))
		Expect(body).To(Equal(bodyOverflowReply))
		Expect(statValue(s, "cluster.slow.upstream_rq_pending_overflow")).To(Equal("1"))
		Expect(statValue(s, "cluster.slow.upstream_rq_503")).To(Equal("1"))
		for {
			ev := nextCommand(events, "slow")
			if strings.Contains(ev, `"rollingCountSemaphoreRejected": 1,`) {
				break
			}
		}

		up.release()
		Eventually(first, 10*time.Second).Should(Receive(Equal(http.StatusOK)))
		Eventually(second, 10*time.Second).Should(Receive(Equal(http.StatusOK)))

		// Everything is given back: the gauges read as before the load.
		Eventually(func() []string {
			return []string{cb(s, "slow", "cx_open"), cb(s, "slow", "rq_pending_open"), cb(s, "slow", "rq_open"), cb(s, "slow", "rq_retry_open"),
				cb(s, "slow", "cx_pool_open"), cb(s, "slow", "remaining_cx"), cb(s, "slow", "remaining_pending"), cb(s, "slow", "remaining_rq"),
				statValue(s, "cluster.slow.upstream_rq_pending_active"), statValue(s, "cluster.slow.upstream_cx_active")}
		}, 10*time.Second).Should(Equal([]string{"0", "0", "0", "0", "0", "1", "1", "1024", "0", "0"}))
		Expect(statValue(s, "cluster.slow.upstream_rq_pending_overflow")).To(Equal("1"))
		Expect(statValue(s, "cluster.slow.upstream_cx_overflow")).To(Equal("1"))
		Expect(statValue(s, "cluster.slow.upstream_rq_pending_total")).To(Equal("2"))
		Expect(statValue(s, "cluster.slow.upstream_rq_retry_overflow")).To(Equal("0"))
		Expect(statValue(s, "cluster.slow.upstream_cx_total")).To(Equal("2"))
		Eventually(func() string { return readFile(filepath.Join(dir, "access.log")) }).Should(And(
			ContainSubstring("/third 503 UO upstream_reset_before_response_started{overflow} slow\n"),
			ContainSubstring("/first 200 - via_upstream slow\n"),
			ContainSubstring("/second 200 - via_upstream slow\n")))
	})

	It("holds a host to per_host_thresholds' max_connections, the requests past it pending (upstream_cx_overflow)", func() {
		up := newGatedUpstream()
		addr := httpTestUpstream(up, false)
		port := freePort()
		// The cluster's own limits are far: only the host's holds.
		s := Start(newDir(), proxySpec{
			Port: port,
			Clusters: []proxyCluster{{Name: "slow", Port: portNum(addr),
				Extra: "{circuit_breakers: {thresholds: [{max_pending_requests: 1}], per_host_thresholds: [{max_connections: 1}]}}"}},
		}.YAML())
		s.WaitLive()
		first := asyncGet(port, "/first")
		Eventually(up.arrived, 10*time.Second).Should(Receive(Equal("/first")))

		second := asyncGet(port, "/second")
		Eventually(func() string { return statValue(s, "cluster.slow.upstream_rq_pending_active") }, 10*time.Second).Should(Equal("1"))
		Expect(statValue(s, "cluster.slow.upstream_cx_overflow")).To(Equal("1"))
		// The cluster's breaker is not the one that held it.
		Expect(cb(s, "slow", "cx_open")).To(Equal("0"))
		Consistently(up.arrived, 200*time.Millisecond).ShouldNot(Receive(), "a second connection opened past the host's max_connections")
		Expect(s.Get("/clusters").Body).To(ContainSubstring("slow::127.0.0.1:" + strconv.Itoa(portNum(addr)) + "::cx_active::1\n"))

		status, overloaded, _ := breakerGet(port, "/third")
		Expect(status).To(Equal(http.StatusServiceUnavailable))
		Expect(overloaded).To(Equal("true"))
		Expect(statValue(s, "cluster.slow.upstream_rq_pending_overflow")).To(Equal("1"))

		// The first answer closes its connection: the pending request
		// gets the host's next one.
		up.release()
		Eventually(first, 10*time.Second).Should(Receive(Equal(http.StatusOK)))
		Eventually(second, 10*time.Second).Should(Receive(Equal(http.StatusOK)))
		Expect(statValue(s, "cluster.slow.upstream_cx_total")).To(Equal("2"))
		Expect(statValue(s, "cluster.slow.upstream_cx_overflow")).To(Equal("1"))
	})

	It("answers a request still pending at its route timeout with 504 UT, and gives its place back", func() {
		up := newGatedUpstream()
		addr := httpTestUpstream(up, false)
		port := freePort()
		s := Start(newDir(), proxySpec{
			Port:     port,
			Routes:   `[{match: {prefix: /second}, route: {cluster: slow, timeout: 0.3s}}, {match: {prefix: /}, route: {cluster: slow}}]`,
			Clusters: []proxyCluster{{Name: "slow", Port: portNum(addr), Extra: "{" + breakerThresholds("max_connections: 1") + "}"}},
		}.YAML())
		s.WaitLive()
		first := asyncGet(port, "/first")
		Eventually(up.arrived, 10*time.Second).Should(Receive())
		// The first holds the only connection (its route timeout is the
		// default 15 s): the second waits behind it until its own 0.3 s.
		status, _, body := breakerGet(port, "/second")
		Expect(status).To(Equal(http.StatusGatewayTimeout))
		Expect(body).To(Equal("upstream request timeout"))
		Expect(statValue(s, "cluster.slow.upstream_rq_timeout")).To(Equal("1"))
		Expect(statValue(s, "cluster.slow.upstream_rq_cancelled")).To(Equal("1"))
		Expect(statValue(s, "cluster.slow.upstream_rq_pending_active")).To(Equal("0"))
		Expect(cb(s, "slow", "rq_pending_open")).To(Equal("0"))
		up.release()
		Eventually(first, 10*time.Second).Should(Receive(Equal(http.StatusOK)))
		Eventually(func() []string {
			return []string{cb(s, "slow", "rq_open"), cb(s, "slow", "cx_open"), statValue(s, "cluster.slow.upstream_cx_total")}
		}, 10*time.Second).Should(Equal([]string{"0", "0", "1"}))
		Expect(statValue(s, "cluster.slow.upstream_rq_pending_overflow")).To(Equal("0"))
	})

	It("gives the place of a pending request back when its HTTP/2 client resets it", func() {
		up := newGatedUpstream()
		addr := httpTestUpstream(up, false)
		port := freePort()
		s := Start(newDir(), proxySpec{
			Port:     port,
			Clusters: []proxyCluster{{Name: "slow", Port: portNum(addr), Extra: "{" + breakerThresholds("max_connections: 1") + "}"}},
		}.YAML())
		s.WaitLive()
		first := asyncGet(port, "/first")
		Eventually(up.arrived, 10*time.Second).Should(Receive())
		h2c := new(http.Protocols)
		h2c.SetUnencryptedHTTP2(true)
		client := &http.Client{Transport: &http.Transport{Protocols: h2c}}
		ctx, cancel := context.WithCancel(context.Background())
		done := make(chan error, 1)
		go func() {
			req, err := http.NewRequestWithContext(ctx, http.MethodGet, listenerURL(port, "/second"), nil)
			if err == nil {
				var resp *http.Response
				if resp, err = client.Do(req); err == nil {
					_ = resp.Body.Close()
				}
			}
			done <- err
		}()
		Eventually(func() string { return statValue(s, "cluster.slow.upstream_rq_pending_active") }, 10*time.Second).Should(Equal("1"))
		cancel() // RST_STREAM
		Eventually(done, 10*time.Second).Should(Receive(HaveOccurred()))
		// Well before the route's 15 s timeout.
		Eventually(func() []string {
			return []string{statValue(s, "cluster.slow.upstream_rq_pending_active"), cb(s, "slow", "rq_pending_open")}
		}, 3*time.Second).Should(Equal([]string{"0", "0"}))
		up.release()
		Eventually(first, 10*time.Second).Should(Receive(Equal(http.StatusOK)))
		Expect(statValue(s, "cluster.slow.upstream_cx_total")).To(Equal("1"), "the reset request opened no connection")
		Expect(statValue(s, "cluster.slow.upstream_rq_cancelled")).To(Equal("1"))
	})

	It("gives the place of a pending request back when its HTTP/1.1 client closes the connection", func() {
		up := newGatedUpstream()
		addr := httpTestUpstream(up, false)
		port, dir := freePort(), newDir()
		s := Start(dir, proxySpec{
			Port:     port,
			HCM:      `{access_log: [` + fileLog(filepath.Join(dir, "access.log"), "%REQ(:PATH)% %RESPONSE_CODE% %RESPONSE_FLAGS%\n") + `]}`,
			Clusters: []proxyCluster{{Name: "slow", Port: portNum(addr), Extra: "{" + breakerThresholds("max_connections: 1") + "}"}},
		}.YAML(), "--file-flush-interval-msec", "20")
		s.WaitLive()
		first := asyncGet(port, "/first")
		Eventually(up.arrived, 10*time.Second).Should(Receive())
		c := dialTCP(port)
		_, err := c.Write([]byte("GET /second HTTP/1.1\r\nHost: x\r\n\r\n"))
		Expect(err).NotTo(HaveOccurred())
		Eventually(func() string { return statValue(s, "cluster.slow.upstream_rq_pending_active") }, 10*time.Second).Should(Equal("1"))
		Expect(c.Close()).To(Succeed())
		// Seen at the next look at the socket, well before the route's
		// 15 s timeout.
		Eventually(func() string { return statValue(s, "cluster.slow.upstream_rq_pending_active") }, 3*time.Second).Should(Equal("0"))
		Expect(statValue(s, "cluster.slow.upstream_rq_cancelled")).To(Equal("1"))
		Eventually(func() string { return readFile(filepath.Join(dir, "access.log")) }).Should(ContainSubstring("/second 0 DC\n"))
		up.release()
		Eventually(first, 10*time.Second).Should(Receive(Equal(http.StatusOK)))
		Expect(statValue(s, "cluster.slow.upstream_cx_total")).To(Equal("1"), "the abandoned request opened no connection")
	})

	It("refuses HTTP/2 requests past max_requests with 503 UO", func() {
		up := newGatedUpstream()
		addr := httpTestUpstream(up, true)
		port, dir := freePort(), newDir()
		s := Start(dir, proxySpec{
			Port: port,
			HCM:  `{access_log: [` + fileLog(filepath.Join(dir, "access.log"), "%REQ(:PATH)% %RESPONSE_CODE% %RESPONSE_FLAGS%\n") + `]}`,
			Clusters: []proxyCluster{{Name: "h2", Port: portNum(addr),
				Extra: strings.TrimSuffix(h2cOptions(), "}") + ", " + breakerThresholds("max_requests: 1, track_remaining: true") + "}"}},
		}.YAML(), "--file-flush-interval-msec", "20")
		s.WaitLive()
		first := asyncGet(port, "/first")
		Eventually(up.arrived, 10*time.Second).Should(Receive(Equal("/first")))
		Expect(cb(s, "h2", "rq_open")).To(Equal("1"))
		Expect(cb(s, "h2", "remaining_rq")).To(Equal("0"))

		status, overloaded, body := breakerGet(port, "/second")
		Expect(status).To(Equal(http.StatusServiceUnavailable))
		Expect(overloaded).To(Equal("true"))
		Expect(body).To(Equal(bodyOverflowReply))
		Expect(statValue(s, "cluster.h2.upstream_rq_pending_overflow")).To(Equal("1"))

		up.release()
		Eventually(first, 10*time.Second).Should(Receive(Equal(http.StatusOK)))
		Eventually(func() []string { return []string{cb(s, "h2", "rq_open"), cb(s, "h2", "remaining_rq")} }, 10*time.Second).
			Should(Equal([]string{"0", "1"}))
		status, _, _ = breakerGet(port, "/third")
		Expect(status).To(Equal(http.StatusOK))
		Eventually(func() string { return readFile(filepath.Join(dir, "access.log")) }).Should(ContainSubstring("/second 503 UO\n"))
	})

	It("closes TCP proxy connections past max_connections with the UO flag", func() {
		up := startTCPServer(echo)
		port := freePort()
		cluster := strings.TrimSuffix(tcpCluster("echo", up), "}") + ", " + breakerThresholds("max_connections: 1, track_remaining: true") + "}"
		s := Start(newDir(), tcpBootstrap(port, "cluster: echo", cluster), "--file-flush-interval-msec", "20")

		first := dialTCP(port)
		_, err := first.Write([]byte("ping"))
		Expect(err).NotTo(HaveOccurred())
		b := make([]byte, 4)
		_, err = io.ReadFull(first, b)
		Expect(err).NotTo(HaveOccurred())
		Expect(cb(s, "echo", "cx_open")).To(Equal("1"))
		Expect(cb(s, "echo", "remaining_cx")).To(Equal("0"))

		second := dialTCP(port)
		got, err := io.ReadAll(second)
		Expect(err).NotTo(HaveOccurred())
		Expect(got).To(BeEmpty())
		Expect(statValue(s, "cluster.echo.upstream_cx_overflow")).To(Equal("1"))
		Expect(statValue(s, "cluster.echo.upstream_cx_total")).To(Equal("1"))
		Eventually(s.Stdout).Should(MatchRegexp(`TCPLOG echo - 0 0 UO 127\.0\.0\.1:\d+ 0\n`))

		Expect(first.Close()).To(Succeed())
		Eventually(func() []string { return []string{cb(s, "echo", "cx_open"), cb(s, "echo", "remaining_cx")} }, 10*time.Second).
			Should(Equal([]string{"0", "1"}))
		third := dialTCP(port)
		_, err = third.Write([]byte("pong"))
		Expect(err).NotTo(HaveOccurred())
		_, err = io.ReadFull(third, b)
		Expect(err).NotTo(HaveOccurred())
		Expect(string(b)).To(Equal("pong"))
		Expect(statValue(s, "cluster.echo.upstream_cx_total")).To(Equal("2"))
	})

	It("gives every breaker back after a load whose requests fail every way", func() {
		// The upstream answers by path: at once, slowly, with a 500, or by
		// closing the connection without an answer.
		flaky := http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			switch r.URL.Path {
			case "/slow":
				select {
				case <-time.After(150 * time.Millisecond):
				case <-r.Context().Done():
				}
			case "/fail":
				w.WriteHeader(http.StatusInternalServerError)
			case "/reset":
				if hj, ok := w.(http.Hijacker); ok {
					if c, _, err := hj.Hijack(); err == nil {
						_ = c.Close()
						return
					}
				}
				panic(http.ErrAbortHandler) // HTTP/2: reset the stream
			}
			_, _ = io.WriteString(w, "ok")
		})
		h1, h2 := httpTestUpstream(flaky, false), httpTestUpstream(flaky, true)
		port := freePort()
		limits := breakerThresholds("max_connections: 2, max_pending_requests: 2, max_requests: 3, track_remaining: true")
		s := Start(newDir(), proxySpec{
			Port: port,
			Routes: `[{match: {prefix: /h2/}, route: {cluster: h2, prefix_rewrite: /, timeout: 1s}},
				{match: {prefix: /}, route: {cluster: h1, timeout: 1s}}]`,
			Clusters: []proxyCluster{
				{Name: "h1", Port: portNum(h1), Extra: "{" + limits + "}"},
				{Name: "h2", Port: portNum(h2), Extra: strings.TrimSuffix(h2cOptions(), "}") + ", " + limits + "}"},
			},
		}.YAML())
		s.WaitLive()

		paths := []string{"/ok", "/slow", "/fail", "/reset", "/h2/ok", "/h2/slow", "/h2/fail", "/h2/reset"}
		statuses := map[int]int{}
		results := make(chan int, 256)
		sem := make(chan struct{}, 6)
		for i := range 160 {
			sem <- struct{}{}
			go func() {
				defer func() { <-sem }()
				// Every fifth client gives up early: it goes away while its
				// request is in flight or pending.
				timeout := 5 * time.Second
				if i%5 == 0 {
					timeout = 40 * time.Millisecond
				}
				c := &http.Client{Timeout: timeout, Transport: &http.Transport{DisableKeepAlives: true}}
				resp, err := c.Get(listenerURL(port, paths[i%len(paths)]))
				if err != nil {
					results <- 0
					return
				}
				_, _ = io.Copy(io.Discard, resp.Body)
				_ = resp.Body.Close()
				results <- resp.StatusCode
			}()
		}
		for range 160 {
			Eventually(results, 20*time.Second).Should(Receive(WithTransform(func(code int) int { statuses[code]++; return code }, BeNumerically(">=", 0))))
		}
		Expect(statuses[http.StatusOK]).To(BeNumerically(">", 0), "%v", statuses)
		Expect(statuses[http.StatusServiceUnavailable]).To(BeNumerically(">", 0), "%v", statuses)

		for _, cluster := range []string{"h1", "h2"} {
			Eventually(func() []string {
				return []string{cb(s, cluster, "rq_pending_open"), cb(s, cluster, "rq_open"),
					cb(s, cluster, "remaining_pending"), cb(s, cluster, "remaining_rq"),
					statValue(s, "cluster."+cluster+".upstream_rq_pending_active"), statValue(s, "cluster."+cluster+".upstream_rq_active")}
			}, 10*time.Second).Should(Equal([]string{"0", "0", "2", "3", "0", "0"}), cluster)
			// Idle connections stay open and count: the breaker counts
			// exactly the connections that are open.
			Eventually(func() bool {
				active, err := strconv.Atoi(statValue(s, "cluster."+cluster+".upstream_cx_active"))
				Expect(err).NotTo(HaveOccurred())
				open := "0"
				if active >= 2 {
					open = "1"
				}
				return cb(s, cluster, "remaining_cx") == strconv.Itoa(max(2-active, 0)) && cb(s, cluster, "cx_open") == open
			}, 10*time.Second).Should(BeTrue(), cluster)
		}
		Expect(statValue(s, "cluster.h1.upstream_rq_pending_overflow")).NotTo(Equal("0"))
		status, _, _ := breakerGet(port, "/ok")
		Expect(status).To(Equal(http.StatusOK))
		status, _, _ = breakerGet(port, "/h2/ok")
		Expect(status).To(Equal(http.StatusOK))
	})

	It("takes its limits from the runtime keys circuit_breakers.<cluster>.<priority>.max_*, shown by /clusters", func() {
		addr := httpTestUpstream(http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) { _, _ = io.WriteString(w, "ok") }), false)
		port := freePort()
		s := Start(newDir(), proxySpec{
			Port:     port,
			Top:      `{layered_runtime: {layers: [{name: admin, admin_layer: {}}]}}`,
			Clusters: []proxyCluster{{Name: "app", Port: portNum(addr)}},
		}.YAML())
		s.WaitLive()
		status, _, _ := breakerGet(port, "/")
		Expect(status).To(Equal(http.StatusOK))
		Expect(s.Get("/clusters").Body).To(ContainSubstring("app::default_priority::max_requests::1024\n"))

		Expect(s.Post("/runtime_modify?circuit_breakers.app.default.max_requests=0").Status).To(Equal(http.StatusOK))
		Expect(s.Get("/clusters").Body).To(ContainSubstring("app::default_priority::max_requests::0\n"))
		status, overloaded, _ := breakerGet(port, "/")
		Expect(status).To(Equal(http.StatusServiceUnavailable))
		Expect(overloaded).To(Equal("true"))
		Expect(statValue(s, "cluster.app.upstream_rq_pending_overflow")).To(Equal("1"))

		Expect(s.Post("/runtime_modify?circuit_breakers.app.default.max_requests=").Status).To(Equal(http.StatusOK))
		status, _, _ = breakerGet(port, "/")
		Expect(status).To(Equal(http.StatusOK))
	})

	It("publishes remaining_* only with track_remaining, and refuses what it does not enforce by path", func() {
		port := freePort()
		s := Start(newDir(), proxySpec{Port: port, Clusters: []proxyCluster{{Name: "plain", Port: 9, Extra: "{" + breakerThresholds("max_connections: 5") + "}"}}}.YAML())
		s.WaitLive()
		Expect(cb(s, "plain", "cx_open")).To(Equal("0"))
		Expect(cb(s, "plain", "remaining_cx")).To(BeEmpty())
		Expect(statValue(s, "cluster.plain.circuit_breakers.high.rq_open")).To(Equal("0"))

		cfg := proxySpec{Port: freePort(), Clusters: []proxyCluster{
			{Name: "pools", Port: 9, Extra: "{" + breakerThresholds("max_connection_pools: 2") + "}"},
			{Name: "budget", Port: 9, Extra: "{" + breakerThresholds("retry_budget: {budget_interval: 1s}") + "}"},
		}}.YAML()
		r, _ := validate("cb.yaml", cfg)
		Expect(r.ExitCode).NotTo(Equal(0))
		Expect(r.Stderr).To(ContainSubstring("static_resources.clusters[0].circuit_breakers.thresholds[0].max_connection_pools: not supported by Outrigger"))
		// budget_interval is implemented: only the pools limit is refused.
		Expect(r.Stderr).NotTo(ContainSubstring("budget_interval"))
	})
})

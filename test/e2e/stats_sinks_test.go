package e2e

import (
	"bufio"
	"context"
	"fmt"
	"io"
	"net"
	"net/http"
	"strings"
	"sync"
	"time"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"
)

// statsdServer collects the lines a sidecar's statsd sink sends, over UDP
// or TCP on loopback, until the spec ends.
type statsdServer struct {
	Port int

	mu    sync.Mutex
	lines []string
	// flushes counts datagrams (UDP) or reads (TCP): at least one per
	// flush that sent anything.
	flushes     int
	maxDatagram int
	maxLines    int
}

// newUDPStatsd listens for datagrams on a loopback port.
func newUDPStatsd() *statsdServer {
	GinkgoHelper()
	pc, err := net.ListenPacket("udp", "127.0.0.1:0")
	Expect(err).NotTo(HaveOccurred())
	DeferCleanup(pc.Close)
	srv := &statsdServer{Port: pc.LocalAddr().(*net.UDPAddr).Port}
	go func() {
		buf := make([]byte, 65536)
		for {
			n, _, err := pc.ReadFrom(buf)
			if err != nil {
				return // closed by the cleanup
			}
			srv.add(strings.Split(string(buf[:n]), "\n"))
		}
	}()
	return srv
}

// newTCPStatsd accepts connections on a loopback port and reads lines.
func newTCPStatsd() *statsdServer {
	GinkgoHelper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	Expect(err).NotTo(HaveOccurred())
	srv := &statsdServer{Port: ln.Addr().(*net.TCPAddr).Port}
	var conns sync.WaitGroup
	DeferCleanup(func() {
		_ = ln.Close()
		conns.Wait()
	})
	go func() {
		for {
			c, err := ln.Accept()
			if err != nil {
				return
			}
			conns.Go(func() {
				defer c.Close()
				r := bufio.NewReader(c)
				for {
					line, err := r.ReadString('\n')
					if err != nil {
						return // the sidecar closed it
					}
					srv.add([]string{strings.TrimSuffix(line, "\n")})
				}
			})
		}
	}()
	return srv
}

func (s *statsdServer) add(lines []string) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.lines = append(s.lines, lines...)
	s.flushes++
	size := len(lines) - 1 // the newlines between them
	for _, l := range lines {
		size += len(l)
	}
	s.maxDatagram = max(s.maxDatagram, size)
	s.maxLines = max(s.maxLines, len(lines))
}

// MaxDatagramLines returns the most lines one datagram (UDP) or read (TCP)
// held so far.
func (s *statsdServer) MaxDatagramLines() int {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.maxLines
}

// MaxDatagram returns the size of the longest datagram (UDP) or read
// (TCP) received so far.
func (s *statsdServer) MaxDatagram() int {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.maxDatagram
}

// Lines returns every line received so far.
func (s *statsdServer) Lines() []string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return append([]string(nil), s.lines...)
}

// Flushes returns the number of datagrams or lines received so far.
func (s *statsdServer) Flushes() int {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.flushes
}

// statsdSinkYAML is a stats_sinks entry of the given type and fields.
func statsdSinkYAML(kind, fields string) string {
	return fmt.Sprintf(`{name: envoy.stat_sinks.%s, typed_config: {"@type": type.googleapis.com/envoy.config.metrics.v3.%s, %s}}`,
		map[string]string{"StatsdSink": "statsd", "DogStatsdSink": "dog_statsd", "HystrixSink": "hystrix"}[kind], kind, fields)
}

// udpAddressYAML is a sink address on loopback.
func udpAddressYAML(port int) string {
	return fmt.Sprintf("address: {socket_address: {address: 127.0.0.1, port_value: %d}}", port)
}

var _ = Describe("Stats sinks", func() {
	It("sends counters, gauges and timers to statsd over UDP with a prefix", func() {
		udp := newUDPStatsd()
		s := Start(newDir(), withStats("stats_flush_interval: 0.1s\nstats_sinks: ["+
			statsdSinkYAML("StatsdSink", "prefix: edge, "+udpAddressYAML(udp.Port))+"]"))
		s.WaitLive()
		Expect(s.Get("/ready").Status).To(Equal(200))
		Eventually(udp.Lines).Should(ContainElements(
			"edge.server.live:1|g",
			"edge.server.concurrency:2|g",
			MatchRegexp(`^edge\.server\.initialization_time_ms:\d+\|ms$`),
			MatchRegexp(`^edge\.http\.admin\.downstream_rq_2xx:[01]\|c$`),
		))
		// Counters go as deltas: the one request shows once, then zeros.
		Eventually(func() int {
			n := 0
			for _, l := range udp.Lines() {
				if l == "edge.http.admin.downstream_rq_2xx:1|c" {
					n++
				}
			}
			return n
		}).Should(Equal(1))
		Consistently(udp.Lines).ShouldNot(ContainElement("edge.http.admin.downstream_rq_2xx:2|c"))
	})

	It("sends tag-extracted names with DogStatsD tags", func() {
		udp := newUDPStatsd()
		s := Start(newDir(), withStats("stats_flush_interval: 0.1s\nstats_sinks: ["+
			statsdSinkYAML("DogStatsdSink", udpAddressYAML(udp.Port))+"]"), "--stats-tag", "team:edge")
		s.WaitLive()
		Expect(s.Get("/ready").Status).To(Equal(200))
		Eventually(udp.Lines).Should(ContainElements(
			"proxy.server.live:1|g|#team:edge",
			"proxy.http.downstream_rq_xx:1|c|#team:edge,proxy.response_code_class:2,proxy.http_conn_manager_prefix:admin",
		))
	})

	It("sends tag-extracted names with Graphite tags in datagrams bounded by max_bytes_per_datagram", func() {
		udp := newUDPStatsd()
		sink := `{name: envoy.stat_sinks.graphite_statsd, typed_config: {"@type": type.googleapis.com/envoy.extensions.stat_sinks.graphite_statsd.v3.GraphiteStatsdSink, ` +
			`prefix: gr, max_bytes_per_datagram: 256, ` + udpAddressYAML(udp.Port) + `}}`
		s := Start(newDir(), withStats("stats_flush_interval: 0.1s\nstats_sinks: ["+sink+"]"), "--stats-tag", "team:edge")
		s.WaitLive()
		Expect(s.Get("/ready").Status).To(Equal(200))
		Eventually(udp.Lines).Should(ContainElements(
			"gr.server.live;team=edge:1|g",
			"gr.http.downstream_rq_xx;team=edge;proxy.response_code_class=2;proxy.http_conn_manager_prefix=admin:1|c",
		))
		Expect(udp.MaxDatagram()).To(BeNumerically("<=", 256))
		Expect(udp.MaxDatagramLines()).To(BeNumerically(">", 1), "lines are batched into datagrams")
	})

	It("sends to statsd over TCP through a cluster", func() {
		tcp := newTCPStatsd()
		Start(newDir(), withStats(fmt.Sprintf(`stats_flush_interval: 0.1s
stats_sinks: [%s]
static_resources:
  clusters:
  - name: statsd
    connect_timeout: 1s
    load_assignment:
      cluster_name: statsd
      endpoints: [{lb_endpoints: [{endpoint: {%s}}]}]`, statsdSinkYAML("StatsdSink", "tcp_cluster_name: statsd, prefix: tcp"), udpAddressYAML(tcp.Port))))
		Eventually(tcp.Lines).Should(ContainElements("tcp.server.live:1|g", MatchRegexp(`^tcp\.server\.uptime:\d+\|g$`)))
	})

	It("dials the next endpoint of the cluster when one is down", func() {
		tcp := newTCPStatsd()
		port := tcp.Port
		dead := freePort()
		s := Start(newDir(), withStats(fmt.Sprintf(`stats_flush_interval: 0.1s
stats_sinks: [%s]
static_resources:
  clusters:
  - name: statsd
    load_assignment:
      cluster_name: statsd
      endpoints: [{lb_endpoints: [{endpoint: {address: {socket_address: {address: 127.0.0.1, port_value: %d}}}}, {endpoint: {%s}}]}]`,
			statsdSinkYAML("StatsdSink", "tcp_cluster_name: statsd"), dead, udpAddressYAML(port))))
		Eventually(tcp.Lines).Should(ContainElement("proxy.server.live:1|g"))
		Expect(s.Running()).To(BeTrue())
	})

	It("flushes at the configured interval", func() {
		udp := newUDPStatsd()
		Start(newDir(), withStats("stats_flush_interval: 0.05s\nstats_sinks: ["+
			statsdSinkYAML("StatsdSink", udpAddressYAML(udp.Port))+"]"))
		// Bounded in time, not timed: several flushes arrive well within it.
		Eventually(func() int {
			n := 0
			for _, l := range udp.Lines() {
				if l == "proxy.server.live:1|g" {
					n++
				}
			}
			return n
		}, 10*time.Second).Should(BeNumerically(">=", 5))
	})

	It("flushes only when the stats are read with stats_flush_on_admin", func() {
		udp := newUDPStatsd()
		s := Start(newDir(), withStats("stats_flush_on_admin: true\nstats_sinks: ["+
			statsdSinkYAML("StatsdSink", udpAddressYAML(udp.Port))+"]"))
		Consistently(udp.Flushes).Should(BeZero(), "no timer")
		Expect(s.Get("/stats").Status).To(Equal(200))
		Eventually(udp.Lines).Should(ContainElement("proxy.server.live:1|g"))
		before := udp.Flushes()
		Expect(s.Get("/stats/prometheus").Status).To(Equal(200))
		Eventually(udp.Flushes).Should(BeNumerically(">", before))
	})

	It("sends a last flush when the server stops", func() {
		udp := newUDPStatsd()
		s := Start(newDir(), withStats("stats_flush_interval: 60s\nstats_sinks: ["+
			statsdSinkYAML("StatsdSink", udpAddressYAML(udp.Port))+"]"))
		s.WaitLive()
		Expect(s.Get("/ready").Status).To(Equal(200))
		Expect(s.Post("/quitquitquit").Status).To(Equal(200))
		Expect(s.Wait(stopTimeout)).To(Equal(0))
		// The only flush of a 60 s interval: the last one. The answer to
		// /quitquitquit may be counted in it too.
		Eventually(udp.Lines).Should(ContainElement(MatchRegexp(`^proxy\.http\.admin\.downstream_rq_2xx:[12]\|c$`)))
	})
})

// breakerClient opens the circuit-breaker stream and hands back its lines.
func breakerClient(s *Sidecar, path string) (*http.Response, <-chan string) {
	GinkgoHelper()
	ctx, cancel := context.WithCancel(context.Background())
	DeferCleanup(cancel)
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, "http://"+s.Admin+path, nil)
	Expect(err).NotTo(HaveOccurred())
	resp, err := (&http.Client{Transport: &http.Transport{DisableKeepAlives: true}}).Do(req)
	Expect(err).NotTo(HaveOccurred())
	DeferCleanup(resp.Body.Close)
	lines := make(chan string, 1024)
	go func() {
		defer close(lines)
		r := bufio.NewReader(resp.Body)
		for {
			line, err := r.ReadString('\n')
			if err != nil {
				return
			}
			select {
			case lines <- strings.TrimSuffix(line, "\n"):
			default: // the spec stopped reading
			}
		}
	}()
	return resp, lines
}

// nextCommand waits (bounded) for the next HystrixCommand event of the
// named cluster.
func nextCommand(lines <-chan string, cluster string) string {
	GinkgoHelper()
	timeout := time.After(10 * time.Second)
	for {
		select {
		case l, ok := <-lines:
			Expect(ok).To(BeTrue(), "the stream ended")
			if strings.HasPrefix(l, `data: {"type": "HystrixCommand", "name": "`+cluster+`"`) {
				return l
			}
		case <-timeout:
			Fail("no HystrixCommand event for " + cluster)
		}
	}
}

// drained reads what is buffered in lines and reports whether it is
// closed.
func drained(lines <-chan string) bool {
	for {
		select {
		case _, ok := <-lines:
			if !ok {
				return true
			}
		default:
			return false
		}
	}
}

const breakerClusters = `
static_resources:
  clusters:
  - name: backend
    circuit_breakers: {thresholds: [{max_pending_requests: 42}]}
    load_assignment:
      cluster_name: backend
      endpoints: [{lb_endpoints: [{endpoint: {address: {socket_address: {address: 127.0.0.1, port_value: 9}}}}]}]`

var _ = Describe("Circuit-breaker event stream", func() {
	hystrix := "stats_flush_interval: 0.1s\nstats_sinks: [" + statsdSinkYAML("HystrixSink", "num_buckets: 2") + "]" + breakerClusters

	DescribeTable("streams one event set per flush for every cluster",
		func(path string) {
			s := Start(newDir(), withStats(hystrix))
			resp, lines := breakerClient(s, path)
			Expect(resp.StatusCode).To(Equal(200))
			Expect(resp.Header.Get("Content-Type")).To(Equal("text/event-stream"))
			Expect(resp.Header.Get("Access-Control-Allow-Origin")).To(Equal("*"))
			Expect(resp.Header.Get("Cache-Control")).To(Equal("no-cache"))
			ev := nextCommand(lines, "backend")
			for _, want := range []string{`"group": "NA"`, `"isCircuitBreakerOpen": false`, `"rollingCountShortCircuited": 0`,
				`"propertyValue_executionIsolationSemaphoreMaxConcurrentRequests": 42`,
				`"propertyValue_metricsRollingStatisticalWindowInMilliseconds": 100`} {
				Expect(ev).To(ContainSubstring(want))
			}
			Eventually(lines).Should(Receive(HavePrefix(`data: {"currentPoolSize": 0`)))
			Eventually(lines).Should(Receive(Equal(":")), "the keep-alive after each set")
			nextCommand(lines, "backend") // and again at the next flush
		},
		Entry("at /breaker_event_stream", "/breaker_event_stream"),
		Entry("at Envoy's /hystrix_event_stream", "/hystrix_event_stream"),
	)

	It("is not served without a dashboard sink", func() {
		s := Start(newDir(), withStats(""))
		Expect(s.Get("/breaker_event_stream").Status).To(Equal(404))
		Expect(s.Get("/help").Body).NotTo(ContainSubstring("breaker_event_stream"))
	})

	It("ends open streams when the server stops", func() {
		s := Start(newDir(), withStats(hystrix))
		_, lines := breakerClient(s, "/breaker_event_stream")
		nextCommand(lines, "backend")
		Expect(s.Post("/quitquitquit").Status).To(Equal(200))
		Expect(s.Wait(stopTimeout)).To(Equal(0))
		Eventually(func() bool { return drained(lines) }).Should(BeTrue(), "the stream did not end")
	})

	It("keeps streaming to others when clients stop reading", func() {
		s := Start(newDir(), withStats(hystrix))
		for range 3 {
			// Subscribed and never read: the flushes must not wait for them.
			c, err := net.Dial("tcp", s.Admin)
			Expect(err).NotTo(HaveOccurred())
			DeferCleanup(c.Close)
			_, err = io.WriteString(c, "GET /breaker_event_stream HTTP/1.1\r\nHost: x\r\n\r\n")
			Expect(err).NotTo(HaveOccurred())
		}
		_, lines := breakerClient(s, "/breaker_event_stream")
		for range 5 {
			nextCommand(lines, "backend")
		}
		Expect(s.Get("/ready").Status).To(Equal(200))
	})
})

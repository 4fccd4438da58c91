package e2e

import (
	"bytes"
	"fmt"
	"io"
	"net"
	"net/http"
	"sync"
	"time"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"
)

// Bounds of the drain load loop: enough requests to see a gradual drain
// take hold, few enough for a shared two-core machine. The pause between
// a client's requests spreads them over a good part of the drain time: a
// gradual drain closes a share of responses that grows from zero, so a
// burst sent in its first milliseconds may see no close at all.
const (
	loadClients     = 4
	loadMaxRequests = 150 // per client
	loadPause       = 5 * time.Millisecond
	loadDuration    = 1500 * time.Millisecond
)

// loadResult is what a load loop saw.
type loadResult struct {
	ok, failed, closes int
	errors             []string
}

// runLoad sends GET / to addr from loadClients keep-alive clients until
// each has sent loadMaxRequests (pausing loadPause after each) or
// loadDuration has passed, and counts the answers: complete 200s,
// failures, and answers carrying Connection: close.
func runLoad(addr, body string) loadResult {
	var (
		mu  sync.Mutex
		res loadResult
		wg  sync.WaitGroup
	)
	deadline := time.Now().Add(loadDuration)
	for range loadClients {
		wg.Go(func() {
			defer GinkgoRecover()
			client := &http.Client{Timeout: 5 * time.Second, Transport: &http.Transport{MaxIdleConnsPerHost: 1}}
			defer client.CloseIdleConnections()
			for i := 0; i < loadMaxRequests && time.Now().Before(deadline); i++ {
				resp, err := client.Get("http://" + addr + "/")
				var got []byte
				if err == nil {
					got, err = io.ReadAll(resp.Body)
					resp.Body.Close()
				}
				mu.Lock()
				switch {
				case err != nil:
					res.failed++
					res.errors = append(res.errors, err.Error())
				case resp.StatusCode != http.StatusOK || string(got) != body:
					res.failed++
					res.errors = append(res.errors, fmt.Sprintf("%d %q", resp.StatusCode, got))
				default:
					res.ok++
					if resp.Close {
						res.closes++
					}
				}
				mu.Unlock()
				time.Sleep(loadPause)
			}
		})
	}
	wg.Wait()
	return res
}

// getClose sends GET / to addr and returns the body and whether the answer
// closes the connection ("Connection: close", which Go's client moves from
// the headers to Response.Close).
func getClose(client *http.Client, addr string) (string, bool) {
	GinkgoHelper()
	resp, err := client.Get("http://" + addr + "/")
	Expect(err).NotTo(HaveOccurred())
	defer resp.Body.Close()
	b, err := io.ReadAll(resp.Body)
	Expect(err).NotTo(HaveOccurred())
	return string(b), resp.Close
}

var _ = Describe("Draining listeners", func() {
	client := &http.Client{Timeout: 5 * time.Second, Transport: &http.Transport{DisableKeepAlives: true}}
	// keepAlive asks for persistent connections, so that an answer closing
	// its connection is the server's decision, not an echo of the request.
	var keepAlive *http.Client
	BeforeEach(func() {
		keepAlive = &http.Client{Timeout: 5 * time.Second, Transport: &http.Transport{}}
		DeferCleanup(keepAlive.CloseIdleConnections)
	})
	twoListeners := func() string {
		return listenersBootstrap(plainListener("ingress", "INBOUND", "in"), plainListener("egress", "OUTBOUND", "out"))
	}

	It("stops only the inbound listeners with inboundonly, at once, and stays LIVE", func() {
		s := Start(newDir(), twoListeners())
		in, out := listenerAddr(s, "ingress"), listenerAddr(s, "egress")

		r := s.Post("/drain_listeners?inboundonly")
		Expect(r.Status).To(Equal(200))
		Expect(r.Body).To(Equal("OK\n"))
		Expect(accepts(in)).To(BeFalse(), "the inbound listener refuses new connections")
		Expect(httpDo(client, http.MethodGet, "http://"+out+"/", nil, nil).Body).To(Equal("out"))
		Expect(statValue(s, "listener_manager.listener_stopped")).To(Equal("1"))

		ready := s.Get("/ready")
		Expect(ready.Status).To(Equal(200))
		Expect(ready.Body).To(Equal("LIVE\n"))
		Expect(listenerStatuses(s)).To(HaveLen(2), "stopped listeners are still listed")

		Expect(s.Post("/drain_listeners").Status).To(Equal(200))
		Expect(accepts(out)).To(BeFalse(), "a drain without inboundonly stops every listener")
		Expect(statValue(s, "listener_manager.listener_stopped")).To(Equal("2"))
		Expect(s.Running()).To(BeTrue(), "draining listeners does not end the process")
	})

	It("refuses GET and skip_exit without graceful, changing nothing", func() {
		s := Start(newDir(), twoListeners())
		get := s.Get("/drain_listeners")
		Expect(get.Status).To(Equal(400))
		Expect(get.Body).To(Equal("Method GET not allowed, POST required."))

		skip := s.Post("/drain_listeners?skip_exit")
		Expect(skip.Status).To(Equal(400))
		Expect(skip.Body).To(Equal("skip_exit requires graceful\n"))

		for _, name := range []string{"ingress", "egress"} {
			Expect(accepts(listenerAddr(s, name))).To(BeTrue(), "%s still accepts", name)
		}
		Expect(statValue(s, "listener_manager.listener_stopped")).To(Equal("0"))
	})

	It("drains gracefully: closes connections and keeps accepting for the drain time, then stops", func() {
		s := Start(newDir(), twoListeners(), "--drain-time-s", "3", "--drain-strategy", "immediate")
		in, out := listenerAddr(s, "ingress"), listenerAddr(s, "egress")

		Expect(s.Post("/drain_listeners?graceful&inboundonly").Body).To(Equal("OK\n"))
		body, closed := getClose(keepAlive, in)
		Expect(body).To(Equal("in"), "new connections are served during the drain time")
		Expect(closed).To(BeTrue(), "the immediate strategy closes every connection")
		_, closed = getClose(keepAlive, out)
		Expect(closed).To(BeFalse(), "the outbound listener is not draining")
		Expect(s.Post("/drain_listeners?graceful&inboundonly").Body).To(Equal("OK\n"), "a repeat is accepted")

		Eventually(func() bool { return accepts(in) }, 10*time.Second, 100*time.Millisecond).Should(BeFalse(),
			"the listener stops at the end of the drain time")
		Expect(accepts(out)).To(BeTrue())
		Expect(statValue(s, "listener_manager.listener_stopped")).To(Equal("1"))
	})

	It("keeps accepting after the drain time with skip_exit", func() {
		s := Start(newDir(), twoListeners(), "--drain-time-s", "1", "--drain-strategy", "immediate")
		in := listenerAddr(s, "ingress")
		Expect(s.Post("/drain_listeners?graceful&skip_exit").Body).To(Equal("OK\n"))
		Consistently(func() bool { return accepts(in) }, 2*time.Second, 200*time.Millisecond).Should(BeTrue())
		body, closed := getClose(keepAlive, in)
		Expect(body).To(Equal("in"))
		Expect(closed).To(BeTrue(), "the listener is still draining")
		Expect(statValue(s, "listener_manager.listener_stopped")).To(Equal("0"))
	})

	DescribeTable("drains gradually under load with zero failed requests",
		func(proxied bool) {
			def := plainListener("busy", "", "ok")
			extra := ""
			if proxied {
				up := startUpstream(false)
				def.Chains = []string{proxyChain()}
				extra = upstreamCluster(up.port)
			}
			s := Start(newDir(), listenersBootstrap(def)+extra,
				"--drain-time-s", "2", "--drain-strategy", "gradual", "--concurrency", "2")
			addr := listenerAddr(s, "busy")
			before := runLoad(addr, "ok")
			Expect(before.failed).To(BeZero(), "%v", before.errors)
			Expect(before.closes).To(BeZero(), "nothing closes connections before the drain")

			Expect(s.Post("/drain_listeners?graceful").Body).To(Equal("OK\n"))
			during := runLoad(addr, "ok")
			Expect(during.failed).To(BeZero(), "failed requests during the drain: %v", during.errors)
			Expect(during.ok).To(BeNumerically(">", 0))
			Expect(during.closes).To(BeNumerically(">", 0), "a gradual drain closes a growing share of connections")

			Eventually(func() bool { return accepts(addr) }, 10*time.Second, 100*time.Millisecond).Should(BeFalse())
			Eventually(func() string { return statValue(s, "listener.127.0.0.1_0.downstream_cx_active") }).Should(Equal("0"))
		},
		Entry("direct responses", false),
		Entry("proxied to an upstream", true),
	)

	It("completes a proxied request in flight when its listener stops", func() {
		up := startUpstream(true)
		s := Start(newDir(), listenersBootstrap(listenerDef{Name: "px", Chains: []string{proxyChain()}})+upstreamCluster(up.port))
		addr := listenerAddr(s, "px")

		type result struct {
			status int
			body   []byte
			err    error
		}
		done := make(chan result, 1)
		go func() {
			defer GinkgoRecover()
			resp, err := keepAlive.Get("http://" + addr + "/slow")
			if err != nil {
				done <- result{err: err}
				return
			}
			defer resp.Body.Close()
			b, err := io.ReadAll(resp.Body)
			done <- result{status: resp.StatusCode, body: b, err: err}
		}()
		Eventually(up.arrived, 5*time.Second).Should(Receive(), "the request reached the upstream")

		Expect(s.Post("/drain_listeners").Body).To(Equal("OK\n"))
		Expect(accepts(addr)).To(BeFalse(), "the stopped listener refuses new connections")
		up.release()

		var r result
		Eventually(done, 10*time.Second).Should(Receive(&r))
		Expect(r.err).NotTo(HaveOccurred())
		Expect(r.status).To(Equal(200))
		Expect(r.body).To(HaveLen(upstreamBodySize), "the answer is complete")
	})
})

// upstreamBodySize is the size of a gated upstream's answers: large enough
// to span many writes, so a cut would show.
const upstreamBodySize = 256 << 10

// upstream is an HTTP server on 127.0.0.1 standing in for a service behind
// the proxy.
type upstream struct {
	port    int
	arrived chan struct{} // receives once per request that arrives
	gate    chan struct{} // gated answers wait until it is closed
	once    sync.Once
}

// startUpstream starts an upstream until the spec ends. An open one
// answers "ok" at once; a gated one answers upstreamBodySize bytes once
// release is called.
func startUpstream(gated bool) *upstream {
	GinkgoHelper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	Expect(err).NotTo(HaveOccurred())
	u := &upstream{port: ln.Addr().(*net.TCPAddr).Port, arrived: make(chan struct{}, 1), gate: make(chan struct{})}
	srv := &http.Server{ReadHeaderTimeout: 5 * time.Second, Handler: http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if !gated {
			_, _ = io.WriteString(w, "ok")
			return
		}
		select {
		case u.arrived <- struct{}{}:
		default:
		}
		select {
		case <-u.gate:
		case <-r.Context().Done():
			return
		case <-time.After(10 * time.Second):
		}
		_, _ = w.Write(bytes.Repeat([]byte("x"), upstreamBodySize))
	})}
	go func() { _ = srv.Serve(ln) }()
	DeferCleanup(func() {
		u.release()
		_ = srv.Close()
	})
	return u
}

// release lets the gated answers go.
func (u *upstream) release() { u.once.Do(func() { close(u.gate) }) }

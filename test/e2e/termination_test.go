package e2e

import (
	"fmt"
	"io"
	"net/http"
	"strconv"
	"sync"
	"sync/atomic"
	"syscall"
	"time"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"
	"golang.org/x/net/http2"
)

// Bounds of the termination load: every loop below ends at the first of
// its count, its duration or the spec's stop, so a broken proxy cannot keep
// a spec busy.
const (
	termKeepAliveClients = 3
	termMaxRequests      = 3000 // per loop
	termMaxDuration      = 20 * time.Second
	termPause            = 5 * time.Millisecond
	// termExitBound is how long a spec waits for the process to exit: far
	// beyond the 5 s window and the shutdown that follows it, and far below
	// the windows that specs of an early exit set.
	termExitBound = 20 * time.Second
)

// termProtocol is a downstream protocol the termination load speaks.
type termProtocol struct {
	// client returns a client with its own connection pool.
	client func() *http.Client
	// h2 is true for HTTP/2 with prior knowledge (h2c).
	h2 bool
}

var termProtocols = map[string]termProtocol{
	"HTTP/1.1": {client: func() *http.Client {
		return &http.Client{Timeout: 5 * time.Second, Transport: &http.Transport{MaxIdleConnsPerHost: 1}}
	}},
	"h2c": {h2: true, client: func() *http.Client {
		p := new(http.Protocols)
		p.SetUnencryptedHTTP2(true)
		return &http.Client{Timeout: 5 * time.Second, Transport: &http.Transport{Protocols: p}}
	}},
}

// termLoad is bounded load on one address: keep-alive clients that reuse
// their connections, and a client that opens a new connection for every
// request. It counts every answer; draining is set by the spec once it has
// seen the termination drain begin, so the counts "during" are of requests
// sent inside the window.
type termLoad struct {
	stop     chan struct{}
	wg       sync.WaitGroup
	draining atomic.Bool

	mu sync.Mutex
	c  termCounts
}

// termCounts are the answers a termLoad saw.
type termCounts struct {
	ok, failed     int
	closesDuring   int // HTTP/1 answers with Connection: close
	okDuring       int
	newConnsDuring int // answers on connections opened inside the window
	errors         []string
}

// startTermLoad starts the load on addr with protocol p; the spec's cleanup
// stops it if the spec does not.
func startTermLoad(addr string, p termProtocol) *termLoad {
	l := &termLoad{stop: make(chan struct{})}
	loop := func(next func() (*http.Client, bool)) {
		defer GinkgoRecover()
		deadline := time.Now().Add(termMaxDuration)
		for i := 0; i < termMaxRequests && time.Now().Before(deadline); i++ {
			select {
			case <-l.stop:
				return
			default:
			}
			client, fresh := next()
			l.get(client, addr, fresh)
			time.Sleep(termPause)
		}
	}
	for range termKeepAliveClients {
		client := p.client()
		l.wg.Go(func() {
			defer client.CloseIdleConnections()
			loop(func() (*http.Client, bool) { return client, false })
		})
	}
	l.wg.Go(func() {
		var last *http.Client
		defer func() {
			if last != nil {
				last.CloseIdleConnections()
			}
		}()
		loop(func() (*http.Client, bool) {
			if last != nil {
				last.CloseIdleConnections()
			}
			last = p.client()
			return last, true
		})
	})
	DeferCleanup(l.end)
	return l
}

// get sends one GET / and counts its outcome.
func (l *termLoad) get(client *http.Client, addr string, fresh bool) {
	during := l.draining.Load()
	resp, err := client.Get("http://" + addr + "/")
	var body []byte
	if err == nil {
		body, err = io.ReadAll(resp.Body)
		resp.Body.Close()
	}
	l.mu.Lock()
	defer l.mu.Unlock()
	c := &l.c
	switch {
	case err != nil:
		c.failed++
		c.errors = append(c.errors, err.Error())
		return
	case resp.StatusCode != http.StatusOK || string(body) != "ok":
		c.failed++
		c.errors = append(c.errors, fmt.Sprintf("%d %q", resp.StatusCode, body))
		return
	}
	c.ok++
	if !during {
		return
	}
	c.okDuring++
	if fresh {
		c.newConnsDuring++
	}
	if resp.Close {
		c.closesDuring++
	}
}

// counts returns a copy of the counters.
func (l *termLoad) counts() termCounts {
	l.mu.Lock()
	defer l.mu.Unlock()
	c := l.c
	c.errors = append([]string(nil), l.c.errors...)
	return c
}

// end stops the load and waits for its requests in flight.
func (l *termLoad) end() {
	select {
	case <-l.stop:
	default:
		close(l.stop)
	}
	l.wg.Wait()
}

// proxiedSidecar starts a sidecar whose listener "px" proxies every request
// to a real upstream answering "ok", and returns it with the listener's
// address.
func proxiedSidecar(args ...string) (*Sidecar, string) {
	GinkgoHelper()
	up := startUpstream(false)
	s := Start(newDir(), listenersBootstrap(listenerDef{Name: "px", Chains: []string{proxyChain()}})+upstreamCluster(up.port), args...)
	return s, listenerAddr(s, "px")
}

// waitDraining waits until /ready answers 503 DRAINING after SIGTERM.
func waitDraining(s *Sidecar) {
	GinkgoHelper()
	Eventually(func() Response { return s.Get("/ready") }, 5*time.Second, 20*time.Millisecond).Should(
		And(HaveField("Status", 503), HaveField("Body", "DRAINING\n")), "/ready during the termination drain")
}

var _ = Describe("Termination drain", func() {
	DescribeTable("keeps serving under load through SIGTERM with zero failed requests, then exits 0 after the window",
		func(protocol string, args ...string) {
			p := termProtocols[protocol]
			s, addr := proxiedSidecar(args...)
			load := startTermLoad(addr, p)
			Eventually(func() int { return load.counts().ok }, 5*time.Second, 20*time.Millisecond).Should(
				BeNumerically(">=", 50), "the load is flowing before SIGTERM")
			Expect(load.counts().failed).To(BeZero(), "failures before SIGTERM: %v", load.counts().errors)

			s.Signal(syscall.SIGTERM)
			waitDraining(s)
			load.draining.Store(true)
			Expect(statValue(s, "server.state")).To(Equal("1"), "server.state is DRAINING (1)")
			Expect(statValue(s, "server.live")).To(Equal("0"))
			if p.h2 {
				// A connection of its own, read frame by frame: the
				// answer carries the drain's GOAWAY (graceful: NO_ERROR).
				h := dialH2Frames(addr)
				h.get(1)
				Expect(h.untilGoAway()).To(Equal(http2.ErrCodeNo))
			}
			// Enough traffic inside the window, on old and new connections,
			// to see the drain at work; the load stops long before the
			// window ends (5 s), while the listeners still accept.
			Eventually(func() bool {
				c := load.counts()
				return c.newConnsDuring >= 5 && c.okDuring >= 50 && (p.h2 || c.closesDuring >= 1)
			}, 4*time.Second, 20*time.Millisecond).Should(BeTrue(), "traffic during the termination drain: %+v", load.counts())
			load.end()

			c := load.counts()
			Expect(c.failed).To(BeZero(), "failed requests: %v", c.errors)
			Expect(c.newConnsDuring).To(BeNumerically(">=", 5), "new connections are accepted and served during the window")
			if p.h2 {
				Expect(strconv.Atoi(statValue(s, "http.proxy.downstream_cx_drain_close"))).To(BeNumerically(">", 0),
					"connections were drained with GOAWAY")
			} else {
				Expect(c.closesDuring).To(BeNumerically(">", 0), "answers during the drain carry Connection: close")
			}
			Expect(s.Wait(termExitBound)).To(Equal(0), "stderr:\n%s", s.Stderr())
			Expect(s.Stderr()).To(ContainSubstring("termination drain started"))
			Expect(s.Stderr()).To(ContainSubstring("window=5s"))
			Expect(s.Stderr()).To(ContainSubstring("shutting down: the termination drain window ended"))
		},
		Entry("HTTP/1.1 with the defaults (5 s, gradual)", "HTTP/1.1"),
		Entry("h2c with the immediate strategy", "h2c", "--drain-strategy", "immediate"),
	)

	It("exits as soon as no downstream connection is left with --exit-on-zero-active-connections", func() {
		// A window far longer than the spec waits: the exit can only come
		// from the connection count.
		s, addr := proxiedSidecar("--termination-drain-time-s", "600", "--exit-on-zero-active-connections",
			"--drain-strategy", "immediate")
		keep := termProtocols["HTTP/1.1"].client()
		body, closed := getClose(keep, addr)
		Expect(body).To(Equal("ok"))
		Expect(closed).To(BeFalse())

		s.Signal(syscall.SIGTERM)
		waitDraining(s)
		// The idle keep-alive connection holds the process, past the
		// second the count waits for.
		Consistently(s.Running, 1500*time.Millisecond, 100*time.Millisecond).Should(BeTrue(),
			"the process exited while a downstream connection was open")
		body, closed = getClose(keep, addr)
		Expect(body).To(Equal("ok"), "the open connection is still served")
		Expect(closed).To(BeTrue(), "its answer closes it")
		keep.CloseIdleConnections()

		Expect(s.Wait(termExitBound)).To(Equal(0), "stderr:\n%s", s.Stderr())
		Expect(s.Stderr()).To(ContainSubstring("shutting down: no downstream connection left during the termination drain"))
	})

	It("ignores a second SIGTERM, and exits at once on SIGINT during the drain", func() {
		s, addr := proxiedSidecar("--termination-drain-time-s", "600")
		s.Signal(syscall.SIGTERM)
		waitDraining(s)
		s.Signal(syscall.SIGTERM)
		Eventually(s.Stderr, 5*time.Second).Should(ContainSubstring("termination drain already under way; signal ignored"))
		Expect(s.Running()).To(BeTrue())
		Expect(httpDo(termProtocols["HTTP/1.1"].client(), http.MethodGet, "http://"+addr+"/", nil, nil).Body).To(Equal("ok"),
			"still serving after the second SIGTERM")

		s.Signal(syscall.SIGINT)
		Expect(s.Wait(termExitBound)).To(Equal(0), "stderr:\n%s", s.Stderr())
		Expect(s.Stderr()).To(ContainSubstring("shutting down: caught signal signal=interrupt"))
	})

	It("exits at once on /quitquitquit during the drain", func() {
		s, _ := proxiedSidecar("--termination-drain-time-s", "600")
		s.Signal(syscall.SIGTERM)
		waitDraining(s)
		Expect(s.Post("/quitquitquit").Status).To(Equal(200))
		Expect(s.Wait(termExitBound)).To(Equal(0), "stderr:\n%s", s.Stderr())
		Expect(s.Stderr()).To(ContainSubstring("shutting down: quit requested through the admin"))
	})

	It("exits at once on SIGTERM with --termination-drain-time-s 0, as Envoy", func() {
		s, addr := proxiedSidecar("--termination-drain-time-s", "0")
		s.Signal(syscall.SIGTERM)
		Expect(s.Wait(stopTimeout)).To(Equal(0), "stderr:\n%s", s.Stderr())
		Expect(s.Stderr()).To(ContainSubstring("shutting down: caught signal signal=terminated"))
		Expect(s.Stderr()).NotTo(ContainSubstring("termination drain"))
		Expect(accepts(addr)).To(BeFalse())
	})

	DescribeTable("refuses bad values on the command line, exit 1",
		func(args []string, want string) {
			r := Run(append([]string{"--config-yaml", minimalYAML, "--mode", "validate"}, args...)...)
			Expect(r.ExitCode).To(Equal(1), "stdout: %s\nstderr: %s", r.Stdout, r.Stderr)
			Expect(r.Stderr).To(Equal("error: " + want + "\n"))
		},
		Entry("a negative window", []string{"--termination-drain-time-s", "-1"},
			"invalid value '-1' for --termination-drain-time-s: must not be negative"),
		Entry("a fractional window", []string{"--termination-drain-time-s", "1.5"},
			"invalid value '1.5' for --termination-drain-time-s: not an unsigned integer"),
		Entry("a window with a unit", []string{"--termination-drain-time-s", "5s"},
			"invalid value '5s' for --termination-drain-time-s: not an unsigned integer"),
		Entry("a window beyond uint32", []string{"--termination-drain-time-s", "4294967296"},
			"invalid value '4294967296' for --termination-drain-time-s: out of range, the maximum is 4294967295"),
		Entry("a switch given a value that is not a boolean", []string{"--exit-on-zero-active-connections=sometimes"},
			"invalid value 'sometimes' for --exit-on-zero-active-connections: not a boolean (true or false)"),
	)
})

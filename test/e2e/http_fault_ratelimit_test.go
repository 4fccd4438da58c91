package e2e

import (
	"bytes"
	"io"
	"net/http"
	"strconv"
	"strings"
	"sync/atomic"
	"time"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"
)

// throttledBody is the body the rate-limit upstream answers /big with:
// 64 KiB, which takes about two seconds at 32 KiB/s.
var throttledBody = bytes.Repeat([]byte("0123456789abcdef"), 4096)

// rateLimitUpstream answers /big with throttledBody (with its length) and
// /endless with a body it writes until the connection fails, counting in
// written the bytes it managed to write; h2c makes it speak HTTP/2 too.
func rateLimitUpstream(h2c bool, written *atomic.Int64) int {
	GinkgoHelper()
	return portNum(httpTestUpstream(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.URL.Path == "/endless" {
			chunk := make([]byte, 64<<10)
			for {
				n, err := w.Write(chunk)
				written.Add(int64(n))
				if err != nil {
					return
				}
			}
		}
		w.Header().Set("Content-Length", strconv.Itoa(len(throttledBody)))
		_, _ = w.Write(throttledBody)
	}), h2c))
}

// timedBody is a response read to its end: its body, its headers and how
// long the whole body took to arrive.
type timedBody struct {
	status int
	header http.Header
	body   []byte
	took   time.Duration
}

// readTimed sends a GET with the headers h and reads the whole answer.
func readTimed(url string, h http.Header) timedBody {
	GinkgoHelper()
	req, err := http.NewRequest("GET", url, nil)
	Expect(err).NotTo(HaveOccurred())
	req.Header = h
	t0 := time.Now()
	resp, err := (&http.Client{Timeout: 10 * time.Second}).Do(req)
	Expect(err).NotTo(HaveOccurred())
	defer resp.Body.Close()
	b, err := io.ReadAll(resp.Body)
	Expect(err).NotTo(HaveOccurred(), "the whole body arrives within 10 s")
	return timedBody{status: resp.StatusCode, header: resp.Header, body: b, took: time.Since(t0)}
}

var _ = Describe("The fault filter's response rate limit", func() {
	var written atomic.Int64
	BeforeEach(func() { written.Store(0) })

	It("meters a response body out at limit_kbps, keeping its length, and counts it", func() {
		up := rateLimitUpstream(false, &written)
		port := freePort()
		s := Start(newDir(), faultBootstrap(port, up,
			"{response_rate_limit: {fixed_limit: {limit_kbps: 32}, percentage: {numerator: 100}}}", ""))
		r := readTimed(listenerURL(port, "/big"), nil)
		Expect(r.status).To(Equal(200))
		Expect(r.header.Get("Content-Length")).To(Equal(strconv.Itoa(len(throttledBody))), "the throttle keeps the length")
		Expect(bytes.Equal(r.body, throttledBody)).To(BeTrue(), "the body arrives whole and in order")
		// 64 KiB at 32 KiB/s: about two seconds (a 50 ms head start).
		Expect(r.took).To(BeNumerically(">", 500*time.Millisecond), "the body was metered out")
		Expect(statValue(s, "http.faulty.fault.response_rl_injected")).To(Equal("1"))
		// The stream ends, and releases its fault, just after the
		// client has the last byte.
		Eventually(func() string { return statValue(s, "http.faulty.fault.active_faults") }).Should(Equal("0"), "the fault ended with its request")

		// The runtime key turns it off: the same body comes at once.
		Expect(s.Post("/runtime_modify?fault.http.rate_limit.response_percent=0").Status).To(Equal(200))
		r = readTimed(listenerURL(port, "/big"), nil)
		Expect(bytes.Equal(r.body, throttledBody)).To(BeTrue())
		Expect(statValue(s, "http.faulty.fault.response_rl_injected")).To(Equal("1"))
	})

	It("takes the rate of x-envoy-fault-throughput-response with header_limit, through an HTTP/2 upstream, and holds an active fault while it meters", func() {
		up := rateLimitUpstream(true, &written)
		port := freePort()
		s := Start(newDir(), proxySpec{
			Port:     port,
			HCM:      "{stat_prefix: faulty}",
			Filters:  `[{name: envoy.filters.http.fault, typed_config: ` + withType(faultType, "{max_active_faults: 1, response_rate_limit: {header_limit: {}, percentage: {numerator: 100}}}") + `}]`,
			Clusters: []proxyCluster{{Name: "up", Port: up, Extra: h2cOptions()}},
		}.YAML())
		done := make(chan timedBody, 1)
		go func() {
			defer GinkgoRecover()
			done <- readTimed(listenerURL(port, "/big"), http.Header{"X-Envoy-Fault-Throughput-Response": {"32"}})
		}()
		Eventually(func() string { return statValue(s, "http.faulty.fault.active_faults") }, 5*time.Second).Should(Equal("1"))
		// A second request finds the one fault slot taken: it is not
		// limited, and counts an overflow.
		r := readTimed(listenerURL(port, "/big"), http.Header{"X-Envoy-Fault-Throughput-Response": {"1"}})
		Expect(bytes.Equal(r.body, throttledBody)).To(BeTrue())
		Expect(statValue(s, "http.faulty.fault.faults_overflow")).To(Equal("1"))
		var first timedBody
		Eventually(done, 10*time.Second).Should(Receive(&first))
		Expect(bytes.Equal(first.body, throttledBody)).To(BeTrue())
		Expect(first.took).To(BeNumerically(">", 500*time.Millisecond))
		Expect(statValue(s, "http.faulty.fault.response_rl_injected")).To(Equal("1"))
		Eventually(func() string { return statValue(s, "http.faulty.fault.active_faults") }).Should(Equal("0"), "the faults end with their requests")

		// Without the header there is no rate: nothing is injected.
		r = readTimed(listenerURL(port, "/big"), nil)
		Expect(bytes.Equal(r.body, throttledBody)).To(BeTrue())
		Expect(statValue(s, "http.faulty.fault.response_rl_injected")).To(Equal("1"))
	})

	It("reads no further ahead of the client than the transport's buffers: the upstream of an endless body is held back", func() {
		up := rateLimitUpstream(false, &written)
		port := freePort()
		Start(newDir(), faultBootstrap(port, up,
			"{response_rate_limit: {fixed_limit: {limit_kbps: 16}, percentage: {numerator: 100}}}", ""))
		resp, err := http.Get(listenerURL(port, "/endless"))
		Expect(err).NotTo(HaveOccurred())
		defer resp.Body.Close()
		// The client reads all it is given, while the upstream could
		// write hundreds of megabytes on loopback if nothing held it.
		var got atomic.Int64
		go func() {
			n, _ := io.Copy(io.Discard, resp.Body)
			got.Add(n)
		}()
		Eventually(written.Load, 5*time.Second).Should(BeNumerically(">", 0))
		Consistently(written.Load, 1500*time.Millisecond, 100*time.Millisecond).Should(BeNumerically("<", 64<<20),
			"the upstream was read only as far as the socket buffers hold")
	})

	It("puts filter_metadata into the dynamic metadata of a delayed or aborted request, under the filter's name", func() {
		up := namedUpstream("up")
		port := freePort()
		dir := newDir()
		logPath := dir + "/access.log"
		s := Start(dir, proxySpec{
			Port: port,
			HCM:  "{stat_prefix: faulty, access_log: [" + fileLog(logPath, "md=%DYNAMIC_METADATA(chaos:team)% code=%RESPONSE_CODE%\n") + "]}",
			Filters: `[{name: chaos, typed_config: ` + withType("type.googleapis.com/envoy.extensions.filters.http.fault.v3.HTTPFault",
				"{abort: {header_abort: {}, percentage: {numerator: 100}}, filter_metadata: {team: sre}}") + `}]`,
			Clusters: []proxyCluster{{Name: "up", Port: up}},
		}.YAML(), "--file-flush-interval-msec", "100")
		client := &http.Client{Timeout: 10 * time.Second}
		Expect(httpDo(client, "GET", listenerURL(port, "/"), nil, http.Header{"X-Envoy-Fault-Abort-Request": {"418"}}).Status).To(Equal(418))
		Expect(httpDo(client, "GET", listenerURL(port, "/"), nil, nil).Status).To(Equal(200))
		Eventually(func() string { return readFile(logPath) }, 5*time.Second).Should(ContainSubstring("code=200"))
		lines := strings.Split(strings.TrimSpace(readFile(logPath)), "\n")
		Expect(lines).To(Equal([]string{"md=sre code=418", "md=- code=200"}))
		Expect(statValue(s, "http.faulty.fault.aborts_injected")).To(Equal("1"))
	})
})

package e2e

import (
	"bufio"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/http/httptrace"
	"net/textproto"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"sync/atomic"
	"time"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"
)

// continueBootstrap has proxy_100_continue set and routes /h1/ to an
// HTTP/1.1 upstream at h1, /h2/ to an HTTP/2 one at h2, /silent/ to a raw
// upstream at silent that never sends 100 Continue, and /hung/ there too
// under a 1s route timeout.
func continueBootstrap(port, h1, h2, silent int) string {
	return fmt.Sprintf(`admin: {address: {socket_address: {address: 127.0.0.1, port_value: 0}}}
static_resources:
  listeners:
  - name: l
    address: {socket_address: {address: 127.0.0.1, port_value: %[1]d}}
    filter_chains:
    - filters:
      - name: envoy.filters.network.http_connection_manager
        typed_config:
          "@type": type.googleapis.com/envoy.extensions.filters.network.http_connection_manager.v3.HttpConnectionManager
          stat_prefix: l
          proxy_100_continue: true
          route_config:
            virtual_hosts:
            - name: all
              domains: ["*"]
              routes:
              - {match: {prefix: /h1/}, route: {cluster: h1}}
              - {match: {prefix: /h2/}, route: {cluster: h2}}
              - {match: {prefix: /hung/}, route: {cluster: silent, timeout: 1s}}
              - {match: {prefix: /silent/}, route: {cluster: silent}}
          http_filters:
          - name: envoy.filters.http.router
            typed_config: {"@type": type.googleapis.com/envoy.extensions.filters.http.router.v3.Router}
  clusters:
  - name: h1
    connect_timeout: 1s
    load_assignment:
      cluster_name: h1
      endpoints: [{lb_endpoints: [{endpoint: {address: {socket_address: {address: 127.0.0.1, port_value: %[2]d}}}}]}]
  - name: h2
    connect_timeout: 1s
    typed_extension_protocol_options:
      envoy.extensions.upstreams.http.v3.HttpProtocolOptions:
        "@type": type.googleapis.com/envoy.extensions.upstreams.http.v3.HttpProtocolOptions
        explicit_http_config: {http2_protocol_options: {}}
    load_assignment:
      cluster_name: h2
      endpoints: [{lb_endpoints: [{endpoint: {address: {socket_address: {address: 127.0.0.1, port_value: %[3]d}}}}]}]
  - name: silent
    connect_timeout: 1s
    load_assignment:
      cluster_name: silent
      endpoints: [{lb_endpoints: [{endpoint: {address: {socket_address: {address: 127.0.0.1, port_value: %[4]d}}}}]}]
`, port, h1, h2, silent)
}

// continueHandler answers /refuse with 417 without reading the body (Go's
// server then sends no 100 Continue); otherwise it reads the body, which
// makes Go's server send 100 Continue first, and answers with the Expect
// header it saw and the body's length.
func continueHandler(w http.ResponseWriter, r *http.Request) {
	if strings.HasSuffix(r.URL.Path, "/refuse") {
		w.WriteHeader(http.StatusExpectationFailed)
		_, _ = io.WriteString(w, "refused")
		return
	}
	n, _ := io.Copy(io.Discard, r.Body)
	_, _ = fmt.Fprintf(w, "expect=%q proto=%s got=%d", r.Header.Get("Expect"), r.Proto, n)
}

// silentUpstream is an HTTP/1.1 upstream that never sends 100 Continue: it
// reads the head and the body, then answers /silent/ with the body's
// length and leaves /hung/ unanswered. It counts the requests it read.
func silentUpstream(served *atomic.Int32) int {
	GinkgoHelper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	Expect(err).NotTo(HaveOccurred())
	DeferCleanup(ln.Close)
	go func() {
		for {
			c, err := ln.Accept()
			if err != nil {
				return
			}
			DeferCleanup(c.Close)
			go serveSilent(c, served)
		}
	}()
	return ln.Addr().(*net.TCPAddr).Port
}

// serveSilent serves one connection of silentUpstream.
func serveSilent(c net.Conn, served *atomic.Int32) {
	_ = c.SetDeadline(time.Now().Add(30 * time.Second))
	r := bufio.NewReader(c)
	tp := textproto.NewReader(r)
	line, err := tp.ReadLine()
	if err != nil {
		return
	}
	hdr, err := tp.ReadMIMEHeader()
	if err != nil {
		return
	}
	n, _ := strconv.Atoi(hdr.Get("Content-Length"))
	if _, err := io.CopyN(io.Discard, r, int64(n)); err != nil {
		return
	}
	served.Add(1)
	if strings.Contains(line, "/hung/") {
		_, _ = io.Copy(io.Discard, r)
		return
	}
	body := fmt.Sprintf("expect=%q got=%d", hdr.Get("Expect"), n)
	_, _ = fmt.Fprintf(c, "HTTP/1.1 200 OK\r\ncontent-length: %d\r\n\r\n%s", len(body), body)
}

// curlUpload uploads a file of size bytes with Expect: 100-continue and
// returns curl's verbose output (stderr) and the response body (stdout).
func curlUpload(url string, size int, args ...string) (verbose, body string) {
	GinkgoHelper()
	file := filepath.Join(GinkgoT().TempDir(), "upload")
	Expect(os.WriteFile(file, []byte(strings.Repeat("x", size)), 0o600)).To(Succeed())
	var stdout, stderr strings.Builder
	cmd := exec.Command("curl", append([]string{"-sS", "-v", "--max-time", "10", "-H", "Expect: 100-continue",
		"--data-binary", "@" + file, url}, args...)...)
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	Expect(cmd.Run()).To(Succeed(), stderr.String())
	return stderr.String(), stdout.String()
}

var _ = Describe("proxy_100_continue", Ordered, func() {
	var (
		s      *Sidecar
		port   int
		served atomic.Int32
	)

	BeforeAll(func() {
		h1 := portNum(httpTestUpstream(http.HandlerFunc(continueHandler), false))
		h2 := portNum(httpTestUpstream(http.HandlerFunc(continueHandler), true))
		silent := silentUpstream(&served)
		port = freePort()
		s = Start(newDir(), continueBootstrap(port, h1, h2, silent))
	})

	It("relays an HTTP/1.1 upstream's 100 Continue to curl, with the Expect header sent upstream", func() {
		verbose, body := curlUpload(listenerURL(port, "/h1/up"), 100000)
		Expect(verbose).To(ContainSubstring("< HTTP/1.1 100 Continue"))
		Expect(verbose).To(ContainSubstring("< HTTP/1.1 200 OK"))
		Expect(body).To(Equal(`expect="100-continue" proto=HTTP/1.1 got=100000`))
		Eventually(func() string { return statValue(s, "cluster.h1.upstream_rq_100") }).Should(Equal("1"))
		Expect(statValue(s, "cluster.h1.upstream_rq_1xx")).To(Equal("1"))
		Eventually(func() string { return statValue(s, "http.l.downstream_rq_1xx") }).Should(Equal("1"))
		Expect(statValue(s, fmt.Sprintf("listener.127.0.0.1_%d.http.l.downstream_rq_1xx", port))).To(Equal("1"))
	})

	It("relays an upstream's early final answer without sending the body, and closes the connection", func() {
		verbose, body := curlUpload(listenerURL(port, "/h1/refuse"), 100000)
		Expect(verbose).NotTo(ContainSubstring("100 Continue"))
		Expect(verbose).To(ContainSubstring("< HTTP/1.1 417 Expectation Failed"))
		Expect(verbose).To(ContainSubstring("< connection: close"))
		Expect(body).To(Equal("refused"))
		Eventually(func() string { return statValue(s, "cluster.h1.upstream_rq_417") }).Should(Equal("1"))
	})

	It("lets the body flow when the upstream never sends 100 Continue and curl stops waiting", func() {
		verbose, body := curlUpload(listenerURL(port, "/silent/up"), 5000, "--expect100-timeout", "0.3")
		Expect(verbose).NotTo(ContainSubstring("100 Continue"))
		Expect(body).To(Equal(`expect="100-continue" got=5000`))
	})

	It("bounds an upstream that never answers with the route timeout", func() {
		before := served.Load()
		verbose, body := curlUpload(listenerURL(port, "/hung/up"), 5000, "--expect100-timeout", "0.3")
		Expect(verbose).To(ContainSubstring("< HTTP/1.1 504 Gateway Timeout"))
		Expect(body).To(Equal("upstream request timeout"))
		Expect(served.Load()).To(Equal(before+1), "the upstream read the whole body")
	})

	It("relays the 100 Continue to an HTTP/2 client as an interim HEADERS frame", func() {
		h2c := new(http.Protocols)
		h2c.SetUnencryptedHTTP2(true)
		client := &http.Client{Timeout: 10 * time.Second,
			Transport: &http.Transport{Protocols: h2c, ExpectContinueTimeout: 10 * time.Second}}
		var interim atomic.Int32
		req, err := http.NewRequest("PUT", listenerURL(port, "/h1/up"), strings.NewReader("hello"))
		Expect(err).NotTo(HaveOccurred())
		req.Header.Set("Expect", "100-continue")
		req = req.WithContext(httptrace.WithClientTrace(req.Context(), &httptrace.ClientTrace{
			Got1xxResponse: func(code int, _ textproto.MIMEHeader) error { interim.Store(int32(code)); return nil },
		}))
		resp, err := client.Do(req)
		Expect(err).NotTo(HaveOccurred())
		b, _ := io.ReadAll(resp.Body)
		resp.Body.Close()
		Expect(resp.StatusCode).To(Equal(200), string(b))
		Expect(string(b)).To(Equal(`expect="100-continue" proto=HTTP/1.1 got=5`))
		Expect(interim.Load()).To(Equal(int32(100)))
	})

	It("answers 100 Continue itself for an HTTP/2 upstream, which gets no Expect header", func() {
		before := statValue(s, "http.l.downstream_rq_1xx")
		verbose, body := curlUpload(listenerURL(port, "/h2/up"), 5000)
		Expect(verbose).To(ContainSubstring("< HTTP/1.1 100 Continue"))
		Expect(body).To(Equal(`expect="" proto=HTTP/2.0 got=5000`))
		Eventually(func() string { return statValue(s, "http.l.downstream_rq_1xx") }).ShouldNot(Equal(before))
		Expect(statValue(s, "cluster.h2.upstream_rq_1xx")).To(Equal("0"))
	})
})

package e2e

import (
	"crypto/tls"
	"io"
	"net"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"time"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"
)

// listenerLogFormat is the format of the listener access logs of these
// specs: the connection-level operators.
const listenerLogFormat = "LAL %FILTER_CHAIN_NAME% rx=%BYTES_RECEIVED% tx=%BYTES_SENT% d=%DURATION% flags=%RESPONSE_FLAGS% " +
	"details=%RESPONSE_CODE_DETAILS% up=%UPSTREAM_CLUSTER% type=%ACCESS_LOG_TYPE% from=%DOWNSTREAM_REMOTE_ADDRESS% " +
	"tls=%DOWNSTREAM_TLS_VERSION% sni=%REQUESTED_SERVER_NAME% reason=%DOWNSTREAM_TRANSPORT_FAILURE_REASON% END"

// listenerLogLine matches one line of listenerLogFormat.
func listenerLogLine(chain, rx, tx, flags, details, up, from, tlsVersion, sni, reason string) string {
	return `(?m)^LAL ` + regexp.QuoteMeta(chain) + ` rx=` + rx + ` tx=` + tx + ` d=\d+ flags=` + regexp.QuoteMeta(flags) +
		` details=` + regexp.QuoteMeta(details) + ` up=` + regexp.QuoteMeta(up) + ` type=NotSet from=` + regexp.QuoteMeta(from) +
		` tls=` + regexp.QuoteMeta(tlsVersion) + ` sni=` + regexp.QuoteMeta(sni) + ` reason=` + regexp.QuoteMeta(reason) + ` END$`
}

// loggedListener is a listener on port with a listener access_log (the
// YAML flow item log) and the given filter chains (YAML flow items).
func loggedListener(name string, port int, log string, chains ...string) listenerDef {
	return listenerDef{Name: name, Port: port, Fields: "access_log: [" + log + "]", Chains: chains}
}

// withClusters adds the clusters (YAML flow items) to a listeners
// bootstrap.
func withClusters(bootstrap string, clusters ...string) string {
	return bootstrap + "  clusters: [" + strings.Join(clusters, ", ") + "]\n"
}

// tcpProxyFilter is a tcp_proxy to cluster, without access log of its own.
func tcpProxyFilter(cluster string) string {
	return `{name: envoy.filters.network.tcp_proxy, typed_config: {"@type": type.googleapis.com/envoy.extensions.filters.network.tcp_proxy.v3.TcpProxy, stat_prefix: lal, cluster: ` + cluster + `}}`
}

// sendAndDrain sends msg on c, half-closes it and reads until the proxy
// closes, returning what it read. The proxy may have closed first (a
// connection it refuses): the write and the half-close may then fail.
func sendAndDrain(c *net.TCPConn, msg string) string {
	GinkgoHelper()
	_, _ = c.Write([]byte(msg))
	_ = c.CloseWrite()
	got, _ := io.ReadAll(c) // a reset ends it too
	return string(got)
}

var _ = Describe("Listener access logs", func() {
	It("log each tcp_proxy connection once, at its end, with the proxy's bytes, cluster and the duration", func() {
		up := startTCPServer(echo)
		port := freePort()
		s := Start(newDir(), withClusters(listenersBootstrap(
			loggedListener("tcp", port, stdoutLog(listenerLogFormat+"\n"), `{name: proxied, filters: [`+tcpProxyFilter("echo")+`]}`),
		), tcpCluster("echo", up)), "--file-flush-interval-msec", "50")

		for _, msg := range []string{"hello", "a longer message"} {
			c := dialTCP(port)
			from := c.LocalAddr().String()
			Expect(sendAndDrain(c, msg)).To(Equal(msg))
			n := strconv.Itoa(len(msg))
			Eventually(s.Stdout).Should(MatchRegexp(listenerLogLine("proxied", n, n, "-", "-", "echo", from, "-", "-", "-")))
		}
		// One entry per connection.
		Consistently(func() int { return len(regexp.MustCompile(`(?m)^LAL `).FindAllString(s.Stdout(), -1)) }, "300ms").Should(Equal(2))
	})

	It("log an HTTP connection manager's connections to a file, with the duration and the connection's bytes (which the manager leaves at 0, as in Envoy)", func() {
		dir := newDir()
		path := filepath.Join(dir, "listener.log")
		port := freePort()
		s := Start(dir, listenersBootstrap(
			loggedListener("http", port, fileLog(path, listenerLogFormat+"\n"), `{name: web, filters: [`+directHCM("hello", "HCMLOG %BYTES_SENT%")+`]}`),
		), "--file-flush-interval-msec", "50")

		c := dialTCP(port)
		from := c.LocalAddr().String()
		Expect(sendAndDrain(c, "GET / HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n")).To(HavePrefix("HTTP/1.1 200"))
		Eventually(s.Stdout).Should(ContainSubstring("HCMLOG 5"))
		Eventually(func() string { return readFile(path) }).Should(MatchRegexp(listenerLogLine("web", "0", "0", "-", "-", "-", from, "-", "-", "-")))
	})

	It("log a connection no filter chain matched with NR and filter_chain_not_found", func() {
		port := freePort()
		s := Start(newDir(), listenersBootstrap(
			loggedListener("picky", port, stdoutLog(listenerLogFormat+"\n"),
				`{name: elsewhere, filter_chain_match: {source_prefix_ranges: [{address_prefix: 10.0.0.0, prefix_len: 8}]}, filters: [`+directHCM("never", "")+`]}`),
		), "--file-flush-interval-msec", "50")
		c := dialTCP(port)
		from := c.LocalAddr().String()
		Expect(sendAndDrain(c, "GET / HTTP/1.1\r\nHost: x\r\n\r\n")).To(BeEmpty())
		Eventually(s.Stdout).Should(MatchRegexp(listenerLogLine("-", "0", "0", "NR", "filter_chain_not_found", "-", from, "-", "-", "-")))
		Expect(statValue(s, "listener.127.0.0.1_"+strconv.Itoa(port)+".no_filter_chain_match")).To(Equal("1"))
	})

	It("log a failed TLS handshake with its failure reason, and a TLS connection with its version and SNI", func() {
		dir := newDir()
		f := newTLSFiles(dir)
		port := freePort()
		s := Start(dir, listenersBootstrap(
			loggedListener("tls", port, stdoutLog(listenerLogFormat+"\n"), `{name: secure, transport_socket: `+f.transportSocket("", "")+`, filters: [`+directHCM("secret", "")+`]}`),
		), "--file-flush-interval-msec", "50")

		// Plaintext HTTP on the TLS port.
		c := dialTCP(port)
		from := c.LocalAddr().String()
		_ = sendAndDrain(c, "GET / HTTP/1.1\r\nHost: x\r\n\r\n")
		Eventually(s.Stdout).Should(MatchRegexp(listenerLogLine("secure", "0", "0", "-", "-", "-", from, "-", "-",
			"TLS_error:|268435612:SSL routines:OPENSSL_internal:HTTP_REQUEST:TLS_error_end")))

		// A client that speaks only TLS 1.1 (the listener wants 1.2 at least).
		old := dialTCP(port)
		from = old.LocalAddr().String()
		tc := tls.Client(old, &tls.Config{RootCAs: f.caPool, ServerName: "localhost", MinVersion: tls.VersionTLS10, MaxVersion: tls.VersionTLS11})
		Expect(tc.Handshake()).NotTo(Succeed())
		_ = old.Close()
		Eventually(s.Stdout).Should(MatchRegexp(listenerLogLine("secure", "0", "0", "-", "-", "-", from, "-", "-",
			"TLS_error:|268435696:SSL routines:OPENSSL_internal:UNSUPPORTED_PROTOCOL:TLS_error_end")))

		// A good client: the entry has the session's version and SNI.
		good := dialTCP(port)
		from = good.LocalAddr().String()
		gc := tls.Client(good, &tls.Config{RootCAs: f.caPool, ServerName: "localhost"})
		Expect(gc.SetDeadline(time.Now().Add(10 * time.Second))).To(Succeed())
		_, err := gc.Write([]byte("GET / HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n"))
		Expect(err).NotTo(HaveOccurred())
		body, _ := io.ReadAll(gc)
		Expect(string(body)).To(HavePrefix("HTTP/1.1 200"))
		_ = gc.Close()
		Eventually(s.Stdout).Should(MatchRegexp(listenerLogLine("secure", "0", "0", "-", "-", "-", from, "TLSv1.3", "localhost", "-")))
	})

	It("log a connection the listener filters timed out (listener_filters_timeout without continue_on_listener_filters_timeout)", func() {
		port := freePort()
		l := loggedListener("inspecting", port, stdoutLog(listenerLogFormat+"\n"), `{name: web, filters: [`+directHCM("never", "")+`]}`)
		l.Fields += ", listener_filters: [" + tlsInspector + "], listener_filters_timeout: 0.2s"
		s := Start(newDir(), listenersBootstrap(l), "--file-flush-interval-msec", "50")
		c := dialTCP(port)
		from := c.LocalAddr().String()
		got, _ := io.ReadAll(c) // sends nothing: the inspector waits until the timeout
		Expect(got).To(BeEmpty())
		Eventually(s.Stdout).Should(MatchRegexp(listenerLogLine("-", "0", "0", "-", "-", "-", from, "-", "-", "-")))
		Expect(statValue(s, "listener.127.0.0.1_"+strconv.Itoa(port)+".downstream_pre_cx_timeout")).To(Equal("1"))
	})

	It("are refused on a UDP listener, with their path", func() {
		r, _ := validate("udp.yaml", withClusters(`admin: {address: {socket_address: {address: 127.0.0.1, port_value: 0}}}
static_resources:
  listeners:
  - {name: dns, address: {socket_address: {address: 127.0.0.1, port_value: 0, protocol: UDP}}, access_log: [`+stdoutLog("x\n")+`],
    listener_filters: [{name: envoy.filters.udp_listener.udp_proxy, typed_config: {"@type": type.googleapis.com/envoy.extensions.filters.udp.udp_proxy.v3.UdpProxyConfig, stat_prefix: dns, matcher: {on_no_match: {action: {name: route, typed_config: {"@type": type.googleapis.com/envoy.extensions.filters.udp.udp_proxy.v3.Route, cluster: dns}}}}}}]}
`, tcpCluster("dns", 53)))
		Expect(r.ExitCode).To(Equal(1), "stdout: %s", r.Stdout)
		Expect(r.Stderr).To(ContainSubstring("static_resources.listeners[0].access_log: not supported on a UDP listener"))
	})
})

package e2e

import (
	"bufio"
	"crypto/tls"
	"fmt"
	"io"
	"net"
	"net/http"
	"path/filepath"
	"strings"
	"time"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"
)

// The connection-level limits' configuration types.
const (
	connLimitType    = "type.googleapis.com/envoy.extensions.filters.network.connection_limit.v3.ConnectionLimit"
	netRateLimitType = "type.googleapis.com/envoy.extensions.filters.network.local_ratelimit.v3.LocalRateLimit"
)

// connLimit and netRateLimit are the limit filters (YAML flow items) with
// the given fields.
func connLimit(fields string) string {
	return `{name: envoy.filters.network.connection_limit, typed_config: {"@type": ` + connLimitType + `, ` + fields + `}}`
}

func netRateLimit(fields string) string {
	return `{name: envoy.filters.network.local_ratelimit, typed_config: {"@type": ` + netRateLimitType + `, ` + fields + `}}`
}

// tcpProxyTo is a tcp_proxy (YAML flow item) to cluster, stat_prefix
// front, logging each connection to stdout as "TCPLOG <cluster> <flags>".
func tcpProxyTo(cluster string) string {
	return `{name: envoy.filters.network.tcp_proxy, typed_config: {"@type": type.googleapis.com/envoy.extensions.filters.network.tcp_proxy.v3.TcpProxy,
		stat_prefix: front, cluster: ` + cluster + `,
		access_log: [{name: envoy.access_loggers.stdout, typed_config: {"@type": type.googleapis.com/envoy.extensions.access_loggers.stream.v3.StdoutAccessLog,
			log_format: {text_format_source: {inline_string: "TCPLOG %UPSTREAM_CLUSTER% %RESPONSE_FLAGS%\n"}}}}]}}`
}

// helloManager is an HTTP connection manager (YAML flow item), stat_prefix
// web, that answers every request with 200 "hello".
const helloManager = `{name: envoy.filters.network.http_connection_manager, typed_config: {
	"@type": type.googleapis.com/envoy.extensions.filters.network.http_connection_manager.v3.HttpConnectionManager,
	stat_prefix: web,
	route_config: {virtual_hosts: [{name: all, domains: ["*"], routes: [{match: {prefix: /}, direct_response: {status: 200, body: {inline_string: hello}}}]}]},
	http_filters: [{name: envoy.filters.http.router, typed_config: {"@type": type.googleapis.com/envoy.extensions.filters.http.router.v3.Router}}]}}`

// limitsBootstrap is a listener on port whose filter chain is filters
// (YAML flow items, the terminal one last), with an admin runtime layer
// and the given clusters (YAML flow items).
func limitsBootstrap(port int, filters []string, clusters ...string) string {
	return fmt.Sprintf(`
admin: {address: {socket_address: {address: 127.0.0.1, port_value: 0}}}
layered_runtime: {layers: [{name: admin, admin_layer: {}}]}
static_resources:
  clusters: [%s]
  listeners:
  - name: limited
    address: {socket_address: {address: 127.0.0.1, port_value: %d}}
    filter_chains:
    - filters: [%s]
`, strings.Join(clusters, ", "), port, strings.Join(filters, ", "))
}

// expectEcho checks that c is proxied to an echo server.
func expectEcho(c net.Conn) {
	GinkgoHelper()
	_, err := c.Write([]byte("ping"))
	Expect(err).NotTo(HaveOccurred())
	b := make([]byte, 4)
	_, err = io.ReadFull(c, b)
	Expect(err).NotTo(HaveOccurred())
	Expect(string(b)).To(Equal("ping"))
}

// expectClosedSilently checks that the proxy closes c without sending
// anything: the client reads the end of the stream (or a reset, when what
// it sent was still unread).
func expectClosedSilently(c net.Conn) {
	GinkgoHelper()
	b, err := io.ReadAll(c)
	if err != nil {
		Expect(err.Error()).To(ContainSubstring("connection reset by peer"))
	}
	Expect(b).To(BeEmpty())
}

// httpGet sends one keep-alive GET on c and returns the response status.
func httpGet(c net.Conn, br *bufio.Reader) int {
	GinkgoHelper()
	_, err := c.Write([]byte("GET / HTTP/1.1\r\nHost: limits.test\r\n\r\n"))
	Expect(err).NotTo(HaveOccurred())
	resp, err := http.ReadResponse(br, nil)
	Expect(err).NotTo(HaveOccurred())
	_, _ = io.Copy(io.Discard, resp.Body)
	_ = resp.Body.Close()
	return resp.StatusCode
}

var _ = Describe("The connection limit network filter", func() {
	It("closes the connection past max_connections unread, counts and logs it, and counts down as connections close", func() {
		up := startTCPServer(echo)
		port := freePort()
		s := Start(newDir(), limitsBootstrap(port, []string{connLimit("stat_prefix: cl, max_connections: 2"), tcpProxyTo("echo")}, tcpCluster("echo", up)),
			"--file-flush-interval-msec", "50")
		active := func() string { return statValue(s, "connection_limit.cl.active_connections") }

		a, b := dialTCP(port), dialTCP(port)
		expectEcho(a)
		expectEcho(b)
		c := dialTCP(port)
		expectClosedSilently(c)
		Expect(statValue(s, "connection_limit.cl.limited_connections")).To(Equal("1"))
		Eventually(active).Should(Equal("2"))
		// tcp_proxy never connected it, and logged it (no flag: Envoy sets
		// none for this filter).
		Expect(statValue(s, "cluster.echo.upstream_cx_total")).To(Equal("2"))
		Expect(statValue(s, "tcp.front.downstream_cx_total")).To(Equal("3"))
		Eventually(s.Stdout).Should(ContainSubstring("TCPLOG - -\n"))

		// As connections close the count goes down, and a place frees up.
		Expect(a.Close()).To(Succeed())
		Eventually(active).Should(Equal("1"))
		d := dialTCP(port)
		expectEcho(d)
		Expect(b.Close()).To(Succeed())
		Expect(d.Close()).To(Succeed())
		Eventually(active).Should(Equal("0"))
		Expect(statValue(s, "connection_limit.cl.limited_connections")).To(Equal("1"))
	})

	It("holds a connection past the limit for the delay before closing it, or until its client goes", func() {
		up := startTCPServer(echo)
		port := freePort()
		s := Start(newDir(), limitsBootstrap(port, []string{connLimit("stat_prefix: cl, max_connections: 1, delay: 0.5s"), tcpProxyTo("echo")}, tcpCluster("echo", up)))
		a := dialTCP(port)
		expectEcho(a)

		start := time.Now()
		c := dialTCP(port)
		_, err := c.Write([]byte("never forwarded"))
		Expect(err).NotTo(HaveOccurred())
		_, _ = io.ReadAll(c)
		Expect(time.Since(start)).To(BeNumerically(">=", 500*time.Millisecond), "closed before the delay")
		Expect(statValue(s, "cluster.echo.upstream_cx_total")).To(Equal("1"))
		Expect(statValue(s, "connection_limit.cl.limited_connections")).To(Equal("1"))

		// With a long delay, a held connection counts until its client
		// closes it.
		port = freePort()
		s = Start(newDir(), limitsBootstrap(port, []string{connLimit("stat_prefix: held, max_connections: 1, delay: 60s"), tcpProxyTo("echo")}, tcpCluster("echo", up)))
		a = dialTCP(port)
		expectEcho(a)
		c = dialTCP(port)
		Eventually(func() string { return statValue(s, "connection_limit.held.limited_connections") }).Should(Equal("1"))
		Expect(statValue(s, "connection_limit.held.active_connections")).To(Equal("2"))
		Expect(c.Close()).To(Succeed())
		Eventually(func() string { return statValue(s, "connection_limit.held.active_connections") }, 10*time.Second).Should(Equal("1"))
	})

	It("is turned off and on by its runtime_enabled key", func() {
		up := startTCPServer(echo)
		port := freePort()
		s := Start(newDir(), limitsBootstrap(port, []string{
			connLimit("stat_prefix: cl, max_connections: 1, runtime_enabled: {default_value: true, runtime_key: limits.cl}"),
			tcpProxyTo("echo"),
		}, tcpCluster("echo", up)))
		Expect(s.Post("/runtime_modify?limits.cl=false").Status).To(Equal(200))
		a, b := dialTCP(port), dialTCP(port)
		expectEcho(a)
		expectEcho(b)
		Expect(statValue(s, "connection_limit.cl.active_connections")).To(Equal("0"))

		// On again: the connections opened while it was off do not count.
		Expect(s.Post("/runtime_modify?limits.cl=true").Status).To(Equal(200))
		c := dialTCP(port)
		expectEcho(c)
		expectClosedSilently(dialTCP(port))
		Expect(statValue(s, "connection_limit.cl.limited_connections")).To(Equal("1"))
	})
})

// limitsLDS is a listener discovery response (YAML) with one listener on
// port: a filter chain for 127.0.0.1 with a connection limit of one in
// front of a tcp_proxy to echo, and a chain no connection matches, whose
// tcp_proxy has stat_prefix other; listener are extra listener fields.
func limitsLDS(version string, port int, other, listener string) string {
	return fmt.Sprintf(`version_info: %q
resources:
- "@type": type.googleapis.com/envoy.config.listener.v3.Listener
  name: limited
  address: {socket_address: {address: 127.0.0.1, port_value: %d}}
  filter_chains:
  - filter_chain_match: {source_prefix_ranges: [{address_prefix: 127.0.0.1, prefix_len: 32}]}
    filters: [%s, %s]
  - filter_chain_match: {destination_port: 1}
    filters: [{name: envoy.filters.network.tcp_proxy, typed_config: {"@type": type.googleapis.com/envoy.extensions.filters.network.tcp_proxy.v3.TcpProxy, stat_prefix: %s, cluster: echo}}]
%s`, version, port, connLimit("stat_prefix: cl, max_connections: 1"), tcpProxyTo("echo"), other, listener)
}

var _ = Describe("The connection limit network filter across listener updates", func() {
	It("keeps the count of a filter chain an update leaves as it was, where Envoy updates in place, and starts afresh otherwise", func() {
		up := startTCPServer(echo)
		port := freePort()
		dir := ldsSetup(limitsLDS("v1", port, "one", ""))
		file, err := yamlQuote(filepath.Join(dir, ldsFileName))
		Expect(err).NotTo(HaveOccurred())
		s := Start(newDir(), fmt.Sprintf(`
admin: {address: {socket_address: {address: 127.0.0.1, port_value: 0}}}
static_resources: {clusters: [%s]}
dynamic_resources: {lds_config: {resource_api_version: V3, path_config_source: {path: %s}}}
`, tcpCluster("echo", up), file))
		waitLive(s)
		held := dialTCP(port)
		expectEcho(held)

		// Only the other chain changes: Envoy keeps this chain, and its
		// count, which still holds the open connection.
		replaceLDS(dir, limitsLDS("v2", port, "two", ""))
		waitStat(s, "listener_manager.listener_modified", "1")
		expectClosedSilently(dialTCP(port))
		Expect(statValue(s, "connection_limit.cl.limited_connections")).To(Equal("1"))

		// A listener field changes: a new listener, whose count starts
		// at nothing (the old one still counts the open connection).
		replaceLDS(dir, limitsLDS("v3", port, "two", "  per_connection_buffer_limit_bytes: 65536\n"))
		waitStat(s, "listener_manager.listener_modified", "2")
		expectEcho(dialTCP(port))
		Expect(statValue(s, "connection_limit.cl.limited_connections")).To(Equal("1"))
		waitStat(s, "connection_limit.cl.active_connections", "2")
		expectEcho(held)
	})
})

var _ = Describe("The local rate limit network filter", func() {
	It("closes a connection that finds the token bucket empty, with URX in the log, and admits again once it refills", func() {
		up := startTCPServer(echo)
		port := freePort()
		s := Start(newDir(), limitsBootstrap(port, []string{
			netRateLimit("stat_prefix: rl, token_bucket: {max_tokens: 2, tokens_per_fill: 1, fill_interval: 1s}"),
			tcpProxyTo("echo"),
		}, tcpCluster("echo", up)), "--file-flush-interval-msec", "50")
		expectEcho(dialTCP(port))
		expectEcho(dialTCP(port))
		expectClosedSilently(dialTCP(port))
		Expect(statValue(s, "local_rate_limit.rl.rate_limited")).To(Equal("1"))
		Expect(statValue(s, "cluster.echo.upstream_cx_total")).To(Equal("2"))
		Eventually(s.Stdout).Should(ContainSubstring("TCPLOG - URX\n"))

		// A token a second comes back.
		time.Sleep(1200 * time.Millisecond)
		expectEcho(dialTCP(port))
		Expect(statValue(s, "local_rate_limit.rl.rate_limited")).To(Equal("1"))
	})

	It("is off until its runtime_enabled key turns it on", func() {
		up := startTCPServer(echo)
		port := freePort()
		s := Start(newDir(), limitsBootstrap(port, []string{
			netRateLimit("stat_prefix: rl, token_bucket: {max_tokens: 1, fill_interval: 60s}, runtime_enabled: {default_value: false, runtime_key: limits.rl}"),
			tcpProxyTo("echo"),
		}, tcpCluster("echo", up)))
		for range 3 {
			expectEcho(dialTCP(port))
		}
		Expect(s.Post("/runtime_modify?limits.rl=true").Status).To(Equal(200))
		expectEcho(dialTCP(port))
		expectClosedSilently(dialTCP(port))
		Expect(statValue(s, "local_rate_limit.rl.rate_limited")).To(Equal("1"))
	})

	It("shares one bucket between the filters of a share_key", func() {
		up := startTCPServer(echo)
		port, port2 := freePort(), freePort()
		shared := netRateLimit("stat_prefix: rl, share_key: edge, token_bucket: {max_tokens: 2, fill_interval: 60s}")
		boot := limitsBootstrap(port, []string{shared, tcpProxyTo("echo")}, tcpCluster("echo", up)) + fmt.Sprintf(`
  - name: second
    address: {socket_address: {address: 127.0.0.1, port_value: %d}}
    filter_chains:
    - filters: [%s, %s]
`, port2, shared, tcpProxyTo("echo"))
		s := Start(newDir(), boot)
		expectEcho(dialTCP(port))
		expectEcho(dialTCP(port2))
		expectClosedSilently(dialTCP(port))
		expectClosedSilently(dialTCP(port2))
		Expect(statValue(s, "local_rate_limit.rl.rate_limited")).To(Equal("2"))
	})
})

var _ = Describe("The connection-level limits in front of an HTTP connection manager", func() {
	It("close connections before the connection manager reads a request, which counts them", func() {
		port := freePort()
		s := Start(newDir(), limitsBootstrap(port, []string{
			connLimit("stat_prefix: cl, max_connections: 1"),
			netRateLimit("stat_prefix: rl, token_bucket: {max_tokens: 2, fill_interval: 60s}"),
			helloManager,
		}))
		a := dialTCP(port)
		Expect(httpGet(a, bufio.NewReader(a))).To(Equal(200))

		// Past the connection limit (no token taken).
		c := dialTCP(port)
		_, err := c.Write([]byte("GET / HTTP/1.1\r\nHost: limits.test\r\n\r\n"))
		Expect(err).NotTo(HaveOccurred())
		expectClosedSilently(c)
		Expect(statValue(s, "connection_limit.cl.limited_connections")).To(Equal("1"))
		Expect(statValue(s, "http.web.downstream_rq_total")).To(Equal("1"))
		Expect(statValue(s, "http.web.downstream_cx_total")).To(Equal("2"))
		Eventually(func() string { return statValue(s, "http.web.downstream_cx_destroy_local") }).Should(Equal("1"))

		// The second token, then none.
		Expect(a.Close()).To(Succeed())
		Eventually(func() string { return statValue(s, "connection_limit.cl.active_connections") }).Should(Equal("0"))
		b := dialTCP(port)
		Expect(httpGet(b, bufio.NewReader(b))).To(Equal(200))
		Expect(b.Close()).To(Succeed())
		Eventually(func() string { return statValue(s, "connection_limit.cl.active_connections") }).Should(Equal("0"))
		expectClosedSilently(dialTCP(port))
		Expect(statValue(s, "local_rate_limit.rl.rate_limited")).To(Equal("1"))
		Expect(statValue(s, "http.web.downstream_rq_total")).To(Equal("2"))
	})
})

var _ = Describe("The connection limit network filter on a TLS filter chain", func() {
	It("closes a connection over the limit before its handshake, as Envoy runs it when the connection is made", func() {
		dir := newDir()
		f := newTLSFiles(dir)
		port := freePort()
		chain := `{filters: [` + connLimit("stat_prefix: tlscl, max_connections: 1") + `, ` + directHCM("secure", "") + `], transport_socket: ` + f.transportSocket("", "") + `}`
		s := Start(dir, tlsBootstrap(port, "", []string{chain}))
		dial := func() (*tls.Conn, error) {
			d := &net.Dialer{Deadline: time.Now().Add(10 * time.Second)}
			return tls.DialWithDialer(d, "tcp", fmt.Sprintf("127.0.0.1:%d", port), &tls.Config{RootCAs: f.caPool, ServerName: "localhost"})
		}
		a, err := dial()
		Expect(err).NotTo(HaveOccurred())
		DeferCleanup(a.Close)
		_, err = dial()
		Expect(err).To(HaveOccurred())
		Expect(err.Error()).NotTo(ContainSubstring("timeout"))
		Expect(statValue(s, "connection_limit.tlscl.limited_connections")).To(Equal("1"), "the second handshake failed with %v", err)
		// The first handshake completes on the server once the client's
		// Finished is in, a moment after the client's own; the second
		// never starts.
		handshakes := func() string { return statValue(s, fmt.Sprintf("listener.127.0.0.1_%d.ssl.handshake", port)) }
		Eventually(handshakes).Should(Equal("1"))
		Consistently(handshakes, 300*time.Millisecond).Should(Equal("1"))
		Expect(statValue(s, fmt.Sprintf("listener.127.0.0.1_%d.ssl.connection_error", port))).To(Equal("0"))
	})
})

var _ = Describe("The connection-level limits' configuration", func() {
	It("is refused with the path of each field in error", func() {
		dir := newDir()
		writeFile(dir+"/bad.yaml", limitsBootstrap(freePort(), []string{
			connLimit("stat_prefix: cl, max_connections: 0"),
			netRateLimit("stat_prefix: rl, token_bucket: {max_tokens: 1, fill_interval: 0.01s}"),
			connLimit("stat_prefix: cl2, delay: -1s"),
			netRateLimit("stat_prefix: rl2"),
			helloManager,
		}))
		res := Run("-c", dir+"/bad.yaml", "--mode", "validate")
		Expect(res.ExitCode).To(Equal(1))
		const chain = "static_resources.listeners[0].filter_chains[0]."
		Expect(res.Stderr).To(ContainSubstring(chain + "filters[0].typed_config.max_connections: value must be greater than or equal to 1"))
		Expect(res.Stderr).To(ContainSubstring(chain + "filters[1].typed_config.token_bucket.fill_interval: local rate limit token bucket fill timer must be >= 50ms"))
		Expect(res.Stderr).To(ContainSubstring(chain + "filters[2].typed_config.max_connections: required"))
		Expect(res.Stderr).To(ContainSubstring(chain + "filters[2].typed_config.delay: must be a valid, non-negative duration"))
		Expect(res.Stderr).To(ContainSubstring(chain + "filters[3].typed_config.token_bucket"))

		// A limit needs a terminal filter after it.
		writeFile(dir+"/last.yaml", limitsBootstrap(freePort(), []string{connLimit("stat_prefix: cl, max_connections: 1")}))
		res = Run("-c", dir+"/last.yaml", "--mode", "validate")
		Expect(res.ExitCode).To(Equal(1))
		Expect(res.Stderr).To(ContainSubstring(chain + "filters[0]: the last filter of a chain must be a terminal filter"))
	})
})

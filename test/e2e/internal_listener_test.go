package e2e

import (
	"bytes"
	"crypto/sha256"
	"fmt"
	"io"
	"net"
	"net/http"
	"strconv"
	"strings"
	"time"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"
)

// internalBootstrap is Envoy's internal listener shapes on one server:
//   - "front" (HTTP on frontPort) routes / to the cluster via_inner, whose
//     one endpoint is the internal listener "inner", which tcp_proxies to
//     the real upstream web; /missing goes to an internal address no
//     listener has;
//   - "tunnel" (TCP on tunnelPort) encapsulates its stream into an HTTP/2
//     CONNECT to the internal listener "decap", whose connection manager
//     terminates the CONNECT into a TCP stream to echo (Envoy's
//     internal_listener example's shape).
//
// Each direction of an internal connection buffers 16 KiB
// (buffer_size_kb), so a body of megabytes crosses under flow control.
func internalBootstrap(frontPort, tunnelPort, webPort, echoPort int) string {
	GinkgoHelper()
	const (
		hcmType    = `"@type": type.googleapis.com/envoy.extensions.filters.network.http_connection_manager.v3.HttpConnectionManager`
		tcpType    = `"@type": type.googleapis.com/envoy.extensions.filters.network.tcp_proxy.v3.TcpProxy`
		router     = `{name: envoy.filters.http.router, typed_config: {"@type": type.googleapis.com/envoy.extensions.filters.http.router.v3.Router}}`
		internalEP = `{cluster_name: %[1]s, endpoints: [{lb_endpoints: [{endpoint: {address: {envoy_internal_address: {server_listener_name: %[2]s}}}}]}]}`
	)
	internal := func(name, listener, extra string) string {
		return fmt.Sprintf(`{name: %[1]s, connect_timeout: 1s, %[3]s load_assignment: `+internalEP+`}`, name, listener, extra)
	}
	return fmt.Sprintf(`
admin: {address: {socket_address: {address: 127.0.0.1, port_value: 0}}}
bootstrap_extensions:
- name: envoy.bootstrap.internal_listener
  typed_config: {"@type": type.googleapis.com/envoy.extensions.bootstrap.internal_listener.v3.InternalListener, buffer_size_kb: 16}
static_resources:
  clusters:
  - %[5]s
  - %[6]s
  - %[7]s
  - %[8]s
  - %[9]s
  listeners:
  - name: front
    address: {socket_address: {address: 127.0.0.1, port_value: %[1]d}}
    filter_chains:
    - filters:
      - name: envoy.filters.network.http_connection_manager
        typed_config:
          %[10]s
          stat_prefix: front
          access_log: [%[12]s]
          route_config:
            virtual_hosts:
            - name: all
              domains: ["*"]
              routes:
              - {match: {prefix: /missing}, route: {cluster: absent}}
              - {match: {prefix: /}, route: {cluster: via_inner}}
          http_filters: [%[13]s]
  - name: inner
    internal_listener: {}
    filter_chains:
    - filters:
      - name: envoy.filters.network.tcp_proxy
        typed_config: {%[11]s, stat_prefix: inner, cluster: web, access_log: [%[14]s]}
  - name: tunnel
    address: {socket_address: {address: 127.0.0.1, port_value: %[2]d}}
    filter_chains:
    - filters:
      - name: envoy.filters.network.tcp_proxy
        typed_config: {%[11]s, stat_prefix: tunnel, cluster: encap, tunneling_config: {hostname: "db.example:5432"}, access_log: [%[16]s]}
  - name: decap
    internal_listener: {}
    filter_chains:
    - filters:
      - name: envoy.filters.network.http_connection_manager
        typed_config:
          %[10]s
          stat_prefix: decap
          http2_protocol_options: {allow_connect: true}
          access_log: [%[15]s]
          route_config:
            virtual_hosts:
            - name: all
              domains: ["*"]
              routes:
              - {match: {connect_matcher: {}}, route: {cluster: echo, upgrade_configs: [{upgrade_type: CONNECT, connect_config: {}}]}}
          http_filters: [%[13]s]
`, frontPort, tunnelPort, webPort, echoPort,
		// One request per connection: the inner listener's connection
		// ends, and logs, with the response. Its internal_upstream
		// transport socket passes the host's "tenant" and the cluster's
		// "owner" metadata on; "gone" is on neither.
		`{name: via_inner, connect_timeout: 1s, metadata: {filter_metadata: {owner: {team: blue}}},
    typed_extension_protocol_options: {envoy.extensions.upstreams.http.v3.HttpProtocolOptions: {"@type": type.googleapis.com/envoy.extensions.upstreams.http.v3.HttpProtocolOptions, common_http_protocol_options: {max_requests_per_connection: 1}, explicit_http_config: {http_protocol_options: {}}}},
    transport_socket: {name: envoy.transport_sockets.internal_upstream, typed_config: {"@type": type.googleapis.com/envoy.extensions.transport_sockets.internal_upstream.v3.InternalUpstreamTransport,
      passthrough_metadata: [{kind: {host: {}}, name: tenant}, {kind: {cluster: {}}, name: owner}, {kind: {host: {}}, name: gone}],
      transport_socket: {name: envoy.transport_sockets.raw_buffer, typed_config: {"@type": type.googleapis.com/envoy.extensions.transport_sockets.raw_buffer.v3.RawBuffer}}}},
    load_assignment: {cluster_name: via_inner, endpoints: [{lb_endpoints: [{endpoint: {address: {envoy_internal_address: {server_listener_name: inner}}}, metadata: {filter_metadata: {tenant: {id: t1}}}}]}]}}`,
		internal("absent", "nowhere", ""),
		internal("encap", "decap", `typed_extension_protocol_options: {envoy.extensions.upstreams.http.v3.HttpProtocolOptions: {"@type": type.googleapis.com/envoy.extensions.upstreams.http.v3.HttpProtocolOptions, explicit_http_config: {http2_protocol_options: {}}}},`),
		tcpCluster("web", webPort), tcpCluster("echo", echoPort),
		hcmType, tcpType,
		stdoutLog("FRONT %REQ(:PATH)% %RESPONSE_CODE% %RESPONSE_FLAGS% %UPSTREAM_HOST% %BYTES_RECEIVED% %BYTES_SENT%\n"),
		router,
		stdoutLog("INNER %DOWNSTREAM_LOCAL_ADDRESS% %DOWNSTREAM_REMOTE_ADDRESS% %UPSTREAM_HOST% %BYTES_RECEIVED% %BYTES_SENT% %DYNAMIC_METADATA(tenant:id)% %DYNAMIC_METADATA(owner:team)% %DYNAMIC_METADATA(gone)%\n"),
		stdoutLog("DECAP %REQ(:METHOD)% %REQ(:AUTHORITY)% %RESPONSE_CODE% %DOWNSTREAM_LOCAL_ADDRESS% %UPSTREAM_CLUSTER%\n"),
		stdoutLog("TUNNEL %UPSTREAM_HOST% %RESPONSE_FLAGS% %BYTES_RECEIVED% %BYTES_SENT%\n"))
}

// startBodyEcho serves HTTP/1.1 on loopback, answering each request with
// its own body, and returns its port.
func startBodyEcho() int {
	GinkgoHelper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	Expect(err).NotTo(HaveOccurred())
	srv := &http.Server{ReadHeaderTimeout: 5 * time.Second, Handler: http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		body, err := io.ReadAll(r.Body)
		if err != nil {
			w.WriteHeader(http.StatusBadRequest)
			return
		}
		w.Header().Set("X-Body-Sha256", fmt.Sprintf("%x", sha256.Sum256(body)))
		_, _ = w.Write(body)
	})}
	go func() { _ = srv.Serve(ln) }()
	DeferCleanup(srv.Close)
	return ln.Addr().(*net.TCPAddr).Port
}

var _ = Describe("Internal listeners", func() {
	var (
		s                            *Sidecar
		frontPort, tunnelPort, webUp int
	)
	client := &http.Client{Timeout: 20 * time.Second, Transport: &http.Transport{DisableKeepAlives: true}}

	BeforeEach(func() {
		webUp = startBodyEcho()
		echoUp := startTCPServer(echo)
		frontPort, tunnelPort = freePort(), freePort()
		s = Start(newDir(), internalBootstrap(frontPort, tunnelPort, webUp, echoUp), "--file-flush-interval-msec", "50")
	})

	It("carries an HTTP request through an internal listener's tcp_proxy to a real upstream, a body of megabytes both ways under flow control, with the metadata internal_upstream passes on", func() {
		body := bytes.Repeat([]byte("internal listener "), 4<<20/18) // ~4 MiB, 256 times the buffer
		resp, err := client.Post(listenerURL(frontPort, "/big"), "application/octet-stream", bytes.NewReader(body))
		Expect(err).NotTo(HaveOccurred())
		got, err := io.ReadAll(resp.Body)
		Expect(err).NotTo(HaveOccurred())
		Expect(resp.Body.Close()).To(Succeed())
		Expect(resp.StatusCode).To(Equal(200))
		Expect(resp.Header.Get("X-Body-Sha256")).To(Equal(fmt.Sprintf("%x", sha256.Sum256(body))))
		Expect(bytes.Equal(got, body)).To(BeTrue(), "echoed %d bytes of %d", len(got), len(body))

		n := strconv.Itoa(len(body))
		// The front's upstream host is the internal address; the inner
		// listener's connection is from Envoy's internal client address
		// to its own, and its upstream the real server.
		Eventually(s.Stdout).Should(ContainSubstring("FRONT /big 200 - envoy://inner/ " + n + " " + n + "\n"))
		Eventually(s.Stdout).Should(MatchRegexp(`INNER envoy://inner/ envoy://internal_client_address/ 127\.0\.0\.1:` + strconv.Itoa(webUp) + ` \d+ \d+ t1 blue -\n`))
		Expect(statValue(s, "cluster.via_inner.internal_upstream.no_metadata")).To(Equal("1"))
		Expect(statValue(s, "cluster.via_inner.upstream_cx_total")).To(Equal("1"))
		Expect(statValue(s, "listener.envoy_internal_inner.downstream_cx_total")).To(Equal("1"))
		Expect(statValue(s, "tcp.inner.downstream_cx_total")).To(Equal("1"))
		Expect(statValue(s, "cluster.web.upstream_cx_total")).To(Equal("1"))
	})

	It("encapsulates a TCP stream into an HTTP/2 CONNECT to an internal listener that terminates it", func() {
		c := dialTCP(tunnelPort)
		msg := bytes.Repeat([]byte("tunnelled "), 200000) // 2 MB
		expectStreamEcho(c, msg)
		Eventually(s.Stdout).Should(ContainSubstring("DECAP CONNECT db.example:5432 200 envoy://decap/ echo\n"))
		Expect(statValue(s, "http.decap.downstream_cx_http2_total")).To(Equal("1"))
		Expect(statValue(s, "cluster.encap.upstream_cx_http2_total")).To(Equal("1"))
	})

	It("answers 503 UF for an internal address no listener has, counting a connect failure as Envoy does", func() {
		resp, err := client.Get(listenerURL(frontPort, "/missing"))
		Expect(err).NotTo(HaveOccurred())
		_, _ = io.Copy(io.Discard, resp.Body)
		Expect(resp.Body.Close()).To(Succeed())
		Expect(resp.StatusCode).To(Equal(503))
		// Envoy's client connection factory closes the server end of the
		// pair when it finds no listener; the client's connect then fails
		// (EINVAL), which the pool counts as a connect failure: UF.
		Eventually(s.Stdout).Should(ContainSubstring("FRONT /missing 503 UF envoy://nowhere/ 0 "))
		Expect(statValue(s, "cluster.absent.upstream_cx_connect_fail")).To(Equal("1"))
		Expect(statValue(s, "cluster.absent.upstream_cx_total")).To(Equal("1"))
		Expect(statValue(s, "cluster.absent.upstream_rq_pending_failure_eject")).To(Equal("1"))
	})
})

var _ = Describe("Internal listeners' configuration", func() {
	It("refuses, with their paths, what internal_upstream does not do and a bootstrap extension elsewhere", func() {
		cfg := fmt.Sprintf(`
bootstrap_extensions:
- name: envoy.bootstrap.internal_listener
  typed_config: {"@type": type.googleapis.com/envoy.extensions.bootstrap.internal_listener.v3.InternalListener}
typed_dns_resolver_config: {name: il, typed_config: {"@type": type.googleapis.com/envoy.extensions.bootstrap.internal_listener.v3.InternalListener}}
static_resources:
  clusters:
  - name: c
    connect_timeout: 1s
    transport_socket: {name: envoy.transport_sockets.internal_upstream, typed_config: {"@type": type.googleapis.com/envoy.extensions.transport_sockets.internal_upstream.v3.InternalUpstreamTransport,
      passthrough_metadata: [{kind: {route: {}}, name: r}],
      transport_socket: {name: envoy.transport_sockets.tls, typed_config: {"@type": type.googleapis.com/envoy.extensions.transport_sockets.tls.v3.UpstreamTlsContext}}}}
    load_assignment: {cluster_name: c, endpoints: [{lb_endpoints: [{endpoint: {address: {envoy_internal_address: {server_listener_name: inner}}}}]}]}
  listeners:
  - name: l
    address: {socket_address: {address: 127.0.0.1, port_value: %d}}
    filter_chains: [{filters: [{name: envoy.filters.network.tcp_proxy, typed_config: {"@type": type.googleapis.com/envoy.extensions.filters.network.tcp_proxy.v3.TcpProxy, stat_prefix: l, cluster: c}}]}]
`, freePort())
		r, _ := validate("il.yaml", cfg)
		Expect(r.ExitCode).NotTo(Equal(0))
		Expect(r.Stderr).To(ContainSubstring(`typed_dns_resolver_config.typed_config: extension "proxy.bootstrap.internal_listener" (category envoy.bootstrap) cannot be used here`))
		r, _ = validate("il.yaml", strings.Replace(cfg, "typed_dns_resolver_config: {name: il, typed_config: {\"@type\": type.googleapis.com/envoy.extensions.bootstrap.internal_listener.v3.InternalListener}}\n", "", 1))
		Expect(r.ExitCode).NotTo(Equal(0))
		const ts = "static_resources.clusters[0].transport_socket.typed_config."
		Expect(r.Stderr).To(ContainSubstring(ts + "passthrough_metadata[0].kind: metadata type is not supported: only host and cluster"))
		Expect(r.Stderr).To(ContainSubstring(ts + "transport_socket: not supported by Outrigger: only raw_buffer inside internal_upstream"))
	})
})

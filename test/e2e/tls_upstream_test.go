package e2e

import (
	"bufio"
	"crypto/tls"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"time"

	alsv3 "github.com/envoyproxy/go-control-plane/envoy/service/accesslog/v3"
	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"
	"google.golang.org/grpc"
	"google.golang.org/grpc/credentials"
)

// startTLSUpstream serves HTTPS (HTTP/1.1 and HTTP/2 by ALPN) with the
// server certificate of f until the spec ends, answering with what it saw
// of the request and its TLS connection. mutual requires a client
// certificate of f's CA. protos are the ALPN protocols it accepts
// (default h2 and http/1.1). It returns the port.
func startTLSUpstream(f *tlsFiles, mutual bool, protos ...string) int {
	GinkgoHelper()
	cert, err := tls.LoadX509KeyPair(f.cert, f.key)
	Expect(err).NotTo(HaveOccurred())
	srv := httptest.NewUnstartedServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		peer := "-"
		if cs := r.TLS.PeerCertificates; len(cs) > 0 && len(cs[0].URIs) > 0 {
			peer = cs[0].URIs[0].String()
		}
		_, _ = fmt.Fprintf(w, "sni=%s alpn=%s proto=%s peer=%s", r.TLS.ServerName, r.TLS.NegotiatedProtocol, r.Proto, peer)
	}))
	if len(protos) == 0 {
		protos = []string{"h2", "http/1.1"}
	}
	srv.EnableHTTP2 = true
	srv.TLS = &tls.Config{Certificates: []tls.Certificate{cert}, NextProtos: protos}
	if mutual {
		srv.TLS.ClientAuth = tls.RequireAndVerifyClientCert
		srv.TLS.ClientCAs = f.caPool
	}
	srv.StartTLS()
	DeferCleanup(srv.Close)
	return srv.Listener.Addr().(*net.TCPAddr).Port
}

// upstreamTLS is a cluster's TLS transport socket (YAML flow) with the
// given UpstreamTlsContext fields.
func upstreamTLS(fields string) string {
	return `{name: envoy.transport_sockets.tls, typed_config: {"@type": type.googleapis.com/envoy.extensions.transport_sockets.tls.v3.UpstreamTlsContext` + fields + `}}`
}

// tlsCluster is a cluster of one host on port with a TLS transport socket
// and extra cluster fields.
func tlsCluster(name string, port int, ts, extra string) string {
	return fmt.Sprintf("{name: %s, connect_timeout: 2s, transport_socket: %s, load_assignment: {cluster_name: %s, endpoints: [{lb_endpoints: [{endpoint: {address: {socket_address: {address: 127.0.0.1, port_value: %d}}}}]}]}%s}",
		name, ts, name, port, extra)
}

// routingHCM is an http_connection_manager routing each path prefix to
// the cluster of the same name ("/good" to good), logging with format.
func routingHCM(format string, clusters ...string) string {
	var routes []string
	for _, c := range clusters {
		routes = append(routes, fmt.Sprintf("{match: {prefix: /%s}, route: {cluster: %s}}", c, c))
	}
	return `{name: envoy.filters.network.http_connection_manager, typed_config: {"@type": type.googleapis.com/envoy.extensions.filters.network.http_connection_manager.v3.HttpConnectionManager,
  stat_prefix: ingress, access_log: [` + stdoutLog(format+"\n") + `],
  route_config: {virtual_hosts: [{name: all, domains: ["*"], routes: [` + strings.Join(routes, ", ") + `]}]},
  http_filters: [{name: envoy.filters.http.router, typed_config: {"@type": type.googleapis.com/envoy.extensions.filters.http.router.v3.Router}}]}}`
}

// unwrapFlow strips the braces of a YAML flow mapping, for fields to
// add to another.
func unwrapFlow(m string) string {
	return m[1 : len(m)-1]
}

// fetch sends a GET to url and returns the status and body.
func fetch(url string) (int, string) {
	GinkgoHelper()
	r := httpDo(&http.Client{Timeout: 10 * time.Second}, http.MethodGet, url, nil, nil)
	return r.Status, r.Body
}

var _ = Describe("Upstream TLS", func() {
	It("originates TLS with SNI, SAN validation, client certificates and ALPN; refuses bad server certificates with 503 and counts them", func() {
		dir := newDir()
		f := newTLSFiles(dir)
		Expect(os.MkdirAll(filepath.Join(dir, "other"), 0o700)).To(Succeed())
		other := newTLSFiles(filepath.Join(dir, "other"))
		up := startTLSUpstream(f, false)
		mtls := startTLSUpstream(f, true)
		plain := startTCPServer(func(c *net.TCPConn) { _, _ = c.Write([]byte("HTTP/1.1 400 Bad Request\r\n\r\n")) })
		validate := func(san string) string {
			return `, sni: a.example.com, common_tls_context: {validation_context: {trusted_ca: {filename: ` + f.ca + `}, match_typed_subject_alt_names: [{san_type: DNS, matcher: {exact: ` + san + `}}]}}`
		}
		clientCert := `, common_tls_context: {tls_certificates: [{certificate_chain: {filename: ` + f.clientCert + `}, private_key: {filename: ` + f.clientKey + `}}], validation_context: {trusted_ca: {filename: ` + f.ca + `}}}`
		port := freePort()
		chain := `{filters: [` + routingHCM("UPLOG %REQ(:PATH)% %RESPONSE_CODE% %RESPONSE_CODE_DETAILS% %UPSTREAM_TRANSPORT_FAILURE_REASON%",
			"good", "h2", "mtls", "nocert", "badsan", "untrusted", "plain") + `]}`
		s := Start(dir, tlsBootstrap(port, "", []string{chain},
			tlsCluster("good", up, upstreamTLS(validate("a.example.com")), ""),
			tlsCluster("h2", up, upstreamTLS(validate("\"*.example.com\"")), ", "+unwrapFlow(h2cOptions())),
			tlsCluster("mtls", mtls, upstreamTLS(clientCert), ""),
			tlsCluster("nocert", mtls, upstreamTLS(""), ""),
			tlsCluster("badsan", up, upstreamTLS(validate("b.example.org")), ""),
			tlsCluster("untrusted", up, upstreamTLS(`, common_tls_context: {validation_context: {trusted_ca: {filename: `+other.ca+`}}}`), ""),
			tlsCluster("plain", plain, upstreamTLS(""), ""),
		), "--file-flush-interval-msec", "50")
		base := fmt.Sprintf("http://127.0.0.1:%d/", port)

		// SNI as configured; HTTP/1.1 offered by ALPN as Envoy's HTTP/1.1
		// pool does; TLS 1.2, Envoy's client maximum.
		code, body := fetch(base + "good")
		Expect(code).To(Equal(200), body)
		Expect(body).To(Equal("sni=a.example.com alpn=http/1.1 proto=HTTP/1.1 peer=-"))
		Expect(statValue(s, "cluster.good.ssl.handshake")).To(Equal("1"))
		Expect(statValue(s, "cluster.good.ssl.versions.TLSv1.2")).To(Equal("1"))
		Expect(statValue(s, "cluster.good.ssl.curves.X25519")).To(Equal("1"))
		prom := s.Get("/stats/prometheus").Body
		Expect(prom).To(ContainSubstring(`proxy_cluster_ssl_handshake{proxy_cluster_name="good"} 1` + "\n"))
		Expect(prom).To(MatchRegexp(`proxy_cluster_ssl_ciphers\{cipher_suite="ECDHE-ECDSA-[A-Z0-9-]+",proxy_cluster_name="good"\} 1\n`))

		// An HTTP/2 cluster offers h2; a wildcard SAN matches the exact
		// matcher's name's label.
		code, body = fetch(base + "h2")
		Expect(code).To(Equal(200), body)
		Expect(body).To(Equal("sni=a.example.com alpn=h2 proto=HTTP/2.0 peer=-"))

		// Mutual TLS: the server sees the client certificate.
		code, body = fetch(base + "mtls")
		Expect(code).To(Equal(200), body)
		Expect(body).To(HaveSuffix("peer=" + clientSAN))
		code, _ = fetch(base + "nocert")
		Expect(code).To(Equal(503))

		// Refused server certificates: 503 with Envoy's details, counted
		// by cause.
		verifyFailed := "TLS_error:|268435581:SSL routines:OPENSSL_internal:CERTIFICATE_VERIFY_FAILED:TLS_error_end"
		code, body = fetch(base + "badsan")
		Expect(code).To(Equal(503))
		Expect(body).To(Equal("upstream connect error or disconnect/reset before headers. reset reason: remote connection failure, transport failure reason: " + verifyFailed))
		Eventually(s.Stdout).Should(ContainSubstring("UPLOG /badsan 503 upstream_reset_before_response_started{remote_connection_failure|" + strings.ReplaceAll(verifyFailed, " ", "_") + "} " + verifyFailed + "\n"))
		Expect(statValue(s, "cluster.badsan.ssl.fail_verify_san")).To(Equal("1"))
		Expect(statValue(s, "cluster.badsan.ssl.connection_error")).To(Equal("1"))
		Expect(statValue(s, "cluster.badsan.upstream_cx_connect_fail")).To(Equal("1"))

		code, _ = fetch(base + "untrusted")
		Expect(code).To(Equal(503))
		Expect(statValue(s, "cluster.untrusted.ssl.fail_verify_error")).To(Equal("1"))

		code, _ = fetch(base + "plain")
		Expect(code).To(Equal(503))
		Eventually(s.Stdout).Should(ContainSubstring("UPLOG /plain 503 upstream_reset_before_response_started{remote_connection_failure|TLS_error:|268435703:SSL_routines:OPENSSL_internal:WRONG_VERSION_NUMBER:TLS_error_end}"))
		Expect(statValue(s, "cluster.plain.ssl.connection_error")).To(Equal("1"))

		// Still serving.
		code, _ = fetch(base + "good")
		Expect(code).To(Equal(200))
	})

	It("picks HTTP/2 or HTTP/1.1 by ALPN for auto_config clusters, HTTP/1.1 without TLS", func() {
		dir := newDir()
		f := newTLSFiles(dir)
		both := startTLSUpstream(f, false)
		h1only := startTLSUpstream(f, false, "http/1.1")
		plain := httpTestUpstream(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			_, _ = fmt.Fprintf(w, "plain proto=%s", r.Proto)
		}), false)
		_, portText, err := net.SplitHostPort(plain)
		Expect(err).NotTo(HaveOccurred())
		plainPort, err := strconv.Atoi(portText)
		Expect(err).NotTo(HaveOccurred())
		auto := ", " + unwrapFlow(httpProtocolOptions("{auto_config: {http2_protocol_options: {}, http_protocol_options: {}}}"))
		port := freePort()
		chain := `{filters: [` + routingHCM("AUTOLOG %REQ(:PATH)% %RESPONSE_CODE% %UPSTREAM_TRANSPORT_FAILURE_REASON%", "both", "h1only", "plain") + `]}`
		s := Start(dir, tlsBootstrap(port, "", []string{chain},
			tlsCluster("both", both, upstreamTLS(""), auto),
			tlsCluster("h1only", h1only, upstreamTLS(""), auto),
			strings.TrimSuffix(tcpCluster("plain", plainPort), "}")+auto+"}",
		), "--file-flush-interval-msec", "50")
		base := fmt.Sprintf("http://127.0.0.1:%d/", port)
		for range 2 {
			code, body := fetch(base + "both")
			Expect(code).To(Equal(200), body)
			Expect(body).To(Equal("sni= alpn=h2 proto=HTTP/2.0 peer=-"))
			code, body = fetch(base + "h1only")
			Expect(code).To(Equal(200), body)
			Expect(body).To(Equal("sni= alpn=http/1.1 proto=HTTP/1.1 peer=-"))
			code, body = fetch(base + "plain")
			Expect(code).To(Equal(200), body)
			Expect(body).To(Equal("plain proto=HTTP/1.1"))
		}
		Expect(statValue(s, "cluster.both.upstream_cx_http2_total")).To(Equal("1"))
		Expect(statValue(s, "cluster.h1only.upstream_cx_http1_total")).To(Equal("1"))
	})

	It("carries a gRPC service (the access log service) over upstream TLS, offering h2", func() {
		dir := newDir()
		f := newTLSFiles(dir)
		cert, err := tls.LoadX509KeyPair(f.cert, f.key)
		Expect(err).NotTo(HaveOccurred())
		ln, err := net.Listen("tcp", "127.0.0.1:0")
		Expect(err).NotTo(HaveOccurred())
		collector := &alsCollector{}
		// gRPC's TLS server requires h2 by ALPN.
		srv := grpc.NewServer(grpc.Creds(credentials.NewTLS(&tls.Config{Certificates: []tls.Certificate{cert}})))
		alsv3.RegisterAccessLogServiceServer(srv, collector)
		go func() { _ = srv.Serve(ln) }()
		DeferCleanup(srv.Stop)

		port := freePort()
		hcm := `{name: envoy.filters.network.http_connection_manager, typed_config: {"@type": type.googleapis.com/envoy.extensions.filters.network.http_connection_manager.v3.HttpConnectionManager,
  stat_prefix: als, access_log: [{name: envoy.access_loggers.http_grpc, typed_config: ` + withType("type.googleapis.com/envoy.extensions.access_loggers.grpc.v3.HttpGrpcAccessLogConfig",
			`{common_config: {log_name: edge, transport_api_version: V3, buffer_flush_interval: 0.1s, grpc_service: {envoy_grpc: {cluster_name: als}}}}`) + `}],
  route_config: {virtual_hosts: [{name: all, domains: ["*"], routes: [{match: {prefix: /}, direct_response: {status: 202}}]}]},
  http_filters: [{name: envoy.filters.http.router, typed_config: {"@type": type.googleapis.com/envoy.extensions.filters.http.router.v3.Router}}]}}`
		ts := upstreamTLS(`, sni: localhost, common_tls_context: {validation_context: {trusted_ca: {filename: ` + f.ca + `}}}`)
		s := Start(dir, tlsBootstrap(port, "", []string{`{filters: [` + hcm + `]}`},
			tlsCluster("als", ln.Addr().(*net.TCPAddr).Port, ts, ", "+unwrapFlow(h2cOptions()))))
		code, _ := fetch(fmt.Sprintf("http://127.0.0.1:%d/over-tls", port))
		Expect(code).To(Equal(202))
		Eventually(collector.paths).Should(ContainElement("/over-tls"))
		Expect(statValue(s, "cluster.als.ssl.handshake")).To(Equal("1"))
	})

	It("carries the mesh hop: plaintext in, mutual TLS between two sidecars with SAN checks, plaintext to the app", func() {
		dir := newDir()
		f := newTLSFiles(dir)
		app := startTCPServer(func(c *net.TCPConn) {
			r := bufio.NewReader(c)
			req, err := http.ReadRequest(r)
			if err != nil {
				return
			}
			_, _ = io.Copy(io.Discard, req.Body)
			_, _ = fmt.Fprintf(c, "HTTP/1.1 200 OK\r\nContent-Length: 6\r\nConnection: close\r\n\r\napp ok")
		})
		// Sidecar B: terminates mutual TLS (the client's SPIFFE ID
		// required), forwards in plaintext to the app.
		bPort := freePort()
		bChain := `{filters: [` + routingHCM("BLOG %RESPONSE_CODE% %DOWNSTREAM_PEER_URI_SAN% %DOWNSTREAM_TLS_VERSION%", "app") + `],
  transport_socket: ` + f.transportSocket(`require_client_certificate: true,`, `, validation_context: {trusted_ca: {filename: `+f.ca+`}, match_typed_subject_alt_names: [{san_type: URI, matcher: {exact: "`+clientSAN+`"}}]}`) + `}`
		dirB := filepath.Join(dir, "b")
		Expect(os.MkdirAll(dirB, 0o700)).To(Succeed())
		b := Start(dirB, tlsBootstrap(bPort, "", []string{bChain}, tcpCluster("app", app)), "--file-flush-interval-msec", "50")

		// Sidecar A: plaintext from the app, mutual TLS to B checking B's
		// SPIFFE ID.
		aPort := freePort()
		aChain := `{filters: [` + routingHCM("ALOG %RESPONSE_CODE% %UPSTREAM_TRANSPORT_FAILURE_REASON%", "app") + `]}`
		ts := upstreamTLS(`, sni: localhost, common_tls_context: {tls_certificates: [{certificate_chain: {filename: ` + f.clientCert + `}, private_key: {filename: ` + f.clientKey + `}}],
  validation_context: {trusted_ca: {filename: ` + f.ca + `}, match_typed_subject_alt_names: [{san_type: URI, matcher: {exact: "` + serverSAN + `"}}]}}`)
		dirA := filepath.Join(dir, "a")
		Expect(os.MkdirAll(dirA, 0o700)).To(Succeed())
		a := Start(dirA, tlsBootstrap(aPort, "", []string{aChain}, tlsCluster("app", bPort, ts, "")), "--file-flush-interval-msec", "50")

		code, body := fetch(fmt.Sprintf("http://127.0.0.1:%d/app", aPort))
		Expect(code).To(Equal(200))
		Expect(body).To(Equal("app ok"))
		Eventually(b.Stdout).Should(ContainSubstring("BLOG 200 " + clientSAN + " TLSv1.2\n"))
		Eventually(a.Stdout).Should(ContainSubstring("ALOG 200 -\n"))
		Expect(statValue(a, "cluster.app.ssl.handshake")).To(Equal("1"))
		Expect(statValue(b, fmt.Sprintf("listener.127.0.0.1_%d.ssl.handshake", bPort))).To(Equal("1"))
	})

	It("carries tcp_proxy over upstream TLS and refuses renegotiation and several client certificates by path", func() {
		dir := newDir()
		f := newTLSFiles(dir)
		cert, err := tls.LoadX509KeyPair(f.cert, f.key)
		Expect(err).NotTo(HaveOccurred())
		ln, err := tls.Listen("tcp", "127.0.0.1:0", &tls.Config{Certificates: []tls.Certificate{cert}})
		Expect(err).NotTo(HaveOccurred())
		DeferCleanup(ln.Close)
		go func() {
			for {
				c, err := ln.Accept()
				if err != nil {
					return
				}
				go func() {
					defer c.Close()
					line, _ := bufio.NewReader(c).ReadString('\n')
					alpn := c.(*tls.Conn).ConnectionState().NegotiatedProtocol
					_, _ = fmt.Fprintf(c, "tls echo [%s] %s", alpn, line)
				}()
			}
		}()
		port := freePort()
		chain := `{filters: [{name: envoy.filters.network.tcp_proxy, typed_config: {"@type": type.googleapis.com/envoy.extensions.filters.network.tcp_proxy.v3.TcpProxy, stat_prefix: tcp, cluster: tls_echo}}]}`
		s := Start(dir, tlsBootstrap(port, "", []string{chain},
			tlsCluster("tls_echo", ln.Addr().(*net.TCPAddr).Port, upstreamTLS(`, common_tls_context: {validation_context: {trusted_ca: {filename: `+f.ca+`}}}`), "")))
		c := dialTCP(port)
		Expect(c.SetDeadline(time.Now().Add(10 * time.Second))).To(Succeed())
		_, err = c.Write([]byte("hello\n"))
		Expect(err).NotTo(HaveOccurred())
		line, err := bufio.NewReader(c).ReadString('\n')
		Expect(err).NotTo(HaveOccurred())
		Expect(line).To(Equal("tls echo [] hello\n"))
		Expect(statValue(s, "cluster.tls_echo.ssl.handshake")).To(Equal("1"))

		cases := map[string]struct{ ts, want string }{
			"renegotiation": {upstreamTLS(`, allow_renegotiation: true`),
				`static_resources.clusters[0].transport_socket.typed_config.allow_renegotiation: TLS renegotiation is not supported by Outrigger`},
			"two certificates": {upstreamTLS(`, common_tls_context: {tls_certificates: [{certificate_chain: {filename: ` + f.clientCert + `}, private_key: {filename: ` + f.clientKey + `}}, {certificate_chain: {filename: ` + f.clientCert + `}, private_key: {filename: ` + f.clientKey + `}}]}`),
				`static_resources.clusters[0].transport_socket.typed_config.common_tls_context.tls_certificates: Multiple TLS certificates are not supported for client contexts`},
			"downstream context": {strings.Replace(upstreamTLS(""), "UpstreamTlsContext", "DownstreamTlsContext", 1),
				`static_resources.clusters[0].transport_socket.typed_config: transport socket type envoy.extensions.transport_sockets.tls.v3.DownstreamTlsContext is not supported by Outrigger`},
		}
		for name, tc := range cases {
			path := filepath.Join(dir, strings.ReplaceAll(name, " ", "-")+".yaml")
			Expect(os.WriteFile(path, []byte(tlsBootstrap(freePort(), "", []string{chain}, tlsCluster("tls_echo", 1, tc.ts, ""))), 0o600)).To(Succeed())
			r := Run("--mode", "validate", "-c", path)
			Expect(r.ExitCode).To(Equal(1), name)
			Expect(r.Stderr).To(ContainSubstring(tc.want), name)
		}
	})
})

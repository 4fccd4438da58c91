package e2e

import (
	"context"
	"crypto/tls"
	"fmt"
	"net"
	"net/url"
	"strings"
	"sync"

	authv3 "github.com/envoyproxy/go-control-plane/envoy/service/auth/v3"
	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"
	"google.golang.org/genproto/googleapis/rpc/status"
	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"
	"google.golang.org/protobuf/types/known/structpb"
)

// tcpAuthzServer is a gRPC Authorization service for connections: it
// denies those to the destination ports in deny, allows the others with
// dynamic metadata naming the client's principal, and keeps every
// CheckRequest.
type tcpAuthzServer struct {
	authv3.UnimplementedAuthorizationServer
	mu       sync.Mutex
	deny     map[uint32]bool
	requests []*authv3.CheckRequest
}

func (a *tcpAuthzServer) Check(_ context.Context, req *authv3.CheckRequest) (*authv3.CheckResponse, error) {
	a.mu.Lock()
	defer a.mu.Unlock()
	a.requests = append(a.requests, req)
	if a.deny[req.GetAttributes().GetDestination().GetAddress().GetSocketAddress().GetPortValue()] {
		return &authv3.CheckResponse{Status: &status.Status{Code: int32(codes.PermissionDenied)}}, nil
	}
	principal := req.GetAttributes().GetSource().GetPrincipal()
	if principal == "" {
		principal = "anonymous"
	}
	md, _ := structpb.NewStruct(map[string]any{"user": principal})
	return &authv3.CheckResponse{Status: &status.Status{Code: int32(codes.OK)}, DynamicMetadata: md}, nil
}

// last returns the last CheckRequest about a connection to port.
func (a *tcpAuthzServer) last(port int) *authv3.CheckRequest {
	a.mu.Lock()
	defer a.mu.Unlock()
	for i := len(a.requests) - 1; i >= 0; i-- {
		if a.requests[i].GetAttributes().GetDestination().GetAddress().GetSocketAddress().GetPortValue() == uint32(port) {
			return a.requests[i]
		}
	}
	return nil
}

// startTCPAuthz serves a tcpAuthzServer denying the ports deny on a
// loopback port until the spec ends.
func startTCPAuthz(deny ...int) (*tcpAuthzServer, int) {
	GinkgoHelper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	Expect(err).NotTo(HaveOccurred())
	a := &tcpAuthzServer{deny: map[uint32]bool{}}
	for _, p := range deny {
		a.deny[uint32(p)] = true
	}
	srv := grpc.NewServer()
	authv3.RegisterAuthorizationServer(srv, a)
	go func() { _ = srv.Serve(ln) }()
	DeferCleanup(srv.Stop)
	return a, ln.Addr().(*net.TCPAddr).Port
}

// grpcCluster is a static HTTP/2 cluster (YAML flow) of a loopback port.
func grpcCluster(name string, port int) string {
	return strings.TrimSuffix(tcpCluster(name, port), "}") + ", typed_extension_protocol_options: {envoy.extensions.upstreams.http.v3.HttpProtocolOptions: " +
		withType("type.googleapis.com/envoy.extensions.upstreams.http.v3.HttpProtocolOptions", "{explicit_http_config: {http2_protocol_options: {}}}") + "}}"
}

// netExtAuthz is the network ext_authz filter (a YAML flow item) calling
// the service's cluster with a timeout generous for a loaded machine, and
// the extra fields (YAML flow mapping content).
func netExtAuthz(cluster, extra string) string {
	return `{name: envoy.filters.network.ext_authz, typed_config: {"@type": type.googleapis.com/envoy.extensions.filters.network.ext_authz.v3.ExtAuthz,
		grpc_service: {envoy_grpc: {cluster_name: ` + cluster + `}, timeout: 5s}, transport_api_version: V3, ` + extra + `}}`
}

// authzTCPProxy is a tcp_proxy (YAML flow item) to cluster echo that logs
// each connection to stdout as "AUTHZLOG <local address> <flags> <user>", user
// being the ext_authz dynamic metadata.
func authzTCPProxy() string {
	return `{name: envoy.filters.network.tcp_proxy, typed_config: {"@type": type.googleapis.com/envoy.extensions.filters.network.tcp_proxy.v3.TcpProxy,
		stat_prefix: front, cluster: echo,
		access_log: [{name: envoy.access_loggers.stdout, typed_config: {"@type": type.googleapis.com/envoy.extensions.access_loggers.stream.v3.StdoutAccessLog,
			log_format: {text_format_source: {inline_string: "AUTHZLOG %DOWNSTREAM_LOCAL_ADDRESS% %RESPONSE_FLAGS% %DYNAMIC_METADATA(envoy.filters.network.ext_authz:user)%\n"}}}}]}}`
}

var _ = Describe("The external authorization network filter", func() {
	It("asks the service about each connection, lets the allowed one through to tcp_proxy with the answer's metadata, closes the denied one, and follows failure_mode_allow when the service is down", func() {
		up := startTCPServer(echo)
		allowPort, denyPort, downPort, openPort := freePort(), freePort(), freePort(), freePort()
		authz, authzPort := startTCPAuthz(denyPort)
		listener := func(name string, port int, filter string) string {
			return fmt.Sprintf(`{name: %s, address: {socket_address: {address: 127.0.0.1, port_value: %d}}, filter_chains: [{filters: [%s, %s]}]}`,
				name, port, filter, authzTCPProxy())
		}
		cfg := fmt.Sprintf(`
admin: {address: {socket_address: {address: 127.0.0.1, port_value: 0}}}
node: {id: authz-node, metadata: {labels: {app: shop, tier: db}}}
static_resources:
  clusters: [%s, %s, %s]
  listeners: [%s, %s, %s, %s]
`, tcpCluster("echo", up), grpcCluster("authz", authzPort), grpcCluster("authz_down", closedPort()),
			listener("allow", allowPort, netExtAuthz("authz", "stat_prefix: allow, bootstrap_metadata_labels_key: labels")),
			listener("deny", denyPort, netExtAuthz("authz", "stat_prefix: deny")),
			listener("down", downPort, netExtAuthz("authz_down", "stat_prefix: down")),
			listener("open", openPort, netExtAuthz("authz_down", "stat_prefix: open, failure_mode_allow: true")))
		s := Start(newDir(), cfg, "--file-flush-interval-msec", "50")

		allowed := dialTCP(allowPort)
		expectEcho(allowed)
		Expect(allowed.Close()).To(Succeed()) // tcp_proxy logs the connection at its end
		req := authz.last(allowPort)
		Expect(req).NotTo(BeNil())
		Expect(req.GetAttributes().GetSource().GetAddress().GetSocketAddress().GetAddress()).To(Equal("127.0.0.1"))
		Expect(req.GetAttributes().GetDestination().GetLabels()).To(Equal(map[string]string{"app": "shop", "tier": "db"}))
		Expect(req.GetAttributes().GetSource().GetPrincipal()).To(BeEmpty(), "a plaintext connection has no principal")
		Eventually(s.Stdout).Should(ContainSubstring(fmt.Sprintf("AUTHZLOG 127.0.0.1:%d - anonymous\n", allowPort)))
		for stat, want := range map[string]string{"total": "1", "ok": "1", "denied": "0", "error": "0", "cx_closed": "0", "active": "0"} {
			Expect(statValue(s, "ext_authz.allow."+stat)).To(Equal(want), stat)
		}

		expectClosedSilently(dialTCP(denyPort))
		Expect(authz.last(denyPort)).NotTo(BeNil())
		Eventually(s.Stdout).Should(ContainSubstring(fmt.Sprintf("AUTHZLOG 127.0.0.1:%d UAEX -\n", denyPort)))
		for stat, want := range map[string]string{"total": "1", "ok": "0", "denied": "1", "cx_closed": "1", "active": "0"} {
			Expect(statValue(s, "ext_authz.deny."+stat)).To(Equal(want), stat)
		}
		Expect(statValue(s, "cluster.echo.upstream_cx_total")).To(Equal("1"), "the denied connection never reached the upstream")

		expectClosedSilently(dialTCP(downPort))
		for stat, want := range map[string]string{"total": "1", "error": "1", "cx_closed": "1", "failure_mode_allowed": "0"} {
			Expect(statValue(s, "ext_authz.down."+stat)).To(Equal(want), stat)
		}

		expectEcho(dialTCP(openPort))
		for stat, want := range map[string]string{"total": "1", "error": "1", "cx_closed": "0", "failure_mode_allowed": "1"} {
			Expect(statValue(s, "ext_authz.open."+stat)).To(Equal(want), stat)
		}
		Expect(statValue(s, "cluster.echo.upstream_cx_total")).To(Equal("2"))

		r := s.Get("/stats/prometheus")
		Expect(r.Body).To(ContainSubstring("# HELP proxy_ext_authz_deny_denied Connections the authorization service denied."))
	})

	It("in shadow_mode lets a denied connection through and records the decision in the filter state", func() {
		up := startTCPServer(echo)
		port := freePort()
		_, authzPort := startTCPAuthz(port)
		logged := `{name: envoy.filters.network.tcp_proxy, typed_config: {"@type": type.googleapis.com/envoy.extensions.filters.network.tcp_proxy.v3.TcpProxy,
		stat_prefix: front, cluster: echo,
		access_log: [{name: envoy.access_loggers.stdout, typed_config: {"@type": type.googleapis.com/envoy.extensions.access_loggers.stream.v3.StdoutAccessLog,
			log_format: {text_format_source: {inline_string: "SHADOWLOG %RESPONSE_FLAGS% %FILTER_STATE(envoy.filters.network.ext_authz:PLAIN)% field=%FILTER_STATE(envoy.filters.network.ext_authz:FIELD:check_result)%\n"}}}}]}}`
		cfg := fmt.Sprintf(`
admin: {address: {socket_address: {address: 127.0.0.1, port_value: 0}}}
static_resources:
  clusters: [%s, %s]
  listeners: [{name: shadow, address: {socket_address: {address: 127.0.0.1, port_value: %d}}, filter_chains: [{filters: [%s, %s]}]}]
`, tcpCluster("echo", up), grpcCluster("authz", authzPort), port, netExtAuthz("authz", "stat_prefix: shadow, shadow_mode: true"), logged)
		s := Start(newDir(), cfg, "--file-flush-interval-msec", "50")

		c := dialTCP(port)
		expectEcho(c)
		Expect(c.Close()).To(Succeed()) // tcp_proxy logs the connection at its end
		Eventually(s.Stdout).Should(ContainSubstring(`SHADOWLOG - {"check_result":"DENIED","status_code":403} field=DENIED` + "\n"))
		for stat, want := range map[string]string{"total": "1", "ok": "0", "denied": "1", "cx_closed": "0", "active": "0"} {
			Expect(statValue(s, "ext_authz.shadow."+stat)).To(Equal(want), stat)
		}
		Expect(statValue(s, "cluster.echo.upstream_cx_total")).To(Equal("1"), "the denied connection reached the upstream")
	})

	It("tells the service the client's principal and certificate and the SNI of a TLS connection", func() {
		dir := newDir()
		f := newTLSFiles(dir)
		up := startTCPServer(echo)
		port := freePort()
		authz, authzPort := startTCPAuthz()
		chain := `{filters: [` + netExtAuthz("authz", "stat_prefix: mtls, include_peer_certificate: true, include_tls_session: true") + `, ` + authzTCPProxy() + `],
  transport_socket: ` + f.transportSocket("require_client_certificate: true,", `, validation_context: {trusted_ca: {filename: `+f.ca+`}}`) + `}`
		s := Start(dir, tlsBootstrap(port, "", []string{chain}, tcpCluster("echo", up), grpcCluster("authz", authzPort)), "--file-flush-interval-msec", "50")

		cert, err := tls.LoadX509KeyPair(f.clientCert, f.clientKey)
		Expect(err).NotTo(HaveOccurred())
		c, err := tls.Dial("tcp", fmt.Sprintf("127.0.0.1:%d", port), &tls.Config{RootCAs: f.caPool, ServerName: "localhost", Certificates: []tls.Certificate{cert}})
		Expect(err).NotTo(HaveOccurred())
		DeferCleanup(func() { _ = c.Close() })
		expectEcho(c)
		Expect(c.Close()).To(Succeed()) // tcp_proxy logs the connection at its end

		attrs := authz.last(port).GetAttributes()
		Expect(attrs.GetSource().GetPrincipal()).To(Equal(clientSAN))
		Expect(attrs.GetDestination().GetPrincipal()).To(Equal(serverSAN))
		Expect(attrs.GetDestination().GetService()).To(Equal("localhost"), "the destination's service is the requested server name")
		Expect(attrs.GetTlsSession().GetSni()).To(Equal("localhost"))
		pemText, err := url.QueryUnescape(attrs.GetSource().GetCertificate())
		Expect(err).NotTo(HaveOccurred())
		Expect(pemText).To(Equal(string(f.client.CertPEM)))
		Eventually(s.Stdout).Should(ContainSubstring(fmt.Sprintf("AUTHZLOG 127.0.0.1:%d - %s\n", port, clientSAN)))
		Expect(statValue(s, "ext_authz.mtls.ok")).To(Equal("1"))
	})

	It("is refused at load with the path of a field Outrigger does not implement", func() {
		up := startTCPServer(echo)
		cfg := fmt.Sprintf(`
static_resources:
  clusters: [%s, %s]
  listeners: [{name: l, address: {socket_address: {address: 127.0.0.1, port_value: 0}}, filter_chains: [{filters: [%s, %s]}]}]
`, tcpCluster("echo", up), grpcCluster("authz", closedPort()), netExtAuthz("authz", "stat_prefix: x, send_tls_alert_on_denial: true"), authzTCPProxy())
		r, _ := validate("bootstrap.yaml", cfg)
		Expect(r.ExitCode).NotTo(BeZero())
		Expect(r.Stdout + r.Stderr).To(ContainSubstring("typed_config.send_tls_alert_on_denial: not supported by Outrigger: Go's crypto/tls sends no alert"))
	})
})

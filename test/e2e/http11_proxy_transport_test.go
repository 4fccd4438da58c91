package e2e

import (
	"bufio"
	"fmt"
	"io"
	"net"
	"net/http"
	"sync"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"
)

// connectProxy is an HTTP/1.1 proxy that answers CONNECT with status (200
// opens the tunnel to the request's target) and keeps the targets asked
// for.
type connectProxy struct {
	status  int
	mu      sync.Mutex
	targets []string
}

func (p *connectProxy) asked() []string {
	p.mu.Lock()
	defer p.mu.Unlock()
	return append([]string(nil), p.targets...)
}

// startConnectProxy serves a connectProxy answering status until the spec
// ends, and returns it and its port.
func startConnectProxy(status int) (*connectProxy, int) {
	GinkgoHelper()
	p := &connectProxy{status: status}
	port := startTCPServer(func(c *net.TCPConn) {
		br := bufio.NewReader(c)
		req, err := http.ReadRequest(br)
		if err != nil || req.Method != http.MethodConnect {
			return
		}
		p.mu.Lock()
		p.targets = append(p.targets, req.RequestURI)
		p.mu.Unlock()
		if p.status != http.StatusOK {
			_, _ = fmt.Fprintf(c, "HTTP/1.1 %d %s\r\nContent-Length: 0\r\n\r\n", p.status, http.StatusText(p.status))
			return
		}
		up, err := net.Dial("tcp", req.RequestURI)
		if err != nil {
			_, _ = io.WriteString(c, "HTTP/1.1 502 Bad Gateway\r\nContent-Length: 0\r\n\r\n")
			return
		}
		defer up.Close()
		_, _ = io.WriteString(c, "HTTP/1.1 200 Connection established\r\n\r\n")
		go func() {
			_, _ = io.Copy(up, br)
			_ = up.(*net.TCPConn).CloseWrite()
		}()
		_, _ = io.Copy(c, up)
		_ = c.CloseWrite()
	})
	return p, port
}

// proxiedCluster is a static cluster (YAML flow) of one loopback port with
// the http_11_proxy transport socket (fields inside its typed_config) and
// the endpoint metadata md (YAML flow mapping content, may be empty).
func proxiedCluster(name string, port int, fields, md string) string {
	return fmt.Sprintf(`{name: %s, connect_timeout: 2s,
  transport_socket: {name: envoy.transport_sockets.http_11_proxy, typed_config: {"@type": type.googleapis.com/envoy.extensions.transport_sockets.http_11_proxy.v3.Http11ProxyUpstreamTransport%s}},
  load_assignment: {cluster_name: %s, endpoints: [{lb_endpoints: [{endpoint: {address: {socket_address: {address: 127.0.0.1, port_value: %d}}}, metadata: {%s}}]}]}}`,
		name, fields, name, port, md)
}

// proxyAddressMetadata is endpoint metadata naming a loopback proxy port.
func proxyAddressMetadata(port int) string {
	return fmt.Sprintf(`typed_filter_metadata: {envoy.http11_proxy_transport_socket.proxy_address: {"@type": type.googleapis.com/envoy.config.core.v3.Address, socket_address: {address: 127.0.0.1, port_value: %d}}}`, port)
}

var _ = Describe("The http_11_proxy transport socket", func() {
	It("reaches an endpoint through the HTTP/1.1 proxy its metadata names, or the default one, with CONNECT, and fails the connection the proxy refuses", func() {
		up := startTCPServer(echo)
		viaMeta, metaPort := startConnectProxy(http.StatusOK)
		viaDefault, defaultPort := startConnectProxy(http.StatusOK)
		refusing, refusingPort := startConnectProxy(http.StatusForbidden)
		metaListener, defaultListener, refusedListener := freePort(), freePort(), freePort()
		listener := func(name string, port int, cluster string) string {
			return fmt.Sprintf(`{name: %s, address: {socket_address: {address: 127.0.0.1, port_value: %d}}, filter_chains: [{filters: [{name: envoy.filters.network.tcp_proxy, typed_config: {"@type": type.googleapis.com/envoy.extensions.filters.network.tcp_proxy.v3.TcpProxy, stat_prefix: %s, cluster: %s}}]}]}`,
				name, port, name, cluster)
		}
		defaultProxy := func(port int) string {
			return fmt.Sprintf(", default_proxy_address: {socket_address: {address: 127.0.0.1, port_value: %d}}", port)
		}
		cfg := fmt.Sprintf(`
admin: {address: {socket_address: {address: 127.0.0.1, port_value: 0}}}
static_resources:
  clusters: [%s, %s, %s]
  listeners: [%s, %s, %s]
`, proxiedCluster("meta", up, defaultProxy(refusingPort), proxyAddressMetadata(metaPort)),
			proxiedCluster("dflt", up, defaultProxy(defaultPort), ""),
			proxiedCluster("refused", up, defaultProxy(refusingPort), ""),
			listener("meta", metaListener, "meta"), listener("dflt", defaultListener, "dflt"), listener("refused", refusedListener, "refused"))
		s := Start(newDir(), cfg)

		target := fmt.Sprintf("127.0.0.1:%d", up)
		expectStreamEcho(dialTCP(metaListener), []byte("through the endpoint's proxy"))
		Expect(viaMeta.asked()).To(Equal([]string{target}))
		expectStreamEcho(dialTCP(defaultListener), []byte("through the default proxy"))
		Expect(viaDefault.asked()).To(Equal([]string{target}))
		Expect(refusing.asked()).To(BeEmpty(), "the endpoint's proxy comes before the default")

		expectClosedSilently(dialTCP(refusedListener))
		Expect(refusing.asked()).To(Equal([]string{target}))
		Expect(statValue(s, "cluster.refused.upstream_cx_connect_fail")).To(Equal("1"))
		Expect(statValue(s, "cluster.meta.upstream_cx_total")).To(Equal("1"))
	})

	It("is refused with the path of typed metadata it does not read", func() {
		r, _ := validate("b.yaml", fmt.Sprintf(`
static_resources:
  clusters: [%s]
`, proxiedCluster("c", 1, "", `typed_filter_metadata: {other.key: {"@type": type.googleapis.com/envoy.config.core.v3.Address, socket_address: {address: 127.0.0.1, port_value: 1}}}`)))
		Expect(r.ExitCode).NotTo(BeZero())
		Expect(r.Stderr).To(ContainSubstring(`static_resources.clusters[0].load_assignment.endpoints[0].lb_endpoints[0].metadata.typed_filter_metadata["other.key"]: not supported by Outrigger here`))
	})
})

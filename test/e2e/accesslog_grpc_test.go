package e2e

import (
	"fmt"
	"net"
	"net/http"
	"sync"
	"syscall"

	alsv3 "github.com/envoyproxy/go-control-plane/envoy/service/accesslog/v3"
	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"
	"google.golang.org/grpc"
)

// alsCollector is an access log service: it keeps every message it
// receives, stream by stream.
type alsCollector struct {
	alsv3.UnimplementedAccessLogServiceServer
	mu      sync.Mutex
	streams [][]*alsv3.StreamAccessLogsMessage
}

func (c *alsCollector) StreamAccessLogs(st alsv3.AccessLogService_StreamAccessLogsServer) error {
	c.mu.Lock()
	c.streams = append(c.streams, nil)
	idx := len(c.streams) - 1
	c.mu.Unlock()
	for {
		msg, err := st.Recv()
		if err != nil {
			return nil
		}
		c.mu.Lock()
		c.streams[idx] = append(c.streams[idx], msg)
		c.mu.Unlock()
	}
}

// messages returns every message received so far, in order.
func (c *alsCollector) messages() []*alsv3.StreamAccessLogsMessage {
	c.mu.Lock()
	defer c.mu.Unlock()
	var out []*alsv3.StreamAccessLogsMessage
	for _, s := range c.streams {
		out = append(out, s...)
	}
	return out
}

// paths returns the request paths of every HTTP entry received.
func (c *alsCollector) paths() []string {
	var out []string
	for _, m := range c.messages() {
		for _, e := range m.GetHttpLogs().GetLogEntry() {
			out = append(out, e.GetRequest().GetPath())
		}
	}
	return out
}

// startCollector serves an access log service on a loopback port until
// the spec ends.
func startCollector() (*alsCollector, int) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	Expect(err).NotTo(HaveOccurred())
	c := &alsCollector{}
	srv := grpc.NewServer()
	alsv3.RegisterAccessLogServiceServer(srv, c)
	go func() { _ = srv.Serve(ln) }()
	DeferCleanup(srv.Stop)
	return c, ln.Addr().(*net.TCPAddr).Port
}

// alsBootstrap is a listener on port whose requests are logged to the
// access log service on alsPort, through a cluster.
func alsBootstrap(port, alsPort int) string {
	return proxySpec{
		Port: port,
		Top:  "{node: {id: outrigger-e2e, cluster: e2e-cluster}}",
		HCM: `{stat_prefix: als, access_log: [{name: envoy.access_loggers.http_grpc, typed_config: ` +
			withType("type.googleapis.com/envoy.extensions.access_loggers.grpc.v3.HttpGrpcAccessLogConfig", `{
				common_config: {log_name: edge, transport_api_version: V3, buffer_flush_interval: 0.1s, grpc_service: {envoy_grpc: {cluster_name: als}}},
				additional_request_headers_to_log: [x-tenant]}`) + `}]}`,
		Routes:   "[{match: {prefix: /}, direct_response: {status: 202, body: {inline_string: logged}}}]",
		Clusters: []proxyCluster{{Name: "als", Port: alsPort, Extra: h2cOptions()}},
	}.YAML()
}

var _ = Describe("The gRPC access log service", func() {
	It("streams the entries of requests to the service, through its cluster, with the node and log name first", func() {
		collector, alsPort := startCollector()
		port := freePort()
		s := Start(newDir(), alsBootstrap(port, alsPort))
		for i := range 3 {
			Expect(get(port, fmt.Sprintf("/req/%d", i), http.Header{"X-Tenant": {"acme"}})).To(Equal(202))
		}
		Eventually(collector.paths).Should(ConsistOf("/req/0", "/req/1", "/req/2"))

		msgs := collector.messages()
		id := msgs[0].GetIdentifier()
		Expect(id.GetLogName()).To(Equal("edge"))
		Expect(id.GetNode().GetId()).To(Equal("outrigger-e2e"))
		Expect(id.GetNode().GetCluster()).To(Equal("e2e-cluster"))
		for _, m := range msgs[1:] {
			Expect(m.GetIdentifier()).To(BeNil(), "only a stream's first message names the proxy")
		}
		e := msgs[0].GetHttpLogs().GetLogEntry()[0]
		Expect(e.GetResponse().GetResponseCode().GetValue()).To(BeEquivalentTo(202))
		Expect(e.GetResponse().GetResponseCodeDetails()).To(Equal("direct_response"))
		Expect(e.GetRequest().GetRequestMethod().String()).To(Equal("GET"))
		Expect(e.GetRequest().GetRequestHeaders()).To(HaveKeyWithValue("x-tenant", "acme"))
		Expect(e.GetRequest().GetRequestId()).To(MatchRegexp(`^[0-9a-f-]{36}$`))
		Expect(e.GetCommonProperties().GetDownstreamRemoteAddress().GetSocketAddress().GetAddress()).To(Equal("127.0.0.1"))

		// The stream went through the cluster, and the entries are counted.
		Expect(statValue(s, "cluster.als.upstream_cx_total")).To(Equal("1"))
		Expect(statValue(s, "access_logs.grpc_access_log.logs_written")).To(Equal("3"))
		Expect(statValue(s, "access_logs.grpc_access_log.logs_dropped")).To(Equal("0"))

		// What is buffered at shutdown is delivered before the process
		// exits.
		Expect(get(port, "/at-exit", nil)).To(Equal(202))
		s.Signal(syscall.SIGINT)
		Expect(s.Wait(stopTimeout)).To(Equal(0))
		Expect(collector.paths()).To(ContainElement("/at-exit"))
	})

	It("keeps serving while the service is down, and logs the failure once", func() {
		port, alsPort := freePort(), freePort() // nothing listens on alsPort
		s := Start(newDir(), alsBootstrap(port, alsPort))
		for i := range 5 {
			Expect(get(port, fmt.Sprintf("/down/%d", i), nil)).To(Equal(202))
		}
		Eventually(s.Stderr).Should(ContainSubstring("cannot open the access log stream"))
		Expect(get(port, "/still-serving", nil)).To(Equal(202))
		Expect(statValue(s, "cluster.als.upstream_cx_connect_fail")).NotTo(Equal("0"))
	})
})

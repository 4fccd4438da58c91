package e2e

import (
	"fmt"
	"net"
	"sync"
	"time"

	lrsv3 "github.com/envoyproxy/go-control-plane/envoy/service/load_stats/v3"
	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"
	"google.golang.org/grpc"
	"google.golang.org/protobuf/types/known/durationpb"
)

// lrsServer is a Load Reporting Service: each stream gets the response
// the spec chose once its first request is in, and every request is
// kept, stream by stream.
type lrsServer struct {
	lrsv3.UnimplementedLoadReportingServiceServer
	response *lrsv3.LoadStatsResponse
	mu       sync.Mutex
	streams  [][]*lrsv3.LoadStatsRequest
}

func (l *lrsServer) StreamLoadStats(st lrsv3.LoadReportingService_StreamLoadStatsServer) error {
	l.mu.Lock()
	l.streams = append(l.streams, nil)
	idx := len(l.streams) - 1
	l.mu.Unlock()
	for {
		req, err := st.Recv()
		if err != nil {
			return nil
		}
		l.mu.Lock()
		l.streams[idx] = append(l.streams[idx], req)
		first := len(l.streams[idx]) == 1
		l.mu.Unlock()
		if first {
			if err := st.Send(l.response); err != nil {
				return nil
			}
		}
	}
}

// requests returns every request received so far, in order.
func (l *lrsServer) requests() []*lrsv3.LoadStatsRequest {
	l.mu.Lock()
	defer l.mu.Unlock()
	var out []*lrsv3.LoadStatsRequest
	for _, s := range l.streams {
		out = append(out, s...)
	}
	return out
}

// streamCount is how many streams the proxy opened.
func (l *lrsServer) streamCount() int {
	l.mu.Lock()
	defer l.mu.Unlock()
	return len(l.streams)
}

// reported sums, over every report, the requests each locality (by
// zone) of cluster name issued and completed successfully.
func (l *lrsServer) reported(name string) map[string][2]uint64 {
	out := map[string][2]uint64{}
	for _, req := range l.requests() {
		for _, cs := range req.GetClusterStats() {
			if cs.GetClusterName() != name {
				continue
			}
			for _, ls := range cs.GetUpstreamLocalityStats() {
				c := out[ls.GetLocality().GetZone()]
				c[0] += ls.GetTotalIssuedRequests()
				c[1] += ls.GetTotalSuccessfulRequests()
				out[ls.GetLocality().GetZone()] = c
			}
		}
	}
	return out
}

// reportedClusters are the clusters named in the reports, each once.
func (l *lrsServer) reportedClusters() []string {
	seen := map[string]bool{}
	var out []string
	for _, req := range l.requests() {
		for _, cs := range req.GetClusterStats() {
			if !seen[cs.GetClusterName()] {
				seen[cs.GetClusterName()] = true
				out = append(out, cs.GetClusterName())
			}
		}
	}
	return out
}

// serveLRS serves l on ln until the spec ends; stop stops it early.
func serveLRS(l *lrsServer, ln net.Listener) (stop func()) {
	srv := grpc.NewServer()
	lrsv3.RegisterLoadReportingServiceServer(srv, l)
	go func() { _ = srv.Serve(ln) }()
	DeferCleanup(srv.Stop)
	return srv.Stop
}

// startLRS serves a load reporting service answering response on a
// loopback port.
func startLRS(response *lrsv3.LoadStatsResponse) (*lrsServer, int, func()) {
	GinkgoHelper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	Expect(err).NotTo(HaveOccurred())
	l := &lrsServer{response: response}
	return l, ln.Addr().(*net.TCPAddr).Port, serveLRS(l, ln)
}

// lrsBootstrap routes /web to cluster web (hosts a1 and a2 in zone a,
// b1 in zone b) and /other to cluster other (b1), and reports load to the
// service on lrsPort through cluster lrs.
func lrsBootstrap(port, lrsPort int, h map[string]lbHost) string {
	return proxySpec{
		Port: port,
		Top: `{node: {id: lrs-e2e, cluster: e2e-cluster}, cluster_manager: {load_stats_config: {api_type: GRPC, transport_api_version: V3,
			grpc_services: [{envoy_grpc: {cluster_name: lrs}}]}}}`,
		Routes: "[{match: {prefix: /other}, route: {cluster: other}}, {match: {prefix: /}, route: {cluster: web}}]",
		Clusters: []proxyCluster{
			{Name: "web", Extra: "{" + endpoints(
				locality("a", 0, h["a1"].endpoint(""), h["a2"].endpoint("")),
				locality("b", 0, h["b1"].endpoint("")),
			) + "}"},
			{Name: "other", Extra: "{" + endpoints(locality("b", 0, h["b1"].endpoint(""))) + "}"},
			{Name: "lrs", Port: lrsPort, Extra: h2cOptions()},
		},
	}.YAML()
}

// interval is the load_reporting_interval the specs' server asks for.
var lrsInterval = durationpb.New(200 * time.Millisecond)

var _ = Describe("Load reporting (cluster_manager.load_stats_config)", func() {
	It("reports each named cluster's requests per locality, as many as were sent", func() {
		h := startLBHosts("a1", "a2", "b1")
		lrs, lrsPort, _ := startLRS(&lrsv3.LoadStatsResponse{Clusters: []string{"web"}, LoadReportingInterval: lrsInterval})
		port := freePort()
		s := Start(newDir(), lrsBootstrap(port, lrsPort, h))

		// The first request names the proxy, before the server has
		// asked for any cluster.
		Eventually(lrs.requests).ShouldNot(BeEmpty())
		first := lrs.requests()[0]
		Expect(first.GetNode().GetId()).To(Equal("lrs-e2e"))
		Expect(first.GetNode().GetClientFeatures()).To(ContainElement("envoy.lrs.supports_send_all_clusters"))
		Expect(first.GetClusterStats()).To(BeEmpty())
		// Traffic once the reports on web have started.
		Eventually(lrs.reportedClusters).Should(ContainElement("web"))

		served := servedBy(port, 30, "/web")
		Expect(servedBy(port, 4, "/other")).To(HaveKeyWithValue("b1", 4))
		Expect(served["a1"] + served["a2"] + served["b1"]).To(Equal(30))
		Eventually(func() map[string][2]uint64 { return lrs.reported("web") }).Should(Equal(map[string][2]uint64{
			"a": {uint64(served["a1"] + served["a2"]), uint64(served["a1"] + served["a2"])},
			"b": {uint64(served["b1"]), uint64(served["b1"])},
		}))
		// Only the cluster the server named is reported on, each report
		// with the interval it measured.
		Consistently(lrs.reportedClusters, "600ms").Should(Equal([]string{"web"}))
		for _, req := range lrs.requests()[1:] {
			Expect(req.GetNode().GetId()).To(Equal("lrs-e2e"))
			for _, cs := range req.GetClusterStats() {
				Expect(cs.GetLoadReportInterval().AsDuration()).To(BeNumerically(">", 0))
				for _, ls := range cs.GetUpstreamLocalityStats() {
					Expect(ls.GetLocality().GetRegion()).To(Equal("r1"))
					Expect(ls.GetPriority()).To(BeZero())
				}
			}
		}
		Expect(statValue(s, "load_reporter.requests")).To(Equal("1"))
		Expect(statValue(s, "load_reporter.errors")).To(Equal("0"))
		Expect(statValue(s, "cluster.lrs.upstream_cx_total")).To(Equal("1"))
	})

	It("reports every cluster when the server sends send_all_clusters", func() {
		h := startLBHosts("a1", "a2", "b1")
		lrs, lrsPort, _ := startLRS(&lrsv3.LoadStatsResponse{SendAllClusters: true, LoadReportingInterval: lrsInterval})
		port := freePort()
		Start(newDir(), lrsBootstrap(port, lrsPort, h))
		Eventually(lrs.reportedClusters).Should(ConsistOf("web", "other", "lrs"))
		Expect(servedBy(port, 5, "/other")).To(HaveKeyWithValue("b1", 5))
		Eventually(func() map[string][2]uint64 { return lrs.reported("other") }).Should(Equal(map[string][2]uint64{"b": {5, 5}}))
	})

	It("reports the requests drop_overloads dropped, under its category", func() {
		lrs, lrsPort, _ := startLRS(&lrsv3.LoadStatsResponse{Clusters: []string{"dropped"}, LoadReportingInterval: lrsInterval})
		port := freePort()
		Start(newDir(), proxySpec{
			Port: port,
			Top: `{cluster_manager: {load_stats_config: {api_type: GRPC, transport_api_version: V3,
				grpc_services: [{envoy_grpc: {cluster_name: lrs}}]}}}`,
			Clusters: []proxyCluster{
				{Name: "dropped", Port: freePort(), Extra: `{load_assignment: {policy: {drop_overloads: [{category: throttle, drop_percentage: {numerator: 100}}]}}}`},
				{Name: "lrs", Port: lrsPort, Extra: h2cOptions()},
			},
		}.YAML())
		Eventually(lrs.reportedClusters).Should(ContainElement("dropped"))
		for range 3 {
			Expect(get(port, "/", nil)).To(Equal(503))
		}
		dropped := func() [2]uint64 {
			var total, throttle uint64
			for _, req := range lrs.requests() {
				for _, cs := range req.GetClusterStats() {
					total += cs.GetTotalDroppedRequests()
					for _, d := range cs.GetDroppedRequests() {
						if d.GetCategory() == "throttle" {
							throttle += d.GetDroppedCount()
						}
					}
					Expect(cs.GetUpstreamLocalityStats()).To(BeEmpty(), "a dropped request reaches no host")
				}
			}
			return [2]uint64{total, throttle}
		}
		Eventually(dropped).Should(Equal([2]uint64{3, 3}))
	})

	It("opens the stream again when the server restarts, and goes on reporting", func() {
		h := startLBHosts("a1", "a2", "b1")
		lrs, lrsPort, stop := startLRS(&lrsv3.LoadStatsResponse{Clusters: []string{"web"}, LoadReportingInterval: lrsInterval})
		port := freePort()
		s := Start(newDir(), lrsBootstrap(port, lrsPort, h))
		Eventually(lrs.reportedClusters).Should(ContainElement("web"))

		stop()
		ln, err := net.Listen("tcp", fmt.Sprintf("127.0.0.1:%d", lrsPort))
		Expect(err).NotTo(HaveOccurred())
		restarted := &lrsServer{response: &lrsv3.LoadStatsResponse{Clusters: []string{"web"}, LoadReportingInterval: lrsInterval}}
		serveLRS(restarted, ln)
		// Envoy opens a lost stream again after a fixed 5 s.
		Eventually(restarted.streamCount, "20s").Should(BeNumerically(">=", 1))
		served := servedBy(port, 6, "/web")
		Eventually(func() map[string][2]uint64 { return restarted.reported("web") }, "10s").Should(Equal(map[string][2]uint64{
			"a": {uint64(served["a1"] + served["a2"]), uint64(served["a1"] + served["a2"])},
			"b": {uint64(served["b1"]), uint64(served["b1"])},
		}))
		Expect(statValue(s, "load_reporter.errors")).NotTo(Equal("0"))
		Expect(statValue(s, "load_reporter.retries")).NotTo(Equal("0"))
		Expect(lrs.streamCount()).To(Equal(1))
	})
})

package e2e

import (
	"fmt"
	"net"
	"sync"
	"syscall"

	metricssvc "github.com/envoyproxy/go-control-plane/envoy/service/metrics/v3"
	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"
	dto "github.com/prometheus/client_model/go"
	"google.golang.org/grpc"
)

// metricsServiceReceiver is a MetricsService: it keeps the messages of
// every StreamMetrics stream, one list per stream.
type metricsServiceReceiver struct {
	metricssvc.UnimplementedMetricsServiceServer
	mu      sync.Mutex
	streams [][]*metricssvc.StreamMetricsMessage
}

func (r *metricsServiceReceiver) StreamMetrics(st metricssvc.MetricsService_StreamMetricsServer) error {
	r.mu.Lock()
	i := len(r.streams)
	r.streams = append(r.streams, nil)
	r.mu.Unlock()
	for {
		m, err := st.Recv()
		if err != nil {
			return st.SendAndClose(&metricssvc.StreamMetricsResponse{})
		}
		r.mu.Lock()
		r.streams[i] = append(r.streams[i], m)
		r.mu.Unlock()
	}
}

// messages returns each stream's messages so far.
func (r *metricsServiceReceiver) messages() [][]*metricssvc.StreamMetricsMessage {
	r.mu.Lock()
	defer r.mu.Unlock()
	out := make([][]*metricssvc.StreamMetricsMessage, len(r.streams))
	for i, s := range r.streams {
		out[i] = append([]*metricssvc.StreamMetricsMessage(nil), s...)
	}
	return out
}

// families returns every family of the given name and type over every
// message of every stream, in order.
func (r *metricsServiceReceiver) families(name string, typ dto.MetricType) []*dto.MetricFamily {
	var out []*dto.MetricFamily
	for _, st := range r.messages() {
		for _, m := range st {
			for _, f := range m.GetEnvoyMetrics() {
				if f.GetName() == name && f.GetType() == typ {
					out = append(out, f)
				}
			}
		}
	}
	return out
}

// lastCounter is the value of the named counter's last family, -1 when
// none came.
func (r *metricsServiceReceiver) lastCounter(name string) float64 {
	fs := r.families(name, dto.MetricType_COUNTER)
	if len(fs) == 0 {
		return -1
	}
	return fs[len(fs)-1].GetMetric()[0].GetCounter().GetValue()
}

// serveMetricsService serves a receiver on ln until the spec ends, and
// returns the server so that a spec can stop it early.
func serveMetricsService(ln net.Listener) (*metricsServiceReceiver, *grpc.Server) {
	r := &metricsServiceReceiver{}
	srv := grpc.NewServer()
	metricssvc.RegisterMetricsServiceServer(srv, r)
	go func() { _ = srv.Serve(ln) }()
	DeferCleanup(srv.Stop)
	return r, srv
}

// metricsServiceSink is a stats_sinks entry of the metrics service sink
// to cluster ms, with more fields.
func metricsServiceSink(fields string) string {
	return `{name: envoy.stat_sinks.metrics_service, typed_config: {"@type": type.googleapis.com/envoy.config.metrics.v3.MetricsServiceConfig,
		grpc_service: {envoy_grpc: {cluster_name: ms}}, transport_api_version: V3` + fields + `}}`
}

var _ = Describe("The metrics service stats sink", func() {
	It("streams Prometheus families with the node first, and the last counts at shutdown", func() {
		ln, err := net.Listen("tcp", "127.0.0.1:0")
		Expect(err).NotTo(HaveOccurred())
		receiver, _ := serveMetricsService(ln)
		port := freePort()
		s := Start(newDir(), proxySpec{
			Port:     port,
			Top:      `{node: {id: ms-node, cluster: ms-cluster}, stats_flush_interval: 0.2s, stats_sinks: [` + metricsServiceSink("") + `]}`,
			HCM:      `{stat_prefix: msstats}`,
			Routes:   "[{match: {prefix: /}, direct_response: {status: 200}}]",
			Clusters: []proxyCluster{{Name: "ms", Port: ln.Addr().(*net.TCPAddr).Port, Extra: h2cOptions()}},
		}.YAML())
		for range 3 {
			Expect(get(port, "/", nil)).To(Equal(200))
		}
		Eventually(func() float64 { return receiver.lastCounter("http.msstats.downstream_rq_total") }).Should(Equal(3.0))
		Eventually(func() int { return len(receiver.messages()[0]) }).Should(BeNumerically(">=", 2))
		streams := receiver.messages()
		Expect(streams).To(HaveLen(1))
		id := streams[0][0].GetIdentifier().GetNode()
		Expect(id.GetId()).To(Equal("ms-node"))
		Expect(id.GetCluster()).To(Equal("ms-cluster"))
		Expect(id.GetUserAgentName()).To(Equal("outrigger"))
		Expect(streams[0][1].GetIdentifier()).To(BeNil())

		g := receiver.families("server.live", dto.MetricType_GAUGE)
		Expect(g).NotTo(BeEmpty())
		Expect(g[0].GetMetric()[0].GetGauge().GetValue()).To(Equal(1.0))
		Expect(g[0].GetMetric()[0].GetTimestampMs()).NotTo(BeZero())
		// A histogram as a summary and as a histogram by default: the
		// downstream request times of the interval that had the requests.
		Eventually(func() bool {
			for _, f := range receiver.families("http.msstats.downstream_rq_time", dto.MetricType_HISTOGRAM) {
				h := f.GetMetric()[0].GetHistogram()
				if h.GetSampleCount() > 0 {
					b := h.GetBucket()
					return len(b) > 0 && b[len(b)-1].GetCumulativeCount() <= h.GetSampleCount()
				}
			}
			return false
		}).Should(BeTrue())
		sum := receiver.families("http.msstats.downstream_rq_time", dto.MetricType_SUMMARY)
		Expect(sum).NotTo(BeEmpty())
		Expect(sum[0].GetMetric()[0].GetSummary().GetQuantile()).To(HaveLen(9))

		Expect(get(port, "/at-exit", nil)).To(Equal(200))
		s.Signal(syscall.SIGINT)
		Expect(s.Wait(stopTimeout)).To(Equal(0))
		Expect(receiver.lastCounter("http.msstats.downstream_rq_total")).To(Equal(4.0))
	})

	It("sends deltas, tags as labels, histograms only and batches, and opens a new stream when the service comes back", func() {
		ln, err := net.Listen("tcp", "127.0.0.1:0")
		Expect(err).NotTo(HaveOccurred())
		msPort := ln.Addr().(*net.TCPAddr).Port
		receiver, srv := serveMetricsService(ln)
		port := freePort()
		Start(newDir(), proxySpec{
			Port: port,
			Top: `{stats_flush_interval: 0.2s, stats_sinks: [` + metricsServiceSink(`, report_counters_as_deltas: true, emit_tags_as_labels: true,
				histogram_emit_mode: HISTOGRAM, batch_size: 10`) + `]}`,
			HCM:      `{stat_prefix: mslabels}`,
			Routes:   "[{match: {prefix: /}, direct_response: {status: 200}}]",
			Clusters: []proxyCluster{{Name: "ms", Port: msPort, Extra: h2cOptions()}},
		}.YAML())
		Expect(get(port, "/", nil)).To(Equal(200))
		// The tag-extracted name, one family per connection manager; this
		// one's by its label; the deltas add up to the requests.
		hcmDeltas := func() float64 {
			var n float64
			for _, f := range receiver.families("http.downstream_rq_total", dto.MetricType_COUNTER) {
				m := f.GetMetric()[0]
				for _, l := range m.GetLabel() {
					if l.GetName() == "proxy.http_conn_manager_prefix" && l.GetValue() == "mslabels" {
						n += m.GetCounter().GetValue()
					}
				}
			}
			return n
		}
		Eventually(hcmDeltas).Should(Equal(1.0))
		Expect(receiver.families("http.downstream_rq_time", dto.MetricType_SUMMARY)).To(BeEmpty())
		Eventually(func() []*dto.MetricFamily {
			return receiver.families("http.downstream_rq_time", dto.MetricType_HISTOGRAM)
		}).ShouldNot(BeEmpty())
		for _, m := range receiver.messages()[0] {
			Expect(len(m.GetEnvoyMetrics())).To(BeNumerically("<=", 10))
		}

		// The service goes away and comes back on the same port: the next
		// stream starts with the node again, and the deltas go on. (What
		// was flushed while it was away is lost, as in Envoy.)
		srv.Stop()
		Expect(get(port, "/", nil)).To(Equal(200))
		ln2, err := net.Listen("tcp", fmt.Sprintf("127.0.0.1:%d", msPort))
		Expect(err).NotTo(HaveOccurred())
		receiver2, _ := serveMetricsService(ln2)
		Eventually(func() int { return len(receiver2.messages()) }, "10s").Should(BeNumerically(">=", 1))
		Expect(receiver2.messages()[0][0].GetIdentifier().GetNode()).NotTo(BeNil())
		Expect(get(port, "/", nil)).To(Equal(200))
		Eventually(func() float64 {
			var n float64
			for _, f := range receiver2.families("http.downstream_rq_total", dto.MetricType_COUNTER) {
				m := f.GetMetric()[0]
				for _, l := range m.GetLabel() {
					if l.GetValue() == "mslabels" {
						n += m.GetCounter().GetValue()
					}
				}
			}
			return n
		}, "10s").Should(BeNumerically(">=", 1))
	})

	It("refuses a transport_api_version other than V3, with its path", func() {
		r, _ := validate("b.yaml", proxySpec{
			Port:     freePort(),
			Top:      `{stats_sinks: [{name: envoy.stat_sinks.metrics_service, typed_config: {"@type": type.googleapis.com/envoy.config.metrics.v3.MetricsServiceConfig, grpc_service: {envoy_grpc: {cluster_name: ms}}}}]}`,
			Routes:   "[{match: {prefix: /}, direct_response: {status: 200}}]",
			Clusters: []proxyCluster{{Name: "ms", Port: freePort(), Extra: h2cOptions()}},
		}.YAML())
		Expect(r.ExitCode).To(Equal(1))
		Expect(r.Stderr).To(ContainSubstring("stats_sinks[0].typed_config.transport_api_version: AUTO is not supported"))
	})
})

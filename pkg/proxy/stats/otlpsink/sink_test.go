package otlpsink

import (
	"context"
	"sync"
	"testing"
	"time"

	"github.com/go-logr/logr"
	colmetricspb "go.opentelemetry.io/proto/otlp/collector/metrics/v1"
	commonpb "go.opentelemetry.io/proto/otlp/common/v1"
	metricsv1 "go.opentelemetry.io/proto/otlp/metrics/v1"
	resourcepb "go.opentelemetry.io/proto/otlp/resource/v1"

	"github.com/outrigger-dev/outrigger/pkg/proxy/stats"
)

// recorder is an exporter that keeps what it is sent.
type recorder struct {
	mu   sync.Mutex
	reqs []*colmetricspb.ExportMetricsServiceRequest
	sent chan struct{}
}

func newRecorder() *recorder { return &recorder{sent: make(chan struct{}, 100)} }

func (r *recorder) export(_ context.Context, req *colmetricspb.ExportMetricsServiceRequest) (int64, error) {
	r.mu.Lock()
	r.reqs = append(r.reqs, req)
	r.mu.Unlock()
	r.sent <- struct{}{}
	return 0, nil
}

func (r *recorder) target() string { return "recorder" }
func (r *recorder) close() error   { return nil }

// wait returns the requests once n were sent.
func (r *recorder) wait(t *testing.T, n int) []*colmetricspb.ExportMetricsServiceRequest {
	t.Helper()
	for i := 0; i < n; i++ {
		select {
		case <-r.sent:
		case <-time.After(10 * time.Second):
			t.Fatalf("%d of %d requests sent", i, n)
		}
	}
	r.mu.Lock()
	defer r.mu.Unlock()
	return append([]*colmetricspb.ExportMetricsServiceRequest(nil), r.reqs...)
}

// metricsByName indexes every metric of the requests.
func metricsByName(reqs []*colmetricspb.ExportMetricsServiceRequest) map[string]*metricsv1.Metric {
	out := map[string]*metricsv1.Metric{}
	for _, r := range reqs {
		for _, rm := range r.GetResourceMetrics() {
			for _, sm := range rm.GetScopeMetrics() {
				for _, m := range sm.GetMetrics() {
					out[m.GetName()] = m
				}
			}
		}
	}
	return out
}

func attrs(kvs []*commonpb.KeyValue) map[string]string {
	out := map[string]string{}
	for _, kv := range kvs {
		out[kv.GetKey()] = kv.GetValue().GetStringValue()
	}
	return out
}

// flushes runs a sink with opts over a store: two flushes, the second after
// more traffic, and returns each flush's requests.
func flushes(t *testing.T, opts options) (first, second []*colmetricspb.ExportMetricsServiceRequest) {
	t.Helper()
	store := stats.NewStore()
	rq := store.Counter("cluster.backend.upstream_rq_total")
	cx := store.Gauge("cluster.backend.upstream_cx_active")
	tm := store.HistogramWithUnit("cluster.backend.upstream_rq_time", stats.UnitMilliseconds)
	store.Counter("cluster.backend.upstream_rq_timeout") // never used: not exported
	rec := newRecorder()
	opts.resource = &resourcepb.Resource{Attributes: []*commonpb.KeyValue{{Key: "service.name", Value: &commonpb.AnyValue{Value: &commonpb.AnyValue_StringValue{StringValue: defaultServiceName}}}}}
	sink := newSink(opts, rec, logr.Discard())
	t.Cleanup(func() { _ = sink.Close() })
	clock := time.Unix(1700000000, 0)
	f := stats.NewFlusher(store, []stats.Sink{sink}, stats.FlusherOptions{Now: func() time.Time { return clock }})

	rq.Add(3)
	cx.Set(2)
	tm.Record(3)
	tm.Record(700)
	if err := f.Flush(); err != nil {
		t.Fatal(err)
	}
	first = rec.wait(t, 1)
	rq.Add(4)
	tm.Record(5000000) // above the highest default bound (3,600,000)
	clock = clock.Add(5 * time.Second)
	if err := f.Flush(); err != nil {
		t.Fatal(err)
	}
	all := rec.wait(t, 1)
	return first, all[len(first):]
}

func TestConversionDefaults(t *testing.T) {
	first, second := flushes(t, options{tagsAsAttributes: true, tagExtractedName: true})
	if len(first) != 1 || len(second) != 1 {
		t.Fatalf("requests per flush %d and %d, want 1 each", len(first), len(second))
	}
	rm := first[0].GetResourceMetrics()
	if len(rm) != 1 || attrs(rm[0].GetResource().GetAttributes())["service.name"] != "unknown_service:envoy" {
		t.Fatalf("resource %v", rm)
	}
	m := metricsByName(first)
	if _, ok := m["cluster.upstream_rq_timeout"]; ok {
		t.Error("an unused counter was exported")
	}
	rq := m["cluster.upstream_rq_total"]
	if rq == nil {
		t.Fatalf("no cluster.upstream_rq_total among %v", m)
	}
	sum := rq.GetSum()
	if !sum.GetIsMonotonic() || sum.GetAggregationTemporality() != metricsv1.AggregationTemporality_AGGREGATION_TEMPORALITY_CUMULATIVE {
		t.Errorf("counter sum %v: want monotonic and cumulative", sum)
	}
	dp := sum.GetDataPoints()[0]
	if dp.GetAsInt() != 3 || attrs(dp.GetAttributes())["proxy.cluster_name"] != "backend" {
		t.Errorf("counter point %v: want 3 with proxy.cluster_name=backend", dp)
	}
	if got := time.Unix(0, int64(dp.GetTimeUnixNano())); !got.Equal(time.Unix(1700000000, 0)) {
		t.Errorf("time %v", got)
	}
	if g := m["cluster.upstream_cx_active"].GetGauge().GetDataPoints()[0]; g.GetAsInt() != 2 {
		t.Errorf("gauge point %v, want 2", g)
	}
	h := m["cluster.upstream_rq_time"].GetHistogram()
	hp := h.GetDataPoints()[0]
	if h.GetAggregationTemporality() != metricsv1.AggregationTemporality_AGGREGATION_TEMPORALITY_CUMULATIVE || hp.GetCount() != 2 {
		t.Fatalf("histogram %v: want cumulative with 2 values", h)
	}
	if len(hp.GetBucketCounts()) != len(hp.GetExplicitBounds())+1 || len(hp.GetExplicitBounds()) != len(stats.DefaultBuckets()) {
		t.Fatalf("%d bucket counts for %d bounds", len(hp.GetBucketCounts()), len(hp.GetExplicitBounds()))
	}
	var total uint64
	for _, c := range hp.GetBucketCounts() {
		total += c
	}
	if total != 2 {
		t.Errorf("bucket counts %v add up to %d, want 2", hp.GetBucketCounts(), total)
	}

	// The second flush: totals, and points starting at the first flush.
	m2 := metricsByName(second)
	dp2 := m2["cluster.upstream_rq_total"].GetSum().GetDataPoints()[0]
	if dp2.GetAsInt() != 7 {
		t.Errorf("cumulative counter %d, want 7", dp2.GetAsInt())
	}
	if dp2.GetStartTimeUnixNano() != dp.GetTimeUnixNano() {
		t.Errorf("second point starts at %d, want the first flush's %d", dp2.GetStartTimeUnixNano(), dp.GetTimeUnixNano())
	}
	hp2 := m2["cluster.upstream_rq_time"].GetHistogram().GetDataPoints()[0]
	if hp2.GetCount() != 3 || hp2.GetBucketCounts()[len(hp2.GetBucketCounts())-1] != 1 {
		t.Errorf("second histogram point %v: want 3 values, one above the highest bound", hp2)
	}
}

func TestConversionDeltasAndNames(t *testing.T) {
	_, second := flushes(t, options{countersAsDeltas: true, histogramsAsDeltas: true, prefix: "edge."})
	m := metricsByName(second)
	rq := m["edge.cluster.backend.upstream_rq_total"]
	if rq == nil {
		t.Fatalf("no edge.cluster.backend.upstream_rq_total among %v", m)
	}
	dp := rq.GetSum().GetDataPoints()[0]
	if rq.GetSum().GetAggregationTemporality() != metricsv1.AggregationTemporality_AGGREGATION_TEMPORALITY_DELTA || dp.GetAsInt() != 4 {
		t.Errorf("delta counter %v: want DELTA and 4", rq.GetSum())
	}
	if len(dp.GetAttributes()) != 0 {
		t.Errorf("attributes %v with emit_tags_as_attributes false", dp.GetAttributes())
	}
	hp := m["edge.cluster.backend.upstream_rq_time"].GetHistogram().GetDataPoints()[0]
	if hp.GetCount() != 1 {
		t.Errorf("delta histogram count %d, want the interval's 1", hp.GetCount())
	}
}

func TestMaxDataPointsPerRequest(t *testing.T) {
	first, _ := flushes(t, options{tagExtractedName: true, maxPoints: 2})
	if len(first) != 2 {
		t.Fatalf("%d requests for 3 points at 2 per request, want 2", len(first))
	}
	for i, r := range first {
		rm := r.GetResourceMetrics()[0]
		if attrs(rm.GetResource().GetAttributes())["service.name"] == "" {
			t.Errorf("request %d has no resource", i)
		}
		if n := len(rm.GetScopeMetrics()[0].GetMetrics()); n > 2 {
			t.Errorf("request %d holds %d points", i, n)
		}
	}
	if n := len(metricsByName(first)); n != 3 {
		t.Errorf("%d metrics over the requests, want 3", n)
	}
}

// The server's last flush is followed at once by Close: its export still
// goes out.
func TestCloseSendsTheLastFlush(t *testing.T) {
	store := stats.NewStore()
	rec := newRecorder()
	sink := newSink(options{tagExtractedName: true}, rec, logr.Discard())
	f := stats.NewFlusher(store, []stats.Sink{sink}, stats.FlusherOptions{})
	store.Counter("last.count").Add(5)
	if err := f.Flush(); err != nil {
		t.Fatal(err)
	}
	if err := f.Close(); err != nil {
		t.Fatal(err)
	}
	if dp := metricsByName(rec.wait(t, 1))["last.count"].GetSum().GetDataPoints(); len(dp) != 1 || dp[0].GetAsInt() != 5 {
		t.Fatalf("last export %v, want last.count 5", dp)
	}
}

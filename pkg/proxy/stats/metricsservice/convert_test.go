package metricsservice

import (
	"testing"

	metricsv3 "github.com/envoyproxy/go-control-plane/envoy/config/metrics/v3"
	dto "github.com/prometheus/client_model/go"
	"google.golang.org/protobuf/types/known/wrapperspb"

	"github.com/outrigger-dev/outrigger/pkg/proxy/stats"
)

// capture is a sink that converts each flush.
type capture struct {
	conv converter
	got  [][]*dto.MetricFamily
}

func (c *capture) Flush(sn *stats.Snapshot) error {
	c.got = append(c.got, c.conv.convert(sn))
	return nil
}

// twoFlushes converts two flushes of a store under cfg: 3 then 4 more
// requests, one gauge, one timing.
func twoFlushes(t *testing.T, cfg *metricsv3.MetricsServiceConfig) [][]*dto.MetricFamily {
	t.Helper()
	store := stats.NewStore()
	c := &capture{conv: converter{opts: newOptions(cfg)}}
	f := stats.NewFlusher(store, []stats.Sink{c}, stats.FlusherOptions{})
	store.Counter("cluster.backend.upstream_rq_total").Add(3)
	store.Gauge("cluster.backend.upstream_cx_active").Set(2)
	store.Histogram("cluster.backend.upstream_rq_time").Record(7)
	if err := f.Flush(); err != nil {
		t.Fatal(err)
	}
	store.Counter("cluster.backend.upstream_rq_total").Add(4)
	if err := f.Flush(); err != nil {
		t.Fatal(err)
	}
	return c.got
}

func find(fams []*dto.MetricFamily, name string, typ dto.MetricType) *dto.Metric {
	for _, f := range fams {
		if f.GetName() == name && f.GetType() == typ {
			return f.GetMetric()[0]
		}
	}
	return nil
}

func TestConvertDefaults(t *testing.T) {
	got := twoFlushes(t, &metricsv3.MetricsServiceConfig{})
	if m := find(got[1], "cluster.backend.upstream_rq_total", dto.MetricType_COUNTER); m.GetCounter().GetValue() != 7 || len(m.GetLabel()) != 0 {
		t.Errorf("counter %v: want the total 7 and no labels", m)
	}
	if m := find(got[0], "cluster.backend.upstream_cx_active", dto.MetricType_GAUGE); m.GetGauge().GetValue() != 2 || m.GetTimestampMs() == 0 {
		t.Errorf("gauge %v: want 2 with a time", m)
	}
	s := find(got[0], "cluster.backend.upstream_rq_time", dto.MetricType_SUMMARY).GetSummary()
	h := find(got[0], "cluster.backend.upstream_rq_time", dto.MetricType_HISTOGRAM).GetHistogram()
	if s.GetSampleCount() != 1 || len(s.GetQuantile()) != stats.NumQuantiles {
		t.Errorf("summary %v: want 1 value and every quantile", s)
	}
	b := h.GetBucket()
	if h.GetSampleCount() != 1 || len(b) != len(stats.DefaultBuckets()) || b[len(b)-1].GetCumulativeCount() != 1 {
		t.Errorf("histogram %v: want 1 value under the highest bound", h)
	}
	// The second flush's interval had no timing.
	if h := find(got[1], "cluster.backend.upstream_rq_time", dto.MetricType_HISTOGRAM).GetHistogram(); h.GetSampleCount() != 0 {
		t.Errorf("second interval's histogram %v: want no values", h)
	}
}

func TestConvertDeltasLabelsAndModes(t *testing.T) {
	got := twoFlushes(t, &metricsv3.MetricsServiceConfig{
		ReportCountersAsDeltas: wrapperspb.Bool(true), EmitTagsAsLabels: true,
		HistogramEmitMode: metricsv3.HistogramEmitMode_SUMMARY,
	})
	m := find(got[1], "cluster.upstream_rq_total", dto.MetricType_COUNTER)
	if m.GetCounter().GetValue() != 4 {
		t.Errorf("counter %v: want the delta 4", m)
	}
	if l := m.GetLabel(); len(l) != 1 || l[0].GetName() != "proxy.cluster_name" || l[0].GetValue() != "backend" {
		t.Errorf("labels %v: want proxy.cluster_name=backend", l)
	}
	if find(got[0], "cluster.upstream_rq_time", dto.MetricType_HISTOGRAM) != nil || find(got[0], "cluster.upstream_rq_time", dto.MetricType_SUMMARY) == nil {
		t.Error("histogram_emit_mode SUMMARY: want a summary and no histogram")
	}
}

func TestMessagesInBatches(t *testing.T) {
	s := &Sink{batch: 2}
	fams := make([]*dto.MetricFamily, 5)
	for i := range fams {
		fams[i] = &dto.MetricFamily{}
	}
	msgs := s.messages(fams)
	if len(msgs) != 3 || len(msgs[0].GetEnvoyMetrics()) != 2 || len(msgs[2].GetEnvoyMetrics()) != 1 {
		t.Fatalf("5 families at 2 a message: %d messages", len(msgs))
	}
	if n := len((&Sink{}).messages(fams)); n != 1 {
		t.Errorf("without batch_size: %d messages, want 1", n)
	}
	if n := len((&Sink{}).messages(nil)); n != 1 {
		t.Errorf("a flush with no stat: %d messages, want 1 (an empty one, as Envoy sends)", n)
	}
}

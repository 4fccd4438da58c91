package metricsservice

import (
	metricsv3 "github.com/envoyproxy/go-control-plane/envoy/config/metrics/v3"
	dto "github.com/prometheus/client_model/go"
	"google.golang.org/protobuf/proto"

	"github.com/outrigger-dev/outrigger/pkg/proxy/stats"
)

// options are the MetricsServiceConfig's conversion settings.
type options struct {
	countersAsDeltas bool
	labels           bool
	summary          bool
	histogram        bool
}

// converter turns snapshots into metric families; one flush uses it at a
// time.
type converter struct {
	opts options
	x    stats.Extraction
}

func newOptions(c *metricsv3.MetricsServiceConfig) options {
	mode := c.GetHistogramEmitMode()
	return options{
		countersAsDeltas: c.GetReportCountersAsDeltas().GetValue(),
		labels:           c.GetEmitTagsAsLabels(),
		summary:          mode != metricsv3.HistogramEmitMode_HISTOGRAM,
		histogram:        mode != metricsv3.HistogramEmitMode_SUMMARY,
	}
}

// convert builds the families of a snapshot: counters, then gauges, then
// histograms, as Envoy orders them.
func (c *converter) convert(sn *stats.Snapshot) []*dto.MetricFamily {
	ms := sn.Time().UnixMilli()
	var out []*dto.MetricFamily
	sn.Counters(func(name []byte, delta, value uint64) {
		v := value
		if c.opts.countersAsDeltas {
			v = delta
		}
		f, m := c.family(sn, name, dto.MetricType_COUNTER, ms)
		m.Counter = &dto.Counter{Value: proto.Float64(float64(v))}
		out = append(out, f)
	})
	sn.Gauges(func(name []byte, value int64) {
		f, m := c.family(sn, name, dto.MetricType_GAUGE, ms)
		m.Gauge = &dto.Gauge{Value: proto.Float64(float64(value))}
		out = append(out, f)
	})
	sn.Histograms(func(name []byte, h *stats.Histogram) {
		st := h.IntervalStatistics()
		if c.opts.summary {
			f, m := c.family(sn, name, dto.MetricType_SUMMARY, ms)
			s := &dto.Summary{SampleCount: proto.Uint64(st.SampleCount), SampleSum: proto.Float64(st.SampleSum)}
			for i, q := range stats.SupportedQuantiles() {
				s.Quantile = append(s.Quantile, &dto.Quantile{Quantile: proto.Float64(q), Value: proto.Float64(st.Quantiles[i])})
			}
			m.Summary = s
			out = append(out, f)
		}
		if c.opts.histogram {
			f, m := c.family(sn, name, dto.MetricType_HISTOGRAM, ms)
			hg := &dto.Histogram{SampleCount: proto.Uint64(st.SampleCount), SampleSum: proto.Float64(st.SampleSum)}
			for i, b := range st.Bounds {
				hg.Bucket = append(hg.Bucket, &dto.Bucket{UpperBound: proto.Float64(b), CumulativeCount: proto.Uint64(st.Buckets[i])})
			}
			m.Histogram = hg
			out = append(out, f)
		}
	})
	return out
}

// family starts the family of a stat with its one metric: the name, the
// type, the time and, with emit_tags_as_labels, the labels.
func (c *converter) family(sn *stats.Snapshot, name []byte, typ dto.MetricType, ms int64) (*dto.MetricFamily, *dto.Metric) {
	m := &dto.Metric{TimestampMs: proto.Int64(ms)}
	f := &dto.MetricFamily{Type: typ.Enum(), Metric: []*dto.Metric{m}}
	if !c.opts.labels {
		f.Name = proto.String(string(name))
		return f, m
	}
	sn.TagProducer().Extract(name, &c.x)
	f.Name = proto.String(string(c.x.Name))
	for _, t := range c.x.Tags {
		m.Label = append(m.Label, &dto.LabelPair{Name: proto.String(t.Name), Value: proto.String(string(t.Value))})
	}
	return f, m
}

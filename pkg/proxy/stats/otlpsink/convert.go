package otlpsink

import (
	"time"

	commonpb "go.opentelemetry.io/proto/otlp/common/v1"
	metricsv1 "go.opentelemetry.io/proto/otlp/metrics/v1"

	colmetricspb "go.opentelemetry.io/proto/otlp/collector/metrics/v1"
	resourcepb "go.opentelemetry.io/proto/otlp/resource/v1"

	"github.com/outrigger-dev/outrigger/pkg/proxy/stats"
)

// options are the SinkConfig's conversion settings.
type options struct {
	countersAsDeltas   bool
	histogramsAsDeltas bool
	tagsAsAttributes   bool
	tagExtractedName   bool
	// prefix is SinkConfig.prefix with its dot, or empty.
	prefix string
	// maxPoints is max_data_points_per_request (0: one request).
	maxPoints int
	resource  *resourcepb.Resource
}

// converter turns snapshots into export requests. It is used by one flush
// at a time.
type converter struct {
	opts options
	x    stats.Extraction
}

// convert builds the metrics of a snapshot taken at now, whose points start
// at since (the previous flush).
func (c *converter) convert(sn *stats.Snapshot, since, now time.Time) []*metricsv1.Metric {
	start, at := unixNano(since), unixNano(now)
	var out []*metricsv1.Metric
	sn.Gauges(func(name []byte, value int64) {
		m, attrs := c.metric(sn, name)
		m.Data = &metricsv1.Metric_Gauge{Gauge: &metricsv1.Gauge{DataPoints: []*metricsv1.NumberDataPoint{{
			Attributes: attrs, StartTimeUnixNano: start, TimeUnixNano: at,
			Value: &metricsv1.NumberDataPoint_AsInt{AsInt: value},
		}}}}
		out = append(out, m)
	})
	temporality := metricsv1.AggregationTemporality_AGGREGATION_TEMPORALITY_CUMULATIVE
	if c.opts.countersAsDeltas {
		temporality = metricsv1.AggregationTemporality_AGGREGATION_TEMPORALITY_DELTA
	}
	sn.Counters(func(name []byte, delta, value uint64) {
		m, attrs := c.metric(sn, name)
		v := value
		if c.opts.countersAsDeltas {
			v = delta
		}
		m.Data = &metricsv1.Metric_Sum{Sum: &metricsv1.Sum{
			IsMonotonic: true, AggregationTemporality: temporality,
			DataPoints: []*metricsv1.NumberDataPoint{{
				Attributes: attrs, StartTimeUnixNano: start, TimeUnixNano: at,
				Value: &metricsv1.NumberDataPoint_AsInt{AsInt: int64(v)},
			}},
		}}
		out = append(out, m)
	})
	temporality = metricsv1.AggregationTemporality_AGGREGATION_TEMPORALITY_CUMULATIVE
	if c.opts.histogramsAsDeltas {
		temporality = metricsv1.AggregationTemporality_AGGREGATION_TEMPORALITY_DELTA
	}
	sn.Histograms(func(name []byte, h *stats.Histogram) {
		m, attrs := c.metric(sn, name)
		var st stats.HistogramStatistics
		if c.opts.histogramsAsDeltas {
			st = h.IntervalStatistics()
		} else {
			st = h.CumulativeStatistics()
		}
		sum := st.SampleSum
		dp := &metricsv1.HistogramDataPoint{
			Attributes: attrs, StartTimeUnixNano: start, TimeUnixNano: at,
			Count: st.SampleCount, Sum: &sum,
			ExplicitBounds: append([]float64(nil), st.Bounds...),
			BucketCounts:   st.DisjointBuckets(make([]uint64, 0, len(st.Buckets)+1)),
		}
		// The last bucket holds the values above the highest bound.
		var below uint64
		if n := len(st.Buckets); n > 0 {
			below = st.Buckets[n-1]
		}
		dp.BucketCounts = append(dp.BucketCounts, st.SampleCount-min(below, st.SampleCount))
		m.Data = &metricsv1.Metric_Histogram{Histogram: &metricsv1.Histogram{
			AggregationTemporality: temporality, DataPoints: []*metricsv1.HistogramDataPoint{dp},
		}}
		out = append(out, m)
	})
	return out
}

// metric starts the metric of a stat: its name and its attributes.
func (c *converter) metric(sn *stats.Snapshot, name []byte) (*metricsv1.Metric, []*commonpb.KeyValue) {
	if !c.opts.tagExtractedName && !c.opts.tagsAsAttributes {
		return &metricsv1.Metric{Name: c.opts.prefix + string(name)}, nil
	}
	sn.TagProducer().Extract(name, &c.x)
	n := string(name)
	if c.opts.tagExtractedName {
		n = string(c.x.Name)
	}
	var attrs []*commonpb.KeyValue
	if c.opts.tagsAsAttributes && len(c.x.Tags) > 0 {
		attrs = make([]*commonpb.KeyValue, len(c.x.Tags))
		for i, t := range c.x.Tags {
			attrs[i] = &commonpb.KeyValue{Key: t.Name, Value: &commonpb.AnyValue{Value: &commonpb.AnyValue_StringValue{StringValue: string(t.Value)}}}
		}
	}
	return &metricsv1.Metric{Name: c.opts.prefix + n}, attrs
}

// requests puts metrics into export requests of at most maxPoints data
// points each (every metric here has one), each with the resource; with
// no metrics, one empty request, as Envoy sends at every flush.
func (c *converter) requests(metrics []*metricsv1.Metric) []*colmetricspb.ExportMetricsServiceRequest {
	if len(metrics) == 0 {
		return []*colmetricspb.ExportMetricsServiceRequest{{}}
	}
	size := len(metrics)
	if c.opts.maxPoints > 0 {
		size = c.opts.maxPoints
	}
	var reqs []*colmetricspb.ExportMetricsServiceRequest
	for len(metrics) > 0 {
		n := min(size, len(metrics))
		reqs = append(reqs, &colmetricspb.ExportMetricsServiceRequest{ResourceMetrics: []*metricsv1.ResourceMetrics{{
			Resource:     c.opts.resource,
			ScopeMetrics: []*metricsv1.ScopeMetrics{{Metrics: metrics[:n:n]}},
		}}})
		metrics = metrics[n:]
	}
	return reqs
}

// unixNano is t in nanoseconds since the epoch, as OTLP's fixed64 times.
func unixNano(t time.Time) uint64 { return uint64(t.UnixNano()) }

package admin

import (
	"math"
	"net/http"
	"strings"
	"testing"

	dto "github.com/prometheus/client_model/go"
	"github.com/prometheus/common/expfmt"
	"github.com/prometheus/common/model"
)

// scrape fetches target from a loopback admin the way Prometheus does and
// parses the answer with Prometheus' own text parser.
func scrape(t *testing.T, target string) map[string]*dto.MetricFamily {
	t.Helper()
	src := &fakeStats{rec: &recorder{}, store: sampleStore(t), useRE2: true}
	srv := newLoopbackServer(t, newStatsAdmin(t, src).Handler())
	req, err := http.NewRequestWithContext(t.Context(), http.MethodGet, srv.URL+target, nil)
	if err != nil {
		t.Fatal(err)
	}
	req.Header.Set("Accept", "text/plain;version=0.0.4;q=0.5,*/*;q=0.1")
	resp, err := srv.Client().Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer func() { _ = resp.Body.Close() }()
	if resp.StatusCode != http.StatusOK {
		t.Fatalf("status %d", resp.StatusCode)
	}
	if got := expfmt.ResponseFormat(resp.Header); got.FormatType() != expfmt.TypeTextPlain {
		t.Errorf("content type %q is not recognised as the text exposition format (%v)", resp.Header.Get("Content-Type"), got)
	}
	parser := expfmt.NewTextParser(model.UTF8Validation)
	families, err := parser.TextToMetricFamilies(resp.Body)
	if err != nil {
		t.Fatalf("Prometheus cannot parse %s: %v", target, err)
	}
	return families
}

// labels renders a metric's labels as name=value pairs, in order.
func labels(m *dto.Metric) string {
	var parts []string
	for _, l := range m.GetLabel() {
		parts = append(parts, l.GetName()+"="+l.GetValue())
	}
	return strings.Join(parts, ",")
}

func TestStatsPrometheusParses(t *testing.T) {
	for _, target := range []string{
		"/stats/prometheus?text_readouts",
		"/stats?format=prometheus&text_readouts",
	} {
		t.Run(target, func(t *testing.T) {
			families := scrape(t, target)

			wantTypes := map[string]dto.MetricType{
				"proxy_cluster_upstream_cx_total":     dto.MetricType_COUNTER,
				"proxy_cluster_upstream_rq":           dto.MetricType_COUNTER,
				"proxy_cluster_upstream_cx_active":    dto.MetricType_GAUGE,
				"proxy_server_version_text":           dto.MetricType_GAUGE,
				"proxy_control_plane_identifier":      dto.MetricType_GAUGE,
				"proxy_cluster_upstream_rq_time":      dto.MetricType_HISTOGRAM,
				"proxy_server_initialization_time_ms": dto.MetricType_HISTOGRAM,
			}
			for name, typ := range wantTypes {
				f, ok := families[name]
				if !ok {
					t.Errorf("family %s missing", name)
					continue
				}
				if f.GetType() != typ {
					t.Errorf("family %s is a %v, want %v", name, f.GetType(), typ)
				}
			}

			series := map[string]float64{}
			for name, f := range families {
				for _, m := range f.GetMetric() {
					key := name + "{" + labels(m) + "}"
					switch {
					case m.GetCounter() != nil:
						series[key] = m.GetCounter().GetValue()
					case m.GetGauge() != nil:
						series[key] = m.GetGauge().GetValue()
					}
				}
			}
			for key, want := range map[string]float64{
				"proxy_cluster_upstream_cx_total{proxy_cluster_name=c1}":                                                       10,
				"proxy_cluster_upstream_cx_total{proxy_cluster_name=c2}":                                                       20,
				"proxy_cluster_upstream_rq{proxy_response_code=503,proxy_cluster_name=c1}":                                     2,
				"proxy_http_downstream_rq_xx{proxy_response_code_class=4,proxy_http_conn_manager_prefix=admin}":                2,
				"proxy_listener_downstream_cx_total{proxy_listener_address=127.0.0.1_10000}":                                   3,
				"proxy_cluster_upstream_cx_active{proxy_cluster_name=c1}":                                                      11,
				"proxy_An_artist_plays_violin_019street{}":                                                                     1,
				"proxy_server_version_text{text_value=1.2.3}":                                                                  0,
				"proxy_control_plane_identifier{text_value=say \"hi\"\n\\back}":                                                0,
				"proxy_listener_admin_http_downstream_rq_xx{proxy_response_code_class=4,proxy_http_conn_manager_prefix=admin}": 2,
			} {
				got, ok := series[key]
				switch {
				case !ok:
					t.Errorf("series %s missing", key)
				case got != want:
					t.Errorf("series %s = %v, want %v", key, got, want)
				}
			}

			h := families["proxy_cluster_upstream_rq_time"].GetMetric()[0].GetHistogram()
			if h.GetSampleCount() != 7 {
				t.Errorf("rq_time count = %d, want 7 (every value recorded)", h.GetSampleCount())
			}
			var last uint64
			for _, b := range h.GetBucket() {
				if b.GetCumulativeCount() < last {
					t.Errorf("bucket le=%v count %d is below the previous bucket's %d", b.GetUpperBound(), b.GetCumulativeCount(), last)
				}
				last = b.GetCumulativeCount()
			}
			buckets := h.GetBucket()
			if len(buckets) != 20 {
				t.Fatalf("rq_time has %d buckets, want the 19 default bounds and +Inf", len(buckets))
			}
			if inf := buckets[19]; !math.IsInf(inf.GetUpperBound(), 1) || inf.GetCumulativeCount() != h.GetSampleCount() {
				t.Errorf("last bucket le=%v count %d, want le=+Inf count %d", inf.GetUpperBound(), inf.GetCumulativeCount(), h.GetSampleCount())
			}
		})
	}
}

func TestStatsPrometheusSummaryParses(t *testing.T) {
	families := scrape(t, "/stats/prometheus?histogram_buckets=summary&type=Histograms")
	f, ok := families["proxy_cluster_upstream_rq_time"]
	if !ok {
		t.Fatal("family proxy_cluster_upstream_rq_time missing")
	}
	if f.GetType() != dto.MetricType_SUMMARY {
		t.Fatalf("type %v, want SUMMARY", f.GetType())
	}
	s := f.GetMetric()[0].GetSummary()
	if len(s.GetQuantile()) != 9 {
		t.Errorf("%d quantiles, want 9", len(s.GetQuantile()))
	}
	// Summaries describe the last interval: 7 and 300 were recorded in it.
	if s.GetSampleCount() != 2 {
		t.Errorf("summary count = %d, want 2 (the last interval)", s.GetSampleCount())
	}
}

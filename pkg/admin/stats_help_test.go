package admin

import (
	"net/http"
	"strings"
	"testing"

	"github.com/prometheus/common/expfmt"
	"github.com/prometheus/common/model"

	"github.com/outrigger-dev/outrigger/pkg/proxy/stats"
)

func TestStatHelp(t *testing.T) {
	cases := map[string]string{
		"cluster.upstream_rq_total":                                      "Requests sent to the cluster.",
		"listener.downstream_cx_total":                                   "Connections the listener accepted.",
		"listener.admin.downstream_cx_total":                             "Connections the listener accepted.",
		"listener.admin.main_thread.downstream_cx_total":                 "Connections the listener accepted.",
		"listener.admin.http.downstream_rq_xx":                           "Responses of the listener's connection manager by status class.",
		"http2.rx_reset":                                                 "HTTP/2 streams reset by the peer.",
		"cluster.http2.rx_reset":                                         "HTTP/2 streams reset by the peer.",
		"cluster.circuit_breakers.high.rq_open":                          "1 while the request circuit breaker of the priority is open.",
		"http.compressor.gz.gzip.response.compressed":                    "Responses compressed.",
		"http.decompressor.gz.gzip.decompressor_library.zlib_data_error": "zlib errors of kind Z_DATA_ERROR.",
		"overload.proxy.overload_actions.stop_accepting_requests.active": "1 while the overload action is active, else 0.",
		"listener_manager.lds.update_rejected":                           "Configuration updates rejected as invalid.",
		"cluster_manager.cds.version_text":                               "Version of the last accepted update, as the text_value label.",
		"http.ext_authz.denied":                                          "Requests the authorization service denied.",
		"cluster.ext_authz.ok":                                           "Requests the authorization service allowed.",
		"ext_authz.tcp.denied":                                           "Connections the authorization service denied.",
		"ext_authz.tcp.active":                                           "Connection checks waiting for the authorization service's answer.",
		"cluster.grpc-web.pkg.Svc.Get.success":                           "gRPC-Web calls that ended with grpc-status 0.",
		"cluster.grpc-web.pkg.Svc.Get.14":                                "gRPC-Web calls by the grpc-status they ended with (the last name segment).",
		"http.rbac.live.policy.reads.allowed":                            "Requests the RBAC rules allowed with this policy the deciding one (track_per_rule_stats).",
		"http.rbac.policy.no-delete.shadow_denied":                       "Requests the RBAC shadow rules would have denied with this policy the deciding one (track_per_rule_stats).",
		"http_filter_name.conv.request_rules_processed":                  "Request rules the header_to_metadata filter ran (stat_prefix set).",
		"server.proxy_bug_failures":                                      "Internal errors detected in release builds.",
		"access_logs.open_telemetry_access_log.logs_written":             "OpenTelemetry access log records the collector accepted.",
		"access_logs.open_telemetry_access_log.edge.logs_written":        "OpenTelemetry access log records the collector accepted.",
		"access_logs.grpc_access_log.logs_written":                       "Access log entries written.",
		// Unknown stats, and names that only share a head or a leaf with
		// a described one, get no help.
		"cluster.no_such_stat":        "",
		"upstream_rq_total":           "",
		"server.uptime.extra":         "",
		"cluster.circuit_breakers.rq": "",
		"":                            "",
	}
	for stat, want := range cases {
		if got := statHelp(stat); got != want {
			t.Errorf("statHelp(%q) = %q, want %q", stat, got, want)
		}
	}
}

// TestStatHelpTable keeps the table well formed: one entry per name,
// sentences without the characters a HELP line escapes.
func TestStatHelpTable(t *testing.T) {
	seen := map[string]bool{}
	for _, table := range [][][2]string{serverHelp, clusterHelp, httpHelp, listenerHelp, otherHelp, subscriptionHelp} {
		for _, e := range table {
			if seen[e[0]] {
				t.Errorf("%s is described twice", e[0])
			}
			seen[e[0]] = true
			if e[1] == "" || !strings.HasSuffix(e[1], ".") || strings.ContainsAny(e[1], "\\\n") {
				t.Errorf("%s: help %q is not one plain sentence", e[0], e[1])
			}
		}
	}
}

// TestStatsPrometheusEnvoyNaming serves both Prometheus renders from an
// admin built with the envoy naming: Envoy's prefix and labels, with the
// HELP lines.
func TestStatsPrometheusEnvoyNaming(t *testing.T) {
	src := &fakeStats{rec: &recorder{}, store: sampleStore(t), useRE2: true}
	adm := New(Options{Stats: src, PrometheusNaming: stats.NamingEnvoy, Log: (&logSink{}).logger()})
	srv := newLoopbackServer(t, adm.Handler())
	for _, target := range []string{"/stats/prometheus", "/stats?format=prometheus"} {
		resp, err := srv.Client().Get(srv.URL + target)
		if err != nil {
			t.Fatal(err)
		}
		parser := expfmt.NewTextParser(model.UTF8Validation)
		families, err := parser.TextToMetricFamilies(resp.Body)
		_ = resp.Body.Close()
		if err != nil || resp.StatusCode != http.StatusOK {
			t.Fatalf("%s: status %d, %v", target, resp.StatusCode, err)
		}
		f := families["envoy_cluster_upstream_cx_total"]
		if f == nil {
			t.Fatalf("%s: no envoy_cluster_upstream_cx_total in %v", target, families)
		}
		if f.GetHelp() != "Connections opened to the cluster's hosts." {
			t.Errorf("%s: help %q", target, f.GetHelp())
		}
		if l := f.GetMetric()[0].GetLabel()[0]; l.GetName() != "envoy_cluster_name" || l.GetValue() != "c1" {
			t.Errorf("%s: label %v", target, l)
		}
		for name := range families {
			if !strings.HasPrefix(name, "envoy_") {
				t.Errorf("%s: family %s", target, name)
			}
		}
	}
}

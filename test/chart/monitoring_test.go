package chart

import (
	"encoding/json"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"testing"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
)

// metricRef is a metric or label name of either naming in a query.
var metricRef = regexp.MustCompile(`\b(proxy|envoy)_[a-z0-9_]+`)

// monitoringObjects renders values and returns the dashboard's ConfigMap
// and the PrometheusRule, nil when not rendered.
func monitoringObjects(t *testing.T, values string, set ...string) (dashboard, rule *unstructured.Unstructured) {
	t.Helper()
	args := renderArgs(t, testRelease, testNamespace, values)
	for _, s := range set {
		args = append(args, "--set", s)
	}
	for _, obj := range decodeObjects(t, mustHelm(t, args...)) {
		switch {
		case obj.GetKind() == "ConfigMap" && strings.HasSuffix(obj.GetName(), "-dashboard"):
			dashboard = obj
		case obj.GetKind() == "PrometheusRule":
			rule = obj
		}
	}
	return dashboard, rule
}

// dashboardExprs parses the dashboard of a ConfigMap and returns its
// queries, the variables' included.
func dashboardExprs(t *testing.T, cm *unstructured.Unstructured) []string {
	t.Helper()
	text, _, _ := unstructured.NestedString(cm.Object, "data", "outrigger-sidecars.json")
	var d struct {
		UID    string `json:"uid"`
		Panels []struct {
			Title   string `json:"title"`
			Targets []struct {
				Expr string `json:"expr"`
			} `json:"targets"`
		} `json:"panels"`
		Templating struct {
			List []struct {
				Definition string `json:"definition"`
			} `json:"list"`
		} `json:"templating"`
	}
	if err := json.Unmarshal([]byte(text), &d); err != nil {
		t.Fatalf("the dashboard is not JSON: %v\n%s", err, text)
	}
	if d.UID == "" || len(d.Panels) < 8 {
		t.Fatalf("dashboard uid %q with %d panels", d.UID, len(d.Panels))
	}
	var exprs []string
	for _, p := range d.Panels {
		if len(p.Targets) == 0 {
			t.Errorf("panel %q has no query", p.Title)
		}
		for _, tg := range p.Targets {
			exprs = append(exprs, tg.Expr)
		}
	}
	for _, v := range d.Templating.List {
		if v.Definition != "" {
			exprs = append(exprs, v.Definition)
		}
	}
	return exprs
}

// ruleExprs returns the alert names and expressions of a PrometheusRule.
func ruleExprs(t *testing.T, rule *unstructured.Unstructured) (alerts, exprs []string) {
	t.Helper()
	groups, _, _ := unstructured.NestedSlice(rule.Object, "spec", "groups")
	for _, g := range groups {
		rules, _, _ := unstructured.NestedSlice(g.(map[string]any), "rules")
		for _, r := range rules {
			r := r.(map[string]any)
			alert, _ := r["alert"].(string)
			expr, _ := r["expr"].(string)
			if alert == "" || expr == "" {
				t.Errorf("rule %v has no alert name or expression", r)
			}
			alerts = append(alerts, alert)
			exprs = append(exprs, expr)
		}
	}
	return alerts, exprs
}

// TestMonitoringNaming renders the dashboard and the alerts in both
// namings: every metric and label they query carries the naming's prefix,
// and the same names otherwise.
func TestMonitoringNaming(t *testing.T) {
	refs := map[string][]string{}
	for naming, values := range map[string]string{
		"envoy": filepath.Join("testdata", "monitoring-values.yaml"),
		"proxy": filepath.Join("testdata", "monitoring-proxy-values.yaml"),
	} {
		// The certificate alert in both, as the envoy values have it.
		dashboard, rule := monitoringObjects(t, values, "monitoring.prometheusRule.certExpiry.enabled=true")
		if dashboard == nil || rule == nil {
			t.Fatalf("%s: dashboard %v, rule %v", naming, dashboard != nil, rule != nil)
		}
		_, exprs := ruleExprs(t, rule)
		exprs = append(exprs, dashboardExprs(t, dashboard)...)
		var names []string
		for _, e := range exprs {
			for _, m := range metricRef.FindAllString(e, -1) {
				if !strings.HasPrefix(m, naming+"_") {
					t.Errorf("%s naming: %s in %s", naming, m, e)
				}
				names = append(names, strings.TrimPrefix(m, naming+"_"))
			}
		}
		slices.Sort(names)
		refs[naming] = slices.Compact(names)
	}
	if !slices.Equal(refs["envoy"], refs["proxy"]) {
		t.Errorf("the namings query different names:\nenvoy %v\nproxy %v", refs["envoy"], refs["proxy"])
	}
	for _, want := range []string{"http_downstream_rq_total", "cluster_upstream_rq_time_bucket", "cluster_name",
		"listener_manager_lds_update_rejected", "server_state", "server_days_until_first_cert_expiring",
		"cluster_outlier_detection_ejections_active", "cluster_outlier_detection_ejections_enforced_total"} {
		if !slices.Contains(refs["proxy"], want) {
			t.Errorf("no query reads %s", want)
		}
	}
}

// TestMonitoringOptIn: nothing is installed by default, and the
// certificate alert only with certExpiry.
func TestMonitoringOptIn(t *testing.T) {
	if d, r := monitoringObjects(t, ""); d != nil || r != nil {
		t.Errorf("the default values install monitoring objects: dashboard %v, rule %v", d != nil, r != nil)
	}
	_, rule := monitoringObjects(t, filepath.Join("testdata", "monitoring-proxy-values.yaml"))
	alerts, _ := ruleExprs(t, rule)
	if slices.Contains(alerts, "OutriggerCertificateExpiringSoon") {
		t.Errorf("the certificate alert is there without certExpiry: %v", alerts)
	}
	for _, want := range []string{"OutriggerListenerUpdateRejected", "OutriggerConnectionsRefused", "OutriggerSidecarDraining",
		"OutriggerOutlierEjections", "OutriggerOutlierEjectionsRecurring"} {
		if !slices.Contains(alerts, want) {
			t.Errorf("no alert %s in %v", want, alerts)
		}
	}
	_, rule = monitoringObjects(t, filepath.Join("testdata", "monitoring-values.yaml"))
	if alerts, _ := ruleExprs(t, rule); !slices.Contains(alerts, "OutriggerCertificateExpiringSoon") {
		t.Errorf("no certificate alert with certExpiry: %v", alerts)
	}
	dashboard, _ := monitoringObjects(t, filepath.Join("testdata", "monitoring-values.yaml"))
	if dashboard.GetNamespace() != "monitoring" || dashboard.GetLabels()["grafana_dashboard"] != "1" ||
		dashboard.GetAnnotations()["grafana_folder"] != "Outrigger" {
		t.Errorf("dashboard placed in %q with labels %v and annotations %v",
			dashboard.GetNamespace(), dashboard.GetLabels(), dashboard.GetAnnotations())
	}
}

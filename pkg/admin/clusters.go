package admin

import (
	"net/http"
	"slices"
	"strconv"
	"strings"

	adminv3 "github.com/envoyproxy/go-control-plane/envoy/admin/v3"
	clusterv3 "github.com/envoyproxy/go-control-plane/envoy/config/cluster/v3"
	corev3 "github.com/envoyproxy/go-control-plane/envoy/config/core/v3"
	typev3 "github.com/envoyproxy/go-control-plane/envoy/type/v3"
)

// clustersRoutes serves /clusters when a ClusterSource is wired.
func (a *Admin) clustersRoutes() []Route {
	if a.opts.Clusters == nil {
		return nil
	}
	return []Route{{
		Path: "/clusters",
		Help: "upstream cluster status",
		Params: []Param{
			{Name: "format", Help: "File format to use", Kind: ParamEnum, Values: []string{"text", "json"}},
		},
		Handler: a.handleClusters,
	}}
}

// handleClusters answers every cluster with its hosts. With format=json it
// is the Clusters message, defaults omitted (no clusters: {}); with any
// other format, as in Envoy, the text listing of clustersText.
func (a *Admin) handleClusters(w *Response, r *Request) {
	cs := a.opts.Clusters.Clusters()
	if cs == nil {
		cs = &adminv3.Clusters{}
	}
	if r.Params.Get("format") == "json" {
		w.Proto(cs, false)
		return
	}
	w.Text(http.StatusOK, clustersText(cs, a.opts.Clusters.IsCanary, a.opts.Clusters.Outlier))
}

// clustersText renders the text form of /clusters: the cluster manager's
// version_info line (always "static": there is no cluster discovery),
// then per cluster its observability name, the circuit-breaker thresholds
// of the default and high priorities, added_via_api and the EDS service
// name when set, then per host its stats sorted by name, its placement
// and its health. Every line is "<cluster>::<key>::<value>" or
// "<cluster>::<host>::<key>::<value>". A cluster with outlier detection
// has its outlier::* lines after the observability name, as Envoy's.
func clustersText(cs *adminv3.Clusters, isCanary func(string, *corev3.Address) bool, outlier func(string) (OutlierSummary, bool)) string {
	var b strings.Builder
	b.WriteString("version_info::static\n")
	for _, c := range cs.GetClusterStatuses() {
		name := c.GetName()
		line(&b, name, "observability_name", c.GetObservabilityName())
		if o, ok := outlier(name); ok {
			line(&b, name, "outlier::success_rate_average", outlierText(o.SuccessRateAverage))
			line(&b, name, "outlier::success_rate_ejection_threshold", outlierText(o.SuccessRateEjectionThreshold))
			line(&b, name, "outlier::local_origin_success_rate_average", outlierText(o.LocalOriginSuccessRateAverage))
			line(&b, name, "outlier::local_origin_success_rate_ejection_threshold", outlierText(o.LocalOriginSuccessRateEjectionThreshold))
		}
		for _, p := range []corev3.RoutingPriority{corev3.RoutingPriority_DEFAULT, corev3.RoutingPriority_HIGH} {
			t := thresholdsFor(c.GetCircuitBreakers(), p)
			prefix := strings.ToLower(p.String()) + "_priority::"
			line(&b, name, prefix+"max_connections", strconv.FormatUint(uint64(t.GetMaxConnections().GetValue()), 10))
			line(&b, name, prefix+"max_pending_requests", strconv.FormatUint(uint64(t.GetMaxPendingRequests().GetValue()), 10))
			line(&b, name, prefix+"max_requests", strconv.FormatUint(uint64(t.GetMaxRequests().GetValue()), 10))
			line(&b, name, prefix+"max_retries", strconv.FormatUint(uint64(t.GetMaxRetries().GetValue()), 10))
		}
		line(&b, name, "added_via_api", strconv.FormatBool(c.GetAddedViaApi()))
		if eds := c.GetEdsServiceName(); eds != "" {
			line(&b, name, "eds_service_name", eds)
		}
		for _, h := range c.GetHostStatuses() {
			hostText(&b, name, h, isCanary(name, h.GetAddress()))
		}
	}
	return b.String()
}

// hostText renders one host's lines.
func hostText(b *strings.Builder, cluster string, h *adminv3.HostStatus, canary bool) {
	prefix := cluster + "::" + addressText(h.GetAddress())
	stats := slices.Clone(h.GetStats())
	slices.SortStableFunc(stats, func(x, y *adminv3.SimpleMetric) int { return strings.Compare(x.GetName(), y.GetName()) })
	for _, st := range stats {
		line(b, prefix, st.GetName(), strconv.FormatUint(st.GetValue(), 10))
	}
	loc := h.GetLocality()
	line(b, prefix, "hostname", h.GetHostname())
	line(b, prefix, "health_flags", healthFlags(h.GetHealthStatus()))
	line(b, prefix, "weight", strconv.FormatUint(uint64(h.GetWeight()), 10))
	line(b, prefix, "region", loc.GetRegion())
	line(b, prefix, "zone", loc.GetZone())
	line(b, prefix, "sub_zone", loc.GetSubZone())
	line(b, prefix, "canary", strconv.FormatBool(canary))
	line(b, prefix, "priority", strconv.FormatUint(uint64(h.GetPriority()), 10))
	line(b, prefix, "success_rate", percentText(h.GetSuccessRate()))
	line(b, prefix, "local_origin_success_rate", percentText(h.GetLocalOriginSuccessRate()))
}

// line writes "<prefix>::<key>::<value>\n".
func line(b *strings.Builder, prefix, key, value string) {
	b.WriteString(prefix)
	b.WriteString("::")
	b.WriteString(key)
	b.WriteString("::")
	b.WriteString(value)
	b.WriteByte('\n')
}

// thresholdsFor finds the thresholds of a priority; a priority that is not
// listed shows zeros rather than inventing limits.
func thresholdsFor(cb *clusterv3.CircuitBreakers, p corev3.RoutingPriority) *clusterv3.CircuitBreakers_Thresholds {
	for _, t := range cb.GetThresholds() {
		if t.GetPriority() == p {
			return t
		}
	}
	return nil
}

// healthFlags renders a host's health as Envoy does: "healthy", or the
// failing reasons concatenated in Envoy's flag order.
func healthFlags(hs *adminv3.HostHealthStatus) string {
	var b strings.Builder
	eds := hs.GetEdsHealthStatus()
	flags := []struct {
		set  bool
		name string
	}{
		{hs.GetFailedActiveHealthCheck(), "/failed_active_hc"},
		{hs.GetFailedOutlierCheck(), "/failed_outlier_check"},
		{eds == corev3.HealthStatus_UNHEALTHY || eds == corev3.HealthStatus_TIMEOUT, "/failed_eds_health"},
		{hs.GetFailedActiveDegradedCheck(), "/degraded_active_hc"},
		{eds == corev3.HealthStatus_DEGRADED, "/degraded_eds_health"},
		{hs.GetPendingDynamicRemoval(), "/pending_dynamic_removal"},
		{hs.GetPendingActiveHc(), "/pending_active_hc"},
		{hs.GetExcludedViaImmediateHcFail(), "/excluded_via_immediate_hc_fail"},
		{hs.GetActiveHcTimeout(), "/active_hc_timeout"},
		{eds == corev3.HealthStatus_DRAINING, "/eds_status_draining"},
		{hs.GetFailedDegradedOutlierDetection(), "/degraded_outlier_detection"},
	}
	for _, f := range flags {
		if f.set {
			b.WriteString(f.name)
		}
	}
	if b.Len() == 0 {
		return "healthy"
	}
	return b.String()
}

// percentText renders a success rate or threshold as Envoy's {} format
// does (shortest form: 99.5, 100), and -1 when there is no figure.
func percentText(p *typev3.Percent) string {
	if p == nil {
		return "-1"
	}
	return strconv.FormatFloat(p.GetValue(), 'g', -1, 64)
}

// outlierText prints a cluster's success-rate figure as Envoy's {:g}
// does (six significant digits).
func outlierText(v float64) string { return strconv.FormatFloat(v, 'g', 6, 64) }

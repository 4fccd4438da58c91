package admin

import (
	"slices"
	"testing"

	adminv3 "github.com/envoyproxy/go-control-plane/envoy/admin/v3"
	clusterv3 "github.com/envoyproxy/go-control-plane/envoy/config/cluster/v3"
	corev3 "github.com/envoyproxy/go-control-plane/envoy/config/core/v3"
	typev3 "github.com/envoyproxy/go-control-plane/envoy/type/v3"
	"google.golang.org/protobuf/types/known/wrapperspb"
)

// fakeClusters is a ClusterSource with a fixed answer.
type fakeClusters struct {
	rec      *recorder
	clusters *adminv3.Clusters
	canaries map[string]bool // "cluster/ip:port"
	outlier  map[string]OutlierSummary
}

func (f fakeClusters) Clusters() *adminv3.Clusters {
	f.rec.add("Clusters.Clusters")
	return f.clusters
}

func (f fakeClusters) IsCanary(cluster string, a *corev3.Address) bool {
	return f.canaries[cluster+"/"+addressText(a)]
}

func (f fakeClusters) Outlier(cluster string) (OutlierSummary, bool) {
	o, ok := f.outlier[cluster]
	return o, ok
}

func clusterHostAddr(ip string, port uint32) *corev3.Address {
	return &corev3.Address{Address: &corev3.Address_SocketAddress{SocketAddress: &corev3.SocketAddress{
		Address: ip, PortSpecifier: &corev3.SocketAddress_PortValue{PortValue: port},
	}}}
}

func breakers(def, high [4]uint32) *clusterv3.CircuitBreakers {
	t := func(p corev3.RoutingPriority, v [4]uint32) *clusterv3.CircuitBreakers_Thresholds {
		return &clusterv3.CircuitBreakers_Thresholds{
			Priority:           p,
			MaxConnections:     wrapperspb.UInt32(v[0]),
			MaxPendingRequests: wrapperspb.UInt32(v[1]),
			MaxRequests:        wrapperspb.UInt32(v[2]),
			MaxRetries:         wrapperspb.UInt32(v[3]),
		}
	}
	return &clusterv3.CircuitBreakers{Thresholds: []*clusterv3.CircuitBreakers_Thresholds{
		t(corev3.RoutingPriority_DEFAULT, def), t(corev3.RoutingPriority_HIGH, high),
	}}
}

// hostStats are the eight per-host stats, counters then gauges, as the
// server lists them.
func hostStats(cxConnectFail, cxTotal, rqError, rqSuccess, rqTimeout, rqTotal, cxActive, rqActive uint64) []*adminv3.SimpleMetric {
	c := func(n string, v uint64) *adminv3.SimpleMetric { return &adminv3.SimpleMetric{Name: n, Value: v} }
	g := func(n string, v uint64) *adminv3.SimpleMetric {
		return &adminv3.SimpleMetric{Type: adminv3.SimpleMetric_GAUGE, Name: n, Value: v}
	}
	return []*adminv3.SimpleMetric{
		c("cx_connect_fail", cxConnectFail), c("cx_total", cxTotal), c("rq_error", rqError),
		c("rq_success", rqSuccess), c("rq_timeout", rqTimeout), c("rq_total", rqTotal),
		g("cx_active", cxActive), g("rq_active", rqActive),
	}
}

// sampleClusters has two clusters: "web" with a healthy canary host, a
// host failed by its configured health, a degraded IPv6 host in priority 1
// and a host with outlier figures; "empty" with no host and custom
// thresholds.
func sampleClusters() *adminv3.Clusters {
	defaults := [4]uint32{1024, 1024, 1024, 3}
	return &adminv3.Clusters{ClusterStatuses: []*adminv3.ClusterStatus{
		{
			Name:              "web",
			ObservabilityName: "web_stats",
			CircuitBreakers:   breakers(defaults, defaults),
			HostStatuses: []*adminv3.HostStatus{
				{
					Address:      clusterHostAddr("127.0.0.1", 8080),
					Stats:        hostStats(0, 3, 1, 41, 0, 42, 2, 1),
					HealthStatus: &adminv3.HostHealthStatus{EdsHealthStatus: corev3.HealthStatus_HEALTHY},
					Weight:       100,
					Hostname:     "a.local",
					Locality:     &corev3.Locality{Region: "eu", Zone: "eu-1", SubZone: "rack-2"},
				},
				{
					Address:      clusterHostAddr("127.0.0.2", 8080),
					Stats:        hostStats(2, 2, 0, 0, 0, 0, 0, 0),
					HealthStatus: &adminv3.HostHealthStatus{EdsHealthStatus: corev3.HealthStatus_UNHEALTHY},
					Weight:       1,
					Locality:     &corev3.Locality{Zone: "eu-1"},
				},
				{
					Address:      clusterHostAddr("::1", 8443),
					Stats:        hostStats(0, 0, 0, 0, 0, 0, 0, 0),
					HealthStatus: &adminv3.HostHealthStatus{EdsHealthStatus: corev3.HealthStatus_DEGRADED},
					Weight:       7,
					Priority:     1,
					Locality:     &corev3.Locality{},
				},
				{
					Address: clusterHostAddr("10.0.0.9", 80),
					Stats:   hostStats(0, 0, 0, 0, 0, 0, 0, 0),
					HealthStatus: &adminv3.HostHealthStatus{
						FailedActiveHealthCheck: true,
						FailedOutlierCheck:      true,
						EdsHealthStatus:         corev3.HealthStatus_DRAINING,
					},
					SuccessRate:            &typev3.Percent{Value: 99.5},
					LocalOriginSuccessRate: &typev3.Percent{Value: 100},
					Weight:                 1,
					Locality:               &corev3.Locality{},
				},
			},
		},
		{
			Name:              "empty",
			ObservabilityName: "empty",
			CircuitBreakers:   breakers([4]uint32{10, 20, 30, 4}, [4]uint32{1, 2, 3, 0}),
		},
	}}
}

func TestClustersEndpoint(t *testing.T) {
	tests := map[string]struct {
		clusters *adminv3.Clusters
		req      request
	}{
		"text":                {clusters: sampleClusters(), req: request{target: "/clusters"}},
		"text-explicit":       {clusters: sampleClusters(), req: request{target: "/clusters?format=text"}},
		"text-unknown-format": {clusters: sampleClusters(), req: request{target: "/clusters?format=yaml"}},
		"json":                {clusters: sampleClusters(), req: request{target: "/clusters?format=json"}},
		"json-form-body": {
			clusters: sampleClusters(),
			req:      request{method: "POST", target: "/clusters", body: "format=json", header: formHeader()},
		},
		"empty-text": {clusters: &adminv3.Clusters{}, req: request{target: "/clusters"}},
		"empty-json": {clusters: &adminv3.Clusters{}, req: request{target: "/clusters?format=json"}},
		"nil-json":   {req: request{target: "/clusters?format=json"}},
	}
	for name, tc := range tests {
		t.Run(name, func(t *testing.T) {
			var rec recorder
			src := fakeClusters{rec: &rec, clusters: tc.clusters, canaries: map[string]bool{"web/127.0.0.1:8080": true},
				outlier: map[string]OutlierSummary{"web": {SuccessRateAverage: 90, SuccessRateEjectionThreshold: 52.123456789, LocalOriginSuccessRateAverage: -1, LocalOriginSuccessRateEjectionThreshold: -1}}}
			ta := newTestAdmin(t, func(o *Options) { o.Clusters = src })
			resp := serve(t, ta.Handler(), tc.req)
			checkResponseGolden(t, "clusters-"+name, resp)
			if got := rec.take(); !slices.Equal(got, []string{"Clusters.Clusters"}) {
				t.Errorf("calls = %q, want one Clusters.Clusters", got)
			}
		})
	}
}

// TestClustersRouteNeedsSource: without a ClusterSource, /clusters is not
// served.
func TestClustersRouteNeedsSource(t *testing.T) {
	ta := newTestAdmin(t)
	if resp := serve(t, ta.Handler(), request{target: "/clusters"}); resp.Code != 404 {
		t.Errorf("status %d, want 404", resp.Code)
	}
}

func TestHealthFlags(t *testing.T) {
	tests := map[string]struct {
		hs   *adminv3.HostHealthStatus
		want string
	}{
		"nil":       {want: "healthy"},
		"healthy":   {hs: &adminv3.HostHealthStatus{EdsHealthStatus: corev3.HealthStatus_HEALTHY}, want: "healthy"},
		"unknown":   {hs: &adminv3.HostHealthStatus{}, want: "healthy"},
		"unhealthy": {hs: &adminv3.HostHealthStatus{EdsHealthStatus: corev3.HealthStatus_UNHEALTHY}, want: "/failed_eds_health"},
		"timeout":   {hs: &adminv3.HostHealthStatus{EdsHealthStatus: corev3.HealthStatus_TIMEOUT}, want: "/failed_eds_health"},
		"degraded":  {hs: &adminv3.HostHealthStatus{EdsHealthStatus: corev3.HealthStatus_DEGRADED}, want: "/degraded_eds_health"},
		"every flag in Envoy's order": {
			hs: &adminv3.HostHealthStatus{
				FailedActiveHealthCheck:        true,
				FailedOutlierCheck:             true,
				FailedActiveDegradedCheck:      true,
				PendingDynamicRemoval:          true,
				PendingActiveHc:                true,
				ExcludedViaImmediateHcFail:     true,
				ActiveHcTimeout:                true,
				FailedDegradedOutlierDetection: true,
				EdsHealthStatus:                corev3.HealthStatus_DRAINING,
			},
			want: "/failed_active_hc/failed_outlier_check/degraded_active_hc/pending_dynamic_removal/pending_active_hc" +
				"/excluded_via_immediate_hc_fail/active_hc_timeout/eds_status_draining/degraded_outlier_detection",
		},
	}
	for name, tc := range tests {
		t.Run(name, func(t *testing.T) {
			if got := healthFlags(tc.hs); got != tc.want {
				t.Errorf("healthFlags = %q, want %q", got, tc.want)
			}
		})
	}
}

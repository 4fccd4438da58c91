package cluster

import (
	"fmt"
	"testing"

	corev3 "github.com/envoyproxy/go-control-plane/envoy/config/core/v3"

	"github.com/outrigger-dev/outrigger/pkg/proxy/upstream"
)

// overrideYAML has three hosts: :1 healthy, :2 configured DEGRADED, :3
// configured UNHEALTHY; %s is the cluster's common_lb_config.
const overrideYAML = `
- name: up
  common_lb_config: %s
  load_assignment:
    cluster_name: up
    endpoints:
    - lb_endpoints:
      - endpoint: {address: {socket_address: {address: 127.0.0.1, port_value: 1}}}
        health_status: HEALTHY
      - endpoint: {address: {socket_address: {address: 127.0.0.1, port_value: 2}}}
        health_status: DEGRADED
      - endpoint: {address: {socket_address: {address: 127.0.0.1, port_value: 3}}}
        health_status: UNHEALTHY`

func TestPickOverrideHost(t *testing.T) {
	tests := map[string]struct {
		lbConfig string
		override upstream.OverrideHost
		// want is the picked address ("" for none, "balanced" for the
		// balancer's pick); outcome what the pick recorded.
		want    string
		outcome upstream.OverrideOutcome
	}{
		"healthy host picked": {
			lbConfig: "{}", override: upstream.OverrideHost{Address: "127.0.0.1:1"},
			want: "127.0.0.1:1", outcome: upstream.OverridePicked,
		},
		"degraded host picked by default": {
			lbConfig: "{}", override: upstream.OverrideHost{Address: "127.0.0.1:2"},
			want: "127.0.0.1:2", outcome: upstream.OverridePicked,
		},
		"unhealthy host refused by default, balanced": {
			lbConfig: "{}", override: upstream.OverrideHost{Address: "127.0.0.1:3"},
			want: "balanced", outcome: upstream.OverrideRefused,
		},
		"unhealthy host refused, strict": {
			lbConfig: "{}", override: upstream.OverrideHost{Address: "127.0.0.1:3", Strict: true},
			want: "", outcome: upstream.OverrideRefused,
		},
		"unknown host balanced": {
			lbConfig: "{}", override: upstream.OverrideHost{Address: "127.0.0.1:9"},
			want: "balanced", outcome: upstream.OverrideMissing,
		},
		"unknown host, strict": {
			lbConfig: "{}", override: upstream.OverrideHost{Address: "127.0.0.1:9", Strict: true},
			want: "", outcome: upstream.OverrideMissing,
		},
		"override_host_status allows UNHEALTHY": {
			lbConfig: "{override_host_status: {statuses: [UNHEALTHY]}}", override: upstream.OverrideHost{Address: "127.0.0.1:3", Strict: true},
			want: "127.0.0.1:3", outcome: upstream.OverridePicked,
		},
		"override_host_status without DEGRADED": {
			lbConfig: "{override_host_status: {statuses: [HEALTHY]}}", override: upstream.OverrideHost{Address: "127.0.0.1:2", Strict: true},
			want: "", outcome: upstream.OverrideRefused,
		},
		"empty override_host_status allows none": {
			lbConfig: "{override_host_status: {}}", override: upstream.OverrideHost{Address: "127.0.0.1:1", Strict: true},
			want: "", outcome: upstream.OverrideRefused,
		},
	}
	for name, tc := range tests {
		t.Run(name, func(t *testing.T) {
			m, _, _ := newTestManager(t, fmt.Sprintf(overrideYAML, tc.lbConfig))
			c := m.Cluster("up")
			pc := &upstream.PickContext{Override: tc.override}
			h := c.PickHost(pc)
			got := ""
			switch {
			case h == nil:
			case tc.want == "balanced" && h.Address != tc.override.Address:
				got = "balanced"
			default:
				got = h.Address
			}
			if got != tc.want || pc.OverrideOutcome != tc.outcome {
				t.Errorf("picked %q (outcome %d), want %q (outcome %d)", got, pc.OverrideOutcome, tc.want, tc.outcome)
			}
		})
	}
}

// A host failed by active health checking or outlier detection is
// UNHEALTHY (TIMEOUT after a timed-out check) to override_host_status,
// and one degraded by a check DEGRADED.
func TestOverrideHostRunTimeHealth(t *testing.T) {
	m, _, _ := newTestManager(t, fmt.Sprintf(overrideYAML, "{override_host_status: {statuses: [HEALTHY, DEGRADED]}}"))
	c := m.Cluster("up")
	var h1 *upstream.Host
	for _, h := range c.set.Load().hosts {
		if h.Address == "127.0.0.1:1" {
			h1 = h
		}
	}
	pick := func() upstream.OverrideOutcome {
		pc := &upstream.PickContext{Override: upstream.OverrideHost{Address: "127.0.0.1:1", Strict: true}}
		c.PickHost(pc)
		return pc.OverrideOutcome
	}
	if got := pick(); got != upstream.OverridePicked {
		t.Fatalf("healthy: outcome %d", got)
	}
	h1.SetHealthFlag(upstream.DegradedActiveHC)
	if got, st := pick(), h1.HealthStatus(); got != upstream.OverridePicked || st != corev3.HealthStatus_DEGRADED {
		t.Errorf("degraded by a check: outcome %d, status %v", got, st)
	}
	h1.SetHealthFlag(upstream.FailedOutlierCheck)
	if got, st := pick(), h1.HealthStatus(); got != upstream.OverrideRefused || st != corev3.HealthStatus_UNHEALTHY {
		t.Errorf("ejected: outcome %d, status %v", got, st)
	}
	h1.SetHealthFlag(upstream.FailedActiveHC | upstream.ActiveHCTimeout)
	if st := h1.HealthStatus(); st != corev3.HealthStatus_TIMEOUT {
		t.Errorf("timed-out check: status %v", st)
	}
}

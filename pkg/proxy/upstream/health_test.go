package upstream

import (
	"testing"

	corev3 "github.com/envoyproxy/go-control-plane/envoy/config/core/v3"
)

func TestHealthFlagsCoarseHealth(t *testing.T) {
	h := &Host{Address: "127.0.0.1:1"}
	if !h.Healthy() || h.Degraded() {
		t.Fatal("a new host without flags must be healthy and not degraded")
	}
	if !h.SetHealthFlag(PendingActiveHC | FailedActiveHC) {
		t.Error("failing the active check must report a change of coarse health")
	}
	if h.Healthy() || !h.HasHealthFlag(PendingActiveHC) {
		t.Errorf("flags %b: want unhealthy and pending", h.HealthFlags())
	}
	if !h.Excluded() {
		t.Error("a host pending its first check is excluded")
	}
	if !h.ClearHealthFlag(PendingActiveHC) || h.Healthy() || h.Excluded() {
		t.Error("clearing pending leaves the host unhealthy but no longer excluded, a change of the balancer's counts")
	}
	if !h.ClearHealthFlag(FailedActiveHC) || !h.Healthy() {
		t.Error("clearing the failure must make the host healthy again, reported as a change")
	}
	if !h.SetHealthFlag(DegradedActiveHC) || !h.Degraded() || !h.Healthy() {
		t.Error("a degraded check must make the host degraded but still healthy")
	}
	if !h.SetHealthFlag(FailedOutlierCheck) || h.Healthy() {
		t.Error("an ejection must take a degraded host out")
	}
	kept := &Host{Address: h.Address}
	kept.CopyHealthFlags(h)
	if kept.HealthFlags() != h.HealthFlags() {
		t.Errorf("copied flags %b, want %b", kept.HealthFlags(), h.HealthFlags())
	}
	eds := &Host{ConfigHealth: corev3.HealthStatus_DEGRADED}
	if !eds.Degraded() || !eds.Healthy() {
		t.Error("a host configured DEGRADED is degraded and healthy")
	}
	if (&Host{ConfigHealth: corev3.HealthStatus_DRAINING}).Healthy() {
		t.Error("a draining host is out of load balancing")
	}
}

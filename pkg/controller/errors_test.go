package controller_test

import (
	"fmt"
	"strings"
	"testing"
	"time"

	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/outrigger-dev/outrigger/pkg/apis/proxy/v1alpha1"
)

// TestUnreachablePod reports a pod whose proxy does not answer as Failed,
// the resource as Degraded, retries with backoff, and applies once the
// proxy is back.
func TestUnreachablePod(t *testing.T) {
	t.Parallel()
	h := newHarness(t)
	up := h.newPod("up", map[string]string{"app": "web"})
	down := h.newPod("down", map[string]string{"app": "web"})
	down.fake.Stop()
	h.startController(testOptions())
	o := h.override("tune", "web", map[string]string{"k": "v"})
	if err := h.c.Create(t.Context(), o); err != nil {
		t.Fatal(err)
	}
	eventually(t, 10*time.Second, func() error {
		if err := h.get(o); err != nil {
			return err
		}
		deg := meta.FindStatusCondition(o.Status.Conditions, v1alpha1.ConditionDegraded)
		if deg == nil || deg.Status != metav1.ConditionTrue || deg.Reason != v1alpha1.ReasonAdminCallFailed ||
			!strings.Contains(deg.Message, "down: ") || o.Status.Failed != 1 || o.Status.Succeeded != 1 {
			return fmt.Errorf("not degraded: %+v", o.Status)
		}
		for _, tg := range o.Status.Targets {
			if tg.PodName == "down" && (tg.Phase != v1alpha1.PhaseFailed || tg.Attempts < 2 || tg.LastAttemptTime == nil) {
				return fmt.Errorf("down not retried: %+v", tg)
			}
		}
		return nil
	})
	if value(up, "k") != "v" {
		t.Errorf("the reachable pod did not get the override")
	}
	if err := down.fake.Start(); err != nil {
		t.Fatal(err)
	}
	h.readyOverride(o, 2)
	if value(down, "k") != "v" {
		t.Errorf("the pod did not get the override once reachable")
	}
	if !meta.IsStatusConditionFalse(o.Status.Conditions, v1alpha1.ConditionDegraded) {
		t.Errorf("still degraded: %+v", o.Status.Conditions)
	}
}

// TestInvalidAdminPort reports a pod whose admin-port annotation is not a
// port as an invalid target.
func TestInvalidAdminPort(t *testing.T) {
	t.Parallel()
	h := newHarness(t)
	h.createPod("bad", map[string]string{"app": "web"}, "http", "127.0.0.1")
	h.startController(testOptions())
	hc := h.healthCheck("fail", "web", v1alpha1.HealthCheckFail)
	if err := h.c.Create(t.Context(), hc); err != nil {
		t.Fatal(err)
	}
	eventually(t, 10*time.Second, func() error {
		if err := h.get(hc); err != nil {
			return err
		}
		deg := meta.FindStatusCondition(hc.Status.Conditions, v1alpha1.ConditionDegraded)
		if deg == nil || deg.Reason != v1alpha1.ReasonInvalidTarget || len(hc.Status.Targets) != 1 ||
			!strings.Contains(hc.Status.Targets[0].Message, `annotation proxy.outrigger.dev/admin-port: "http" is not a port number`) {
			return fmt.Errorf("not reported: %+v", hc.Status)
		}
		return nil
	})
}

// TestNoTargets reports a selector that matches no running proxy.
func TestNoTargets(t *testing.T) {
	t.Parallel()
	h := newHarness(t)
	h.createPod("pending-ip", map[string]string{"app": "web"}, "9901", "")
	h.startController(testOptions())
	hc := h.healthCheck("fail", "web", v1alpha1.HealthCheckFail)
	if err := h.c.Create(t.Context(), hc); err != nil {
		t.Fatal(err)
	}
	eventually(t, 10*time.Second, func() error {
		if err := h.get(hc); err != nil {
			return err
		}
		ready := meta.FindStatusCondition(hc.Status.Conditions, v1alpha1.ConditionReady)
		if ready == nil || ready.Reason != v1alpha1.ReasonNoTargets || hc.Status.Selected != 0 {
			return fmt.Errorf("not reported: %+v", hc.Status)
		}
		return nil
	})
}

// TestInvalidSpecsRefused checks that the API server refuses what the
// controller could not carry out, with a message that says why.
func TestInvalidSpecsRefused(t *testing.T) {
	t.Parallel()
	h := newHarness(t)
	dur := func(d time.Duration) *metav1.Duration { return &metav1.Duration{Duration: d} }
	ns := h.ns
	meta := func(name string) metav1.ObjectMeta { return metav1.ObjectMeta{Name: name, Namespace: ns} }
	cases := map[string]struct {
		obj     client.Object
		wantErr string
	}{
		"empty selector": {
			obj:     &v1alpha1.ProxyHealthCheck{ObjectMeta: meta("a"), Spec: v1alpha1.ProxyHealthCheckSpec{State: v1alpha1.HealthCheckFail}},
			wantErr: "podSelector must set matchLabels or matchExpressions",
		},
		"unknown health-check state": {
			obj:     &v1alpha1.ProxyHealthCheck{ObjectMeta: meta("b"), Spec: v1alpha1.ProxyHealthCheckSpec{Target: target("web"), State: "Maybe"}},
			wantErr: `spec.state: Unsupported value: "Maybe"`,
		},
		"maxConcurrent zero is defaulted, negative refused": {
			obj: &v1alpha1.ProxyHealthCheck{ObjectMeta: meta("c"), Spec: v1alpha1.ProxyHealthCheckSpec{
				Target: target("web"), State: v1alpha1.HealthCheckFail, Rollout: v1alpha1.Rollout{MaxConcurrent: -1}}},
			wantErr: "spec.rollout.maxConcurrent: Invalid value: -1",
		},
		"override that sets nothing": {
			obj:     &v1alpha1.ProxyRuntimeOverride{ObjectMeta: meta("d"), Spec: v1alpha1.ProxyRuntimeOverrideSpec{Target: target("web")}},
			wantErr: "set runtime or logging",
		},
		"empty runtime value": {
			obj: &v1alpha1.ProxyRuntimeOverride{ObjectMeta: meta("e"), Spec: v1alpha1.ProxyRuntimeOverrideSpec{
				Target: target("web"), Runtime: map[string]string{"k": ""}}},
			wantErr: "runtime keys must be 1 to 256 characters and values 1 to 1024 characters",
		},
		"ttl with onDelete Keep": {
			obj: &v1alpha1.ProxyRuntimeOverride{ObjectMeta: meta("f"), Spec: v1alpha1.ProxyRuntimeOverrideSpec{
				Target: target("web"), Runtime: map[string]string{"k": "v"}, TTL: dur(time.Minute), OnDelete: v1alpha1.OnDeleteKeep}},
			wantErr: "ttl needs onDelete: Revert",
		},
		"unknown log level": {
			obj: &v1alpha1.ProxyRuntimeOverride{ObjectMeta: meta("g"), Spec: v1alpha1.ProxyRuntimeOverrideSpec{
				Target: target("web"), Logging: &v1alpha1.LoggingOverride{Level: "loud"}}},
			wantErr: `spec.logging.level: Unsupported value: "loud"`,
		},
		"logger name with a comma": {
			obj: &v1alpha1.ProxyRuntimeOverride{ObjectMeta: meta("h"), Spec: v1alpha1.ProxyRuntimeOverrideSpec{
				Target: target("web"), Logging: &v1alpha1.LoggingOverride{Components: map[string]v1alpha1.LogLevel{"a,b": "debug"}}}},
			wantErr: "component names must be 1 to 256 characters without",
		},
		"drain delay without failing health checks": {
			obj: &v1alpha1.ProxyDrain{ObjectMeta: meta("i"), Spec: v1alpha1.ProxyDrainSpec{
				Target: target("web"), HealthCheckFailDelay: dur(time.Second)}},
			wantErr: "healthCheckFailDelay needs failHealthChecks: true",
		},
		"drain timeout zero": {
			obj: &v1alpha1.ProxyDrain{ObjectMeta: meta("j"), Spec: v1alpha1.ProxyDrainSpec{
				Target: target("web"), Completion: v1alpha1.DrainCompletion{Timeout: metav1.Duration{Duration: -time.Second}}}},
			wantErr: "timeout must be more than 0s and at most 24h",
		},
		"negative connection target": {
			obj: &v1alpha1.ProxyDrain{ObjectMeta: meta("k"), Spec: v1alpha1.ProxyDrainSpec{
				Target: target("web"), Completion: v1alpha1.DrainCompletion{ActiveConnections: -1, Timeout: metav1.Duration{Duration: time.Minute}}}},
			wantErr: "spec.completion.activeConnections: Invalid value: -1",
		},
		"unknown onDelete": {
			obj: &v1alpha1.ProxyDrain{ObjectMeta: meta("l"), Spec: v1alpha1.ProxyDrainSpec{
				Target: target("web"), OnDelete: "Maybe"}},
			wantErr: `spec.onDelete: Unsupported value: "Maybe"`,
		},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			err := h.c.Create(t.Context(), tc.obj)
			if err == nil || !strings.Contains(err.Error(), tc.wantErr) {
				t.Fatalf("got %v, want an error containing %q", err, tc.wantErr)
			}
		})
	}

	t.Run("drain target is immutable", func(t *testing.T) {
		d := h.drain("immutable", "web")
		if err := h.c.Create(t.Context(), d); err != nil {
			t.Fatal(err)
		}
		d.Spec.Target = target("other")
		err := h.c.Update(t.Context(), d)
		if err == nil || !strings.Contains(err.Error(), "target is immutable") {
			t.Fatalf("got %v, want target is immutable", err)
		}
	})
	t.Run("defaults", func(t *testing.T) {
		o := h.override("defaults", "web", map[string]string{"k": "v"})
		if err := h.c.Create(t.Context(), o); err != nil {
			t.Fatal(err)
		}
		if o.Spec.Rollout.MaxConcurrent != 10 || o.Spec.OnDelete != v1alpha1.OnDeleteRevert || o.Spec.Target.Container != "proxy" {
			t.Errorf("defaults not applied: %+v", o.Spec)
		}
		d := h.drain("defaults", "web")
		d.Spec.Completion = v1alpha1.DrainCompletion{}
		if err := h.c.Create(t.Context(), d); err != nil {
			t.Fatal(err)
		}
		if d.Spec.Completion.Timeout.Duration != 5*time.Minute || d.Spec.OnDelete != v1alpha1.OnDeleteKeep {
			t.Errorf("drain defaults not applied: %+v", d.Spec)
		}
	})
}

package controller_test

import (
	"fmt"
	"testing"
	"time"

	eventsv1 "k8s.io/api/events/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/outrigger-dev/outrigger/pkg/apis/proxy/v1alpha1"
)

// healthCheck builds a ProxyHealthCheck for pods labelled app=<app>.
func (h *harness) healthCheck(name, app string, state v1alpha1.HealthCheckState) *v1alpha1.ProxyHealthCheck {
	return &v1alpha1.ProxyHealthCheck{
		ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: h.ns},
		Spec:       v1alpha1.ProxyHealthCheckSpec{Target: target(app), State: state},
	}
}

// readyHC waits for the health check to be Ready with n pods applied.
func (h *harness) readyHC(hc *v1alpha1.ProxyHealthCheck, n int32) {
	h.t.Helper()
	eventually(h.t, 10*time.Second, func() error {
		if err := h.get(hc); err != nil {
			return err
		}
		if !meta.IsStatusConditionTrue(hc.Status.Conditions, v1alpha1.ConditionReady) || hc.Status.Succeeded != n ||
			hc.Status.ObservedGeneration != hc.Generation {
			return fmt.Errorf("not ready with %d pods: %+v", n, hc.Status)
		}
		return nil
	})
}

// TestHealthCheckFailOkRevert fails the health checks of the selected pods,
// turns them back to Ok, fails them again and deletes the resource, which
// makes them pass again.
func TestHealthCheckFailOkRevert(t *testing.T) {
	t.Parallel()
	h := newHarness(t)
	pods := []*proxyPod{h.newPod("web-b", map[string]string{"app": "web"}), h.newPod("web-a", map[string]string{"app": "web"})}
	other := h.newPod("other", map[string]string{"app": "other"})
	h.startController(testOptions())

	hc := h.healthCheck("fail-web", "web", v1alpha1.HealthCheckFail)
	if err := h.c.Create(t.Context(), hc); err != nil {
		t.Fatal(err)
	}
	h.readyHC(hc, 2)
	for _, p := range pods {
		if !p.fake.HealthChecksFailed() {
			t.Errorf("%s passes health checks", p.name)
		}
	}
	if other.fake.HealthChecksFailed() || len(other.fake.Calls("")) != 0 {
		t.Errorf("a pod outside the selector was called: %v", other.fake.Calls(""))
	}
	if got := []string{hc.Status.Targets[0].PodName, hc.Status.Targets[1].PodName}; got[0] != "web-a" || got[1] != "web-b" {
		t.Errorf("targets not sorted by pod name: %v", got)
	}
	for _, tg := range hc.Status.Targets {
		if tg.Phase != v1alpha1.PhaseApplied || tg.AppliedState != v1alpha1.HealthCheckFail || tg.ProxyStartTime == nil {
			t.Errorf("target %+v", tg)
		}
	}
	// Events go on each pod (related to the resource) and on the resource.
	eventually(t, 10*time.Second, func() error {
		var list eventsv1.EventList
		if err := h.c.List(t.Context(), &list, client.InNamespace(h.ns)); err != nil {
			return err
		}
		seen := map[string]bool{}
		for _, e := range list.Items {
			related := ""
			if e.Related != nil {
				related = e.Related.Kind
			}
			seen[e.Regarding.Kind+"/"+e.Regarding.Name+" "+e.Reason+" "+related] = true
		}
		for _, want := range []string{
			"Pod/web-a HealthCheckSet ProxyHealthCheck", "Pod/web-b HealthCheckSet ProxyHealthCheck",
			"ProxyHealthCheck/fail-web RolloutComplete ",
		} {
			if !seen[want] {
				return fmt.Errorf("no event %q in %v", want, seen)
			}
		}
		return nil
	})

	hc.Spec.State = v1alpha1.HealthCheckOk
	if err := h.c.Update(t.Context(), hc); err != nil {
		t.Fatal(err)
	}
	h.readyHC(hc, 2)
	for _, p := range pods {
		if p.fake.HealthChecksFailed() {
			t.Errorf("%s still fails health checks after Ok", p.name)
		}
	}

	hc.Spec.State = v1alpha1.HealthCheckFail
	if err := h.c.Update(t.Context(), hc); err != nil {
		t.Fatal(err)
	}
	h.readyHC(hc, 2)
	if err := h.c.Delete(t.Context(), hc); err != nil {
		t.Fatal(err)
	}
	eventually(t, 10*time.Second, func() error {
		if err := h.get(hc); !apierrors.IsNotFound(err) {
			return fmt.Errorf("still there (%v): %+v", err, hc.Status)
		}
		return nil
	})
	for _, p := range pods {
		if p.fake.HealthChecksFailed() {
			t.Errorf("%s still fails health checks after the resource was deleted", p.name)
		}
	}
}

// TestHealthCheckRestartAndNewPod sets the state again on a restarted
// proxy and on a pod created later.
func TestHealthCheckRestartAndNewPod(t *testing.T) {
	t.Parallel()
	h := newHarness(t)
	a := h.newPod("a", map[string]string{"app": "web"})
	h.startController(testOptions())
	hc := h.healthCheck("fail", "web", v1alpha1.HealthCheckFail)
	if err := h.c.Create(t.Context(), hc); err != nil {
		t.Fatal(err)
	}
	h.readyHC(hc, 1)

	a.fake.Restart(0)
	eventually(t, 10*time.Second, func() error {
		if !a.fake.HealthChecksFailed() {
			return fmt.Errorf("restarted proxy passes health checks")
		}
		return nil
	})
	b := h.newPod("b", map[string]string{"app": "web"})
	h.readyHC(hc, 2)
	if !b.fake.HealthChecksFailed() {
		t.Error("the pod created later passes health checks")
	}
}

// TestHealthCheckConflict lets the older of two health checks on one pod
// hold it; the newer reports Conflict, and takes over when the older goes.
func TestHealthCheckConflict(t *testing.T) {
	t.Parallel()
	h := newHarness(t)
	p := h.newPod("a", map[string]string{"app": "web"})
	h.startController(testOptions())
	older := h.healthCheck("older", "web", v1alpha1.HealthCheckFail)
	older.Spec.OnDelete = v1alpha1.OnDeleteKeep
	if err := h.c.Create(t.Context(), older); err != nil {
		t.Fatal(err)
	}
	h.readyHC(older, 1)
	time.Sleep(1100 * time.Millisecond) // creation times have a one-second precision
	newer := h.healthCheck("newer", "web", v1alpha1.HealthCheckOk)
	if err := h.c.Create(t.Context(), newer); err != nil {
		t.Fatal(err)
	}
	eventually(t, 10*time.Second, func() error {
		if err := h.get(newer); err != nil {
			return err
		}
		c := meta.FindStatusCondition(newer.Status.Conditions, v1alpha1.ConditionConflict)
		if c == nil || c.Status != metav1.ConditionTrue || len(newer.Status.Targets) != 1 ||
			newer.Status.Targets[0].Phase != v1alpha1.PhaseConflict || newer.Status.Targets[0].HeldBy != "older" {
			return fmt.Errorf("no conflict reported: %+v", newer.Status)
		}
		return nil
	})
	if !p.fake.HealthChecksFailed() {
		t.Error("the newer health check took the pod from the older")
	}
	if err := h.c.Delete(t.Context(), older); err != nil {
		t.Fatal(err)
	}
	h.readyHC(newer, 1)
	if p.fake.HealthChecksFailed() {
		t.Error("the newer health check did not take over")
	}
}

// TestHealthCheckTakeOverWaitsForUndo holds back the /healthcheck/ok of the
// deleted holder of a pod for as long as the test needs: the next in line
// must not set its Fail meanwhile (the holder's ok would land after it and
// leave the pod passing), then set it once the holder is done.
func TestHealthCheckTakeOverWaitsForUndo(t *testing.T) {
	t.Parallel()
	h := newHarness(t)
	p := h.newPod("a", map[string]string{"app": "web"})
	opts := testOptions()
	opts.RevertAttempts = 1000 // the older health check never gives up here
	h.startController(opts)
	older := h.healthCheck("older", "web", v1alpha1.HealthCheckFail)
	older.Spec.OnDelete = v1alpha1.OnDeleteRevert
	if err := h.c.Create(t.Context(), older); err != nil {
		t.Fatal(err)
	}
	h.readyHC(older, 1)
	time.Sleep(1100 * time.Millisecond) // creation times have a one-second precision
	newer := h.healthCheck("newer", "web", v1alpha1.HealthCheckFail)
	if err := h.c.Create(t.Context(), newer); err != nil {
		t.Fatal(err)
	}
	eventually(t, 10*time.Second, func() error {
		if err := h.get(newer); err != nil {
			return err
		}
		if len(newer.Status.Targets) != 1 || newer.Status.Targets[0].HeldBy != "older" {
			return fmt.Errorf("no conflict reported: %+v", newer.Status)
		}
		return nil
	})

	p.fake.FailNext("/healthcheck/ok", 1<<30)
	if err := h.c.Delete(t.Context(), older); err != nil {
		t.Fatal(err)
	}
	eventually(t, 10*time.Second, func() error {
		if err := h.get(newer); err != nil {
			return err
		}
		if tg := newer.Status.Targets[0]; tg.Phase != v1alpha1.PhaseConflict || tg.HeldBy != "older" || tg.AppliedState != "" {
			t.Fatalf("the newer health check took the pod over before the older undid its Fail: %+v", tg)
		}
		if err := h.get(older); err != nil {
			return err
		}
		if len(older.Status.Targets) != 1 || older.Status.Targets[0].Phase != v1alpha1.PhaseFailed || older.Status.Targets[0].Attempts < 3 {
			return fmt.Errorf("the older health check's undo has not failed 3 times yet: %+v", older.Status.Targets)
		}
		return nil
	})

	p.fake.FailNext("/healthcheck/ok", 0)
	h.readyHC(newer, 1)
	if err := h.get(older); !apierrors.IsNotFound(err) {
		t.Errorf("the older health check is still there (%v)", err)
	}
	if !p.fake.HealthChecksFailed() {
		t.Error("the pod passes health checks: the older's undo came after the newer's Fail")
	}
}

package controller_test

import (
	"fmt"
	"slices"
	"testing"
	"time"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/util/retry"

	"github.com/outrigger-dev/outrigger/pkg/apis/proxy/v1alpha1"
)

// drain builds a ProxyDrain for pods labelled app=<app>.
func (h *harness) drain(name, app string) *v1alpha1.ProxyDrain {
	return &v1alpha1.ProxyDrain{
		ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: h.ns},
		Spec: v1alpha1.ProxyDrainSpec{
			Target:     target(app),
			Completion: v1alpha1.DrainCompletion{Timeout: metav1.Duration{Duration: time.Minute}},
		},
	}
}

// phases maps pod names to their phase.
func phases(d *v1alpha1.ProxyDrain) map[string]v1alpha1.TargetPhase {
	out := map[string]v1alpha1.TargetPhase{}
	for _, t := range d.Status.Targets {
		out[t.PodName] = t.Phase
	}
	return out
}

// TestDrainRollout drains three pods one at a time: failing health checks,
// draining listeners with the spec's flags and waiting for connections to
// go, and never draining a pod twice.
func TestDrainRollout(t *testing.T) {
	t.Parallel()
	h := newHarness(t)
	var pods []*proxyPod
	for _, name := range []string{"c", "a", "b"} {
		p := h.newPod(name, map[string]string{"app": "web"})
		p.fake.SetActiveConnections(3)
		pods = append(pods, p)
	}
	h.startController(testOptions())

	d := h.drain("drain-web", "web")
	d.Spec.FailHealthChecks = true
	d.Spec.HealthCheckFailDelay = &metav1.Duration{Duration: time.Second}
	d.Spec.InboundOnly, d.Spec.Graceful = true, true
	d.Spec.Rollout.MaxConcurrent = 1
	if err := h.c.Create(t.Context(), d); err != nil {
		t.Fatal(err)
	}
	// Pods go in name order, one at a time: a holds the others back while
	// its connections stay.
	byName := map[string]*proxyPod{"a": pods[1], "b": pods[2], "c": pods[0]}
	for _, name := range []string{"a", "b", "c"} {
		eventually(t, 10*time.Second, func() error {
			if err := h.get(d); err != nil {
				return err
			}
			ph := phases(d)
			if ph[name] != v1alpha1.PhaseInProgress || len(byName[name].fake.Drains()) != 1 {
				return fmt.Errorf("%s not draining: %v", name, ph)
			}
			return nil
		})
		inProgress := 0
		for _, ph := range phases(d) {
			if ph == v1alpha1.PhaseInProgress {
				inProgress++
			}
		}
		if inProgress != 1 || d.Status.InProgress != 1 {
			t.Fatalf("%d pods draining at once with maxConcurrent 1: %v", inProgress, phases(d))
		}
		if !byName[name].fake.HealthChecksFailed() {
			t.Errorf("%s drained before its health checks failed", name)
		}
		byName[name].fake.SetActiveConnections(0)
	}
	eventually(t, 10*time.Second, func() error {
		if err := h.get(d); err != nil {
			return err
		}
		if !meta.IsStatusConditionTrue(d.Status.Conditions, v1alpha1.ConditionReady) || d.Status.Succeeded != 3 {
			return fmt.Errorf("not drained: %+v", d.Status)
		}
		return nil
	})
	for _, p := range pods {
		if got := p.fake.Drains(); !slices.Equal(got, []string{"graceful&inboundonly"}) {
			t.Errorf("%s drain calls %q, want one with graceful&inboundonly", p.name, got)
		}
		fail := p.fake.Calls("/healthcheck/fail")
		drain := p.fake.Calls("/drain_listeners")
		if len(fail) != 1 || len(drain) != 1 {
			t.Errorf("%s: %d fail and %d drain calls", p.name, len(fail), len(drain))
		}
	}
	for _, tg := range d.Status.Targets {
		if tg.HealthChecksFailedAt == nil || tg.DrainStartedAt == nil || tg.DrainStartedAt.Sub(tg.HealthChecksFailedAt.Time) < time.Second {
			t.Errorf("%s: the delay was not kept: %+v", tg.PodName, tg)
		}
		if tg.ActiveConnections == nil || *tg.ActiveConnections != 0 || tg.TimedOut {
			t.Errorf("%s: %+v", tg.PodName, tg)
		}
	}

	// Reconciles after the drain change nothing.
	time.Sleep(500 * time.Millisecond)
	for _, p := range pods {
		if n := len(p.fake.Drains()); n != 1 {
			t.Errorf("%s drained %d times", p.name, n)
		}
	}
}

// TestDrainTimeoutAndQuit completes a drain on its timeout, then quits the
// proxy.
func TestDrainTimeoutAndQuit(t *testing.T) {
	t.Parallel()
	h := newHarness(t)
	p := h.newPod("a", map[string]string{"app": "web"})
	p.fake.SetActiveConnections(5)
	h.startController(testOptions())
	d := h.drain("drain", "web")
	d.Spec.Completion = v1alpha1.DrainCompletion{ActiveConnections: 1, Timeout: metav1.Duration{Duration: time.Second}}
	d.Spec.QuitAfterDrain = true
	if err := h.c.Create(t.Context(), d); err != nil {
		t.Fatal(err)
	}
	eventually(t, 10*time.Second, func() error {
		if err := h.get(d); err != nil {
			return err
		}
		if len(d.Status.Targets) != 1 || d.Status.Targets[0].Phase != v1alpha1.PhaseDrained {
			return fmt.Errorf("not drained: %+v", d.Status.Targets)
		}
		return nil
	})
	tg := d.Status.Targets[0]
	if !tg.TimedOut || tg.QuitRequestedAt == nil || tg.Step != v1alpha1.DrainStepDone {
		t.Errorf("target %+v", tg)
	}
	if len(p.fake.Calls("/quitquitquit")) != 1 {
		t.Errorf("quit calls: %v", p.fake.Calls("/quitquitquit"))
	}
}

// TestDrainControllerRestart stops the controller in the middle of a drain
// and starts another: the pods already asked to drain are not asked again,
// including one whose request was on record but not confirmed.
func TestDrainControllerRestart(t *testing.T) {
	t.Parallel()
	h := newHarness(t)
	a := h.newPod("a", map[string]string{"app": "web"})
	b := h.newPod("b", map[string]string{"app": "web"})
	a.fake.SetActiveConnections(1)
	b.fake.SetActiveConnections(1)
	stop := h.startController(testOptions())
	d := h.drain("drain", "web")
	if err := h.c.Create(t.Context(), d); err != nil {
		t.Fatal(err)
	}
	eventually(t, 10*time.Second, func() error {
		if err := h.get(d); err != nil {
			return err
		}
		if d.Status.InProgress != 2 || len(a.fake.Drains()) != 1 || len(b.fake.Drains()) != 1 {
			return fmt.Errorf("not draining: %+v", d.Status)
		}
		return nil
	})
	stop()

	// As if the controller had died between recording b's request and
	// getting its answer. A status write the stopped controller had
	// cancelled may still land on the API server meanwhile, hence the
	// retry.
	err := retry.RetryOnConflict(retry.DefaultRetry, func() error {
		if err := h.get(d); err != nil {
			return err
		}
		for i := range d.Status.Targets {
			if tg := &d.Status.Targets[i]; tg.PodName == "b" {
				tg.Step, tg.DrainStartedAt = v1alpha1.DrainStepDrainListeners, nil
			}
		}
		return h.c.Status().Update(t.Context(), d)
	})
	if err != nil {
		t.Fatal(err)
	}

	h.startController(testOptions())
	a.fake.SetActiveConnections(0)
	b.fake.SetActiveConnections(0)
	eventually(t, 10*time.Second, func() error {
		if err := h.get(d); err != nil {
			return err
		}
		if d.Status.Succeeded != 2 {
			return fmt.Errorf("not drained: %+v", d.Status)
		}
		return nil
	})
	if len(a.fake.Drains()) != 1 || len(b.fake.Drains()) != 1 {
		t.Errorf("drain calls after the restart: a %d, b %d", len(a.fake.Drains()), len(b.fake.Drains()))
	}
}

// TestDrainRevert makes health checks pass again when a drain that failed
// them is deleted with onDelete Revert.
func TestDrainRevert(t *testing.T) {
	t.Parallel()
	h := newHarness(t)
	p := h.newPod("a", map[string]string{"app": "web"})
	h.startController(testOptions())
	d := h.drain("drain", "web")
	d.Spec.FailHealthChecks, d.Spec.OnDelete = true, v1alpha1.OnDeleteRevert
	if err := h.c.Create(t.Context(), d); err != nil {
		t.Fatal(err)
	}
	eventually(t, 10*time.Second, func() error {
		if err := h.get(d); err != nil {
			return err
		}
		if d.Status.Succeeded != 1 || !p.fake.HealthChecksFailed() {
			return fmt.Errorf("not drained: %+v", d.Status)
		}
		return nil
	})
	if err := h.c.Delete(t.Context(), d); err != nil {
		t.Fatal(err)
	}
	eventually(t, 10*time.Second, func() error {
		if err := h.get(d); !apierrors.IsNotFound(err) {
			return fmt.Errorf("still there (%v)", err)
		}
		return nil
	})
	if p.fake.HealthChecksFailed() || len(p.fake.Drains()) != 1 {
		t.Errorf("health checks failed %t, drains %v", p.fake.HealthChecksFailed(), p.fake.Drains())
	}
}

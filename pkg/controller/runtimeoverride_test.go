package controller_test

import (
	"fmt"
	"slices"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/outrigger-dev/outrigger/pkg/apis/proxy/v1alpha1"
)

// override builds a ProxyRuntimeOverride for pods labelled app=<app>.
func (h *harness) override(name, app string, runtime map[string]string) *v1alpha1.ProxyRuntimeOverride {
	return &v1alpha1.ProxyRuntimeOverride{
		ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: h.ns},
		Spec:       v1alpha1.ProxyRuntimeOverrideSpec{Target: target(app), Runtime: runtime},
	}
}

// readyOverride waits for the override to be Ready with n pods applied at
// its current generation.
func (h *harness) readyOverride(o *v1alpha1.ProxyRuntimeOverride, n int32) {
	h.t.Helper()
	eventually(h.t, 10*time.Second, func() error {
		if err := h.get(o); err != nil {
			return err
		}
		if !meta.IsStatusConditionTrue(o.Status.Conditions, v1alpha1.ConditionReady) || o.Status.Succeeded != n ||
			o.Status.ObservedGeneration != o.Generation {
			return fmt.Errorf("not ready with %d pods: %+v", n, o.Status)
		}
		return nil
	})
}

// value is a runtime key's final value on a fake proxy, "<none>" if unset.
func value(p *proxyPod, key string) string {
	v, ok := p.fake.RuntimeValue(key)
	if !ok {
		return "<none>"
	}
	return v
}

// TestRuntimeOverrideLifecycle sets runtime keys and log levels, sets them
// again on a restarted proxy and on a new pod, follows a spec change, and
// restores the previous values on delete.
func TestRuntimeOverrideLifecycle(t *testing.T) {
	t.Parallel()
	h := newHarness(t)
	a := h.newPod("a", map[string]string{"app": "web"})
	a.fake.SetAdminRuntime("admin.key", "before")
	h.startController(testOptions())

	o := h.override("tune", "web", map[string]string{"static.key": "x", "new.key": "n", "admin.key": "after"})
	o.Spec.Logging = &v1alpha1.LoggingOverride{Components: map[string]v1alpha1.LogLevel{"http": "debug"}}
	if err := h.c.Create(t.Context(), o); err != nil {
		t.Fatal(err)
	}
	h.readyOverride(o, 1)
	check := func(p *proxyPod, want map[string]string, http string) {
		t.Helper()
		got := map[string]string{}
		for k := range want {
			got[k] = value(p, k)
		}
		if diff := cmp.Diff(want, got); diff != "" {
			t.Errorf("%s runtime (-want +got):\n%s", p.name, diff)
		}
		if l := p.fake.LogLevel("http"); l != http {
			t.Errorf("%s http logger at %s, want %s", p.name, l, http)
		}
	}
	applied := map[string]string{"static.key": "x", "new.key": "n", "admin.key": "after"}
	check(a, applied, "debug")
	tg := o.Status.Targets[0]
	if diff := cmp.Diff(map[string]string{"static.key": "s", "admin.key": "before"}, tg.PreviousRuntime); diff != "" {
		t.Errorf("previous runtime (-want +got):\n%s", diff)
	}
	if diff := cmp.Diff([]string{"new.key"}, tg.AddedRuntimeKeys); diff != "" {
		t.Errorf("added keys (-want +got):\n%s", diff)
	}
	if diff := cmp.Diff(map[string]string{"http": "info"}, tg.PreviousLogLevels); diff != "" {
		t.Errorf("previous log levels (-want +got):\n%s", diff)
	}

	// A restarted proxy gets the values again.
	a.fake.Restart(0)
	eventually(t, 10*time.Second, func() error {
		if value(a, "new.key") != "n" || a.fake.LogLevel("http") != "debug" {
			return fmt.Errorf("not set again after the restart: new.key=%s http=%s", value(a, "new.key"), a.fake.LogLevel("http"))
		}
		return nil
	})

	// A pod created later gets them.
	b := h.newPod("b", map[string]string{"app": "web"})
	h.readyOverride(o, 2)
	check(b, map[string]string{"static.key": "x", "new.key": "n", "admin.key": "after"}, "debug")

	// A key removed from the spec goes back at once.
	if err := h.get(o); err != nil {
		t.Fatal(err)
	}
	delete(o.Spec.Runtime, "new.key")
	o.Spec.Runtime["static.key"] = "y"
	if err := h.c.Update(t.Context(), o); err != nil {
		t.Fatal(err)
	}
	h.readyOverride(o, 2)
	check(b, map[string]string{"static.key": "y", "new.key": "<none>"}, "debug")

	if err := h.c.Delete(t.Context(), o); err != nil {
		t.Fatal(err)
	}
	eventually(t, 10*time.Second, func() error {
		if err := h.get(o); !apierrors.IsNotFound(err) {
			return fmt.Errorf("still there (%v): %+v", err, o.Status)
		}
		return nil
	})
	// a restarted after the override: its admin.key was lost with the
	// restart, so only what the restarted proxy had comes back.
	check(a, map[string]string{"static.key": "s", "new.key": "<none>", "admin.key": "<none>"}, "info")
	check(b, map[string]string{"static.key": "s", "new.key": "<none>"}, "info")
}

// TestRuntimeOverrideAllLoggers restores every logger's own level after an
// all-loggers level.
func TestRuntimeOverrideAllLoggers(t *testing.T) {
	t.Parallel()
	h := newHarness(t)
	a := h.newPod("a", map[string]string{"app": "web"})
	h.startController(testOptions())
	o := h.override("trace-all", "web", nil)
	o.Spec.Logging = &v1alpha1.LoggingOverride{Level: "trace", Components: map[string]v1alpha1.LogLevel{"http": "error"}}

	// One logger differs from the others before the override.
	sess := session(t, a)
	if err := sess.SetLogLevels(t.Context(), map[string]string{"upstream": "warning"}); err != nil {
		t.Fatal(err)
	}
	if err := h.c.Create(t.Context(), o); err != nil {
		t.Fatal(err)
	}
	h.readyOverride(o, 1)
	if a.fake.LogLevel("main") != "trace" || a.fake.LogLevel("http") != "error" || a.fake.LogLevel("upstream") != "trace" {
		t.Errorf("levels main=%s http=%s upstream=%s", a.fake.LogLevel("main"), a.fake.LogLevel("http"), a.fake.LogLevel("upstream"))
	}
	if diff := cmp.Diff(map[string]string{"*": "info", "upstream": "warning"}, o.Status.Targets[0].PreviousLogLevels); diff != "" {
		t.Errorf("previous log levels (-want +got):\n%s", diff)
	}
	if err := h.c.Delete(t.Context(), o); err != nil {
		t.Fatal(err)
	}
	eventually(t, 10*time.Second, func() error {
		if a.fake.LogLevel("main") != "info" || a.fake.LogLevel("http") != "info" || a.fake.LogLevel("upstream") != "warning" {
			return fmt.Errorf("levels not restored: main=%s http=%s upstream=%s", a.fake.LogLevel("main"), a.fake.LogLevel("http"), a.fake.LogLevel("upstream"))
		}
		return nil
	})
}

// TestRuntimeOverrideConflict gives a key to the older of two overrides;
// the newer sets its other keys, reports Conflict, and takes the key over
// when the older goes.
func TestRuntimeOverrideConflict(t *testing.T) {
	t.Parallel()
	h := newHarness(t)
	a := h.newPod("a", map[string]string{"app": "web"})
	h.startController(testOptions())
	older := h.override("older", "web", map[string]string{"shared": "old"})
	if err := h.c.Create(t.Context(), older); err != nil {
		t.Fatal(err)
	}
	h.readyOverride(older, 1)
	time.Sleep(1100 * time.Millisecond) // creation times have a one-second precision
	newer := h.override("newer", "web", map[string]string{"shared": "new", "own": "mine"})
	if err := h.c.Create(t.Context(), newer); err != nil {
		t.Fatal(err)
	}
	eventually(t, 10*time.Second, func() error {
		if err := h.get(newer); err != nil {
			return err
		}
		c := meta.FindStatusCondition(newer.Status.Conditions, v1alpha1.ConditionConflict)
		if c == nil || c.Status != metav1.ConditionTrue || c.Reason != v1alpha1.ReasonKeyConflict || len(newer.Status.Targets) != 1 ||
			newer.Status.Targets[0].Phase != v1alpha1.PhaseApplied {
			return fmt.Errorf("conflict not reported: %+v", newer.Status)
		}
		if diff := cmp.Diff([]string{"runtime:shared (held by older)"}, newer.Status.Targets[0].ConflictingKeys); diff != "" {
			return fmt.Errorf("conflicting keys (-want +got):\n%s", diff)
		}
		return nil
	})
	if value(a, "shared") != "old" || value(a, "own") != "mine" {
		t.Errorf("shared=%s own=%s, want old and mine", value(a, "shared"), value(a, "own"))
	}
	if err := h.c.Delete(t.Context(), older); err != nil {
		t.Fatal(err)
	}
	eventually(t, 10*time.Second, func() error {
		if value(a, "shared") != "new" {
			return fmt.Errorf("shared=%s after the older override went", value(a, "shared"))
		}
		if err := h.get(newer); err != nil {
			return err
		}
		if !meta.IsStatusConditionFalse(newer.Status.Conditions, v1alpha1.ConditionConflict) {
			return fmt.Errorf("conflict still reported: %+v", newer.Status.Conditions)
		}
		return nil
	})
	// The newer override found the older's value gone (deleted on
	// revert) and removes its own on delete.
	if err := h.c.Delete(t.Context(), newer); err != nil {
		t.Fatal(err)
	}
	eventually(t, 10*time.Second, func() error {
		if value(a, "shared") != "<none>" || value(a, "own") != "<none>" {
			return fmt.Errorf("shared=%s own=%s after both went", value(a, "shared"), value(a, "own"))
		}
		return nil
	})
}

// TestRuntimeOverrideTakeOverWaitsForRevert holds back the revert of the
// deleted holder of a key (its /runtime_modify calls fail) for as long as
// the test needs, so that the take-over path is followed in one order
// only: the next in line must leave the key alone while the holder still
// has it on record (neither recording the holder's value as the previous
// one, nor setting its own value for the revert to wipe out), then take it
// over with the value from before both overrides (none), and remove it on
// delete.
func TestRuntimeOverrideTakeOverWaitsForRevert(t *testing.T) {
	t.Parallel()
	h := newHarness(t)
	a := h.newPod("a", map[string]string{"app": "web"})
	opts := testOptions()
	opts.RevertAttempts = 1000 // the older override never gives up here
	h.startController(opts)
	older := h.override("older", "web", map[string]string{"shared": "old"})
	if err := h.c.Create(t.Context(), older); err != nil {
		t.Fatal(err)
	}
	h.readyOverride(older, 1)
	time.Sleep(1100 * time.Millisecond) // creation times have a one-second precision
	newer := h.override("newer", "web", map[string]string{"shared": "new", "own": "mine"})
	if err := h.c.Create(t.Context(), newer); err != nil {
		t.Fatal(err)
	}
	eventually(t, 10*time.Second, func() error {
		if err := h.get(newer); err != nil {
			return err
		}
		if len(newer.Status.Targets) != 1 || newer.Status.Targets[0].Phase != v1alpha1.PhaseApplied || value(a, "own") != "mine" {
			return fmt.Errorf("own key not set: %+v", newer.Status)
		}
		return nil
	})

	a.fake.FailNext("/runtime_modify", 1<<30)
	if err := h.c.Delete(t.Context(), older); err != nil {
		t.Fatal(err)
	}
	// The older's revert fails again and again; all along, the newer waits.
	eventually(t, 10*time.Second, func() error {
		if err := h.get(newer); err != nil {
			return err
		}
		tg := newer.Status.Targets[0]
		if _, ok := tg.PreviousRuntime["shared"]; ok || slices.Contains(tg.AddedRuntimeKeys, "shared") || slices.Contains(tg.AppliedKeys, "runtime:shared") {
			t.Fatalf("the newer override took shared over before the older set it back: %+v", tg)
		}
		if diff := cmp.Diff([]string{"runtime:shared (held by older)"}, tg.ConflictingKeys); diff != "" {
			t.Fatalf("conflicting keys while the older reverts (-want +got):\n%s", diff)
		}
		if v := value(a, "shared"); v != "old" {
			t.Fatalf("shared=%s while the older override's revert is held back", v)
		}
		if err := h.get(older); err != nil {
			return err
		}
		if len(older.Status.Targets) != 1 || older.Status.Targets[0].Phase != v1alpha1.PhaseFailed || older.Status.Targets[0].Attempts < 3 {
			return fmt.Errorf("the older override's revert has not failed 3 times yet: %+v", older.Status.Targets)
		}
		return nil
	})

	a.fake.FailNext("/runtime_modify", 0)
	eventually(t, 10*time.Second, func() error {
		if err := h.get(newer); err != nil {
			return err
		}
		if value(a, "shared") != "new" || !meta.IsStatusConditionFalse(newer.Status.Conditions, v1alpha1.ConditionConflict) {
			return fmt.Errorf("shared=%s, conditions %+v", value(a, "shared"), newer.Status.Conditions)
		}
		return nil
	})
	if err := h.get(older); !apierrors.IsNotFound(err) {
		t.Errorf("the older override is still there (%v)", err)
	}
	tg := newer.Status.Targets[0]
	if diff := cmp.Diff([]string{"own", "shared"}, tg.AddedRuntimeKeys); diff != "" || tg.PreviousRuntime != nil {
		t.Errorf("recorded previous values: added keys (-want +got):\n%s; previous runtime %v", diff, tg.PreviousRuntime)
	}

	if err := h.c.Delete(t.Context(), newer); err != nil {
		t.Fatal(err)
	}
	eventually(t, 10*time.Second, func() error {
		if value(a, "shared") != "<none>" || value(a, "own") != "<none>" {
			return fmt.Errorf("shared=%s own=%s after both went", value(a, "shared"), value(a, "own"))
		}
		return nil
	})
}

// TestRuntimeOverrideOlderTakesKey gives a key held by a newer override to
// an older one that starts setting it: the newer sets it back first, so
// the older records the value from before both, not the newer's, and the
// newer, taking the key over again when the older goes, records it too.
func TestRuntimeOverrideOlderTakesKey(t *testing.T) {
	t.Parallel()
	h := newHarness(t)
	a := h.newPod("a", map[string]string{"app": "web"})
	a.fake.SetAdminRuntime("k", "orig")
	h.startController(testOptions())
	older := h.override("older", "web", map[string]string{"x": "1"})
	if err := h.c.Create(t.Context(), older); err != nil {
		t.Fatal(err)
	}
	h.readyOverride(older, 1)
	time.Sleep(1100 * time.Millisecond) // creation times have a one-second precision
	newer := h.override("newer", "web", map[string]string{"k": "n"})
	if err := h.c.Create(t.Context(), newer); err != nil {
		t.Fatal(err)
	}
	h.readyOverride(newer, 1)
	if value(a, "k") != "n" {
		t.Fatalf("k=%s, want n", value(a, "k"))
	}

	older.Spec.Runtime["k"] = "o"
	if err := h.c.Update(t.Context(), older); err != nil {
		t.Fatal(err)
	}
	// Until the newer has set k back, the older reports it held by the newer.
	eventually(t, 10*time.Second, func() error {
		if err := h.get(older); err != nil {
			return err
		}
		if value(a, "k") != "o" || !meta.IsStatusConditionFalse(older.Status.Conditions, v1alpha1.ConditionConflict) ||
			older.Status.ObservedGeneration != older.Generation {
			return fmt.Errorf("k=%s, conditions %+v", value(a, "k"), older.Status.Conditions)
		}
		return nil
	})
	if diff := cmp.Diff(map[string]string{"k": "orig"}, older.Status.Targets[0].PreviousRuntime); diff != "" {
		t.Errorf("the older override's previous runtime (-want +got):\n%s", diff)
	}
	eventually(t, 10*time.Second, func() error {
		if err := h.get(newer); err != nil {
			return err
		}
		tg := newer.Status.Targets[0]
		if tg.Phase != v1alpha1.PhaseConflict || tg.PreviousRuntime != nil || tg.AppliedKeys != nil {
			return fmt.Errorf("the newer override still has k: %+v", tg)
		}
		return nil
	})

	if err := h.c.Delete(t.Context(), older); err != nil {
		t.Fatal(err)
	}
	eventually(t, 10*time.Second, func() error {
		if err := h.get(newer); err != nil {
			return err
		}
		if value(a, "k") != "n" || value(a, "x") != "<none>" || newer.Status.Targets[0].Phase != v1alpha1.PhaseApplied {
			return fmt.Errorf("k=%s x=%s after the older override went: %+v", value(a, "k"), value(a, "x"), newer.Status.Targets[0])
		}
		return nil
	})
	if diff := cmp.Diff(map[string]string{"k": "orig"}, newer.Status.Targets[0].PreviousRuntime); diff != "" {
		t.Errorf("the newer override's previous runtime (-want +got):\n%s", diff)
	}
	if err := h.c.Delete(t.Context(), newer); err != nil {
		t.Fatal(err)
	}
	eventually(t, 10*time.Second, func() error {
		if value(a, "k") != "orig" {
			return fmt.Errorf("k=%s after both went, want orig", value(a, "k"))
		}
		return nil
	})
}

// TestRuntimeOverrideTTL removes the values when the ttl ends and keeps the
// resource, Expired.
func TestRuntimeOverrideTTL(t *testing.T) {
	t.Parallel()
	h := newHarness(t)
	a := h.newPod("a", map[string]string{"app": "web"})
	h.startController(testOptions())
	o := h.override("brief", "web", map[string]string{"k": "v"})
	o.Spec.TTL = &metav1.Duration{Duration: 2 * time.Second}
	if err := h.c.Create(t.Context(), o); err != nil {
		t.Fatal(err)
	}
	h.readyOverride(o, 1)
	if value(a, "k") != "v" || o.Status.ExpiresAt == nil {
		t.Fatalf("k=%s expiresAt=%v", value(a, "k"), o.Status.ExpiresAt)
	}
	eventually(t, 10*time.Second, func() error {
		if err := h.get(o); err != nil {
			return err
		}
		c := meta.FindStatusCondition(o.Status.Conditions, v1alpha1.ConditionReady)
		if c == nil || c.Reason != v1alpha1.ReasonExpired || value(a, "k") != "<none>" {
			return fmt.Errorf("not expired: k=%s %+v", value(a, "k"), o.Status.Conditions)
		}
		return nil
	})
	if o.Status.Targets[0].Phase != v1alpha1.PhaseReverted {
		t.Errorf("target after expiry: %+v", o.Status.Targets[0])
	}
	// A pod created after the expiry is left alone.
	b := h.newPod("b", map[string]string{"app": "web"})
	time.Sleep(time.Second)
	if calls := b.fake.Calls("/runtime_modify"); len(calls) != 0 {
		t.Errorf("expired override set on a new pod: %v", calls)
	}
}

// TestRuntimeOverrideReleasedPod restores the values on a pod relabelled
// out of the selector.
func TestRuntimeOverrideReleasedPod(t *testing.T) {
	t.Parallel()
	h := newHarness(t)
	a := h.newPod("a", map[string]string{"app": "web"})
	h.startController(testOptions())
	o := h.override("tune", "web", map[string]string{"k": "v"})
	if err := h.c.Create(t.Context(), o); err != nil {
		t.Fatal(err)
	}
	h.readyOverride(o, 1)
	pod := a.pod.DeepCopy()
	if err := h.get(pod); err != nil {
		t.Fatal(err)
	}
	pod.Labels = map[string]string{"app": "elsewhere"}
	if err := h.c.Update(t.Context(), pod); err != nil {
		t.Fatal(err)
	}
	eventually(t, 10*time.Second, func() error {
		if err := h.get(o); err != nil {
			return err
		}
		if value(a, "k") != "<none>" || len(o.Status.Targets) != 0 {
			return fmt.Errorf("k=%s, targets %+v", value(a, "k"), o.Status.Targets)
		}
		return nil
	})
}

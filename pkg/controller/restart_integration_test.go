package controller_test

import (
	"fmt"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	"github.com/prometheus/client_golang/prometheus"
	corev1 "k8s.io/api/core/v1"
	eventsv1 "k8s.io/api/events/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/outrigger-dev/outrigger/pkg/apis/proxy/v1alpha1"
	"github.com/outrigger-dev/outrigger/pkg/controller"
	"github.com/outrigger-dev/outrigger/pkg/controller/adminclient"
	"github.com/outrigger-dev/outrigger/pkg/controller/adminclient/admintest"
)

// withMetrics gives the options metrics in a registry of their own, fed by
// the admin client too.
func withMetrics(t testing.TB, opts controller.Options) (controller.Options, *prometheus.Registry) {
	t.Helper()
	reg := prometheus.NewRegistry()
	m, err := controller.NewMetrics(reg)
	if err != nil {
		t.Fatal(err)
	}
	opts.Metrics = m
	opts.Admin = adminclient.New(adminclient.NewDirect(time.Second), 2*time.Second, adminclient.WithObserver(m.AdminObserver()))
	return opts, reg
}

// metric sums the samples of a counter or gauge (for a histogram, the sum
// of the observations) whose labels include labels ("name=value").
func metric(t testing.TB, reg *prometheus.Registry, name string, labels ...string) float64 {
	t.Helper()
	families, err := reg.Gather()
	if err != nil {
		t.Fatal(err)
	}
	sum := 0.0
	for _, f := range families {
		if f.GetName() != name {
			continue
		}
	samples:
		for _, m := range f.GetMetric() {
			have := map[string]string{}
			for _, l := range m.GetLabel() {
				have[l.GetName()] = l.GetValue()
			}
			for _, l := range labels {
				k, v, _ := strings.Cut(l, "=")
				if have[k] != v {
					continue samples
				}
			}
			sum += m.GetCounter().GetValue() + m.GetGauge().GetValue() + m.GetHistogram().GetSampleSum()
		}
	}
	return sum
}

// kubeletRestart raises the restart count of a pod's proxy container, as
// the kubelet does when the container restarts.
func (h *harness) kubeletRestart(pod *corev1.Pod) {
	h.t.Helper()
	if err := h.c.Get(h.t.Context(), client.ObjectKeyFromObject(pod), pod); err != nil {
		h.t.Fatal(err)
	}
	n := int32(1)
	for _, s := range pod.Status.ContainerStatuses {
		if s.Name == "proxy" {
			n = s.RestartCount + 1
		}
	}
	pod.Status.ContainerStatuses = []corev1.ContainerStatus{{Name: "proxy", RestartCount: n, Ready: true}}
	if err := h.c.Status().Update(h.t.Context(), pod); err != nil {
		h.t.Fatal(err)
	}
}

// podEvents counts the events of a reason regarding pods of the namespace.
func (h *harness) podEvents(reason string) int {
	h.t.Helper()
	var list eventsv1.EventList
	if err := h.c.List(h.t.Context(), &list, client.InNamespace(h.ns)); err != nil {
		h.t.Fatal(err)
	}
	n := 0
	for _, e := range list.Items {
		if e.Regarding.Kind == "Pod" && e.Reason == reason {
			n++
			h.t.Logf("event %s: %s", e.Reason, e.Note)
		}
	}
	return n
}

// TestRuntimeOverrideFalseRestartSignal gives a restart signal that is
// wrong (the kubelet's count goes up, the proxy did not restart): the
// proxy still holds the values, so nothing is recorded again, the metric
// counts a false restart, and the delete restores the values from before
// the override. With the spec changed at the same time, the records are
// kept too: a previous value on record is never one the override set.
func TestRuntimeOverrideFalseRestartSignal(t *testing.T) {
	t.Parallel()
	h := newHarness(t)
	a := h.newPod("a", map[string]string{"app": "web"})
	a.fake.SetAdminRuntime("admin.key", "before")
	opts, reg := withMetrics(t, testOptions())
	h.startController(opts)

	o := h.override("tune", "web", map[string]string{"static.key": "x", "admin.key": "after", "new.key": "n"})
	o.Spec.Logging = &v1alpha1.LoggingOverride{Level: "debug"}
	if err := h.c.Create(t.Context(), o); err != nil {
		t.Fatal(err)
	}
	h.readyOverride(o, 1)
	want := o.Status.Targets[0]
	checkRecords := func(got v1alpha1.RuntimeOverrideTarget) error {
		if diff := cmp.Diff(map[string]string{"static.key": "s", "admin.key": "before"}, got.PreviousRuntime); diff != "" {
			return fmt.Errorf("previous runtime (-want +got):\n%s", diff)
		}
		if diff := cmp.Diff([]string{"new.key"}, got.AddedRuntimeKeys); diff != "" {
			return fmt.Errorf("added keys (-want +got):\n%s", diff)
		}
		if diff := cmp.Diff(map[string]string{"*": "info"}, got.PreviousLogLevels); diff != "" {
			return fmt.Errorf("previous log levels (-want +got):\n%s", diff)
		}
		return nil
	}
	if err := checkRecords(want); err != nil {
		t.Fatal(err)
	}

	h.kubeletRestart(a.pod)
	// The metric counts the false restart before the status that records
	// the new count is written: wait for both.
	eventually(t, 10*time.Second, func() error {
		if got := metric(t, reg, "outrigger_controller_false_restarts_total", "kind=ProxyRuntimeOverride"); got != 1 {
			return fmt.Errorf("false restarts %v, want 1", got)
		}
		if err := h.get(o); err != nil {
			return err
		}
		if n := o.Status.Targets[0].ProxyRestartCount; n != 1 {
			return fmt.Errorf("proxy restart count on record %d, want 1", n)
		}
		return nil
	})
	if err := checkRecords(o.Status.Targets[0]); err != nil {
		t.Errorf("after a false restart signal: %v", err)
	}
	if got := metric(t, reg, "outrigger_controller_proxy_restarts_total"); got != 0 {
		t.Errorf("proxy restarts %v, want 0", got)
	}

	// The spec changes and the signal comes at once.
	eventually(t, 10*time.Second, func() error {
		if err := h.get(o); err != nil {
			return err
		}
		o.Spec.Runtime["static.key"] = "y"
		return h.c.Update(t.Context(), o)
	})
	h.kubeletRestart(a.pod)
	h.readyOverride(o, 1)
	if value(a, "static.key") != "y" {
		t.Errorf("static.key=%s, want y", value(a, "static.key"))
	}
	if err := checkRecords(o.Status.Targets[0]); err != nil {
		t.Errorf("after a spec change with a false restart signal: %v", err)
	}

	if err := h.c.Delete(t.Context(), o); err != nil {
		t.Fatal(err)
	}
	eventually(t, 10*time.Second, func() error {
		if err := h.get(o); !apierrors.IsNotFound(err) {
			return fmt.Errorf("still there (%v)", err)
		}
		return nil
	})
	got := map[string]string{"static.key": value(a, "static.key"), "admin.key": value(a, "admin.key"), "new.key": value(a, "new.key")}
	if diff := cmp.Diff(map[string]string{"static.key": "s", "admin.key": "before", "new.key": "<none>"}, got); diff != "" {
		t.Errorf("after delete (-want +got):\n%s", diff)
	}
	if l := a.fake.LogLevel("main"); l != "info" {
		t.Errorf("main logger at %s after delete, want info", l)
	}
	if n := h.podEvents("ProxyRestarted"); n != 0 {
		t.Errorf("%d ProxyRestarted events for a proxy that never restarted", n)
	}
}

// TestRuntimeOverrideQuickRestart restarts a proxy right after the values
// were set, too soon for its uptime to tell; the kubelet's restart count
// tells, and the values are recorded and set again.
func TestRuntimeOverrideQuickRestart(t *testing.T) {
	t.Parallel()
	h := newHarness(t)
	fake, err := admintest.New("127.0.0.1:0", map[string]string{"static.key": "s"})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(fake.Close)
	pod := h.createPod("a", map[string]string{"app": "web"}, strconv.Itoa(int(fake.Port())), "127.0.0.1")
	a := &proxyPod{name: "a", fake: fake, pod: pod}
	fake.SetAdminRuntime("admin.key", "before")
	opts, reg := withMetrics(t, testOptions())
	h.startController(opts)

	o := h.override("tune", "web", map[string]string{"admin.key": "after"})
	if err := h.c.Create(t.Context(), o); err != nil {
		t.Fatal(err)
	}
	h.readyOverride(o, 1)
	fake.Restart(0) // the admin layer is gone; the uptime starts again, within a second of the last start
	if value(a, "admin.key") != "<none>" {
		t.Fatalf("admin.key=%s after the restart", value(a, "admin.key"))
	}
	h.kubeletRestart(pod)
	eventually(t, 10*time.Second, func() error {
		if v := value(a, "admin.key"); v != "after" {
			return fmt.Errorf("admin.key=%s, not set again", v)
		}
		if err := h.get(o); err != nil {
			return err
		}
		tg := o.Status.Targets[0]
		if tg.Phase != v1alpha1.PhaseApplied || tg.PreviousRuntime != nil || !slices.Equal(tg.AddedRuntimeKeys, []string{"admin.key"}) {
			return fmt.Errorf("records after the restart: %+v", tg)
		}
		return nil
	})
	if got := metric(t, reg, "outrigger_controller_proxy_restarts_total", "kind=ProxyRuntimeOverride"); got != 1 {
		t.Errorf("proxy restarts %v, want 1", got)
	}
	eventually(t, 10*time.Second, func() error {
		if n := h.podEvents("ProxyRestarted"); n != 1 {
			return fmt.Errorf("%d ProxyRestarted events, want 1", n)
		}
		return nil
	})
}

// TestHealthCheckQuickRestart restarts a proxy right after its health
// checks were failed: its uptime cannot tell, but it answers LIVE, so the
// Fail is set again.
func TestHealthCheckQuickRestart(t *testing.T) {
	t.Parallel()
	h := newHarness(t)
	fake, err := admintest.New("127.0.0.1:0", nil)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(fake.Close)
	h.createPod("a", map[string]string{"app": "web"}, strconv.Itoa(int(fake.Port())), "127.0.0.1")
	opts, reg := withMetrics(t, testOptions())
	h.startController(opts)
	hc := h.healthCheck("fail", "web", v1alpha1.HealthCheckFail)
	if err := h.c.Create(t.Context(), hc); err != nil {
		t.Fatal(err)
	}
	h.readyHC(hc, 1)
	fake.Restart(0)
	eventually(t, 10*time.Second, func() error {
		if !fake.HealthChecksFailed() {
			return fmt.Errorf("the restarted proxy passes its health checks")
		}
		return nil
	})
	// The restart is counted as the reconcile that re-applied the
	// failure finishes, which may be just after the fake saw the call.
	eventually(t, 5*time.Second, func() error {
		if got := metric(t, reg, "outrigger_controller_proxy_restarts_total", "kind=ProxyHealthCheck"); got != 1 {
			return fmt.Errorf("proxy restarts %v, want 1", got)
		}
		return nil
	})
}

// TestRevertAfterRestart deletes an override after its proxy restarted
// and before any recheck saw it: the previous values are set back all the
// same, and the restart is reported.
func TestRevertAfterRestart(t *testing.T) {
	t.Parallel()
	h := newHarness(t)
	a := h.newPod("a", map[string]string{"app": "web"})
	opts, reg := withMetrics(t, testOptions())
	opts.RecheckInterval = time.Hour
	h.startController(opts)
	o := h.override("tune", "web", map[string]string{"static.key": "x", "new.key": "n"})
	if err := h.c.Create(t.Context(), o); err != nil {
		t.Fatal(err)
	}
	h.readyOverride(o, 1)
	a.fake.Restart(0) // an hour after the recorded start (newPod backdates the first)
	// Something else sets the key meanwhile, as the override would have.
	a.fake.SetAdminRuntime("new.key", "n")
	if err := h.c.Delete(t.Context(), o); err != nil {
		t.Fatal(err)
	}
	eventually(t, 10*time.Second, func() error {
		if err := h.get(o); !apierrors.IsNotFound(err) {
			return fmt.Errorf("still there (%v)", err)
		}
		return nil
	})
	if value(a, "new.key") != "<none>" || value(a, "static.key") != "s" {
		t.Errorf("new.key=%s static.key=%s after delete", value(a, "new.key"), value(a, "static.key"))
	}
	if got := metric(t, reg, "outrigger_controller_reverts_total", "kind=ProxyRuntimeOverride", "result=restarted"); got != 1 {
		t.Errorf("reverts after a restart %v, want 1", got)
	}
	eventually(t, 10*time.Second, func() error {
		if n := h.podEvents("ProxyRestarted"); n != 1 {
			return fmt.Errorf("%d ProxyRestarted events, want 1", n)
		}
		return nil
	})
}

// TestRolloutStatusWrites rolls an override out to 80 pods one at a time:
// the status is written a few times, not once or twice per pod; nothing
// is written while nothing changes; and the pod events are capped, the
// rest counted on the resource.
func TestRolloutStatusWrites(t *testing.T) {
	t.Parallel()
	h := newHarness(t)
	const n = 80
	pods := make([]*proxyPod, n)
	for i := range pods {
		pods[i] = h.newPod(fmt.Sprintf("web-%02d", i), map[string]string{"app": "web"})
	}
	opts, reg := withMetrics(t, testOptions())
	h.startController(opts)
	o := h.override("tune", "web", map[string]string{"k": "v"})
	o.Spec.Rollout.MaxConcurrent = 1
	if err := h.c.Create(t.Context(), o); err != nil {
		t.Fatal(err)
	}
	h.readyOverride(o, n)
	for _, p := range pods {
		if value(p, "k") != "v" {
			t.Errorf("%s: k=%s", p.name, value(p, "k"))
		}
	}
	writes := metric(t, reg, "outrigger_controller_status_writes_total", "kind=ProxyRuntimeOverride")
	// The records of the pods read in 2 s (all of them, unless the
	// machine is very slow), then the results; a reconcile that comes
	// while the first ends may add one.
	if writes < 2 || writes > 4 {
		t.Errorf("%v status writes for %d pods, want 2 to 4", writes, n)
	}
	// Rechecks (every 300 ms) find nothing to change: no write.
	time.Sleep(1500 * time.Millisecond)
	if after := metric(t, reg, "outrigger_controller_status_writes_total", "kind=ProxyRuntimeOverride"); after != writes {
		t.Errorf("%v status writes while idle", after-writes)
	}
	if got := metric(t, reg, "outrigger_controller_admin_calls_total", "endpoint=/server_info", "result=success"); got < 2*n {
		t.Errorf("%v successful /server_info calls, want at least %d (rollout and a recheck)", got, 2*n)
	}
	if got := metric(t, reg, "outrigger_controller_targets", "kind=ProxyRuntimeOverride", "phase=Applied"); got != n {
		t.Errorf("targets gauge says %v applied, want %d", got, n)
	}
	eventually(t, 10*time.Second, func() error {
		if got := h.podEvents("Applied"); got != 10 {
			return fmt.Errorf("%d Applied pod events, want 10", got)
		}
		var list eventsv1.EventList
		if err := h.c.List(t.Context(), &list, client.InNamespace(h.ns)); err != nil {
			return err
		}
		folded := 0
		for _, e := range list.Items {
			if e.Regarding.Kind == "ProxyRuntimeOverride" && e.Reason == "Applied" {
				var more int
				if _, err := fmt.Sscanf(e.Note, "Applied on %d pods more", &more); err != nil {
					return fmt.Errorf("aggregated event note %q: %v", e.Note, err)
				}
				folded += more
			}
		}
		if folded != n-10 {
			return fmt.Errorf("aggregated events count %d pods, want %d", folded, n-10)
		}
		return nil
	})
}

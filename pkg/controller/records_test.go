package controller

import (
	"context"
	"errors"
	"fmt"
	"net"
	"strings"
	"sync"
	"testing"

	"github.com/google/go-cmp/cmp"
	"github.com/prometheus/client_golang/prometheus"
	dto "github.com/prometheus/client_model/go"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/types"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/outrigger-dev/outrigger/pkg/apis/proxy/v1alpha1"
	"github.com/outrigger-dev/outrigger/pkg/controller/adminclient"
)

// TestRecordRuntime records a key's previous value afresh, whatever was on
// record for it before.
func TestRecordRuntime(t *testing.T) {
	rt := adminclient.Runtime{Layers: []string{"static", "admin"}, Entries: map[string]adminclient.RuntimeEntry{
		"existing": {LayerValues: []string{"s", ""}, FinalValue: "s"},
	}}
	cases := map[string]struct {
		before    v1alpha1.RuntimeOverrideTarget
		key       string
		wantPrev  map[string]string
		wantAdded []string
	}{
		"an existing key":                  {key: "existing", wantPrev: map[string]string{"existing": "s"}},
		"a missing key":                    {key: "new", wantAdded: []string{"new"}},
		"was added, now exists":            {before: v1alpha1.RuntimeOverrideTarget{AddedRuntimeKeys: []string{"existing", "z"}}, key: "existing", wantPrev: map[string]string{"existing": "s"}, wantAdded: []string{"z"}},
		"existed, now missing":             {before: v1alpha1.RuntimeOverrideTarget{PreviousRuntime: map[string]string{"new": "old", "k": "v"}}, key: "new", wantPrev: map[string]string{"k": "v"}, wantAdded: []string{"new"}},
		"other records stay, sorted added": {before: v1alpha1.RuntimeOverrideTarget{AddedRuntimeKeys: []string{"z"}}, key: "a", wantAdded: []string{"a", "z"}},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			tg := tc.before
			recordRuntime(&tg, tc.key, rt)
			if diff := cmp.Diff(tc.wantPrev, tg.PreviousRuntime); diff != "" {
				t.Errorf("previous (-want +got):\n%s", diff)
			}
			if diff := cmp.Diff(tc.wantAdded, tg.AddedRuntimeKeys); diff != "" {
				t.Errorf("added (-want +got):\n%s", diff)
			}
		})
	}
}

// TestRelevel records again only the loggers whose level is no longer the
// one the override gives them; a logger still at the override's level
// keeps its record, whatever its level was before.
func TestRelevel(t *testing.T) {
	spec := &v1alpha1.LoggingOverride{Level: "trace", Components: map[string]v1alpha1.LogLevel{"http": "error"}}
	cases := map[string]struct {
		prev     map[string]string
		keys     []string
		levels   map[string]string
		wantLost int
		want     map[string]string
	}{
		"components all held": {
			prev: map[string]string{"http": "warning"}, keys: []string{"logging:http"},
			levels: map[string]string{"http": "error", "main": "info"},
			want:   map[string]string{"http": "warning"},
		},
		"a component lost (restarted)": {
			prev: map[string]string{"http": "warning"}, keys: []string{"logging:http"},
			levels:   map[string]string{"http": "info", "main": "info"},
			wantLost: 1, want: map[string]string{"http": "info"},
		},
		"a component the proxy lacks keeps its record": {
			prev: map[string]string{"http": "warning"}, keys: []string{"logging:http"},
			levels: map[string]string{"main": "info"},
			want:   map[string]string{"http": "warning"},
		},
		"all loggers held": {
			prev: map[string]string{"*": "info", "upstream": "warning"}, keys: []string{"logging:*", "logging:http"},
			levels: map[string]string{"http": "error", "main": "trace", "upstream": "trace"},
			want:   map[string]string{"*": "info", "upstream": "warning"},
		},
		"all loggers lost (restarted)": {
			prev: map[string]string{"*": "info", "upstream": "warning"}, keys: []string{"logging:*", "logging:http"},
			levels:   map[string]string{"http": "debug", "main": "debug", "upstream": "debug"},
			wantLost: 3, want: map[string]string{"*": "debug"},
		},
		"one logger changed by someone else": {
			prev: map[string]string{"*": "info", "upstream": "warning"}, keys: []string{"logging:*", "logging:http"},
			levels:   map[string]string{"http": "error", "main": "trace", "upstream": "critical"},
			wantLost: 1, want: map[string]string{"*": "info", "upstream": "critical"},
		},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			tg := v1alpha1.RuntimeOverrideTarget{PreviousLogLevels: tc.prev}
			if lost := relevel(&tg, spec, tc.keys, tc.levels); lost != tc.wantLost {
				t.Errorf("lost %d, want %d", lost, tc.wantLost)
			}
			if diff := cmp.Diff(tc.want, tg.PreviousLogLevels); diff != "" {
				t.Errorf("previous levels (-want +got):\n%s", diff)
			}
		})
	}
}

// recorded is one event a recorder got.
type recorded struct {
	regarding, eventType, reason, note string
}

// recorder keeps the events it is given.
type recorder struct {
	mu     sync.Mutex
	events []recorded
}

func (r *recorder) Eventf(regarding, _ runtime.Object, eventType, reason, _, note string, args ...any) {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.events = append(r.events, recorded{regarding.(client.Object).GetName(), eventType, reason, fmt.Sprintf(note, args...)})
}

// TestEventBatch records up to maxPodEvents pod events per reason on the
// pods, counts the rest in one event on the resource, and always sums up
// failed admin calls on the resource.
func TestEventBatch(t *testing.T) {
	rec := &recorder{}
	m, err := NewMetrics(nil)
	if err != nil {
		t.Fatal(err)
	}
	e := &env{recorder: rec, opts: Options{Metrics: m}}
	o := &v1alpha1.ProxyRuntimeOverride{ObjectMeta: metav1.ObjectMeta{Name: "tune", Namespace: "ns"}}
	ev := e.newEvents(kindRuntimeOverride, o)
	pod := func(i int) *corev1.Pod {
		return &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Name: fmt.Sprintf("web-%02d", i), Namespace: "ns"}}
	}
	var wg sync.WaitGroup
	for i := range 25 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			ev.pod(pod(i), corev1.EventTypeNormal, reasonApplied, "runtime override set: runtime:k")
		}()
	}
	wg.Wait()
	ev.pod(pod(3), corev1.EventTypeWarning, reasonAdminCallFailed, "dial tcp: connection refused")
	ev.pod(pod(4), corev1.EventTypeWarning, reasonAdminCallFailed, "timeout")
	ev.flush()
	ev.flush() // nothing twice

	var onPods, onResource []recorded
	for _, r := range rec.events {
		if r.regarding == "tune" {
			onResource = append(onResource, r)
		} else {
			onPods = append(onPods, r)
		}
	}
	if len(onPods) != maxPodEvents+2 {
		t.Errorf("%d pod events, want %d: %v", len(onPods), maxPodEvents+2, onPods)
	}
	for i, r := range onPods[:maxPodEvents] {
		if want := fmt.Sprintf("web-%02d", i); r.regarding != want || r.reason != reasonApplied {
			t.Errorf("pod event %d: %+v, want Applied on %s (name order)", i, r, want)
		}
	}
	want := []recorded{
		{"tune", "Normal", "Applied", "Applied on 15 pods more (events on the first 10 pods only): runtime override set: runtime:k: web-10; web-11; web-12; and 12 more"},
		{"tune", "Warning", "AdminCallFailed", "admin calls failed on 2 pods: web-03: dial tcp: connection refused; web-04: timeout"},
	}
	if diff := cmp.Diff(want, onResource, cmp.AllowUnexported(recorded{})); diff != "" {
		t.Errorf("resource events (-want +got):\n%s", diff)
	}
	if got := metricValue(t, m.eventsFolded.WithLabelValues(kindRuntimeOverride, reasonApplied)); got != 15 {
		t.Errorf("aggregated events metric %v, want 15", got)
	}
}

// timeoutError is a net.Error that timed out.
type timeoutError struct{}

func (timeoutError) Error() string   { return "i/o timeout" }
func (timeoutError) Timeout() bool   { return true }
func (timeoutError) Temporary() bool { return true }

// TestCallResult classifies admin call errors for the metrics.
func TestCallResult(t *testing.T) {
	cases := map[string]struct {
		err  error
		want string
	}{
		"ok":            {nil, callSuccess},
		"refused call":  {fmt.Errorf("wrapped: %w", &adminclient.StatusError{Code: 503}), callHTTPError},
		"deadline":      {fmt.Errorf("GET /x: %w", context.DeadlineExceeded), callTimeout},
		"net timeout":   {&net.OpError{Op: "dial", Err: timeoutError{}}, callTimeout},
		"refused dial":  {&net.OpError{Op: "dial", Err: errors.New("connection refused")}, callUnreachable},
		"anything else": {errors.New("port-forward: lost"), callUnreachable},
	}
	for name, tc := range cases {
		if got := callResult(tc.err); got != tc.want {
			t.Errorf("%s: got %s, want %s", name, got, tc.want)
		}
	}
}

// TestMetrics registers the metrics, sums the phases of the resources of a
// kind into the targets gauge, forgets a resource that goes, and zeroes
// everything when the lease is lost.
func TestMetrics(t *testing.T) {
	reg := prometheus.NewRegistry()
	m, err := NewMetrics(reg)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := NewMetrics(reg); err == nil {
		t.Error("registering twice succeeded")
	}
	ts := func(phases ...v1alpha1.TargetPhase) []*v1alpha1.TargetStatus {
		var out []*v1alpha1.TargetStatus
		for _, p := range phases {
			out = append(out, &v1alpha1.TargetStatus{Phase: p})
		}
		return out
	}
	a, b := types.NamespacedName{Namespace: "ns", Name: "a"}, types.NamespacedName{Namespace: "ns", Name: "b"}
	m.setTargets(kindRuntimeOverride, a, ts(v1alpha1.PhaseApplied, v1alpha1.PhaseApplied, v1alpha1.PhaseFailed))
	m.setTargets(kindRuntimeOverride, b, ts(v1alpha1.PhaseApplied))
	m.setTargets(kindHealthCheck, a, ts(v1alpha1.PhasePending))
	gauge := func(kind string, p v1alpha1.TargetPhase) float64 {
		return metricValue(t, m.targets.WithLabelValues(kind, string(p)))
	}
	if gauge(kindRuntimeOverride, v1alpha1.PhaseApplied) != 3 || gauge(kindRuntimeOverride, v1alpha1.PhaseFailed) != 1 ||
		gauge(kindHealthCheck, v1alpha1.PhasePending) != 1 || gauge(kindDrain, v1alpha1.PhaseDrained) != 0 {
		t.Errorf("targets gauge wrong after set")
	}
	m.setTargets(kindRuntimeOverride, a, nil)
	if gauge(kindRuntimeOverride, v1alpha1.PhaseApplied) != 1 || gauge(kindRuntimeOverride, v1alpha1.PhaseFailed) != 0 {
		t.Errorf("targets gauge wrong after a resource went")
	}
	m.LeadershipLost()
	if gauge(kindRuntimeOverride, v1alpha1.PhaseApplied) != 0 || gauge(kindHealthCheck, v1alpha1.PhasePending) != 0 {
		t.Errorf("targets gauge not zeroed when the lease was lost")
	}
	m.AdminObserver()("GET", "/server_info", 0, nil)
	m.AdminObserver()("POST", "/runtime_modify", 0, &adminclient.StatusError{Code: 503})
	families, err := reg.Gather()
	if err != nil {
		t.Fatal(err)
	}
	var names []string
	for _, f := range families {
		names = append(names, f.GetName())
	}
	want := "outrigger_controller_admin_call_duration_seconds outrigger_controller_admin_calls_total outrigger_controller_leadership_acquired_total outrigger_controller_leadership_lost_total outrigger_controller_targets"
	if got := strings.Join(names, " "); got != want {
		t.Errorf("families with samples:\n%s\nwant\n%s", got, want)
	}
	if got := metricValue(t, m.adminCalls.WithLabelValues("/runtime_modify", callHTTPError)); got != 1 {
		t.Errorf("admin calls /runtime_modify http_error = %v, want 1", got)
	}
}

// metricValue reads a counter or gauge.
func metricValue(t *testing.T, c prometheus.Metric) float64 {
	t.Helper()
	var m dto.Metric
	if err := c.Write(&m); err != nil {
		t.Fatal(err)
	}
	switch {
	case m.Counter != nil:
		return m.Counter.GetValue()
	case m.Gauge != nil:
		return m.Gauge.GetValue()
	}
	t.Fatalf("%v is not a counter or gauge", c.Desc())
	return 0
}

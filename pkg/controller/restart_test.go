package controller

import (
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// TestStartedAfter checks when a proxy's start, read from its uptime, is
// certainly later than the start on record: never for the same process,
// however long the call or the reconcile took, and always for a proxy that
// started more than 3 s after the recorded one.
func TestStartedAfter(t *testing.T) {
	// The proxy on record started at t0 + 0.4 s; its answer came back at
	// t0 + 10.7 s with an uptime of 10 s.
	t0 := time.Date(2026, 11, 25, 12, 0, 0, 0, time.UTC)
	recorded := observeStart(t0.Add(10600*time.Millisecond), t0.Add(10700*time.Millisecond), 10*time.Second).record()
	if want := metav1.NewTime(t0); !recorded.Equal(&want) {
		t.Fatalf("recorded start %s, want %s", recorded.UTC(), t0)
	}
	cases := map[string]struct {
		// trueStart is when the answering proxy started; before and
		// after are the true times around the call, from t0; skew is how
		// far the clock of the replica checking runs ahead.
		trueStart     time.Duration
		before, after time.Duration
		skew          time.Duration
		want          bool
	}{
		"same process, fast call":                  {trueStart: 400 * time.Millisecond, before: 60 * time.Second, after: 60*time.Second + time.Millisecond},
		"same process, call of 20 s":               {trueStart: 400 * time.Millisecond, before: 60 * time.Second, after: 80 * time.Second},
		"same process, much later":                 {trueStart: 400 * time.Millisecond, before: 999 * time.Second, after: 999*time.Second + 5*time.Millisecond},
		"same process, a clock a second ahead":     {trueStart: 400 * time.Millisecond, before: 61 * time.Second, after: 61 * time.Second, skew: time.Second},
		"restarted 2 s later: not provable":        {trueStart: 2400 * time.Millisecond, before: 60 * time.Second, after: 60 * time.Second},
		"restarted 4 s later":                      {trueStart: 4400 * time.Millisecond, before: 60 * time.Second, after: 60*time.Second + time.Millisecond, want: true},
		"restarted an hour later":                  {trueStart: time.Hour, before: 2 * time.Hour, after: 2 * time.Hour, want: true},
		"restarted 15 s later, answer slow by 10s": {trueStart: 15400 * time.Millisecond, before: 60 * time.Second, after: 70 * time.Second, want: true},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			for _, answered := range []time.Duration{tc.before, tc.before + (tc.after-tc.before)/2, tc.after} {
				// The proxy measured its uptime somewhere in the call,
				// and truncated it.
				uptime := (answered - tc.trueStart).Truncate(time.Second)
				obs := observeStart(t0.Add(tc.before+tc.skew), t0.Add(tc.after+tc.skew), uptime)
				if got := obs.startedAfter(&recorded); got != tc.want {
					t.Errorf("answered at %s: startedAfter = %v, want %v (window %s .. %s, recorded %s)", answered, got, tc.want,
						obs.earliest.Sub(t0), obs.latest.Sub(t0), recorded.Sub(t0))
				}
				if tc.skew == 0 && (obs.earliest.After(t0.Add(tc.trueStart)) || obs.latest.Before(t0.Add(tc.trueStart))) {
					t.Errorf("answered at %s: window %s .. %s misses the true start %s", answered, obs.earliest.Sub(t0), obs.latest.Sub(t0), tc.trueStart)
				}
			}
		})
	}
	if (observedStart{earliest: t0.Add(time.Hour)}).startedAfter(nil) {
		t.Error("startedAfter(nil) = true: nothing on record is no restart")
	}
}

// TestRestartSignal names the reason to think a proxy restarted.
func TestRestartSignal(t *testing.T) {
	t0 := metav1.NewTime(time.Date(2026, 11, 25, 12, 0, 0, 0, time.UTC))
	same := observeStart(t0.Add(time.Minute), t0.Add(time.Minute), time.Minute)
	later := observeStart(t0.Add(time.Minute), t0.Add(time.Minute), 10*time.Second)
	cases := map[string]struct {
		obs      *observedStart
		restarts int32
		want     string
	}{
		"nothing":                  {obs: &same},
		"no probe, no kubelet say": {},
		"the kubelet counts one":   {obs: &same, restarts: 3, want: "the kubelet counts a restart of the proxy container"},
		"the uptime says so":       {obs: &later, restarts: 2, want: "the proxy's uptime says it started after the values were set"},
		"fewer restarts (a new record of an older status)": {obs: &same, restarts: 1},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			if got := restartSignal(&t0, 2, tc.obs, tc.restarts); got != tc.want {
				t.Errorf("got %q, want %q", got, tc.want)
			}
		})
	}
}

// TestProxyRestarts reads the proxy container's restart count, as a
// container or a native sidecar.
func TestProxyRestarts(t *testing.T) {
	pod := &corev1.Pod{Status: corev1.PodStatus{
		ContainerStatuses:     []corev1.ContainerStatus{{Name: "app", RestartCount: 7}, {Name: "proxy", RestartCount: 2}},
		InitContainerStatuses: []corev1.ContainerStatus{{Name: "sidecar", RestartCount: 5}},
	}}
	for container, want := range map[string]int32{"proxy": 2, "sidecar": 5, "missing": 0} {
		if got := proxyRestarts(pod, container); got != want {
			t.Errorf("%s: got %d, want %d", container, got, want)
		}
	}
}

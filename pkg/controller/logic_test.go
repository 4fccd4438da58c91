package controller

import (
	"fmt"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/outrigger-dev/outrigger/internal/golden"
	"github.com/outrigger-dev/outrigger/pkg/apis/proxy/v1alpha1"
)

// obj is a resource created at second sec, for the conflict rule.
func obj(name string, sec int64) metav1.Object {
	return &metav1.ObjectMeta{Name: name, CreationTimestamp: metav1.Unix(sec, 0)}
}

func TestDivide(t *testing.T) {
	self := obj("self", 100)
	cases := map[string]struct {
		keys     []string
		others   []claimant
		wantHeld []string
		wantLost map[string]string
	}{
		"no others": {
			keys: []string{"runtime:a"}, wantHeld: []string{"runtime:a"},
		},
		"older holds the same key": {
			keys:     []string{"runtime:a", "runtime:b"},
			others:   []claimant{{obj: obj("old", 50), keys: []string{"runtime:a"}}},
			wantHeld: []string{"runtime:b"}, wantLost: map[string]string{"runtime:a": "old"},
		},
		"newer does not take a key": {
			keys:     []string{"runtime:a"},
			others:   []claimant{{obj: obj("new", 150), keys: []string{"runtime:a"}}},
			wantHeld: []string{"runtime:a"},
		},
		"same second: the name decides": {
			keys:     []string{"runtime:a"},
			others:   []claimant{{obj: obj("aaa", 100), keys: []string{"runtime:a"}}, {obj: obj("zzz", 100), keys: []string{"runtime:a"}}},
			wantLost: map[string]string{"runtime:a": "aaa"},
		},
		"the oldest holder is named": {
			keys:     []string{"runtime:a"},
			others:   []claimant{{obj: obj("b-old", 60), keys: []string{"runtime:a"}}, {obj: obj("a-oldest", 10), keys: []string{"runtime:a"}}},
			wantLost: map[string]string{"runtime:a": "a-oldest"},
		},
		"all-loggers level overlaps a component": {
			keys:     []string{"logging:http", "runtime:a"},
			others:   []claimant{{obj: obj("old", 50), keys: []string{"logging:*"}}},
			wantHeld: []string{"runtime:a"}, wantLost: map[string]string{"logging:http": "old"},
		},
		"a component overlaps the all-loggers level": {
			keys:     []string{"logging:*"},
			others:   []claimant{{obj: obj("old", 50), keys: []string{"logging:admin"}}},
			wantLost: map[string]string{"logging:*": "old"},
		},
		"different components do not overlap": {
			keys:     []string{"logging:http"},
			others:   []claimant{{obj: obj("old", 50), keys: []string{"logging:admin", "runtime:http"}}},
			wantHeld: []string{"logging:http"},
		},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			held, lost := divide(self, tc.keys, tc.others)
			if diff := cmp.Diff(tc.wantHeld, held); diff != "" {
				t.Errorf("held (-want +got):\n%s", diff)
			}
			if diff := cmp.Diff(tc.wantLost, lost); diff != "" {
				t.Errorf("lost (-want +got):\n%s", diff)
			}
		})
	}
}

func TestAwaitRelease(t *testing.T) {
	cases := map[string]struct {
		held     []string
		recorded []claimant
		wantFree []string
		wantBusy map[string]string
	}{
		"nothing on record": {
			held: []string{"runtime:a"}, wantFree: []string{"runtime:a"},
		},
		// Age does not matter: an older or newer one, going or not, that
		// still has the key on record has to set it back first.
		"an older one still has the key": {
			held:     []string{"runtime:a", "runtime:b"},
			recorded: []claimant{{obj: obj("old", 50), keys: []string{"runtime:a"}}},
			wantFree: []string{"runtime:b"}, wantBusy: map[string]string{"runtime:a": "old"},
		},
		"a newer one still has the key": {
			held:     []string{"runtime:a"},
			recorded: []claimant{{obj: obj("new", 150), keys: []string{"runtime:a"}}},
			wantBusy: map[string]string{"runtime:a": "new"},
		},
		"the oldest is named": {
			held:     []string{"runtime:a"},
			recorded: []claimant{{obj: obj("b", 60), keys: []string{"runtime:a"}}, {obj: obj("a", 10), keys: []string{"runtime:a"}}, {obj: obj("c", 5), keys: []string{"runtime:z"}}},
			wantBusy: map[string]string{"runtime:a": "a"},
		},
		"the all-loggers level on record holds every logger": {
			held:     []string{"logging:http", "runtime:http"},
			recorded: []claimant{{obj: obj("old", 50), keys: []string{"logging:*"}}},
			wantFree: []string{"runtime:http"}, wantBusy: map[string]string{"logging:http": "old"},
		},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			free, busy := awaitRelease(tc.held, tc.recorded)
			if diff := cmp.Diff(tc.wantFree, free); diff != "" {
				t.Errorf("free (-want +got):\n%s", diff)
			}
			if diff := cmp.Diff(tc.wantBusy, busy); diff != "" {
				t.Errorf("busy (-want +got):\n%s", diff)
			}
		})
	}
}

func TestOnRecord(t *testing.T) {
	cases := map[string]struct {
		target v1alpha1.RuntimeOverrideTarget
		want   []string
	}{
		"nothing recorded": {},
		"set and recorded keys": {
			target: v1alpha1.RuntimeOverrideTarget{
				AppliedKeys:       []string{"logging:http", "runtime:a"},
				PreviousRuntime:   map[string]string{"a": "1"},
				AddedRuntimeKeys:  []string{"b"},
				PreviousLogLevels: map[string]string{"http": "info"},
			},
			want: []string{"logging:http", "runtime:a", "runtime:b"},
		},
		// Recorded before the keys are set (InProgress), or left to set
		// back after the key was lost (not applied any more).
		"recorded, not applied": {
			target: v1alpha1.RuntimeOverrideTarget{PreviousRuntime: map[string]string{"a": "1"}, PreviousLogLevels: map[string]string{"*": "info", "upstream": "warning"}},
			want:   []string{"logging:*", "logging:upstream", "runtime:a"},
		},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			if diff := cmp.Diff(tc.want, onRecord(&tc.target)); diff != "" {
				t.Errorf("(-want +got):\n%s", diff)
			}
		})
	}
}

func TestOverrideKeys(t *testing.T) {
	spec := &v1alpha1.ProxyRuntimeOverrideSpec{
		Runtime: map[string]string{"b": "1", "a": "2"},
		Logging: &v1alpha1.LoggingOverride{Level: "debug", Components: map[string]v1alpha1.LogLevel{"http": "trace"}},
	}
	want := []string{"logging:*", "logging:http", "runtime:a", "runtime:b"}
	if diff := cmp.Diff(want, overrideKeys(spec)); diff != "" {
		t.Errorf("keys (-want +got):\n%s", diff)
	}
}

func TestCompressLevels(t *testing.T) {
	cases := map[string]struct {
		levels map[string]string
		want   map[string]string
	}{
		"all alike": {
			levels: map[string]string{"a": "info", "b": "info"},
			want:   map[string]string{"*": "info"},
		},
		"exceptions kept": {
			levels: map[string]string{"a": "info", "b": "info", "c": "debug"},
			want:   map[string]string{"*": "info", "c": "debug"},
		},
		"a tie goes to the first level name": {
			levels: map[string]string{"a": "warning", "b": "debug"},
			want:   map[string]string{"*": "debug", "a": "warning"},
		},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			if diff := cmp.Diff(tc.want, compressLevels(tc.levels)); diff != "" {
				t.Errorf("(-want +got):\n%s", diff)
			}
		})
	}
}

func TestRetryAt(t *testing.T) {
	e := &env{opts: Options{RetryBase: time.Second, RetryMax: 10 * time.Second}}
	last := metav1.Unix(1000, 0)
	cases := map[string]struct {
		attempts int32
		want     time.Duration
	}{
		"first failure":     {attempts: 1, want: time.Second},
		"third failure":     {attempts: 3, want: 4 * time.Second},
		"capped":            {attempts: 10, want: 10 * time.Second},
		"many, no overflow": {attempts: 1000, want: 10 * time.Second},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			got := e.retryAt(&v1alpha1.TargetStatus{Attempts: tc.attempts, LastAttemptTime: &last})
			if d := got.Sub(last.Time); d != tc.want {
				t.Errorf("retry after %s, want %s", d, tc.want)
			}
		})
	}
}

func TestEndpointFor(t *testing.T) {
	pod := func(ann map[string]string) *corev1.Pod {
		return &corev1.Pod{
			ObjectMeta: metav1.ObjectMeta{Name: "p", Namespace: "ns", UID: "u", Annotations: ann},
			Status:     corev1.PodStatus{PodIP: "10.0.0.1"},
		}
	}
	cases := map[string]struct {
		ann      map[string]string
		wantPort int32
		wantErr  string
	}{
		"default port":   {wantPort: 9901},
		"annotated port": {ann: map[string]string{v1alpha1.AdminPortAnnotation: "15000"}, wantPort: 15000},
		"not a number":   {ann: map[string]string{v1alpha1.AdminPortAnnotation: "admin"}, wantErr: `"admin" is not a port number`},
		"zero":           {ann: map[string]string{v1alpha1.AdminPortAnnotation: "0"}, wantErr: `"0" is not a port number`},
		"beyond 65535":   {ann: map[string]string{v1alpha1.AdminPortAnnotation: "70000"}, wantErr: `"70000" is not a port number`},
		"negative":       {ann: map[string]string{v1alpha1.AdminPortAnnotation: "-1"}, wantErr: `"-1" is not a port number`},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			e, err := endpointFor(pod(tc.ann))
			if tc.wantErr != "" {
				if err == nil || !strings.Contains(err.Error(), tc.wantErr) {
					t.Fatalf("got %v, want %q", err, tc.wantErr)
				}
				return
			}
			if err != nil || e.Port != tc.wantPort || e.IP != "10.0.0.1" || e.Pod != "p" || e.Namespace != "ns" {
				t.Errorf("endpoint %+v, error %v", e, err)
			}
		})
	}
}

func TestIsTarget(t *testing.T) {
	always := corev1.ContainerRestartPolicyAlways
	running := corev1.PodStatus{Phase: corev1.PodRunning, PodIP: "10.0.0.1"}
	cases := map[string]struct {
		spec   corev1.PodSpec
		status corev1.PodStatus
		want   bool
	}{
		"proxy container": {
			spec: corev1.PodSpec{Containers: []corev1.Container{{Name: "app"}, {Name: "proxy"}}}, status: running, want: true,
		},
		"native sidecar": {
			spec:   corev1.PodSpec{InitContainers: []corev1.Container{{Name: "proxy", RestartPolicy: &always}}, Containers: []corev1.Container{{Name: "app"}}},
			status: running, want: true,
		},
		"plain init container": {
			spec:   corev1.PodSpec{InitContainers: []corev1.Container{{Name: "proxy"}}, Containers: []corev1.Container{{Name: "app"}}},
			status: running,
		},
		"no proxy": {
			spec: corev1.PodSpec{Containers: []corev1.Container{{Name: "app"}}}, status: running,
		},
		"pending": {
			spec: corev1.PodSpec{Containers: []corev1.Container{{Name: "proxy"}}}, status: corev1.PodStatus{Phase: corev1.PodPending, PodIP: "10.0.0.1"},
		},
		"no pod IP": {
			spec: corev1.PodSpec{Containers: []corev1.Container{{Name: "proxy"}}}, status: corev1.PodStatus{Phase: corev1.PodRunning},
		},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			if got := isTarget(&corev1.Pod{Spec: tc.spec, Status: tc.status}, "proxy"); got != tc.want {
				t.Errorf("isTarget = %t, want %t", got, tc.want)
			}
		})
	}
}

// TestSummary renders the counters and conditions of typical states and
// compares them with a golden file.
func TestSummary(t *testing.T) {
	ts := func(name string, phase v1alpha1.TargetPhase, msg string) *v1alpha1.TargetStatus {
		return &v1alpha1.TargetStatus{PodName: name, Phase: phase, Message: msg}
	}
	cases := []struct {
		name string
		s    summary
	}{
		{"no targets", summary{container: "proxy"}},
		{"rolling out", summary{selected: 3, targets: []*v1alpha1.TargetStatus{
			ts("a", v1alpha1.PhaseApplied, ""), ts("b", v1alpha1.PhaseInProgress, ""), ts("c", v1alpha1.PhasePending, "")}}},
		{"done", summary{selected: 2, targets: []*v1alpha1.TargetStatus{
			ts("a", v1alpha1.PhaseApplied, ""), ts("b", v1alpha1.PhaseApplied, "")}}},
		{"failing", summary{selected: 5, targets: []*v1alpha1.TargetStatus{
			ts("a", v1alpha1.PhaseFailed, "dial tcp: connection refused"), ts("b", v1alpha1.PhaseFailed, "timeout"),
			ts("c", v1alpha1.PhaseFailed, "x"), ts("d", v1alpha1.PhaseFailed, "y"), ts("e", v1alpha1.PhaseApplied, "")}}},
		{"invalid annotation", summary{selected: 1, invalid: []string{"a"}, targets: []*v1alpha1.TargetStatus{
			ts("a", v1alpha1.PhaseFailed, "annotation ...")}}},
		{"too many", summary{selected: 300, overflow: 44, targets: []*v1alpha1.TargetStatus{ts("a", v1alpha1.PhaseApplied, "")}}},
		{"conflict", summary{selected: 1, hasConflict: true, conflict: "keys held by older overrides on 1 pod: a: runtime:k (held by x)",
			targets: []*v1alpha1.TargetStatus{ts("a", v1alpha1.PhaseApplied, "")}}},
		{"deleting", summary{deleting: true, selected: 1, targets: []*v1alpha1.TargetStatus{ts("a", v1alpha1.PhaseApplied, "")}}},
		{"expired", summary{expired: true, selected: 1, targets: []*v1alpha1.TargetStatus{ts("a", v1alpha1.PhaseReverted, "")}}},
	}
	var out strings.Builder
	for _, tc := range cases {
		tc.s.generation, tc.s.succeeded = 3, "applied"
		var st v1alpha1.CommonStatus
		tc.s.apply(&st)
		fmt.Fprintf(&out, "== %s\ncounters %+v generation %d\n", tc.name, st.Counters, st.ObservedGeneration)
		for _, c := range st.Conditions {
			fmt.Fprintf(&out, "%s=%s %s: %s\n", c.Type, c.Status, c.Reason, c.Message)
		}
	}
	golden.Check(t, filepath.Join("testdata", "summary.txt"), []byte(out.String()))
}

// TestOptions refuses options that cannot work.
func TestOptions(t *testing.T) {
	o := Options{Workers: -1, RetryBase: time.Minute, RetryMax: time.Second}.withDefaults()
	err := o.validate()
	want := "admin client is required\nworkers must be at least 1, not -1\nretry max 1s is below retry base 1m0s"
	if err == nil || err.Error() != want {
		t.Errorf("got %v, want %q", err, want)
	}
}

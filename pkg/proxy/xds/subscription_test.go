package xds

import (
	"errors"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/cespare/xxhash/v2"
	"github.com/google/go-cmp/cmp"

	"github.com/outrigger-dev/outrigger/pkg/proxy/stats"
)

func TestNewFileSubscriptionErrors(t *testing.T) {
	dir := t.TempDir()
	file := writeFile(t, dir, "lds.yaml", ldsYAML("1"))
	scope := stats.NewStore().Scope("lds.")
	apply := func(Update) error { return nil }
	tests := map[string]struct {
		o     FileOptions
		apply func(Update) error
		want  string
	}{
		"no path":           {o: FileOptions{TypeURL: ListenerTypeURL, Stats: scope}, apply: apply, want: "a path is required"},
		"no type":           {o: FileOptions{Path: file, Stats: scope}, apply: apply, want: "a resource type URL is required"},
		"no stats":          {o: FileOptions{Path: file, TypeURL: ListenerTypeURL}, apply: apply, want: "a stats scope is required"},
		"no apply":          {o: FileOptions{Path: file, TypeURL: ListenerTypeURL, Stats: scope}, want: "an apply function is required"},
		"type not linked":   {o: FileOptions{Path: file, TypeURL: "type.googleapis.com/x.Y", Stats: scope}, apply: apply, want: `resource type "type.googleapis.com/x.Y" is not linked in: proto: not found`},
		"missing file":      {o: FileOptions{Path: "/nonexistent/lds.yaml", TypeURL: ListenerTypeURL, Stats: scope}, apply: apply, want: "paths must refer to an existing path in the system: '/nonexistent/lds.yaml' does not exist"},
		"missing directory": {o: FileOptions{Path: file, WatchedDirectory: "/nonexistent", TypeURL: ListenerTypeURL, Stats: scope}, apply: apply, want: "paths must refer to an existing path in the system: '/nonexistent' does not exist"},
		"directory a file":  {o: FileOptions{Path: file, WatchedDirectory: file, TypeURL: ListenerTypeURL, Stats: scope}, apply: apply, want: "'" + file + "' is not a directory"},
	}
	for name, tc := range tests {
		t.Run(name, func(t *testing.T) {
			sub, err := NewFileSubscription(tc.o, tc.apply)
			if err == nil {
				_ = sub.Close()
				t.Fatal("no error")
			}
			if got := strings.ReplaceAll(err.Error(), "\u00a0", " "); got != tc.want {
				t.Errorf("error = %q, want %q", got, tc.want)
			}
		})
	}
}

func TestNewFileSubscriptionCreatesStats(t *testing.T) {
	f := newFixture(t, writeFile(t, t.TempDir(), "lds.yaml", ldsYAML("1")), FileOptions{})
	want := []string{
		"listener_manager.lds.init_fetch_timeout",
		"listener_manager.lds.update_attempt",
		"listener_manager.lds.update_failure",
		"listener_manager.lds.update_rejected",
		"listener_manager.lds.update_success",
		"server.dynamic_unknown_fields",
	}
	if diff := cmp.Diff(want, f.store.CounterNames()); diff != "" {
		t.Errorf("counters before any read (-want +got):\n%s", diff)
	}
	if diff := cmp.Diff([]string{"listener_manager.lds.update_time", "listener_manager.lds.version"}, f.store.GaugeNames()); diff != "" {
		t.Errorf("gauges before any read (-want +got):\n%s", diff)
	}
	if f.sub.Version() != "" || !f.sub.LastUpdated().IsZero() {
		t.Errorf("before any read: version %q, last updated %v", f.sub.Version(), f.sub.LastUpdated())
	}
}

// unknownLDS has two unknown fields, one at the top and one in a listener.
const unknownLDS = `version_info: "u1"
nonce2: x
resources:
- "@type": type.googleapis.com/envoy.config.listener.v3.Listener
  name: a
  address: {socket_address: {address: 127.0.0.1, port_value: 0}}
  foo: 1
`

// TestRefresh reads files twice under each policy and records the stats
// and the log in a golden file.
func TestRefresh(t *testing.T) {
	tests := []struct {
		name    string
		content string
		policy  UnknownPolicy
		refuse  error
		// wantApplied is the versions apply sees over the two reads.
		wantApplied []string
	}{
		{name: "success", content: ldsYAML("7"), wantApplied: []string{"7", "7"}},
		{name: "empty file", content: " \n"},
		{name: "empty response", content: "{}", wantApplied: []string{"", ""}},
		{name: "failure", content: "resources: [\n"},
		{name: "type mismatch", content: `resources: [{"@type": type.googleapis.com/envoy.config.cluster.v3.Cluster, name: c}]`},
		{name: "rejected by apply", content: ldsYAML("7"), refuse: errors.New("error adding listener 'l7': bind failed\nsecond line"), wantApplied: []string{"7", "7"}},
		{name: "unknown fields warned", content: unknownLDS, wantApplied: []string{"u1", "u1"}},
		{name: "unknown fields rejected", content: unknownLDS, policy: UnknownReject},
		{name: "unknown fields ignored", content: unknownLDS, policy: UnknownIgnore, wantApplied: []string{"u1", "u1"}},
	}
	var out strings.Builder
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			f := newFixture(t, writeFile(t, t.TempDir(), "lds.yaml", tc.content), FileOptions{Unknown: tc.policy})
			f.refuse = tc.refuse
			f.sub.refresh()
			f.sub.refresh()
			if diff := cmp.Diff(tc.wantApplied, f.versions()); diff != "" {
				t.Errorf("applied versions (-want +got):\n%s", diff)
			}
			accepted := len(tc.wantApplied) > 0 && tc.refuse == nil
			if accepted {
				if f.sub.Version() != tc.wantApplied[0] || !f.sub.LastUpdated().Equal(testNow) {
					t.Errorf("Version() = %q, LastUpdated() = %v", f.sub.Version(), f.sub.LastUpdated())
				}
				wantHash := int64(xxhash.Sum64String(tc.wantApplied[0]))
				if got := f.store.Gauge("listener_manager.lds.version").Value(); got != wantHash {
					t.Errorf("version gauge = %d, want xxHash64 %d", got, wantHash)
				}
			} else if f.sub.Version() != "" || !f.sub.LastUpdated().IsZero() {
				t.Errorf("nothing accepted, yet Version() = %q, LastUpdated() = %v", f.sub.Version(), f.sub.LastUpdated())
			}
			out.WriteString("== " + tc.name + "\n" + f.statsText())
			if logs := f.log.take(); logs != "" {
				out.WriteString(strings.ReplaceAll(logs, filepath.Dir(f.sub.path), "DIR") + "\n")
			}
		})
	}
	checkGolden(t, "refresh.golden", out.String())
}

// TestUpdateDuration checks that an accepted update records its duration
// in milliseconds, by the injected clock.
func TestUpdateDuration(t *testing.T) {
	f := newFixture(t, writeFile(t, t.TempDir(), "lds.yaml", ldsYAML("1")), FileOptions{})
	var calls int
	f.sub.now = func() time.Time {
		calls++
		return testNow.Add(time.Duration(calls) * 40 * time.Millisecond)
	}
	f.sub.refresh()
	f.store.MergeHistograms()
	h := f.store.Histogram("listener_manager.lds.update_duration")
	if h.Unit() != stats.UnitMilliseconds {
		t.Errorf("update_duration unit = %v, want milliseconds", h.Unit())
	}
	st := h.CumulativeStatistics()
	// The sum is a bin midpoint: 40 ms falls in [40, 41).
	if st.SampleCount != 1 || st.SampleSum < 40 || st.SampleSum >= 41 {
		t.Errorf("update_duration: %d samples summing to %v, want one of 40 ms", st.SampleCount, st.SampleSum)
	}
}

func TestUnknownFieldsCountedOncePerPath(t *testing.T) {
	dir := t.TempDir()
	path := writeFile(t, dir, "lds.yaml", unknownLDS)
	f := newFixture(t, path, FileOptions{})
	f.sub.refresh()
	// The same fields again, and one new one.
	writeFile(t, dir, "lds.yaml", strings.Replace(unknownLDS, "foo: 1", "foo: 1\n  bar: 2", 1))
	f.sub.refresh()
	if got := f.unknown.Value(); got != 3 {
		t.Errorf("server.dynamic_unknown_fields = %d, want 3 (nonce2, resources[0].foo, resources[0].bar)", got)
	}
	var fields []string
	for _, line := range strings.Split(f.log.take(), "\n") {
		_, field, ok := strings.Cut(line, " field=")
		if ok {
			fields = append(fields, field)
		}
	}
	slices.Sort(fields)
	if diff := cmp.Diff([]string{"nonce2", "resources[0].bar", "resources[0].foo"}, fields); diff != "" {
		t.Errorf("warned fields (-want +got):\n%s", diff)
	}
}

func TestStartCloseLifecycle(t *testing.T) {
	dir := t.TempDir()
	f := newFixture(t, writeFile(t, dir, "lds.yaml", ldsYAML("1")), FileOptions{})
	if err := f.sub.Start(); err != nil {
		t.Fatalf("Start: %v", err)
	}
	// The initial fetch is synchronous.
	if diff := cmp.Diff([]string{"1"}, f.versions()); diff != "" {
		t.Fatalf("after Start (-want +got):\n%s", diff)
	}
	if err := f.sub.Start(); err == nil || err.Error() != "the subscription is already started" {
		t.Errorf("second Start = %v", err)
	}
	for i := range 2 {
		if err := f.sub.Close(); err != nil {
			t.Fatalf("Close #%d: %v", i+1, err)
		}
	}
	select {
	case <-f.sub.done:
	default:
		t.Fatal("Close returned with the watch goroutine still running")
	}
	if err := f.sub.Start(); err == nil || err.Error() != "the subscription is closed" {
		t.Errorf("Start after Close = %v", err)
	}
}

func TestCloseBeforeStart(t *testing.T) {
	f := newFixture(t, writeFile(t, t.TempDir(), "lds.yaml", ldsYAML("1")), FileOptions{})
	if err := f.sub.Close(); err != nil {
		t.Fatal(err)
	}
	if err := f.sub.Start(); err == nil {
		t.Fatal("Start after Close succeeded")
	}
	if got := f.versions(); len(got) != 0 {
		t.Errorf("a closed subscription applied %q", got)
	}
}

func TestStartFailedInitialFetch(t *testing.T) {
	dir := t.TempDir()
	path := writeFile(t, dir, "lds.yaml", "resources: [")
	f := newFixture(t, path, FileOptions{})
	if err := f.sub.Start(); err != nil {
		t.Fatalf("Start returned the fetch failure: %v", err)
	}
	if f.counter("update_failure") != 1 || len(f.versions()) != 0 {
		t.Fatalf("after a bad initial file: %s", f.statsText())
	}
	// A good file moved into place is picked up.
	moveInto(t, path, ldsYAML("2"))
	waitFor(t, "the good file to be applied", func() bool { return f.counter("update_success") == 1 })
	if f.sub.Version() != "2" {
		t.Errorf("Version() = %q, want 2", f.sub.Version())
	}
}

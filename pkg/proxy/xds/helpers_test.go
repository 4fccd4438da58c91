package xds

import (
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/go-logr/logr"

	"github.com/outrigger-dev/outrigger/internal/golden"
	"github.com/outrigger-dev/outrigger/pkg/proxy/stats"
)

// checkGolden compares got with testdata/<name>, or rewrites it with
// -update.
func checkGolden(t *testing.T, name, got string) {
	t.Helper()
	golden.Check(t, filepath.Join("testdata", name), []byte(got))
}

// testNow is the fake clock's time: update_time is its milliseconds.
var testNow = time.UnixMilli(1_700_000_000_123)

// logRecorder keeps the records logged through its logger, one line each:
// the message, then key=value pairs. Warnings travel on logr's Error path
// with a non-string key in front, which is skipped.
type logRecorder struct {
	mu      sync.Mutex
	records []string
}

func (r *logRecorder) logger() logr.Logger { return logr.New(recordSink{r: r}) }

// take returns the records, one per line, and forgets them.
func (r *logRecorder) take() string {
	r.mu.Lock()
	defer r.mu.Unlock()
	out := strings.Join(r.records, "\n")
	r.records = nil
	return out
}

func (r *logRecorder) add(msg string, kv []any) {
	var b strings.Builder
	b.WriteString(msg)
	for i := 0; i+1 < len(kv); i += 2 {
		if k, ok := kv[i].(string); ok {
			fmt.Fprintf(&b, " %s=%v", k, kv[i+1])
		}
	}
	r.mu.Lock()
	r.records = append(r.records, b.String())
	r.mu.Unlock()
}

// recordSink is the logr.LogSink of a logRecorder.
type recordSink struct{ r *logRecorder }

func (s recordSink) Init(logr.RuntimeInfo)                {}
func (s recordSink) Enabled(int) bool                     { return true }
func (s recordSink) Info(_ int, msg string, kv ...any)    { s.r.add(msg, kv) }
func (s recordSink) Error(_ error, msg string, kv ...any) { s.r.add(msg, kv) }
func (s recordSink) WithValues(...any) logr.LogSink       { return s }
func (s recordSink) WithName(string) logr.LogSink         { return s }

// fixture is a subscription under test with its store, log and applied
// updates.
type fixture struct {
	sub     *FileSubscription
	store   *stats.Store
	log     *logRecorder
	unknown *stats.Counter

	mu      sync.Mutex
	applied []string // version_info of each update apply saw
	// refuse makes apply fail with this error when set.
	refuse error
}

// newFixture subscribes to path with opts' policy and directory.
func newFixture(t *testing.T, path string, o FileOptions) *fixture {
	t.Helper()
	f := &fixture{store: stats.NewStore(), log: &logRecorder{}}
	f.unknown = f.store.Counter("server.dynamic_unknown_fields")
	o.Path = path
	o.TypeURL = ListenerTypeURL
	o.Stats = f.store.Scope("listener_manager.lds.")
	o.Log = f.log.logger()
	o.UnknownCounter = f.unknown
	o.Now = func() time.Time { return testNow }
	sub, err := NewFileSubscription(o, f.apply)
	if err != nil {
		t.Fatalf("NewFileSubscription: %v", err)
	}
	t.Cleanup(func() { _ = sub.Close() })
	f.sub = sub
	return f
}

func (f *fixture) apply(u Update) error {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.applied = append(f.applied, u.VersionInfo)
	return f.refuse
}

// versions returns the version_info of every applied update.
func (f *fixture) versions() []string {
	f.mu.Lock()
	defer f.mu.Unlock()
	return append([]string(nil), f.applied...)
}

// counter reads one of the subscription's counters.
func (f *fixture) counter(name string) uint64 {
	return f.store.Counter("listener_manager.lds." + name).Value()
}

// statsText renders the subscription stats and the unknown-field counter,
// one per line.
func (f *fixture) statsText() string {
	const p = "listener_manager.lds."
	var b strings.Builder
	for _, c := range []string{"init_fetch_timeout", "update_attempt", "update_failure", "update_rejected", "update_success"} {
		fmt.Fprintf(&b, "%s%s: %d\n", p, c, f.store.Counter(p+c).Value())
	}
	for _, g := range []string{"update_time", "version"} {
		fmt.Fprintf(&b, "%s%s: %d\n", p, g, f.store.Gauge(p+g).Value())
	}
	fmt.Fprintf(&b, "%sversion_text: %q\n", p, f.store.TextReadout(p+"version_text").Value())
	fmt.Fprintf(&b, "server.dynamic_unknown_fields: %d\n", f.unknown.Value())
	return b.String()
}

// waitFor polls cond until it holds, failing after a bounded wait: file
// watch events arrive asynchronously.
func waitFor(t *testing.T, what string, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(10 * time.Second)
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatalf("timed out waiting for %s", what)
		}
		time.Sleep(5 * time.Millisecond)
	}
}

// writeFile writes content to dir/name and returns its path.
func writeFile(t *testing.T, dir, name, content string) string {
	t.Helper()
	path := filepath.Join(dir, name)
	if err := os.WriteFile(path, []byte(content), 0o644); err != nil {
		t.Fatal(err)
	}
	return path
}

// moveInto writes content to a temporary file in path's directory and
// renames it over path: the atomic update the watch follows.
func moveInto(t *testing.T, path, content string) {
	t.Helper()
	tmp := writeFile(t, filepath.Dir(path), "."+filepath.Base(path)+".tmp", content)
	if err := os.Rename(tmp, path); err != nil {
		t.Fatal(err)
	}
}

// ldsYAML is a DiscoveryResponse with one listener and the given version.
func ldsYAML(version string) string {
	return `version_info: "` + version + `"
resources:
- "@type": type.googleapis.com/envoy.config.listener.v3.Listener
  name: l` + version + `
  address: {socket_address: {address: 127.0.0.1, port_value: 0}}
`
}

package logging

import (
	"bytes"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"runtime"
	"slices"
	"strings"
	"sync"
	"testing"

	"github.com/go-logr/logr"
)

// newTestRegistry returns a registry writing to a buffer with a fixed
// clock and, unless cfg says otherwise, the format "%l|%n|%v".
func newTestRegistry(t *testing.T, cfg Config) (*Registry, *bytes.Buffer) {
	t.Helper()
	var buf bytes.Buffer
	cfg.Stderr = &buf
	if cfg.Format == "" {
		cfg.Format = "%l|%n|%v"
	}
	cfg.Now = afternoon.timeFunc()
	r, err := New(cfg)
	if err != nil {
		t.Fatalf("New: %v", err)
	}
	t.Cleanup(func() {
		if err := r.Close(); err != nil {
			t.Errorf("Close: %v", err)
		}
	})
	return r, &buf
}

func lines(buf *bytes.Buffer) []string {
	s := strings.TrimSuffix(buf.String(), "\n")
	if s == "" {
		return nil
	}
	return strings.Split(s, "\n")
}

func TestLevelFilteringPerComponent(t *testing.T) {
	r, buf := newTestRegistry(t, Config{
		Level:           LevelInfo,
		ComponentLevels: map[string]Level{"upstream": LevelDebug, "http": LevelError, "router": LevelOff},
	})
	up, h, main, router := r.Logger("upstream"), r.Logger("http"), r.Logger("main"), r.Logger("router")

	up.V(1).Info("upstream debug")
	up.V(2).Info("upstream trace")
	h.Info("http info")
	h.Error(nil, "http error")
	main.V(1).Info("main debug")
	main.Info("main info")
	main.V(5).Info("main very verbose")
	router.Error(errors.New("x"), "router error")
	Critical(router, "router critical")

	want := []string{
		"debug|upstream|upstream debug",
		"error|http|http error",
		"info|main|main info",
	}
	if got := lines(buf); !slices.Equal(got, want) {
		t.Errorf("records:\n got %q\nwant %q", got, want)
	}
	enabled := map[string]bool{
		"upstream V(1)": up.V(1).Enabled(),
		"upstream V(2)": up.V(2).Enabled(),
		"http V(0)":     h.Enabled(),
		"main V(0)":     main.Enabled(),
	}
	wantEnabled := map[string]bool{"upstream V(1)": true, "upstream V(2)": false, "http V(0)": false, "main V(0)": true}
	for k, v := range wantEnabled {
		if enabled[k] != v {
			t.Errorf("%s enabled = %v, want %v", k, enabled[k], v)
		}
	}
}

// TestSeverityThresholds logs at every level under every threshold; the
// warning and critical records must survive thresholds that logr's Info
// path would filter.
func TestSeverityThresholds(t *testing.T) {
	cases := map[string]struct {
		threshold Level
		want      []string
	}{
		"trace":    {LevelTrace, []string{"trace", "debug", "info", "warning", "error", "critical"}},
		"debug":    {LevelDebug, []string{"debug", "info", "warning", "error", "critical"}},
		"info":     {LevelInfo, []string{"info", "warning", "error", "critical"}},
		"warning":  {LevelWarning, []string{"warning", "error", "critical"}},
		"error":    {LevelError, []string{"error", "critical"}},
		"critical": {LevelCritical, []string{"critical"}},
		"off":      {LevelOff, nil},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			r, buf := newTestRegistry(t, Config{Level: tc.threshold, Format: "%l"})
			l := r.Logger("misc")
			l.V(2).Info("t")
			l.V(1).Info("d")
			l.Info("i")
			Warning(l, "w")
			l.Error(nil, "e")
			Critical(l, "c")
			if got := lines(buf); !slices.Equal(got, tc.want) {
				t.Errorf("threshold %s: got %q, want %q", tc.threshold, got, tc.want)
			}
		})
	}
}

func TestWarningAndCriticalStripTheReservedKey(t *testing.T) {
	r, buf := newTestRegistry(t, Config{Format: "%l %v"})
	l := r.Logger("main").WithValues("pod", "p1")
	Warning(l, "disk low", "free", "1 GiB")
	Critical(l, "disk full")
	want := []string{`warning disk low pod=p1 free="1 GiB"`, "critical disk full pod=p1"}
	if got := lines(buf); !slices.Equal(got, want) {
		t.Errorf("got %q, want %q", got, want)
	}
}

func TestSetLevels(t *testing.T) {
	cases := map[string]struct {
		set      map[string]Level
		wantErr  error
		errText  string
		upstream Level // level of "upstream" afterwards
		http     Level
	}{
		"several":            {set: map[string]Level{"upstream": LevelTrace, "http": LevelCritical}, upstream: LevelTrace, http: LevelCritical},
		"unknown name":       {set: map[string]Level{"upstream": LevelTrace, "no_such_logger": LevelDebug}, wantErr: ErrUnknownLogger, errText: `"no_such_logger"`, upstream: LevelInfo, http: LevelInfo},
		"invalid level":      {set: map[string]Level{"upstream": LevelTrace, "http": Level(42)}, errText: "invalid level 42", upstream: LevelInfo, http: LevelInfo},
		"negative level":     {set: map[string]Level{"http": Level(-1)}, errText: "invalid level -1", upstream: LevelInfo, http: LevelInfo},
		"empty map":          {set: map[string]Level{}, upstream: LevelInfo, http: LevelInfo},
		"envoy name refused": {set: map[string]Level{"envoy_bug": LevelDebug}, wantErr: ErrUnknownLogger, upstream: LevelInfo, http: LevelInfo},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			r, _ := newTestRegistry(t, Config{Level: LevelInfo})
			err := r.SetLevels(tc.set)
			switch {
			case tc.wantErr != nil && !errors.Is(err, tc.wantErr):
				t.Errorf("error %v, want %v", err, tc.wantErr)
			case tc.errText != "" && (err == nil || !strings.Contains(err.Error(), tc.errText)):
				t.Errorf("error %v, want one mentioning %s", err, tc.errText)
			case tc.wantErr == nil && tc.errText == "" && err != nil:
				t.Errorf("unexpected error %v", err)
			}
			got := levelsOf(r)
			if got["upstream"] != tc.upstream || got["http"] != tc.http {
				t.Errorf("upstream=%s http=%s, want %s and %s", got["upstream"], got["http"], tc.upstream, tc.http)
			}
		})
	}
}

func levelsOf(r *Registry) map[string]Level {
	out := map[string]Level{}
	for _, nl := range r.Loggers() {
		out[nl.Name] = nl.Level
	}
	return out
}

func TestSetLevelChangesFiltering(t *testing.T) {
	r, buf := newTestRegistry(t, Config{Level: LevelInfo, Format: "%v"})
	l := r.Logger("upstream")
	l.V(1).Info("before")
	if err := r.SetLevel("upstream", LevelDebug); err != nil {
		t.Fatalf("SetLevel: %v", err)
	}
	l.V(1).Info("after")
	if err := r.SetLevel("nope", LevelDebug); !errors.Is(err, ErrUnknownLogger) {
		t.Errorf("SetLevel(nope) = %v, want ErrUnknownLogger", err)
	}
	if got, want := lines(buf), []string{"after"}; !slices.Equal(got, want) {
		t.Errorf("got %q, want %q", got, want)
	}
}

func TestSetAll(t *testing.T) {
	r, buf := newTestRegistry(t, Config{Level: LevelInfo, ComponentLevels: map[string]Level{"http": LevelTrace}, Format: "%v"})
	r.SetAll(LevelError)
	r.SetAll(Level(99)) // ignored: not a level
	for _, nl := range r.Loggers() {
		if nl.Level != LevelError {
			t.Fatalf("%s is %s after SetAll(error)", nl.Name, nl.Level)
		}
	}
	r.Logger("http").Info("hidden")
	r.Logger("http").Error(nil, "shown")
	if got, want := lines(buf), []string{"shown"}; !slices.Equal(got, want) {
		t.Errorf("got %q, want %q", got, want)
	}
}

func TestLoggersListsComponentsInOrder(t *testing.T) {
	r, _ := newTestRegistry(t, Config{Level: LevelWarning, ComponentLevels: map[string]Level{"admin": LevelDebug}})
	got := r.Loggers()
	names := ComponentNames()
	if len(got) != len(names) {
		t.Fatalf("%d loggers, want %d", len(got), len(names))
	}
	for i, nl := range got {
		want := LevelWarning
		if nl.Name == "admin" {
			want = LevelDebug
		}
		if nl.Name != names[i] || nl.Level != want {
			t.Errorf("logger %d = %s:%s, want %s:%s", i, nl.Name, nl.Level, names[i], want)
		}
	}
	if r.FineGrain() {
		t.Error("FineGrain() = true without fine-grain logging")
	}
}

func TestNewErrors(t *testing.T) {
	dir := t.TempDir()
	cases := map[string]struct {
		cfg     Config
		wantErr error
		text    string
	}{
		"bad format":          {cfg: Config{Format: "[%l] %"}, text: "incomplete '%' flag"},
		"unknown component":   {cfg: Config{ComponentLevels: map[string]Level{"nope": LevelInfo}}, wantErr: ErrUnknownLogger},
		"invalid level":       {cfg: Config{Level: Level(7)}, text: "invalid level 7"},
		"invalid comp. level": {cfg: Config{ComponentLevels: map[string]Level{"http": Level(-2)}}, text: "invalid level -2"},
		"unopenable file":     {cfg: Config{Path: filepath.Join(dir, "missing", "proxy.log")}, wantErr: os.ErrNotExist},
		"file is a directory": {cfg: Config{Path: dir}, text: "log path"},
		"negative interval":   {cfg: Config{Path: filepath.Join(dir, "x.log"), FlushInterval: -1}, text: "negative flush interval"},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			r, err := New(tc.cfg)
			if err == nil {
				r.Close()
				t.Fatal("New succeeded, want an error")
			}
			if tc.wantErr != nil && !errors.Is(err, tc.wantErr) {
				t.Errorf("error %v, want %v", err, tc.wantErr)
			}
			if tc.text != "" && !strings.Contains(err.Error(), tc.text) {
				t.Errorf("error %q does not mention %q", err, tc.text)
			}
		})
	}
}

func TestLoggerUnknownComponentPanics(t *testing.T) {
	r, _ := newTestRegistry(t, Config{})
	defer func() {
		if recover() == nil {
			t.Error("Logger(unknown) did not panic")
		}
	}()
	r.Logger("not_a_component")
}

func TestWithNameAndWithValues(t *testing.T) {
	r, buf := newTestRegistry(t, Config{Level: LevelTrace, Format: "%n|%v"})
	base := r.Logger("upstream")
	eds := base.WithName("eds").WithValues("cluster", "c1")
	eds.WithName("resolver").Info("resolved", "hosts", 3)
	eds.WithValues("zone", "a b").V(1).Info("debug")
	base.Info("base untouched")
	// A derived logger keeps its component's level.
	if err := r.SetLevel("upstream", LevelError); err != nil {
		t.Fatal(err)
	}
	eds.Info("filtered with its component")
	want := []string{
		"upstream.eds.resolver|resolved cluster=c1 hosts=3",
		`upstream.eds|debug cluster=c1 zone="a b"`,
		"upstream|base untouched",
	}
	if got := lines(buf); !slices.Equal(got, want) {
		t.Errorf("got %q\nwant %q", got, want)
	}
}

// logVia logs through a helper that declares its extra frame.
func logVia(l logr.Logger, msg string) { l.WithCallDepth(1).Info(msg) }

func TestCallSite(t *testing.T) {
	r, buf := newTestRegistry(t, Config{Level: LevelTrace, Format: "%g|%s|%#|%!|%v"})
	l := r.Logger("main")
	_, _, line, _ := runtime.Caller(0)
	l.Info("info")                  // line+1
	Warning(l, "warning")           // line+2
	Critical(l, "critical")         // line+3
	l.Error(errors.New("e"), "err") // line+4
	logVia(l, "helper")             // line+5
	l.V(1).Info("debug")            // line+6
	const file, fn = "pkg/proxy/logging/registry_test.go", "logging.TestCallSite"
	want := []string{
		fmt.Sprintf("%s|registry_test.go|%d|%s|info", file, line+1, fn),
		fmt.Sprintf("%s|registry_test.go|%d|%s|warning", file, line+2, fn),
		fmt.Sprintf("%s|registry_test.go|%d|%s|critical", file, line+3, fn),
		fmt.Sprintf(`%s|registry_test.go|%d|%s|err error="e"`, file, line+4, fn),
		fmt.Sprintf("%s|registry_test.go|%d|%s|helper", file, line+5, fn),
		fmt.Sprintf("%s|registry_test.go|%d|%s|debug", file, line+6, fn),
	}
	if got := lines(buf); !slices.Equal(got, want) {
		t.Errorf("got  %q\nwant %q", got, want)
	}
}

func TestEscapedRecords(t *testing.T) {
	r, buf := newTestRegistry(t, Config{Escaped: true, Format: "[%l] %v"})
	l := r.Logger("main")
	l.Info("two\nlines", "path", `C:\x`)
	l.Info("tab\there ")
	// The value is first %q-quoted (C:\x becomes "C:\\x"), then the whole
	// record is C-escaped.
	want := `[info] two\nlines path=\"C:\\\\x\"` + "\n" + `[info] tab\there ` + "\n"
	if got := buf.String(); got != want {
		t.Errorf("got %q, want %q", got, want)
	}
}

func TestRecordsUseTheClockAndThread(t *testing.T) {
	r, buf := newTestRegistry(t, Config{Format: "%Y-%m-%d %T.%F %z|%t|%P"})
	r.Logger("main").Info("x")
	got := strings.Split(strings.TrimSuffix(buf.String(), "\n"), "|")
	if len(got) != 3 {
		t.Fatalf("record %q has %d fields", buf.String(), len(got))
	}
	if want := "2014-08-23 15:35:46.123456789 +02:00"; got[0] != want {
		t.Errorf("time %q, want %q", got[0], want)
	}
	if got[1] == "" || got[1] == "0" && runtime.GOOS == "linux" {
		t.Errorf("thread id %q, want the OS thread id", got[1])
	}
	if want := fmt.Sprint(os.Getpid()); got[2] != want {
		t.Errorf("pid %q, want %q", got[2], want)
	}
}

// TestRecordsDoNotInterleave logs from many goroutines and checks that
// every record arrives whole.
func TestRecordsDoNotInterleave(t *testing.T) {
	const goroutines, perGoroutine = 8, 200
	r, buf := newTestRegistry(t, Config{Format: "%v"})
	var wg sync.WaitGroup
	for g := range goroutines {
		wg.Add(1)
		go func() {
			defer wg.Done()
			l := r.Logger("main")
			for i := range perGoroutine {
				l.Info(strings.Repeat("x", 100), "g", g, "i", i)
			}
		}()
	}
	wg.Wait()
	got := lines(buf)
	if len(got) != goroutines*perGoroutine {
		t.Fatalf("%d records, want %d", len(got), goroutines*perGoroutine)
	}
	seen := map[string]bool{}
	for _, line := range got {
		var g, i int
		if _, err := fmt.Sscanf(line, strings.Repeat("x", 100)+" g=%d i=%d", &g, &i); err != nil {
			t.Fatalf("mangled record %q: %v", line, err)
		}
		seen[line] = true
	}
	if len(seen) != goroutines*perGoroutine {
		t.Errorf("%d distinct records, want %d", len(seen), goroutines*perGoroutine)
	}
}

func TestRegistryLogFileReopen(t *testing.T) {
	dir := t.TempDir()
	path := filepath.Join(dir, "proxy.log")
	r, err := New(Config{Path: path, Format: "%v", Now: afternoon.timeFunc(), FlushInterval: 0})
	if err != nil {
		t.Fatal(err)
	}
	l := r.Logger("main")
	l.Info("first")
	if err := os.Rename(path, path+".1"); err != nil {
		t.Fatal(err)
	}
	l.Info("second") // still the renamed file
	if err := r.Reopen(); err != nil {
		t.Fatalf("Reopen: %v", err)
	}
	l.Info("third")
	if err := r.Flush(); err != nil {
		t.Fatalf("Flush: %v", err)
	}
	if err := r.Close(); err != nil {
		t.Fatalf("Close: %v", err)
	}
	l.Info("after close") // dropped, must not panic
	assertFile(t, path+".1", "first\nsecond\n")
	assertFile(t, path, "third\n")
}

func TestStderrRegistryHasNothingToReopen(t *testing.T) {
	r, _ := newTestRegistry(t, Config{})
	if err := r.Reopen(); err != nil {
		t.Errorf("Reopen: %v", err)
	}
	if err := r.Flush(); err != nil {
		t.Errorf("Flush: %v", err)
	}
}

func assertFile(t *testing.T, path, want string) {
	t.Helper()
	got, err := os.ReadFile(path)
	if err != nil {
		t.Fatalf("read %s: %v", path, err)
	}
	if string(got) != want {
		t.Errorf("%s = %q, want %q", filepath.Base(path), got, want)
	}
}

package logging

import (
	"strings"
	"testing"

	"github.com/go-logr/logr"
)

func TestGateFollowsComponentLevel(t *testing.T) {
	r, buf := newTestRegistry(t, Config{Level: LevelInfo, Format: "%l|%v"})
	g := NewGate(r.Logger("router"))
	if _, ok := g.Debug(); ok {
		t.Fatal("Debug answered true at level info")
	}
	if err := r.SetLevel("router", LevelDebug); err != nil {
		t.Fatal(err)
	}
	dl, ok := g.Debug()
	if !ok || !dl.Enabled() {
		t.Fatalf("Debug at level debug = %v, Enabled %v; want true, true", ok, dl.Enabled())
	}
	dl.Info("picked")
	if got := buf.String(); got != "debug|picked\n" {
		t.Fatalf("record %q, want debug|picked", got)
	}
	if err := r.SetLevel("router", LevelWarning); err != nil {
		t.Fatal(err)
	}
	if _, ok := g.Debug(); ok {
		t.Fatal("Debug answered true after the level went back to warning")
	}
}

// In fine-grain mode the gate cannot know the call site's level: it lets
// the logger's Enabled decide, at the site.
func TestGateAsksLoggerInFineGrainMode(t *testing.T) {
	r, buf := newTestRegistry(t, Config{FineGrain: true, Level: LevelInfo, Format: "%l|%v"})
	g := NewGate(r.Logger("router"))
	dl, ok := g.Debug()
	if !ok {
		t.Fatal("Debug answered false in fine-grain mode")
	}
	if dl.Enabled() {
		t.Fatal("Enabled true at level info")
	}
	if err := r.SetLevels(map[string]Level{"*gate_test.go": LevelDebug}); err != nil {
		t.Fatal(err)
	}
	if dl, ok := g.Debug(); !ok || !dl.Enabled() {
		t.Fatal("this file's debug level is not seen through the gate")
	}
	if dl, ok := g.Debug(); ok && dl.Enabled() {
		dl.Info("picked")
	}
	if got := buf.String(); !strings.HasSuffix(got, "debug|picked\n") {
		t.Fatalf("record %q, want debug|picked", got)
	}
}

func TestGateOfOtherLoggers(t *testing.T) {
	var zero Gate
	if dl, ok := zero.Debug(); ok && dl.Enabled() {
		t.Fatal("the zero gate's logger is enabled")
	}
	d := NewGate(logr.Discard())
	if dl, ok := d.Debug(); ok && dl.Enabled() {
		t.Fatal("a discarding logger's gate is enabled")
	}
	r, _ := newTestRegistry(t, Config{Level: LevelDebug})
	// A logger already at V(1) is asked: its debug is the registry's trace.
	v := NewGate(r.Logger("router").V(1))
	if dl, ok := v.Debug(); !ok || dl.Enabled() {
		t.Fatalf("V(1) logger's gate: ok %v, Enabled %v; want true, false", ok, dl.Enabled())
	}
}

func TestGateDebugDoesNotAllocate(t *testing.T) {
	r, _ := newTestRegistry(t, Config{Level: LevelInfo})
	g := NewGate(r.Logger("router"))
	if n := testing.AllocsPerRun(100, func() {
		if dl, ok := g.Debug(); ok && dl.Enabled() {
			dl.Info("never")
		}
	}); n != 0 {
		t.Fatalf("%v allocations", n)
	}
}

package logging

import (
	"slices"
	"testing"
)

// testFile is this file as fine-grain logging names it.
const testFile = "pkg/proxy/logging/finegrain_test.go"

func TestFineGrainNamesLoggersByFile(t *testing.T) {
	r, buf := newTestRegistry(t, Config{FineGrain: true, Level: LevelInfo, Format: "%l|%n|%v"})
	if !r.FineGrain() {
		t.Fatal("FineGrain() = false")
	}
	if got := r.Loggers(); len(got) != 0 {
		t.Fatalf("loggers before any call: %v", got)
	}
	l := r.Logger("main")
	l.Info("from test")
	l.WithName("sub").Info("named")
	logFromHelperFile(l, "helper debug (filtered)")
	want := []NamedLevel{{helperFile, LevelInfo}, {testFile, LevelInfo}}
	if got := r.Loggers(); !slices.Equal(got, want) {
		t.Errorf("loggers %v, want %v", got, want)
	}
	wantLines := []string{"info|" + testFile + "|from test", "info|" + testFile + ".sub|named"}
	if got := lines(buf); !slices.Equal(got, wantLines) {
		t.Errorf("records %q, want %q", got, wantLines)
	}
}

func TestFineGrainSeesFilesOnCheck(t *testing.T) {
	r, buf := newTestRegistry(t, Config{FineGrain: true, Level: LevelInfo})
	if touchHelperFile(r.Logger("main")) {
		t.Error("debug enabled at info level")
	}
	if got, want := r.Loggers(), []NamedLevel{{helperFile, LevelInfo}}; !slices.Equal(got, want) {
		t.Errorf("loggers %v, want %v", got, want)
	}
	if buf.Len() != 0 {
		t.Errorf("a check wrote %q", buf)
	}
}

func TestFineGrainGlobs(t *testing.T) {
	cases := map[string]struct {
		glob             string
		test, helper     Level // levels afterwards
		testMsg, helpMsg bool  // whether a debug record from each file is written
	}{
		"stem":                  {"finegrain_test", LevelDebug, LevelInfo, true, false},
		"base name":             {"finegrain_helper_test.go", LevelInfo, LevelDebug, false, true},
		"star on stem":          {"finegrain*", LevelDebug, LevelDebug, true, true},
		"question mark":         {"finegrain_?elper_test", LevelInfo, LevelDebug, false, true},
		"leading star":          {"*_helper_test", LevelInfo, LevelDebug, false, true},
		"path glob":             {"pkg/proxy/logging/*", LevelDebug, LevelDebug, true, true},
		"path glob across dirs": {"pkg/*/finegrain_test.go", LevelDebug, LevelInfo, true, false},
		"partial path":          {"logging/finegrain_test.go", LevelInfo, LevelInfo, false, false},
		"no match":              {"nothing_here", LevelInfo, LevelInfo, false, false},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			r, buf := newTestRegistry(t, Config{FineGrain: true, Level: LevelInfo, Format: "%v"})
			l := r.Logger("main")
			l.V(1).Enabled()
			touchHelperFile(l)
			if err := r.SetLevel(tc.glob, LevelDebug); err != nil {
				t.Fatalf("SetLevel(%q): %v", tc.glob, err)
			}
			want := []NamedLevel{{helperFile, tc.helper}, {testFile, tc.test}}
			if got := r.Loggers(); !slices.Equal(got, want) {
				t.Errorf("loggers %v, want %v", got, want)
			}
			l.V(1).Info("test")
			logFromHelperFile(l, "helper")
			var wantLines []string
			if tc.testMsg {
				wantLines = append(wantLines, "test")
			}
			if tc.helpMsg {
				wantLines = append(wantLines, "helper")
			}
			if got := lines(buf); !slices.Equal(got, wantLines) {
				t.Errorf("records %q, want %q", got, wantLines)
			}
		})
	}
}

// TestFineGrainUpdatesReplace follows Envoy: each update states the whole
// fine-grain setting, so a file an earlier glob matched returns to the
// default.
func TestFineGrainUpdatesReplace(t *testing.T) {
	r, _ := newTestRegistry(t, Config{FineGrain: true, Level: LevelInfo})
	l := r.Logger("main")
	l.Info("seen")
	touchHelperFile(l)
	mustSet(t, r, map[string]Level{"finegrain_test": LevelDebug})
	mustSet(t, r, map[string]Level{"finegrain_helper_test": LevelTrace})
	want := []NamedLevel{{helperFile, LevelTrace}, {testFile, LevelInfo}}
	if got := r.Loggers(); !slices.Equal(got, want) {
		t.Errorf("loggers %v, want %v", got, want)
	}
}

func TestFineGrainLongestGlobWins(t *testing.T) {
	r, _ := newTestRegistry(t, Config{FineGrain: true, Level: LevelInfo})
	l := r.Logger("main")
	l.Info("seen")
	touchHelperFile(l)
	mustSet(t, r, map[string]Level{"finegrain*": LevelTrace, "finegrain_test": LevelError})
	want := []NamedLevel{{helperFile, LevelTrace}, {testFile, LevelError}}
	if got := r.Loggers(); !slices.Equal(got, want) {
		t.Errorf("loggers %v, want %v", got, want)
	}
}

func TestFineGrainRulesApplyToFilesSeenLater(t *testing.T) {
	r, buf := newTestRegistry(t, Config{FineGrain: true, Level: LevelInfo, Format: "%v"})
	mustSet(t, r, map[string]Level{"*helper*": LevelDebug})
	if got := r.Loggers(); len(got) != 0 {
		t.Fatalf("a glob created loggers: %v", got)
	}
	logFromHelperFile(r.Logger("main"), "late")
	if got, want := lines(buf), []string{"late"}; !slices.Equal(got, want) {
		t.Errorf("records %q, want %q", got, want)
	}
}

func TestFineGrainSetAll(t *testing.T) {
	r, buf := newTestRegistry(t, Config{FineGrain: true, Level: LevelInfo, Format: "%l"})
	l := r.Logger("main")
	l.Info("seen")
	mustSet(t, r, map[string]Level{"finegrain_test": LevelTrace, "*helper*": LevelTrace})
	r.SetAll(LevelWarning)
	logFromHelperFile(l, "debug from a new file: filtered by the new default")
	l.Info("filtered")
	Warning(l, "shown")
	want := []NamedLevel{{helperFile, LevelWarning}, {testFile, LevelWarning}}
	if got := r.Loggers(); !slices.Equal(got, want) {
		t.Errorf("loggers %v, want %v", got, want)
	}
	if got, want := lines(buf), []string{"info", "warning"}; !slices.Equal(got, want) {
		t.Errorf("records %q, want %q", got, want)
	}
}

func TestFineGrainFiltersTheErrorPath(t *testing.T) {
	r, buf := newTestRegistry(t, Config{FineGrain: true, Level: LevelCritical, Format: "%l"})
	l := r.Logger("main")
	Warning(l, "w")
	l.Error(nil, "e")
	Critical(l, "c")
	if got, want := lines(buf), []string{"critical"}; !slices.Equal(got, want) {
		t.Errorf("records %q, want %q", got, want)
	}
}

func TestFineGrainIgnoresComponentLevels(t *testing.T) {
	r, buf := newTestRegistry(t, Config{FineGrain: true, Level: LevelInfo, ComponentLevels: map[string]Level{"main": LevelTrace}})
	r.Logger("main").V(1).Info("filtered by the file's level")
	if buf.Len() != 0 {
		t.Errorf("wrote %q", buf)
	}
}

func TestFineGrainRejectsInvalidLevels(t *testing.T) {
	r, _ := newTestRegistry(t, Config{FineGrain: true, Level: LevelInfo})
	r.Logger("main").Info("seen")
	if err := r.SetLevels(map[string]Level{"finegrain_test": LevelDebug, "*": Level(9)}); err == nil {
		t.Fatal("SetLevels with an invalid level succeeded")
	}
	if got, want := r.Loggers(), []NamedLevel{{testFile, LevelInfo}}; !slices.Equal(got, want) {
		t.Errorf("loggers %v, want %v", got, want)
	}
}

func mustSet(t *testing.T, r *Registry, levels map[string]Level) {
	t.Helper()
	if err := r.SetLevels(levels); err != nil {
		t.Fatalf("SetLevels(%v): %v", levels, err)
	}
}

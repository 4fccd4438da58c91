//go:build !race

// The race detector makes sync.Pool drop items at random, so allocation
// counts are only meaningful without it.

package logging

import (
	"io"
	"testing"
)

func TestHotPathsDoNotAllocate(t *testing.T) {
	f := mustCompile(t, DefaultFormat+" %c %r %z %_ %j %+")
	r, err := New(Config{Level: LevelInfo, Stderr: io.Discard, Format: DefaultFormat})
	if err != nil {
		t.Fatal(err)
	}
	l := r.Logger("http")
	buf := make([]byte, 0, 1024)
	cases := map[string]func(){
		"format a record":      func() { buf = f.Format(buf[:0], &afternoon) },
		"disabled debug":       func() { l.V(1).Info("request headers") },
		"disabled debug check": func() { _ = l.V(1).Enabled() },
		"enabled record":       func() { l.Info("request done") },
		"warning below level": func() {
			if l.V(1).Enabled() {
				Warning(l, "never")
			}
		},
	}
	for name, fn := range cases {
		t.Run(name, func(t *testing.T) {
			fn() // warm the pool and the call-site cache
			if n := testing.AllocsPerRun(100, fn); n != 0 {
				t.Errorf("%v allocations per run, want 0", n)
			}
		})
	}
}

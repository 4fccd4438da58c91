package logging

import (
	"io"
	"testing"
)

func newBenchRegistry(b *testing.B, cfg Config) *Registry {
	b.Helper()
	cfg.Stderr = io.Discard
	r, err := New(cfg)
	if err != nil {
		b.Fatal(err)
	}
	return r
}

// BenchmarkDisabledDebug is a debug log on a hot path with the component at
// info: the cost every request pays for logging that is off.
func BenchmarkDisabledDebug(b *testing.B) {
	l := newBenchRegistry(b, Config{Level: LevelInfo}).Logger("http")
	b.Run("no key/values", func(b *testing.B) {
		b.ReportAllocs()
		for b.Loop() {
			l.V(1).Info("request headers")
		}
	})
	b.Run("guarded key/values", func(b *testing.B) {
		b.ReportAllocs()
		stream := 7
		for b.Loop() {
			if d := l.V(1); d.Enabled() {
				d.Info("request headers", "stream", stream)
			}
		}
	})
}

// BenchmarkFormatRecord formats one record with the default pattern.
func BenchmarkFormatRecord(b *testing.B) {
	f, err := CompileFormat(DefaultFormat)
	if err != nil {
		b.Fatal(err)
	}
	buf := make([]byte, 0, 256)
	b.ReportAllocs()
	for b.Loop() {
		buf = f.Format(buf[:0], &afternoon)
	}
}

// BenchmarkLogRecord is one enabled record end to end: call site, key/value
// rendering, formatting and the write.
func BenchmarkLogRecord(b *testing.B) {
	for name, fineGrain := range map[string]bool{"components": false, "fine-grain": true} {
		b.Run(name, func(b *testing.B) {
			l := newBenchRegistry(b, Config{Level: LevelInfo, FineGrain: fineGrain}).Logger("http")
			b.ReportAllocs()
			for b.Loop() {
				l.Info("request done", "status", 200, "path", "/healthz")
			}
		})
	}
}

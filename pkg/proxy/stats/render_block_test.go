package stats

import (
	"bytes"
	"fmt"
	"io"
	"strings"
	"sync"
	"testing"
	"time"
)

// blockingWriter is a client that stopped reading: its first Write blocks
// until the test releases it.
type blockingWriter struct {
	blocked chan struct{} // closed when the first Write starts blocking
	release chan struct{}
	once    sync.Once
	unblock sync.Once
}

// Release lets the blocked Write return; it may be called more than once.
func (w *blockingWriter) Release() { w.unblock.Do(func() { close(w.release) }) }

func newBlockingWriter() *blockingWriter {
	return &blockingWriter{blocked: make(chan struct{}), release: make(chan struct{})}
}

func (w *blockingWriter) Write(p []byte) (int, error) {
	w.once.Do(func() {
		close(w.blocked)
		<-w.release
	})
	return len(p), nil
}

// waitBound bounds every wait of TestRenderDoesNotBlockTheStore: it only
// turns a deadlock into a failure, and measures nothing.
const waitBound = 10 * time.Second

// TestRenderDoesNotBlockTheStore blocks a render on a slow client in the
// middle of its output and checks that, meanwhile, stats are created and
// written, counters reset, the store flushed, and a second render of the
// same kind completes and shows the new stats.
func TestRenderDoesNotBlockTheStore(t *testing.T) {
	type render func(io.Writer, *Store) error
	cases := map[string]render{
		"text": func(w io.Writer, s *Store) error { return RenderText(w, s, RenderOptions{}) },
		"text usedonly": func(w io.Writer, s *Store) error {
			return RenderText(w, s, RenderOptions{VisitOptions: VisitOptions{UsedOnly: true}})
		},
		"text filter": func(w io.Writer, s *Store) error {
			return RenderText(w, s, RenderOptions{VisitOptions: VisitOptions{Filter: mustRE2(t, "cluster")}})
		},
		"json":       func(w io.Writer, s *Store) error { return RenderJSON(w, s, RenderOptions{}) },
		"prometheus": func(w io.Writer, s *Store) error { return RenderPrometheus(w, s, RenderOptions{TextReadouts: true}) },
	}
	for name, render := range cases {
		t.Run(name, func(t *testing.T) {
			s := NewStore()
			// Several chunks of output, so the first write happens mid-walk.
			for i := range 5000 {
				s.Counter(fmt.Sprintf("cluster.c%d.upstream_rq_total", i)).Inc()
			}
			w := newBlockingWriter()
			t.Cleanup(w.Release) // a failed case leaves no goroutine stuck
			first := make(chan error, 1)
			go func() { first <- render(w, s) }()
			select {
			case <-w.blocked:
			case err := <-first:
				t.Fatalf("render finished (%v) without blocking mid-output", err)
			case <-time.After(waitBound):
				t.Fatal("render never wrote")
			}

			done := make(chan string, 1)
			go func() {
				s.Counter("cluster.new.upstream_rq_total").Inc()
				s.Gauge("cluster.new.upstream_cx_active").Set(1)
				s.TextReadout("cluster.new.version").Set("v")
				s.Histogram("cluster.new.upstream_rq_time").Record(5)
				s.ResetCounters()
				s.Counter("cluster.new.upstream_rq_total").Inc()
				if err := NewFlusher(s, nil, FlusherOptions{}).Flush(); err != nil {
					done <- "flush: " + err.Error()
					return
				}
				var b bytes.Buffer
				if err := render(&b, s); err != nil {
					done <- "second render: " + err.Error()
					return
				}
				done <- b.String()
			}()
			select {
			case out := <-done:
				if !strings.Contains(out, "new") {
					t.Errorf("second render does not show the new stats:\n%.300s", out)
				}
			case <-time.After(waitBound):
				t.Fatal("the store waited for the blocked render")
			}

			w.Release()
			select {
			case err := <-first:
				if err != nil {
					t.Errorf("blocked render: %v", err)
				}
			case <-time.After(waitBound):
				t.Fatal("the blocked render did not finish once released")
			}
		})
	}
}

// TestRenderAllocationsDoNotGrow renders stores of two sizes, after a
// first render has sorted their names and built their Prometheus index,
// and checks that a render allocates as many objects for twenty times the
// stats: its memory is the chunk buffer, whatever the store holds.
func TestRenderAllocationsDoNotGrow(t *testing.T) {
	// Names the common tag extractors match: a regex run allocates its
	// result, so these must not reach the regex engine.
	// Each format takes a number, a response code and a code class.
	formats := []string{
		"cluster.c%[1]d.upstream_rq_%[2]d", "cluster.c%[1]d.upstream_rq_%[3]dxx", "http.h%[1]d.downstream_rq_%[3]dxx",
		"listener.10.0.0.1_%[1]d.http.ingress.downstream_rq_%[3]dxx", "listener.[::1]_%[1]d.worker_%[3]d.downstream_cx_total",
		"server.worker_%[1]d.watchdog_miss", "listener.l%[1]d.downstream_cx_%[2]d",
	}
	build := func(n int) *Store {
		s := NewStore()
		for i := range n {
			name := fmt.Sprintf(formats[i%len(formats)], i/len(formats), 200+i%10, 1+i%5)
			s.Counter(name).Add(uint64(i % 3))
			if i%100 == 0 {
				s.Histogram(fmt.Sprintf("cluster.c%d.upstream_rq_time", i/10)).Record(uint64(i))
			}
		}
		s.MergeHistograms()
		return s
	}
	small, big := build(1000), build(20000)
	cases := map[string]func(io.Writer, *Store) error{
		"text": func(w io.Writer, s *Store) error { return RenderText(w, s, RenderOptions{}) },
		"text usedonly": func(w io.Writer, s *Store) error {
			return RenderText(w, s, RenderOptions{VisitOptions: VisitOptions{UsedOnly: true}})
		},
		"json":       func(w io.Writer, s *Store) error { return RenderJSON(w, s, RenderOptions{}) },
		"prometheus": func(w io.Writer, s *Store) error { return RenderPrometheus(w, s, RenderOptions{}) },
		"prometheus summary": func(w io.Writer, s *Store) error {
			return RenderPrometheus(w, s, RenderOptions{Buckets: BucketsSummary})
		},
	}
	for name, render := range cases {
		t.Run(name, func(t *testing.T) {
			allocs := func(s *Store) float64 {
				if err := render(io.Discard, s); err != nil { // sorts, builds the index
					t.Fatal(err)
				}
				return testing.AllocsPerRun(3, func() {
					if err := render(io.Discard, s); err != nil {
						t.Fatal(err)
					}
				})
			}
			if a, b := allocs(small), allocs(big); a != b {
				t.Errorf("%v allocations for 1,000 stats, %v for 20,000", a, b)
			}
		})
	}
}

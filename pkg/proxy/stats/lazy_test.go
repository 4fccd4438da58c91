package stats

import (
	"bytes"
	"fmt"
	"sync"
	"testing"
)

// lazyStores returns two stores with the same stats: in eager every
// counter is made with Counter, in lazy the ones named in declared are
// declared only. Each cluster scope gets a counter and a gauge sharing a
// name, so the order of same-named siblings is exercised too.
func lazyStores(clusters int, declared []string) (eager, lazy *Store) {
	eager, lazy = NewStore(), NewStore()
	for i := range clusters {
		for _, s := range []*Store{eager, lazy} {
			sc := s.Scope(fmt.Sprintf("cluster.c%03d.", i))
			sc.Counter("upstream_rq_total").Inc()
			sc.Gauge("upstream_cx_close_notify").Set(3)
			sc.Histogram("upstream_rq_time", UnitMilliseconds).Record(7)
			for _, name := range declared {
				if s == lazy {
					sc.DeclareCounter(name)
				} else {
					sc.Counter(name)
				}
			}
		}
	}
	return eager, lazy
}

// renderAll renders s in every format, all stats and used ones only.
func renderAll(t *testing.T, s *Store) map[string]string {
	t.Helper()
	out := map[string]string{}
	for _, used := range []bool{false, true} {
		o := RenderOptions{VisitOptions: VisitOptions{UsedOnly: used}}
		for name, render := range map[string]func(*bytes.Buffer) error{
			"text":       func(b *bytes.Buffer) error { return RenderText(b, s, o) },
			"json":       func(b *bytes.Buffer) error { return RenderJSON(b, s, o) },
			"prometheus": func(b *bytes.Buffer) error { return RenderPrometheus(b, s, o) },
		} {
			var b bytes.Buffer
			if err := render(&b); err != nil {
				t.Fatal(err)
			}
			out[fmt.Sprintf("%s usedonly=%v", name, used)] = b.String()
		}
	}
	return out
}

func sameRenders(t *testing.T, step string, eager, lazy *Store) {
	t.Helper()
	e, l := renderAll(t, eager), renderAll(t, lazy)
	for k := range e {
		if e[k] != l[k] {
			t.Fatalf("%s: %s differs:\neager:\n%s\nlazy:\n%s", step, k, e[k], l[k])
		}
	}
}

// TestDeclaredCountersRenderAsCounters: declared counters are listed by
// every renderer exactly as counters made at once, at zero and unused;
// once one is first asked for by name (or through a LazyCounter) and
// incremented, it renders, flushes and resets as any counter; and
// Prometheus families placed before and after the change (the index's
// incremental path and its rebuild) agree.
func TestDeclaredCountersRenderAsCounters(t *testing.T) {
	declared := []string{"upstream_cx_close_notify", "upstream_rq_0rtt", "upstream_http3_broken", "a_first"}
	eager, lazy := lazyStores(40, declared)
	sameRenders(t, "declared", eager, lazy)

	// A few more clusters: few enough that Prometheus places them into
	// its index incrementally rather than rebuilding it.
	for _, s := range []*Store{eager, lazy} {
		sc := s.Scope("cluster.c999.")
		sc.Counter("upstream_rq_total")
		if s == lazy {
			sc.DeclareCounters(declared...)
		} else {
			for _, name := range declared {
				sc.Counter(name)
			}
		}
	}
	sameRenders(t, "placed", eager, lazy)

	sinks := map[*Store]*deltaSink{eager: {}, lazy: {}}
	for s, sink := range sinks {
		_ = NewFlusher(s, []Sink{sink}, FlusherOptions{}).Flush()
	}
	if _, ok := sinks[lazy].counters["cluster.c001.upstream_cx_close_notify"]; ok {
		t.Fatal("a declared counter never incremented reached the sinks")
	}

	var lc LazyCounter
	lazySc := lazy.Scope("cluster.c001.")
	lc.Get(lazySc, "upstream_cx_close_notify").Add(2)
	eager.Scope("cluster.c001.").Counter("upstream_cx_close_notify").Add(2)
	lazy.Scope("cluster.c999.").Counter("upstream_rq_0rtt").Inc()
	eager.Scope("cluster.c999.").Counter("upstream_rq_0rtt").Inc()
	if c := lazySc.Counter("upstream_cx_close_notify"); c != lc.Get(lazySc, "upstream_cx_close_notify") || c.Value() != 2 {
		t.Fatalf("Counter and LazyCounter disagree: value %d", c.Value())
	}
	sameRenders(t, "incremented", eager, lazy)
	for s, sink := range sinks {
		_ = NewFlusher(s, []Sink{sink}, FlusherOptions{}).Flush()
	}
	if got := sinks[lazy].counters["cluster.c001.upstream_cx_close_notify"]; got != 2 {
		t.Fatalf("sink delta of a materialized counter: %d, want 2", got)
	}
	if fmt.Sprint(sinks[lazy].counters) != fmt.Sprint(sinks[eager].counters) {
		t.Fatalf("sinks differ:\n%v\n%v", sinks[lazy].counters, sinks[eager].counters)
	}
	eager.ResetCounters()
	lazy.ResetCounters()
	sameRenders(t, "reset", eager, lazy)

	// Many materialized at once: Prometheus rebuilds its index.
	for i := range 40 {
		for _, s := range []*Store{eager, lazy} {
			s.Scope(fmt.Sprintf("cluster.c%03d.", i)).Counter("upstream_http3_broken").Inc()
		}
	}
	sameRenders(t, "rebuilt", eager, lazy)
}

// TestDeclaredCounterKeepsExisting: declaring a name that is already a
// counter keeps that counter, and a name declared twice is one stat.
func TestDeclaredCounterKeepsExisting(t *testing.T) {
	s := NewStore()
	sc := s.Scope("x.")
	c := sc.Counter("a")
	c.Inc()
	sc.DeclareCounters("a", "b", "b")
	if got := sc.Counter("a"); got != c || got.Value() != 1 {
		t.Fatal("declaring an existing counter replaced it")
	}
	if names := fmt.Sprint(s.CounterNames()); names != "[x.a x.b]" {
		t.Fatalf("counters %s", names)
	}
}

// TestLazyCounterConcurrentFirstGet: workers racing through a
// LazyCounter's first Get share one Counter and lose no increment (run
// with -race).
func TestLazyCounterConcurrentFirstGet(t *testing.T) {
	s := NewStore()
	sc := s.Scope("cluster.c.")
	sc.DeclareCounter("upstream_rq_rx_reset")
	var lc LazyCounter
	const workers, each = 8, 1000
	var wg sync.WaitGroup
	start := make(chan struct{})
	for range workers {
		wg.Add(1)
		go func() {
			defer wg.Done()
			<-start
			for range each {
				lc.Get(sc, "upstream_rq_rx_reset").Inc()
			}
		}()
	}
	close(start)
	wg.Wait()
	if got := sc.Counter("upstream_rq_rx_reset").Value(); got != workers*each {
		t.Fatalf("value %d, want %d", got, workers*each)
	}
	var b bytes.Buffer
	if err := RenderText(&b, s, RenderOptions{VisitOptions: VisitOptions{UsedOnly: true}}); err != nil {
		t.Fatal(err)
	}
	if want := fmt.Sprintf("cluster.c.upstream_rq_rx_reset: %d\n", workers*each); b.String() != want {
		t.Fatalf("usedonly: %q, want %q", b.String(), want)
	}
}

package stats

import (
	"sync"
	"testing"

	"github.com/google/go-cmp/cmp"
)

func TestStoreReturnsOneStatPerName(t *testing.T) {
	s := NewStore()
	server := s.Scope("server.")
	server.Counter("static_unknown_fields").Add(2)
	s.Counter("server.static_unknown_fields").Inc()
	if got := server.Counter("static_unknown_fields").Value(); got != 3 {
		t.Errorf("counter = %d, want 3", got)
	}
	server.Gauge("live").Set(1)
	server.Gauge("live").Add(-1)
	if got := s.Gauge("server.live").Value(); got != 0 {
		t.Errorf("gauge = %d, want 0", got)
	}
	if diff := cmp.Diff([]string{"server.static_unknown_fields"}, s.CounterNames()); diff != "" {
		t.Errorf("counter names (-want +got):\n%s", diff)
	}
	if diff := cmp.Diff([]string{"server.live"}, s.GaugeNames()); diff != "" {
		t.Errorf("gauge names (-want +got):\n%s", diff)
	}
}

func TestUsed(t *testing.T) {
	s := NewStore()
	c, g := s.Counter("c"), s.Gauge("g")
	if c.Used() || g.Used() {
		t.Fatal("fresh stats report used")
	}
	c.Add(0)
	g.Set(0)
	if !c.Used() || !g.Used() {
		t.Fatal("written stats do not report used")
	}
}

func TestConcurrentIncrements(t *testing.T) {
	s := NewStore()
	var wg sync.WaitGroup
	for range 8 {
		wg.Go(func() {
			c := s.Counter("hot")
			for range 1000 {
				c.Inc()
			}
		})
	}
	wg.Wait()
	if got := s.Counter("hot").Value(); got != 8000 {
		t.Errorf("counter = %d, want 8000", got)
	}
}

func BenchmarkCounterInc(b *testing.B) {
	c := NewStore().Counter("bench")
	b.ReportAllocs()
	for b.Loop() {
		c.Inc()
	}
}

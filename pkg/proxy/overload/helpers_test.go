package overload

import (
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/go-logr/logr"
	"github.com/go-logr/logr/funcr"
	"google.golang.org/protobuf/encoding/protojson"
	"sigs.k8s.io/yaml"

	overloadv3 "github.com/envoyproxy/go-control-plane/envoy/config/overload/v3"

	"github.com/outrigger-dev/outrigger/pkg/proxy/stats"
)

// waitTimeout bounds every wait of a test for another goroutine.
const waitTimeout = 5 * time.Second

// parseConfig reads an OverloadManager written in YAML.
func parseConfig(t testing.TB, text string) *overloadv3.OverloadManager {
	t.Helper()
	js, err := yaml.YAMLToJSON([]byte(text))
	if err != nil {
		t.Fatalf("YAML: %v", err)
	}
	cfg := &overloadv3.OverloadManager{}
	if err := protojson.Unmarshal(js, cfg); err != nil {
		t.Fatalf("JSON: %v", err)
	}
	return cfg
}

// heap is a settable heap-in-use reading for the fixed_heap monitor.
type heap struct {
	mu sync.Mutex
	n  uint64
}

func (h *heap) set(n uint64) {
	h.mu.Lock()
	defer h.mu.Unlock()
	h.n = n
}

func (h *heap) read() uint64 {
	h.mu.Lock()
	defer h.mu.Unlock()
	return h.n
}

// fakeClock is a clock the test drives: After returns one channel per
// duration, and tick sends on it, so each tick runs exactly one pass of
// the loop waiting on that duration.
type fakeClock struct {
	mu    sync.Mutex
	now   time.Time
	chans map[time.Duration]chan time.Time
}

func newFakeClock() *fakeClock {
	return &fakeClock{now: time.Unix(1000, 0), chans: map[time.Duration]chan time.Time{}}
}

func (c *fakeClock) Now() time.Time {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.now
}

func (c *fakeClock) After(d time.Duration) <-chan time.Time { return c.chanFor(d) }

func (c *fakeClock) chanFor(d time.Duration) chan time.Time {
	c.mu.Lock()
	defer c.mu.Unlock()
	ch, ok := c.chans[d]
	if !ok {
		ch = make(chan time.Time)
		c.chans[d] = ch
	}
	return ch
}

// advance moves the clock by d without waking anything.
func (c *fakeClock) advance(d time.Duration) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.now = c.now.Add(d)
}

// tick advances the clock by d and wakes the loop waiting on d; it fails
// the test if no loop waits.
func (c *fakeClock) tick(t *testing.T, d time.Duration) {
	t.Helper()
	c.advance(d)
	select {
	case c.chanFor(d) <- c.Now():
	case <-time.After(waitTimeout):
		t.Fatalf("no loop waits on a %s timer", d)
	}
}

// logLines is a logger that records its lines.
type logLines struct {
	mu    sync.Mutex
	lines []string
}

func (l *logLines) logger() logr.Logger {
	return funcr.New(func(prefix, args string) {
		l.mu.Lock()
		defer l.mu.Unlock()
		l.lines = append(l.lines, args)
	}, funcr.Options{Verbosity: 1})
}

// count is the number of lines containing s.
func (l *logLines) count(s string) int {
	l.mu.Lock()
	defer l.mu.Unlock()
	n := 0
	for _, line := range l.lines {
		if strings.Contains(line, s) {
			n++
		}
	}
	return n
}

// testManager builds a manager from YAML with a settable heap and the
// given clock (nil: a fake one).
func testManager(t *testing.T, text string, h *heap, clock Clock) (*Manager, *stats.Store) {
	t.Helper()
	store := stats.NewStore()
	if h == nil {
		h = &heap{}
	}
	if clock == nil {
		clock = newFakeClock()
	}
	var cfg *overloadv3.OverloadManager
	if text != "" {
		cfg = parseConfig(t, text)
	}
	m, err := New(cfg, Deps{Stats: store, Log: logr.Discard(), Clock: clock, HeapInUse: h.read})
	if err != nil {
		t.Fatalf("New: %v", err)
	}
	t.Cleanup(m.Stop)
	return m, store
}

// gauge and counter read a stat of store.
func gauge(store *stats.Store, name string) int64    { return store.Gauge(name).Value() }
func counter(store *stats.Store, name string) uint64 { return store.Counter(name).Value() }

package adaptiveconcurrency

import (
	"strings"
	"testing"
	"time"

	acv3 "github.com/envoyproxy/go-control-plane/envoy/extensions/filters/http/adaptive_concurrency/v3"
	"google.golang.org/protobuf/encoding/protojson"

	"github.com/outrigger-dev/outrigger/pkg/proxy/httpfilter"
	"github.com/outrigger-dev/outrigger/pkg/proxy/httpfilter/httpfiltertest"
	"github.com/outrigger-dev/outrigger/pkg/proxy/stats"
)

// noRuntime has no values.
type noRuntime struct{}

func (noRuntime) Uint64(_ string, def uint64) uint64 { return def }

// compile builds a filter whose timers do not fire during the test.
func compile(t *testing.T, extra string) (*filterConfig, *stats.Store) {
	t.Helper()
	js := `{"gradient_controller_config": {
	  "concurrency_limit_params": {"concurrency_update_interval": "3600s", "max_concurrency_limit": 100},
	  "min_rtt_calc_params": {"interval": "3600s", "request_count": 4, "min_concurrency": 2, "jitter": {"value": 0}}}` + extra + `}`
	return compileJSON(t, js)
}

// compileJSON builds a filter from its JSON configuration; it stops when
// the test ends.
func compileJSON(t *testing.T, js string) (*filterConfig, *stats.Store) {
	t.Helper()
	var cfg acv3.AdaptiveConcurrency
	if err := protojson.Unmarshal([]byte(js), &cfg); err != nil {
		t.Fatal(err)
	}
	store := stats.NewStore()
	c, err := Factory{}.Compile(&cfg, httpfilter.Context{Stats: store, StatPrefix: "http.in.", Runtime: noRuntime{}})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = c.(*filterConfig).Close() })
	return c.(*filterConfig), store
}

func TestLimitAndMinRTTWindow(t *testing.T) {
	c, store := compile(t, `, "concurrency_limit_exceeded_status": {"code": 429}`)
	g := func(name string) int64 {
		return store.Gauge("http.in.adaptive_concurrency.gradient_controller." + name).Value()
	}
	if g("concurrency_limit") != 2 || g("min_rtt_calculation_active") != 1 {
		t.Fatalf("start: limit %d, active %d", g("concurrency_limit"), g("min_rtt_calculation_active"))
	}
	// Two requests in flight fill min_concurrency: the third is refused.
	var fs []*filter
	for range 2 {
		f := c.NewFilter().(*filter)
		if f.DecodeHeaders(httpfiltertest.NewStream("GET", "/")) != httpfilter.Continue {
			t.Fatal("refused under the limit")
		}
		fs = append(fs, f)
	}
	s := httpfiltertest.NewStream("GET", "/")
	if c.NewFilter().(*filter).DecodeHeaders(s) != httpfilter.Stop || s.Reply.Status != 429 || s.Reply.Details != "reached_concurrency_limit" || s.Reply.Body != "reached concurrency limit" {
		t.Fatalf("over the limit: %+v", s.Reply)
	}
	if store.Counter("http.in.adaptive_concurrency.gradient_controller.rq_blocked").Value() != 1 {
		t.Error("rq_blocked not counted")
	}
	// A reset request only frees its place; completed ones are sampled
	// (the window is made older than their start).
	fs[0].OnDestroy()
	c.ctrl.mu.Lock()
	c.ctrl.epoch = c.ctrl.epoch.Add(-time.Hour)
	c.ctrl.mu.Unlock()
	for range 4 {
		f := c.NewFilter().(*filter)
		f.DecodeHeaders(httpfiltertest.NewStream("GET", "/"))
		f.start = time.Now().Add(-10 * time.Millisecond)
		f.EncodeHeaders(httpfiltertest.NewStream("GET", "/"))
		f.OnDestroy()
	}
	// Four samples end the minRTT window: the limit is back to what it
	// was (min_concurrency at the start).
	if g("min_rtt_calculation_active") != 0 || g("min_rtt_msecs") < 10 {
		t.Fatalf("after the window: active %d, min_rtt %d ms", g("min_rtt_calculation_active"), g("min_rtt_msecs"))
	}
	fs[1].OnDestroy()

	// Latencies at the minRTT: the gradient is capped at 2 (the buffer
	// makes it 1.25 here), and the limit grows by its square root.
	c.ctrl.mu.Lock()
	c.ctrl.samples = append(c.ctrl.samples, c.ctrl.minRTT, c.ctrl.minRTT)
	c.ctrl.resetSampleWindowLocked()
	c.ctrl.mu.Unlock()
	// limit 2 * 1.25 = 2.5, + sqrt(2.5) = 4.08 -> 4.
	if g("concurrency_limit") != 4 || g("gradient") != 1250 {
		t.Errorf("limit %d, gradient %d", g("concurrency_limit"), g("gradient"))
	}
	// Latencies four times the minRTT: the gradient floors at 0.5.
	c.ctrl.mu.Lock()
	c.ctrl.samples = append(c.ctrl.samples, 4*c.ctrl.minRTT)
	c.ctrl.resetSampleWindowLocked()
	c.ctrl.mu.Unlock()
	// 4 * 0.5 = 2, + sqrt(2) = 3.41 -> 3.
	if g("concurrency_limit") != 3 || g("gradient") != 500 {
		t.Errorf("limit %d, gradient %d", g("concurrency_limit"), g("gradient"))
	}
}

func TestConsecutiveMinimumRemeasures(t *testing.T) {
	c, store := compile(t, "")
	ctrl := c.ctrl
	ctrl.mu.Lock()
	ctrl.deferred.Store(0) // out of the first window
	ctrl.minRTT = time.Millisecond
	for range 5 {
		ctrl.samples = append(ctrl.samples, time.Second)
		ctrl.resetSampleWindowLocked()
	}
	ctrl.mu.Unlock()
	// The fifth calculation at the minimum starts a minRTT window at once.
	active := store.Gauge("http.in.adaptive_concurrency.gradient_controller.min_rtt_calculation_active")
	deadline := time.Now().Add(10 * time.Second)
	for active.Value() != 1 && time.Now().Before(deadline) {
		time.Sleep(10 * time.Millisecond)
	}
	if active.Value() != 1 {
		t.Error("no new minRTT window after five calculations at the minimum")
	}
}

func TestIntervalOrFixedValueRequired(t *testing.T) {
	for _, params := range []string{`{}`, `{"interval": "0s"}`, `{"fixed_value": "0s"}`, `{"interval": "-1s", "fixed_value": "1s"}`} {
		var cfg acv3.AdaptiveConcurrency
		if err := protojson.Unmarshal([]byte(`{"gradient_controller_config": {"concurrency_limit_params": {"concurrency_update_interval": "1s"}, "min_rtt_calc_params": `+params+`}}`), &cfg); err != nil {
			t.Fatal(err)
		}
		_, err := (Factory{}).Compile(&cfg, httpfilter.Context{Stats: stats.NewStore(), Runtime: noRuntime{}})
		if err == nil || !strings.Contains(err.Error(), "min_rtt_calc_params.") {
			t.Errorf("min_rtt_calc_params %s: error %v", params, err)
		}
	}
}

// compileFixed builds a filter with a fixed minRTT of 10 ms and extra
// concurrency_limit_params.
func compileFixed(t *testing.T, limitParams string) (*filterConfig, func(string) int64) {
	t.Helper()
	js := `{"gradient_controller_config": {
	  "concurrency_limit_params": {"concurrency_update_interval": "3600s", "max_concurrency_limit": 100` + limitParams + `},
	  "min_rtt_calc_params": {"fixed_value": "0.010s", "min_concurrency": 2}}}`
	c, store := compileJSON(t, js)
	return c, func(name string) int64 {
		return store.Gauge("http.in.adaptive_concurrency.gradient_controller." + name).Value()
	}
}

// With a fixed minRTT there is no minRTT window: the limit starts at
// min_concurrency, the gradient is taken against the fixed value, and
// five calculations at the minimum start no window.
func TestFixedMinRTT(t *testing.T) {
	c, g := compileFixed(t, "")
	if g("min_rtt_calculation_active") != 0 || g("min_rtt_msecs") != 10 || g("concurrency_limit") != 2 {
		t.Fatalf("start: active %d, min_rtt %d ms, limit %d", g("min_rtt_calculation_active"), g("min_rtt_msecs"), g("concurrency_limit"))
	}
	ctrl := c.ctrl
	ctrl.mu.Lock()
	// Samples at the fixed minRTT: 1.25 (the buffer) * 2 = 2.5, + sqrt = 4.
	ctrl.samples = append(ctrl.samples, 10*time.Millisecond)
	ctrl.resetSampleWindowLocked()
	ctrl.mu.Unlock()
	if g("concurrency_limit") != 4 || g("gradient") != 1250 {
		t.Fatalf("limit %d, gradient %d", g("concurrency_limit"), g("gradient"))
	}
	ctrl.mu.Lock()
	for range 6 {
		ctrl.samples = append(ctrl.samples, time.Second)
		ctrl.resetSampleWindowLocked()
	}
	ctrl.mu.Unlock()
	// A remeasure would have been set off at once (timer 0).
	time.Sleep(50 * time.Millisecond)
	if g("min_rtt_calculation_active") != 0 || g("concurrency_limit") != 2 || ctrl.minRTT != 10*time.Millisecond {
		t.Errorf("after slow samples: active %d, limit %d, minRTT %v", g("min_rtt_calculation_active"), g("concurrency_limit"), ctrl.minRTT)
	}
}

// min_concurrency_limit is the floor of the calculated limit, apart from
// the minRTT window's min_concurrency.
func TestMinConcurrencyLimit(t *testing.T) {
	c, g := compileFixed(t, `, "min_concurrency_limit": 7`)
	ctrl := c.ctrl
	ctrl.mu.Lock()
	ctrl.samples = append(ctrl.samples, time.Second)
	ctrl.resetSampleWindowLocked()
	ctrl.mu.Unlock()
	// 2 * 0.5 = 1, + 1 = 2, raised to the floor of 7.
	if g("concurrency_limit") != 7 {
		t.Errorf("limit %d, want the floor 7", g("concurrency_limit"))
	}
}

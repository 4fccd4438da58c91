package adaptiveconcurrency

import (
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

func TestIntervalRequired(t *testing.T) {
	var cfg acv3.AdaptiveConcurrency
	_ = protojson.Unmarshal([]byte(`{"gradient_controller_config": {"concurrency_limit_params": {"concurrency_update_interval": "1s"}, "min_rtt_calc_params": {}}}`), &cfg)
	if _, err := (Factory{}).Compile(&cfg, httpfilter.Context{Stats: stats.NewStore(), Runtime: noRuntime{}}); err == nil {
		t.Error("no error without a minRTT interval")
	}
}

package bandwidthlimit

import (
	"net/http"
	"strings"
	"testing"
	"time"

	bandwidthv3 "github.com/envoyproxy/go-control-plane/envoy/extensions/filters/http/bandwidth_limit/v3"
	"google.golang.org/protobuf/types/known/wrapperspb"

	"github.com/outrigger-dev/outrigger/pkg/proxy/httpfilter"
	"github.com/outrigger-dev/outrigger/pkg/proxy/stats"
)

func TestBucketIsSharedAndRefills(t *testing.T) {
	t0 := time.Unix(0, 0)
	b := newBucket(1024, t0) // 1 KiB/s, full
	if k := b.take(1000, t0); k != 1000 {
		t.Fatalf("first take %d", k)
	}
	if k := b.take(100, t0); k != 24 {
		t.Fatalf("the rest of the second's worth: %d", k)
	}
	if k := b.take(100, t0); k != 0 {
		t.Fatalf("empty: %d", k)
	}
	if k := b.take(1000, t0.Add(100*time.Millisecond)); k != 102 {
		t.Fatalf("after 100ms: %d", k)
	}
	if k := b.take(5000, t0.Add(time.Hour)); k != 1024 {
		t.Fatalf("capped at a second's worth: %d", k)
	}
}

func TestThrottleStatsAndTrailers(t *testing.T) {
	st := stats.NewStore()
	s, err := compileSettings(&bandwidthv3.BandwidthLimit{
		StatPrefix: "bw", EnableMode: bandwidthv3.BandwidthLimit_RESPONSE, LimitKbps: wrapperspb.UInt64(1),
		EnableResponseTrailers: true, ResponseTrailerPrefix: "X",
	}, httpfilter.Context{Stats: st}, false)
	if err != nil {
		t.Fatal(err)
	}
	now := time.Now()
	th := &throttle{s: s}
	if k, wait := th.Take(3000, now); k != 1024 || wait != defaultFillInterval {
		t.Fatalf("take %d %v", k, wait)
	}
	if k, _ := th.Take(1976, now.Add(50*time.Millisecond)); k != 51 {
		t.Fatalf("after a fill interval %d", k)
	}
	_, tr, err := th.EncodeEnd(nil)
	if err != nil {
		t.Fatal(err)
	}
	if tr.Get("x-bandwidth-response-filter-delay-ms") != "100" {
		t.Errorf("trailers %v", tr)
	}
	if th.KeepsLength() {
		t.Error("trailers need the body's length dropped")
	}
	for name, want := range map[string]uint64{"response_enforced": 2, "response_incoming_total_size": 3000, "response_allowed_total_size": 1075} {
		if v := st.Counter("bw.http_bandwidth_limit." + name).Value(); v != want {
			t.Errorf("%s = %d, want %d", name, v, want)
		}
	}
	if v := st.Gauge("bw.http_bandwidth_limit.response_pending").Value(); v != 0 {
		t.Errorf("pending %d", v)
	}
	_, tr, _ = (&throttle{s: s}).EncodeEnd(http.Header{"grpc-status": {"0"}})
	if len(tr) != 1 {
		t.Errorf("no delay, no trailer: %v", tr)
	}
}

func TestCompileErrors(t *testing.T) {
	ctx := httpfilter.Context{Stats: stats.NewStore()}
	if _, err := (Factory{}).CompileRoute(&bandwidthv3.BandwidthLimit{}, ctx); err == nil || !strings.Contains(err.Error(), "limit_kbps: limit must be set for per route filter config") {
		t.Errorf("route without a limit: %v", err)
	}
	if _, err := (Factory{}).Compile(&bandwidthv3.BandwidthLimit{EnableMode: bandwidthv3.BandwidthLimit_REQUEST}, ctx); err == nil || !strings.Contains(err.Error(), "enable_mode: REQUEST is not supported") {
		t.Errorf("request mode: %v", err)
	}
}

package admissioncontrol

import (
	"net/http"
	"strings"
	"testing"
	"time"

	acv3 "github.com/envoyproxy/go-control-plane/envoy/extensions/filters/http/admission_control/v3"
	"google.golang.org/protobuf/encoding/protojson"

	"github.com/outrigger-dev/outrigger/pkg/proxy/httpfilter"
	"github.com/outrigger-dev/outrigger/pkg/proxy/httpfilter/httpfiltertest"
	"github.com/outrigger-dev/outrigger/pkg/proxy/stats"
)

// values is a runtime of fixed text values.
type values map[string]string

func (v values) Uint64(key string, def uint64) uint64 {
	if _, ok := v[key]; !ok {
		return def
	}
	var n uint64
	for _, c := range v[key] {
		n = n*10 + uint64(c-'0')
	}
	return n
}

func (v values) Get(key string) (string, bool) { s, ok := v[key]; return s, ok }

func (v values) Bool(key string, def bool) bool {
	if s, ok := v[key]; ok {
		return s == "true"
	}
	return def
}

func compile(t *testing.T, js string, rt values, now func() time.Time) (*filterConfig, *stats.Store) {
	t.Helper()
	var cfg acv3.AdmissionControl
	if err := protojson.Unmarshal([]byte(js), &cfg); err != nil {
		t.Fatal(err)
	}
	store := stats.NewStore()
	c, err := Factory{}.Compile(&cfg, httpfilter.Context{Stats: store, StatPrefix: "http.in.", Runtime: rt, Now: now})
	if err != nil {
		t.Fatal(err)
	}
	return c.(*filterConfig), store
}

func TestRejectProbability(t *testing.T) {
	c, _ := compile(t, `{"success_criteria": {}}`, values{}, nil)
	// Every random draw: the share refused is the probability.
	share := func(requests, successes float64) float64 {
		n := 0
		for r := range uint64(10000) {
			if c.reject(requests, successes, r) {
				n++
			}
		}
		return float64(n) / 10000
	}
	for _, tc := range []struct {
		requests, successes, want float64
	}{
		{0, 0, 0},
		{100, 100, 0},
		{100, 95, 0},     // at the 95% threshold
		{100, 0, 0.8},    // capped at max_rejection_probability
		{100, 57, 0.396}, // (100 - 57/0.95) / 101
	} {
		if got := share(tc.requests, tc.successes); got < tc.want-0.001 || got > tc.want+0.001 {
			t.Errorf("%v/%v: refused %.4f, want %.4f", tc.successes, tc.requests, got, tc.want)
		}
	}
	// Aggression 2 raises the probability to the power 1/2; runtime
	// values replace the defaults.
	c, _ = compile(t, `{"success_criteria": {}, "aggression": {"default_value": 2, "runtime_key": "ac.aggr"},
	  "max_rejection_probability": {"default_value": {"value": 100}, "runtime_key": "ac.max"}}`, values{"ac.max": "50"}, nil)
	n := 0
	for r := range uint64(10000) {
		if c.reject(100, 85.5, r) { // p = 0.099 -> sqrt 0.3146
			n++
		}
	}
	if n < 3140 || n > 3150 {
		t.Errorf("aggression 2: refused %d of 10000", n)
	}
}

func TestWindowAndRequests(t *testing.T) {
	now := time.Unix(1000, 0)
	clock := func() time.Time { return now }
	c, store := compile(t, `{"success_criteria": {"http_criteria": {"http_success_status": [{"start": 200, "end": 300}]}}, "sampling_window": "10s",
	  "rps_threshold": {"default_value": 0, "runtime_key": "ac.rps"}}`, values{}, clock)
	run := func(status int) *httpfiltertest.Stream {
		s := httpfiltertest.NewStream("GET", "/")
		f := c.NewFilter().(*filter)
		if f.DecodeHeaders(s) == httpfilter.Stop {
			return s
		}
		s.Status, s.RespHasBody = status, true
		f.EncodeHeaders(s)
		return s
	}
	early := 0
	for range 50 {
		// Not in [200, 300): failures, which soon get requests refused.
		if s := run(404); s.Reply != nil {
			early++
		}
	}
	// A refused request is not counted in the window.
	if r, s, _ := c.history.counts(now); r+uint64(early) != 50 || s != 0 || early == 0 {
		t.Fatalf("counts %d %d, %d refused", r, s, early)
	}
	refused := early
	for range 100 {
		if s := run(200); s.Reply != nil {
			if s.Reply.Status != 503 || s.Reply.Details != "denied_by_admission_control" {
				t.Fatalf("reply %+v", s.Reply)
			}
			refused++
		}
	}
	if refused == 0 || store.Counter("http.in.admission_control.rq_rejected").Value() != uint64(refused) {
		t.Errorf("refused %d, counted %d", refused, store.Counter("http.in.admission_control.rq_rejected").Value())
	}
	// The window passes: the failures are forgotten.
	now = now.Add(11 * time.Second)
	for range 20 {
		if s := run(200); s.Reply != nil {
			t.Fatal("refused after the window")
		}
	}
	// A gRPC response counts by its trailers' grpc-status.
	s := httpfiltertest.NewStream("POST", "/a/b")
	f := c.NewFilter().(*filter)
	f.DecodeHeaders(s)
	s.Status, s.RespHasBody = 200, true
	s.RespHeaders = httpfiltertest.NewHeaders("content-type", "application/grpc")
	f.EncodeHeaders(s)
	if _, _, err := s.EncodeBody(http.Header{"Grpc-Status": {"14"}}); err != nil {
		t.Fatal(err)
	}
	if r, succ, _ := c.history.counts(now); r != 21 || succ != 20 {
		t.Errorf("after a gRPC UNAVAILABLE: %d requests, %d successes", r, succ)
	}
}

func TestCompileErrors(t *testing.T) {
	for js, want := range map[string]string{
		`{}`: "success_criteria: Evaluation criteria not set",
		`{"success_criteria": {}, "sr_threshold": {"default_value": {"value": 0.5}, "runtime_key": "k"}}`: "sr_threshold.default_value: Success rate threshold cannot be less than 1.0%",
		`{"success_criteria": {"http_criteria": {"http_success_status": [{"start": 100, "end": 700}]}}}`:  "success_criteria.http_criteria.http_success_status[0]: invalid HTTP range: [100, 700)",
		`{"success_criteria": {"grpc_criteria": {"grpc_success_status": [0, 17]}}}`:                       "success_criteria.grpc_criteria.grpc_success_status[1]: invalid gRPC code 17",
	} {
		var cfg acv3.AdmissionControl
		if err := protojson.Unmarshal([]byte(js), &cfg); err != nil {
			t.Fatal(err)
		}
		_, err := Factory{}.Compile(&cfg, httpfilter.Context{Stats: stats.NewStore(), Runtime: values{}})
		if err == nil || !strings.Contains(err.Error(), want) {
			t.Errorf("%s: %v, want %q", js, err, want)
		}
	}
}

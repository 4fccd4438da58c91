package fault

import (
	"testing"
	"time"

	"github.com/outrigger-dev/outrigger/pkg/proxy/httpfilter"
	"github.com/outrigger-dev/outrigger/pkg/proxy/httpfilter/httpfiltertest"
	"github.com/outrigger-dev/outrigger/pkg/proxy/stats"
)

// TestThrottleTake checks the bucket against Envoy's StreamRateLimiter: a
// fill interval's worth at first, the limit a second after, and never
// more than a second's worth held.
func TestThrottleTake(t *testing.T) {
	t0 := time.Unix(1000, 0)
	var th responseThrottle
	th.start(20, t0) // 20 KiB/s: 1024 bytes every 50 ms.
	steps := []struct {
		at       time.Duration
		n, want  int
		wantWait time.Duration
		why      string
	}{
		{0, 4096, 1024, fillInterval, "a fill interval's worth at first"},
		{0, 4096, 0, fillInterval, "nothing more at once"},
		{50 * time.Millisecond, 4096, 1024, fillInterval, "a fill interval later, its worth"},
		{75 * time.Millisecond, 100, 100, 0, "what is asked, when the bucket holds it"},
		{75 * time.Millisecond, 500, 412, fillInterval, "the rest of the half interval"},
		{10 * time.Second, 1 << 20, 20 * 1024, fillInterval, "a second's worth at most"},
	}
	for _, st := range steps {
		got, wait := th.Take(st.n, t0.Add(st.at))
		if got != st.want || wait != st.wantWait {
			t.Errorf("%s: Take(%d) at %v = %d, %v; want %d, %v", st.why, st.n, st.at, got, wait, st.want, st.wantWait)
		}
	}
	if !th.KeepsLength() {
		t.Error("the throttle changes the body's length")
	}
	if p, _ := th.EncodeData([]byte("abc")); string(p) != "abc" {
		t.Errorf("EncodeData = %q", p)
	}
}

// TestResponseRateLimit checks when the rate limit is injected, its
// counter, the active fault it holds to the end of the request, and that
// it asks for the response body.
func TestResponseRateLimit(t *testing.T) {
	tests := map[string]struct {
		config  string
		rt      runtimeValues
		headers []string
		active  int64
		// kbps is the rate injected, 0 for none.
		kbps     uint64
		overflow uint64
	}{
		"a fixed limit":       {config: `{response_rate_limit: {fixed_limit: {limit_kbps: 32}, percentage: {numerator: 100}}}`, kbps: 32},
		"an unset percentage": {config: `{response_rate_limit: {fixed_limit: {limit_kbps: 32}}}`},
		"the runtime turns it off": {config: `{response_rate_limit: {fixed_limit: {limit_kbps: 32}, percentage: {numerator: 100}}}`,
			rt: runtimeValues{"fault.http.rate_limit.response_percent": 0}},
		"the renamed runtime key turns it on": {config: `{response_rate_limit: {fixed_limit: {limit_kbps: 32}}, response_rate_limit_percent_runtime: my.rl}`,
			rt: runtimeValues{"my.rl": 100}, kbps: 32},
		"a header limit": {config: `{response_rate_limit: {header_limit: {}, percentage: {numerator: 100}}}`,
			headers: []string{"x-envoy-fault-throughput-response", "7"}, kbps: 7},
		"a header limit without the header": {config: `{response_rate_limit: {header_limit: {}, percentage: {numerator: 100}}}`},
		"a header limit of 0": {config: `{response_rate_limit: {header_limit: {}, percentage: {numerator: 100}}}`,
			headers: []string{"x-envoy-fault-throughput-response", "0"}},
		"a header limit at the header's 0%": {config: `{response_rate_limit: {header_limit: {}, percentage: {numerator: 100}}}`,
			headers: []string{"x-envoy-fault-throughput-response", "7", "x-envoy-fault-throughput-response-percentage", "0"}},
		"max_active_faults reached": {config: `{response_rate_limit: {fixed_limit: {limit_kbps: 32}, percentage: {numerator: 100}}, max_active_faults: 1}`,
			active: 1, overflow: 1},
	}
	for name, tc := range tests {
		t.Run(name, func(t *testing.T) {
			cfg, st, active := compileWith(t, tc.config, tc.rt, tc.active)
			s := httpfiltertest.NewStream("GET", "/", tc.headers...)
			s.RespHasBody, s.RespBodyLen = true, 10
			f := cfg.NewFilter()
			if got := f.(httpfilter.Decoder).DecodeHeaders(s); got != httpfilter.Continue {
				t.Fatalf("DecodeHeaders = %v", got)
			}
			f.(httpfilter.Encoder).EncodeHeaders(s)
			injected := tc.kbps > 0
			if got := st.Counter("http.test.fault.response_rl_injected").Value(); got != map[bool]uint64{true: 1}[injected] {
				t.Errorf("response_rl_injected = %d", got)
			}
			if got := st.Counter("http.test.fault.faults_overflow").Value(); got != tc.overflow {
				t.Errorf("faults_overflow = %d, want %d", got, tc.overflow)
			}
			wantActive := tc.active
			if injected {
				wantActive++
			}
			if active.Value() != wantActive {
				t.Errorf("active_faults = %d during the request, want %d", active.Value(), wantActive)
			}
			if !injected {
				if len(s.Encoders) != 0 {
					t.Errorf("a response not limited is transformed: %v", s.Encoders)
				}
			} else {
				if len(s.Encoders) != 1 {
					t.Fatalf("encoders %v, want the throttle", s.Encoders)
				}
				th, ok := s.Encoders[0].(httpfilter.Throttle)
				if !ok {
					t.Fatalf("encoder %T is not a throttle", s.Encoders[0])
				}
				// A second after the start the bucket is full: the
				// limit's KiB.
				if got, _ := th.Take(1<<30, time.Now().Add(2*time.Second)); got != int(tc.kbps*1024) {
					t.Errorf("a full bucket gives %d bytes, want %d", got, tc.kbps*1024)
				}
			}
			f.(httpfilter.Destroyer).OnDestroy()
			if active.Value() != tc.active {
				t.Errorf("active_faults = %d after the request, want %d", active.Value(), tc.active)
			}
		})
	}
}

// TestRateLimitKeepsFaultActive checks Envoy's accounting after a delay:
// a configured response rate limit keeps the request's fault active to
// its end, even when the rate limit was not injected.
func TestRateLimitKeepsFaultActive(t *testing.T) {
	st := stats.NewStore()
	cfg, err := Factory{}.Compile(parse(t, `{delay: {fixed_delay: 0.1s, percentage: {numerator: 100}}, response_rate_limit: {fixed_limit: {limit_kbps: 1}}}`),
		httpfilter.Context{Name: "fault", Stats: st, StatPrefix: "http.test."})
	if err != nil {
		t.Fatal(err)
	}
	active := st.Gauge("http.test.fault.active_faults")
	f := cfg.NewFilter()
	if got := f.(httpfilter.Decoder).DecodeHeaders(httpfiltertest.NewStream("GET", "/")); got != httpfilter.Continue || active.Value() != 1 {
		t.Errorf("after the delay: %v, active_faults %d, want 1", got, active.Value())
	}
	f.(httpfilter.Destroyer).OnDestroy()
	if active.Value() != 0 {
		t.Errorf("active_faults = %d after the request", active.Value())
	}
}

// TestFilterMetadata checks that filter_metadata goes into the dynamic
// metadata, under the filter's name, when a delay or an abort is
// injected, and only then.
func TestFilterMetadata(t *testing.T) {
	tests := map[string]struct {
		config string
		want   bool
	}{
		"a delay":            {`{delay: {fixed_delay: 0.01s, percentage: {numerator: 100}}, filter_metadata: {team: sre}}`, true},
		"an abort":           {`{abort: {http_status: 503, percentage: {numerator: 100}}, filter_metadata: {team: sre}}`, true},
		"a gRPC abort":       {`{abort: {grpc_status: 14, percentage: {numerator: 100}}, filter_metadata: {team: sre}}`, true},
		"no fault injected":  {`{abort: {http_status: 503, percentage: {numerator: 0}}, filter_metadata: {team: sre}}`, false},
		"a rate limit alone": {`{response_rate_limit: {fixed_limit: {limit_kbps: 1}, percentage: {numerator: 100}}, filter_metadata: {team: sre}}`, false},
	}
	for name, tc := range tests {
		t.Run(name, func(t *testing.T) {
			cfg, err := Factory{}.Compile(parse(t, tc.config), httpfilter.Context{Name: "my-fault", Stats: stats.NewStore(), StatPrefix: "http.test."})
			if err != nil {
				t.Fatal(err)
			}
			s := httpfiltertest.NewStream("GET", "/")
			f := cfg.NewFilter()
			f.(httpfilter.Decoder).DecodeHeaders(s)
			f.(httpfilter.Destroyer).OnDestroy()
			ns := s.Metadata.GetFilterMetadata()["my-fault"]
			if !tc.want {
				if ns != nil {
					t.Errorf("metadata %v, want none", ns)
				}
				return
			}
			if got := ns.GetFields()["team"]; got.GetStringValue() != "sre" {
				t.Errorf("metadata %v, want my-fault: {team: sre}", s.Metadata)
			}
		})
	}
}

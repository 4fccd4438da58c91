package fault

import (
	"strings"
	"testing"
	"time"

	routev3 "github.com/envoyproxy/go-control-plane/envoy/config/route/v3"
	corsv3 "github.com/envoyproxy/go-control-plane/envoy/extensions/filters/http/cors/v3"
	faultv3 "github.com/envoyproxy/go-control-plane/envoy/extensions/filters/http/fault/v3"
	"google.golang.org/protobuf/encoding/protojson"
	"sigs.k8s.io/yaml"

	"github.com/outrigger-dev/outrigger/pkg/proxy/accesslog"
	"github.com/outrigger-dev/outrigger/pkg/proxy/httpfilter"
	"github.com/outrigger-dev/outrigger/pkg/proxy/httpfilter/httpfiltertest"
	"github.com/outrigger-dev/outrigger/pkg/proxy/router"
	"github.com/outrigger-dev/outrigger/pkg/proxy/stats"
)

// parse decodes an HTTPFault from YAML.
func parse(t *testing.T, y string) *faultv3.HTTPFault {
	t.Helper()
	j, err := yaml.YAMLToJSON([]byte(y))
	if err != nil {
		t.Fatal(err)
	}
	var hf faultv3.HTTPFault
	if err := protojson.Unmarshal(j, &hf); err != nil {
		t.Fatal(err)
	}
	return &hf
}

// runtimeValues is a fixed runtime.
type runtimeValues map[string]uint64

func (r runtimeValues) Uint64(key string, def uint64) uint64 {
	if v, ok := r[key]; ok {
		return v
	}
	return def
}

// table has a route to cluster "backend" at /, to "other" at /other, and
// a direct response at /direct.
func table(t *testing.T) *router.Table {
	var rc routev3.RouteConfiguration
	j, _ := yaml.YAMLToJSON([]byte(`
virtual_hosts:
- domains: ["*"]
  routes:
  - {match: {prefix: /other}, route: {cluster: other}}
  - {match: {prefix: /direct}, direct_response: {status: 200}}
  - {match: {prefix: /}, route: {cluster: backend}}
`))
	if err := protojson.Unmarshal(j, &rc); err != nil {
		t.Fatal(err)
	}
	tb, err := router.Compile(&rc)
	if err != nil {
		t.Fatal(err)
	}
	return tb
}

func TestFault(t *testing.T) {
	tb := table(t)
	type want struct {
		status  httpfilter.Status
		reply   int
		grpc    int // -1: no gRPC status
		body    string
		slept   []time.Duration
		flags   accesslog.ResponseFlags
		delays  uint64
		aborts  uint64
		overflw uint64
	}
	noGrpc := -1
	tests := map[string]struct {
		config  string
		rt      runtimeValues
		path    string
		headers []string
		active  int64 // active faults before the request
		cut     bool  // the sleep is cut short
		want    want
	}{
		"a fixed delay": {config: `{delay: {fixed_delay: 0.2s, percentage: {numerator: 100}}}`,
			want: want{slept: []time.Duration{200 * time.Millisecond}, flags: accesslog.DelayInjected, delays: 1, grpc: noGrpc}},
		"an unset percentage is 0%": {config: `{delay: {fixed_delay: 0.2s}}`, want: want{grpc: noGrpc}},
		"the runtime turns a delay off": {config: `{delay: {fixed_delay: 0.2s, percentage: {numerator: 100}}}`,
			rt: runtimeValues{"fault.http.delay.fixed_delay_percent": 0}, want: want{grpc: noGrpc}},
		"the runtime duration": {config: `{delay: {fixed_delay: 0.2s, percentage: {numerator: 100}}}`,
			rt:   runtimeValues{"fault.http.delay.fixed_duration_ms": 50},
			want: want{slept: []time.Duration{50 * time.Millisecond}, flags: accesslog.DelayInjected, delays: 1, grpc: noGrpc}},
		"renamed runtime keys": {config: `{delay: {fixed_delay: 0.2s, percentage: {numerator: 0}}, delay_percent_runtime: my.pct, delay_duration_runtime: my.ms}`,
			rt:   runtimeValues{"my.pct": 100, "my.ms": 30, "fault.http.delay.fixed_delay_percent": 0},
			want: want{slept: []time.Duration{30 * time.Millisecond}, flags: accesslog.DelayInjected, delays: 1, grpc: noGrpc}},
		"a header delay": {config: `{delay: {header_delay: {}, percentage: {numerator: 100}}}`, headers: []string{"x-envoy-fault-delay-request", "70"},
			want: want{slept: []time.Duration{70 * time.Millisecond}, flags: accesslog.DelayInjected, delays: 1, grpc: noGrpc}},
		"a header delay without the header": {config: `{delay: {header_delay: {}, percentage: {numerator: 100}}}`, want: want{grpc: noGrpc}},
		"a header delay at the header's 0%": {config: `{delay: {header_delay: {}, percentage: {numerator: 100}}}`,
			headers: []string{"x-envoy-fault-delay-request", "70", "x-envoy-fault-delay-request-percentage", "0"}, want: want{grpc: noGrpc}},
		"an abort": {config: `{abort: {http_status: 503, percentage: {numerator: 100}}}`,
			want: want{status: httpfilter.Stop, reply: 503, grpc: noGrpc, body: "fault filter abort", flags: accesslog.FaultInjected, aborts: 1}},
		"an abort with a body": {config: `{abort: {http_status: 418, response_body: teapot, percentage: {numerator: 100}}}`,
			want: want{status: httpfilter.Stop, reply: 418, grpc: noGrpc, body: "teapot", flags: accesslog.FaultInjected, aborts: 1}},
		"the runtime status": {config: `{abort: {http_status: 503, percentage: {numerator: 100}}}`, rt: runtimeValues{"fault.http.abort.http_status": 502},
			want: want{status: httpfilter.Stop, reply: 502, grpc: noGrpc, body: "fault filter abort", flags: accesslog.FaultInjected, aborts: 1}},
		"a gRPC abort": {config: `{abort: {grpc_status: 14, percentage: {numerator: 100}}}`,
			want: want{status: httpfilter.Stop, reply: 200, grpc: 14, body: "fault filter abort", flags: accesslog.FaultInjected, aborts: 1}},
		"a header abort": {config: `{abort: {header_abort: {}, percentage: {numerator: 100}}}`, headers: []string{"x-envoy-fault-abort-request", "429"},
			want: want{status: httpfilter.Stop, reply: 429, grpc: noGrpc, body: "fault filter abort", flags: accesslog.FaultInjected, aborts: 1}},
		"a header abort out of range": {config: `{abort: {header_abort: {}, percentage: {numerator: 100}}}`, headers: []string{"x-envoy-fault-abort-request", "600"},
			want: want{grpc: noGrpc}},
		"a header gRPC abort": {config: `{abort: {header_abort: {}, percentage: {numerator: 100}}}`, headers: []string{"x-envoy-fault-abort-grpc-request", "7"},
			want: want{status: httpfilter.Stop, reply: 200, grpc: 7, body: "fault filter abort", flags: accesslog.FaultInjected, aborts: 1}},
		"a delay, then an abort": {config: `{delay: {fixed_delay: 1s, percentage: {numerator: 100}}, abort: {http_status: 500, percentage: {numerator: 100}}}`,
			want: want{status: httpfilter.Stop, reply: 500, grpc: noGrpc, body: "fault filter abort", slept: []time.Duration{time.Second},
				flags: accesslog.DelayInjected | accesslog.FaultInjected, delays: 1, aborts: 1}},
		"a delay cut short": {config: `{delay: {fixed_delay: 1s, percentage: {numerator: 100}}, abort: {http_status: 500, percentage: {numerator: 100}}}`, cut: true,
			want: want{status: httpfilter.Stop, grpc: noGrpc, slept: []time.Duration{time.Second}, flags: accesslog.DelayInjected, delays: 1}},
		"headers must match": {config: `{abort: {http_status: 503, percentage: {numerator: 100}}, headers: [{name: x-fault, present_match: true}]}`,
			want: want{grpc: noGrpc}},
		"headers that match": {config: `{abort: {http_status: 503, percentage: {numerator: 100}}, headers: [{name: x-fault, present_match: true}]}`,
			headers: []string{"x-fault", "1"}, want: want{status: httpfilter.Stop, reply: 503, grpc: noGrpc, body: "fault filter abort", flags: accesslog.FaultInjected, aborts: 1}},
		"another upstream cluster": {config: `{abort: {http_status: 503, percentage: {numerator: 100}}, upstream_cluster: backend}`, path: "/other",
			want: want{grpc: noGrpc}},
		"the upstream cluster": {config: `{abort: {http_status: 503, percentage: {numerator: 100}}, upstream_cluster: other}`, path: "/other",
			want: want{status: httpfilter.Stop, reply: 503, grpc: noGrpc, body: "fault filter abort", flags: accesslog.FaultInjected, aborts: 1}},
		"a direct response has no cluster": {config: `{abort: {http_status: 503, percentage: {numerator: 100}}, upstream_cluster: other}`, path: "/direct",
			want: want{grpc: noGrpc}},
		"a downstream node not listed": {config: `{abort: {http_status: 503, percentage: {numerator: 100}}, downstream_nodes: [a, b]}`,
			headers: []string{"x-envoy-downstream-service-node", "c"}, want: want{grpc: noGrpc}},
		"a downstream node listed": {config: `{abort: {http_status: 503, percentage: {numerator: 100}}, downstream_nodes: [a, b]}`,
			headers: []string{"x-envoy-downstream-service-node", "b"}, want: want{status: httpfilter.Stop, reply: 503, grpc: noGrpc, body: "fault filter abort", flags: accesslog.FaultInjected, aborts: 1}},
		"max_active_faults reached": {config: `{abort: {http_status: 503, percentage: {numerator: 100}}, max_active_faults: 2}`, active: 2,
			want: want{grpc: noGrpc, overflw: 1}},
		"max_active_faults from the runtime": {config: `{abort: {http_status: 503, percentage: {numerator: 100}}}`, active: 1,
			rt: runtimeValues{"fault.http.max_active_faults": 1}, want: want{grpc: noGrpc, overflw: 1}},
		"the downstream cluster's key replaces the global one": {config: `{abort: {http_status: 503, percentage: {numerator: 0}}}`,
			rt:      runtimeValues{"fault.http.abort.abort_percent": 0, "fault.http.web.abort.abort_percent": 100, "fault.http.web.abort.http_status": 504},
			headers: []string{"x-envoy-downstream-service-cluster", "web"},
			want:    want{status: httpfilter.Stop, reply: 504, grpc: noGrpc, body: "fault filter abort", flags: accesslog.FaultInjected, aborts: 1}},
	}
	for name, tc := range tests {
		t.Run(name, func(t *testing.T) {
			cfg, st, active := compileWith(t, tc.config, tc.rt, tc.active)
			path := tc.path
			if path == "" {
				path = "/"
			}
			s := httpfiltertest.NewStream("GET", path, tc.headers...)
			s.Matched = tb.Match("h", path)
			if s.Matched != nil {
				s.Cluster = s.Matched.Cluster
			}
			s.CutSleep = tc.cut
			f := cfg.NewFilter()
			got := f.(httpfilter.Decoder).DecodeHeaders(s)
			w := tc.want
			if got != w.status {
				t.Errorf("DecodeHeaders = %v, want %v", got, w.status)
			}
			var reply httpfiltertest.LocalReply
			grpc := -1
			if s.Reply != nil {
				reply = *s.Reply
				if reply.HasGrpcStatus {
					grpc = int(reply.GrpcStatus)
				}
			}
			if reply.Status != w.reply || reply.Body != w.body || grpc != w.grpc {
				t.Errorf("reply %+v, want %d %q grpc %d", reply, w.reply, w.body, w.grpc)
			}
			if w.reply != 0 && reply.Details != "fault_filter_abort" {
				t.Errorf("details %q", reply.Details)
			}
			if !slicesEqual(s.Slept, w.slept) || s.Flags != w.flags {
				t.Errorf("slept %v flags %v, want %v %v", s.Slept, s.Flags, w.slept, w.flags)
			}
			for stat, want := range map[string]uint64{"delays_injected": w.delays, "aborts_injected": w.aborts, "faults_overflow": w.overflw} {
				if v := st.Counter("http.test.fault." + stat).Value(); v != want {
					t.Errorf("%s = %d, want %d", stat, v, want)
				}
			}
			f.(httpfilter.Destroyer).OnDestroy()
			if v := active.Value(); v != tc.active {
				t.Errorf("active_faults = %d after the request, want %d", v, tc.active)
			}
		})
	}
}

// compileWith compiles config with the stat prefix http.test. and the
// runtime rt, with active faults already active.
func compileWith(t *testing.T, config string, rt runtimeValues, active int64) (httpfilter.Config, *stats.Store, *stats.Gauge) {
	t.Helper()
	st := stats.NewStore()
	cfg, err := Factory{}.Compile(parse(t, config), httpfilter.Context{Name: "fault", Stats: st, StatPrefix: "http.test.", Runtime: rt})
	if err != nil {
		t.Fatal(err)
	}
	g := st.Gauge("http.test.fault.active_faults")
	g.Set(active)
	return cfg, st, g
}

func slicesEqual(a, b []time.Duration) bool {
	if len(a) != len(b) {
		return false
	}
	for i := range a {
		if a[i] != b[i] {
			return false
		}
	}
	return true
}

// TestActiveFaults checks that a request holds one active fault while it
// is delayed or aborted, and that a delay with no abort after it releases
// its fault at once.
func TestActiveFaults(t *testing.T) {
	st := stats.NewStore()
	cfg, err := Factory{}.Compile(parse(t, `{delay: {fixed_delay: 1s, percentage: {numerator: 100}}, abort: {http_status: 503, percentage: {numerator: 100}}}`),
		httpfilter.Context{Name: "fault", Stats: st, StatPrefix: "http.test."})
	if err != nil {
		t.Fatal(err)
	}
	active := st.Gauge("http.test.fault.active_faults")
	f := cfg.NewFilter()
	s := httpfiltertest.NewStream("GET", "/")
	f.(httpfilter.Decoder).DecodeHeaders(s)
	if active.Value() != 1 {
		t.Errorf("active_faults = %d during the aborted request", active.Value())
	}
	f.(httpfilter.Destroyer).OnDestroy()
	if active.Value() != 0 {
		t.Errorf("active_faults = %d after it", active.Value())
	}

	cfg, _ = Factory{}.Compile(parse(t, `{delay: {fixed_delay: 1s, percentage: {numerator: 100}}}`),
		httpfilter.Context{Name: "fault", Stats: st, StatPrefix: "http.test2."})
	active = st.Gauge("http.test2.fault.active_faults")
	f = cfg.NewFilter()
	if got := f.(httpfilter.Decoder).DecodeHeaders(httpfiltertest.NewStream("GET", "/")); got != httpfilter.Continue || active.Value() != 0 {
		t.Errorf("after a delay alone: %v, active_faults %d", got, active.Value())
	}
	f.(httpfilter.Destroyer).OnDestroy()
}

// TestPerRoute checks that a route's HTTPFault replaces the filter's, and
// that downstream cluster counters are kept.
func TestPerRoute(t *testing.T) {
	st := stats.NewStore()
	cfg, err := Factory{}.Compile(parse(t, `{abort: {http_status: 503, percentage: {numerator: 100}}}`),
		httpfilter.Context{Name: "fault", Stats: st, StatPrefix: "http.test."})
	if err != nil {
		t.Fatal(err)
	}
	rc, err := Factory{}.CompileRoute(parse(t, `{abort: {http_status: 418, percentage: {numerator: 100}}}`), httpfilter.Context{Name: "fault"})
	if err != nil {
		t.Fatal(err)
	}
	s := httpfiltertest.NewStream("GET", "/", "x-envoy-downstream-service-cluster", "web")
	s.PerRoute = map[string][]httpfilter.RouteConfig{"fault": {rc}}
	f := cfg.NewFilter()
	f.(httpfilter.Decoder).DecodeHeaders(s)
	if s.Reply == nil || s.Reply.Status != 418 {
		t.Fatalf("reply %+v, want the route's 418", s.Reply)
	}
	if v := st.Counter("http.test.fault.web.aborts_injected").Value(); v != 1 {
		t.Errorf("http.test.fault.web.aborts_injected = %d", v)
	}
	f.(httpfilter.Destroyer).OnDestroy()
}

func TestCompileErrors(t *testing.T) {
	tests := map[string]struct {
		config, want string
	}{
		"a rate limit of no kind": {`{response_rate_limit: {percentage: {numerator: 1}}}`, "response_rate_limit.limit_type: one of"},
		"a rate limit of 0 KiB/s": {`{response_rate_limit: {fixed_limit: {}}}`, "response_rate_limit.fixed_limit.limit_kbps: must be at least 1"},
		"a bad rate limit percentage": {`{response_rate_limit: {header_limit: {}, percentage: {numerator: 1, denominator: 9}}}`,
			"response_rate_limit.percentage.denominator"},
		"a bad header matcher":    {`{headers: [{name: a, safe_regex_match: {regex: "("}}]}`, "headers[0]"},
		"a bad percentage":        {`{abort: {http_status: 500, percentage: {numerator: 1, denominator: 9}}}`, "abort.percentage.denominator"},
		"an abort without status": {`{abort: {percentage: {numerator: 1}}}`, "abort.error_type: one of"},
		"a delay without kind":    {`{delay: {percentage: {numerator: 1}}}`, "delay.fault_delay_secifier: one of"},
		"an abort status of 100":  {`{abort: {http_status: 100}}`, "abort.http_status: 100 is not in [200, 600)"},
	}
	for name, tc := range tests {
		t.Run(name, func(t *testing.T) {
			_, err := Factory{}.Compile(parse(t, tc.config), httpfilter.Context{Stats: stats.NewStore()})
			if err == nil || !strings.Contains(err.Error(), tc.want) {
				t.Errorf("Compile = %v, want an error with %q", err, tc.want)
			}
		})
	}
	if _, err := (Factory{}).Compile(&corsv3.Cors{}, httpfilter.Context{}); err == nil {
		t.Error("another filter's configuration was accepted")
	}
}

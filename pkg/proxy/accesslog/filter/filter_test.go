package filter

import (
	"strings"
	"testing"
	"time"

	accesslogv3 "github.com/envoyproxy/go-control-plane/envoy/config/accesslog/v3"
	datav3 "github.com/envoyproxy/go-control-plane/envoy/data/accesslog/v3"
	"google.golang.org/protobuf/encoding/protojson"

	"github.com/outrigger-dev/outrigger/pkg/proxy/accesslog"
)

// headers is a request or response header map for entries.
type headers map[string]string

func (h headers) Get(name string) (string, bool) {
	v, ok := h[name]
	return v, ok
}

// fixedRuntime answers runtime keys from a map.
type fixedRuntime map[string]uint64

func (r fixedRuntime) Uint64(key string, def uint64) uint64 {
	if v, ok := r[key]; ok {
		return v
	}
	return def
}

// compileJSON compiles a filter written as Envoy's JSON.
func compileJSON(t *testing.T, js string, ctx Context) (Filter, error) {
	t.Helper()
	var f accesslogv3.AccessLogFilter
	if err := protojson.Unmarshal([]byte(js), &f); err != nil {
		t.Fatalf("bad test filter %s: %v", js, err)
	}
	return Compile(&f, ctx)
}

func TestMatch(t *testing.T) {
	ok200 := &accesslog.Entry{ResponseCode: 200, Duration: 20 * time.Millisecond, Type: datav3.AccessLogType_DownstreamEnd,
		RequestHeaders: headers{"x-request-id": "00000005-0000-4000-8000-000000000000", "x-canary": "yes"}, Method: "GET", Path: "/a"}
	err503 := &accesslog.Entry{ResponseCode: 503, Duration: 1500 * time.Millisecond, ResponseFlags: accesslog.NoHealthyUpstream,
		RequestHeaders: headers{}, Method: "POST", Path: "/b"}
	none := &accesslog.Entry{RequestHeaders: headers{}}
	hc := &accesslog.Entry{ResponseCode: 200, HealthCheck: true, RequestHeaders: headers{}}
	grpcOK := &accesslog.Entry{ResponseCode: 200, ResponseTrailers: headers{"grpc-status": "0"}, ResponseHeaders: headers{}}
	grpcTrailersOnly := &accesslog.Entry{ResponseCode: 200, ResponseHeaders: headers{"grpc-status": "5"}}
	grpcBad := &accesslog.Entry{ResponseCode: 200, ResponseHeaders: headers{"grpc-status": "99"}}
	forced := &accesslog.Entry{ServiceForcedTrace: true}

	tests := []struct {
		name   string
		filter string
		rt     fixedRuntime
		want   map[*accesslog.Entry]bool
	}{
		{"status GE", `{"status_code_filter":{"comparison":{"op":"GE","value":{"default_value":400,"runtime_key":"k"}}}}`, nil,
			map[*accesslog.Entry]bool{ok200: false, err503: true, none: false}},
		{"status EQ 0 matches no response", `{"status_code_filter":{"comparison":{"op":"EQ","value":{"default_value":0,"runtime_key":"k"}}}}`, nil,
			map[*accesslog.Entry]bool{none: true, ok200: false}},
		{"status from runtime", `{"status_code_filter":{"comparison":{"op":"LE","value":{"default_value":400,"runtime_key":"k"}}}}`, fixedRuntime{"k": 100},
			map[*accesslog.Entry]bool{ok200: false, none: true}},
		{"duration GE 1s", `{"duration_filter":{"comparison":{"op":"GE","value":{"default_value":1000,"runtime_key":"d"}}}}`, nil,
			map[*accesslog.Entry]bool{ok200: false, err503: true}},
		{"not health check", `{"not_health_check_filter":{}}`, nil,
			map[*accesslog.Entry]bool{hc: false, ok200: true}},
		{"traceable", `{"traceable_filter":{}}`, nil,
			map[*accesslog.Entry]bool{forced: true, ok200: false}},
		{"header present", `{"header_filter":{"header":{"name":"x-canary"}}}`, nil,
			map[*accesslog.Entry]bool{ok200: true, err503: false}},
		{"header pseudo", `{"header_filter":{"header":{"name":":method","string_match":{"exact":"POST"}}}}`, nil,
			map[*accesslog.Entry]bool{ok200: false, err503: true}},
		{"any flag", `{"response_flag_filter":{}}`, nil,
			map[*accesslog.Entry]bool{ok200: false, err503: true}},
		{"named flags", `{"response_flag_filter":{"flags":["UF","UH"]}}`, nil,
			map[*accesslog.Entry]bool{ok200: false, err503: true}},
		{"other flag", `{"response_flag_filter":{"flags":["NR"]}}`, nil,
			map[*accesslog.Entry]bool{err503: false}},
		{"grpc OK", `{"grpc_status_filter":{"statuses":["OK"]}}`, nil,
			map[*accesslog.Entry]bool{grpcOK: true, grpcTrailersOnly: false, grpcBad: false}},
		{"grpc from http status", `{"grpc_status_filter":{"statuses":["UNAVAILABLE"]}}`, nil,
			map[*accesslog.Entry]bool{err503: true, ok200: false}},
		{"grpc unknown without a response", `{"grpc_status_filter":{"statuses":["UNKNOWN"]}}`, nil,
			map[*accesslog.Entry]bool{none: true, ok200: true, grpcOK: false}},
		{"grpc exclude", `{"grpc_status_filter":{"statuses":["NOT_FOUND"],"exclude":true}}`, nil,
			map[*accesslog.Entry]bool{grpcTrailersOnly: false, grpcOK: true, grpcBad: true}},
		{"log type", `{"log_type_filter":{"types":["DownstreamEnd"]}}`, nil,
			map[*accesslog.Entry]bool{ok200: true, none: false}},
		{"log type exclude", `{"log_type_filter":{"types":["DownstreamEnd"],"exclude":true}}`, nil,
			map[*accesslog.Entry]bool{ok200: false, none: true}},
		{"and", `{"and_filter":{"filters":[{"status_code_filter":{"comparison":{"op":"GE","value":{"default_value":500,"runtime_key":"k"}}}},{"response_flag_filter":{"flags":["UH"]}}]}}`, nil,
			map[*accesslog.Entry]bool{err503: true, ok200: false}},
		{"or", `{"or_filter":{"filters":[{"header_filter":{"header":{"name":"x-canary"}}},{"duration_filter":{"comparison":{"op":"GE","value":{"default_value":1000,"runtime_key":"d"}}}}]}}`, nil,
			map[*accesslog.Entry]bool{err503: true, ok200: true, none: false}},
		// The request id's first 8 hex digits are 5: sampled below 6%,
		// not below 5%.
		{"runtime by request id in", `{"runtime_filter":{"runtime_key":"r","percent_sampled":{"numerator":6}}}`, nil,
			map[*accesslog.Entry]bool{ok200: true}},
		{"runtime by request id out", `{"runtime_filter":{"runtime_key":"r","percent_sampled":{"numerator":5}}}`, nil,
			map[*accesslog.Entry]bool{ok200: false}},
		{"runtime key overrides", `{"runtime_filter":{"runtime_key":"r","percent_sampled":{"numerator":5}}}`, fixedRuntime{"r": 100},
			map[*accesslog.Entry]bool{ok200: true}},
		{"metadata key not found", `{"metadata_filter":{"matcher":{"filter":"f","path":[{"key":"k"}],"value":{"bool_match":true}}}}`, nil,
			map[*accesslog.Entry]bool{ok200: true}},
		{"metadata key not found, not matching", `{"metadata_filter":{"matcher":{"filter":"f","path":[{"key":"k"}],"value":{"bool_match":true}},"match_if_key_not_found":false}}`, nil,
			map[*accesslog.Entry]bool{ok200: false}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			ctx := Context{Random: func() uint64 { return 99 }}
			if tc.rt != nil {
				ctx.Runtime = tc.rt
			}
			f, err := compileJSON(t, tc.filter, ctx)
			if err != nil {
				t.Fatalf("Compile: %v", err)
			}
			for e, want := range tc.want {
				if got := f.Match(e); got != want {
					t.Errorf("Match(code %d, flags %v) = %v, want %v", e.ResponseCode, e.ResponseFlags, got, want)
				}
			}
		})
	}
}

func TestRuntimeIndependentRandomness(t *testing.T) {
	var draws int
	ctx := Context{Random: func() uint64 { draws++; return uint64(draws) * 30 }}
	f, err := compileJSON(t, `{"runtime_filter":{"runtime_key":"r","percent_sampled":{"numerator":50},"use_independent_randomness":true}}`, ctx)
	if err != nil {
		t.Fatal(err)
	}
	e := &accesslog.Entry{RequestHeaders: headers{"x-request-id": "00000001-0000-4000-8000-000000000000"}}
	// Draws 30, 60, 90: 30 < 50 in, 60 out, 90 out; the request id (1)
	// would have said in every time.
	got := []bool{f.Match(e), f.Match(e), f.Match(e)}
	if got[0] != true || got[1] != false || got[2] != false || draws != 3 {
		t.Errorf("matches %v after %d draws, want [true false false] after 3", got, draws)
	}
	// Without a usable request id, the filter draws too.
	f, err = compileJSON(t, `{"runtime_filter":{"runtime_key":"r","percent_sampled":{"numerator":50}}}`, ctx)
	if err != nil {
		t.Fatal(err)
	}
	f.Match(&accesslog.Entry{RequestHeaders: headers{"x-request-id": "short"}})
	if draws != 4 {
		t.Errorf("a short request id did not draw: %d draws", draws)
	}
}

func TestCompileErrors(t *testing.T) {
	tests := map[string]string{
		`{}`:                        "filter_specifier: one filter is required",
		`{"status_code_filter":{}}`: "status_code_filter.comparison: required",
		`{"status_code_filter":{"comparison":{"op":"GE"}}}`:                          "status_code_filter.comparison.value: required",
		`{"duration_filter":{"comparison":{"op":"GE","value":{"default_value":1}}}}`: "duration_filter.comparison.value.runtime_key: must be set",
		`{"runtime_filter":{}}`: "runtime_filter.runtime_key: must be set",
		`{"and_filter":{"filters":[{"not_health_check_filter":{}}]}}`:   "and_filter.filters: at least 2 filters are required, got 1",
		`{"or_filter":{"filters":[{"not_health_check_filter":{}},{}]}}`: "or_filter.filters[1].filter_specifier: one filter is required",
		`{"header_filter":{}}`:                                                                                                       "header_filter.header: required",
		`{"header_filter":{"header":{"name":""}}}`:                                                                                   "header_filter.header.name: a header name is required",
		`{"response_flag_filter":{"flags":["UH","XX"]}}`:                                                                             `response_flag_filter.flags[1]: unknown response flag "XX"`,
		`{"grpc_status_filter":{"statuses":[42]}}`:                                                                                   "grpc_status_filter.statuses[0]: unknown status 42",
		`{"metadata_filter":{"matcher":{"filter":"f","path":[{"key":"k"}]}}}`:                                                        "metadata_filter.matcher.value: required",
		`{"metadata_filter":{"matcher":{"filter":"f","value":{"bool_match":true}}}}`:                                                 "metadata_filter.matcher.path: at least one segment is required",
		`{"metadata_filter":{"matcher":{"filter":"f","path":[{"key":"k"}],"value":{"bool_match":true},"invert":true}}}`:              "metadata_filter.matcher.invert: not supported",
		`{"metadata_filter":{"matcher":{"filter":"f","path":[{"key":"k"}],"value":{"double_match":{"range":{"start":2,"end":1}}}}}}`: "metadata_filter.matcher.value.double_match.range: start 2 must be below end 1",
		`{"extension_filter":{"name":"cel"}}`:                                                                                        "extension_filter.typed_config: Didn't find a registered implementation for 'cel'",
	}
	for js, want := range tests {
		t.Run(want, func(t *testing.T) {
			_, err := compileJSON(t, js, Context{})
			if err == nil || !strings.Contains(err.Error(), want) {
				t.Fatalf("error = %v, want it to contain %q", err, want)
			}
		})
	}
}

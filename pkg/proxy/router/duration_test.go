package router

import (
	"strings"
	"testing"
	"time"
)

func TestStreamDurations(t *testing.T) {
	table := mustCompile(t, `
virtual_hosts:
- name: v
  domains: ["*"]
  routes:
  - {match: {prefix: /msd}, route: {cluster: c, timeout: 3s, max_stream_duration: {max_stream_duration: 2s, grpc_timeout_header_max: 0s, grpc_timeout_header_offset: 0.1s}}}
  - {match: {prefix: /empty}, route: {cluster: c, max_stream_duration: {}}}
  - {match: {prefix: /old}, route: {cluster: c, max_grpc_timeout: 1s, grpc_timeout_offset: 0.2s}}
  - {match: {prefix: /both}, route: {cluster: c, max_grpc_timeout: 1s, max_stream_duration: {max_stream_duration: 0s}}}
  - {match: {prefix: /offset-only}, route: {cluster: c, grpc_timeout_offset: 0.2s}}
`)
	r := table.Match("h", "/msd")
	want := StreamDuration{Max: 2 * time.Second, MaxSet: true, GrpcHeaderMaxSet: true, GrpcHeaderOffset: 100 * time.Millisecond}
	if r.StreamDuration == nil || *r.StreamDuration != want {
		t.Errorf("/msd StreamDuration = %+v, want %+v", r.StreamDuration, want)
	}
	if r.Timeout != 0 {
		t.Errorf("/msd Timeout = %v: max_stream_duration lifts the route timeout", r.Timeout)
	}
	if r := table.Match("h", "/empty"); r.StreamDuration == nil || *r.StreamDuration != (StreamDuration{}) || r.Timeout != 0 {
		t.Errorf("/empty = %+v, %v; want an empty StreamDuration and no timeout", r.StreamDuration, r.Timeout)
	}
	if r := table.Match("h", "/old"); r.GrpcTimeout == nil || *r.GrpcTimeout != (GrpcTimeout{Max: time.Second, Offset: 200 * time.Millisecond}) || r.Timeout != DefaultTimeout {
		t.Errorf("/old = %+v, %v", r.GrpcTimeout, r.Timeout)
	}
	if r := table.Match("h", "/both"); r.GrpcTimeout != nil {
		t.Errorf("/both GrpcTimeout = %+v: max_stream_duration turns it off", r.GrpcTimeout)
	}
	if r := table.Match("h", "/offset-only"); r.GrpcTimeout != nil || r.Timeout != DefaultTimeout {
		t.Errorf("/offset-only = %+v, %v: an offset alone does nothing", r.GrpcTimeout, r.Timeout)
	}
}

func TestStreamDurationErrors(t *testing.T) {
	for name, tc := range map[string]struct{ route, want string }{
		"negative max":    {"max_stream_duration: {max_stream_duration: -1s}", "max_stream_duration.max_stream_duration: "},
		"negative cap":    {"max_stream_duration: {grpc_timeout_header_max: -1s}", "max_stream_duration.grpc_timeout_header_max: "},
		"negative offset": {"max_stream_duration: {grpc_timeout_header_offset: -1s}", "max_stream_duration.grpc_timeout_header_offset: "},
		"negative old":    {"max_grpc_timeout: -1s", "max_grpc_timeout: "},
	} {
		_, err := Compile(parseRC(t, vhost("{match: {prefix: /}, route: {cluster: c, "+tc.route+"}}")))
		if err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("%s: error %v, want one naming %q", name, err, tc.want)
		}
	}
}

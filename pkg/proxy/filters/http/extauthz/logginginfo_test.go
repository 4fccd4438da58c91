package extauthz

import (
	"testing"

	authv3 "github.com/envoyproxy/go-control-plane/envoy/service/auth/v3"

	"github.com/outrigger-dev/outrigger/pkg/proxy/accesslog"
)

// TestFilterStateStats checks emit_filter_state_stats and filter_metadata:
// a checked request gets the filter's logging info under the filter's
// name, whose latency_us field an access log shows (a number, after a
// call to a real gRPC service); filter_metadata alone leaves the object
// without a latency; a request not checked gets none.
func TestFilterStateStats(t *testing.T) {
	format, err := accesslog.Text("[%FILTER_STATE(envoy.filters.http.ext_authz:FIELD:latency_us)%][%FILTER_STATE(envoy.filters.http.ext_authz)%]", false)
	if err != nil {
		t.Fatal(err)
	}
	show := func(st map[string]accesslog.FilterStateObject) string {
		return string(format.Append(nil, &accesslog.Entry{FilterState: st}))
	}
	allow := &authv3.CheckResponse{Status: statusOf(0)}

	c, _ := grpcFilter(t, `, "emit_filter_state_stats": true, "filter_metadata": {"team": "a"}`, allow)
	s := routed("GET", "/")
	run(c, s)
	li, ok := s.FilterState["envoy.filters.http.ext_authz"].(*loggingInfo)
	if !ok {
		t.Fatalf("filter state %v", s.FilterState)
	}
	if li.filterMetadata.GetFields()["team"].GetStringValue() != "a" {
		t.Errorf("filter_metadata %v", li.filterMetadata)
	}
	if v, ok := li.FilterStateField("latency_us"); !ok || v.(int64) < 0 {
		t.Errorf("latency_us %v %v", v, ok)
	}
	if got := show(s.FilterState); got == "[-][-]" || got[len(got)-3:] != "[-]" {
		t.Errorf("access log %s, want the latency and no serialization", got)
	}

	c, _ = grpcFilter(t, `, "filter_metadata": {"team": "a"}`, allow)
	s = routed("GET", "/")
	run(c, s)
	if s.FilterState["envoy.filters.http.ext_authz"] == nil {
		t.Fatal("filter_metadata alone left no object")
	}
	if got := show(s.FilterState); got != "[-][-]" {
		t.Errorf("access log %s, want no latency without emit_filter_state_stats", got)
	}

	// Not checked (no route): no object.
	c, _ = grpcFilter(t, `, "emit_filter_state_stats": true`, allow)
	s = routed("GET", "/")
	s.Matched = nil
	run(c, s)
	if len(s.FilterState) != 0 {
		t.Errorf("an unchecked request got filter state %v", s.FilterState)
	}
}

package httpconn

import (
	"net/http"
	"testing"

	corev3 "github.com/envoyproxy/go-control-plane/envoy/config/core/v3"
	hcmv3 "github.com/envoyproxy/go-control-plane/envoy/extensions/filters/network/http_connection_manager/v3"

	"github.com/outrigger-dev/outrigger/pkg/proxy/accesslog"
	"github.com/outrigger-dev/outrigger/pkg/proxy/stats"
	"github.com/outrigger-dev/outrigger/pkg/proxy/tracing"
)

// TestProxyStatus checks proxy_status_config: the Proxy-Status field on
// local replies and upstream errors, with its proxy name, details and
// recommended status as Envoy's ProxyStatusUtils makes them, and none on a
// response without an error.
func TestProxyStatus(t *testing.T) {
	type psc = hcmv3.HttpConnectionManager_ProxyStatusConfig
	tests := map[string]struct {
		cfg        *psc
		path       string
		wantStatus int
		want       string
	}{
		"no route, the defaults": {
			cfg: &psc{}, path: "/nowhere", wantStatus: 404,
			want: `outrigger; error=destination_not_found; details="route_not_found; NR"`,
		},
		"set_recommended_response_code": {
			cfg: &psc{SetRecommendedResponseCode: true}, path: "/nowhere", wantStatus: 500,
			want: `outrigger; error=destination_not_found; details="route_not_found; NR"`,
		},
		"literal_proxy_name, remove_response_flags": {
			cfg:  &psc{ProxyName: &hcmv3.HttpConnectionManager_ProxyStatusConfig_LiteralProxyName{LiteralProxyName: "edge"}, RemoveResponseFlags: true},
			path: "/nowhere", wantStatus: 404,
			want: `edge; error=destination_not_found; details="route_not_found"`,
		},
		"use_node_id, remove_details": {
			cfg:  &psc{ProxyName: &hcmv3.HttpConnectionManager_ProxyStatusConfig_UseNodeId{UseNodeId: true}, RemoveDetails: true},
			path: "/nowhere", wantStatus: 404,
			want: `node-1; error=destination_not_found`,
		},
		"an upstream that refuses the connection": {
			cfg: &psc{SetRecommendedResponseCode: true}, path: "/up", wantStatus: 502,
			want: `outrigger; error=connection_refused; details="upstream_reset_before_response_started{connection_failure}; UF"`,
		},
		"no error, no field":           {cfg: &psc{}, path: "/d", wantStatus: 200},
		"without the config, no field": {path: "/nowhere", wantStatus: 404},
	}
	for name, tc := range tests {
		t.Run(name, func(t *testing.T) {
			st := stats.NewStore()
			cfg := hcm(routeConfig(directRoute("/d", 200, "hi"), clusterRoute("/up", "up")))
			cfg.ProxyStatusConfig = tc.cfg
			p := startProxy(t, cfg, Deps{
				Stats:     st,
				Upstreams: fakeUpstreams{"up": newFakeCluster(st, "up", false, "127.0.0.1:1")},
				Tracing:   tracing.Context{Node: &corev3.Node{Id: "node-1"}},
			})
			status, hdr, _ := do(t, client(), http.MethodGet, p.url(tc.path), nil, nil)
			if status != tc.wantStatus {
				t.Errorf("status %d, want %d", status, tc.wantStatus)
			}
			if got := hdr.Values("Proxy-Status"); tc.want == "" && len(got) != 0 || tc.want != "" && (len(got) != 1 || got[0] != tc.want) {
				t.Errorf("Proxy-Status %q, want %q", got, tc.want)
			}
		})
	}
}

// TestProxyErrorOf checks the order of Envoy's flag-to-error mapping: the
// first flag of its list wins, whatever the bits' order.
func TestProxyErrorOf(t *testing.T) {
	tests := map[string]struct {
		flags accesslog.ResponseFlags
		want  string
	}{
		"none":                          {0, ""},
		"a flag that names no error":    {accesslog.DelayInjected, ""},
		"UH before UT":                  {accesslog.UpstreamRequestTimeout | accesslog.NoHealthyUpstream, "destination_unavailable"},
		"UF":                            {accesslog.UpstreamConnectionFailure, "connection_refused"},
		"LR before UF":                  {accesslog.UpstreamConnectionFailure | accesslog.LocalReset, "connection_timeout"},
		"URX":                           {accesslog.UpstreamRetryLimitExceeded, "destination_unavailable"},
		"SI":                            {accesslog.StreamIdleTimeout, "http_response_timeout"},
		"DF":                            {accesslog.DNSResolutionFailed, "dns_error"},
		"OM":                            {accesslog.OverloadManager, "connection_limit_reached"},
		"UPE":                           {accesslog.UpstreamProtocolError, "http_protocol_error"},
		"NFCF":                          {accesslog.NoFilterConfigFound, "proxy_configuration_error"},
		"FI (no recommended status)":    {accesslog.FaultInjected, "http_request_error"},
		"UC after the connection flags": {accesslog.UpstreamConnectionTermination | accesslog.NoRouteFound, "connection_terminated"},
	}
	for name, tc := range tests {
		t.Run(name, func(t *testing.T) {
			e, ok := proxyErrorOf(tc.flags)
			if ok != (tc.want != "") || e.name != tc.want {
				t.Errorf("proxyErrorOf(%v) = %q, %v; want %q", tc.flags, e.name, ok, tc.want)
			}
		})
	}
	p := &proxyStatus{name: "p"}
	if got, want := p.value(errHTTPRequestError, "a\"b\\c\nd", 0), `p; error=http_request_error; details="a\"b\\c\nd"`; got != want {
		t.Errorf("escaped details %q, want %q", got, want)
	}
}

package killrequest

import (
	"testing"

	killrequestv3 "github.com/envoyproxy/go-control-plane/envoy/extensions/filters/http/kill_request/v3"
	typev3 "github.com/envoyproxy/go-control-plane/envoy/type/v3"

	"github.com/outrigger-dev/outrigger/pkg/proxy/httpfilter"
	"github.com/outrigger-dev/outrigger/pkg/proxy/httpfilter/httpfiltertest"
)

func TestKill(t *testing.T) {
	always := &typev3.FractionalPercent{Numerator: 100}
	onResponse := &killrequestv3.KillRequest{Probability: always, Direction: killrequestv3.KillRequest_RESPONSE}
	for _, tc := range []struct {
		name     string
		config   *killrequestv3.KillRequest
		perRoute *killrequestv3.KillRequest
		req      []string
		resp     []string
		want     bool
	}{
		{name: "true", config: &killrequestv3.KillRequest{Probability: always}, req: []string{"x-envoy-kill-request", "true"}, want: true},
		{name: "Yes any case", config: &killrequestv3.KillRequest{Probability: always}, req: []string{"x-envoy-kill-request", "Yes"}, want: true},
		{name: "1", config: &killrequestv3.KillRequest{Probability: always}, req: []string{"x-envoy-kill-request", "1"}, want: true},
		{name: "false", config: &killrequestv3.KillRequest{Probability: always}, req: []string{"x-envoy-kill-request", "false"}},
		{name: "garbage", config: &killrequestv3.KillRequest{Probability: always}, req: []string{"x-envoy-kill-request", "sure"}},
		{name: "no header", config: &killrequestv3.KillRequest{Probability: always}},
		{name: "probability 0", config: &killrequestv3.KillRequest{}, req: []string{"x-envoy-kill-request", "true"}},
		{name: "own header", config: &killrequestv3.KillRequest{Probability: always, KillRequestHeader: "X-Chaos"}, req: []string{"x-chaos", "t"}, want: true},
		{name: "own header only", config: &killrequestv3.KillRequest{Probability: always, KillRequestHeader: "X-Chaos"}, req: []string{"x-envoy-kill-request", "t"}},
		{name: "route probability", config: &killrequestv3.KillRequest{}, perRoute: &killrequestv3.KillRequest{Probability: always}, req: []string{"x-envoy-kill-request", "true"}, want: true},
		{name: "route direction", config: &killrequestv3.KillRequest{Probability: always}, perRoute: onResponse, req: []string{"x-envoy-kill-request", "true"}},
		{name: "response", config: onResponse, resp: []string{"x-envoy-kill-request", "y"}, want: true},
		{name: "response ignores the request", config: onResponse, req: []string{"x-envoy-kill-request", "y"}},
		{name: "request direction ignores the response", config: &killrequestv3.KillRequest{Probability: always}, resp: []string{"x-envoy-kill-request", "y"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			cfg, err := Factory{}.Compile(tc.config, httpfilter.Context{Name: "kill"})
			if err != nil {
				t.Fatal(err)
			}
			crashed := false
			cfg.(*filterConfig).crash = func() { crashed = true }
			s := httpfiltertest.NewStream("GET", "/", tc.req...)
			if tc.perRoute != nil {
				rc, err := Factory{}.CompileRoute(tc.perRoute, httpfilter.Context{Name: "kill"})
				if err != nil {
					t.Fatal(err)
				}
				s.PerRoute = map[string][]httpfilter.RouteConfig{"kill": {rc}}
			}
			f := cfg.NewFilter()
			f.(httpfilter.Decoder).DecodeHeaders(s)
			s.RespHeaders = httpfiltertest.NewHeaders(tc.resp...)
			f.(httpfilter.Encoder).EncodeHeaders(s)
			if crashed != tc.want {
				t.Fatalf("crashed %v, want %v", crashed, tc.want)
			}
		})
	}
}

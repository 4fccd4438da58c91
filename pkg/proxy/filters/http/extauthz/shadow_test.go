package extauthz

import (
	"testing"

	corev3 "github.com/envoyproxy/go-control-plane/envoy/config/core/v3"
	extauthzv3 "github.com/envoyproxy/go-control-plane/envoy/extensions/filters/http/ext_authz/v3"
	"google.golang.org/protobuf/proto"

	"github.com/outrigger-dev/outrigger/pkg/proxy/httpfilter"
)

func TestShadowMode(t *testing.T) {
	for name, tc := range map[string]struct {
		resp *response
		want *extauthzv3.ShadowDecision
		stat string
	}{
		"ok": {
			&response{status: statusOK, requestHeaders: []headerEdit{{name: "x-user", value: "alice", action: actionSet}}},
			&extauthzv3.ShadowDecision{CheckResult: extauthzv3.ShadowDecision_OK, StatusCode: 200},
			"ok",
		},
		"denied": {
			&response{status: statusDenied, httpStatus: 401, body: "go away", localHeaders: []headerEdit{{name: "www-authenticate", value: "Bearer"}, {name: "set-cookie", value: "a"}, {name: "set-cookie", value: "b"}}},
			&extauthzv3.ShadowDecision{CheckResult: extauthzv3.ShadowDecision_DENIED, StatusCode: 401, ResponseHeaders: []*corev3.HeaderValue{
				{Key: "www-authenticate", Value: "Bearer"}, {Key: "set-cookie", Value: "a"}, {Key: "set-cookie", Value: "b"},
			}},
			"denied",
		},
		"error": {
			errorResponse("down"),
			&extauthzv3.ShadowDecision{CheckResult: extauthzv3.ShadowDecision_ERROR, StatusCode: 503},
			"error",
		},
	} {
		t.Run(name, func(t *testing.T) {
			c, _, ctx := newTest(t, `{`+grpcService+`, "shadow_mode": true, "status_on_error": {"code": 503}}`, tc.resp)
			s := routed("GET", "/")
			if got := run(c, s); got != httpfilter.Continue || s.Reply != nil {
				t.Fatalf("status %v, reply %+v: shadow_mode never answers", got, s.Reply)
			}
			obj, ok := s.FilterState["envoy.filters.http.ext_authz.shadow"]
			if !ok {
				t.Fatal("no ShadowDecision under <name>.shadow")
			}
			if got := obj.FilterStateProto(); !proto.Equal(got, tc.want) {
				t.Errorf("decision %v, want %v", got, tc.want)
			}
			if counter(ctx, "http.in.ext_authz."+tc.stat) != 1 {
				t.Errorf("%s not counted", tc.stat)
			}
			if name == "ok" {
				if v, _ := s.ReqHeaders.Get("x-user"); v != "alice" {
					t.Error("an allowed check's header mutations are still applied")
				}
			}
			if name == "denied" && counter(ctx, "cluster.up.upstream_rq_401") != 0 {
				t.Error("a shadow denial charged to the cluster: no reply was sent")
			}
		})
	}
}

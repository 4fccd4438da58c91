package extauthz

import (
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"

	corev3 "github.com/envoyproxy/go-control-plane/envoy/config/core/v3"
	extauthzv3 "github.com/envoyproxy/go-control-plane/envoy/extensions/filters/http/ext_authz/v3"
	authv3 "github.com/envoyproxy/go-control-plane/envoy/service/auth/v3"
	typev3 "github.com/envoyproxy/go-control-plane/envoy/type/v3"
	"google.golang.org/protobuf/types/known/durationpb"

	"github.com/outrigger-dev/outrigger/pkg/proxy/httpfilter"
)

// TestRouteServiceOverride checks check_settings' grpc_service and
// http_service: the most specific configuration's override is asked
// instead of the filter's service (a real gRPC and a real HTTP server
// here), and a more specific configuration without one goes back to the
// filter's service, as in Envoy.
func TestRouteServiceOverride(t *testing.T) {
	grpcAddr := serveGRPC(t, &authzGRPC{resp: &authv3.CheckResponse{
		Status: statusOf(7),
		HttpResponse: &authv3.CheckResponse_DeniedResponse{DeniedResponse: &authv3.DeniedHttpResponse{
			Status: &typev3.HttpStatus{Code: typev3.StatusCode_Unauthorized}, Body: "grpc says no",
		}},
	}})
	var (
		mu    sync.Mutex
		paths []string
	)
	httpSrv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		mu.Lock()
		paths = append(paths, r.RequestURI)
		mu.Unlock()
		w.WriteHeader(http.StatusPaymentRequired)
		_, _ = io.WriteString(w, "http says pay")
	}))
	defer httpSrv.Close()

	c, fc, ctx := newTest(t, `{`+grpcService+`}`, &response{status: statusOK})
	ctx.Services = fakeServices{clusters: map[string]string{
		"authz-grpc": grpcAddr,
		"authz-http": strings.TrimPrefix(httpSrv.URL, "http://"),
	}}
	compile := func(cs *extauthzv3.CheckSettings) httpfilter.RouteConfig {
		t.Helper()
		rc, err := Factory{}.CompileRoute(checkSettings(cs), ctx)
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { _ = rc.(*routeConfig).Close() })
		return rc
	}
	grpcOverride := compile(&extauthzv3.CheckSettings{ServiceOverride: &extauthzv3.CheckSettings_GrpcService{GrpcService: &corev3.GrpcService{
		TargetSpecifier: &corev3.GrpcService_EnvoyGrpc_{EnvoyGrpc: &corev3.GrpcService_EnvoyGrpc{ClusterName: "authz-grpc"}},
		Timeout:         durationpb.New(5e9),
	}}})
	httpOverride := compile(&extauthzv3.CheckSettings{ServiceOverride: &extauthzv3.CheckSettings_HttpService{HttpService: &extauthzv3.HttpService{
		ServerUri:    &corev3.HttpUri{Uri: "http://authz", HttpUpstreamType: &corev3.HttpUri_Cluster{Cluster: "authz-http"}, Timeout: durationpb.New(5e9)},
		PathOverride: "/check",
	}}})
	noOverride := compile(&extauthzv3.CheckSettings{ContextExtensions: map[string]string{"k": "v"}})
	if rc := httpOverride.(*routeConfig); rc.timeout != 5e9 {
		t.Errorf("timeout %v", rc.timeout)
	}

	for name, tc := range map[string]struct {
		configs    []httpfilter.RouteConfig
		wantStatus int
		wantBody   string
	}{
		"grpc override":                   {[]httpfilter.RouteConfig{grpcOverride}, 401, "grpc says no"},
		"http override":                   {[]httpfilter.RouteConfig{httpOverride}, 402, "http says pay"},
		"most specific override wins":     {[]httpfilter.RouteConfig{grpcOverride, httpOverride}, 402, "http says pay"},
		"less specific override not kept": {[]httpfilter.RouteConfig{grpcOverride, noOverride}, 0, ""},
	} {
		t.Run(name, func(t *testing.T) {
			before := len(fc.reqs)
			s := routed("GET", "/p?q")
			s.PerRoute = map[string][]httpfilter.RouteConfig{ctx.Name: tc.configs}
			st := run(c, s)
			if tc.wantStatus == 0 {
				if st != httpfilter.Continue || len(fc.reqs) != before+1 {
					t.Errorf("status %v, %d checks by the filter's service, want it asked", st, len(fc.reqs)-before)
				}
				return
			}
			if st != httpfilter.Stop || s.Reply == nil || s.Reply.Status != tc.wantStatus || s.Reply.Body != tc.wantBody {
				t.Errorf("status %v reply %+v, want %d %q", st, s.Reply, tc.wantStatus, tc.wantBody)
			}
			if len(fc.reqs) != before {
				t.Error("the filter's service was asked too")
			}
		})
	}
	mu.Lock()
	defer mu.Unlock()
	if len(paths) != 2 || paths[0] != "/check" {
		t.Errorf("the HTTP override got %q, want two checks at path_override /check", paths)
	}
}

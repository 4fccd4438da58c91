package extproc

import (
	"testing"

	corev3 "github.com/envoyproxy/go-control-plane/envoy/config/core/v3"
	extprocv3 "github.com/envoyproxy/go-control-plane/envoy/extensions/filters/http/ext_proc/v3"
	extprocsvc "github.com/envoyproxy/go-control-plane/envoy/service/ext_proc/v3"
	typev3 "github.com/envoyproxy/go-control-plane/envoy/type/v3"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/metadata"
	"google.golang.org/grpc/status"
	"google.golang.org/protobuf/types/known/structpb"
	"google.golang.org/protobuf/types/known/wrapperspb"

	"github.com/outrigger-dev/outrigger/pkg/proxy/httpfilter"
	"github.com/outrigger-dev/outrigger/pkg/proxy/httpfilter/httpfiltertest"
)

// failing is a processor script that fails every stream.
func failing(srv extprocsvc.ExternalProcessor_ProcessServer) error {
	if _, err := srv.Recv(); err != nil {
		return err
	}
	return status.Error(codes.Unavailable, "down")
}

// decodeRoute runs a GET through the filter with per-route
// configurations, least specific first.
func decodeRoute(t *testing.T, c *config, routes ...*extprocv3.ExtProcPerRoute) (*httpfiltertest.Stream, httpfilter.Status) {
	t.Helper()
	s := decodeStream()
	s.PerRoute = map[string][]httpfilter.RouteConfig{c.name: compileRoutes(t, routes...)}
	f := c.NewFilter().(*filter)
	st := f.DecodeHeaders(s)
	f.OnDestroy()
	return s, st
}

// compileRoutes compiles per-route configurations.
func compileRoutes(t *testing.T, routes ...*extprocv3.ExtProcPerRoute) []httpfilter.RouteConfig {
	t.Helper()
	var rcs []httpfilter.RouteConfig
	for _, r := range routes {
		rc, err := Factory{}.CompileRoute(r, testContext())
		if err != nil {
			t.Fatal(err)
		}
		rcs = append(rcs, rc)
	}
	return rcs
}

// overrides is an ExtProcPerRoute with o.
func overrides(o *extprocv3.ExtProcOverrides) *extprocv3.ExtProcPerRoute {
	return &extprocv3.ExtProcPerRoute{Override: &extprocv3.ExtProcPerRoute_Overrides{Overrides: o}}
}

func TestStatusOnError(t *testing.T) {
	for code, want := range map[typev3.StatusCode]int{0: 500, typev3.StatusCode_ServiceUnavailable: 503, typev3.StatusCode(600): 500} {
		c, _ := startScripted(t, failing, func(p *extprocv3.ExternalProcessor) {
			if code != 0 {
				p.StatusOnError = &typev3.HttpStatus{Code: code}
			}
		})
		s, st := decode(c)
		if st != httpfilter.Stop || s.Reply == nil || s.Reply.Status != want || s.Reply.Details != "ext_proc_error_gRPC_error_14" {
			t.Errorf("status_on_error %d: %v reply %+v, want %d", code, st, s.Reply, want)
		}
	}
}

func TestPerRouteFailureModeAllow(t *testing.T) {
	c, store := startScripted(t, failing, nil)
	// The most specific level that sets it wins.
	s, st := decodeRoute(t, c,
		overrides(&extprocv3.ExtProcOverrides{FailureModeAllow: wrapperspb.Bool(false)}),
		overrides(&extprocv3.ExtProcOverrides{FailureModeAllow: wrapperspb.Bool(true)}),
		overrides(&extprocv3.ExtProcOverrides{}))
	if st != httpfilter.Continue || s.Reply != nil {
		t.Fatalf("%v reply %+v, want the request to go on", st, s.Reply)
	}
	if got := store.Counter("http.in.ext_proc.failure_mode_allowed").Value(); got != 1 {
		t.Errorf("failure_mode_allowed %d, want 1", got)
	}

	c, _ = startScripted(t, failing, func(p *extprocv3.ExternalProcessor) { p.FailureModeAllow = true })
	s, st = decodeRoute(t, c, overrides(&extprocv3.ExtProcOverrides{FailureModeAllow: wrapperspb.Bool(false)}))
	if st != httpfilter.Stop || s.Reply == nil || s.Reply.Status != 500 {
		t.Fatalf("%v reply %+v, want 500: the route turned failure_mode_allow off", st, s.Reply)
	}
}

func TestPerRouteInitialMetadataAndNamespaces(t *testing.T) {
	type seen struct {
		md   metadata.MD
		meta *corev3.Metadata
	}
	got := make(chan seen, 1)
	c, _ := startScripted(t, func(srv extprocsvc.ExternalProcessor_ProcessServer) error {
		m, err := srv.Recv()
		if err != nil {
			return err
		}
		md, _ := metadata.FromIncomingContext(srv.Context())
		got <- seen{md, m.GetMetadataContext()}
		return srv.Send(&extprocsvc.ProcessingResponse{
			Response: &extprocsvc.ProcessingResponse_RequestHeaders{RequestHeaders: &extprocsvc.HeadersResponse{}},
			DynamicMetadata: &structpb.Struct{Fields: map[string]*structpb.Value{
				"filter.ns": structpb.NewStructValue(&structpb.Struct{Fields: map[string]*structpb.Value{"a": structpb.NewStringValue("1")}}),
				"route.ns":  structpb.NewStructValue(&structpb.Struct{Fields: map[string]*structpb.Value{"b": structpb.NewStringValue("2")}}),
			}},
		})
	}, func(p *extprocv3.ExternalProcessor) {
		p.GrpcService.InitialMetadata = []*corev3.HeaderValue{{Key: "x-svc", Value: "svc"}, {Key: "x-token", Value: "filter"}}
		p.MetadataOptions = &extprocv3.MetadataOptions{
			ForwardingNamespaces: &extprocv3.MetadataOptions_MetadataNamespaces{Untyped: []string{"filter.fw"}},
			ReceivingNamespaces:  &extprocv3.MetadataOptions_MetadataNamespaces{Untyped: []string{"filter.ns"}},
		}
	})
	rcs := compileRoutes(t,
		overrides(&extprocv3.ExtProcOverrides{GrpcInitialMetadata: []*corev3.HeaderValue{{Key: "x-token", Value: "vhost"}, {Key: "x-vhost", Value: "v"}}}),
		overrides(&extprocv3.ExtProcOverrides{
			GrpcInitialMetadata: []*corev3.HeaderValue{{Key: "x-token", Value: "route"}},
			MetadataOptions: &extprocv3.MetadataOptions{
				ForwardingNamespaces: &extprocv3.MetadataOptions_MetadataNamespaces{Untyped: []string{"route.fw"}},
				ReceivingNamespaces:  &extprocv3.MetadataOptions_MetadataNamespaces{Untyped: []string{"route.ns"}},
			},
		}),
	)
	s := decodeStream()
	s.PerRoute = map[string][]httpfilter.RouteConfig{c.name: rcs}
	for _, ns := range []string{"filter.fw", "route.fw"} {
		s.SetDynamicMetadata(ns, &structpb.Struct{Fields: map[string]*structpb.Value{"k": structpb.NewStringValue(ns)}})
	}
	f := c.NewFilter().(*filter)
	if st := f.DecodeHeaders(s); st != httpfilter.Continue {
		t.Fatalf("status %v reply %+v", st, s.Reply)
	}
	f.OnDestroy()
	g := <-got
	for k, want := range map[string]string{"x-svc": "svc", "x-token": "route", "x-vhost": "v"} {
		if v := g.md.Get(k); len(v) != 1 || v[0] != want {
			t.Errorf("initial metadata %s = %q, want [%q]", k, v, want)
		}
	}
	fm := g.meta.GetFilterMetadata()
	if _, ok := fm["route.fw"]; !ok || len(fm) != 1 {
		t.Errorf("forwarded metadata %v, want the route's namespace only", fm)
	}
	dm := s.DynamicMetadata().GetFilterMetadata()
	if _, ok := dm["route.ns"]; !ok {
		t.Errorf("route.ns not kept: %v", dm)
	}
	if _, ok := dm["filter.ns"]; ok {
		t.Errorf("filter.ns kept although the route's receiving namespaces replace the filter's: %v", dm)
	}
}

func TestAllowedOverrideModes(t *testing.T) {
	allowed := &extprocv3.ProcessingMode{ResponseHeaderMode: extprocv3.ProcessingMode_SKIP}
	c, _ := startScripted(t, failing, func(p *extprocv3.ExternalProcessor) {
		p.AllowModeOverride = true
		p.AllowedOverrideModes = []*extprocv3.ProcessingMode{allowed}
	})
	answerWith := func(mo *extprocv3.ProcessingMode) mode {
		f := &filter{c: c, mode: defaultMode}
		r := headersAnswer(&extprocsvc.CommonResponse{})
		r.ModeOverride = mo
		if ok, _ := f.answer(r, phaseRequestHeaders); !ok {
			t.Fatal("the answer was not taken")
		}
		return f.mode
	}
	// request_header_mode is not compared.
	if m := answerWith(&extprocv3.ProcessingMode{RequestHeaderMode: extprocv3.ProcessingMode_SEND, ResponseHeaderMode: extprocv3.ProcessingMode_SKIP}); m.responseHeaders {
		t.Errorf("an allowed override was ignored: %+v", m)
	}
	if m := answerWith(&extprocv3.ProcessingMode{ResponseHeaderMode: extprocv3.ProcessingMode_SKIP, RequestBodyMode: extprocv3.ProcessingMode_BUFFERED}); m != defaultMode {
		t.Errorf("an override not in allowed_override_modes applied: %+v", m)
	}
	// DEFAULT and SEND differ, as in Envoy.
	if m := answerWith(&extprocv3.ProcessingMode{ResponseHeaderMode: extprocv3.ProcessingMode_SEND, ResponseTrailerMode: extprocv3.ProcessingMode_SEND}); m != defaultMode {
		t.Errorf("an override not in allowed_override_modes applied: %+v", m)
	}
}

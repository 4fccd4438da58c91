package extproc

import (
	"strings"
	"testing"

	corev3 "github.com/envoyproxy/go-control-plane/envoy/config/core/v3"
	extprocv3 "github.com/envoyproxy/go-control-plane/envoy/extensions/filters/http/ext_proc/v3"
	mappedv3 "github.com/envoyproxy/go-control-plane/envoy/extensions/http/ext_proc/processing_request_modifiers/mapped_attribute_builder/v3"
	extprocsvc "github.com/envoyproxy/go-control-plane/envoy/service/ext_proc/v3"
	"google.golang.org/protobuf/types/known/anypb"
	"google.golang.org/protobuf/types/known/structpb"
)

// mappedBuilder is a processing_request_modifier mapping request
// attributes.
func mappedBuilder(t *testing.T, req map[string]string) *corev3.TypedExtensionConfig {
	t.Helper()
	a, err := anypb.New(&mappedv3.MappedAttributeBuilder{MappedRequestAttributes: req})
	if err != nil {
		t.Fatal(err)
	}
	return &corev3.TypedExtensionConfig{Name: "map", TypedConfig: a}
}

func TestMappedAttributeBuilder(t *testing.T) {
	got := make(chan *structpb.Struct, 1)
	c, _ := startScripted(t, func(srv extprocsvc.ExternalProcessor_ProcessServer) error {
		m, err := srv.Recv()
		if err != nil {
			return err
		}
		got <- m.GetAttributes()[attributesKey]
		return srv.Send(headersAnswer(&extprocsvc.CommonResponse{}))
	}, func(p *extprocv3.ExternalProcessor) {
		p.RequestAttributes = []string{"request.path"}
		p.ProcessingRequestModifier = mappedBuilder(t, map[string]string{
			"verb":    "request.method",
			"missing": "request.headers['absent']",
		})
	})
	decode(c)
	a := <-got
	// The mapping replaces the filter's own attributes; an expression
	// that fails to evaluate is left out.
	if len(a.GetFields()) != 1 || a.GetFields()["verb"].GetStringValue() != "GET" {
		t.Fatalf("attributes %v, want only verb: GET", a)
	}
}

func TestMappedAttributeBuilderErrors(t *testing.T) {
	p := &extprocv3.ExternalProcessor{
		GrpcService:               processorAt("127.0.0.1:1"),
		ProcessingRequestModifier: mappedBuilder(t, map[string]string{"bad": "request.("}),
	}
	_, err := compile(p, testContext())
	if err == nil || !strings.HasPrefix(err.Error(), `processing_request_modifier.typed_config.mapped_request_attributes["bad"]: `) {
		t.Fatalf("got %v", err)
	}
	_, err = compileRoute(&extprocv3.ExtProcPerRoute{Override: &extprocv3.ExtProcPerRoute_Overrides{Overrides: &extprocv3.ExtProcOverrides{
		ProcessingRequestModifier: &corev3.TypedExtensionConfig{Name: "x"},
	}}}, testContext())
	if err == nil || err.Error() != "overrides.processing_request_modifier.typed_config: must be set" {
		t.Fatalf("got %v", err)
	}
}

func TestPerRouteAttributes(t *testing.T) {
	got := make(chan *structpb.Struct, 1)
	c, _ := startScripted(t, func(srv extprocsvc.ExternalProcessor_ProcessServer) error {
		m, err := srv.Recv()
		if err != nil {
			return err
		}
		got <- m.GetAttributes()[attributesKey]
		return srv.Send(headersAnswer(&extprocsvc.CommonResponse{}))
	}, func(p *extprocv3.ExternalProcessor) {
		p.RequestAttributes = []string{"request.path"}
	})
	// The most specific level with a list wins; one without keeps the
	// list of the level before it.
	decodeRoute(t, c,
		overrides(&extprocv3.ExtProcOverrides{RequestAttributes: []string{"request.host"}}),
		overrides(&extprocv3.ExtProcOverrides{RequestAttributes: []string{"request.method"}}),
		overrides(&extprocv3.ExtProcOverrides{ResponseAttributes: []string{"response.code"}}))
	a := <-got
	if len(a.GetFields()) != 1 || a.GetFields()["request.method"].GetStringValue() != "GET" {
		t.Fatalf("attributes %v, want only request.method: GET", a)
	}
	// Without overrides, the filter's own.
	decode(c)
	a = <-got
	if len(a.GetFields()) != 1 || a.GetFields()["request.path"] == nil {
		t.Fatalf("attributes %v, want only request.path", a)
	}
}

package grpcjsontranscoder

import (
	"encoding/json"
	"strings"
	"testing"

	transcoderv3 "github.com/envoyproxy/go-control-plane/envoy/extensions/filters/http/grpc_json_transcoder/v3"
	"google.golang.org/genproto/googleapis/api/annotations"
	"google.golang.org/protobuf/proto"
	"google.golang.org/protobuf/types/descriptorpb"
	"google.golang.org/protobuf/types/dynamicpb"
	"google.golang.org/protobuf/types/known/wrapperspb"
)

// echoSet is a descriptor set of one service, pkg.Echo, whose Say takes
// {id int64, color Color, words repeated string, inner {note string}}
// and has the rule given (nil for none).
func echoSet(t *testing.T, rule *annotations.HttpRule) []byte {
	t.Helper()
	s := proto.String
	opt := func(n int32, name string, typ descriptorpb.FieldDescriptorProto_Type, typeName string, label descriptorpb.FieldDescriptorProto_Label) *descriptorpb.FieldDescriptorProto {
		f := &descriptorpb.FieldDescriptorProto{Name: s(name), Number: proto.Int32(n), Type: typ.Enum(), Label: label.Enum()}
		if typeName != "" {
			f.TypeName = s(typeName)
		}
		return f
	}
	optional, repeated := descriptorpb.FieldDescriptorProto_LABEL_OPTIONAL, descriptorpb.FieldDescriptorProto_LABEL_REPEATED
	m := &descriptorpb.MethodDescriptorProto{Name: s("Say"), InputType: s(".pkg.Msg"), OutputType: s(".pkg.Msg")}
	if rule != nil {
		m.Options = &descriptorpb.MethodOptions{}
		proto.SetExtension(m.Options, annotations.E_Http, rule)
	}
	file := &descriptorpb.FileDescriptorProto{
		Name: s("echo.proto"), Package: s("pkg"), Syntax: s("proto3"),
		EnumType: []*descriptorpb.EnumDescriptorProto{{Name: s("Color"), Value: []*descriptorpb.EnumValueDescriptorProto{
			{Name: s("COLOR_UNSET"), Number: proto.Int32(0)}, {Name: s("DARK_RED"), Number: proto.Int32(1)},
		}}},
		MessageType: []*descriptorpb.DescriptorProto{
			{Name: s("Inner"), Field: []*descriptorpb.FieldDescriptorProto{opt(1, "note", descriptorpb.FieldDescriptorProto_TYPE_STRING, "", optional)}},
			{Name: s("Msg"), Field: []*descriptorpb.FieldDescriptorProto{
				opt(1, "id", descriptorpb.FieldDescriptorProto_TYPE_INT64, "", optional),
				opt(2, "color", descriptorpb.FieldDescriptorProto_TYPE_ENUM, ".pkg.Color", optional),
				opt(3, "words", descriptorpb.FieldDescriptorProto_TYPE_STRING, "", repeated),
				opt(4, "inner", descriptorpb.FieldDescriptorProto_TYPE_MESSAGE, ".pkg.Inner", optional),
			}},
		},
		Service: []*descriptorpb.ServiceDescriptorProto{{Name: s("Echo"), Method: []*descriptorpb.MethodDescriptorProto{m}}},
	}
	b, err := proto.Marshal(&descriptorpb.FileDescriptorSet{File: []*descriptorpb.FileDescriptorProto{file}})
	if err != nil {
		t.Fatal(err)
	}
	return b
}

func config(set []byte, services ...string) *transcoderv3.GrpcJsonTranscoder {
	return &transcoderv3.GrpcJsonTranscoder{
		DescriptorSet: &transcoderv3.GrpcJsonTranscoder_ProtoDescriptorBin{ProtoDescriptorBin: set},
		Services:      services,
	}
}

func TestCompileRefusesBadConfigurations(t *testing.T) {
	get := func(path string) *annotations.HttpRule {
		return &annotations.HttpRule{Pattern: &annotations.HttpRule_Get{Get: path}}
	}
	good := echoSet(t, get("/v1/{id}"))
	file := config(nil, "pkg.Echo")
	file.DescriptorSet = &transcoderv3.GrpcJsonTranscoder_ProtoDescriptor{ProtoDescriptor: "/nonexistent/set.pb"}
	responseBody := get("/v1/{id}")
	responseBody.ResponseBody = "id"
	innerBody := get("/v1/{id}")
	innerBody.ResponseBody = "inner"
	for name, c := range map[string]struct {
		cfg  *transcoderv3.GrpcJsonTranscoder
		want string
	}{
		"no descriptor":         {&transcoderv3.GrpcJsonTranscoder{Services: []string{"pkg.Echo"}}, "descriptor_set: "},
		"unreadable file":       {file, "proto_descriptor: "},
		"not a set":             {config([]byte("\xff\xff"), "pkg.Echo"), "proto_descriptor_bin: unable to parse proto descriptor"},
		"unknown service":       {config(good, "pkg.Nope"), "services[0]: could not find 'pkg.Nope' in the proto descriptor"},
		"bad template":          {config(echoSet(t, get("/v1/{id")), "pkg.Echo"), "services[0]: cannot register 'pkg.Echo.Say' to path matcher"},
		"unknown variable":      {config(echoSet(t, get("/v1/{nope}")), "pkg.Echo"), "no field \"nope\""},
		"unknown body":          {config(echoSet(t, &annotations.HttpRule{Pattern: &annotations.HttpRule_Post{Post: "/x"}, Body: "nope"}), "pkg.Echo"), "body \"nope\""},
		"non-HttpBody response": {config(echoSet(t, innerBody), "pkg.Echo"), "non-HttpBody fields"},
		"scalar response":       {config(echoSet(t, responseBody), "pkg.Echo"), "response_body \"id\": setting \"response_body\" is not supported yet for non-HttpBody fields"},
	} {
		_, err := compile(c.cfg)
		if err == nil || !strings.Contains(err.Error(), c.want) {
			t.Errorf("%s: %v, want %q", name, err, c.want)
		}
	}
	tc, err := compile(config(good))
	if err != nil || !tc.disabled {
		t.Errorf("no services: %v, disabled %v", err, tc != nil && tc.disabled)
	}
}

func TestAutoMappingAndLimits(t *testing.T) {
	c := config(echoSet(t, nil), "pkg.Echo")
	tc, err := compile(c)
	if err != nil {
		t.Fatal(err)
	}
	if r, _ := tc.match.lookup("POST", "/pkg.Echo/Say"); r != nil {
		t.Fatal("a method without a rule matched without auto_mapping")
	}
	c.AutoMapping = true
	c.MaxRequestBodySize = wrapperspb.UInt32(10)
	if tc, err = compile(c); err != nil {
		t.Fatal(err)
	}
	r, _ := tc.match.lookup("POST", "/pkg.Echo/Say")
	if r == nil || r.body != "*" || r.method.grpcPath != "/pkg.Echo/Say" {
		t.Fatalf("auto_mapping: %+v", r)
	}
	if tc.maxRequest != 10 || tc.maxResponse != defaultBufferLimit {
		t.Fatalf("limits %d %d", tc.maxRequest, tc.maxResponse)
	}
}

// transcode builds the request message of a POST to path with body.
func transcode(t *testing.T, tc *transcoder, path, body string) (map[string]any, *requestError) {
	t.Helper()
	r, bs := tc.match.lookup("POST", path)
	if r == nil {
		t.Fatalf("no rule for %s", path)
	}
	rbs, err := tc.resolveBindings(r.method.desc.Input(), bs)
	if err != nil {
		t.Fatalf("bindings: %v", err)
	}
	out, rerr := tc.buildRequest(r, rbs, []byte(body), "application/json")
	if rerr != nil {
		return nil, rerr
	}
	msg, rest, ok, err := nextFrame(out)
	if !ok || err != nil || len(rest) != 0 {
		t.Fatalf("not one frame: %q", out)
	}
	m := dynamicpb.NewMessage(r.method.desc.Input())
	if err := proto.Unmarshal(msg, m); err != nil {
		t.Fatal(err)
	}
	js, _ := tc.print.Marshal(m)
	var v map[string]any
	if err := json.Unmarshal(js, &v); err != nil {
		t.Fatal(err)
	}
	return v, nil
}

func TestBindingsAndBody(t *testing.T) {
	rule := &annotations.HttpRule{Pattern: &annotations.HttpRule_Post{Post: "/v1/{id}"}, Body: "*"}
	c := config(echoSet(t, rule), "pkg.Echo")
	tc, err := compile(c)
	if err != nil {
		t.Fatal(err)
	}
	v, rerr := transcode(t, tc, "/v1/5?words=a&words=b&inner.note=n", `{"color": "DARK_RED"}`)
	if rerr != nil {
		t.Fatal(rerr.msg)
	}
	want := map[string]any{"id": "5", "color": "DARK_RED", "words": []any{"a", "b"}, "inner": map[string]any{"note": "n"}}
	if !equalJSON(v, want) {
		t.Fatalf("got %v, want %v", v, want)
	}
	// The body wins over a binding...
	if v, _ = transcode(t, tc, "/v1/5", `{"id": "6"}`); v["id"] != "6" {
		t.Fatalf("body against binding: %v", v)
	}
	// ...unless reject_binding_body_field_collisions refuses a
	// different value.
	c.RequestValidationOptions = &transcoderv3.GrpcJsonTranscoder_RequestValidationOptions{RejectBindingBodyFieldCollisions: true}
	if tc, err = compile(c); err != nil {
		t.Fatal(err)
	}
	if _, rerr = transcode(t, tc, "/v1/5", `{"id": "6"}`); rerr == nil || rerr.status != 400 {
		t.Fatalf("collision accepted: %v", rerr)
	}
	if _, rerr = transcode(t, tc, "/v1/5", `{"id": "5"}`); rerr != nil {
		t.Fatalf("same value refused: %s", rerr.msg)
	}
	// Enum names in another case only with case_insensitive_enum_parsing.
	if _, rerr = transcode(t, tc, "/v1/5", `{"color": "dark_red"}`); rerr == nil {
		t.Fatal("a lower-case enum name was accepted")
	}
	c.CaseInsensitiveEnumParsing = true
	if tc, err = compile(c); err != nil {
		t.Fatal(err)
	}
	if v, rerr = transcode(t, tc, "/v1/5?color=dark_Red", `{"color": "dark_red", "words": ["x"]}`); rerr != nil || v["color"] != "DARK_RED" {
		t.Fatalf("case-insensitive enum: %v %v", v, rerr)
	}
	// Bad values of a binding are refused.
	if _, rerr = transcode(t, tc, "/v1/x", ``); rerr == nil || rerr.status != 400 {
		t.Fatalf("a bad int64 accepted: %v", rerr)
	}
	// An unknown query parameter is an error, or skipped when asked.
	r, bs := tc.match.lookup("POST", "/v1/5?nope=1")
	if _, err := tc.resolveBindings(r.method.desc.Input(), bs); err == nil {
		t.Fatal("unknown parameter resolved")
	}
	tc.ignoreUnknownQueryParameters = true
	if rbs, err := tc.resolveBindings(r.method.desc.Input(), bs); err != nil || len(rbs.fields) != 1 {
		t.Fatalf("ignore_unknown_query_parameters: %v %v", rbs, err)
	}
}

// equalJSON compares decoded JSON values.
func equalJSON(a, b any) bool {
	ja, _ := json.Marshal(a)
	jb, _ := json.Marshal(b)
	return string(ja) == string(jb)
}

package grpcjsontranscoder

import (
	"fmt"

	transcoderv3 "github.com/envoyproxy/go-control-plane/envoy/extensions/filters/http/grpc_json_transcoder/v3"
	"testing"

	"google.golang.org/genproto/googleapis/api/annotations"
	"google.golang.org/genproto/googleapis/api/httpbody"
	"google.golang.org/protobuf/proto"
	"google.golang.org/protobuf/types/descriptorpb"

	"github.com/outrigger-dev/outrigger/pkg/proxy/httpfilter/httpfiltertest"
)

// uploadSet is a set of pkg.Upload, whose Put takes a google.api.HttpBody
// (an import the set does not carry) and whose Many streams them from the
// client, with JSON objects of pkg.Note for Notes.
func uploadSet(t *testing.T) []byte {
	t.Helper()
	s := proto.String
	method := func(name, in string, clientStreaming bool, rule *annotations.HttpRule) *descriptorpb.MethodDescriptorProto {
		m := &descriptorpb.MethodDescriptorProto{Name: s(name), InputType: s(in), OutputType: s(".pkg.Note"), Options: &descriptorpb.MethodOptions{}}
		if clientStreaming {
			m.ClientStreaming = proto.Bool(true)
		}
		proto.SetExtension(m.Options, annotations.E_Http, rule)
		return m
	}
	post := func(path string) *annotations.HttpRule {
		return &annotations.HttpRule{Pattern: &annotations.HttpRule_Post{Post: path}, Body: "*"}
	}
	file := &descriptorpb.FileDescriptorProto{
		Name: s("upload.proto"), Package: s("pkg"), Syntax: s("proto3"),
		Dependency: []string{"google/api/httpbody.proto"},
		MessageType: []*descriptorpb.DescriptorProto{{Name: s("Note"), Field: []*descriptorpb.FieldDescriptorProto{{
			Name: s("text"), Number: proto.Int32(1), Type: descriptorpb.FieldDescriptorProto_TYPE_STRING.Enum(),
			Label: descriptorpb.FieldDescriptorProto_LABEL_OPTIONAL.Enum(),
		}, {
			Name: s("file"), Number: proto.Int32(2), Type: descriptorpb.FieldDescriptorProto_TYPE_MESSAGE.Enum(),
			Label: descriptorpb.FieldDescriptorProto_LABEL_OPTIONAL.Enum(), TypeName: s(".google.api.HttpBody"),
		}}}},
		Service: []*descriptorpb.ServiceDescriptorProto{{Name: s("Upload"), Method: []*descriptorpb.MethodDescriptorProto{
			method("Put", ".google.api.HttpBody", false, post("/put")),
			method("Notes", ".pkg.Note", true, post("/notes")),
			method("File", ".pkg.Note", false, &annotations.HttpRule{Pattern: &annotations.HttpRule_Get{Get: "/file"}, ResponseBody: "file"}),
		}}},
	}
	b, err := proto.Marshal(&descriptorpb.FileDescriptorSet{File: []*descriptorpb.FileDescriptorProto{file}})
	if err != nil {
		t.Fatal(err)
	}
	return b
}

// frames splits a gRPC body into its messages.
func frames(t *testing.T, b []byte) [][]byte {
	t.Helper()
	var out [][]byte
	for len(b) > 0 {
		msg, rest, ok, err := nextFrame(b)
		if !ok || err != nil {
			t.Fatalf("bad framing %q", b)
		}
		out, b = append(out, msg), rest
	}
	return out
}

func TestHttpBodyAndClientStreamingRequests(t *testing.T) {
	tc, err := compile(config(uploadSet(t), "pkg.Upload"))
	if err != nil {
		t.Fatal(err)
	}
	r, _ := tc.match.lookup("POST", "/put")
	if r == nil || !r.httpBody {
		t.Fatalf("the HttpBody rule: %+v", r)
	}
	out, rerr := tc.buildRequest(r, resolvedBindings{}, []byte("raw,csv\n"), "text/csv")
	if rerr != nil {
		t.Fatal(rerr.msg)
	}
	fs := frames(t, out)
	var hb httpbody.HttpBody
	if len(fs) != 1 || proto.Unmarshal(fs[0], &hb) != nil || string(hb.GetData()) != "raw,csv\n" || hb.GetContentType() != "text/csv" {
		t.Fatalf("HttpBody request: %d frames, %v", len(fs), &hb)
	}

	r, _ = tc.match.lookup("POST", "/notes")
	out, rerr = tc.buildRequest(r, resolvedBindings{}, []byte(`[{"text": "a"}, {"text": "b"}, {}]`), "application/json")
	if rerr != nil {
		t.Fatal(rerr.msg)
	}
	if fs = frames(t, out); len(fs) != 3 {
		t.Fatalf("client stream: %d messages, want 3", len(fs))
	}
	if _, rerr = tc.buildRequest(r, resolvedBindings{}, []byte(`{"text": "a"}`), "application/json"); rerr == nil || rerr.status != 400 {
		t.Fatalf("a client stream that is not an array: %v", rerr)
	}
}

func TestCaptureUnknownQueryParameters(t *testing.T) {
	c := config(uploadSet(t), "pkg.Upload")
	c.CaptureUnknownQueryParameters = true
	tc, err := compile(c)
	if err != nil {
		t.Fatal(err)
	}
	r, bs := tc.match.lookup("POST", "/put?foo=1&foo=2&bar=x")
	rbs, err := tc.resolveBindings(r.method.desc.Input(), bs)
	if err != nil {
		t.Fatal(err)
	}
	out, rerr := tc.buildRequest(r, rbs, []byte("data"), "text/plain")
	if rerr != nil {
		t.Fatal(rerr.msg)
	}
	var hb httpbody.HttpBody
	if err := proto.Unmarshal(frames(t, out)[0], &hb); err != nil || len(hb.GetExtensions()) != 1 {
		t.Fatalf("extensions: %v %v", &hb, err)
	}
	var got transcoderv3.UnknownQueryParams
	if err := hb.GetExtensions()[0].UnmarshalTo(&got); err != nil {
		t.Fatal(err)
	}
	if fmt.Sprint(got.GetKey()["foo"].GetValues(), got.GetKey()["bar"].GetValues()) != "[1 2] [x]" || string(hb.GetData()) != "data" {
		t.Fatalf("captured %v, data %q", got.GetKey(), hb.GetData())
	}
}

func TestResponseBodyHttpBodyField(t *testing.T) {
	tc, err := compile(config(uploadSet(t), "pkg.Upload"))
	if err != nil {
		t.Fatal(err)
	}
	r, _ := tc.match.lookup("GET", "/file")
	s := statusStream{httpfiltertest.NewStream("GET", "/file")}
	s.Status = 200
	e := &responseEncoder{t: tc, r: r, s: s}
	note := &httpbody.HttpBody{ContentType: "image/png", Data: []byte("PNG")}
	nb, _ := proto.Marshal(note)
	// Note{text: "x", file: note}, by hand: field 1 string, field 2 message.
	msg := append([]byte{0x0a, 1, 'x', 0x12, byte(len(nb))}, nb...)
	if got := run(t, e, appendFrame(nil, msg)); got != "PNG" {
		t.Fatalf("body %q", got)
	}
	if ct, _ := s.ResponseHeaders().Get("content-type"); ct != "image/png" {
		t.Fatalf("content-type %q", ct)
	}
}

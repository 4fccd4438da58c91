package extproc

import (
	"testing"

	corev3 "github.com/envoyproxy/go-control-plane/envoy/config/core/v3"
	extprocsvc "github.com/envoyproxy/go-control-plane/envoy/service/ext_proc/v3"

	"github.com/outrigger-dev/outrigger/pkg/proxy/httpfilter/httpfiltertest"
	"github.com/outrigger-dev/outrigger/pkg/proxy/mutationrules"
	"github.com/outrigger-dev/outrigger/pkg/proxy/stats"
)

// With allow_content_length_header a content-length the processor sets
// is recorded for the connection manager; a malformed one is rejected.
func TestContentLengthMutationRecorded(t *testing.T) {
	set := func(v string) *extprocsvc.HeaderMutation {
		return &extprocsvc.HeaderMutation{SetHeaders: []*corev3.HeaderValueOption{{
			Header: &corev3.HeaderValue{Key: "Content-Length", RawValue: []byte(v)}, AppendAction: corev3.HeaderValueOption_OVERWRITE_IF_EXISTS_OR_ADD,
		}}}
	}
	r, _ := mutationrules.Compile(nil)
	rejected := stats.NewStore().Counter("rejected")
	var cl declaredCL
	if err := applyHeaderMutation(set("17"), head{h: httpfiltertest.NewHeaders(), cl: &cl}, r, rejected); err != nil {
		t.Fatal(err)
	}
	if !cl.set || cl.n != 17 {
		t.Fatalf("recorded %+v, want 17", cl)
	}
	before := rejected.Value()
	cl = declaredCL{}
	_ = applyHeaderMutation(set("-3"), head{h: httpfiltertest.NewHeaders(), cl: &cl}, r, rejected)
	if cl.set || rejected.Value() == before {
		t.Fatalf("a negative content-length: recorded %+v, rejected %d", cl, rejected.Value())
	}
	// Without the field, the mutation has no effect and nothing is kept.
	if err := applyHeaderMutation(set("17"), head{h: httpfiltertest.NewHeaders()}, r, rejected); err != nil {
		t.Fatal(err)
	}
}

// Answers are told apart by direction once the stream is split.
func TestRequestKind(t *testing.T) {
	for r, want := range map[*extprocsvc.ProcessingResponse]bool{
		{Response: &extprocsvc.ProcessingResponse_RequestHeaders{}}:    true,
		{Response: &extprocsvc.ProcessingResponse_RequestBody{}}:       true,
		{Response: &extprocsvc.ProcessingResponse_RequestTrailers{}}:   true,
		{Response: &extprocsvc.ProcessingResponse_ResponseHeaders{}}:   false,
		{Response: &extprocsvc.ProcessingResponse_ResponseBody{}}:      false,
		{Response: &extprocsvc.ProcessingResponse_ImmediateResponse{}}: false,
	} {
		if got := requestKind(r); got != want {
			t.Errorf("%T: requestKind %t", r.GetResponse(), got)
		}
	}
}

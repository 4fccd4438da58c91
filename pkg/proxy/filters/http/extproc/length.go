package extproc

import (
	extprocv3 "github.com/envoyproxy/go-control-plane/envoy/extensions/filters/http/ext_proc/v3"

	"github.com/outrigger-dev/outrigger/pkg/proxy/httpfilter"
)

// allow_content_length_header. Without it, Envoy removes content-length
// from a head whose body the processor may change (STREAMED,
// BUFFERED_PARTIAL, FULL_DUPLEX_STREAMED, BUFFERED without the headers
// sent), and the connection manager here frames a changed body itself.
// With it, Envoy keeps the head's content-length, the processor's when
// its header mutations set one, and its codec sends the body as it comes
// under that framing. Here the length is declared to the connection
// manager (httpfilter.BodyLengthSetter), which announces it and holds
// the body to it: a body that disagrees fails the stream instead of
// leaving with a framing it breaks.

// declaredCL is a content-length a processor set.
type declaredCL struct {
	set bool
	n   int64
}

// clFor is where a head mutation records a content-length it sets: the
// request's, or the response's; nil without allow_content_length_header
// (the mutation then has no effect).
func (f *filter) clFor(response bool) *declaredCL {
	if !f.c.allowCL {
		return nil
	}
	if response {
		return &f.respCL
	}
	return &f.reqCL
}

// declareRequestLength keeps the request's content-length, once
// DecodeHeaders is done with the head: the processor's, else the
// client's when the body mode may change the body.
func (f *filter) declareRequestLength(s httpfilter.Stream) {
	if !f.c.allowCL || f.replied {
		return
	}
	n := f.reqCL.n
	if !f.reqCL.set {
		if f.mode.requestBody == extprocv3.ProcessingMode_NONE || f.origReqLen < 0 {
			return
		}
		n = f.origReqLen
	}
	if ls, ok := s.(httpfilter.BodyLengthSetter); ok {
		ls.SetRequestBodyLength(n)
	}
}

// declareResponseLength keeps the response's content-length while its
// head has not left: the processor's, else the upstream's (n, -1 when
// unknown or already declared) when the body mode may change the body.
// f.mu is held.
func (f *filter) declareResponseLength(s httpfilter.Stream, n int64) {
	if !f.c.allowCL || f.replied || f.respReplaced {
		return
	}
	if f.respCL.set {
		n = f.respCL.n
	} else if f.mode.responseBody == extprocv3.ProcessingMode_NONE {
		return
	}
	if n < 0 {
		return
	}
	if ls, ok := s.(httpfilter.BodyLengthSetter); ok {
		ls.SetResponseBodyLength(n)
	}
}

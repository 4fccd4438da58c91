package extproc

import (
	"errors"
	"net/http"

	extprocv3 "github.com/envoyproxy/go-control-plane/envoy/extensions/filters/http/ext_proc/v3"
	extprocsvc "github.com/envoyproxy/go-control-plane/envoy/service/ext_proc/v3"

	"github.com/outrigger-dev/outrigger/pkg/proxy/httpfilter"
)

// EncodeReplyHeaders implements httpfilter.ReplyEncoder: upstream, the
// filter's own reply gets the processor's headers.
func (f *filter) EncodeReplyHeaders(s httpfilter.Stream) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.applyReplyHeaders(s)
}

// applyReplyHeaders puts the processor's headers (immediate_response's)
// on the filter's own reply. As Envoy, a failed mutation is only logged.
func (f *filter) applyReplyHeaders(s httpfilter.Stream) {
	if f.replied && f.replyHeaders != nil {
		if err := applyHeaderMutation(f.replyHeaders, head{h: s.ResponseHeaders(), s: s, response: true}, f.c.rules, f.c.stats.rejectedMutations); err != nil {
			f.c.log.V(1).Info("ext_proc immediate response headers", "error", err.Error())
		}
	}
}

// EncodeHeaders implements httpfilter.Encoder: the filter's own reply
// gets the processor's headers; otherwise the response headers go to the
// processor and come back mutated, and the response body is set to go
// through as the body mode says.
func (f *filter) EncodeHeaders(s httpfilter.Stream) httpfilter.Status {
	n, _ := s.ResponseBody()
	st := f.encodeHeaders(s)
	f.mu.Lock()
	f.declareResponseLength(s, n)
	f.mu.Unlock()
	return st
}

// encodeHeaders is EncodeHeaders but for the response's framing.
func (f *filter) encodeHeaders(s httpfilter.Stream) httpfilter.Status {
	f.splitForResponse()
	f.mu.Lock()
	defer f.mu.Unlock()
	if f.replied {
		f.applyReplyHeaders(s)
		return httpfilter.Continue
	}
	f.s = s
	_, hasBody := s.ResponseBody()
	if !f.done && len(f.respList) > 0 {
		// Evaluated here, with the response head, as the request's are
		// in DecodeHeaders.
		f.respAttrs = evaluateAttributes(f.respList, s, true)
	}
	if hasBody && s.ResponseStatus() != 101 && s.Request().Method != "CONNECT" && f.duplexHead(f.mode.responseBody, f.mode.responseHeaders) {
		return f.encodeHeadersDuplex(s)
	}
	if !f.done && f.mode.responseHeaders {
		req := &extprocsvc.ProcessingRequest{Request: &extprocsvc.ProcessingRequest_ResponseHeaders{
			ResponseHeaders: &extprocsvc.HttpHeaders{Headers: f.responseHeaderMap(s), EndOfStream: !hasBody},
		}}
		r, rep := f.call(req)
		if rep == nil {
			rep = f.responseHeadersAnswer(s, r, hasBody)
		}
		if rep != nil {
			f.replaceResponse(s, rep, hasBody)
			return httpfilter.Continue
		}
	}
	if f.done || !hasBody || s.ResponseStatus() == 101 || s.Request().Method == "CONNECT" {
		// An upgrade's or a CONNECT's body is its tunnel.
		return httpfilter.Continue
	}
	switch f.mode.responseBody {
	case extprocv3.ProcessingMode_STREAMED:
		s.TransformResponseBody(&streamEncoder{f: f})
	case extprocv3.ProcessingMode_BUFFERED, extprocv3.ProcessingMode_BUFFERED_PARTIAL:
		s.TransformResponseBody(&bufferEncoder{f: f, partial: f.mode.responseBody == extprocv3.ProcessingMode_BUFFERED_PARTIAL})
	case extprocv3.ProcessingMode_FULL_DUPLEX_STREAMED:
		d, rep := f.newDuplex(phaseResponseBody)
		if rep != nil {
			f.replaceResponse(s, rep, hasBody)
			return httpfilter.Continue
		}
		if d != nil {
			s.TransformResponseBody(&duplexEncoder{d: d})
		}
	default:
		if f.mode.responseTrailers {
			s.TransformResponseBody(&trailerEncoder{f: f})
		}
	}
	return httpfilter.Continue
}

// responseHeadersAnswer applies the answer to the response headers.
func (f *filter) responseHeadersAnswer(s httpfilter.Stream, r *extprocsvc.ProcessingResponse, hasBody bool) *reply {
	ok, rep := f.answer(r, phaseResponseHeaders)
	if !ok {
		return rep
	}
	f.receiveMetadata(s, r)
	cr := r.GetResponseHeaders().GetResponse()
	if hm := cr.GetHeaderMutation(); hm != nil {
		if err := applyHeaderMutation(hm, head{h: s.ResponseHeaders(), s: s, response: true, cl: f.clFor(true)}, f.c.rules, f.c.stats.rejectedMutations); err != nil {
			f.saveAnswer(r, err)
			return f.mutationFailed(err)
		}
	}
	f.saveAnswer(r, nil)
	if cr.GetClearRouteCache() {
		// Envoy clears no route on the response path.
		f.c.stats.clearRouteCacheIgnored.Inc()
	}
	if cr.GetStatus() == extprocsvc.CommonResponse_CONTINUE_AND_REPLACE {
		if bm := cr.GetBodyMutation(); bm != nil && hasBody {
			if body, changed := replaceBody(bm, nil); changed {
				s.TransformResponseBody(&replacer{body: body, n: -1})
			}
		}
		f.mode.responseBody = extprocv3.ProcessingMode_NONE
		f.mode.responseTrailers = false
	}
	return nil
}

// replaceResponse makes the response rep, while its head has not left
// (Envoy's local reply from an encoder filter): the status, fresh
// headers with the reply's mutations, and, when the response has a body
// to replace (withBody), the reply's body in its place.
func (f *filter) replaceResponse(s httpfilter.Stream, rep *reply, withBody bool) {
	f.respReplaced = true
	if ss, ok := s.(httpfilter.ResponseStatusSetter); ok {
		ss.SetResponseStatus(rep.status)
	}
	h := s.ResponseHeaders()
	if rh, ok := h.(rangeHeaders); ok {
		var names []string
		rh.Range(func(name, _ string) bool {
			names = append(names, name)
			return true
		})
		for _, n := range names {
			h.Del(n)
		}
	}
	if rep.body != "" {
		h.Set("content-type", "text/plain")
	}
	if rep.headers != nil {
		if err := applyHeaderMutation(rep.headers, head{h: h, s: s, response: true}, f.c.rules, f.c.stats.rejectedMutations); err != nil {
			f.c.log.V(1).Info("ext_proc immediate response headers", "error", err.Error())
		}
	}
	if withBody {
		s.TransformResponseBody(&replacer{body: []byte(rep.body), n: -1})
	}
}

// errReset is what an encoder returns when the processor fails the
// response after its head left: the response is cut, as Envoy resets a
// stream whose local reply comes too late.
var errReset = errors.New("ext_proc: response failed after its head was sent")

// streamEncoder sends the response body to the processor piece by piece
// (STREAMED).
type streamEncoder struct {
	f *filter
}

// EncodeData implements httpfilter.DataEncoder.
func (e *streamEncoder) EncodeData(p []byte) ([]byte, error) {
	return e.f.streamChunk(p, false, phaseResponseBody)
}

// EncodeEnd implements httpfilter.DataEncoder: the body's end, then the
// trailers.
func (e *streamEncoder) EncodeEnd(trailers http.Header) ([]byte, http.Header, error) {
	out, err := e.f.streamChunk(nil, true, phaseResponseBody)
	if err != nil {
		return nil, nil, err
	}
	if err := e.f.responseTrailers(trailers); err != nil {
		return nil, nil, err
	}
	return out, trailers, nil
}

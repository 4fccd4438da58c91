package httpconn

import (
	"errors"

	"github.com/outrigger-dev/outrigger/pkg/proxy/httpfilter"
)

// A stream recreated by an encoder filter (httpfilter.StreamRecreator):
// the response head the filters see is dropped in sendHead, which
// returns errRecreated to its caller (an upstream relay or a local
// reply), and the stream's routing starts over as for an internal
// redirect (see internal_redirect.go), without a request body.

// errRecreated is sendHead's error when an encoder filter recreated the
// stream: nothing was written, and the caller drops the response.
var errRecreated = errors.New("stream recreated by a filter")

var _ httpfilter.StreamRecreator = (*stream)(nil)

// CanRecreate implements httpfilter.StreamRecreator.
func (s *stream) CanRecreate() bool {
	r := &s.redir
	if !r.dispatching || r.pending || s.started || s.upg.typ != "" {
		return false
	}
	// The request must have come whole: a body still arriving is
	// skipped if it is all buffered; if not, the stream stays as it is.
	return s.bodyDone || s.body == nil || s.skipBody()
}

// RecreateStream implements httpfilter.StreamRecreator.
func (s *stream) RecreateStream() bool {
	if !s.CanRecreate() {
		return false
	}
	r := &s.redir
	r.pending, r.recreating = true, true
	// The next pass has no body (the redirect policy's GET).
	r.hadBody, r.body = false, r.body[:0]
	return true
}

// SetScheme implements httpfilter.StreamRecreator.
func (s *stream) SetScheme(scheme string) {
	s.scheme, s.rreq.Scheme, s.entry.Scheme = scheme, scheme, scheme
}

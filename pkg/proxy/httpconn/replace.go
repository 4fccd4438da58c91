package httpconn

import (
	"net/http"

	"github.com/outrigger-dev/outrigger/pkg/proxy/httpfilter"
)

// ReplaceResponse implements httpfilter.Stream. The response's body and
// trailers still flow from their source (the upstream, a local reply) but
// a body transformer drops them and sends body at their end; the encoder
// filters asked for before are dropped, since the body they were to see
// is gone.
func (s *stream) ReplaceResponse(status int, body string) {
	s.status = status
	s.respHeaders.reset()
	if body != "" {
		s.respHeaders.Add("content-type", "text/plain")
	}
	clear(s.respXform)
	s.respXform = append(s.respXform[:0], &replacement{body: body})
	s.respLength, s.respHasBody = int64(len(body)), !s.isHead
	s.replaced = true
}

// SetResponseCodeDetails implements httpfilter.DetailsSetter.
func (s *stream) SetResponseCodeDetails(details string) { s.details = details }

var _ httpfilter.DetailsSetter = (*stream)(nil)

// replacement is the body transformer of a replaced response.
type replacement struct {
	body string
}

// EncodeData implements httpfilter.DataEncoder: the original body is
// dropped.
func (r *replacement) EncodeData([]byte) ([]byte, error) { return nil, nil }

// EncodeEnd implements httpfilter.DataEncoder: the replacement body, and
// no trailers.
func (r *replacement) EncodeEnd(http.Header) ([]byte, http.Header, error) {
	return []byte(r.body), nil, nil
}

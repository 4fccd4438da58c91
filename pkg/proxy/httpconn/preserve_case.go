package httpconn

import (
	"github.com/outrigger-dev/outrigger/pkg/proxy/httpconn/http1"
	"github.com/outrigger-dev/outrigger/pkg/proxy/upstream"
)

// caseNotes is what Envoy's preserve_case header formatter keeps of one
// request (header_key_format.stateful_formatter): the spelling of the
// field names of the request as the client sent it (when the connection
// manager has the formatter) and of the response as the upstream sent it
// (when the cluster has it), each written back on the other side; names
// the proxy added are written per formatter_type_on_envoy_headers.
type caseNotes struct {
	// reqOn and respOn: req and resp hold the message's spellings for
	// this request.
	reqOn, respOn bool
	// respProperRest is the cluster's formatter_type_on_envoy_headers
	// PROPER_CASE, for the response's other names.
	respProperRest bool
	req, resp      http1.NameCases
	// reason is the upstream's reason phrase (forward_reason_phrase),
	// empty when the standard one is written.
	reason []byte
	// raw is a copy of the head being parsed, whose names parsing
	// lower-cases in place.
	raw []byte
}

// preserveCase reports whether the cluster whose response u reads keeps
// its names' spellings.
func (u *upstreamScratch) preserveCase() bool { return u.keys != nil && u.keys.PreserveCase }

// keepRawHead copies head before it is parsed, for the spellings of its
// names.
func (c *caseNotes) keepRawHead(head []byte) {
	c.raw = append(c.raw[:0], head...)
}

// noteRequestCases records the spellings of the request's field names,
// parsed from head (copied by keepRawHead first).
func (s *stream) noteRequestCases(head []byte, req *http1.Request) {
	c := &s.cases
	c.req.Reset()
	c.req.Record(head, c.raw, req.Headers)
	c.reqOn = true
}

// noteResponseCases records the spellings of the upstream response's
// field names and its reason phrase, as the cluster's format f asks.
func (s *stream) noteResponseCases(u *upstreamScratch, f *upstream.HTTP1Format) {
	c := &s.cases
	c.resp.Reset()
	c.resp.Record(u.head, u.raw, u.resp.Headers)
	c.respOn, c.respProperRest = true, f.EnvoyHeadersProperCase
	c.reason = c.reason[:0]
	if f.ForwardReasonPhrase {
		c.reason = append(c.reason, u.resp.Reason...)
	}
}

// formatRequestNames writes the names of the request head b (written
// upstream) in the spellings the client sent, and the others per the
// connection manager's formatter_type_on_envoy_headers.
func (s *stream) formatRequestNames(b []byte) {
	http1.FormatNames(b, &s.cases.req, s.m.cfg.keyFormat.EnvoyHeadersProperCase)
}

// formatResponseNames writes the names of the response head b (written
// to the client) in the spellings the upstream sent, and the others per
// the cluster's formatter_type_on_envoy_headers.
func (s *stream) formatResponseNames(b []byte) {
	http1.FormatNames(b, &s.cases.resp, s.cases.respProperRest)
}

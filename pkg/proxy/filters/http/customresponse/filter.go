package customresponse

import (
	"net/http"

	corev3 "github.com/envoyproxy/go-control-plane/envoy/config/core/v3"

	"github.com/outrigger-dev/outrigger/pkg/proxy/cel"
	"github.com/outrigger-dev/outrigger/pkg/proxy/httpfilter"
	"github.com/outrigger-dev/outrigger/pkg/proxy/httpmatch"
)

// filter is the compiled filter as each request sees it.
type filter filterConfig

var _ httpfilter.Encoder = (*filter)(nil)

// EncodeHeaders implements httpfilter.Encoder: the policy of the most
// specific per-route matcher that matches, else of the filter's own,
// replaces the response.
func (f *filter) EncodeHeaders(s httpfilter.Stream) httpfilter.Status {
	if st, ok := s.FilterStateValue(stateKey); ok {
		// The response of a pass a redirect policy recreated: only
		// that policy touches it.
		if r, ok := st.(redirected); ok {
			r.p.touchUp(s)
			return httpfilter.Continue
		}
	}
	d := matchData{s: s}
	var chosen *policy
	for _, rc := range s.RouteConfigs(f.name, nil) {
		// Least specific first: a later match overrides.
		if m, ok := rc.(*httpmatch.Matcher[*policy]); ok && m != nil {
			if p, ok := m.Match(d); ok {
				chosen = p
			}
		}
	}
	if chosen == nil && f.matcher != nil {
		chosen, _ = f.matcher.Match(d)
	}
	if chosen == nil {
		return httpfilter.Continue
	}
	if chosen.redirect != nil {
		chosen.redirect.redirect(s)
		return httpfilter.Continue
	}
	status := chosen.status
	if status == 0 {
		status = s.ResponseStatus()
	}
	if status == 0 {
		status = http.StatusInternalServerError
	}
	body := chosen.body
	if chosen.format != nil {
		// The format reads the response being replaced, and the
		// policy's body as %LOCAL_REPLY_BODY%.
		e := *httpfilter.CurrentEntry(s)
		e.ResponseHeaders = s.ResponseHeaders()
		e.ResponseCode = s.ResponseStatus()
		e.LocalReplyBody = chosen.body
		body = string(chosen.format.Append(nil, &e))
	}
	s.ReplaceResponse(status, body)
	chosen.headers.Apply(s.ResponseHeaders(), nil)
	if ds, ok := s.(httpfilter.DetailsSetter); ok && !chosen.keepDetails {
		ds.SetResponseCodeDetails(chosen.details)
	}
	return httpfilter.Continue
}

// matchData is the stream as the match inputs read it.
type matchData struct{ s httpfilter.Stream }

func (d matchData) RequestHeader(name string) (string, bool) {
	return d.s.RequestHeaders().Get(name)
}

func (d matchData) ResponseHeader(name string) (string, bool) {
	return d.s.ResponseHeaders().Get(name)
}

func (d matchData) ResponseStatus() int { return d.s.ResponseStatus() }

// FilterState implements httpmatch.FilterStateData.
func (d matchData) FilterState(key string) (any, bool) { return d.s.FilterStateValue(key) }

// DynamicMetadata implements httpmatch.MetadataData.
func (d matchData) DynamicMetadata() *corev3.Metadata { return d.s.DynamicMetadata() }

// FillCEL gives the stream's attributes, the response's included: the
// matcher runs on the response head.
func (d matchData) FillCEL(a *cel.Activation) { httpfilter.FillStreamCEL(d.s, true, a) }

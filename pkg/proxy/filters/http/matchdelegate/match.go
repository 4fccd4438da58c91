package matchdelegate

import (
	corev3 "github.com/envoyproxy/go-control-plane/envoy/config/core/v3"

	"github.com/outrigger-dev/outrigger/pkg/proxy/cel"
	"github.com/outrigger-dev/outrigger/pkg/proxy/httpfilter"
	"github.com/outrigger-dev/outrigger/pkg/proxy/httpmatch"
)

// Evaluate runs m on the stream as far as it has come: the request
// headers, and the response head once response is true. complete false
// means an input read the response before it was there: as in Envoy
// (UnableToMatch), there is no result yet and the match is run again on
// the response head. Otherwise a and matched are the tree's result.
func Evaluate[A any](m *httpmatch.Matcher[A], s httpfilter.Stream, response bool) (a A, matched, complete bool) {
	d := &matchData{s: s, response: response}
	a, matched = m.Match(d)
	if d.early {
		var zero A
		return zero, false, false
	}
	return a, matched, true
}

// matchData is the stream as the match inputs read it. Envoy's inputs
// are evaluated in order and stop at the first one whose data is not
// there yet, so an early read of the response makes the whole result
// premature, whatever came after it.
type matchData struct {
	s        httpfilter.Stream
	response bool
	// early records a read of the response before there is one.
	early bool
}

// RequestHeader implements httpmatch.Data; the pseudo-headers read the
// request line, as Envoy's header map holds them.
func (d *matchData) RequestHeader(name string) (string, bool) {
	r := d.s.Request()
	switch name {
	case ":path":
		return r.Path, true
	case ":method":
		return r.Method, true
	case ":authority":
		return r.Host, r.Host != ""
	case ":scheme":
		return r.Scheme, r.Scheme != ""
	}
	return d.s.RequestHeaders().Get(name)
}

// ResponseHeader implements httpmatch.Data.
func (d *matchData) ResponseHeader(name string) (string, bool) {
	if !d.response {
		d.early = true
		return "", false
	}
	return d.s.ResponseHeaders().Get(name)
}

// FilterState implements httpmatch.FilterStateData.
func (d *matchData) FilterState(key string) (any, bool) { return d.s.FilterStateValue(key) }

// ResponseStatus implements httpmatch.Data.
func (d *matchData) ResponseStatus() int {
	if !d.response {
		d.early = true
		return 0
	}
	return d.s.ResponseStatus()
}

// DynamicMetadata implements httpmatch.Data.
func (d *matchData) DynamicMetadata() *corev3.Metadata { return d.s.DynamicMetadata() }

// FillCEL implements httpmatch.Data: the stream's attributes as far as it
// has come (the response ones once there is a response).
func (d *matchData) FillCEL(a *cel.Activation) {
	httpfilter.FillStreamCEL(d.s, d.response, a)
}

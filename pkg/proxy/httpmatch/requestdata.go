package httpmatch

import (
	corev3 "github.com/envoyproxy/go-control-plane/envoy/config/core/v3"

	"github.com/outrigger-dev/outrigger/pkg/proxy/cel"
	"github.com/outrigger-dev/outrigger/pkg/proxy/router"
)

// RequestData is a request as the match inputs read it: its headers
// (the pseudo-headers from the request line), its dynamic metadata and
// its CEL attributes; there is no response yet.
type RequestData struct{ R *router.Request }

var _ Data = RequestData{}

// RequestHeader implements Data.
func (d RequestData) RequestHeader(name string) (string, bool) {
	switch name {
	case ":path":
		return d.R.Path, true
	case ":method":
		return d.R.Method, true
	case ":authority":
		return d.R.Host, d.R.Host != ""
	case ":scheme":
		return d.R.Scheme, d.R.Scheme != ""
	}
	if d.R.Headers == nil {
		return "", false
	}
	return d.R.Headers.Get(name)
}

// ResponseHeader implements Data: there is no response.
func (RequestData) ResponseHeader(string) (string, bool) { return "", false }

// ResponseStatus implements Data: there is no response.
func (RequestData) ResponseStatus() int { return 0 }

// DynamicMetadata implements Data.
func (d RequestData) DynamicMetadata() *corev3.Metadata { return d.R.DynamicMetadata }

// FillCEL implements Data: the request's attributes and
// metadata. The connection's are not known here (an expression reading
// them fails to evaluate and does not match).
func (d RequestData) FillCEL(a *cel.Activation) {
	var h cel.HeaderGetter = noHeaders{}
	if d.R.Headers != nil {
		h = d.R.Headers
	}
	a.Request = &cel.Request{Headers: h, Path: d.R.Path, Host: d.R.Host, Scheme: d.R.Scheme, Method: d.R.Method}
	a.Metadata = d.R.DynamicMetadata
}

// noHeaders is the header map of a request without headers.
type noHeaders struct{}

func (noHeaders) Get(string) (string, bool) { return "", false }

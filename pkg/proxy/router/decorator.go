package router

import routev3 "github.com/envoyproxy/go-control-plane/envoy/config/route/v3"

// Decorator is a route's decorator: the name of the spans of the requests
// it takes, and whether that name travels with the request (egress) or the
// response (ingress) in x-envoy-decorator-operation.
type Decorator struct {
	// Operation is the span name (required, not empty).
	Operation string
	// Propagate is propagate, true by default.
	Propagate bool
}

// compileDecorator reads a decorator; the API's constraints already
// require a non-empty operation.
func compileDecorator(d *routev3.Decorator) *Decorator {
	out := &Decorator{Operation: d.GetOperation(), Propagate: true}
	if p := d.GetPropagate(); p != nil {
		out.Propagate = p.GetValue()
	}
	return out
}

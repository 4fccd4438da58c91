// Package buffer is the buffer HTTP filter (envoy.filters.http.buffer):
// it holds a request until its whole body has arrived, so that the
// upstream gets it in one piece, and answers 413 "Payload Too Large" when
// the body is longer than max_request_bytes, as Envoy's filter does. A
// route's BufferPerRoute turns the filter off (disabled) or replaces its
// limit (buffer). It may run in an upstream filter chain too (the router's
// upstream_http_filters, a cluster's http_filters), once per attempt.
package buffer

import (
	"errors"

	bufferv3 "github.com/envoyproxy/go-control-plane/envoy/extensions/filters/http/buffer/v3"
	"google.golang.org/protobuf/proto"

	"github.com/outrigger-dev/outrigger/pkg/proxy/httpfilter"
)

// Name is the filter's name in the proxy. spelling.
const Name = "proxy.filters.http.buffer"

// Factory builds the filter and compiles its per-route configurations.
type Factory struct{}

var (
	_ httpfilter.Factory         = Factory{}
	_ httpfilter.RouteFactory    = Factory{}
	_ httpfilter.UpstreamCapable = Factory{}
)

// UpstreamCapable implements httpfilter.UpstreamCapable: as in Envoy (a
// dual filter), the filter may run in an upstream chain, where it buffers
// the body of each attempt's request, and answers 413 for one over its
// limit.
func (Factory) UpstreamCapable() {}

// Compile implements httpfilter.Factory.
func (Factory) Compile(config proto.Message, ctx httpfilter.Context) (httpfilter.Config, error) {
	c, ok := config.(*bufferv3.Buffer)
	if !ok {
		return nil, errors.New("not a Buffer configuration")
	}
	limit, err := maxBytes(c)
	if err != nil {
		return nil, err
	}
	return &filterConfig{name: ctx.Name, limit: limit}, nil
}

// maxBytes is a Buffer's max_request_bytes, which Envoy requires.
func maxBytes(c *bufferv3.Buffer) (int, error) {
	if c.GetMaxRequestBytes() == nil || c.GetMaxRequestBytes().GetValue() == 0 {
		return 0, errors.New("max_request_bytes: must be set and greater than 0")
	}
	return int(c.GetMaxRequestBytes().GetValue()), nil
}

// routeConfig is a compiled BufferPerRoute: disabled, or a limit.
type routeConfig struct {
	disabled bool
	limit    int
}

// CompileRoute implements httpfilter.RouteFactory: BufferPerRoute.
func (Factory) CompileRoute(config proto.Message, _ httpfilter.Context) (httpfilter.RouteConfig, error) {
	c, ok := config.(*bufferv3.BufferPerRoute)
	if !ok {
		return nil, errors.New("not a BufferPerRoute configuration")
	}
	switch o := c.GetOverride().(type) {
	case *bufferv3.BufferPerRoute_Disabled:
		if !o.Disabled {
			return nil, errors.New("disabled: must be true when set")
		}
		return &routeConfig{disabled: true}, nil
	case *bufferv3.BufferPerRoute_Buffer:
		limit, err := maxBytes(o.Buffer)
		if err != nil {
			return nil, errors.New("buffer." + err.Error())
		}
		return &routeConfig{limit: limit}, nil
	default:
		return nil, errors.New("override: one of disabled or buffer must be set")
	}
}

// filterConfig is the compiled filter; it keeps no state per request, so
// it is its own filter.
type filterConfig struct {
	name  string
	limit int
}

var _ httpfilter.Decoder = (*filterConfig)(nil)

// NewFilter implements httpfilter.Config.
func (c *filterConfig) NewFilter() httpfilter.Filter { return c }

// DecodeHeaders implements httpfilter.Decoder: read the whole body (the
// stream answers 413 past the limit), unless the route turns the filter
// off.
func (c *filterConfig) DecodeHeaders(s httpfilter.Stream) httpfilter.Status {
	limit := c.limit
	if rc, ok := s.RouteConfig(c.name).(*routeConfig); ok {
		if rc.disabled {
			return httpfilter.Continue
		}
		limit = rc.limit
	}
	if _, has := s.RequestBody(); !has {
		return httpfilter.Continue
	}
	if _, _, ok := s.BufferRequestBody(limit, false); !ok {
		return httpfilter.Stop
	}
	return httpfilter.Continue
}

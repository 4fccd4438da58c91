// Package setfilterstate is the set_filter_state HTTP filter
// (envoy.filters.http.set_filter_state): on the request headers it
// renders substitution formats with what the stream knows (the request
// headers, the connection, the dynamic metadata and filter state so far)
// and keeps the objects made of them in the request's filter state, where
// route filter_state matchers, hash policies, the RBAC filter, the
// ORIGINAL_DST cluster and %FILTER_STATE% read them.
package setfilterstate

import (
	"errors"

	sfsv3 "github.com/envoyproxy/go-control-plane/envoy/extensions/filters/http/set_filter_state/v3"
	"google.golang.org/protobuf/proto"

	"github.com/outrigger-dev/outrigger/pkg/proxy/filters/setfilterstate"
	"github.com/outrigger-dev/outrigger/pkg/proxy/httpfilter"
)

// Name is the filter's name in the proxy. spelling.
const Name = "proxy.filters.http.set_filter_state"

// Factory builds the filter.
type Factory struct{}

var _ httpfilter.Factory = Factory{}

// Compile implements httpfilter.Factory.
func (Factory) Compile(config proto.Message, ctx httpfilter.Context) (httpfilter.Config, error) {
	c, ok := config.(*sfsv3.Config)
	if !ok {
		return nil, errors.New("not a set_filter_state Config")
	}
	values, err := setfilterstate.Compile(c.GetOnRequestHeaders(), "on_request_headers", ctx.Extensions)
	if err != nil {
		return nil, err
	}
	return &filterConfig{values: values, clearRouteCache: c.GetClearRouteCache()}, nil
}

// filterConfig is the compiled filter; it keeps nothing per request, so
// it is its own filter.
type filterConfig struct {
	values          setfilterstate.Values
	clearRouteCache bool
}

var _ httpfilter.Decoder = (*filterConfig)(nil)

// NewFilter implements httpfilter.Config.
func (c *filterConfig) NewFilter() httpfilter.Filter { return c }

// DecodeHeaders implements httpfilter.Decoder: the values in order, then
// with clear_route_cache the route is matched again (a route's
// filter_state matcher sees them).
func (c *filterConfig) DecodeHeaders(s httpfilter.Stream) httpfilter.Status {
	c.values.Apply(httpfilter.CurrentEntry(s), s.SetFilterState)
	if c.clearRouteCache {
		s.ClearRouteCache()
	}
	return httpfilter.Continue
}

// Package cors is the CORS HTTP filter (envoy.filters.http.cors): it
// applies the CORS policies of the matched route and virtual host (their
// cors field), or the per-route form (typed_per_filter_config with an
// envoy.extensions.filters.http.cors.v3.CorsPolicy) that replaces them, as
// Envoy's filter does. It answers preflight requests (OPTIONS with Origin
// and Access-Control-Request-Method) itself, adds the access-control
// headers to the responses of allowed origins, and counts
// http.<stat_prefix>.cors.origin_valid and origin_invalid.
package cors

import (
	"errors"
	"sync"

	routev3 "github.com/envoyproxy/go-control-plane/envoy/config/route/v3"
	corsv3 "github.com/envoyproxy/go-control-plane/envoy/extensions/filters/http/cors/v3"
	"google.golang.org/protobuf/proto"

	"github.com/outrigger-dev/outrigger/pkg/proxy/httpfilter"
	"github.com/outrigger-dev/outrigger/pkg/proxy/router"
	"github.com/outrigger-dev/outrigger/pkg/proxy/stats"
)

// Name is the filter's name in the proxy. spelling.
const Name = "proxy.filters.http.cors"

// Factory builds the filter and compiles its per-route policies.
type Factory struct{}

var (
	_ httpfilter.Factory      = Factory{}
	_ httpfilter.RouteFactory = Factory{}
)

// Compile implements httpfilter.Factory. The filter's own configuration
// (Cors) has no field: the policies come from the routes.
func (Factory) Compile(config proto.Message, ctx httpfilter.Context) (httpfilter.Config, error) {
	if _, ok := config.(*corsv3.Cors); !ok {
		return nil, errors.New("not a Cors configuration")
	}
	if ctx.Stats == nil {
		return nil, errors.New("no stat store")
	}
	sc := ctx.Stats.Scope(ctx.StatPrefix + "cors.")
	c := &filterConfig{
		name:          ctx.Name,
		runtime:       ctx.Runtime,
		originValid:   sc.Counter("origin_valid"),
		originInvalid: sc.Counter("origin_invalid"),
	}
	c.pool.New = func() any { return &filter{cfg: c} }
	return c, nil
}

// CompileRoute implements httpfilter.RouteFactory: the per-route
// CorsPolicy, compiled as a route's cors is.
func (Factory) CompileRoute(config proto.Message, _ httpfilter.Context) (httpfilter.RouteConfig, error) {
	p, ok := config.(*corsv3.CorsPolicy)
	if !ok {
		return nil, errors.New("not a CorsPolicy configuration")
	}
	rp := &routev3.CorsPolicy{
		AllowOriginStringMatch:       p.GetAllowOriginStringMatch(),
		AllowMethods:                 p.GetAllowMethods(),
		AllowHeaders:                 p.GetAllowHeaders(),
		ExposeHeaders:                p.GetExposeHeaders(),
		MaxAge:                       p.GetMaxAge(),
		AllowCredentials:             p.GetAllowCredentials(),
		ShadowEnabled:                p.GetShadowEnabled(),
		AllowPrivateNetworkAccess:    p.GetAllowPrivateNetworkAccess(),
		ForwardNotMatchingPreflights: p.GetForwardNotMatchingPreflights(),
	}
	if fe := p.GetFilterEnabled(); fe != nil {
		rp.EnabledSpecifier = &routev3.CorsPolicy_FilterEnabled{FilterEnabled: fe}
	}
	return router.CompileCorsPolicy(rp)
}

// filterConfig is the compiled filter: its name (the key of its
// per-route policies), the runtime its percentages read, and its stats.
type filterConfig struct {
	name                       string
	runtime                    httpfilter.Runtime
	originValid, originInvalid *stats.Counter
	// pool recycles the filters of finished requests.
	pool sync.Pool
}

// NewFilter implements httpfilter.Config.
func (c *filterConfig) NewFilter() httpfilter.Filter {
	return c.pool.Get().(*filter)
}

// policies finds the policies of the request, most specific first: the
// per-route ones when there are any, else the route's and its virtual
// host's cors, as Envoy's filter does.
func (f *filter) policies(s httpfilter.Stream, route *router.Route) {
	f.configs = s.RouteConfigs(f.cfg.name, f.configs[:0])
	for i := len(f.configs) - 1; i >= 0; i-- {
		if p, ok := f.configs[i].(*router.CorsPolicy); ok {
			f.pols = append(f.pols, p)
		}
	}
	clear(f.configs)
	if len(f.pols) > 0 {
		return
	}
	if route.Cors != nil {
		f.pols = append(f.pols, route.Cors)
	}
	if vh := route.VirtualHost; vh != nil && vh.Cors != nil {
		f.pols = append(f.pols, vh.Cors)
	}
}

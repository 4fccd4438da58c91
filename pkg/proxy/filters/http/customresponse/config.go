// Package customresponse is the HTTP filter
// envoy.filters.http.custom_response: a match tree over the response
// (its status, status class and headers, and the request's headers)
// chooses a policy that replaces the response, as Envoy's filter does.
// The local_response_policy answers with its own status, body (or
// body_format), headers and response code details; the redirect_policy
// drops the response and sends the request again, as a GET, to another
// URI through the route table (see redirect.go). The same configuration in a
// route's, virtual host's or route configuration's
// typed_per_filter_config takes precedence: the most specific level that
// matches wins, then the filter's own matcher.
package customresponse

import (
	"errors"
	"fmt"

	xdscorev3 "github.com/cncf/xds/go/xds/core/v3"
	crv3 "github.com/envoyproxy/go-control-plane/envoy/extensions/filters/http/custom_response/v3"
	localv3 "github.com/envoyproxy/go-control-plane/envoy/extensions/http/custom_response/local_response_policy/v3"
	redirectv3 "github.com/envoyproxy/go-control-plane/envoy/extensions/http/custom_response/redirect_policy/v3"
	"google.golang.org/protobuf/proto"

	"github.com/outrigger-dev/outrigger/pkg/proxy/accesslog"
	"github.com/outrigger-dev/outrigger/pkg/proxy/datasource"
	"github.com/outrigger-dev/outrigger/pkg/proxy/httpfilter"
	"github.com/outrigger-dev/outrigger/pkg/proxy/httpmatch"
	"github.com/outrigger-dev/outrigger/pkg/proxy/router"
)

// Name is the filter's name in the proxy. spelling.
const Name = "proxy.filters.http.custom_response"

// Factory builds the filter.
type Factory struct{}

var (
	_ httpfilter.Factory      = Factory{}
	_ httpfilter.RouteFactory = Factory{}
)

// Compile implements httpfilter.Factory.
func (Factory) Compile(config proto.Message, ctx httpfilter.Context) (httpfilter.Config, error) {
	m, err := compile(config, ctx)
	if err != nil {
		return nil, err
	}
	return &filterConfig{name: ctx.Name, matcher: m}, nil
}

// CompileRoute implements httpfilter.RouteFactory: a CustomResponse of
// its own.
func (Factory) CompileRoute(config proto.Message, ctx httpfilter.Context) (httpfilter.RouteConfig, error) {
	return compile(config, ctx)
}

// compile compiles a CustomResponse's matcher, nil when it has none (a
// filter whose policies are all per route).
func compile(config proto.Message, ctx httpfilter.Context) (*httpmatch.Matcher[*policy], error) {
	cfg, ok := config.(*crv3.CustomResponse)
	if !ok {
		return nil, errors.New("not a CustomResponse configuration")
	}
	if cfg.GetCustomResponseMatcher() == nil {
		return nil, nil
	}
	m, err := httpmatch.Compile(cfg.GetCustomResponseMatcher(), func(a *xdscorev3.TypedExtensionConfig, path string) (*policy, error) {
		return compilePolicy(a, path, ctx)
	})
	if err != nil {
		return nil, fmt.Errorf("custom_response_matcher.%w", err)
	}
	return m, nil
}

// policy is a compiled local_response_policy, or a redirect_policy.
type policy struct {
	// redirect, when not nil, is the redirect_policy, and the other
	// fields are unused.
	redirect *redirectPolicy

	// status replaces the response's, 0 to keep it.
	status  int
	body    string
	headers router.HeaderMutation
	// format is body_format, nil without one.
	format *accesslog.Formatter
	// details is what %RESPONSE_CODE_DETAILS% becomes (Envoy clears it
	// unless told otherwise); keepDetails leaves it as it was.
	details     string
	keepDetails bool
}

// compilePolicy compiles a match action: a LocalResponsePolicy or a
// RedirectPolicy.
func compilePolicy(a *xdscorev3.TypedExtensionConfig, path string, ctx httpfilter.Context) (*policy, error) {
	formatters := ctx.Extensions
	msg, err := a.GetTypedConfig().UnmarshalNew()
	if err != nil {
		return nil, fmt.Errorf("%s.typed_config: %w", path, err)
	}
	var lp *localv3.LocalResponsePolicy
	switch m := msg.(type) {
	case *localv3.LocalResponsePolicy:
		lp = m
	case *redirectv3.RedirectPolicy:
		rp, err := compileRedirectPolicy(m, path, ctx)
		if err != nil {
			return nil, err
		}
		return &policy{redirect: rp}, nil
	default:
		return nil, fmt.Errorf("%s.typed_config: policy %s is not supported by Outrigger", path, proto.MessageName(msg))
	}
	p := &policy{status: int(lp.GetStatusCode().GetValue())}
	body, err := datasource.Read(lp.GetBody())
	if err != nil {
		return nil, fmt.Errorf("%s.typed_config.body.%w", path, err)
	}
	p.body = string(body)
	if sf := lp.GetBodyFormat(); sf != nil {
		// Envoy's policy answers with sendLocalReply, whose content type
		// is text/plain whatever the format's content_type says.
		if p.format, err = accesslog.CompileSubstitution(sf, formatters); err != nil {
			return nil, fmt.Errorf("%s.typed_config.body_format.%w", path, err)
		}
	}
	switch d := lp.GetResponseCodeDetailsAction().(type) {
	case *localv3.LocalResponsePolicy_PreserveResponseCodeDetails:
		p.keepDetails = d.PreserveResponseCodeDetails
	case *localv3.LocalResponsePolicy_ResponseCodeDetails:
		p.details = d.ResponseCodeDetails
	}
	if p.headers, err = router.CompileHeaderMutation(lp.GetResponseHeadersToAdd(), nil, path+".typed_config.response_headers_to_add", ""); err != nil {
		return nil, err
	}
	return p, nil
}

// filterConfig is the compiled filter.
type filterConfig struct {
	// name is the name the filter is configured with, the key of its
	// per-route configurations.
	name    string
	matcher *httpmatch.Matcher[*policy]
}

// NewFilter implements httpfilter.Config: the filter keeps no state per
// request.
func (c *filterConfig) NewFilter() httpfilter.Filter { return (*filter)(c) }

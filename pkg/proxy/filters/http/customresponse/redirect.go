package customresponse

import (
	"errors"
	"fmt"
	"strings"

	routev3 "github.com/envoyproxy/go-control-plane/envoy/config/route/v3"
	redirectv3 "github.com/envoyproxy/go-control-plane/envoy/extensions/http/custom_response/redirect_policy/v3"
	"google.golang.org/protobuf/proto"

	"github.com/outrigger-dev/outrigger/pkg/proxy/httpfilter"
	"github.com/outrigger-dev/outrigger/pkg/proxy/router"
	"github.com/outrigger-dev/outrigger/pkg/proxy/stats"
)

// stateKey is the filter state key under which a redirect policy marks
// the stream it recreated, as Envoy's CustomResponseFilterState: the
// next pass's response is the custom response, which the policy only
// touches up.
const stateKey = "envoy.filters.http.custom_response"

// redirectPolicy is a compiled RedirectPolicy: a matched response is
// dropped and the request goes again, as a GET without a body, to another
// URI through the route table (Envoy's recreateStream); the response of
// that pass is the client's.
type redirectPolicy struct {
	// target is the uri parsed; action, when not nil, builds the URI
	// from the request instead (redirect_action).
	target router.RedirectTarget
	action *router.Redirect
	// status replaces a 1xx/2xx redirected response's status, 0 keeps
	// it.
	status      int
	respHeaders router.HeaderMutation
	reqHeaders  router.HeaderMutation
	// noRoute and invalidURI are Envoy's counters in the connection
	// manager's scope; nil without a stat store (unit tests).
	noRoute, invalidURI *stats.Counter
}

// compileRedirectPolicy compiles rp; errors name the field below path.
func compileRedirectPolicy(rp *redirectv3.RedirectPolicy, path string, ctx httpfilter.Context) (*redirectPolicy, error) {
	path += ".typed_config"
	p := &redirectPolicy{status: int(rp.GetStatusCode().GetValue())}
	if rp.StatusCode != nil && (p.status < 100 || p.status > 999) {
		return nil, fmt.Errorf("%s.status_code: %d is not between 100 and 999", path, p.status)
	}
	switch a := rp.GetRedirectActionSpecifier().(type) {
	case *redirectv3.RedirectPolicy_Uri:
		t, ok := router.ParseRedirectLocation(a.Uri)
		if !ok {
			return nil, fmt.Errorf("%s.uri: %q is not an absolute http or https URL", path, a.Uri)
		}
		p.target = t
	case *redirectv3.RedirectPolicy_RedirectAction:
		rd, err := compileAction(a.RedirectAction)
		if err != nil {
			return nil, fmt.Errorf("%s.redirect_action.%w", path, err)
		}
		p.action = rd
	default:
		return nil, fmt.Errorf("%s: one of uri and redirect_action is required", path)
	}
	if rp.GetModifyRequestHeadersAction() != nil {
		// Envoy's category for it has no extension of its own, only
		// test ones: there is nothing to implement it like.
		return nil, fmt.Errorf("%s.modify_request_headers_action: Envoy has no extension of this kind; Outrigger supports none", path)
	}
	var err error
	if p.respHeaders, err = router.CompileHeaderMutation(rp.GetResponseHeadersToAdd(), nil, path+".response_headers_to_add", ""); err != nil {
		return nil, err
	}
	if p.reqHeaders, err = router.CompileHeaderMutation(rp.GetRequestHeadersToAdd(), nil, path+".request_headers_to_add", ""); err != nil {
		return nil, err
	}
	if ctx.Stats != nil {
		sc := ctx.Stats.Scope(ctx.StatPrefix)
		p.noRoute = sc.Counter("custom_response_redirect_no_route")
		p.invalidURI = sc.Counter("custom_response_invalid_uri")
	}
	return p, nil
}

// compileAction compiles a redirect_action as Envoy's policy takes it:
// scheme, host, port, path_redirect and strip_query only; a route's
// rewrites are refused, and so is response_code (status_code says it).
func compileAction(a *routev3.RedirectAction) (*router.Redirect, error) {
	switch a.GetPathRewriteSpecifier().(type) {
	case *routev3.RedirectAction_PrefixRewrite:
		return nil, errors.New("prefix_rewrite: not supported for a custom response (as in Envoy)")
	case *routev3.RedirectAction_RegexRewrite:
		return nil, errors.New("regex_rewrite: not supported for a custom response (as in Envoy)")
	case *routev3.RedirectAction_PathRewrite:
		return nil, errors.New("path_rewrite: not supported by Outrigger for a custom response")
	}
	if a.GetResponseCode() != routev3.RedirectAction_MOVED_PERMANENTLY {
		// Envoy ignores it; status_code is the policy's field for it.
		return nil, errors.New("response_code: not used by a custom response; use the policy's status_code")
	}
	if strings.Contains(a.GetPathRedirect(), "#") {
		return nil, fmt.Errorf("path_redirect: #fragment is not supported for a custom response (%q)", a.GetPathRedirect())
	}
	if a.GetHostRedirect() == "" && a.GetPathRedirect() == "" {
		return nil, errors.New("host_redirect: at least one of host_redirect and path_redirect is required")
	}
	return router.CompileRedirectAction(a)
}

// redirect sends the request again to the policy's URI, dropping the
// response the filter sees; when the stream cannot be recreated, the URI
// is not a valid one or no route takes it, the response goes on (the
// request's headers changed, as in Envoy, when no route takes it).
func (p *redirectPolicy) redirect(s httpfilter.Stream) {
	rc, ok := s.(httpfilter.StreamRecreator)
	if !ok || !rc.CanRecreate() {
		return
	}
	t := p.target
	if p.action != nil {
		if t, ok = router.ParseRedirectLocation(p.action.Location(s.Request())); !ok {
			inc(p.invalidURI)
			return
		}
	}
	rc.SetScheme(t.Scheme)
	s.SetAuthority(t.Authority)
	s.SetPath(t.Path)
	p.reqHeaders.Apply(s.RequestHeaders(), httpfilter.CurrentEntry(s))
	s.ClearRouteCache()
	if s.Route() == nil {
		inc(p.noRoute)
		return
	}
	if rr, ok := s.(httpfilter.RequestReplacer); ok {
		rr.SetMethod("GET")
	}
	s.RequestHeaders().Del("content-length")
	s.SetFilterState(stateKey, redirected{p})
	rc.RecreateStream()
}

// touchUp is the policy on the response of the pass it recreated: a
// 1xx or 2xx response gets the policy's headers and status; an error or
// a redirect is left as it is.
func (p *redirectPolicy) touchUp(s httpfilter.Stream) {
	status := s.ResponseStatus()
	if status < 100 || status > 299 {
		return
	}
	p.respHeaders.Apply(s.ResponseHeaders(), httpfilter.CurrentEntry(s))
	if p.status != 0 {
		if ss, ok := s.(httpfilter.ResponseStatusSetter); ok {
			ss.SetResponseStatus(p.status)
		}
	}
}

func inc(c *stats.Counter) {
	if c != nil {
		c.Inc()
	}
}

// redirected is the filter state of a stream a redirect policy
// recreated; it has no serialization (%FILTER_STATE% shows nothing).
type redirected struct{ p *redirectPolicy }

// FilterStateString implements accesslog.FilterStateObject.
func (redirected) FilterStateString() (string, bool) { return "", false }

// FilterStateProto implements accesslog.FilterStateObject.
func (redirected) FilterStateProto() proto.Message { return nil }

package router

import (
	"fmt"
	"regexp"
	"strings"

	routev3 "github.com/envoyproxy/go-control-plane/envoy/config/route/v3"

	"github.com/outrigger-dev/outrigger/pkg/proxy/accesslog"
)

// hostRewrite is a route action's host_rewrite_header or
// host_rewrite_path_regex (host_rewrite_literal is Route.HostRewrite and
// auto_host_rewrite Route.AutoHostRewrite: they need no request).
type hostRewrite struct {
	// header is the lower-case request header whose value becomes the
	// host.
	header string
	// re and substitution rewrite the path (query excluded) into the
	// host; substitution is in regexp.Expand's syntax.
	re           *regexp.Regexp
	substitution string
}

// compileHostRewrite compiles the host_rewrite_specifier of a into r;
// errors name the field below the route action.
func compileHostRewrite(r *Route, a *routev3.RouteAction) error {
	switch h := a.GetHostRewriteSpecifier().(type) {
	case *routev3.RouteAction_HostRewriteLiteral:
		r.HostRewrite = h.HostRewriteLiteral
	case *routev3.RouteAction_AutoHostRewrite:
		r.AutoHostRewrite = h.AutoHostRewrite.GetValue()
	case *routev3.RouteAction_HostRewriteHeader:
		r.hostRewrite.header = strings.ToLower(h.HostRewriteHeader)
	case *routev3.RouteAction_HostRewritePathRegex:
		re, err := regexp.Compile(h.HostRewritePathRegex.GetPattern().GetRegex())
		if err != nil {
			return fmt.Errorf("host_rewrite_path_regex.pattern.regex: %w", err)
		}
		sub, err := goTemplate(h.HostRewritePathRegex.GetSubstitution(), re.NumSubexp())
		if err != nil {
			return fmt.Errorf("host_rewrite_path_regex.substitution: %w", err)
		}
		r.hostRewrite.re, r.hostRewrite.substitution = re, sub
	case *routev3.RouteAction_HostRewrite:
		// Envoy's formatter for it prints a missing value as "-".
		f, err := accesslog.Text(h.HostRewrite, false)
		if err != nil {
			return fmt.Errorf("host_rewrite: %w", err)
		}
		r.hostFormat = f
	case nil:
	default:
		return fmt.Errorf("host_rewrite_specifier: %s is not supported by Outrigger", oneofName(a.ProtoReflect(), "host_rewrite_specifier"))
	}
	r.AppendXForwardedHost = a.GetAppendXForwardedHost()
	return nil
}

// RewriteHost is the host a request goes upstream with, as Envoy's
// finalizeHostHeader computes it before a host is chosen:
// host_rewrite_literal; the first value of host_rewrite_header; or
// host_rewrite_path_regex applied to path (query and fragment excluded).
// It returns "" when the route rewrites nothing now: no such setting, an
// absent or empty header, an empty substitution result, or
// auto_host_rewrite, which waits for the host (see AutoHostRewrite).
func (r *Route) RewriteHost(h HeaderGetter, path string) string {
	switch {
	case r.HostRewrite != "":
		return r.HostRewrite
	case r.hostRewrite.header != "":
		if h == nil {
			return ""
		}
		v, _ := h.Get(r.hostRewrite.header)
		// A header sent more than once comes back joined with ",":
		// Envoy takes its first value.
		v, _, _ = strings.Cut(v, ",")
		return v
	case r.hostRewrite.re != nil:
		return r.hostRewrite.re.ReplaceAllString(pathOnly(path), r.hostRewrite.substitution)
	}
	return ""
}

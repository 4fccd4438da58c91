package router

import (
	"fmt"

	routev3 "github.com/envoyproxy/go-control-plane/envoy/config/route/v3"

	"github.com/outrigger-dev/outrigger/pkg/proxy/accesslog"
)

// formatPath renders a path_rewrite format for the request e describes
// (an entry of path alone when e is nil); "" leaves the path as it is, as
// Envoy leaves it when the format yields nothing.
func formatPath(f *accesslog.Formatter, e *accesslog.Entry, path string) string {
	if e == nil {
		e = &accesslog.Entry{Path: path}
	}
	return string(f.Append(nil, e))
}

// compilePathFormat compiles a route action's path_rewrite (a format
// string, empty values left out, as Envoy's formatter for it) into r;
// errors name the field below the route action.
func compilePathFormat(r *Route, a *routev3.RouteAction) error {
	v := a.GetPathRewrite()
	if v == "" {
		return nil
	}
	if r.rewrite.active() {
		return fmt.Errorf("path_rewrite: specify only one of prefix_rewrite, regex_rewrite, path_rewrite_policy or path_rewrite")
	}
	f, err := accesslog.Text(v, true)
	if err != nil {
		return fmt.Errorf("path_rewrite: %w", err)
	}
	r.pathFormat = f
	return nil
}

// FormatsPath reports whether the route rewrites paths with a
// path_rewrite format, which FormatPath applies once the request's
// headers are edited (it may read headers they add).
func (r *Route) FormatsPath() bool { return r.pathFormat != nil }

// FormatPath is the path (query kept) the route's path_rewrite gives the
// request e describes, path being its path as received; "" when the
// format yields nothing and the path stays.
func (r *Route) FormatPath(e *accesslog.Entry, path string) string {
	p := formatPath(r.pathFormat, e, path)
	if p == "" {
		return ""
	}
	return p + path[len(pathOnly(path)):]
}

// FormatHost is the host the route's host_rewrite format gives the
// request e describes; "" when it has none or it yields nothing, and the
// host stays. A missing value prints "-", as Envoy's formatter for it
// does not leave empty values out.
func (r *Route) FormatHost(e *accesslog.Entry) string {
	if r.hostFormat == nil {
		return ""
	}
	return string(r.hostFormat.Append(nil, e))
}

package router

import (
	"errors"
	"fmt"
	"strconv"
	"strings"

	routev3 "github.com/envoyproxy/go-control-plane/envoy/config/route/v3"

	"github.com/outrigger-dev/outrigger/pkg/proxy/accesslog"
)

// Redirect is a compiled redirect action: the proxy answers with Status
// and a Location built by (*Route).RedirectLocation.
type Redirect struct {
	// Status is 301 (the default), 302, 303, 307 or 308.
	Status int
	// Scheme replaces the request's scheme ("https" for https_redirect).
	Scheme string
	// Host replaces the request's host.
	Host string
	// Port, when not 0, replaces the request's port.
	Port uint32
	// Path replaces the whole path (path_redirect); when it has no query
	// string, the request's query is kept.
	Path string
	// StripQuery removes the query string (not one path_redirect gives).
	StripQuery bool

	// ssl is the redirect of a virtual host's require_tls: to https, the
	// host and path kept as they are (Envoy's createSslRedirectPath).
	ssl bool

	port         string // ":<Port>", precomputed
	pathHasQuery bool
	rewrite      rewrite
	// pathFormat is path_rewrite: the path, formatted for the request
	// (its query kept); an empty result keeps the request's path.
	pathFormat *accesslog.Formatter
}

// redirectCodes maps RedirectResponseCode to the HTTP status. Immutable.
var redirectCodes = map[routev3.RedirectAction_RedirectResponseCode]int{
	routev3.RedirectAction_MOVED_PERMANENTLY:  301,
	routev3.RedirectAction_FOUND:              302,
	routev3.RedirectAction_SEE_OTHER:          303,
	routev3.RedirectAction_TEMPORARY_REDIRECT: 307,
	routev3.RedirectAction_PERMANENT_REDIRECT: 308,
}

// compileRedirect compiles a RedirectAction; errors name the field below
// it.
func compileRedirect(a *routev3.RedirectAction) (*Redirect, error) {
	rd := &Redirect{Host: a.GetHostRedirect(), Port: a.GetPortRedirect(), StripQuery: a.GetStripQuery()}
	status, ok := redirectCodes[a.GetResponseCode()]
	if !ok {
		return nil, fmt.Errorf("response_code: %v is not a redirect code", a.GetResponseCode())
	}
	rd.Status = status
	switch s := a.GetSchemeRewriteSpecifier().(type) {
	case *routev3.RedirectAction_HttpsRedirect:
		if s.HttpsRedirect {
			rd.Scheme = "https"
		}
	case *routev3.RedirectAction_SchemeRedirect:
		rd.Scheme = strings.ToLower(s.SchemeRedirect)
	}
	if rd.Port != 0 {
		if rd.Port > 65535 {
			return nil, fmt.Errorf("port_redirect: %d is not a port", rd.Port)
		}
		rd.port = ":" + strconv.FormatUint(uint64(rd.Port), 10)
	}
	switch p := a.GetPathRewriteSpecifier().(type) {
	case *routev3.RedirectAction_PathRedirect:
		rd.Path = p.PathRedirect
		rd.pathHasQuery = strings.Contains(p.PathRedirect, "?")
	case *routev3.RedirectAction_PrefixRewrite:
		rw, err := compileRewrite(p.PrefixRewrite, nil)
		if err != nil {
			return nil, err
		}
		rd.rewrite = rw
	case *routev3.RedirectAction_RegexRewrite:
		if p.RegexRewrite == nil {
			return nil, errors.New("regex_rewrite: a pattern is required")
		}
		rw, err := compileRewrite("", p.RegexRewrite)
		if err != nil {
			return nil, err
		}
		rd.rewrite = rw
	case *routev3.RedirectAction_PathRewrite:
		f, err := accesslog.Text(p.PathRewrite, true)
		if err != nil {
			return nil, fmt.Errorf("path_rewrite: %w", err)
		}
		rd.pathFormat = f
	}
	return rd, nil
}

// location builds the Location of a redirect, following Envoy's
// Http::Utility::newUri: scheme, host and port from the configuration or
// the request, then the path (replaced, or rewritten like a route
// rewrites it), then strip_query. e supplies path_rewrite's values.
func (rd *Redirect) location(req *Request, matched int, e *accesslog.Entry) string {
	if rd.ssl {
		return "https://" + req.Host + req.Path
	}
	forwardedProto, _ := req.header("x-forwarded-proto")
	scheme := rd.Scheme
	if scheme == "" {
		scheme = forwardedProto
		if scheme == "" {
			scheme = req.Scheme
		}
		if scheme == "" {
			scheme = "http"
		}
	}

	host := rd.Host
	if host == "" {
		host = redirectHost(req.Host, scheme, forwardedProto, rd.port != "")
	}

	var path string
	switch {
	case rd.Path != "" && rd.pathHasQuery:
		path = rd.Path
	case rd.Path != "":
		path = rd.Path + req.Path[len(pathOnly(req.Path)):]
	case rd.rewrite.active():
		path = rd.rewrite.apply(req.Path, matched)
	case rd.pathFormat != nil:
		path = req.Path
		if p := formatPath(rd.pathFormat, e, req.Path); p != "" {
			path = p + req.Path[len(pathOnly(req.Path)):]
		}
	default:
		path = req.Path
	}
	if !strings.HasPrefix(path, "/") {
		path = "/" + path
	}
	if rd.StripQuery && !rd.pathHasQuery {
		path = pathOnly(path)
	}
	return scheme + "://" + host + rd.port + path
}

// redirectHost is the request's host for a redirect: its port is dropped
// when the redirect sets a port, or when the scheme changes and the port
// was the old scheme's default, as Envoy's processRequestHost does.
func redirectHost(host, newScheme, forwardedProto string, newPort bool) string {
	i := portStart(host)
	if i < 0 {
		return host
	}
	port := host[i:]
	remove := newPort
	if newScheme != forwardedProto {
		remove = remove || (forwardedProto == "https" && port == ":443") || (forwardedProto == "http" && port == ":80")
	}
	if remove {
		return host[:i]
	}
	return host
}

// portStart is the index of the ':' before a numeric port in host, or -1;
// a bracketed IPv6 address's colons are not ports (Envoy's getPortStart).
func portStart(host string) int {
	i := strings.LastIndexByte(host, ':')
	if i < 0 || strings.LastIndexByte(host, ']') > i {
		return -1
	}
	port := host[i+1:]
	if port == "" {
		return -1
	}
	for j := 0; j < len(port); j++ {
		if port[j] < '0' || port[j] > '9' {
			return -1
		}
	}
	if _, err := strconv.ParseUint(port, 10, 32); err != nil {
		return -1
	}
	return i
}

// CompileRedirectAction compiles a RedirectAction used outside a route
// (the custom response filter's redirect policy); errors name the field
// below it. Rewrites that depend on a route's match are for the caller
// to refuse.
func CompileRedirectAction(a *routev3.RedirectAction) (*Redirect, error) {
	return compileRedirect(a)
}

// Location is the URL the redirect sends req to, as Envoy's
// Http::Utility::newUri builds it from the request's scheme, host and
// path, with no route prefix to rewrite.
func (rd *Redirect) Location(req *Request) string { return rd.location(req, 0, nil) }

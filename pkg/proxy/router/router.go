// Package router compiles route configurations into tables and matches
// requests against them. It is pure: no I/O, no clocks, no globals, so it can
// be tested and fuzzed exhaustively.
package router

import (
	"fmt"
	"sort"
	"strings"

	routev3 "github.com/envoyproxy/go-control-plane/envoy/config/route/v3"
)

// DirectResponse is a response the proxy answers itself.
type DirectResponse struct {
	Status uint32
	Body   string
}

// Route is one compiled route.
type Route struct {
	Name   string
	prefix string
	path   string
	exact  bool

	// Direct is set when the route answers directly.
	Direct *DirectResponse
}

// VirtualHost is a compiled virtual host.
type VirtualHost struct {
	Name   string
	Routes []*Route
}

// Table is a compiled route configuration.
type Table struct {
	Name     string
	exact    map[string]*VirtualHost
	suffixes []wildcard // "*.example.com": longest suffix first
	prefixes []wildcard // "example.*": longest prefix first
	any      *VirtualHost
}

type wildcard struct {
	part string
	vh   *VirtualHost
}

// Compile builds a table. Errors name the field path below the route
// configuration.
func Compile(rc *routev3.RouteConfiguration) (*Table, error) {
	t := &Table{Name: rc.GetName(), exact: map[string]*VirtualHost{}}
	seen := map[string]string{}
	for i, vhc := range rc.GetVirtualHosts() {
		vh := &VirtualHost{Name: vhc.GetName()}
		for j, rtc := range vhc.GetRoutes() {
			r, err := compileRoute(rtc)
			if err != nil {
				return nil, fmt.Errorf("virtual_hosts[%d].routes[%d]: %w", i, j, err)
			}
			vh.Routes = append(vh.Routes, r)
		}
		for _, d := range vhc.GetDomains() {
			d = strings.ToLower(d)
			if other, dup := seen[d]; dup {
				return nil, fmt.Errorf("virtual_hosts[%d].domains: domain %q is also used by virtual host %q", i, d, other)
			}
			seen[d] = vh.Name
			switch {
			case d == "*":
				t.any = vh
			case strings.HasPrefix(d, "*"):
				t.suffixes = append(t.suffixes, wildcard{d[1:], vh})
			case strings.HasSuffix(d, "*"):
				t.prefixes = append(t.prefixes, wildcard{d[:len(d)-1], vh})
			default:
				t.exact[d] = vh
			}
		}
	}
	// Longer wildcards are more specific and win, as in Envoy.
	sort.SliceStable(t.suffixes, func(a, b int) bool { return len(t.suffixes[a].part) > len(t.suffixes[b].part) })
	sort.SliceStable(t.prefixes, func(a, b int) bool { return len(t.prefixes[a].part) > len(t.prefixes[b].part) })
	return t, nil
}

func compileRoute(rc *routev3.Route) (*Route, error) {
	r := &Route{Name: rc.GetName()}
	switch m := rc.GetMatch().GetPathSpecifier().(type) {
	case *routev3.RouteMatch_Prefix:
		r.prefix = m.Prefix
	case *routev3.RouteMatch_Path:
		r.path, r.exact = m.Path, true
	default:
		return nil, fmt.Errorf("match: path specifier %T is not supported by Outrigger", m)
	}
	switch a := rc.GetAction().(type) {
	case *routev3.Route_DirectResponse:
		r.Direct = &DirectResponse{Status: a.DirectResponse.GetStatus(), Body: a.DirectResponse.GetBody().GetInlineString()}
	default:
		return nil, fmt.Errorf("action %T is not supported by Outrigger", a)
	}
	return r, nil
}

// Match finds the route for a request's host (the :authority, port allowed)
// and path (query string allowed). It returns nil when nothing matches.
func (t *Table) Match(host, path string) *Route {
	vh := t.virtualHost(host)
	if vh == nil {
		return nil
	}
	if i := strings.IndexAny(path, "?#"); i >= 0 {
		path = path[:i]
	}
	for _, r := range vh.Routes {
		if r.exact {
			if path == r.path {
				return r
			}
		} else if strings.HasPrefix(path, r.prefix) {
			return r
		}
	}
	return nil
}

func (t *Table) virtualHost(host string) *VirtualHost {
	host = strings.ToLower(host)
	if vh, ok := t.exact[host]; ok {
		return vh
	}
	// A host with a port also matches domains written without it.
	if i := strings.LastIndexByte(host, ':'); i >= 0 && !strings.HasSuffix(host, "]") {
		if vh, ok := t.exact[host[:i]]; ok {
			return vh
		}
		host = host[:i]
	}
	for _, w := range t.suffixes {
		if len(host) > len(w.part) && strings.HasSuffix(host, w.part) {
			return w.vh
		}
	}
	for _, w := range t.prefixes {
		if len(host) > len(w.part) && strings.HasPrefix(host, w.part) {
			return w.vh
		}
	}
	return t.any
}

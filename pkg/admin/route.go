package admin

import (
	"fmt"
	"slices"
	"strings"
)

// HandlerFunc serves one admin endpoint. It reads the request (normalized
// path, decoded parameters) and answers only through w, the central writer
// that applies the admin's response conventions.
type HandlerFunc func(w *Response, r *Request)

// ParamKind says how a declared parameter is parsed and rendered on the home
// page.
type ParamKind int

const (
	// ParamFlag is presence-based: on when the name is given, whatever its
	// value (?usedonly=false is on). The home page shows a checkbox.
	ParamFlag ParamKind = iota
	// ParamString takes free text; an empty value counts as absent, because
	// the home page's forms submit every input even when left blank.
	ParamString
	// ParamEnum takes one of Param.Values; an empty value counts as absent.
	// The home page shows a drop-down list.
	ParamEnum
)

// Param documents one query parameter of a route. It feeds /help and the
// home page's forms, and tells the dispatcher which empty values to drop.
type Param struct {
	Name   string
	Help   string
	Kind   ParamKind
	Values []string // the choices of a ParamEnum, in display order
}

// Route is one entry of the admin's route table.
type Route struct {
	// Path is matched exactly against the normalized request path.
	Path string
	// Help is the one-line description shown by /help and the home page.
	Help string
	// Params documents the parameters the endpoint understands, for /help,
	// the home page and the dropping of empty values. The handler still
	// receives every parameter given, declared or not (/runtime_modify
	// takes arbitrary keys).
	Params []Param
	// Mutates marks endpoints that change the server: they run only for
	// POST, and any other method gets 400 with no effect.
	Mutates bool
	// Handler serves the endpoint.
	Handler HandlerFunc
	// Present, when set, says whether the endpoint exists right now: one
	// that comes and goes with the configuration (/tap exists while a tap
	// filter with admin_config does) is left out of /help and the home
	// page, and is 404, while it says false.
	Present func() bool
}

// checkRoutes validates a route table built from the families' contributions.
// A bad table is a programming error in this package, caught by its tests, so
// New panics on the error rather than serving an ambiguous table.
func checkRoutes(routes []Route) error {
	seen := make(map[string]bool, len(routes))
	for _, r := range routes {
		switch {
		case !strings.HasPrefix(r.Path, "/") || normalizePath(r.Path) != r.Path:
			return fmt.Errorf("route %q: path is not normalized", r.Path)
		case seen[r.Path]:
			return fmt.Errorf("route %q: registered twice", r.Path)
		case r.Handler == nil:
			return fmt.Errorf("route %q: no handler", r.Path)
		case r.Help == "":
			return fmt.Errorf("route %q: no help text", r.Path)
		}
		seen[r.Path] = true
		params := make(map[string]bool, len(r.Params))
		for _, p := range r.Params {
			if p.Name == "" || params[p.Name] {
				return fmt.Errorf("route %q: parameter %q is empty or repeated", r.Path, p.Name)
			}
			params[p.Name] = true
			if p.Kind == ParamEnum && len(p.Values) == 0 {
				return fmt.Errorf("route %q: enum parameter %q has no values", r.Path, p.Name)
			}
		}
	}
	return nil
}

// sortRoutes orders routes by path, the order of /help and the home page.
func sortRoutes(routes []Route) {
	slices.SortFunc(routes, func(a, b Route) int { return strings.Compare(a.Path, b.Path) })
}

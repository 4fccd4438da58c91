package extension

import (
	"cmp"
	"errors"
	"fmt"
	"slices"
	"strings"

	"google.golang.org/protobuf/proto"
)

// Extension is one extension Outrigger implements, as the registry, the
// configuration support check and /server_info's node.extensions see it.
type Extension struct {
	// Name is the proxy. spelling, e.g. "proxy.filters.http.router"; the
	// envoy. spelling names the same extension.
	Name string
	// Category is Envoy's extension category, e.g. "envoy.filters.http".
	Category string
	// TypeURLs are the typed_config type URLs that select the extension:
	// its config message's first.
	TypeURLs []string
	// Disabled is set by --disable-extensions: the extension stays linked
	// in but configuration may not use it.
	Disabled bool
	// Config is an empty config message of the extension's type: what a
	// filter named without typed_config is configured with.
	Config proto.Message
	// RouteConfig is an empty message of the extension's per-route
	// configuration type (typed_per_filter_config), nil when it takes
	// none; its type URL is among TypeURLs, as Envoy's factories list
	// both types.
	RouteConfig proto.Message
	// Factory builds the extension from its configuration. Its type is
	// the category's (httpfilter.Factory for HTTP filters); nil for the
	// extensions the server builds itself (the connection manager, the
	// access loggers, the stats sinks, the monitors).
	Factory any
}

// Registry is the set of extensions a server links in. It is a value, not
// package state, so that --disable-extensions affects only the server that
// owns it (and tests do not leak into each other).
type Registry struct {
	items []Extension
	// unsupported maps the Envoy extensions the proxy does not implement,
	// by canonical name (without envoy.), to why: what refusals quote.
	unsupported map[string]string
}

// The prefixes of the two spellings of extension names and categories.
const (
	proxyPrefix = "proxy."
	envoyPrefix = "envoy."
)

// typeURLPrefix is the conventional type URL prefix; resolution only looks at
// what follows the last '/', as protobuf's resolvers do.
const typeURLPrefix = "type.googleapis.com/"

// New returns a registry of the given extensions, none disabled. Two
// extensions may not share a name or a type URL within a category (one
// config type may select extensions of two categories, as the transport
// sockets' downstream and upstream factories share theirs).
func New(items ...Extension) (*Registry, error) {
	r := &Registry{}
	names, urls := map[string]bool{}, map[string]bool{}
	for _, x := range items {
		key := canonicalName(x.Category) + "/" + canonicalName(x.Name)
		if names[key] {
			return nil, fmt.Errorf("extension %s is registered twice", x.Name)
		}
		names[key] = true
		for _, u := range x.TypeURLs {
			k := canonicalName(x.Category) + "/" + TypeName(u)
			if urls[k] {
				return nil, fmt.Errorf("type %s selects two extensions", TypeName(u))
			}
			urls[k] = true
		}
		x.Disabled = false
		r.items = append(r.items, cloneExtension(x))
	}
	return r, nil
}

// Of is the registry entry of an extension selected by the type of its
// config message: name in the proxy. spelling, category, config and factory.
func Of(name, category string, config proto.Message, factory any) Extension {
	return Extension{Name: name, Category: category, TypeURLs: []string{TypeURL(config)}, Config: config, Factory: factory}
}

// WithRouteConfig returns x taking per-route configuration of m's type:
// the HTTP filters whose factory is also an httpfilter.RouteFactory. A
// type other than the extension's config type selects it too.
func (x Extension) WithRouteConfig(m proto.Message) Extension {
	x.RouteConfig = m
	if u := TypeURL(m); !slices.Contains(x.TypeURLs, u) {
		x.TypeURLs = append(slices.Clone(x.TypeURLs), u)
	}
	return x
}

// TypeURL is the canonical type URL of m's type.
func TypeURL(m proto.Message) string {
	return typeURLPrefix + string(proto.MessageName(m))
}

// TypeName is the message name a type URL designates.
func TypeName(typeURL string) string {
	return typeURL[strings.LastIndexByte(typeURL, '/')+1:]
}

// Disable marks the extensions named by --disable-extensions items as
// disabled. Each item is "<category>/<name>"; the category and the name may
// each use the envoy. or the proxy. spelling. As in Envoy, a name that
// matches no extension only produces a warning; an item without '/' or with
// an empty side is an error, and then nothing is disabled. Blank items (from
// a trailing comma) are skipped.
func (e *Registry) Disable(names []string) (warnings []string, err error) {
	type target struct{ category, name, item string }
	var (
		targets []target
		errs    []error
	)
	for _, raw := range names {
		item := strings.TrimSpace(raw)
		if item == "" {
			continue
		}
		category, name, ok := strings.Cut(item, "/")
		if !ok || category == "" || name == "" {
			errs = append(errs, fmt.Errorf("invalid --disable-extensions item %q: expected <category>/<name>", item))
			continue
		}
		targets = append(targets, target{category: category, name: name, item: item})
	}
	if len(errs) > 0 {
		return nil, errors.Join(errs...)
	}
	for _, t := range targets {
		i := slices.IndexFunc(e.items, func(x Extension) bool {
			return sameName(x.Category, t.category) && sameName(x.Name, t.name)
		})
		if i < 0 {
			// Envoy's own wording, so operators recognise it.
			warnings = append(warnings, fmt.Sprintf("failed to disable invalid extension name '%s'", t.item))
			continue
		}
		e.items[i].Disabled = true
	}
	return warnings, nil
}

// sameName reports whether two extension names or categories are equal once
// the envoy./proxy. spelling difference is ignored.
func sameName(a, b string) bool {
	return canonicalName(a) == canonicalName(b)
}

// canonicalName strips the envoy. or proxy. prefix.
func canonicalName(s string) string {
	if rest, ok := strings.CutPrefix(s, proxyPrefix); ok {
		return rest
	}
	if rest, ok := strings.CutPrefix(s, envoyPrefix); ok {
		return rest
	}
	return s
}

// List returns a copy of every extension, sorted by category then name, for
// /server_info.
func (e *Registry) List() []Extension {
	out := make([]Extension, len(e.items))
	for i, x := range e.items {
		out[i] = cloneExtension(x)
	}
	slices.SortFunc(out, func(a, b Extension) int {
		return cmp.Or(cmp.Compare(a.Category, b.Category), cmp.Compare(a.Name, b.Name))
	})
	return out
}

// Lookup finds the extension selected by a typed_config type URL. Like
// protobuf's resolvers, it compares only the message name after the last
// '/', so any URL prefix works.
func (e *Registry) Lookup(typeURL string) (Extension, bool) {
	want := TypeName(typeURL)
	for _, x := range e.items {
		for _, u := range x.TypeURLs {
			if TypeName(u) == want {
				return cloneExtension(x), true
			}
		}
	}
	return Extension{}, false
}

// LookupIn finds the extension of category selected by a typed_config
// type URL, else whichever Lookup finds (whose category then differs).
func (e *Registry) LookupIn(category, typeURL string) (Extension, bool) {
	want := TypeName(typeURL)
	for _, x := range e.items {
		if !sameName(x.Category, category) {
			continue
		}
		for _, u := range x.TypeURLs {
			if TypeName(u) == want {
				return cloneExtension(x), true
			}
		}
	}
	return e.Lookup(typeURL)
}

// ByName finds an extension of category by its name, in either spelling:
// how a filter configured without typed_config is resolved.
func (e *Registry) ByName(category, name string) (Extension, bool) {
	for _, x := range e.items {
		if sameName(x.Category, category) && sameName(x.Name, name) {
			return cloneExtension(x), true
		}
	}
	return Extension{}, false
}

// cloneExtension copies x so callers cannot change the registry through the
// TypeURLs slice.
func cloneExtension(x Extension) Extension {
	x.TypeURLs = slices.Clone(x.TypeURLs)
	return x
}

package bootstrap

import (
	"cmp"
	"errors"
	"fmt"
	"slices"
	"strings"

	metricsv3 "github.com/envoyproxy/go-control-plane/envoy/config/metrics/v3"
	filev3 "github.com/envoyproxy/go-control-plane/envoy/extensions/access_loggers/file/v3"
	healthcheckv3 "github.com/envoyproxy/go-control-plane/envoy/extensions/filters/http/health_check/v3"
	routerv3 "github.com/envoyproxy/go-control-plane/envoy/extensions/filters/http/router/v3"
	hcmv3 "github.com/envoyproxy/go-control-plane/envoy/extensions/filters/network/http_connection_manager/v3"
	connectionsv3 "github.com/envoyproxy/go-control-plane/envoy/extensions/resource_monitors/downstream_connections/v3"
	fixedheapv3 "github.com/envoyproxy/go-control-plane/envoy/extensions/resource_monitors/fixed_heap/v3"
	upstreamhttpv3 "github.com/envoyproxy/go-control-plane/envoy/extensions/upstreams/http/v3"
	"google.golang.org/protobuf/proto"
)

// Extension is one extension Outrigger implements, as /server_info lists it
// under node.extensions.
type Extension struct {
	// Name is the proxy. spelling, e.g. "proxy.filters.http.router"; the
	// envoy. spelling names the same extension.
	Name string
	// Category is Envoy's extension category, e.g. "envoy.filters.http".
	Category string
	// TypeURLs are the typed_config type URLs that select the extension.
	TypeURLs []string
	// Disabled is set by --disable-extensions: the extension stays linked
	// in but configuration may not use it.
	Disabled bool
}

// Extensions is the registry of the extensions Outrigger implements. It is
// a value, not package state, so that --disable-extensions affects only the
// server that owns it (and tests do not leak into each other).
type Extensions struct {
	items []Extension
}

// The prefixes of the two spellings of extension names and categories.
const (
	proxyPrefix = "proxy."
	envoyPrefix = "envoy."
)

// typeURLPrefix is the conventional type URL prefix; resolution only looks at
// what follows the last '/', as protobuf's resolvers do.
const typeURLPrefix = "type.googleapis.com/"

// DefaultExtensions returns a new registry of every extension Outrigger
// implements, none disabled. Referencing the config messages here also
// links their packages in, which registers their types so that typed_config
// values of these types can be decoded.
func DefaultExtensions() *Extensions {
	return &Extensions{items: []Extension{
		extension("proxy.access_loggers.file", "envoy.access_loggers", &filev3.FileAccessLog{}),
		extension("proxy.filters.http.health_check", "envoy.filters.http", &healthcheckv3.HealthCheck{}),
		extension("proxy.filters.http.router", "envoy.filters.http", &routerv3.Router{}),
		extension("proxy.filters.network.http_connection_manager", "envoy.filters.network", &hcmv3.HttpConnectionManager{}),
		extension("proxy.upstreams.http.http_protocol_options", "envoy.upstreams.http.http_protocol_options", &upstreamhttpv3.HttpProtocolOptions{}),
		extension("proxy.stat_sinks.statsd", "envoy.stats_sinks", &metricsv3.StatsdSink{}),
		extension("proxy.stat_sinks.dog_statsd", "envoy.stats_sinks", &metricsv3.DogStatsdSink{}),
		extension("proxy.stat_sinks.hystrix", "envoy.stats_sinks", &metricsv3.HystrixSink{}),
		extension("proxy.resource_monitors.fixed_heap", "envoy.resource_monitors", &fixedheapv3.FixedHeapConfig{}),
		extension("proxy.resource_monitors.downstream_connections", "envoy.resource_monitors", &connectionsv3.DownstreamConnectionsConfig{}),
	}}
}

// extension is the registry entry of an extension selected by the type of
// its config message.
func extension(name, category string, config proto.Message) Extension {
	return Extension{Name: name, Category: category, TypeURLs: []string{typeURLOf(config)}}
}

// typeURLOf is the canonical type URL of m's type.
func typeURLOf(m proto.Message) string {
	return typeURLPrefix + string(proto.MessageName(m))
}

// typeNameOf is the message name a type URL designates.
func typeNameOf(typeURL string) string {
	return typeURL[strings.LastIndexByte(typeURL, '/')+1:]
}

// Disable marks the extensions named by --disable-extensions items as
// disabled. Each item is "<category>/<name>"; the category and the name may
// each use the envoy. or the proxy. spelling. As in Envoy, a name that
// matches no extension only produces a warning; an item without '/' or with
// an empty side is an error, and then nothing is disabled. Blank items (from
// a trailing comma) are skipped.
func (e *Extensions) Disable(names []string) (warnings []string, err error) {
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
func (e *Extensions) List() []Extension {
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
func (e *Extensions) Lookup(typeURL string) (Extension, bool) {
	want := typeNameOf(typeURL)
	for _, x := range e.items {
		for _, u := range x.TypeURLs {
			if typeNameOf(u) == want {
				return cloneExtension(x), true
			}
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

// Package cache is the HTTP cache filter (envoy.filters.http.cache): it
// answers GET and HEAD requests from stored responses while they are
// fresh, validates stale ones with the upstream (If-None-Match,
// If-Modified-Since; a 304 serves the stored body), and stores the
// cacheable responses that pass through, with RFC 9111's rules as Envoy's
// filter implements them. The storage is an extension of its own
// (category envoy.http.cache, such as the simple in-memory cache of
// package simple), found through the registry from typed_config.
package cache

import (
	"errors"
	"fmt"
	"time"

	routev3 "github.com/envoyproxy/go-control-plane/envoy/config/route/v3"
	cachev3 "github.com/envoyproxy/go-control-plane/envoy/extensions/filters/http/cache/v3"
	"google.golang.org/protobuf/proto"
	"google.golang.org/protobuf/types/known/anypb"

	"github.com/outrigger-dev/outrigger/pkg/proxy/extension"
	"github.com/outrigger-dev/outrigger/pkg/proxy/httpfilter"
	"github.com/outrigger-dev/outrigger/pkg/proxy/router"
)

// Name is the filter's name in the proxy. spelling.
const Name = "proxy.filters.http.cache"

// StorageCategory is Envoy's extension category of the cache storages.
const StorageCategory = "envoy.http.cache"

// detailsFromCache is the %RESPONSE_CODE_DETAILS% of a response served
// from the cache, Envoy's.
const detailsFromCache = "cache.response_from_cache_filter"

// Factory builds the filter.
type Factory struct{}

var _ httpfilter.Factory = Factory{}

// filterConfig is the compiled filter.
type filterConfig struct {
	disabled bool
	store    Store
	// varyAllowed are the allowed_vary_headers.
	varyAllowedHeaders []router.StringMatch
	// maxBody is max_body_bytes, 0 for no limit of the filter's own.
	maxBody             int
	ignoreRequestCC     bool
	excludeScheme       bool
	excludeHost         bool
	queryIncluded       []queryMatcher
	queryExcluded       []queryMatcher
	filterQueryInTheKey bool
	now                 func() time.Time
}

// Compile implements httpfilter.Factory.
func (Factory) Compile(config proto.Message, ctx httpfilter.Context) (httpfilter.Config, error) {
	c, ok := config.(*cachev3.CacheConfig)
	if !ok {
		return nil, errors.New("not a CacheConfig configuration")
	}
	if c.GetDisabled().GetValue() {
		// As Envoy: a disabled filter is a no-op, and needs no storage.
		return &filterConfig{disabled: true}, nil
	}
	var errs []error
	fc := &filterConfig{
		maxBody:         int(c.GetMaxBodyBytes()),
		ignoreRequestCC: c.GetIgnoreRequestCacheControlHeader(),
		now:             ctx.Now,
	}
	if fc.now == nil {
		fc.now = time.Now
	}
	store, err := compileStorage(c.GetTypedConfig(), ctx)
	if err != nil {
		errs = append(errs, err)
	}
	fc.store = store
	for i, m := range c.GetAllowedVaryHeaders() {
		sm, err := router.CompileStringMatch(m)
		if err != nil {
			errs = append(errs, fmt.Errorf("allowed_vary_headers[%d].%w", i, err))
			continue
		}
		fc.varyAllowedHeaders = append(fc.varyAllowedHeaders, sm)
	}
	if kp := c.GetKeyCreatorParams(); kp != nil {
		fc.excludeScheme, fc.excludeHost = kp.GetExcludeScheme(), kp.GetExcludeHost()
		fc.queryIncluded, errs = compileQueryMatchers("key_creator_params.query_parameters_included", kp.GetQueryParametersIncluded(), errs)
		fc.queryExcluded, errs = compileQueryMatchers("key_creator_params.query_parameters_excluded", kp.GetQueryParametersExcluded(), errs)
		fc.filterQueryInTheKey = len(fc.queryIncluded) > 0 || len(fc.queryExcluded) > 0
	}
	if err := errors.Join(errs...); err != nil {
		return nil, err
	}
	return fc, nil
}

// compileStorage resolves and builds typed_config, the cache storage.
func compileStorage(tc *anypb.Any, ctx httpfilter.Context) (Store, error) {
	if tc == nil {
		return nil, errors.New("typed_config: required unless disabled is true")
	}
	if ctx.Extensions == nil {
		return nil, errors.New("typed_config: the server has no extension registry")
	}
	ext, msg, err := ctx.Extensions.Resolve(extension.Ref{
		Kind: "http cache", Category: StorageCategory, Config: tc,
	}, false)
	if err != nil {
		// CacheConfig.typed_config is the Any itself: Resolve's errors
		// already name it.
		return nil, err
	}
	f, ok := ext.Factory.(StoreFactory)
	if !ok {
		return nil, fmt.Errorf("typed_config: extension %q is not an HTTP cache", ext.Name)
	}
	store, err := f.NewStore(msg, ctx)
	if err != nil {
		return nil, httpfilter.PrefixErrors("typed_config.", err)
	}
	return store, nil
}

// queryMatcher is a compiled QueryParameterMatcher of key_creator_params:
// a parameter name, and a matcher of its value unless any value (or
// present_match) will do.
type queryMatcher struct {
	name  string
	value *router.StringMatch
}

// compileQueryMatchers compiles the matchers at field, appending their
// errors to errs.
func compileQueryMatchers(field string, ms []*routev3.QueryParameterMatcher, errs []error) ([]queryMatcher, []error) {
	var out []queryMatcher
	for i, m := range ms {
		if m.GetName() == "" {
			errs = append(errs, fmt.Errorf("%s[%d].name: a parameter name is required", field, i))
			continue
		}
		qm := queryMatcher{name: m.GetName()}
		if sm := m.GetStringMatch(); sm != nil {
			c, err := router.CompileStringMatch(sm)
			if err != nil {
				errs = append(errs, fmt.Errorf("%s[%d].string_match.%w", field, i, err))
				continue
			}
			qm.value = &c
		}
		out = append(out, qm)
	}
	return out, errs
}

// matches reports whether the parameter name=value matches.
func (q *queryMatcher) matches(name, value string) bool {
	return name == q.name && (q.value == nil || q.value.Matches(value))
}

// NewFilter implements httpfilter.Config.
func (c *filterConfig) NewFilter() httpfilter.Filter {
	if c.disabled {
		return noop{}
	}
	return &filter{c: c}
}

// noop is the disabled filter.
type noop struct{}

// Package headertometadata is the header-to-metadata HTTP filter
// (envoy.filters.http.header_to_metadata): its request_rules turn request
// headers (and their absence) into dynamic metadata, its response_rules do
// the same with response headers, optionally removing the header, as
// Envoy's filter does. A route's per-route Config replaces the filter's.
package headertometadata

import (
	"errors"
	"fmt"
	"strings"

	h2mv3 "github.com/envoyproxy/go-control-plane/envoy/extensions/filters/http/header_to_metadata/v3"
	"google.golang.org/protobuf/proto"

	"github.com/outrigger-dev/outrigger/pkg/proxy/httpfilter"
	"github.com/outrigger-dev/outrigger/pkg/proxy/router"
)

// Name is the filter's name in the proxy. spelling.
const Name = "proxy.filters.http.header_to_metadata"

// defaultNamespace is the namespace of pairs that name none: the filter's
// Envoy name, as in Envoy.
const defaultNamespace = "envoy.filters.http.header_to_metadata"

// maxValueLen is Envoy's bound on a value put into metadata: longer
// values are skipped.
const maxValueLen = 8 * 1024

// Factory builds the filter and compiles its per-route configurations.
type Factory struct{}

var (
	_ httpfilter.Factory      = Factory{}
	_ httpfilter.RouteFactory = Factory{}
)

// Compile implements httpfilter.Factory.
func (Factory) Compile(config proto.Message, ctx httpfilter.Context) (httpfilter.Config, error) {
	c, ok := config.(*h2mv3.Config)
	if !ok {
		return nil, errors.New("not a header_to_metadata Config")
	}
	rs, err := compileRules(c, ctx)
	if err != nil {
		return nil, err
	}
	return &filterConfig{name: ctx.Name, own: rs}, nil
}

// CompileRoute implements httpfilter.RouteFactory: the per-route form is
// the same Config, which replaces the filter's for the route.
func (Factory) CompileRoute(config proto.Message, ctx httpfilter.Context) (httpfilter.RouteConfig, error) {
	c, ok := config.(*h2mv3.Config)
	if !ok {
		return nil, errors.New("not a header_to_metadata Config")
	}
	return compileRules(c, ctx)
}

// rules are a compiled Config.
type rules struct {
	request, response []rule
	// stats are the Config's own counters (stat_prefix), nil without:
	// a route's Config counts under its own stat_prefix, as in Envoy.
	stats *filterStats
}

// rule is one compiled Rule.
type rule struct {
	header string
	// cookie, when set instead of header, names a request cookie whose
	// value the rule reads (an empty one counts as missing, as Envoy's
	// CookieValueSelector has it).
	cookie           string
	present, missing *pair
	remove           bool
}

// pair is one compiled KeyValuePair.
type pair struct {
	namespace, key, value string
	rewrite               *router.RegexRewrite
	typ                   h2mv3.Config_ValueType
	base64                bool
}

func compileRules(c *h2mv3.Config, ctx httpfilter.Context) (*rules, error) {
	if c.GetStatPrefix() != "" && ctx.Stats == nil {
		return nil, errors.New("stat_prefix: no stat store")
	}
	if len(c.GetRequestRules()) == 0 && len(c.GetResponseRules()) == 0 {
		return nil, errors.New("request_rules: at least one of request_rules or response_rules must be set")
	}
	req, err := compileList(c.GetRequestRules(), "request_rules", true)
	if err != nil {
		return nil, err
	}
	resp, err := compileList(c.GetResponseRules(), "response_rules", false)
	if err != nil {
		return nil, err
	}
	return &rules{request: req, response: resp, stats: newFilterStats(ctx.Stats, c.GetStatPrefix())}, nil
}

// compileList compiles the rules of one direction; cookies are read from
// requests only (a response carries set-cookie, not cookie).
func compileList(list []*h2mv3.Config_Rule, field string, request bool) ([]rule, error) {
	out := make([]rule, 0, len(list))
	for i, r := range list {
		path := fmt.Sprintf("%s[%d]", field, i)
		switch {
		case r.GetCookie() != "" && r.GetHeader() != "":
			return nil, fmt.Errorf("%s: Cannot specify both header and cookie", path)
		case r.GetCookie() != "" && !request:
			return nil, fmt.Errorf("%s.cookie: not supported by Outrigger on response rules (a response carries no cookie header)", path)
		case r.GetCookie() != "" && r.GetRemove():
			return nil, fmt.Errorf("%s.remove: Cannot specify remove for cookie", path)
		case r.GetCookie() == "" && r.GetHeader() == "":
			return nil, fmt.Errorf("%s.header: one of cookie or header must be set", path)
		}
		if r.GetOnHeaderPresent() == nil && r.GetOnHeaderMissing() == nil {
			return nil, fmt.Errorf("%s: one of on_header_present or on_header_missing must be set", path)
		}
		ru := rule{header: strings.ToLower(r.GetHeader()), cookie: r.GetCookie(), remove: r.GetRemove()}
		var err error
		if ru.present, err = compilePair(r.GetOnHeaderPresent()); err != nil {
			return nil, fmt.Errorf("%s.on_header_present.%w", path, err)
		}
		if ru.missing, err = compilePair(r.GetOnHeaderMissing()); err != nil {
			return nil, fmt.Errorf("%s.on_header_missing.%w", path, err)
		}
		if ru.missing != nil && ru.missing.value == "" {
			return nil, fmt.Errorf("%s.on_header_missing.value: must be set (the header gives no value)", path)
		}
		out = append(out, ru)
	}
	return out, nil
}

func compilePair(kv *h2mv3.Config_KeyValuePair) (*pair, error) {
	if kv == nil {
		return nil, nil
	}
	if kv.GetKey() == "" {
		return nil, errors.New("key: must not be empty")
	}
	p := &pair{
		namespace: kv.GetMetadataNamespace(),
		key:       kv.GetKey(),
		value:     kv.GetValue(),
		typ:       kv.GetType(),
		base64:    kv.GetEncode() == h2mv3.Config_BASE64,
	}
	if p.namespace == "" {
		p.namespace = defaultNamespace
	}
	if rr := kv.GetRegexValueRewrite(); rr != nil {
		if p.value != "" {
			return nil, errors.New("regex_value_rewrite: cannot be combined with value")
		}
		rw, err := router.CompileRegexRewrite(rr)
		if err != nil {
			return nil, fmt.Errorf("regex_value_rewrite.%s", strings.TrimPrefix(err.Error(), "regex_rewrite."))
		}
		p.rewrite = rw
	}
	return p, nil
}

// Package jsontometadata is the JSON to metadata HTTP filter
// (envoy.filters.http.json_to_metadata): it reads the JSON body of a
// request (before it is routed) or of a response, and writes the values
// its rules select, or the rules' fallbacks when the body lacks them or is
// no JSON, into the stream's dynamic metadata, where %DYNAMIC_METADATA%,
// RBAC, rate limit descriptors and the load balancers' subsets read them.
// It counts its work in http.<stat_prefix>.json_to_metadata.*.
package jsontometadata

import (
	"errors"
	"fmt"

	j2mv3 "github.com/envoyproxy/go-control-plane/envoy/extensions/filters/http/json_to_metadata/v3"
	matcherv3 "github.com/envoyproxy/go-control-plane/envoy/type/matcher/v3"
	"google.golang.org/protobuf/proto"
	"google.golang.org/protobuf/types/known/structpb"

	"github.com/outrigger-dev/outrigger/pkg/proxy/httpfilter"
	"github.com/outrigger-dev/outrigger/pkg/proxy/router"
	"github.com/outrigger-dev/outrigger/pkg/proxy/stats"
)

// Name is the filter's name in the proxy. spelling.
const Name = "proxy.filters.http.json_to_metadata"

// defaultNamespace is the namespace of a KeyValuePair without one.
const defaultNamespace = "envoy.filters.http.json_to_metadata"

// maxValueLen is the longest string value written, as Envoy's
// MAX_PAYLOAD_VALUE_LEN: a longer one counts as missing.
const maxValueLen = 8 * 1024

// maxBody is the most of a body the filter holds (Envoy's default buffer
// limit): a longer request body is answered 413, as Envoy's decoder
// buffer limit does.
const maxBody = 1 << 20

// Factory builds the filter.
type Factory struct{}

var _ httpfilter.Factory = Factory{}

// keyValue is a compiled KeyValuePair.
type keyValue struct {
	namespace, key string
	// value is the constant value, nil to use the selected one.
	value    *structpb.Value
	typ      j2mv3.JsonToMetadata_ValueType
	preserve bool
}

// rule is a compiled Rule.
type rule struct {
	selectors                   []string
	onPresent, onMissing, onErr *keyValue
}

// matchRules is a compiled MatchRules: the rules of one direction and
// the content types whose bodies they read.
type matchRules struct {
	rules        []rule
	contentTypes map[string]bool
	regex        *router.StringMatcher
	allowEmpty   bool
}

// counters are one direction's stats.
type counters struct {
	success, mismatched, noBody, invalid *stats.Counter
}

// filterConfig is the compiled filter.
type filterConfig struct {
	request, response *matchRules
	rq, resp          counters
}

// Compile implements httpfilter.Factory.
func (Factory) Compile(config proto.Message, ctx httpfilter.Context) (httpfilter.Config, error) {
	c, ok := config.(*j2mv3.JsonToMetadata)
	if !ok {
		return nil, errors.New("not a JsonToMetadata configuration")
	}
	if ctx.Stats == nil {
		return nil, errors.New("no stat store")
	}
	if len(c.GetRequestRules().GetRules()) == 0 && len(c.GetResponseRules().GetRules()) == 0 {
		return nil, errors.New("request_rules: the filter needs rules in request_rules or response_rules")
	}
	f := &filterConfig{}
	var err1, err2 error
	if c.GetRequestRules() != nil {
		f.request, err1 = compileMatchRules(c.GetRequestRules(), "request_rules")
	}
	if c.GetResponseRules() != nil {
		f.response, err2 = compileMatchRules(c.GetResponseRules(), "response_rules")
	}
	if err := errors.Join(err1, err2); err != nil {
		return nil, err
	}
	sc := ctx.Stats.Scope(ctx.StatPrefix + "json_to_metadata.")
	f.rq = counters{sc.Counter("rq_success"), sc.Counter("rq_mismatched_content_type"), sc.Counter("rq_no_body"), sc.Counter("rq_invalid_json_body")}
	f.resp = counters{sc.Counter("resp_success"), sc.Counter("resp_mismatched_content_type"), sc.Counter("resp_no_body"), sc.Counter("resp_invalid_json_body")}
	return f, nil
}

// compileMatchRules compiles one direction's rules; errors name the field
// from field.
func compileMatchRules(m *j2mv3.JsonToMetadata_MatchRules, field string) (*matchRules, error) {
	out := &matchRules{allowEmpty: m.GetAllowEmptyContentType(), contentTypes: map[string]bool{}}
	for _, ct := range m.GetAllowContentTypes() {
		out.contentTypes[ct] = true
	}
	if re := m.GetAllowContentTypesRegex(); re != nil {
		sm, err := router.CompileStringMatcher(&matcherv3.StringMatcher{MatchPattern: &matcherv3.StringMatcher_SafeRegex{SafeRegex: re}})
		if err != nil {
			return nil, fmt.Errorf("%s.allow_content_types_regex.%w", field, err)
		}
		out.regex = &sm
	}
	if len(out.contentTypes) == 0 && out.regex == nil {
		// Envoy's default: JSON only.
		out.contentTypes["application/json"] = true
	}
	var errs []error
	for i, r := range m.GetRules() {
		cr, err := compileRule(r)
		if err != nil {
			errs = append(errs, fmt.Errorf("%s.rules[%d].%w", field, i, err))
			continue
		}
		out.rules = append(out.rules, cr)
	}
	return out, errors.Join(errs...)
}

// compileRule compiles a Rule with Envoy's checks.
func compileRule(r *j2mv3.JsonToMetadata_Rule) (rule, error) {
	if r.GetOnPresent() == nil && r.GetOnMissing() == nil {
		return rule{}, errors.New("on_present: neither on_present nor on_missing is set")
	}
	if r.GetOnMissing() != nil && r.GetOnMissing().GetValue() == nil {
		return rule{}, errors.New("on_missing.value: on_missing needs a value")
	}
	if r.GetOnError() != nil && r.GetOnError().GetValue() == nil {
		return rule{}, errors.New("on_error.value: on_error needs a value")
	}
	if len(r.GetSelectors()) == 0 {
		return rule{}, errors.New("selectors: at least one selector is required")
	}
	var out rule
	for i, s := range r.GetSelectors() {
		if s.GetKey() == "" {
			return rule{}, fmt.Errorf("selectors[%d].key: required", i)
		}
		out.selectors = append(out.selectors, s.GetKey())
	}
	for _, kv := range []struct {
		p     *j2mv3.JsonToMetadata_KeyValuePair
		dst   **keyValue
		field string
	}{{r.GetOnPresent(), &out.onPresent, "on_present"}, {r.GetOnMissing(), &out.onMissing, "on_missing"}, {r.GetOnError(), &out.onErr, "on_error"}} {
		if kv.p == nil {
			continue
		}
		if kv.p.GetKey() == "" {
			return rule{}, fmt.Errorf("%s.key: required", kv.field)
		}
		ns := kv.p.GetMetadataNamespace()
		if ns == "" {
			ns = defaultNamespace
		}
		*kv.dst = &keyValue{namespace: ns, key: kv.p.GetKey(), value: kv.p.GetValue(), typ: kv.p.GetType(), preserve: kv.p.GetPreserveExistingMetadataValue()}
	}
	return out, nil
}

// contentTypeAllowed reports whether a body of content type ct is read.
func (m *matchRules) contentTypeAllowed(ct string) bool {
	if ct == "" {
		return m.allowEmpty
	}
	return m.contentTypes[ct] || (m.regex != nil && m.regex.Match(ct))
}

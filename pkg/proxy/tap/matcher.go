// Package tap is the tap core shared by the tap filter and /tap: compiled
// match predicates (envoy.config.common.matcher.v3.MatchPredicate), the
// trace of one HTTP exchange in Envoy's envoy.data.tap.v3 form (buffered
// or streamed in segments), the output sinks (the /tap stream, file_per_tap) and the registry of the
// filters configured with admin_config, which holds the one attached
// admin session.
package tap

import (
	"errors"
	"fmt"

	matcherv3 "github.com/envoyproxy/go-control-plane/envoy/config/common/matcher/v3"
	tapv3 "github.com/envoyproxy/go-control-plane/envoy/config/tap/v3"
	"google.golang.org/protobuf/proto"

	"github.com/outrigger-dev/outrigger/pkg/proxy/router"
)

// Headers is a captured header map in arrival order, names in lower case.
type Headers []Header

// Header is one captured header field.
type Header struct{ Name, Value string }

// Get implements router.HeaderGetter: several values are joined by ",",
// as Envoy matches them.
func (h Headers) Get(name string) (string, bool) {
	var out string
	found := false
	for _, f := range h {
		if f.Name != name {
			continue
		}
		if found {
			out += "," + f.Value
		} else {
			out, found = f.Value, true
		}
	}
	return out, found
}

// Exchange is what a matcher looks at: the headers and trailers of one
// request and its response. A nil map has not arrived (yet): a header
// matcher on it does not match, as Envoy's does not before its headers.
type Exchange struct {
	RequestHeaders, RequestTrailers, ResponseHeaders, ResponseTrailers Headers
	// bodies is the search of each generic body matcher (by its index).
	bodies []bodyProgress
}

// Matcher is a compiled match predicate.
type Matcher struct {
	kind    matchKind
	sub     []*Matcher
	headers router.HeaderMatch
	body    *bodyMatch
	// index is a body matcher's place in Exchange.bodies.
	index int
}

type matchKind uint8

const (
	matchAny matchKind = iota
	matchAnd
	matchOr
	matchNot
	matchRequestHeaders
	matchRequestTrailers
	matchResponseHeaders
	matchResponseTrailers
	matchBody
)

// Matches evaluates the predicate on a finished exchange.
func (m *Matcher) Matches(x *Exchange) bool {
	switch m.kind {
	case matchAnd:
		for _, s := range m.sub {
			if !s.Matches(x) {
				return false
			}
		}
		return true
	case matchOr:
		for _, s := range m.sub {
			if s.Matches(x) {
				return true
			}
		}
		return false
	case matchNot:
		return !m.sub[0].Matches(x)
	case matchRequestHeaders:
		return m.matchHeaders(x.RequestHeaders)
	case matchRequestTrailers:
		return m.matchHeaders(x.RequestTrailers)
	case matchResponseHeaders:
		return m.matchHeaders(x.ResponseHeaders)
	case matchResponseTrailers:
		return m.matchHeaders(x.ResponseTrailers)
	case matchBody:
		return m.index < len(x.bodies) && x.bodies[m.index].matched
	}
	return true
}

// matchHeaders is a header matcher on h, false while h has not arrived.
func (m *Matcher) matchHeaders(h Headers) bool {
	return h != nil && m.headers.Matches(headerRequest(h))
}

// headerRequest presents captured headers to a router.HeaderMatch, the
// pseudo-headers in the fields it answers them from.
func headerRequest(h Headers) *router.Request {
	r := &router.Request{Headers: h}
	r.Host, _ = h.Get(":authority")
	r.Path, _ = h.Get(":path")
	r.Method, _ = h.Get(":method")
	r.Scheme, _ = h.Get(":scheme")
	return r
}

// compileTapMatch compiles a TapConfig's predicate: match, or the
// deprecated match_config (the same message in the older package, which
// Envoy converts through the wire form). field is the path prefix of
// errors.
func compileTapMatch(tc *tapv3.TapConfig, field string) (*Matcher, error) {
	//lint:ignore SA1019 Envoy still accepts the deprecated match_config
	legacy := tc.GetMatchConfig()
	switch {
	case tc.GetMatch() != nil && legacy != nil:
		return nil, fmt.Errorf("%s: match and match_config are exclusive", field)
	case tc.GetMatch() != nil:
		return CompileMatch(tc.GetMatch(), field+".match")
	case legacy != nil:
		b, err := proto.Marshal(legacy)
		if err != nil {
			return nil, fmt.Errorf("%s.match_config: %w", field, err)
		}
		var mp matcherv3.MatchPredicate
		if err := proto.Unmarshal(b, &mp); err != nil {
			return nil, fmt.Errorf("%s.match_config: %w", field, err)
		}
		return CompileMatch(&mp, field+".match_config")
	}
	return nil, fmt.Errorf("%s: one of match or match_config is required", field)
}

// CompileMatch compiles a MatchPredicate; errors name the field path
// below field.
func CompileMatch(mp *matcherv3.MatchPredicate, field string) (*Matcher, error) {
	switch r := mp.GetRule().(type) {
	case *matcherv3.MatchPredicate_AnyMatch:
		if !r.AnyMatch {
			return nil, fmt.Errorf("%s.any_match: must be true", field)
		}
		return &Matcher{kind: matchAny}, nil
	case *matcherv3.MatchPredicate_AndMatch:
		return compileSet(matchAnd, r.AndMatch, field+".and_match")
	case *matcherv3.MatchPredicate_OrMatch:
		return compileSet(matchOr, r.OrMatch, field+".or_match")
	case *matcherv3.MatchPredicate_NotMatch:
		sub, err := CompileMatch(r.NotMatch, field+".not_match")
		if err != nil {
			return nil, err
		}
		return &Matcher{kind: matchNot, sub: []*Matcher{sub}}, nil
	case *matcherv3.MatchPredicate_HttpRequestHeadersMatch:
		return compileHeaders(matchRequestHeaders, r.HttpRequestHeadersMatch, field+".http_request_headers_match")
	case *matcherv3.MatchPredicate_HttpResponseHeadersMatch:
		return compileHeaders(matchResponseHeaders, r.HttpResponseHeadersMatch, field+".http_response_headers_match")
	case *matcherv3.MatchPredicate_HttpResponseTrailersMatch:
		return compileHeaders(matchResponseTrailers, r.HttpResponseTrailersMatch, field+".http_response_trailers_match")
	case *matcherv3.MatchPredicate_HttpRequestTrailersMatch:
		return compileHeaders(matchRequestTrailers, r.HttpRequestTrailersMatch, field+".http_request_trailers_match")
	case *matcherv3.MatchPredicate_HttpRequestGenericBodyMatch:
		return compileBody(true, r.HttpRequestGenericBodyMatch, field+".http_request_generic_body_match")
	case *matcherv3.MatchPredicate_HttpResponseGenericBodyMatch:
		return compileBody(false, r.HttpResponseGenericBodyMatch, field+".http_response_generic_body_match")
	case nil:
		return nil, fmt.Errorf("%s: a rule is required", field)
	}
	return nil, fmt.Errorf("%s: unknown rule", field)
}

func compileSet(kind matchKind, set *matcherv3.MatchPredicate_MatchSet, field string) (*Matcher, error) {
	if len(set.GetRules()) < 2 {
		return nil, errors.New(field + ".rules: at least 2 rules are required")
	}
	m := &Matcher{kind: kind}
	for i, r := range set.GetRules() {
		sub, err := CompileMatch(r, fmt.Sprintf("%s.rules[%d]", field, i))
		if err != nil {
			return nil, err
		}
		m.sub = append(m.sub, sub)
	}
	return m, nil
}

func compileHeaders(kind matchKind, hm *matcherv3.HttpHeadersMatch, field string) (*Matcher, error) {
	h, err := router.CompileHeaderMatch(hm.GetHeaders())
	if err != nil {
		return nil, fmt.Errorf("%s.%w", field, err)
	}
	return &Matcher{kind: kind, headers: h}, nil
}

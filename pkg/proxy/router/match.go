package router

import (
	"errors"
	"fmt"
	"regexp"
	"strconv"
	"strings"

	routev3 "github.com/envoyproxy/go-control-plane/envoy/config/route/v3"

	"github.com/outrigger-dev/outrigger/pkg/proxy/runtime"
)

// pathKind is how a route matches the path.
type pathKind uint8

const (
	pathPrefix pathKind = iota
	pathExact
	pathRegex
	pathSeparatedPrefix
	// pathConnect is connect_matcher: CONNECT requests, whatever their
	// path (an HTTP/1.1 CONNECT has none).
	pathConnect
	// pathTemplate is path_match_policy: a uri_template matcher, which
	// ignores case_sensitive (uritemplate.go).
	pathTemplate
)

// routeMatch is a compiled RouteMatch.
type routeMatch struct {
	kind pathKind
	// value is the prefix or path, lower case when !caseSensitive.
	value         string
	caseSensitive bool
	re            *regexp.Regexp
	tmpl          *URITemplate
	grpc          bool
	headers       HeaderMatch
	query         []queryMatcher
	// fraction is runtime_fraction: the share of requests the route
	// matches at all, nil for all of them.
	fraction *runtime.Fraction
	// required, when not 0, numbers a header (requiredName) without
	// which a header matcher fails: in a route table, a request without
	// it is turned away first (see numberHeaderNames).
	required     int
	requiredName string
	// dynamicMetadata are the dynamic_metadata matchers, all of which
	// must accept the stream's dynamic metadata (match_metadata.go).
	dynamicMetadata []MetadataMatch
	// filterState are the filter_state matchers (match_metadata.go).
	filterState []filterStateMatch
	// cookies are the cookie matchers (match_cookies.go).
	cookies []cookieMatch
	// tls is the tls_context matcher (match_tls.go), nil for none.
	tls *tlsMatch
}

// compileMatch compiles a RouteMatch; errors name the field below it.
func compileMatch(m *routev3.RouteMatch) (routeMatch, error) {
	rm := routeMatch{caseSensitive: true, grpc: m.GetGrpc() != nil}
	if cs := m.GetCaseSensitive(); cs != nil {
		rm.caseSensitive = cs.GetValue()
	}
	switch p := m.GetPathSpecifier().(type) {
	case *routev3.RouteMatch_Prefix:
		rm.kind, rm.value = pathPrefix, p.Prefix
	case *routev3.RouteMatch_Path:
		rm.kind, rm.value = pathExact, p.Path
	case *routev3.RouteMatch_PathSeparatedPrefix:
		if strings.ContainsAny(p.PathSeparatedPrefix, "?#") || strings.HasSuffix(p.PathSeparatedPrefix, "/") {
			return rm, fmt.Errorf("path_separated_prefix: %q must not contain '?' or '#' nor end with '/'", p.PathSeparatedPrefix)
		}
		rm.kind, rm.value = pathSeparatedPrefix, p.PathSeparatedPrefix
	case *routev3.RouteMatch_SafeRegex:
		re, err := compileRegex(p.SafeRegex)
		if err != nil {
			return rm, fmt.Errorf("safe_regex.%w", err)
		}
		rm.kind, rm.re = pathRegex, re
	case *routev3.RouteMatch_ConnectMatcher_:
		rm.kind = pathConnect
	case *routev3.RouteMatch_PathMatchPolicy:
		t, err := CompilePathMatchPolicy(p.PathMatchPolicy)
		if err != nil {
			return rm, fmt.Errorf("path_match_policy.%w", err)
		}
		rm.kind, rm.tmpl = pathTemplate, t
	case nil:
		return rm, errors.New("path_specifier: one of prefix, path, safe_regex, path_separated_prefix, connect_matcher or path_match_policy is required")
	default:
		return rm, fmt.Errorf("path_specifier: %s is not supported by Outrigger", oneofName(m.ProtoReflect(), "path_specifier"))
	}
	if !rm.caseSensitive {
		rm.value = asciiLower(rm.value)
	}
	var err error
	if rm.fraction, err = runtimeFraction(m.GetRuntimeFraction()); err != nil {
		return rm, fmt.Errorf("runtime_fraction.default_value.%w", err)
	}
	if rm.headers, err = CompileHeaderMatch(m.GetHeaders()); err != nil {
		return rm, err
	}
	for i, qm := range m.GetQueryParameters() {
		q, err := compileQueryMatcher(qm)
		if err != nil {
			return rm, fmt.Errorf("query_parameters[%d].%w", i, err)
		}
		rm.query = append(rm.query, q)
	}
	return rm, nil
}

// matches reports whether req matches: runtime_fraction first, then the
// path, headers and query parameters, as Envoy evaluates them.
func (m *routeMatch) matches(req *Request) bool {
	return m.matchesPath(req, pathOnly(req.Path))
}

// matchesPath is matches with the request's path without its query
// string, which a route table computes once for all its routes.
func (m *routeMatch) matchesPath(req *Request, path string) bool {
	if m.required != 0 {
		// Every check is pure, so which fails first does not matter.
		// The memo is read here without a call: routes in a row
		// often require the same header.
		if req.memo.on && req.memo.id == m.required {
			if !req.memo.ok {
				return false
			}
		} else if _, ok := req.regularHeader(m.requiredName, m.required); !ok {
			return false
		}
	}
	if m.fraction != nil && !m.fraction.Enabled(req.Runtime, req.RandomValue()) {
		return false
	}
	switch {
	case m.kind == pathConnect:
		// Only CONNECT requests match connect_matcher routes, as in
		// Envoy's ConnectRouteEntryImpl.
		if req.Method != "CONNECT" {
			return false
		}
	case req.Method == "CONNECT" && req.Path == "":
		// A CONNECT without a path matches no path matcher.
		return false
	case m.kind == pathTemplate:
		// Envoy's uri_template matcher reads the :path as received
		// (ignore_path_parameters_in_path_matching does not cut it).
		if !m.tmpl.Match(req.Path) {
			return false
		}
	case !m.matchPath(path):
		return false
	}
	if m.grpc {
		ct, _ := req.header("content-type")
		if !strings.HasPrefix(ct, "application/grpc") {
			return false
		}
	}
	if !m.headers.Matches(req) {
		return false
	}
	if len(m.dynamicMetadata) > 0 && !m.matchesMetadata(req) {
		return false
	}
	if len(m.filterState) > 0 && !m.matchesFilterState(req) {
		return false
	}
	if len(m.cookies) > 0 && !m.matchesCookies(req) {
		return false
	}
	if m.tls != nil && !m.tls.matches(req.TLS) {
		return false
	}
	if len(m.query) > 0 {
		q := query(req.Path)
		for i := range m.query {
			if !m.query[i].matches(q) {
				return false
			}
		}
	}
	return true
}

// matchPath matches the path without its query string.
func (m *routeMatch) matchPath(path string) bool {
	switch m.kind {
	case pathPrefix:
		return m.hasPrefix(path)
	case pathExact:
		if m.caseSensitive {
			return path == m.value
		}
		return asciiEqualFold(path, m.value)
	case pathSeparatedPrefix:
		return m.hasPrefix(path) && (len(path) == len(m.value) || path[len(m.value)] == '/')
	case pathRegex:
		return m.re.MatchString(path)
	}
	return false
}

func (m *routeMatch) hasPrefix(path string) bool {
	if len(path) < len(m.value) {
		return false
	}
	if m.caseSensitive {
		if len(m.value) == 1 {
			// The catch-all "/" without the comparison's call.
			return path[0] == m.value[0]
		}
		return path[:len(m.value)] == m.value
	}
	return asciiEqualFold(path[:len(m.value)], m.value)
}

// HeaderMatch is a compiled list of HeaderMatchers, as a route match
// holds them; the health_check filter uses it to recognise its requests
// exactly as routes match headers. The zero value matches every request.
type HeaderMatch struct {
	matchers []headerMatcher
}

// CompileHeaderMatch compiles a list of HeaderMatchers. Errors name the
// field path from the list, e.g. "headers[0].name".
func CompileHeaderMatch(hs []*routev3.HeaderMatcher) (HeaderMatch, error) {
	var m HeaderMatch
	for i, hm := range hs {
		h, err := compileHeaderMatcher(hm)
		if err != nil {
			return m, fmt.Errorf("headers[%d].%w", i, err)
		}
		m.matchers = append(m.matchers, h)
	}
	return m, nil
}

// CompileHeader compiles one HeaderMatcher into a HeaderMatch (an
// access-log header_filter holds one). Errors name the field below it.
func CompileHeader(h *routev3.HeaderMatcher) (HeaderMatch, error) {
	hm, err := compileHeaderMatcher(h)
	if err != nil {
		return HeaderMatch{}, err
	}
	return HeaderMatch{matchers: []headerMatcher{hm}}, nil
}

// Matches reports whether every matcher accepts req. It allocates
// nothing.
func (m *HeaderMatch) Matches(req *Request) bool {
	for i := range m.matchers {
		if !m.matchers[i].matches(req) {
			return false
		}
	}
	return true
}

// headerKind is the comparison of a headerMatcher.
type headerKind uint8

const (
	headerString headerKind = iota
	headerRange
	headerPresent
)

// headerMatcher is a compiled HeaderMatcher.
type headerMatcher struct {
	name  string
	kind  headerKind
	str   stringMatcher
	start int64 // range: inclusive
	end   int64 // range: exclusive
	// present is present_match's value (a matcher with no specifier
	// checks presence).
	present             bool
	invert              bool
	treatMissingAsEmpty bool

	// pseudo: name is one the request's fields answer (isPseudoHeader).
	pseudo bool
	// id numbers name within a route table (numberHeaderNames), 0
	// outside one.
	id int
}

// compileHeaderMatcher compiles a HeaderMatcher; errors name the field
// below it.
func compileHeaderMatcher(h *routev3.HeaderMatcher) (headerMatcher, error) {
	hm := headerMatcher{
		name:                strings.ToLower(h.GetName()),
		invert:              h.GetInvertMatch(),
		treatMissingAsEmpty: h.GetTreatMissingHeaderAsEmpty(),
	}
	if hm.name == "" {
		return hm, errors.New("name: a header name is required")
	}
	hm.pseudo = isPseudoHeader(hm.name)
	if sm, ok, err := legacyHeaderMatch(h); ok {
		if err != nil {
			return hm, err
		}
		hm.str = sm
		return hm, nil
	}
	var err error
	switch s := h.GetHeaderMatchSpecifier().(type) {
	case *routev3.HeaderMatcher_StringMatch:
		if hm.str, err = compileStringMatcher(s.StringMatch); err != nil {
			return hm, fmt.Errorf("string_match.%w", err)
		}
	case *routev3.HeaderMatcher_RangeMatch:
		hm.kind, hm.start, hm.end = headerRange, s.RangeMatch.GetStart(), s.RangeMatch.GetEnd()
		if hm.start >= hm.end {
			return hm, fmt.Errorf("range_match: start %d must be below end %d", hm.start, hm.end)
		}
	case *routev3.HeaderMatcher_PresentMatch:
		hm.kind, hm.present = headerPresent, s.PresentMatch
	case nil:
		hm.kind, hm.present = headerPresent, true
	}
	return hm, nil
}

// matches applies Envoy's rules: a missing header fails every matcher
// except present_match (whatever invert_match says), unless
// treat_missing_header_as_empty makes it an empty value.
func (h *headerMatcher) matches(req *Request) bool {
	var v string
	var ok bool
	if h.pseudo {
		v, ok = req.header(h.name)
	} else {
		v, ok = req.regularHeader(h.name, h.id)
	}
	if h.kind == headerPresent {
		return (ok == h.present) != h.invert
	}
	if !ok && !h.treatMissingAsEmpty {
		return false
	}
	var m bool
	switch h.kind {
	case headerRange:
		n, err := strconv.ParseInt(v, 10, 64)
		m = err == nil && n >= h.start && n < h.end
	default:
		m = h.str.match(v)
	}
	return m != h.invert
}

// failsWhenAbsent reports whether the matcher rejects every request
// without its header.
func (h *headerMatcher) failsWhenAbsent() bool {
	if h.kind == headerPresent {
		return (!h.present) == h.invert
	}
	return !h.treatMissingAsEmpty
}

// queryMatcher is a compiled QueryParameterMatcher.
type queryMatcher struct {
	name string
	// str is set for string_match; without it the matcher checks
	// presence, as present_match does in Envoy whatever its value.
	str *stringMatcher
}

func compileQueryMatcher(q *routev3.QueryParameterMatcher) (queryMatcher, error) {
	qm := queryMatcher{name: q.GetName()}
	if qm.name == "" {
		return qm, errors.New("name: a parameter name is required")
	}
	if sm := q.GetStringMatch(); sm != nil {
		m, err := compileStringMatcher(sm)
		if err != nil {
			return qm, fmt.Errorf("string_match.%w", err)
		}
		qm.str = &m
	}
	return qm, nil
}

// matches looks the parameter up in the raw query string: the first
// occurrence counts, keys and values are percent-decoded (not '+'), as in
// Envoy.
func (q *queryMatcher) matches(query string) bool {
	var buf [128]byte
	for query != "" {
		var pair string
		pair, query, _ = strings.Cut(query, "&")
		key, value, _ := strings.Cut(pair, "=")
		if !decodedEquals(key, q.name) {
			continue
		}
		if q.str == nil {
			return true
		}
		if strings.IndexByte(value, '%') < 0 {
			return q.str.match(value)
		}
		return q.str.match(string(percentDecode(buf[:0], value)))
	}
	return false
}

// decodedEquals compares the percent-decoded s with want without
// allocating.
func decodedEquals(s, want string) bool {
	if strings.IndexByte(s, '%') < 0 {
		return s == want
	}
	var buf [128]byte
	return string(percentDecode(buf[:0], s)) == want
}

// percentDecode appends s with %XX sequences decoded; malformed sequences
// are kept as they are.
func percentDecode(dst []byte, s string) []byte {
	for i := 0; i < len(s); i++ {
		if s[i] == '%' && i+2 < len(s) {
			if hi, lo := unhex(s[i+1]), unhex(s[i+2]); hi >= 0 && lo >= 0 {
				dst = append(dst, byte(hi<<4|lo))
				i += 2
				continue
			}
		}
		dst = append(dst, s[i])
	}
	return dst
}

func unhex(c byte) int {
	switch {
	case c >= '0' && c <= '9':
		return int(c - '0')
	case c >= 'a' && c <= 'f':
		return int(c - 'a' + 10)
	case c >= 'A' && c <= 'F':
		return int(c - 'A' + 10)
	}
	return -1
}

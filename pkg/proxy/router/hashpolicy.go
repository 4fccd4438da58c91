package router

import (
	"fmt"
	"math/bits"
	"regexp"
	"slices"
	"strconv"
	"strings"

	"github.com/cespare/xxhash/v2"
	routev3 "github.com/envoyproxy/go-control-plane/envoy/config/route/v3"
)

// HashPolicy is a route's compiled hash_policy: how the hash key of a
// request is computed, which the ring hash and maglev load balancers
// route on, as Envoy's HashPolicyImpl computes it. Immutable.
type HashPolicy struct {
	methods []hashMethod
}

// hashKind is what one hash_policy entry hashes.
type hashKind uint8

const (
	hashHeader hashKind = iota
	hashCookie
	hashSourceIP
	hashQuery
	hashFilterState
)

// hashMethod is one hash_policy entry.
type hashMethod struct {
	kind hashKind
	// name is the header (lower case), the cookie, the query parameter
	// or the filter state key.
	name string
	// terminal: once a hash exists, the entries after this one are not
	// computed.
	terminal bool
	// re and sub are a header's regex_rewrite (Go template syntax).
	re  *regexp.Regexp
	sub string
	// cookie is a cookie entry's generation settings, nil without ttl
	// (a missing cookie then yields no hash).
	cookie *cookieGen
}

// cookieGen is how a cookie entry with a ttl makes the cookie a request
// lacks.
type cookieGen struct {
	// prefix and suffix frame the value in the Set-Cookie header:
	// name="<value>"; Max-Age=...; Path=...; attributes; HttpOnly.
	prefix, suffix string
}

// HashInput is what a hash policy reads of a request.
type HashInput struct {
	// Request gives the headers (pseudo-headers included) and the path
	// as received; nil for a pick without a request (tcp_proxy's).
	Request *Request
	// SourceIP is the downstream's address, without port, after
	// x-forwarded-for processing ("" when not an IP).
	SourceIP string
	// ConnRemote and ConnLocal are the downstream connection's addresses
	// ("ip:port"): a generated cookie's value is their hash, so that the
	// requests of one connection get the same cookie.
	ConnRemote, ConnLocal string
	// FilterState returns the hash of the filter state object under key,
	// false when there is none or it cannot be hashed; nil has none.
	FilterState func(key string) (uint64, bool)
	// SetCookies receives the Set-Cookie values of the cookies generated
	// (cookie entries with a ttl whose cookie the request lacks): the
	// response from the upstream carries them.
	SetCookies []string
}

// HeaderFields is a header map that reads each field of a name apart:
// several fields of one header are hashed in sorted order, and cookies
// are parsed field by field. A Request's headers that do not implement
// it are read joined.
type HeaderFields interface {
	// Field returns the value of the i-th field named name (lower case),
	// from 0; false past the last.
	Field(name string, i int) (string, bool)
}

// CompileHashPolicy compiles a hash_policy list (a route's, or a
// ring hash or maglev policy's consistent_hashing_lb_config.hash_policy);
// errors name the field below it ("[1].header.regex_rewrite..."). It
// returns nil when no entry hashes anything.
func CompileHashPolicy(list []*routev3.RouteAction_HashPolicy) (*HashPolicy, error) {
	p := &HashPolicy{}
	for i, hp := range list {
		m := hashMethod{terminal: hp.GetTerminal()}
		path := fmt.Sprintf("[%d].", i)
		switch spec := hp.GetPolicySpecifier().(type) {
		case *routev3.RouteAction_HashPolicy_Header_:
			m.kind, m.name = hashHeader, strings.ToLower(spec.Header.GetHeaderName())
			if m.name == "" {
				return nil, fmt.Errorf("%sheader.header_name: required", path)
			}
			if rr := spec.Header.GetRegexRewrite(); rr != nil {
				re, err := regexp.Compile(rr.GetPattern().GetRegex())
				if err != nil {
					return nil, fmt.Errorf("%sheader.regex_rewrite.pattern.regex: %w", path, err)
				}
				sub, err := goTemplate(rr.GetSubstitution(), re.NumSubexp())
				if err != nil {
					return nil, fmt.Errorf("%sheader.regex_rewrite.substitution: %w", path, err)
				}
				m.re, m.sub = re, sub
			}
		case *routev3.RouteAction_HashPolicy_Cookie_:
			c := spec.Cookie
			m.kind, m.name = hashCookie, c.GetName()
			if m.name == "" {
				return nil, fmt.Errorf("%scookie.name: required", path)
			}
			if c.GetTtl() != nil {
				if err := c.GetTtl().CheckValid(); err != nil {
					return nil, fmt.Errorf("%scookie.ttl: %w", path, err)
				}
				m.cookie = newCookieGen(c)
			}
		case *routev3.RouteAction_HashPolicy_ConnectionProperties_:
			if !spec.ConnectionProperties.GetSourceIp() {
				// Envoy adds no method for source_ip: false.
				continue
			}
			m.kind = hashSourceIP
		case *routev3.RouteAction_HashPolicy_QueryParameter_:
			m.kind, m.name = hashQuery, spec.QueryParameter.GetName()
			if m.name == "" {
				return nil, fmt.Errorf("%squery_parameter.name: required", path)
			}
		case *routev3.RouteAction_HashPolicy_FilterState_:
			m.kind, m.name = hashFilterState, spec.FilterState.GetKey()
			if m.name == "" {
				return nil, fmt.Errorf("%sfilter_state.key: required", path)
			}
		case nil:
			return nil, fmt.Errorf("%spolicy_specifier: one of header, cookie, connection_properties, query_parameter or filter_state is required", path)
		default:
			return nil, fmt.Errorf("%s%s: not supported by Outrigger", path, oneofName(hp.ProtoReflect(), "policy_specifier"))
		}
		p.methods = append(p.methods, m)
	}
	if len(p.methods) == 0 {
		return nil, nil
	}
	return p, nil
}

// newCookieGen prepares the Set-Cookie header of a generated cookie.
func newCookieGen(c *routev3.RouteAction_HashPolicy_Cookie) *cookieGen {
	attrs := make([]CookieAttribute, 0, len(c.GetAttributes()))
	for _, a := range c.GetAttributes() {
		attrs = append(attrs, CookieAttribute{Name: a.GetName(), Value: a.GetValue()})
	}
	prefix, suffix := SetCookieFrame(c.GetName(), c.GetTtl().GetSeconds(), c.GetPath(), attrs)
	return &cookieGen{prefix: prefix, suffix: suffix}
}

// CookieAttribute is one attribute of a cookie Outrigger sets: "name" or
// "name=value".
type CookieAttribute struct {
	Name, Value string
}

// SetCookieFrame returns what goes before and after a cookie's value in
// the Set-Cookie header of a cookie Outrigger sets, as Envoy's
// makeSetCookieValue writes it with HttpOnly: name="<value>"; Max-Age=ttl
// (left out for a zero ttl, which makes a session cookie); Path=path
// (when not empty); the attributes; HttpOnly.
func SetCookieFrame(name string, ttlSeconds int64, path string, attrs []CookieAttribute) (prefix, suffix string) {
	var b strings.Builder
	b.WriteByte('"')
	if ttlSeconds != 0 {
		b.WriteString("; Max-Age=")
		b.WriteString(strconv.FormatInt(ttlSeconds, 10))
	}
	if path != "" {
		b.WriteString("; Path=")
		b.WriteString(path)
	}
	for _, a := range attrs {
		b.WriteString("; ")
		b.WriteString(a.Name)
		if a.Value != "" {
			b.WriteByte('=')
			b.WriteString(a.Value)
		}
	}
	b.WriteString("; HttpOnly")
	return name + `="`, b.String()
}

// Hash computes the request's hash key: each entry that yields a hash
// folds it into the key (the key so far rotated left by one bit, then
// xored, so that equal entries do not cancel out), until a terminal
// entry finds the key computed. false when no entry yields a hash.
func (p *HashPolicy) Hash(in *HashInput) (uint64, bool) {
	var (
		hash uint64
		ok   bool
	)
	for i := range p.methods {
		m := &p.methods[i]
		if h, yes := m.eval(in); yes {
			if ok {
				hash = bits.RotateLeft64(hash, 1)
			}
			hash ^= h
			ok = true
		}
		if m.terminal && ok {
			break
		}
	}
	return hash, ok
}

// eval computes one entry's hash. Without a request (a TCP pick) the
// header, cookie and query parameter entries yield none, as Envoy's do
// without request headers.
func (m *hashMethod) eval(in *HashInput) (uint64, bool) {
	if in.Request == nil && (m.kind == hashHeader || m.kind == hashCookie || m.kind == hashQuery) {
		return 0, false
	}
	switch m.kind {
	case hashHeader:
		return m.headerHash(in.Request)
	case hashCookie:
		if v, found := cookieValue(in.Request, m.name); found && v != "" {
			return xxhash.Sum64String(v), true
		}
		if m.cookie == nil {
			return 0, false
		}
		v := generatedCookie(in.ConnRemote, in.ConnLocal)
		in.SetCookies = append(in.SetCookies, m.cookie.prefix+v+m.cookie.suffix)
		return xxhash.Sum64String(v), true
	case hashSourceIP:
		if in.SourceIP == "" {
			return 0, false
		}
		return xxhash.Sum64String(in.SourceIP), true
	case hashQuery:
		if v, found := queryValue(in.Request.Path, m.name); found {
			return xxhash.Sum64String(v), true
		}
	case hashFilterState:
		if in.FilterState != nil {
			return in.FilterState(m.name)
		}
	}
	return 0, false
}

// headerHash hashes a header's values, each rewritten by regex_rewrite,
// in sorted order, so that the order of several fields does not matter.
func (m *hashMethod) headerHash(req *Request) (uint64, bool) {
	fields, split := req.Headers.(HeaderFields)
	split = split && !isPseudo(m.name)
	var (
		first, second string
		ok            bool
	)
	if split {
		first, ok = fields.Field(m.name, 0)
	} else {
		first, ok = req.header(m.name)
	}
	if !ok {
		return 0, false
	}
	if split {
		second, split = fields.Field(m.name, 1)
	}
	if !split {
		return xxhash.Sum64String(m.rewrite(first)), true
	}
	// Several fields: Envoy hashes them sorted, each seeded with the
	// hash of those before (its xxHash64 of a span).
	values := []string{m.rewrite(first), m.rewrite(second)}
	for i := 2; ; i++ {
		v, more := fields.Field(m.name, i)
		if !more {
			break
		}
		values = append(values, m.rewrite(v))
	}
	slices.Sort(values)
	var h uint64
	var d xxhash.Digest
	for _, v := range values {
		d.ResetWithSeed(h)
		_, _ = d.WriteString(v)
		h = d.Sum64()
	}
	return h, true
}

// rewrite applies the entry's regex_rewrite to a header value.
func (m *hashMethod) rewrite(v string) string {
	if m.re == nil {
		return v
	}
	return m.re.ReplaceAllString(v, m.sub)
}

// isPseudo reports whether a header name is one of the pseudo-headers
// the request's fields answer.
func isPseudo(name string) bool {
	switch name {
	case ":authority", "host", ":path", ":method", ":scheme":
		return true
	}
	return false
}

// generatedCookie is the value of a cookie the proxy makes: the hash of
// the connection's remote and local addresses in 16 hexadecimal digits,
// as Envoy's router makes it, so that every request of a connection that
// lacks the cookie gets the same one.
func generatedCookie(remote, local string) string {
	var buf [64]byte
	b := append(append(buf[:0], remote...), local...)
	h := xxhash.Sum64(b)
	const digits = "0123456789abcdef"
	var out [16]byte
	for i := 15; i >= 0; i-- {
		out[i] = digits[h&0xf]
		h >>= 4
	}
	return string(out[:])
}

// cookieValue finds a cookie of the request (see CookieValue).
func cookieValue(req *Request, name string) (string, bool) {
	return CookieValue(req.Headers, name)
}

// CookieValue finds a cookie in request headers, as Envoy's
// parseCookieValue: every cookie header, each split on ';', a pair's name
// running from its first non-space byte to its '=' and its value, without
// surrounding double quotes, to the end of the pair. The first cookie of
// that name wins.
func CookieValue(h HeaderGetter, name string) (string, bool) {
	if h == nil {
		return "", false
	}
	fields, split := h.(HeaderFields)
	if !split {
		v, ok := h.Get("cookie")
		if !ok {
			return "", false
		}
		return findCookie(v, name)
	}
	for i := 0; ; i++ {
		v, ok := fields.Field("cookie", i)
		if !ok {
			return "", false
		}
		if c, found := findCookie(v, name); found {
			return c, true
		}
	}
}

// findCookie finds a cookie in one cookie header value.
func findCookie(header, name string) (string, bool) {
	for header != "" {
		pair := header
		if i := strings.IndexByte(header, ';'); i >= 0 {
			pair, header = header[:i], header[i+1:]
		} else {
			header = ""
		}
		eq := strings.IndexByte(pair, '=')
		if eq < 0 {
			continue
		}
		start := 0
		for start < eq && pair[start] == ' ' {
			start++
		}
		if pair[start:eq] != name {
			continue
		}
		v := pair[eq+1:]
		if len(v) >= 2 && v[0] == '"' && v[len(v)-1] == '"' {
			v = v[1 : len(v)-1]
		}
		return v, true
	}
	return "", false
}

// queryValue finds the first value of a query parameter, undecoded, as
// Envoy's parseQueryString reads it: a parameter without '=' has the
// empty value.
func queryValue(path, name string) (string, bool) {
	q := query(path)
	for q != "" {
		param := q
		if i := strings.IndexByte(q, '&'); i >= 0 {
			param, q = q[:i], q[i+1:]
		} else {
			q = ""
		}
		k, v, _ := strings.Cut(param, "=")
		if k == name {
			return v, true
		}
	}
	return "", false
}

package tap

import (
	"bytes"
	"errors"
	"fmt"

	matcherv3 "github.com/envoyproxy/go-control-plane/envoy/config/common/matcher/v3"
)

// bodyMatch is a compiled http_request_generic_body_match or
// http_response_generic_body_match: every pattern must occur in the body,
// within its first bytes_limit bytes when that is set (0: the whole body).
type bodyMatch struct {
	request  bool
	patterns [][]byte
	limit    int
	// overlap is the longest pattern less one byte: what a chunk keeps of
	// the one before, so that a pattern split between chunks is found.
	overlap int
}

// bodyProgress is one exchange's search of one body matcher.
type bodyProgress struct {
	found   []bool
	seen    int
	tail    []byte
	matched bool
}

// compileBody compiles a generic body match; errors name paths below field.
func compileBody(request bool, bm *matcherv3.HttpGenericBodyMatch, field string) (*Matcher, error) {
	if len(bm.GetPatterns()) == 0 {
		return nil, errors.New(field + ".patterns: at least one pattern is required")
	}
	b := &bodyMatch{request: request, limit: int(bm.GetBytesLimit())}
	for i, p := range bm.GetPatterns() {
		var pat []byte
		switch r := p.GetRule().(type) {
		case *matcherv3.HttpGenericBodyMatch_GenericTextMatch_StringMatch:
			pat = []byte(r.StringMatch)
		case *matcherv3.HttpGenericBodyMatch_GenericTextMatch_BinaryMatch:
			pat = r.BinaryMatch
		}
		if len(pat) == 0 {
			return nil, fmt.Errorf("%s.patterns[%d]: a non-empty string_match or binary_match is required", field, i)
		}
		b.patterns = append(b.patterns, pat)
		b.overlap = max(b.overlap, len(pat)-1)
	}
	return &Matcher{kind: matchBody, body: b}, nil
}

// feed searches p, the next piece of the body in b's direction.
func (b *bodyMatch) feed(pr *bodyProgress, p []byte) {
	if pr.matched || (b.limit > 0 && pr.seen >= b.limit) {
		return
	}
	if b.limit > 0 && len(p) > b.limit-pr.seen {
		p = p[:b.limit-pr.seen]
	}
	if pr.found == nil {
		pr.found = make([]bool, len(b.patterns))
	}
	buf := append(pr.tail, p...)
	all := true
	for i, pat := range b.patterns {
		if !pr.found[i] && bytes.Contains(buf, pat) {
			pr.found[i] = true
		}
		all = all && pr.found[i]
	}
	pr.seen += len(p)
	pr.matched = all
	keep := min(b.overlap, len(buf))
	pr.tail = append(pr.tail[:0:0], buf[len(buf)-keep:]...)
}

// bodyMatchers numbers the body matchers of the tree under m, each with
// its index in an Exchange's progress, and returns them.
func (m *Matcher) bodyMatchers(out []*Matcher) []*Matcher {
	if m.kind == matchBody {
		m.index = len(out)
		out = append(out, m)
	}
	for _, s := range m.sub {
		out = s.bodyMatchers(out)
	}
	return out
}

// feed gives a piece of the request (or response) body to the body
// matchers of that direction.
func (x *Exchange) feed(bodies []*Matcher, request bool, p []byte) {
	if len(bodies) == 0 {
		return
	}
	if x.bodies == nil {
		x.bodies = make([]bodyProgress, len(bodies))
	}
	for i, m := range bodies {
		if m.body.request == request {
			m.body.feed(&x.bodies[i], p)
		}
	}
}

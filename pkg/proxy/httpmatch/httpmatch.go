// Package httpmatch compiles the xDS unified matcher
// (xds.type.matcher.v3.Matcher) over HTTP data, as Envoy's match trees
// evaluate it: a matcher_list (the first field matcher whose predicate
// holds wins) or a matcher_tree (an exact or longest-prefix map lookup of
// one input), each with on_no_match; an on_match is an action or a
// nested matcher, and a nested matcher that does not match lets the
// evaluation go on, as in Envoy. The inputs are Envoy's HTTP inputs of
// request and response headers and the response status; the actions are
// the caller's, compiled by a function it gives. The tree itself is
// generic (Tree): a caller matching other data (the UDP proxy's
// addresses) gives its own inputs.
package httpmatch

import (
	"errors"
	"fmt"
	"sort"
	"strings"

	xdscorev3 "github.com/cncf/xds/go/xds/core/v3"
	xdsmatcherv3 "github.com/cncf/xds/go/xds/type/matcher/v3"
	matcherv3 "github.com/envoyproxy/go-control-plane/envoy/type/matcher/v3"
	"google.golang.org/protobuf/proto"

	"github.com/outrigger-dev/outrigger/pkg/proxy/router"
)

// Data is what the inputs read of a request and its response.
type Data interface {
	// RequestHeader and ResponseHeader return a header's value (several
	// joined by ","), false when it is absent.
	RequestHeader(name string) (string, bool)
	ResponseHeader(name string) (string, bool)
	// ResponseStatus is the response's status, 0 before there is one.
	ResponseStatus() int
}

// ActionCompiler compiles an on_match action; path names it in errors.
type ActionCompiler[A any] func(action *xdscorev3.TypedExtensionConfig, path string) (A, error)

// Matcher is a compiled match tree over HTTP data whose actions are of
// type A.
type Matcher[A any] = Tree[Data, A]

// Input reads one value of the data D a tree matches, false when the data
// has none.
type Input[D any] func(D) (string, bool)

// InputCompiler compiles a matcher input (its TypedExtensionConfig); path
// names it in errors.
type InputCompiler[D any] func(tc *xdscorev3.TypedExtensionConfig, path string) (Input[D], error)

// Tree is a compiled match tree over data of type D whose actions are of
// type A.
type Tree[D, A any] struct {
	list      []fieldMatcher[D, A]
	tree      *tree[D, A]
	onNoMatch *onMatch[D, A]
}

// onMatch is an action or a nested matcher.
type onMatch[D, A any] struct {
	action A
	nested *Tree[D, A]
}

type fieldMatcher[D, A any] struct {
	pred func(D) bool
	on   onMatch[D, A]
}

// tree is a matcher_tree: an input looked up in a map.
type tree[D, A any] struct {
	input  Input[D]
	prefix bool
	keys   []string // prefix maps: longest first
	m      map[string]*onMatch[D, A]
}

// Compile compiles m over HTTP data; errors name the field below it.
func Compile[A any](m *xdsmatcherv3.Matcher, action ActionCompiler[A]) (*Matcher[A], error) {
	return CompileTree(m, action, compileInput)
}

// CompileTree compiles m over data whose inputs input compiles; errors
// name the field below it.
func CompileTree[D, A any](m *xdsmatcherv3.Matcher, action ActionCompiler[A], input InputCompiler[D]) (*Tree[D, A], error) {
	out := &Tree[D, A]{}
	switch {
	case m.GetMatcherList() != nil:
		for i, fm := range m.GetMatcherList().GetMatchers() {
			path := fmt.Sprintf("matcher_list.matchers[%d]", i)
			p, err := compilePredicate(fm.GetPredicate(), path+".predicate", input)
			if err != nil {
				return nil, err
			}
			on, err := compileOnMatch(fm.GetOnMatch(), path+".on_match", action, input)
			if err != nil {
				return nil, err
			}
			out.list = append(out.list, fieldMatcher[D, A]{pred: p, on: *on})
		}
	case m.GetMatcherTree() != nil:
		t, err := compileTree(m.GetMatcherTree(), action, input)
		if err != nil {
			return nil, err
		}
		out.tree = t
	}
	if m.GetOnNoMatch() != nil {
		on, err := compileOnMatch(m.GetOnNoMatch(), "on_no_match", action, input)
		if err != nil {
			return nil, err
		}
		out.onNoMatch = on
	}
	return out, nil
}

func compileOnMatch[D, A any](m *xdsmatcherv3.Matcher_OnMatch, path string, action ActionCompiler[A], input InputCompiler[D]) (*onMatch[D, A], error) {
	if m.GetKeepMatching() {
		return nil, errors.New(path + ".keep_matching: not supported by Outrigger")
	}
	switch {
	case m.GetMatcher() != nil:
		n, err := CompileTree(m.GetMatcher(), action, input)
		if err != nil {
			return nil, fmt.Errorf("%s.matcher.%w", path, err)
		}
		return &onMatch[D, A]{nested: n}, nil
	case m.GetAction() != nil:
		a, err := action(m.GetAction(), path+".action")
		if err != nil {
			return nil, err
		}
		return &onMatch[D, A]{action: a}, nil
	}
	return nil, errors.New(path + ": an action or a matcher is required")
}

func compileTree[D, A any](t *xdsmatcherv3.Matcher_MatcherTree, action ActionCompiler[A], input InputCompiler[D]) (*tree[D, A], error) {
	in, err := input(t.GetInput(), "matcher_tree.input")
	if err != nil {
		return nil, err
	}
	out := &tree[D, A]{input: in, m: map[string]*onMatch[D, A]{}}
	var mm *xdsmatcherv3.Matcher_MatcherTree_MatchMap
	field := "exact_match_map"
	switch {
	case t.GetExactMatchMap() != nil:
		mm = t.GetExactMatchMap()
	case t.GetPrefixMatchMap() != nil:
		mm, out.prefix, field = t.GetPrefixMatchMap(), true, "prefix_match_map"
	default:
		return nil, errors.New("matcher_tree.custom_match: not supported by Outrigger")
	}
	for k, v := range mm.GetMap() {
		on, err := compileOnMatch(v, fmt.Sprintf("matcher_tree.%s.map[%q]", field, k), action, input)
		if err != nil {
			return nil, err
		}
		out.m[k] = on
		out.keys = append(out.keys, k)
	}
	// The longest prefix first, then in order, so that evaluation is the
	// same every time.
	sort.Slice(out.keys, func(i, j int) bool {
		if len(out.keys[i]) != len(out.keys[j]) {
			return len(out.keys[i]) > len(out.keys[j])
		}
		return out.keys[i] < out.keys[j]
	})
	return out, nil
}

func compilePredicate[D any](p *xdsmatcherv3.Matcher_MatcherList_Predicate, path string, input InputCompiler[D]) (func(D) bool, error) {
	switch {
	case p.GetSinglePredicate() != nil:
		sp := p.GetSinglePredicate()
		in, err := input(sp.GetInput(), path+".single_predicate.input")
		if err != nil {
			return nil, err
		}
		if sp.GetValueMatch() == nil {
			return nil, errors.New(path + ".single_predicate.custom_match: not supported by Outrigger")
		}
		sm, err := CompileStringMatcher(sp.GetValueMatch())
		if err != nil {
			return nil, fmt.Errorf("%s.single_predicate.value_match.%w", path, err)
		}
		return func(d D) bool {
			v, ok := in(d)
			return ok && sm.Match(v)
		}, nil
	case p.GetOrMatcher() != nil, p.GetAndMatcher() != nil:
		list, field, or := p.GetAndMatcher(), "and_matcher", false
		if p.GetOrMatcher() != nil {
			list, field, or = p.GetOrMatcher(), "or_matcher", true
		}
		var preds []func(D) bool
		for i, q := range list.GetPredicate() {
			c, err := compilePredicate(q, fmt.Sprintf("%s.%s.predicate[%d]", path, field, i), input)
			if err != nil {
				return nil, err
			}
			preds = append(preds, c)
		}
		return func(d D) bool {
			for _, q := range preds {
				if q(d) == or {
					return or
				}
			}
			return !or
		}, nil
	case p.GetNotMatcher() != nil:
		q, err := compilePredicate(p.GetNotMatcher(), path+".not_matcher", input)
		if err != nil {
			return nil, err
		}
		return func(d D) bool { return !q(d) }, nil
	}
	return nil, errors.New(path + ": a predicate is required")
}

// CompileStringMatcher compiles an xDS StringMatcher with the router's
// StringMatcher: the two messages have the same fields and numbers. Errors
// name the field below the matcher.
func CompileStringMatcher(m *xdsmatcherv3.StringMatcher) (*router.StringMatcher, error) {
	if m.GetCustom() != nil {
		return nil, errors.New("custom: not supported by Outrigger")
	}
	b, err := proto.Marshal(m)
	if err != nil {
		return nil, err
	}
	var em matcherv3.StringMatcher
	if err := proto.Unmarshal(b, &em); err != nil {
		return nil, err
	}
	sm, err := router.CompileStringMatcher(&em)
	return &sm, err
}

// The type names of the inputs Outrigger implements.
const (
	requestHeaderInput  = "envoy.type.matcher.v3.HttpRequestHeaderMatchInput"
	responseHeaderInput = "envoy.type.matcher.v3.HttpResponseHeaderMatchInput"
	statusCodeInput     = "envoy.type.matcher.v3.HttpResponseStatusCodeMatchInput"
	statusClassInput    = "envoy.type.matcher.v3.HttpResponseStatusCodeClassMatchInput"
)

// InputTypes are the full names of the input messages Compile takes, for
// the configuration's support table.
var InputTypes = []string{requestHeaderInput, responseHeaderInput, statusCodeInput, statusClassInput}

// compileInput compiles one of Envoy's HTTP inputs.
func compileInput(tc *xdscorev3.TypedExtensionConfig, path string) (Input[Data], error) {
	a := tc.GetTypedConfig()
	if a == nil {
		return nil, errors.New(path + ".typed_config: an input is required")
	}
	msg, err := a.UnmarshalNew()
	if err != nil {
		return nil, fmt.Errorf("%s.typed_config: %w", path, err)
	}
	switch in := msg.(type) {
	case *matcherv3.HttpRequestHeaderMatchInput:
		name := strings.ToLower(in.GetHeaderName())
		return func(d Data) (string, bool) { return d.RequestHeader(name) }, nil
	case *matcherv3.HttpResponseHeaderMatchInput:
		name := strings.ToLower(in.GetHeaderName())
		return func(d Data) (string, bool) { return d.ResponseHeader(name) }, nil
	case *matcherv3.HttpResponseStatusCodeMatchInput:
		return func(d Data) (string, bool) {
			s := d.ResponseStatus()
			return fmt.Sprint(s), s != 0
		}, nil
	case *matcherv3.HttpResponseStatusCodeClassMatchInput:
		return func(d Data) (string, bool) {
			s := d.ResponseStatus()
			if s < 100 || s > 599 {
				return "", false
			}
			return fmt.Sprintf("%dxx", s/100), true
		}, nil
	}
	return nil, fmt.Errorf("%s.typed_config: input %s is not supported by Outrigger", path, proto.MessageName(msg))
}

// Match evaluates the tree against d: the action of the first match, and
// false when nothing matches.
func (m *Tree[D, A]) Match(d D) (A, bool) {
	for i := range m.list {
		if m.list[i].pred(d) {
			if a, ok := m.list[i].on.resolve(d); ok {
				return a, true
			}
		}
	}
	if t := m.tree; t != nil {
		if v, ok := t.input(d); ok {
			if on := t.lookup(v); on != nil {
				if a, ok := on.resolve(d); ok {
					return a, true
				}
			}
		}
	}
	if m.onNoMatch != nil {
		return m.onNoMatch.resolve(d)
	}
	var zero A
	return zero, false
}

// lookup finds v's entry: exact, or the longest prefix of v.
func (t *tree[D, A]) lookup(v string) *onMatch[D, A] {
	if !t.prefix {
		return t.m[v]
	}
	for _, k := range t.keys {
		if strings.HasPrefix(v, k) {
			return t.m[k]
		}
	}
	return nil
}

// resolve is the action of an on_match, through its nested matcher.
func (o *onMatch[D, A]) resolve(d D) (A, bool) {
	if o.nested != nil {
		return o.nested.Match(d)
	}
	return o.action, true
}

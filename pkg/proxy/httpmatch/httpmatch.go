// Package httpmatch compiles the xDS unified matcher
// (xds.type.matcher.v3.Matcher) over HTTP data, as Envoy's match trees
// evaluate it: a matcher_list (the first field matcher whose predicate
// holds wins) or a matcher_tree (an exact or longest-prefix map lookup of
// one input, or Envoy's IP matcher as its custom_match), each with
// on_no_match; an on_match is an action or a nested matcher, and a nested
// matcher that does not match lets the evaluation go on, as in Envoy. The
// inputs are Envoy's HTTP inputs of request and response headers and the
// response status; the actions are the caller's, compiled by a function it
// gives. The tree itself is generic (Tree): a caller matching other data
// (the UDP proxy's addresses, RBAC's connections) gives its own inputs,
// which may find the data unavailable (Probe) as Envoy's TLS inputs do on
// a plaintext connection.
package httpmatch

import (
	"errors"
	"fmt"
	"iter"
	"sort"
	"strings"

	xdscorev3 "github.com/cncf/xds/go/xds/core/v3"
	xdsmatcherv3 "github.com/cncf/xds/go/xds/type/matcher/v3"
	networkinputsv3 "github.com/envoyproxy/go-control-plane/envoy/extensions/matching/common_inputs/network/v3"
	matcherv3 "github.com/envoyproxy/go-control-plane/envoy/type/matcher/v3"
	"google.golang.org/protobuf/proto"

	"github.com/outrigger-dev/outrigger/pkg/proxy/filterstate"
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
	// The CEL and dynamic_metadata inputs read the stream's attributes
	// and metadata.
	CELData
	MetadataData
}

// FilterStateData is Data that can read the stream's filter state (the
// request's, read through to its connection's), for
// envoy.matching.inputs.filter_state; other Data has none.
type FilterStateData interface {
	FilterState(key string) (any, bool)
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

// Probe reads one value of the data D as Envoy's data inputs do: ok false
// when the data has no value, available false when the input cannot read
// this data at all (Envoy's NotAvailable, a TLS input on a plaintext
// connection): the match is then unable to complete, and a tree that
// reaches such an input has no result.
type Probe[D any] func(D) (v string, ok, available bool)

// ProbeCompiler compiles a matcher input into a Probe; path names it in
// errors.
type ProbeCompiler[D any] func(tc *xdscorev3.TypedExtensionConfig, path string) (Probe[D], error)

// Tree is a compiled match tree over data of type D whose actions are of
// type A.
type Tree[D, A any] struct {
	list      []fieldMatcher[D, A]
	tree      *tree[D, A]
	ip        *ipTree[D, A]
	onNoMatch *onMatch[D, A]
}

// onMatch is an action or a nested matcher. keep is keep_matching: a
// match through it is skipped and the evaluation goes on, as Envoy's
// handleRecursionAndSkips does.
type onMatch[D, A any] struct {
	action A
	nested *Tree[D, A]
	keep   bool
}

// predicate is a compiled predicate: whether it holds, and complete false
// when an input could not read the data (Envoy's UnableToMatch).
type predicate[D any] func(D) (matched, complete bool)

type fieldMatcher[D, A any] struct {
	pred predicate[D]
	on   onMatch[D, A]
}

// tree is a matcher_tree: an input looked up in a map.
type tree[D, A any] struct {
	input  Probe[D]
	prefix bool
	keys   []string // prefix maps: longest first
	m      map[string]*onMatch[D, A]
}

// Compile compiles m over HTTP data; errors name the field below it.
func Compile[A any](m *xdsmatcherv3.Matcher, action ActionCompiler[A]) (*Matcher[A], error) {
	return compileTreeOf(m, action, inputs[Data]{probe: probeOf(compileInput), common: true, cel: new(celEnv)})
}

// CompileTree compiles m over data whose inputs input compiles; errors
// name the field below it.
func CompileTree[D, A any](m *xdsmatcherv3.Matcher, action ActionCompiler[A], input InputCompiler[D]) (*Tree[D, A], error) {
	return CompileProbed(m, action, probeOf(input))
}

// probeOf is input as a ProbeCompiler: its inputs can always read the
// data.
func probeOf[D any](input InputCompiler[D]) ProbeCompiler[D] {
	return func(tc *xdscorev3.TypedExtensionConfig, path string) (Probe[D], error) {
		in, err := input(tc, path)
		if err != nil {
			return nil, err
		}
		return func(d D) (string, bool, bool) {
			v, ok := in(d)
			return v, ok, true
		}, nil
	}
}

// CompileProbed compiles m over data whose inputs input compiles into
// probes, which may find the data unavailable; errors name the field
// below it.
func CompileProbed[D, A any](m *xdsmatcherv3.Matcher, action ActionCompiler[A], input ProbeCompiler[D]) (*Tree[D, A], error) {
	return compileTreeOf(m, action, inputs[D]{probe: input})
}

// CompileProbedEnv is CompileProbed for a caller that gives the custom
// input matchers what they need (stats for the IP matcher's stat_prefix,
// the runtime for runtime_fraction). Its trees also take Envoy's common
// inputs (CommonInputTypes) before input: the environment variable, and
// the CEL and dynamic metadata inputs when D can give what they read.
func CompileProbedEnv[D, A any](m *xdsmatcherv3.Matcher, action ActionCompiler[A], input ProbeCompiler[D], env Env) (*Tree[D, A], error) {
	return compileTreeOf(m, action, inputs[D]{probe: input, env: env, common: true, cel: new(celEnv)})
}

// inputs is how a tree's inputs and custom matchers are compiled.
type inputs[D any] struct {
	probe ProbeCompiler[D]
	env   Env
	// common takes Envoy's common inputs before probe's; off for the
	// matchers whose inputs Envoy restricts to a list (a per-route
	// ExtensionWithMatcher's request headers).
	common bool
	// cel is the environment of the tree's CEL matchers.
	cel *celEnv
}

// compile compiles a string input: a common one, else the caller's.
func (in inputs[D]) compile(tc *xdscorev3.TypedExtensionConfig, path string) (Probe[D], error) {
	if in.common {
		if p, ok, err := compileCommonInput[D](tc, path); ok {
			return p, err
		}
	}
	return in.probe(tc, path)
}

func compileTreeOf[D, A any](m *xdsmatcherv3.Matcher, action ActionCompiler[A], input inputs[D]) (*Tree[D, A], error) {
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
		if err := out.compileTree(m.GetMatcherTree(), action, input); err != nil {
			return nil, err
		}
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

func compileOnMatch[D, A any](m *xdsmatcherv3.Matcher_OnMatch, path string, action ActionCompiler[A], input inputs[D]) (*onMatch[D, A], error) {
	switch {
	case m.GetMatcher() != nil:
		n, err := compileTreeOf(m.GetMatcher(), action, input)
		if err != nil {
			return nil, fmt.Errorf("%s.matcher.%w", path, err)
		}
		return &onMatch[D, A]{nested: n, keep: m.GetKeepMatching()}, nil
	case m.GetAction() != nil:
		a, err := action(m.GetAction(), path+".action")
		if err != nil {
			return nil, err
		}
		return &onMatch[D, A]{action: a, keep: m.GetKeepMatching()}, nil
	}
	return nil, errors.New(path + ": an action or a matcher is required")
}

// compileTree compiles a matcher_tree: an exact or prefix map, or the IP
// matcher as its custom_match.
func (out *Tree[D, A]) compileTree(t *xdsmatcherv3.Matcher_MatcherTree, action ActionCompiler[A], input inputs[D]) error {
	if input.common {
		if n := t.GetInput().GetTypedConfig().MessageName(); n == celInput || n == metadataInput {
			return fmt.Errorf("matcher_tree.input.typed_config: input %s gives no string to look up in a map; use it in a matcher_list's single_predicate", n)
		}
	}
	in, err := input.compile(t.GetInput(), "matcher_tree.input")
	if err != nil {
		return err
	}
	if t.GetCustomMatch() != nil {
		out.ip, err = compileIPTree(t.GetCustomMatch(), in, action, input)
		return err
	}
	tr := &tree[D, A]{input: in, m: map[string]*onMatch[D, A]{}}
	var mm *xdsmatcherv3.Matcher_MatcherTree_MatchMap
	field := "exact_match_map"
	switch {
	case t.GetExactMatchMap() != nil:
		mm = t.GetExactMatchMap()
	case t.GetPrefixMatchMap() != nil:
		mm, tr.prefix, field = t.GetPrefixMatchMap(), true, "prefix_match_map"
	default:
		return errors.New("matcher_tree: a map or a custom_match is required")
	}
	for k, v := range mm.GetMap() {
		on, err := compileOnMatch(v, fmt.Sprintf("matcher_tree.%s.map[%q]", field, k), action, input)
		if err != nil {
			return err
		}
		tr.m[k] = on
		tr.keys = append(tr.keys, k)
	}
	// The longest prefix first, then in order, so that evaluation is the
	// same every time.
	sort.Slice(tr.keys, func(i, j int) bool {
		if len(tr.keys[i]) != len(tr.keys[j]) {
			return len(tr.keys[i]) > len(tr.keys[j])
		}
		return tr.keys[i] < tr.keys[j]
	})
	out.tree = tr
	return nil
}

func compilePredicate[D any](p *xdsmatcherv3.Matcher_MatcherList_Predicate, path string, input inputs[D]) (predicate[D], error) {
	switch {
	case p.GetSinglePredicate() != nil:
		sp := p.GetSinglePredicate()
		if input.common {
			if pred, ok, err := compileCustomData(sp, path, input); ok {
				return pred, err
			}
		}
		in, err := input.compile(sp.GetInput(), path+".single_predicate.input")
		if err != nil {
			return nil, err
		}
		if cm := sp.GetCustomMatch(); cm != nil {
			match, err := compileInputMatcher(cm, path+".single_predicate.custom_match", input.env)
			if err != nil {
				return nil, err
			}
			return func(d D) (bool, bool) {
				v, ok, available := in(d)
				return available && ok && match(v), available
			}, nil
		}
		sm, err := CompileStringMatcher(sp.GetValueMatch())
		if err != nil {
			return nil, fmt.Errorf("%s.single_predicate.value_match.%w", path, err)
		}
		return func(d D) (bool, bool) {
			v, ok, available := in(d)
			return available && ok && sm.Match(v), available
		}, nil
	case p.GetOrMatcher() != nil, p.GetAndMatcher() != nil:
		list, field, or := p.GetAndMatcher(), "and_matcher", false
		if p.GetOrMatcher() != nil {
			list, field, or = p.GetOrMatcher(), "or_matcher", true
		}
		var preds []predicate[D]
		for i, q := range list.GetPredicate() {
			c, err := compilePredicate(q, fmt.Sprintf("%s.%s.predicate[%d]", path, field, i), input)
			if err != nil {
				return nil, err
			}
			preds = append(preds, c)
		}
		if or {
			return anyOf(preds), nil
		}
		return allOf(preds), nil
	case p.GetNotMatcher() != nil:
		q, err := compilePredicate(p.GetNotMatcher(), path+".not_matcher", input)
		if err != nil {
			return nil, err
		}
		return func(d D) (bool, bool) {
			m, complete := q(d)
			return complete && !m, complete
		}, nil
	}
	return nil, errors.New(path + ": a predicate is required")
}

// anyOf is an or_matcher, as Envoy's: the first predicate that holds
// decides; one that could not complete makes the result incomplete only
// when none holds.
func anyOf[D any](preds []predicate[D]) predicate[D] {
	return func(d D) (bool, bool) {
		complete := true
		for _, q := range preds {
			m, c := q(d)
			if !c {
				complete = false
				continue
			}
			if m {
				return true, true
			}
		}
		return false, complete
	}
}

// allOf is an and_matcher, as Envoy's: it stops at the first predicate
// that does not hold or cannot complete.
func allOf[D any](preds []predicate[D]) predicate[D] {
	return func(d D) (bool, bool) {
		for _, q := range preds {
			m, c := q(d)
			if !c {
				return false, false
			}
			if !m {
				return false, true
			}
		}
		return true, true
	}
}

// CompileStringMatcher compiles an xDS StringMatcher with the router's
// StringMatcher: the two messages have the same fields and numbers. Errors
// name the field below the matcher.
func CompileStringMatcher(m *xdsmatcherv3.StringMatcher) (*router.StringMatcher, error) {
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

// TypedConfig decodes the typed_config of an input, an action or a custom
// matcher; what names it in the error when it is missing ("an input").
func TypedConfig(tc *xdscorev3.TypedExtensionConfig, path, what string) (proto.Message, error) {
	a := tc.GetTypedConfig()
	if a == nil {
		return nil, fmt.Errorf("%s.typed_config: %s is required", path, what)
	}
	msg, err := a.UnmarshalNew()
	if err != nil {
		return nil, fmt.Errorf("%s.typed_config: %w", path, err)
	}
	return msg, nil
}

// compileInput compiles one of Envoy's HTTP inputs.
func compileInput(tc *xdscorev3.TypedExtensionConfig, path string) (Input[Data], error) {
	msg, err := TypedConfig(tc, path, "an input")
	if err != nil {
		return nil, err
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
	case *networkinputsv3.FilterStateInput:
		key := in.GetKey()
		// As Envoy's: the object's PLAIN form, absent without an object
		// or with one that has none.
		return func(d Data) (string, bool) {
			fd, ok := d.(FilterStateData)
			if !ok {
				return "", false
			}
			v, ok := fd.FilterState(key)
			if !ok {
				return "", false
			}
			return filterstate.StringOf(v)
		}, nil
	}
	return nil, fmt.Errorf("%s.typed_config: input %s is not supported by Outrigger", path, proto.MessageName(msg))
}

// Match evaluates the tree against d: the action of the first match, and
// false when nothing matches or an input could not read d (see Probe).
func (m *Tree[D, A]) Match(d D) (A, bool) {
	a, found, _ := m.Evaluate(d)
	return a, found
}

// Evaluate evaluates the tree against d as Envoy does: the action of the
// first match (found), and complete false when an input could not read d
// (Envoy's UnableToMatch), which stops the evaluation without a result.
func (m *Tree[D, A]) Evaluate(d D) (a A, found, complete bool) {
	for i := range m.list {
		matched, c := m.list[i].pred(d)
		if !c {
			return a, false, false
		}
		if matched {
			if a, found, complete = m.list[i].on.resolve(d); found || !complete {
				return a, found, complete
			}
		}
	}
	if t := m.tree; t != nil {
		v, ok, available := t.input(d)
		if !available {
			return a, false, false
		}
		if ok {
			for on := range t.lookup(v) {
				if a, found, complete = on.resolve(d); found || !complete {
					return a, found, complete
				}
			}
		}
	}
	if t := m.ip; t != nil {
		if a, found, complete = t.match(d); found || !complete {
			return a, found, complete
		}
	}
	if m.onNoMatch != nil {
		return m.onNoMatch.resolve(d)
	}
	return a, false, true
}

// lookup finds v's entries in the order they are tried: the exact one,
// or every prefix of v, the longest first. A prefix whose on_match does
// not match (a nested matcher without a result, keep_matching) lets the
// next shorter one be tried, as Envoy's prefix map matcher does.
func (t *tree[D, A]) lookup(v string) iter.Seq[*onMatch[D, A]] {
	return func(yield func(*onMatch[D, A]) bool) {
		if !t.prefix {
			if on := t.m[v]; on != nil {
				yield(on)
			}
			return
		}
		for _, k := range t.keys {
			if strings.HasPrefix(v, k) && !yield(t.m[k]) {
				return
			}
		}
	}
}

// resolve is the action of an on_match, through its nested matcher. With
// keep_matching a match is skipped (no result, the evaluation goes on):
// Envoy hands the skipped action to the caller's skipped-match callback,
// which only its rate_limit_quota filter gives (its previews); the
// matchers Outrigger has give none, as Envoy's do, so the action is not
// run.
func (o *onMatch[D, A]) resolve(d D) (a A, found, complete bool) {
	if o.nested != nil {
		a, found, complete = o.nested.Evaluate(d)
	} else {
		a, found, complete = o.action, true, true
	}
	if found && o.keep {
		var zero A
		return zero, false, true
	}
	return a, found, complete
}

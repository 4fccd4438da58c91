package udpproxy

import (
	"errors"
	"fmt"
	"net/netip"
	"sort"
	"strconv"
	"strings"

	xdscorev3 "github.com/cncf/xds/go/xds/core/v3"
	xdsmatcherv3 "github.com/cncf/xds/go/xds/type/matcher/v3"
	udpproxyv3 "github.com/envoyproxy/go-control-plane/envoy/extensions/filters/udp/udp_proxy/v3"
	networkinputsv3 "github.com/envoyproxy/go-control-plane/envoy/extensions/matching/common_inputs/network/v3"
	"google.golang.org/protobuf/proto"

	"github.com/outrigger-dev/outrigger/pkg/proxy/httpmatch"
)

// addresses are what the routing matcher's inputs read of a datagram: the
// listener's address it came in on and its sender's.
type addresses struct {
	local, peer netip.AddrPort
}

// input reads one value of a datagram's addresses (Envoy's network
// inputs over UdpMatchingData).
type input func(addresses) string

// matcher is a compiled xDS matcher whose actions are clusters: the
// udp_proxy's matcher, as Envoy's UDP router evaluates it.
type matcher struct {
	list      []listEntry
	tree      *tree
	onNoMatch *onMatch
}

// onMatch is a cluster or a nested matcher.
type onMatch struct {
	cluster string
	nested  *matcher
}

type listEntry struct {
	pred func(addresses) bool
	on   onMatch
}

// tree is a matcher_tree: an input looked up in a map.
type tree struct {
	input  input
	prefix bool
	keys   []string // prefix maps: longest first
	m      map[string]*onMatch
}

// compileMatcher compiles the udp_proxy's matcher; errors name the field
// below it. clusters collects the clusters its actions name.
func compileMatcher(m *xdsmatcherv3.Matcher, clusters map[string]bool) (*matcher, error) {
	out := &matcher{}
	switch {
	case m.GetMatcherList() != nil:
		for i, fm := range m.GetMatcherList().GetMatchers() {
			path := fmt.Sprintf("matcher_list.matchers[%d]", i)
			p, err := compilePredicate(fm.GetPredicate(), path+".predicate")
			if err != nil {
				return nil, err
			}
			on, err := compileOnMatch(fm.GetOnMatch(), path+".on_match", clusters)
			if err != nil {
				return nil, err
			}
			out.list = append(out.list, listEntry{pred: p, on: *on})
		}
	case m.GetMatcherTree() != nil:
		t, err := compileTree(m.GetMatcherTree(), clusters)
		if err != nil {
			return nil, err
		}
		out.tree = t
	}
	if m.GetOnNoMatch() != nil {
		on, err := compileOnMatch(m.GetOnNoMatch(), "on_no_match", clusters)
		if err != nil {
			return nil, err
		}
		out.onNoMatch = on
	}
	return out, nil
}

func compileOnMatch(m *xdsmatcherv3.Matcher_OnMatch, path string, clusters map[string]bool) (*onMatch, error) {
	if m.GetKeepMatching() {
		return nil, errors.New(path + ".keep_matching: not supported by Outrigger")
	}
	switch {
	case m.GetMatcher() != nil:
		n, err := compileMatcher(m.GetMatcher(), clusters)
		if err != nil {
			return nil, fmt.Errorf("%s.matcher.%w", path, err)
		}
		return &onMatch{nested: n}, nil
	case m.GetAction() != nil:
		c, err := compileRoute(m.GetAction(), path+".action")
		if err != nil {
			return nil, err
		}
		clusters[c] = true
		return &onMatch{cluster: c}, nil
	}
	return nil, errors.New(path + ": an action or a matcher is required")
}

// compileRoute reads a Route action: the only action of Envoy's UDP router.
func compileRoute(tc *xdscorev3.TypedExtensionConfig, path string) (string, error) {
	a := tc.GetTypedConfig()
	if a == nil {
		return "", errors.New(path + ".typed_config: a " + string(proto.MessageName(&udpproxyv3.Route{})) + " action is required")
	}
	msg, err := a.UnmarshalNew()
	if err != nil {
		return "", fmt.Errorf("%s.typed_config: %w", path, err)
	}
	r, ok := msg.(*udpproxyv3.Route)
	if !ok {
		return "", fmt.Errorf("%s.typed_config: action %s is not supported by the UDP proxy (only %s)", path, proto.MessageName(msg), proto.MessageName(&udpproxyv3.Route{}))
	}
	if r.GetCluster() == "" {
		return "", errors.New(path + ".typed_config.cluster: must not be empty")
	}
	return r.GetCluster(), nil
}

func compileTree(t *xdsmatcherv3.Matcher_MatcherTree, clusters map[string]bool) (*tree, error) {
	in, err := compileInput(t.GetInput(), "matcher_tree.input")
	if err != nil {
		return nil, err
	}
	out := &tree{input: in, m: map[string]*onMatch{}}
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
		on, err := compileOnMatch(v, fmt.Sprintf("matcher_tree.%s.map[%q]", field, k), clusters)
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

func compilePredicate(p *xdsmatcherv3.Matcher_MatcherList_Predicate, path string) (func(addresses) bool, error) {
	switch {
	case p.GetSinglePredicate() != nil:
		sp := p.GetSinglePredicate()
		in, err := compileInput(sp.GetInput(), path+".single_predicate.input")
		if err != nil {
			return nil, err
		}
		if sp.GetValueMatch() == nil {
			return nil, errors.New(path + ".single_predicate.custom_match: not supported by Outrigger")
		}
		sm, err := httpmatch.CompileStringMatcher(sp.GetValueMatch())
		if err != nil {
			return nil, fmt.Errorf("%s.single_predicate.value_match.%w", path, err)
		}
		return func(a addresses) bool { return sm.Match(in(a)) }, nil
	case p.GetOrMatcher() != nil, p.GetAndMatcher() != nil:
		list, field, or := p.GetAndMatcher(), "and_matcher", false
		if p.GetOrMatcher() != nil {
			list, field, or = p.GetOrMatcher(), "or_matcher", true
		}
		var preds []func(addresses) bool
		for i, q := range list.GetPredicate() {
			c, err := compilePredicate(q, fmt.Sprintf("%s.%s.predicate[%d]", path, field, i))
			if err != nil {
				return nil, err
			}
			preds = append(preds, c)
		}
		return func(a addresses) bool {
			for _, q := range preds {
				if q(a) == or {
					return or
				}
			}
			return !or
		}, nil
	case p.GetNotMatcher() != nil:
		q, err := compilePredicate(p.GetNotMatcher(), path+".not_matcher")
		if err != nil {
			return nil, err
		}
		return func(a addresses) bool { return !q(a) }, nil
	}
	return nil, errors.New(path + ": a predicate is required")
}

// compileInput compiles one of the network inputs Envoy's UDP router
// reads: the source and destination IP and port.
func compileInput(tc *xdscorev3.TypedExtensionConfig, path string) (input, error) {
	a := tc.GetTypedConfig()
	if a == nil {
		return nil, errors.New(path + ".typed_config: an input is required")
	}
	msg, err := a.UnmarshalNew()
	if err != nil {
		return nil, fmt.Errorf("%s.typed_config: %w", path, err)
	}
	switch msg.(type) {
	case *networkinputsv3.SourceIPInput:
		return func(a addresses) string { return a.peer.Addr().Unmap().String() }, nil
	case *networkinputsv3.SourcePortInput:
		return func(a addresses) string { return strconv.Itoa(int(a.peer.Port())) }, nil
	case *networkinputsv3.DestinationIPInput:
		return func(a addresses) string { return a.local.Addr().Unmap().String() }, nil
	case *networkinputsv3.DestinationPortInput:
		return func(a addresses) string { return strconv.Itoa(int(a.local.Port())) }, nil
	}
	return nil, fmt.Errorf("%s.typed_config: input %s is not supported by the UDP proxy (source and destination IP and port inputs only)", path, proto.MessageName(msg))
}

// route returns the cluster of a datagram, false when nothing matches.
func (m *matcher) route(a addresses) (string, bool) {
	for i := range m.list {
		if m.list[i].pred(a) {
			if c, ok := m.list[i].on.resolve(a); ok {
				return c, true
			}
		}
	}
	if t := m.tree; t != nil {
		if on := t.lookup(t.input(a)); on != nil {
			if c, ok := on.resolve(a); ok {
				return c, true
			}
		}
	}
	if m.onNoMatch != nil {
		return m.onNoMatch.resolve(a)
	}
	return "", false
}

// lookup finds v's entry: exact, or the longest prefix of v.
func (t *tree) lookup(v string) *onMatch {
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

// resolve is the cluster of an on_match, through its nested matcher.
func (o *onMatch) resolve(a addresses) (string, bool) {
	if o.nested != nil {
		return o.nested.route(a)
	}
	return o.cluster, true
}

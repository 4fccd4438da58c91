package listener

import (
	"errors"
	"fmt"
	"net"

	listenerv3 "github.com/envoyproxy/go-control-plane/envoy/config/listener/v3"

	"github.com/outrigger-dev/outrigger/pkg/proxy/listenerfilter"
)

// maxPredicateDepth bounds the nesting of a filter_disabled predicate, so
// that a hostile configuration cannot exhaust the stack.
const maxPredicateDepth = 32

// portPredicate is a compiled ListenerFilterChainMatchPredicate: whether a
// listener filter is skipped for a connection, by the port the connection
// was sent to (after the filters before it restored it, as Envoy reads the
// socket's local address then).
type portPredicate func(port int) bool

// disabledWhen is a listener filter with its filter_disabled predicate:
// the filter does not run on the connections the predicate matches.
type disabledWhen struct {
	listenerfilter.Filter
	skip portPredicate
}

// OnAccept implements listenerfilter.Filter.
func (d disabledWhen) OnAccept(s *listenerfilter.Socket) error {
	if d.skip(localPort(s.LocalAddr())) {
		return nil
	}
	return d.Filter.OnAccept(s)
}

// localPort is the port of a connection's local address, -1 if it has
// none (a range never holds it).
func localPort(a net.Addr) int {
	if t, ok := a.(*net.TCPAddr); ok {
		return t.Port
	}
	return -1
}

// compilePredicate compiles filter_disabled (path is its field path for
// errors).
func compilePredicate(p *listenerv3.ListenerFilterChainMatchPredicate, path string, depth int) (portPredicate, error) {
	if depth > maxPredicateDepth {
		return nil, fmt.Errorf("%s: nested more than %d levels deep", path, maxPredicateDepth)
	}
	set := func(rules []*listenerv3.ListenerFilterChainMatchPredicate, field string) ([]portPredicate, error) {
		var out []portPredicate
		var errs []error
		for i, r := range rules {
			pp, err := compilePredicate(r, fmt.Sprintf("%s.%s.rules[%d]", path, field, i), depth+1)
			if err != nil {
				errs = append(errs, err)
				continue
			}
			out = append(out, pp)
		}
		return out, errors.Join(errs...)
	}
	switch r := p.GetRule().(type) {
	case *listenerv3.ListenerFilterChainMatchPredicate_AnyMatch:
		if !r.AnyMatch {
			return nil, fmt.Errorf("%s.any_match: must be true", path)
		}
		return func(int) bool { return true }, nil
	case *listenerv3.ListenerFilterChainMatchPredicate_DestinationPortRange:
		lo, hi := int(r.DestinationPortRange.GetStart()), int(r.DestinationPortRange.GetEnd())
		if lo >= hi {
			return nil, fmt.Errorf("%s.destination_port_range: start %d must be below end %d", path, lo, hi)
		}
		// Envoy's Int32Range is half-open: [start, end).
		return func(port int) bool { return port >= lo && port < hi }, nil
	case *listenerv3.ListenerFilterChainMatchPredicate_NotMatch:
		inner, err := compilePredicate(r.NotMatch, path+".not_match", depth+1)
		if err != nil {
			return nil, err
		}
		return func(port int) bool { return !inner(port) }, nil
	case *listenerv3.ListenerFilterChainMatchPredicate_OrMatch:
		rules, err := set(r.OrMatch.GetRules(), "or_match")
		if err != nil {
			return nil, err
		}
		return func(port int) bool {
			for _, m := range rules {
				if m(port) {
					return true
				}
			}
			return false
		}, nil
	case *listenerv3.ListenerFilterChainMatchPredicate_AndMatch:
		rules, err := set(r.AndMatch.GetRules(), "and_match")
		if err != nil {
			return nil, err
		}
		return func(port int) bool {
			for _, m := range rules {
				if !m(port) {
					return false
				}
			}
			return true
		}, nil
	}
	return nil, fmt.Errorf("%s: a rule is required", path)
}

package jwtauthn

import (
	"fmt"

	jwtv3 "github.com/envoyproxy/go-control-plane/envoy/extensions/filters/http/jwt_authn/v3"

	"github.com/outrigger-dev/outrigger/pkg/proxy/filterstate"
	"github.com/outrigger-dev/outrigger/pkg/proxy/httpfilter"
)

// stateRules is a compiled filter_state_rules: the requirement of a
// request no rule matched is the one requires maps the string value of
// the filter state object name to (none when the request has no such
// object, or its value is not a key), as Envoy's findVerifier.
type stateRules struct {
	name     string
	requires map[string]verifier
}

// compileStateRules compiles filter_state_rules (nil: none); errors name
// the field below it.
func (c *filterConfig) compileStateRules(fsr *jwtv3.FilterStateRule, comp *compiler) error {
	if fsr == nil || fsr.GetName() == "" || len(fsr.GetRequires()) == 0 {
		// Envoy looks nothing up then.
		return nil
	}
	sr := &stateRules{name: fsr.GetName(), requires: make(map[string]verifier, len(fsr.GetRequires()))}
	for _, k := range sortedKeys(fsr.GetRequires()) {
		v, err := comp.compile(fsr.GetRequires()[k])
		if err != nil {
			return fmt.Errorf("requires[%q].%w", k, err)
		}
		sr.requires[k] = v
	}
	c.state = sr
	return nil
}

// stateVerifier is the requirement filter_state_rules chooses for s, nil
// when it chooses none. The value must be a string object, as Envoy
// reads a StringAccessor: what sni_cluster keeps under
// envoy.tcp_proxy.cluster (the server name), or set_filter_state's
// envoy.string objects.
func (c *filterConfig) stateVerifier(s httpfilter.Stream) verifier {
	if c.state == nil {
		return nil
	}
	v, ok := s.FilterStateValue(c.state.name)
	if !ok {
		return nil
	}
	str, ok := filterstate.StringAccessorOf(v)
	if !ok {
		return nil
	}
	return c.state.requires[str]
}

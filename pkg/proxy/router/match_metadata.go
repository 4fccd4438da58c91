package router

import (
	"errors"
	"fmt"

	corev3 "github.com/envoyproxy/go-control-plane/envoy/config/core/v3"
	routev3 "github.com/envoyproxy/go-control-plane/envoy/config/route/v3"

	"github.com/outrigger-dev/outrigger/pkg/proxy/accesslog"
	"github.com/outrigger-dev/outrigger/pkg/proxy/filterstate"
)

// MetadataMatch is a compiled envoy.type.matcher.v3.MetadataMatcher: the
// value at its path in a stream's dynamic metadata (nil: none) matches.
type MetadataMatch interface {
	Match(md *corev3.Metadata) bool
}

// compileDynamicMetadata reads RouteMatch.dynamic_metadata into rm with the
// caller's matcher compiler (Options.MetadataMatcher). Errors name the
// field below the route match.
func compileDynamicMetadata(m *routev3.RouteMatch, rm *routeMatch, opts *Options) error {
	list := m.GetDynamicMetadata()
	if len(list) == 0 {
		return nil
	}
	if opts == nil || opts.MetadataMatcher == nil {
		return errors.New("dynamic_metadata: not supported here")
	}
	for i, mm := range list {
		c, err := opts.MetadataMatcher(mm)
		if err != nil {
			return fmt.Errorf("dynamic_metadata[%d].%w", i, err)
		}
		rm.dynamicMetadata = append(rm.dynamicMetadata, c)
	}
	return nil
}

// matchesMetadata reports whether every dynamic_metadata matcher of the
// route accepts the request's dynamic metadata.
func (m *routeMatch) matchesMetadata(req *Request) bool {
	for _, mm := range m.dynamicMetadata {
		if !mm.Match(req.DynamicMetadata) {
			return false
		}
	}
	return true
}

// filterStateMatch is a compiled FilterStateMatcher: the object under key
// has a string serialization, which the string matcher accepts, or, with
// addr, is an address in its ranges.
type filterStateMatch struct {
	key  string
	str  StringMatch
	addr *filterstate.AddressMatch
}

// compileFilterState reads RouteMatch.filter_state into rm. Errors name
// the field below the route match.
func compileFilterState(m *routev3.RouteMatch, rm *routeMatch) error {
	for i, fs := range m.GetFilterState() {
		path := fmt.Sprintf("filter_state[%d]", i)
		if am := fs.GetAddressMatch(); am != nil {
			a, err := filterstate.CompileAddressMatch(am)
			if err != nil {
				return fmt.Errorf("%s.address_match.%w", path, err)
			}
			rm.filterState = append(rm.filterState, filterStateMatch{key: fs.GetKey(), addr: a})
			continue
		}
		sm, err := CompileStringMatch(fs.GetStringMatch())
		if err != nil {
			return fmt.Errorf("%s.string_match.%w", path, err)
		}
		rm.filterState = append(rm.filterState, filterStateMatch{key: fs.GetKey(), str: sm})
	}
	return nil
}

// matchesFilterState reports whether every filter_state matcher finds its
// object, with a string serialization it accepts, as Envoy's
// FilterStateMatcher.
func (m *routeMatch) matchesFilterState(req *Request) bool {
	for i := range m.filterState {
		fm := &m.filterState[i]
		obj := req.FilterState[fm.key]
		if obj == nil && req.ConnFilterState != nil {
			v, _ := req.ConnFilterState.FilterState(fm.key)
			obj, _ = v.(accesslog.FilterStateObject)
		}
		if obj == nil {
			return false
		}
		if fm.addr != nil {
			if !fm.addr.Match(obj) {
				return false
			}
			continue
		}
		s, ok := obj.FilterStateString()
		if !ok || !fm.str.Matches(s) {
			return false
		}
	}
	return true
}

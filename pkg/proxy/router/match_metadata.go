package router

import (
	"errors"
	"fmt"

	corev3 "github.com/envoyproxy/go-control-plane/envoy/config/core/v3"
	routev3 "github.com/envoyproxy/go-control-plane/envoy/config/route/v3"
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

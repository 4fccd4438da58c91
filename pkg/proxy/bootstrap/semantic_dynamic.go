package bootstrap

import (
	bootstrapv3 "github.com/envoyproxy/go-control-plane/envoy/config/bootstrap/v3"
	corev3 "github.com/envoyproxy/go-control-plane/envoy/config/core/v3"
)

// dynamicResources checks dynamic_resources. Only listeners from a file
// are implemented; the support check refuses the other config sources by
// their own paths, but an lds_config with no source at all (or with only
// refused ones) would otherwise leave the listeners silently undiscovered.
func (s *semanticChecker) dynamicResources(d *bootstrapv3.Bootstrap_DynamicResources) {
	if lds := d.GetLdsConfig(); lds != nil {
		s.fileConfigSource(lds, "dynamic_resources.lds_config")
	}
}

// fileConfigSource requires a config source to name a file: a
// path_config_source, or the deprecated path that means the same. The
// oneof is read by reflection, which avoids the deprecated path's getters.
func (s *semanticChecker) fileConfigSource(cs *corev3.ConfigSource, path string) {
	m := cs.ProtoReflect()
	fd := m.WhichOneof(m.Descriptor().Oneofs().ByName("config_source_specifier"))
	switch {
	case fd != nil && fd.Name() == "path_config_source":
		// Its path's min_len constraint is checked with the others.
	case fd != nil && fd.Name() == "path":
		if m.Get(fd).String() == "" {
			s.fail(childPath(path, "path"), "must not be empty")
		}
	default:
		s.fail(path, "a path_config_source (or path) is required: Outrigger reads dynamic resources from a file only")
	}
}

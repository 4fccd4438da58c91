package bootstrap

import "testing"

// The original_src filters take mark; the listener filter's bind_port
// (not implemented by Envoy, which ignores it) is refused by its path.
func TestValidateOriginalSrc(t *testing.T) {
	const (
		lfURL = `type.googleapis.com/envoy.extensions.filters.listener.original_src.v3.OriginalSrc`
		hfURL = `type.googleapis.com/envoy.extensions.filters.http.original_src.v3.OriginalSrc`
	)
	hcm := `{name: hcm, typed_config: {"@type": ` + hcmURL + `, stat_prefix: x, ` + okRouteCfg +
		`, http_filters: [{name: envoy.filters.http.original_src, typed_config: {"@type": ` + hfURL + `, mark: 123}}, ` + routerFilter + `]}}`
	runValidateCases(t, map[string]validateCase{
		"listener filter with mark": {
			overlay: listenerYAML(`listener_filters: [{name: envoy.filters.listener.original_src, typed_config: {"@type": `+lfURL+`, mark: 123}}],`, hcm),
		},
		"bind_port": {
			overlay: listenerYAML(`listener_filters: [{name: envoy.filters.listener.original_src, typed_config: {"@type": `+lfURL+`, bind_port: true}}],`, hcm),
			want:    []string{"static_resources.listeners[1].listener_filters[0].typed_config.bind_port: not supported by Outrigger: Envoy's API hides it as not implemented and Envoy ignores it; the client's address without its port (mark too) is supported"},
		},
	})
}

package extension

import "testing"

func TestRefusal(t *testing.T) {
	r := testRegistry(t)
	r.SetUnsupported(map[string]string{
		"envoy.filters.http.wasm":          "WebAssembly is not embedded",
		"envoy.stat_sinks.metrics_service": "not yet",
	})
	cases := []struct{ name, typeURL, configured, want string }{
		{"by the config type", "type.googleapis.com/envoy.extensions.filters.http.wasm.v3.Wasm", "whatever",
			" (envoy.filters.http.wasm: WebAssembly is not embedded); see docs/extensions.md"},
		{"by the configured name when the type does not tell", "type.googleapis.com/envoy.config.metrics.v3.MetricsServiceConfig", "proxy.stat_sinks.metrics_service",
			" (envoy.stat_sinks.metrics_service: not yet); see docs/extensions.md"},
		{"by name only", "", "envoy.filters.http.wasm",
			" (envoy.filters.http.wasm: WebAssembly is not embedded); see docs/extensions.md"},
		{"a type the table does not list", "type.googleapis.com/foo.v1.Bar", "", "; see docs/extensions.md"},
		{"a later version of a listed extension's config", "type.googleapis.com/envoy.extensions.filters.http.wasm.v4alpha.Wasm", "",
			" (envoy.filters.http.wasm: WebAssembly is not embedded); see docs/extensions.md"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			if got := r.Refusal(c.typeURL, c.configured); got != c.want {
				t.Errorf("Refusal(%q, %q) = %q, want %q", c.typeURL, c.configured, got, c.want)
			}
		})
	}
	var none *Registry
	if got := none.Refusal("type.googleapis.com/envoy.extensions.filters.http.wasm.v3.Wasm", ""); got != "; see docs/extensions.md" {
		t.Errorf("a nil registry's refusal = %q", got)
	}
}

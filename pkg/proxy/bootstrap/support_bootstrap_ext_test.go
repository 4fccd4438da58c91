package bootstrap

import (
	"strings"
	"testing"
)

// bootstrap_extensions takes the internal_listener extension and nothing
// else; no other TypedExtensionConfig slot takes a bootstrap extension.
func TestValidateBootstrapExtensions(t *testing.T) {
	const (
		ilURL  = `type.googleapis.com/envoy.extensions.bootstrap.internal_listener.v3.InternalListener`
		re2URL = `type.googleapis.com/envoy.extensions.regex_engines.v3.GoogleRE2`
		// generic is what a TypedExtensionConfig elsewhere takes.
		generic = "envoy.network.dns_resolver or envoy.load_balancing_policies or envoy.regex_engines or envoy.compression.compressor or envoy.compression.decompressor or envoy.formatter or envoy.tracers.opentelemetry.resource_detectors or envoy.tracers.opentelemetry.samplers or envoy.filters.http or envoy.rate_limit_descriptors or envoy.router.cluster_specifier_plugin or envoy.http.original_ip_detection or envoy.internal_redirect_predicates or envoy.rbac.principals or envoy.rbac.matchers or envoy.health_check.event_sinks or envoy.path.match or envoy.path.rewrite or envoy.http.stateful_header_formatters or envoy.route.early_data_policy or envoy.tls.cert_validator or envoy.http.stateful_session or envoy.http.injected_credentials or envoy.common.key_value"
	)
	runValidateCases(t, map[string]validateCase{
		"internal_listener": {
			overlay: `bootstrap_extensions: [{name: envoy.bootstrap.internal_listener, typed_config: {"@type": ` + ilURL + `, buffer_size_kb: 64}}]`,
		},
		"a regex engine as a bootstrap extension": {
			overlay: `bootstrap_extensions: [{name: re2, typed_config: {"@type": ` + re2URL + `}}]`,
			want:    []string{`bootstrap_extensions[0].typed_config: extension "proxy.regex_engines.google_re2" (category envoy.regex_engines) cannot be used here: expected category envoy.bootstrap`},
		},
		"internal_listener as the regex engine": {
			overlay: `default_regex_engine: {name: il, typed_config: {"@type": ` + ilURL + `}}`,
			want:    []string{`default_regex_engine.typed_config: extension "proxy.bootstrap.internal_listener" (category envoy.bootstrap) cannot be used here: expected category ` + generic},
		},
		"internal_listener as the DNS resolver": {
			overlay: `typed_dns_resolver_config: {name: il, typed_config: {"@type": ` + ilURL + `}}`,
			want:    []string{`typed_dns_resolver_config.typed_config: extension "proxy.bootstrap.internal_listener" (category envoy.bootstrap) cannot be used here: expected category ` + generic},
		},
	})
}

// A bootstrap extension Outrigger does not link is refused at load with
// its path and type.
func TestLoadOtherBootstrapExtension(t *testing.T) {
	const sockURL = `type.googleapis.com/envoy.extensions.network.socket_interface.v3.DefaultSocketInterface`
	_, err := Load(LoadOptions{ConfigYAML: `bootstrap_extensions: [{name: envoy.extensions.network.socket_interface.default_socket_interface, typed_config: {"@type": ` + sockURL + `}}]`})
	want := `bootstrap_extensions[0].typed_config: unknown type "` + sockURL + `"`
	if err == nil || !strings.Contains(err.Error(), want) {
		t.Fatalf("error %v, want %q", err, want)
	}
}

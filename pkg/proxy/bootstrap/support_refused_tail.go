package bootstrap

import "google.golang.org/protobuf/reflect/protoreflect"

// refusedTail says why the last refused fields of filters otherwise
// supported (issue #15) are refused.
var refusedTail = map[protoreflect.FullName]string{
	"envoy.extensions.http.custom_response.redirect_policy.v3.RedirectPolicy.modify_request_headers_action": "not supported by Outrigger: " +
		"Envoy has no extension of this kind (its category, envoy.http.custom_response.redirect_policy.modify_request_headers_action, " +
		"holds only test factories), so there is no behaviour to implement; request_headers_to_add edits the redirected request",
	"envoy.extensions.filters.http.tap.v3.Tap.record_upstream_connection": "not supported by Outrigger: " +
		"the trace's upstream_connection is the upstream connection's local and remote addresses, and Outrigger's HTTP filters " +
		"are given the upstream host only, not the connection's local address",
	"envoy.config.tap.v3.OutputSink.streaming_admin": "not supported here: the admin sink is for a /tap request's tap_config " +
		"(POST /tap, supported); in a static configuration Envoy refuses it too (admin streaming output without the admin)",
	"envoy.config.tap.v3.OutputSink.buffered_admin": "not supported by Outrigger: Envoy's /tap keeps a session's traces until " +
		"max_traces or the timeout and answers them in one body; Outrigger's /tap streams each trace as it comes (streaming_admin), " +
		"and answers a tap_config with buffered_admin 400",
	"envoy.extensions.filters.http.composite.v3.ExecuteFilterAction.dynamic_config": "not supported by Outrigger: " +
		"it is delivered by extension config discovery (ECDS), which Outrigger does not implement (a connection manager's " +
		"config_discovery is refused too); typed_config, filter_chain and filter_chain_name are supported",
}

package bootstrap

import "google.golang.org/protobuf/reflect/protoreflect"

// supportedSetFilterState lists the fields of the set_filter_state HTTP
// and network filters (package filters/setfilterstate). Refused with their
// path: the network filter's on_downstream_data (Outrigger's network
// filters run once, before the terminal filter reads: none is called again
// on the first bytes) and shared_with_upstream other than
// NONE (Outrigger's internal upstream connections start with a filter
// state of their own).
var supportedSetFilterState = map[protoreflect.FullName]fieldSupport{
	"envoy.extensions.filters.http.set_filter_state.v3.Config.on_request_headers":               {},
	"envoy.extensions.filters.http.set_filter_state.v3.Config.clear_route_cache":                {},
	"envoy.extensions.filters.network.set_filter_state.v3.Config.on_new_connection":             {},
	"envoy.extensions.filters.network.set_filter_state.v3.Config.on_downstream_tls_handshake":   {},
	"envoy.extensions.filters.common.set_filter_state.v3.FilterStateValue.object_key":           {},
	"envoy.extensions.filters.common.set_filter_state.v3.FilterStateValue.factory_key":          {},
	"envoy.extensions.filters.common.set_filter_state.v3.FilterStateValue.format_string":        {},
	"envoy.extensions.filters.common.set_filter_state.v3.FilterStateValue.read_only":            {},
	"envoy.extensions.filters.common.set_filter_state.v3.FilterStateValue.skip_if_empty":        {},
	"envoy.extensions.filters.common.set_filter_state.v3.FilterStateValue.shared_with_upstream": {values: []string{"NONE"}},
}

// supportedJSONToMetadata lists the fields of envoy.filters.http.json_to_metadata
// (package filters/http/jsontometadata): all of them.
var supportedJSONToMetadata = map[protoreflect.FullName]fieldSupport{
	"envoy.extensions.filters.http.json_to_metadata.v3.JsonToMetadata.request_rules":                                 {},
	"envoy.extensions.filters.http.json_to_metadata.v3.JsonToMetadata.response_rules":                                {},
	"envoy.extensions.filters.http.json_to_metadata.v3.JsonToMetadata.MatchRules.rules":                              {},
	"envoy.extensions.filters.http.json_to_metadata.v3.JsonToMetadata.MatchRules.allow_content_types":                {},
	"envoy.extensions.filters.http.json_to_metadata.v3.JsonToMetadata.MatchRules.allow_empty_content_type":           {},
	"envoy.extensions.filters.http.json_to_metadata.v3.JsonToMetadata.MatchRules.allow_content_types_regex":          {},
	"envoy.extensions.filters.http.json_to_metadata.v3.JsonToMetadata.Rule.selectors":                                {},
	"envoy.extensions.filters.http.json_to_metadata.v3.JsonToMetadata.Rule.on_present":                               {},
	"envoy.extensions.filters.http.json_to_metadata.v3.JsonToMetadata.Rule.on_missing":                               {},
	"envoy.extensions.filters.http.json_to_metadata.v3.JsonToMetadata.Rule.on_error":                                 {},
	"envoy.extensions.filters.http.json_to_metadata.v3.JsonToMetadata.Selector.key":                                  {},
	"envoy.extensions.filters.http.json_to_metadata.v3.JsonToMetadata.KeyValuePair.metadata_namespace":               {},
	"envoy.extensions.filters.http.json_to_metadata.v3.JsonToMetadata.KeyValuePair.key":                              {},
	"envoy.extensions.filters.http.json_to_metadata.v3.JsonToMetadata.KeyValuePair.value":                            {},
	"envoy.extensions.filters.http.json_to_metadata.v3.JsonToMetadata.KeyValuePair.type":                             {},
	"envoy.extensions.filters.http.json_to_metadata.v3.JsonToMetadata.KeyValuePair.preserve_existing_metadata_value": {},
}

package bootstrap

import (
	"regexp"

	"google.golang.org/protobuf/reflect/protoreflect"
)

// extProcResponseCategory is the category of ext_proc's
// on_processing_response extensions, which go there only.
const extProcResponseCategory = "envoy.http.ext_proc.response_processors"

// extProcResponsePath is the typed_config of an ext_proc filter's
// on_processing_response (see slotCategories).
var extProcResponsePath = regexp.MustCompile(`\.on_processing_response\.typed_config$`)

// extProcModifierCategory is the category of ext_proc's
// processing_request_modifier extensions, which go there only.
const extProcModifierCategory = "envoy.http.ext_proc.processing_request_modifiers"

// extProcModifierPath is the typed_config of an ext_proc filter's (or its
// per-route overrides') processing_request_modifier.
var extProcModifierPath = regexp.MustCompile(`\.processing_request_modifier\.typed_config$`)

// supportedExtProc lists the fields of envoy.filters.http.ext_proc that
// Outrigger implements (see supportedCore), and of its per-route
// ExtProcPerRoute. Not listed, so refused with their path:
// the typed receiving namespaces, and per route async_mode (deprecated, never implemented in Envoy: see
// envoyUnimplemented). The filter refuses
// cluster_metadata_forwarding_namespaces per route. The GRPC body mode is
// left out of the values (Envoy does not implement it); the filter's
// Compile refuses mutation_rules.allow_all_routing true and applies
// Envoy's checks of FULL_DUPLEX_STREAMED (extproc/duplex.go).
var supportedExtProc = map[protoreflect.FullName]fieldSupport{
	"envoy.extensions.filters.http.ext_proc.v3.ExternalProcessor.grpc_service":       {},
	"envoy.extensions.filters.http.ext_proc.v3.ExternalProcessor.failure_mode_allow": {},
	// CEL attributes (package cel), sent with the headers messages.
	"envoy.extensions.filters.http.ext_proc.v3.ExternalProcessor.request_attributes":         {},
	"envoy.extensions.filters.http.ext_proc.v3.ExternalProcessor.response_attributes":        {},
	"envoy.extensions.filters.http.ext_proc.v3.ExternalProcessor.processing_mode":            {},
	"envoy.extensions.filters.http.ext_proc.v3.ExternalProcessor.message_timeout":            {},
	"envoy.extensions.filters.http.ext_proc.v3.ExternalProcessor.stat_prefix":                {},
	"envoy.extensions.filters.http.ext_proc.v3.ExternalProcessor.mutation_rules":             {},
	"envoy.extensions.filters.http.ext_proc.v3.ExternalProcessor.max_message_timeout":        {},
	"envoy.extensions.filters.http.ext_proc.v3.ExternalProcessor.forward_rules":              {},
	"envoy.extensions.filters.http.ext_proc.v3.ExternalProcessor.allow_mode_override":        {},
	"envoy.extensions.filters.http.ext_proc.v3.ExternalProcessor.disable_immediate_response": {},
	"envoy.extensions.filters.http.ext_proc.v3.ExternalProcessor.metadata_options":           {},
	"envoy.extensions.filters.http.ext_proc.v3.ExternalProcessor.disable_clear_route_cache":  {},
	"envoy.extensions.filters.http.ext_proc.v3.ExternalProcessor.route_cache_action":         {},
	"envoy.extensions.filters.http.ext_proc.v3.ExternalProcessor.status_on_error":            {},
	"envoy.extensions.filters.http.ext_proc.v3.ExternalProcessor.allowed_override_modes":     {},
	"envoy.extensions.filters.http.ext_proc.v3.ExternalProcessor.observability_mode":         {},
	"envoy.extensions.filters.http.ext_proc.v3.ExternalProcessor.deferred_close_timeout":     {},
	"envoy.extensions.filters.http.ext_proc.v3.ExternalProcessor.filter_metadata":            {},
	// STREAMED request bodies go to the processor while the headers'
	// answer is awaited (extproc/early.go); refused in upstream chains.
	"envoy.extensions.filters.http.ext_proc.v3.ExternalProcessor.send_body_without_waiting_for_header_response": {},
	// The processor's content-length declared to the connection
	// manager, which holds the body to it (extproc/length.go).
	"envoy.extensions.filters.http.ext_proc.v3.ExternalProcessor.allow_content_length_header": {},
	// The save_processing_response processor (extproc/onresponse.go).
	"envoy.extensions.filters.http.ext_proc.v3.ExternalProcessor.on_processing_response": {},
	// An HTTP processor, headers only (extproc/httpservice.go); the
	// filter refuses the HttpService's request_headers_to_add.
	"envoy.extensions.filters.http.ext_proc.v3.ExternalProcessor.http_service":  {},
	"envoy.extensions.filters.http.ext_proc.v3.ExtProcHttpService.http_service": {},
	// The mapped_attribute_builder modifier (extproc/modifier.go).
	"envoy.extensions.filters.http.ext_proc.v3.ExternalProcessor.processing_request_modifier":                                                   {},
	"envoy.extensions.filters.http.ext_proc.v3.ExtProcOverrides.processing_request_modifier":                                                    {},
	"envoy.extensions.http.ext_proc.processing_request_modifiers.mapped_attribute_builder.v3.MappedAttributeBuilder.mapped_request_attributes":  {},
	"envoy.extensions.http.ext_proc.processing_request_modifiers.mapped_attribute_builder.v3.MappedAttributeBuilder.mapped_response_attributes": {},

	"envoy.extensions.http.ext_proc.response_processors.save_processing_response.v3.SaveProcessingResponse.filter_state_name_suffix":  {},
	"envoy.extensions.http.ext_proc.response_processors.save_processing_response.v3.SaveProcessingResponse.save_request_headers":      {},
	"envoy.extensions.http.ext_proc.response_processors.save_processing_response.v3.SaveProcessingResponse.save_response_headers":     {},
	"envoy.extensions.http.ext_proc.response_processors.save_processing_response.v3.SaveProcessingResponse.save_request_trailers":     {},
	"envoy.extensions.http.ext_proc.response_processors.save_processing_response.v3.SaveProcessingResponse.save_response_trailers":    {},
	"envoy.extensions.http.ext_proc.response_processors.save_processing_response.v3.SaveProcessingResponse.save_immediate_response":   {},
	"envoy.extensions.http.ext_proc.response_processors.save_processing_response.v3.SaveProcessingResponse.SaveOptions.save_response": {},
	"envoy.extensions.http.ext_proc.response_processors.save_processing_response.v3.SaveProcessingResponse.SaveOptions.save_on_error": {},

	"envoy.extensions.filters.http.ext_proc.v3.ProcessingMode.request_header_mode":  {},
	"envoy.extensions.filters.http.ext_proc.v3.ProcessingMode.response_header_mode": {},
	"envoy.extensions.filters.http.ext_proc.v3.ProcessingMode.request_body_mode": {
		values: []string{"NONE", "STREAMED", "BUFFERED", "BUFFERED_PARTIAL", "FULL_DUPLEX_STREAMED"},
	},
	"envoy.extensions.filters.http.ext_proc.v3.ProcessingMode.response_body_mode": {
		values: []string{"NONE", "STREAMED", "BUFFERED", "BUFFERED_PARTIAL", "FULL_DUPLEX_STREAMED"},
	},
	"envoy.extensions.filters.http.ext_proc.v3.ProcessingMode.request_trailer_mode":  {},
	"envoy.extensions.filters.http.ext_proc.v3.ProcessingMode.response_trailer_mode": {},

	"envoy.extensions.filters.http.ext_proc.v3.HeaderForwardingRules.allowed_headers":    {},
	"envoy.extensions.filters.http.ext_proc.v3.HeaderForwardingRules.disallowed_headers": {},

	"envoy.extensions.filters.http.ext_proc.v3.MetadataOptions.forwarding_namespaces":                  {},
	"envoy.extensions.filters.http.ext_proc.v3.MetadataOptions.receiving_namespaces":                   {},
	"envoy.extensions.filters.http.ext_proc.v3.MetadataOptions.cluster_metadata_forwarding_namespaces": {},
	"envoy.extensions.filters.http.ext_proc.v3.MetadataOptions.MetadataNamespaces.untyped":             {},
	// Typed namespaces forward; the filter refuses typed receiving ones.
	"envoy.extensions.filters.http.ext_proc.v3.MetadataOptions.MetadataNamespaces.typed": {},

	"envoy.config.common.mutation_rules.v3.HeaderMutationRules.allow_all_routing":   {},
	"envoy.config.common.mutation_rules.v3.HeaderMutationRules.allow_envoy":         {},
	"envoy.config.common.mutation_rules.v3.HeaderMutationRules.disallow_system":     {},
	"envoy.config.common.mutation_rules.v3.HeaderMutationRules.disallow_all":        {},
	"envoy.config.common.mutation_rules.v3.HeaderMutationRules.allow_expression":    {},
	"envoy.config.common.mutation_rules.v3.HeaderMutationRules.disallow_expression": {},
	"envoy.config.common.mutation_rules.v3.HeaderMutationRules.disallow_is_error":   {},

	"envoy.extensions.filters.http.ext_proc.v3.ExtProcPerRoute.disabled":               {},
	"envoy.extensions.filters.http.ext_proc.v3.ExtProcPerRoute.overrides":              {},
	"envoy.extensions.filters.http.ext_proc.v3.ExtProcOverrides.processing_mode":       {},
	"envoy.extensions.filters.http.ext_proc.v3.ExtProcOverrides.grpc_service":          {},
	"envoy.extensions.filters.http.ext_proc.v3.ExtProcOverrides.failure_mode_allow":    {},
	"envoy.extensions.filters.http.ext_proc.v3.ExtProcOverrides.metadata_options":      {},
	"envoy.extensions.filters.http.ext_proc.v3.ExtProcOverrides.grpc_initial_metadata": {},
	// The span of a gRPC processor's stream (filter and route); the
	// filter refuses it with an http_service, which Envoy does not trace.
	"envoy.extensions.filters.http.ext_proc.v3.ExternalProcessor.emit_client_span": {},
	"envoy.extensions.filters.http.ext_proc.v3.ExtProcOverrides.emit_client_span":  {},
	// A route's attribute lists, in place of the filter's (extproc/route.go).
	"envoy.extensions.filters.http.ext_proc.v3.ExtProcOverrides.request_attributes":  {},
	"envoy.extensions.filters.http.ext_proc.v3.ExtProcOverrides.response_attributes": {},
}

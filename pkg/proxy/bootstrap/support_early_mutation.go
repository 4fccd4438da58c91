package bootstrap

import "google.golang.org/protobuf/reflect/protoreflect"

// supportedEarlyMutation lists the connection manager's
// early_header_mutation_extensions (pkg/proxy/httpconn early_mutation.go)
// and the header_mutation extension's configuration: its mutations are
// mutation_rules HeaderMutations, listed with the routes' mirror policies
// (request_headers_mutations), which compile them the same way.
var supportedEarlyMutation = map[protoreflect.FullName]fieldSupport{
	"envoy.extensions.filters.network.http_connection_manager.v3.HttpConnectionManager.early_header_mutation_extensions": {},
	"envoy.extensions.http.early_header_mutation.header_mutation.v3.HeaderMutation.mutations":                            {},
}

// Package xds is the subscription side of dynamic configuration: it reads
// discovery responses and hands their resources to the part of the server
// that applies them. The only transport implemented is the file, as
// Envoy's filesystem subscription: a bootstrap's
// dynamic_resources.lds_config.path_config_source names a file holding an
// envoy.service.discovery.v3.DiscoveryResponse, which is read once at start
// and again each time a file is moved into place.
//
// A FileSubscription keeps Envoy's subscription stats (update_attempt,
// update_success, update_failure, update_rejected, version, version_text...)
// under the scope it is given, applies the unknown-field policy of
// --reject-unknown-dynamic-fields and --ignore-unknown-dynamic-fields, and
// calls its apply function with each decoded update, one at a time.
//
// The discovery messages are built here from a descriptor instead of being
// linked in as generated code: go-control-plane's generated package for
// them also holds the gRPC services, and would bring in gRPC.
package xds

// Package xds is the subscription side of dynamic configuration: it reads
// discovery responses and hands their resources to the part of the server
// that applies them. These transports are implemented:
//
//   - the file, as Envoy's filesystem subscription: a bootstrap's
//     dynamic_resources.lds_config.path_config_source names a file holding
//     an envoy.service.discovery.v3.DiscoveryResponse, which is read once
//     at start and again each time a file is moved into place
//     (FileSubscription);
//   - the Aggregated Discovery Service, state of the world over gRPC, as
//     Envoy's GrpcMuxImpl: one stream to the management server carries
//     the subscriptions, each response is ACKed or NACKed, and a lost
//     stream is opened again with a jittered backoff (ADS,
//     ADSSubscription);
//   - the same stream in the incremental (delta) protocol, as Envoy's
//     NewGrpcMuxImpl: per-resource versions, subscribe and unsubscribe
//     requests, removed resources and initial_resource_versions on a new
//     stream; each response is merged into what is held and handed to the
//     same apply functions (ADSOptions.Delta, ads_delta.go);
//   - REST polling of one resource type's endpoint, as Envoy's
//     HttpSubscriptionImpl: the same subscriptions, decoding, apply
//     functions and stats, a JSON DiscoveryRequest POSTed every jittered
//     refresh delay in place of a stream (ADSOptions.REST, rest.go).
//
// All keep Envoy's subscription stats (update_attempt, update_success,
// update_failure, update_rejected, version, version_text...) under the
// scope they are given, apply the unknown-field policy of
// --reject-unknown-dynamic-fields and --ignore-unknown-dynamic-fields, and
// call their apply function with each decoded update, one at a time. A
// gRPC response goes through the same decoder as a file, in its wire form.
//
// The discovery messages of a file are built here from a descriptor
// rather than taken from go-control-plane's generated package, whose types
// the gRPC client uses: the decoder resolves the generated types first
// when they are linked in.
package xds

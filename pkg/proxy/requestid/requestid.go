// Package requestid is the vocabulary of Envoy's request id extensions
// (category envoy.request_id): what the connection manager's
// request_id_extension changes in how it treats x-request-id. The
// extensions themselves are packages below this one.
package requestid

import "google.golang.org/protobuf/proto"

// Category is Envoy's category of request id extensions.
const Category = "envoy.request_id"

// Behaviour is how the connection manager uses x-request-id for tracing.
// Default is Envoy's behaviour without request_id_extension.
type Behaviour struct {
	// PackTraceReason: the trace decision is written into the id's
	// version digit and read back from it, so that the proxies further
	// on keep it. Off, the id is never modified and carries no decision.
	PackTraceReason bool
	// SampleByID: random_sampling and overall_sampling draw their number
	// from the id, so that every proxy takes the same decision for a
	// request. Off, the connection manager leaves sampling to the
	// tracer: every request is a candidate (reason "sampling").
	SampleByID bool
}

// Default is the behaviour of a connection manager without
// request_id_extension: Envoy's UUID extension with its defaults.
func Default() Behaviour {
	return Behaviour{PackTraceReason: true, SampleByID: true}
}

// Factory compiles the configuration of a request id extension.
type Factory interface {
	Compile(config proto.Message) (Behaviour, error)
}

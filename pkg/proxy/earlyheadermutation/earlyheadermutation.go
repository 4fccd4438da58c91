// Package earlyheadermutation is the vocabulary of Envoy's early header
// mutation extensions (category envoy.http.early_header_mutation): the
// connection manager's early_header_mutation_extensions edit a request's
// headers before routing, tracing and any HTTP filter. The extensions are
// packages below this one.
package earlyheadermutation

import (
	"google.golang.org/protobuf/proto"

	"github.com/outrigger-dev/outrigger/pkg/proxy/accesslog"
	"github.com/outrigger-dev/outrigger/pkg/proxy/router"
)

// Category is Envoy's category of early header mutation extensions.
const Category = "envoy.http.early_header_mutation"

// Mutation is a compiled extension.
type Mutation interface {
	// Mutate edits the request's headers h; e is the request's stream
	// info so far (the values of % operators). It returns false to stop
	// the extensions after it, as Envoy's mutate does.
	Mutate(h router.HeaderEditor, e *accesslog.Entry) bool
}

// Factory compiles the configuration of an extension; errors name the
// field below it.
type Factory interface {
	Compile(config proto.Message) (Mutation, error)
}

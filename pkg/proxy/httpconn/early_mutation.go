package httpconn

import (
	hcmv3 "github.com/envoyproxy/go-control-plane/envoy/extensions/filters/network/http_connection_manager/v3"
	"google.golang.org/protobuf/proto"

	"github.com/outrigger-dev/outrigger/pkg/proxy/earlyheadermutation"
)

// readEarlyMutations compiles early_header_mutation_extensions.
func readEarlyMutations(cfg *hcmv3.HttpConnectionManager, deps Deps) ([]earlyheadermutation.Mutation, error) {
	exts := cfg.GetEarlyHeaderMutationExtensions()
	if len(exts) == 0 {
		return nil, nil
	}
	return compileTypedExtensions("early_header_mutation_extensions", "early header mutation extension", earlyheadermutation.Category, exts, deps,
		func(f earlyheadermutation.Factory, msg proto.Message) (earlyheadermutation.Mutation, error) {
			return f.Compile(msg)
		})
}

// earlyMutate runs the early header mutation extensions on the request's
// headers, in order, before routing, tracing and the HTTP filters see
// them, as Envoy's connection manager does; an extension may stop the
// ones after it.
func (s *stream) earlyMutate() {
	for _, mu := range s.m.cfg.earlyMutations {
		if !mu.Mutate(&s.reqHeaders, &s.entry) {
			return
		}
	}
}

// Package headermutation is the early header mutation extension
// envoy.http.early_header_mutation.header_mutation: a list of header
// mutations (remove, append, remove_on_match) applied to every request
// before routing, as Envoy's.
package headermutation

import (
	"fmt"

	hmv3 "github.com/envoyproxy/go-control-plane/envoy/extensions/http/early_header_mutation/header_mutation/v3"
	"google.golang.org/protobuf/proto"

	"github.com/outrigger-dev/outrigger/pkg/proxy/accesslog"
	"github.com/outrigger-dev/outrigger/pkg/proxy/earlyheadermutation"
	"github.com/outrigger-dev/outrigger/pkg/proxy/router"
)

// Name is the extension's name in Outrigger's spelling.
const Name = "proxy.http.early_header_mutation.header_mutation"

// Factory compiles HeaderMutation.
type Factory struct{}

// Compile implements earlyheadermutation.Factory.
func (Factory) Compile(config proto.Message) (earlyheadermutation.Mutation, error) {
	c, ok := config.(*hmv3.HeaderMutation)
	if !ok {
		return nil, fmt.Errorf("expected %s, got %T", Name, config)
	}
	ms, err := router.CompileHeaderMutations(c.GetMutations())
	if err != nil {
		return nil, fmt.Errorf("mutations%w", err)
	}
	return mutation{ms}, nil
}

// mutation is a compiled HeaderMutation.
type mutation struct{ ms router.HeaderMutations }

// Mutate implements earlyheadermutation.Mutation: the mutations in order;
// the extensions after it always run, as Envoy's does.
func (m mutation) Mutate(h router.HeaderEditor, e *accesslog.Entry) bool {
	m.ms.Apply(h, e)
	return true
}

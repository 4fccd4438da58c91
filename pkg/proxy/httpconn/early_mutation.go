package httpconn

import (
	"errors"
	"fmt"

	hcmv3 "github.com/envoyproxy/go-control-plane/envoy/extensions/filters/network/http_connection_manager/v3"

	"github.com/outrigger-dev/outrigger/pkg/proxy/earlyheadermutation"
	"github.com/outrigger-dev/outrigger/pkg/proxy/extension"
)

// readEarlyMutations compiles early_header_mutation_extensions.
func readEarlyMutations(cfg *hcmv3.HttpConnectionManager, deps Deps) ([]earlyheadermutation.Mutation, error) {
	exts := cfg.GetEarlyHeaderMutationExtensions()
	if len(exts) == 0 {
		return nil, nil
	}
	var (
		out  []earlyheadermutation.Mutation
		errs []error
	)
	for i, tc := range exts {
		path := fmt.Sprintf("early_header_mutation_extensions[%d]", i)
		ext, msg, err := deps.Extensions.Resolve(extension.Ref{
			Kind: "early header mutation extension", Category: earlyheadermutation.Category, Name: tc.GetName(), Config: tc.GetTypedConfig(),
		}, false)
		if err != nil {
			errs = append(errs, fmt.Errorf("%s.%w", path, err))
			continue
		}
		f, ok := ext.Factory.(earlyheadermutation.Factory)
		if !ok {
			errs = append(errs, fmt.Errorf("%s.typed_config: extension %q is not an early header mutation extension", path, ext.Name))
			continue
		}
		mu, err := f.Compile(msg)
		if err != nil {
			errs = append(errs, fmt.Errorf("%s.typed_config.%w", path, err))
			continue
		}
		out = append(out, mu)
	}
	return out, errors.Join(errs...)
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

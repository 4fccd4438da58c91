// Package headermutation is the header mutation HTTP filter
// (envoy.filters.http.header_mutation): it edits the request headers on
// the way in and the response headers on the way out with ordered lists
// of removals and appends, from its own configuration and from the
// per-route HeaderMutationPerRoute of the route, virtual host and route
// table, in Envoy's order.
package headermutation

import (
	"errors"
	"fmt"
	"strings"

	mutationv3 "github.com/envoyproxy/go-control-plane/envoy/config/common/mutation_rules/v3"
	corev3 "github.com/envoyproxy/go-control-plane/envoy/config/core/v3"
	hmv3 "github.com/envoyproxy/go-control-plane/envoy/extensions/filters/http/header_mutation/v3"
	"google.golang.org/protobuf/proto"

	"github.com/outrigger-dev/outrigger/pkg/proxy/accesslog"
	"github.com/outrigger-dev/outrigger/pkg/proxy/httpfilter"
	"github.com/outrigger-dev/outrigger/pkg/proxy/router"
)

// Name is the filter's name in the proxy. spelling.
const Name = "proxy.filters.http.header_mutation"

// Factory builds the filter and compiles its per-route configurations.
type Factory struct{}

var (
	_ httpfilter.Factory         = Factory{}
	_ httpfilter.RouteFactory    = Factory{}
	_ httpfilter.UpstreamCapable = Factory{}
)

// UpstreamCapable implements httpfilter.UpstreamCapable: as in Envoy, the
// filter may run in an upstream chain, where it edits the request as it
// goes to the attempt's host and the response that host sends.
func (Factory) UpstreamCapable() {}

// Compile implements httpfilter.Factory.
func (Factory) Compile(config proto.Message, ctx httpfilter.Context) (httpfilter.Config, error) {
	c, ok := config.(*hmv3.HeaderMutation)
	if !ok {
		return nil, errors.New("not a HeaderMutation configuration")
	}
	m, err := compileMutations(c.GetMutations())
	if err != nil {
		return nil, fmt.Errorf("mutations.%w", err)
	}
	return &filterConfig{
		name:             ctx.Name,
		own:              m,
		mostSpecificWins: c.GetMostSpecificHeaderMutationsWins(),
	}, nil
}

// CompileRoute implements httpfilter.RouteFactory: HeaderMutationPerRoute.
func (Factory) CompileRoute(config proto.Message, _ httpfilter.Context) (httpfilter.RouteConfig, error) {
	c, ok := config.(*hmv3.HeaderMutationPerRoute)
	if !ok {
		return nil, errors.New("not a HeaderMutationPerRoute configuration")
	}
	m, err := compileMutations(c.GetMutations())
	if err != nil {
		return nil, fmt.Errorf("mutations.%w", err)
	}
	return m, nil
}

// mutations is a compiled Mutations message: the request's and the
// response's edits, each applied in order.
type mutations struct {
	request, response []router.HeaderMutation
}

// compileMutations compiles m; errors name the field below mutations.
func compileMutations(m *hmv3.Mutations) (*mutations, error) {
	switch {
	case len(m.GetQueryParameterMutations()) > 0:
		return nil, errors.New("query_parameter_mutations: not supported by Outrigger")
	case len(m.GetRequestTrailersMutations()) > 0:
		return nil, errors.New("request_trailers_mutations: not supported by Outrigger")
	case len(m.GetResponseTrailersMutations()) > 0:
		return nil, errors.New("response_trailers_mutations: not supported by Outrigger")
	}
	req, err := compileList(m.GetRequestMutations(), "request_mutations")
	if err != nil {
		return nil, err
	}
	resp, err := compileList(m.GetResponseMutations(), "response_mutations")
	if err != nil {
		return nil, err
	}
	return &mutations{request: req, response: resp}, nil
}

// compileList compiles a list of HeaderMutations, one edit each, so that
// removals and appends keep their order as in Envoy's HeaderMutations.
func compileList(list []*mutationv3.HeaderMutation, field string) ([]router.HeaderMutation, error) {
	out := make([]router.HeaderMutation, 0, len(list))
	for i, hm := range list {
		path := fmt.Sprintf("%s[%d]", field, i)
		var (
			m   router.HeaderMutation
			err error
		)
		switch a := hm.GetAction().(type) {
		case *mutationv3.HeaderMutation_Remove:
			m, err = router.CompileHeaderMutation(nil, []string{a.Remove}, "", "")
			if err != nil {
				return nil, fmt.Errorf("%s.remove: %s", path, strings.TrimPrefix(err.Error(), "[0]: "))
			}
		case *mutationv3.HeaderMutation_Append:
			if err := literal(a.Append); err != nil {
				return nil, fmt.Errorf("%s.append.%w", path, err)
			}
			m, err = router.CompileHeaderMutation([]*corev3.HeaderValueOption{a.Append}, nil, "", "")
			if err != nil {
				return nil, fmt.Errorf("%s.append.%s", path, strings.TrimPrefix(err.Error(), "[0]."))
			}
		case *mutationv3.HeaderMutation_RemoveOnMatch_:
			return nil, fmt.Errorf("%s.remove_on_match: not supported by Outrigger", path)
		default:
			return nil, fmt.Errorf("%s: no action set", path)
		}
		out = append(out, m)
	}
	return out, nil
}

// literal refuses values with command operators (%REQ(...)% and the
// like): the filter has no access-log entry of the stream to render them
// from, and a value rendered from nothing would silently differ from
// Envoy's.
func literal(o *corev3.HeaderValueOption) error {
	f, err := accesslog.Text(accesslog.TranslateLegacyHeaderFormat(o.GetHeader().GetValue()), true)
	if err != nil {
		return fmt.Errorf("header.value: %w", err)
	}
	if _, ok := f.Literal(); !ok {
		return errors.New("header.value: command operators are not supported by Outrigger in this filter")
	}
	return nil
}

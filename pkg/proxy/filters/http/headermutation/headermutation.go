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
	"github.com/outrigger-dev/outrigger/pkg/proxy/extension"
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
	m, err := compileMutations(c.GetMutations(), ctx.Extensions)
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
func (Factory) CompileRoute(config proto.Message, ctx httpfilter.Context) (httpfilter.RouteConfig, error) {
	c, ok := config.(*hmv3.HeaderMutationPerRoute)
	if !ok {
		return nil, errors.New("not a HeaderMutationPerRoute configuration")
	}
	m, err := compileMutations(c.GetMutations(), ctx.Extensions)
	if err != nil {
		return nil, fmt.Errorf("mutations.%w", err)
	}
	return m, nil
}

// mutations is a compiled Mutations message: the request's and the
// response's header edits, each applied in order, and the request's query
// parameter edits. formats records that a value
// uses % operators, so that the stream's entry is looked at only then.
type mutations struct {
	request, response []edit
	// query are the query_parameter_mutations, applied to the request's
	// :path after its header edits.
	query []queryMutation
	// requestTrailers and responseTrailers edit the trailers of a
	// message that has some.
	requestTrailers, responseTrailers []edit
	formats                           bool
	// formatters are the message's formatter extensions, whose operators
	// its values may use.
	formatters accesslog.Formatters
}

// edit is one HeaderMutation: header edits (a removal or an append,
// router.HeaderMutation) or, with match set, the removal of every header
// whose name it matches (remove_on_match).
type edit struct {
	ops   router.HeaderMutation
	match *router.StringMatcher
}

// compileMutations compiles m, whose values may use the operators of its
// formatters (found in reg), as Envoy's: they apply to this message only.
// Errors name the field below mutations.
func compileMutations(m *hmv3.Mutations, reg *extension.Registry) (*mutations, error) {
	out := &mutations{}
	var err error
	if out.formatters, err = accesslog.CompileFormatters(m.GetFormatters(), reg); err != nil {
		return nil, err
	}
	if out.request, err = out.compileList(m.GetRequestMutations(), "request_mutations"); err != nil {
		return nil, err
	}
	if out.response, err = out.compileList(m.GetResponseMutations(), "response_mutations"); err != nil {
		return nil, err
	}
	if out.requestTrailers, err = out.compileList(m.GetRequestTrailersMutations(), "request_trailers_mutations"); err != nil {
		return nil, err
	}
	if out.responseTrailers, err = out.compileList(m.GetResponseTrailersMutations(), "response_trailers_mutations"); err != nil {
		return nil, err
	}
	q, formats, err := compileQueryMutations(m.GetQueryParameterMutations(), out.formatters)
	if err != nil {
		return nil, err
	}
	if len(q) > 0 {
		out.query = q
	}
	out.formats = out.formats || formats
	return out, nil
}

// compileList compiles a list of HeaderMutations, one edit each, so that
// removals, appends and removals by match keep their order as in Envoy's
// HeaderMutations.
func (ms *mutations) compileList(list []*mutationv3.HeaderMutation, field string) ([]edit, error) {
	out := make([]edit, 0, len(list))
	for i, hm := range list {
		path := fmt.Sprintf("%s[%d]", field, i)
		var e edit
		switch a := hm.GetAction().(type) {
		case *mutationv3.HeaderMutation_Remove:
			m, err := router.CompileHeaderMutation(nil, []string{a.Remove}, "", "")
			if err != nil {
				return nil, fmt.Errorf("%s.remove: %s", path, strings.TrimPrefix(err.Error(), "[0]: "))
			}
			e.ops = m
		case *mutationv3.HeaderMutation_Append:
			formatted, err := usesOperators(a.Append, ms.formatters)
			if err != nil {
				return nil, fmt.Errorf("%s.append.%w", path, err)
			}
			ms.formats = ms.formats || formatted
			m, err := router.CompileHeaderMutationWith([]*corev3.HeaderValueOption{a.Append}, nil, "", "", ms.formatters)
			if err != nil {
				return nil, fmt.Errorf("%s.append.%s", path, strings.TrimPrefix(err.Error(), "[0]."))
			}
			e.ops = m
		case *mutationv3.HeaderMutation_RemoveOnMatch_:
			sm, err := router.CompileStringMatcher(a.RemoveOnMatch.GetKeyMatcher())
			if err != nil {
				return nil, fmt.Errorf("%s.remove_on_match.key_matcher.%w", path, err)
			}
			e.match = &sm
		default:
			return nil, fmt.Errorf("%s: no action set", path)
		}
		out = append(out, e)
	}
	return out, nil
}

// usesOperators reports whether the value of o has % operators
// (%REQ(...)%, %DOWNSTREAM_REMOTE_ADDRESS% and the like), which the
// filter renders from the stream's access-log entry, as Envoy renders
// them from the stream's info.
func usesOperators(o *corev3.HeaderValueOption, fm accesslog.Formatters) (bool, error) {
	value, err := router.HeaderValueText(o.GetHeader())
	if err != nil {
		return false, fmt.Errorf("header.%w", err)
	}
	f, err := accesslog.TextWith(accesslog.TranslateLegacyHeaderFormat(value), true, fm)
	if err != nil {
		return false, fmt.Errorf("header.value: %w", err)
	}
	_, literal := f.Literal()
	return !literal, nil
}

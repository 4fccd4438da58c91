// Package filter compiles Envoy's access-log filters (AccessLog.filter):
// which finished requests an access logger records. Every filter of
// envoy.config.accesslog.v3 is implemented; extension_filter takes the
// extensions of the registry's envoy.access_loggers.extension_filters
// category (the CEL filter, package celfilter).
package filter

import (
	"errors"
	"fmt"

	accesslogv3 "github.com/envoyproxy/go-control-plane/envoy/config/accesslog/v3"
	"google.golang.org/protobuf/proto"

	"github.com/outrigger-dev/outrigger/pkg/proxy/accesslog"
	"github.com/outrigger-dev/outrigger/pkg/proxy/extension"
)

// ExtensionCategory is Envoy's category of the extensions extension_filter
// names.
const ExtensionCategory = "envoy.access_loggers.extension_filters"

// ExtensionFactory compiles an extension filter from its typed_config.
type ExtensionFactory interface {
	// Compile compiles config; errors name the field below the
	// typed_config.
	Compile(config proto.Message) (Filter, error)
}

// Filter decides whether an entry is logged. Match is called from many
// goroutines at once and allocates nothing.
type Filter interface {
	Match(e *accesslog.Entry) bool
}

// Runtime reads the server's runtime values.
type Runtime interface {
	// Uint64 returns key's value as an integer, def when it has none.
	Uint64(key string, def uint64) uint64
}

// Context is what filters use of the server.
type Context struct {
	// Runtime backs runtime_key overrides; nil reads none, so the
	// configured defaults apply.
	Runtime Runtime
	// Random draws the random numbers of runtime_filter when the request
	// id cannot be used; nil uses math/rand/v2.
	Random func() uint64
	// Extensions holds the extension filters; nil refuses
	// extension_filter. ByName finds one named without typed_config.
	Extensions *extension.Registry
	ByName     bool
}

// Compile compiles an AccessLogFilter. Errors name the field path below
// it ("status_code_filter.comparison.op: ...").
func Compile(f *accesslogv3.AccessLogFilter, ctx Context) (Filter, error) {
	switch s := f.GetFilterSpecifier().(type) {
	case *accesslogv3.AccessLogFilter_StatusCodeFilter:
		c, err := compileComparison(s.StatusCodeFilter.GetComparison(), ctx.Runtime)
		if err != nil {
			return nil, fmt.Errorf("status_code_filter.comparison%w", err)
		}
		return statusCode{c}, nil
	case *accesslogv3.AccessLogFilter_DurationFilter:
		c, err := compileComparison(s.DurationFilter.GetComparison(), ctx.Runtime)
		if err != nil {
			return nil, fmt.Errorf("duration_filter.comparison%w", err)
		}
		return duration{c}, nil
	case *accesslogv3.AccessLogFilter_NotHealthCheckFilter:
		return notHealthCheck{}, nil
	case *accesslogv3.AccessLogFilter_TraceableFilter:
		return traceable{}, nil
	case *accesslogv3.AccessLogFilter_RuntimeFilter:
		r, err := compileRuntime(s.RuntimeFilter, ctx)
		if err != nil {
			return nil, fmt.Errorf("runtime_filter.%w", err)
		}
		return r, nil
	case *accesslogv3.AccessLogFilter_AndFilter:
		fs, err := compileList(s.AndFilter.GetFilters(), ctx)
		if err != nil {
			return nil, fmt.Errorf("and_filter.%w", err)
		}
		return and(fs), nil
	case *accesslogv3.AccessLogFilter_OrFilter:
		fs, err := compileList(s.OrFilter.GetFilters(), ctx)
		if err != nil {
			return nil, fmt.Errorf("or_filter.%w", err)
		}
		return or(fs), nil
	case *accesslogv3.AccessLogFilter_HeaderFilter:
		h, err := compileHeader(s.HeaderFilter)
		if err != nil {
			return nil, fmt.Errorf("header_filter.%w", err)
		}
		return h, nil
	case *accesslogv3.AccessLogFilter_ResponseFlagFilter:
		r, err := compileResponseFlags(s.ResponseFlagFilter)
		if err != nil {
			return nil, fmt.Errorf("response_flag_filter.%w", err)
		}
		return r, nil
	case *accesslogv3.AccessLogFilter_GrpcStatusFilter:
		g, err := compileGRPCStatus(s.GrpcStatusFilter)
		if err != nil {
			return nil, fmt.Errorf("grpc_status_filter.%w", err)
		}
		return g, nil
	case *accesslogv3.AccessLogFilter_MetadataFilter:
		m, err := compileMetadata(s.MetadataFilter)
		if err != nil {
			return nil, fmt.Errorf("metadata_filter.%w", err)
		}
		return m, nil
	case *accesslogv3.AccessLogFilter_LogTypeFilter:
		return compileLogType(s.LogTypeFilter), nil
	case *accesslogv3.AccessLogFilter_ExtensionFilter:
		f, err := compileExtension(s.ExtensionFilter.GetName(), s.ExtensionFilter.GetTypedConfig(), ctx)
		if err != nil {
			return nil, fmt.Errorf("extension_filter.%w", err)
		}
		return f, nil
	}
	return nil, errors.New("filter_specifier: one filter is required")
}

// compileList compiles the filters of and_filter and or_filter, which
// Envoy requires to be at least two.
func compileList(list []*accesslogv3.AccessLogFilter, ctx Context) ([]Filter, error) {
	if len(list) < 2 {
		return nil, fmt.Errorf("filters: at least 2 filters are required, got %d", len(list))
	}
	out := make([]Filter, 0, len(list))
	for i, f := range list {
		c, err := Compile(f, ctx)
		if err != nil {
			return nil, fmt.Errorf("filters[%d].%w", i, err)
		}
		out = append(out, c)
	}
	return out, nil
}

// and matches when every filter does, stopping at the first that does not.
type and []Filter

func (a and) Match(e *accesslog.Entry) bool {
	for _, f := range a {
		if !f.Match(e) {
			return false
		}
	}
	return true
}

// or matches when one filter does, stopping at the first that does.
type or []Filter

func (o or) Match(e *accesslog.Entry) bool {
	for _, f := range o {
		if f.Match(e) {
			return true
		}
	}
	return false
}

// notHealthCheck matches requests the health_check filter did not answer
// or recognise as health checks.
type notHealthCheck struct{}

func (notHealthCheck) Match(e *accesslog.Entry) bool { return !e.HealthCheck }

// traceable matches requests traced because the service forced it.
type traceable struct{}

func (traceable) Match(e *accesslog.Entry) bool { return e.ServiceForcedTrace }

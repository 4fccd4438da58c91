// Package grpcstats is the HTTP filter envoy.filters.http.grpc_stats: it
// counts the gRPC calls that pass through it in their upstream cluster's
// stats, cluster.<cluster>.grpc[.<service>.<method>].{success,failure,
// total,<grpc-status>}, the messages each way (request_message_count,
// response_message_count) and, with enable_upstream_stats, the upstream's
// time (upstream_rq_time), as Envoy's filter does. Which calls get
// per-method names is the configuration's choice: every method
// (stats_for_all_methods), the methods of an allowlist, or none (the
// default: the counts go under cluster.<cluster>.grpc. alone). With
// emit_filter_state, the message counts of each gRPC request and response
// are also left in the request's filter state, for the access logs.
package grpcstats

import (
	"errors"
	"strings"
	"sync"

	grpcstatsv3 "github.com/envoyproxy/go-control-plane/envoy/extensions/filters/http/grpc_stats/v3"
	"google.golang.org/protobuf/proto"

	"github.com/outrigger-dev/outrigger/pkg/proxy/httpfilter"
	"github.com/outrigger-dev/outrigger/pkg/proxy/stats"
)

// Name is the filter's name in the proxy. spelling.
const Name = "proxy.filters.http.grpc_stats"

// Factory builds the filter.
type Factory struct{}

var _ httpfilter.Factory = Factory{}

// Compile implements httpfilter.Factory.
func (Factory) Compile(config proto.Message, ctx httpfilter.Context) (httpfilter.Config, error) {
	cfg, ok := config.(*grpcstatsv3.FilterConfig)
	if !ok {
		return nil, errors.New("not a grpc_stats FilterConfig")
	}
	if ctx.Stats == nil {
		return nil, errors.New("no stat store")
	}
	c := &filterConfig{
		stats:        ctx.Stats,
		services:     ctx.Services,
		allMethods:   cfg.GetStatsForAllMethods().GetValue(),
		replaceDots:  cfg.GetReplaceDotsInGrpcServiceName(),
		upstreamTime: cfg.GetEnableUpstreamStats(),
		emitState:    cfg.GetEmitFilterState(),
	}
	if l := cfg.GetIndividualMethodStatsAllowlist(); l != nil {
		c.allowed = map[string]bool{}
		for _, svc := range l.GetServices() {
			for _, m := range svc.GetMethodNames() {
				c.allowed[svc.GetName()+"/"+m] = true
			}
		}
	}
	c.pool.New = func() any { return &filter{cfg: c} }
	return c, nil
}

// filterConfig is the compiled filter.
type filterConfig struct {
	stats    *stats.Store
	services httpfilter.Services
	// allMethods: every call gets per-method stats; else allowed lists
	// the "service/method" pairs that do (nil or empty: none).
	allMethods bool
	allowed    map[string]bool
	// replaceDots turns the dots of a service name into underscores
	// (with allMethods only, as in Envoy).
	replaceDots  bool
	upstreamTime bool
	// emitState leaves the message counts of gRPC requests and responses
	// in the filter state (emit_filter_state, see state.go).
	emitState bool
	pool      sync.Pool
}

// NewFilter implements httpfilter.Config.
func (c *filterConfig) NewFilter() httpfilter.Filter { return c.pool.Get().(*filter) }

// statName is the name a call's stats are kept under, below
// "cluster.<cluster>.": "grpc.<service>.<method>." or "grpc.". ok is
// false when the path does not name a gRPC method and allMethods asks for
// per-method names (Envoy then tracks nothing).
func (c *filterConfig) statName(path string) (string, bool) {
	service, method, named := serviceAndMethod(path)
	switch {
	case c.allMethods:
		if !named {
			return "", false
		}
		if c.replaceDots {
			service = strings.ReplaceAll(service, ".", "_")
		}
		return "grpc." + service + "." + method + ".", true
	case !named:
		return "", false
	case c.allowed[service+"/"+method]:
		return "grpc." + service + "." + method + ".", true
	}
	return "grpc.", true
}

// serviceAndMethod splits a gRPC path, "/<service>/<method>" (query
// dropped, empty segments skipped as Envoy's tokenizer does).
func serviceAndMethod(path string) (service, method string, ok bool) {
	if i := strings.IndexByte(path, '?'); i >= 0 {
		path = path[:i]
	}
	var parts [2]string
	n := 0
	for _, p := range strings.Split(path, "/") {
		if p == "" {
			continue
		}
		if n == 2 {
			return "", "", false
		}
		parts[n] = p
		n++
	}
	return parts[0], parts[1], n == 2
}

// clusterStatName is the name the cluster's stats are kept under: its
// alt_stat_name when it has one.
func (c *filterConfig) clusterStatName(cluster string) string {
	if c.services != nil {
		if cl, ok := c.services.Cluster(cluster).(interface{ ObservabilityName() string }); ok {
			return cl.ObservabilityName()
		}
	}
	return cluster
}

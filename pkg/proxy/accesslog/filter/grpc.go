package filter

import (
	"fmt"
	"strconv"

	accesslogv3 "github.com/envoyproxy/go-control-plane/envoy/config/accesslog/v3"

	"github.com/outrigger-dev/outrigger/pkg/proxy/accesslog"
	"github.com/outrigger-dev/outrigger/pkg/proxy/grpcstatus"
)

// The gRPC status codes the filter uses by name.
const (
	grpcUnknown  = 2  // codes.Unknown
	grpcMaxKnown = 16 // codes.Unauthenticated, the last code
	// grpcInvalid is a grpc-status that is not a known code: it matches
	// no configured status.
	grpcInvalid = -1
)

// grpcStatus matches the request's gRPC status against a set.
type grpcStatus struct {
	// statuses is indexed by code.
	statuses [grpcMaxKnown + 1]bool
	exclude  bool
}

func compileGRPCStatus(c *accesslogv3.GrpcStatusFilter) (*grpcStatus, error) {
	g := &grpcStatus{exclude: c.GetExclude()}
	for i, s := range c.GetStatuses() {
		if s < 0 || s > grpcMaxKnown {
			return nil, fmt.Errorf("statuses[%d]: unknown status %d", i, s)
		}
		g.statuses[s] = true
	}
	return g, nil
}

func (g *grpcStatus) Match(e *accesslog.Entry) bool {
	s := entryGRPCStatus(e)
	found := s >= 0 && g.statuses[s]
	return found != g.exclude
}

// entryGRPCStatus finds the request's gRPC status as Envoy does: the
// grpc-status trailer, else the header (a trailers-only response), else
// one inferred from the HTTP status, else Unknown.
func entryGRPCStatus(e *accesslog.Entry) int {
	for _, h := range [...]accesslog.HeaderGetter{e.ResponseTrailers, e.ResponseHeaders} {
		if h == nil {
			continue
		}
		if v, ok := h.Get("grpc-status"); ok && v != "" {
			n, err := strconv.ParseUint(v, 10, 64)
			if err != nil || n > grpcMaxKnown {
				return grpcInvalid
			}
			return int(n)
		}
	}
	if e.ResponseCode == 0 {
		return grpcUnknown
	}
	return int(grpcstatus.FromHTTP(e.ResponseCode))
}

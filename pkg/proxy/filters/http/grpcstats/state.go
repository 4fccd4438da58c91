package grpcstats

import (
	"strconv"
	"sync/atomic"

	grpcstatsv3 "github.com/envoyproxy/go-control-plane/envoy/extensions/filters/http/grpc_stats/v3"
	"google.golang.org/protobuf/proto"

	"github.com/outrigger-dev/outrigger/pkg/proxy/accesslog"
)

// StateKey is the filter state key of the message counts the filter
// leaves with emit_filter_state, Envoy's
// (%FILTER_STATE(envoy.filters.http.grpc_stats)%).
const StateKey = "envoy.filters.http.grpc_stats"

// stateObject is the filter state of emit_filter_state, as Envoy's
// GrpcStatsObject: the gRPC messages counted so far each way. The
// counts are atomic: the request side may run on another goroutine than
// the response side, and the access log reads them at the end.
type stateObject struct {
	request, response atomic.Uint64
}

var _ accesslog.FilterStateObject = (*stateObject)(nil)

// FilterStateString implements accesslog.FilterStateObject: PLAIN is
// "<request count>,<response count>", as Envoy serializes it.
func (o *stateObject) FilterStateString() (string, bool) {
	return strconv.FormatUint(o.request.Load(), 10) + "," + strconv.FormatUint(o.response.Load(), 10), true
}

// FilterStateProto implements accesslog.FilterStateObject: TYPED is the
// grpc_stats FilterObject.
func (o *stateObject) FilterStateProto() proto.Message {
	return &grpcstatsv3.FilterObject{
		RequestMessageCount:  o.request.Load(),
		ResponseMessageCount: o.response.Load(),
	}
}

package extauthz

import (
	"sync/atomic"

	"google.golang.org/protobuf/proto"
	"google.golang.org/protobuf/types/known/structpb"

	"github.com/outrigger-dev/outrigger/pkg/proxy/accesslog"
)

// loggingInfo is the filter state a check leaves under the filter's name
// with emit_filter_state_stats or filter_metadata, as Envoy's
// ExtAuthzLoggingInfo: the configured filter_metadata and, with
// emit_filter_state_stats, the check's latency. Like Envoy's it has no
// PLAIN or TYPED form; %FILTER_STATE(<name>:FIELD:latency_us)% shows the
// latency. Envoy's bytesSent and bytesReceived fields, which only its own
// gRPC client measures, are absent, as for Envoy's other clients.
type loggingInfo struct {
	// filterMetadata is filter_metadata, nil when unset; like Envoy's,
	// only code reading the object sees it (no built-in formatter does).
	filterMetadata *structpb.Struct
	// latencyUS is the check's duration in microseconds, -1 until known.
	// The access log may read it from another goroutine.
	latencyUS atomic.Int64
}

var (
	_ accesslog.FilterStateObject  = (*loggingInfo)(nil)
	_ accesslog.FilterStateFielder = (*loggingInfo)(nil)
)

// newLoggingInfo is an object without a latency yet.
func newLoggingInfo(md *structpb.Struct) *loggingInfo {
	li := &loggingInfo{filterMetadata: md}
	li.latencyUS.Store(-1)
	return li
}

// FilterStateString implements accesslog.FilterStateObject: none, as
// Envoy's object.
func (*loggingInfo) FilterStateString() (string, bool) { return "", false }

// FilterStateProto implements accesslog.FilterStateObject: none, as
// Envoy's object.
func (*loggingInfo) FilterStateProto() proto.Message { return nil }

// FilterStateField implements accesslog.FilterStateFielder: latency_us,
// once the check has completed.
func (li *loggingInfo) FilterStateField(name string) (any, bool) {
	if name == "latency_us" {
		if v := li.latencyUS.Load(); v >= 0 {
			return v, true
		}
	}
	return nil, false
}

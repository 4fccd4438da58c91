package router

import (
	"fmt"
	"time"

	routev3 "github.com/envoyproxy/go-control-plane/envoy/config/route/v3"
	"google.golang.org/protobuf/types/known/durationpb"
)

// StreamDuration is a route action's max_stream_duration: the stream
// limits that override the connection manager's for the routed stream.
// Each part is optional.
type StreamDuration struct {
	// Max is max_stream_duration, the stream's total time from its
	// start, when MaxSet; 0 means none (the connection manager's too is
	// then lifted).
	Max    time.Duration
	MaxSet bool
	// GrpcHeaderMax, when GrpcHeaderMaxSet, makes a gRPC request's
	// grpc-timeout header the stream's duration, capped at GrpcHeaderMax
	// (0: no cap); GrpcHeaderOffset is then taken off it.
	GrpcHeaderMax    time.Duration
	GrpcHeaderMaxSet bool
	GrpcHeaderOffset time.Duration
}

// GrpcTimeout is the deprecated max_grpc_timeout of a route action: a
// gRPC request's grpc-timeout header, less Offset, becomes its upstream
// timeout, capped at Max (0: no cap).
type GrpcTimeout struct {
	Max    time.Duration
	Offset time.Duration
}

// compileStreamDuration compiles max_stream_duration; nil when unset.
func compileStreamDuration(msd *routev3.RouteAction_MaxStreamDuration) (*StreamDuration, error) {
	if msd == nil {
		return nil, nil
	}
	sd := &StreamDuration{}
	var err error
	if sd.Max, sd.MaxSet, err = optionalDuration(msd.GetMaxStreamDuration(), "max_stream_duration"); err != nil {
		return nil, err
	}
	if sd.GrpcHeaderMax, sd.GrpcHeaderMaxSet, err = optionalDuration(msd.GetGrpcTimeoutHeaderMax(), "grpc_timeout_header_max"); err != nil {
		return nil, err
	}
	if sd.GrpcHeaderOffset, _, err = optionalDuration(msd.GetGrpcTimeoutHeaderOffset(), "grpc_timeout_header_offset"); err != nil {
		return nil, err
	}
	return sd, nil
}

// compileGrpcTimeout compiles the deprecated max_grpc_timeout and
// grpc_timeout_offset of a route action; nil without max_grpc_timeout,
// which the offset needs.
func compileGrpcTimeout(a *routev3.RouteAction) (*GrpcTimeout, error) {
	//lint:ignore SA1019 Envoy still honours the deprecated max_grpc_timeout
	max, maxSet, err := optionalDuration(a.GetMaxGrpcTimeout(), "max_grpc_timeout")
	if err != nil {
		return nil, err
	}
	//lint:ignore SA1019 as above, for grpc_timeout_offset
	offset, _, err := optionalDuration(a.GetGrpcTimeoutOffset(), "grpc_timeout_offset")
	if err != nil || !maxSet {
		return nil, err
	}
	return &GrpcTimeout{Max: max, Offset: offset}, nil
}

// optionalDuration converts a duration field that may be unset; errors
// name it.
func optionalDuration(d *durationpb.Duration, name string) (time.Duration, bool, error) {
	if d == nil {
		return 0, false, nil
	}
	v, err := duration(d)
	if err != nil {
		return 0, false, fmt.Errorf("%s: %w", name, err)
	}
	return v, true, nil
}

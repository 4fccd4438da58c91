// Package grpcstatus maps HTTP statuses to gRPC status codes as gRPC's
// doc/http-grpc-status-mapping.md and Envoy's Grpc::Utility::httpToGrpcStatus
// do: what a gRPC client is told when the proxy answers for the upstream,
// and what access log filters read from a response without grpc-status.
package grpcstatus

import (
	"strconv"

	"google.golang.org/grpc/codes"
)

// FromHTTP is the gRPC status of an HTTP status.
func FromHTTP(status int) codes.Code {
	switch status {
	case 400:
		return codes.Internal
	case 401:
		return codes.Unauthenticated
	case 403:
		return codes.PermissionDenied
	case 404:
		return codes.Unimplemented
	case 429, 502, 503, 504:
		return codes.Unavailable
	}
	return codes.Unknown
}

// ToHTTP is the HTTP status of a grpc-status value, as Envoy's
// Grpc::Utility::grpcToHttpStatus maps it (what outlier detection counts
// for a gRPC response): a value that is no known code is a 500.
func ToHTTP(grpcStatus string) int {
	n, err := strconv.ParseUint(grpcStatus, 10, 32)
	if err != nil {
		return 500
	}
	switch codes.Code(n) {
	case codes.OK:
		return 200
	case codes.Canceled:
		return 499
	case codes.InvalidArgument, codes.FailedPrecondition, codes.OutOfRange:
		return 400
	case codes.DeadlineExceeded:
		return 504
	case codes.NotFound:
		return 404
	case codes.AlreadyExists, codes.Aborted:
		return 409
	case codes.PermissionDenied:
		return 403
	case codes.ResourceExhausted:
		return 429
	case codes.Unimplemented:
		return 501
	case codes.Unavailable:
		return 503
	case codes.Unauthenticated:
		return 401
	}
	// Unknown, Internal, DataLoss and anything else.
	return 500
}

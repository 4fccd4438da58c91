// Package grpcstatus maps HTTP statuses to gRPC status codes as gRPC's
// doc/http-grpc-status-mapping.md and Envoy's Grpc::Utility::httpToGrpcStatus
// do: what a gRPC client is told when the proxy answers for the upstream,
// and what access log filters read from a response without grpc-status.
package grpcstatus

import "google.golang.org/grpc/codes"

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

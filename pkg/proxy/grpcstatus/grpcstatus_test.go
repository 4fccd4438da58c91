package grpcstatus

import (
	"testing"

	"google.golang.org/grpc/codes"
)

func TestFromHTTP(t *testing.T) {
	for status, want := range map[int]codes.Code{
		200: codes.Unknown, 400: codes.Internal, 401: codes.Unauthenticated, 403: codes.PermissionDenied,
		404: codes.Unimplemented, 429: codes.Unavailable, 500: codes.Unknown, 502: codes.Unavailable,
		503: codes.Unavailable, 504: codes.Unavailable,
	} {
		if got := FromHTTP(status); got != want {
			t.Errorf("FromHTTP(%d) = %v, want %v", status, got, want)
		}
	}
}

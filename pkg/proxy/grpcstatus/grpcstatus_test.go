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

func TestToHTTP(t *testing.T) {
	for in, want := range map[string]int{
		"0": 200, "1": 499, "2": 500, "3": 400, "4": 504, "5": 404, "6": 409, "7": 403, "8": 429, "9": 400,
		"10": 409, "11": 400, "12": 501, "13": 500, "14": 503, "15": 500, "16": 401, "17": 500, "x": 500, "": 500,
	} {
		if got := ToHTTP(in); got != want {
			t.Errorf("ToHTTP(%q) = %d, want %d", in, got, want)
		}
	}
}

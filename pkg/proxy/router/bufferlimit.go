package router

import (
	"errors"

	"google.golang.org/protobuf/types/known/wrapperspb"
)

// bodyBufferLimit is a route's or virtual host's request_body_buffer_limit
// and deprecated per_request_buffer_limit_bytes: how much of a request
// body is kept for retries and shadowing.
type bodyBufferLimit struct {
	// requestBody is request_body_buffer_limit, used whatever the
	// connection's limit; perRequest is per_request_buffer_limit_bytes,
	// which can only lower it. Each is meaningful when its flag is set.
	requestBody    uint64
	perRequest     uint32
	hasRequestBody bool
	hasPerRequest  bool
}

// compileBodyBufferLimit reads the pair of one level; Envoy allows one of
// them only.
func compileBodyBufferLimit(perRequest *wrapperspb.UInt32Value, requestBody *wrapperspb.UInt64Value) (bodyBufferLimit, error) {
	var l bodyBufferLimit
	if perRequest != nil && requestBody != nil {
		return l, errors.New("request_body_buffer_limit: only one of per_request_buffer_limit_bytes and request_body_buffer_limit may be set")
	}
	if requestBody != nil {
		l.requestBody, l.hasRequestBody = requestBody.GetValue(), true
	}
	if perRequest != nil {
		l.perRequest, l.hasPerRequest = perRequest.GetValue(), true
	}
	return l, nil
}

// inherit fills what the route leaves unset from its virtual host's, as
// Envoy's route entry defaults each field to the virtual host's.
func (l *bodyBufferLimit) inherit(vh bodyBufferLimit) {
	if !l.hasRequestBody && vh.hasRequestBody {
		l.requestBody, l.hasRequestBody = vh.requestBody, true
	}
	if !l.hasPerRequest && vh.hasPerRequest {
		l.perRequest, l.hasPerRequest = vh.perRequest, true
	}
}

// BodyBufferLimit is how many bytes of a request body the route keeps for
// retries and shadowing, with Envoy's precedence: request_body_buffer_limit
// when set (it may exceed the connection's limit), else the smaller of
// per_request_buffer_limit_bytes and conn (the connection's buffer limit),
// else conn.
func (r *Route) BodyBufferLimit(conn int) int {
	l := &r.bodyLimit
	switch {
	case l.hasRequestBody:
		return int(min(l.requestBody, uint64(maxInt)))
	case l.hasPerRequest && uint64(l.perRequest) < uint64(conn):
		return int(l.perRequest)
	}
	return conn
}

// maxInt is the largest int, which a limit is capped at.
const maxInt = int(^uint(0) >> 1)

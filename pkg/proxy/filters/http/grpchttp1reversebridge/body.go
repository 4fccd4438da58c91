package grpchttp1reversebridge

import (
	"encoding/binary"
	"errors"
	"net/http"
	"strconv"
	"sync/atomic"

	"github.com/outrigger-dev/outrigger/pkg/proxy/httpfilter"
)

// requestStripper drops the gRPC frame header of the request body (its
// first five bytes, wherever the pieces end).
type requestStripper struct {
	dropped int
	// tooSmall is set when the body ended before a frame header; the
	// response step reads it on another goroutine.
	tooSmall atomic.Bool
}

var _ httpfilter.DataDecoder = (*requestStripper)(nil)

// DecodeData implements httpfilter.DataDecoder.
func (r *requestStripper) DecodeData(p []byte) ([]byte, error) {
	if r.dropped < frameHeader {
		n := min(frameHeader-r.dropped, len(p))
		r.dropped += n
		p = p[n:]
	}
	return p, nil
}

// DecodeEnd implements httpfilter.DataDecoder: a body too small to be a
// gRPC frame is refused, as Envoy refuses it.
func (r *requestStripper) DecodeEnd() ([]byte, error) {
	if r.dropped < frameHeader {
		r.tooSmall.Store(true)
		return nil, &httpfilter.BodyError{Status: http.StatusOK, Body: invalidRequestBodyMsg, Details: detailsTooSmall}
	}
	return nil, nil
}

// responseFramer turns the upstream's body into a gRPC response body:
// with withhold_grpc_frames, one frame (held whole, or, with a declared
// length, streamed behind its header); grpc-status goes in the trailers.
type responseFramer struct {
	withhold   bool
	grpcStatus string
	// declared is the response_size_header's length, -1 without one.
	declared int64
	sent     int64
	held     []byte
}

var _ httpfilter.DataEncoder = (*responseFramer)(nil)

// frame is a gRPC frame header for a message of n bytes.
func frame(n int) []byte {
	h := make([]byte, frameHeader)
	binary.BigEndian.PutUint32(h[1:], uint32(n))
	return h
}

// EncodeData implements httpfilter.DataEncoder.
func (e *responseFramer) EncodeData(p []byte) ([]byte, error) {
	if !e.withhold {
		return p, nil
	}
	if e.declared >= 0 {
		first := e.sent == 0
		e.sent += int64(len(p))
		if first && len(p) > 0 {
			return append(frame(int(e.declared)), p...), nil
		}
		return p, nil
	}
	if len(e.held)+len(p) > maxBody {
		return nil, errors.New("grpc_http1_reverse_bridge: the response is over the " + strconv.Itoa(maxBody) + "-byte buffer limit")
	}
	e.held = append(e.held, p...)
	return nil, nil
}

// EncodeEnd implements httpfilter.DataEncoder: the held body behind its
// frame header, grpc-status in the trailers; a body that was not the
// length its header declared is an error (the stream is reset: its head
// has left).
func (e *responseFramer) EncodeEnd(trailers http.Header) ([]byte, http.Header, error) {
	if trailers == nil {
		trailers = http.Header{}
	}
	trailers.Set("grpc-status", e.grpcStatus)
	if !e.withhold {
		return nil, trailers, nil
	}
	if e.declared >= 0 {
		if e.sent != e.declared {
			return nil, nil, errors.New("envoy reverse bridge: upstream set incorrect content length (" + detailsWrongLength + ")")
		}
		if e.sent == 0 {
			return frame(0), trailers, nil
		}
		return nil, trailers, nil
	}
	return append(frame(len(e.held)), e.held...), trailers, nil
}

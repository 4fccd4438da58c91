package httpfilter

import (
	"net/http"
	"time"
)

// Bodies. Most filters look at heads only, and a request's body flows
// from the client to the upstream (and the response's back) without a
// filter touching it. A filter that changes a body (compresses it,
// decompresses it, re-frames it) asks for it in its head step: in
// DecodeHeaders with Stream.TransformRequestBody, in EncodeHeaders with
// Stream.TransformResponseBody. The body's length is then unknown (the
// connection manager drops Content-Length and frames the body in chunks,
// or in DATA frames), and every piece of it goes through the filter on
// its way. The transformers of one body run in the order their filters
// asked, which is the chain's order for the request and its reverse for
// the response, as Envoy's decodeData and encodeData run.

// DataDecoder transforms a request body (Envoy's decodeData). Its
// results are valid until its next call: it may reuse one buffer.
type DataDecoder interface {
	// DecodeData is given each piece of the body, in order, and
	// returns the bytes to send on in its place (possibly none).
	DecodeData(p []byte) ([]byte, error)
	// DecodeEnd runs once, after the last piece: it returns the body's
	// last bytes (what the transformer still held).
	DecodeEnd() ([]byte, error)
}

// TrailerDecoder is a DataDecoder that adds to the request's trailers
// (Envoy's addDecodedTrailers and decodeTrailers): once the body has
// ended, DecodeTrailers is given the trailers so far (nil for none; a
// copy the decoder may change) and returns them.
type TrailerDecoder interface {
	DecodeTrailers(trailers http.Header) http.Header
}

// CheckedTrailerDecoder is a TrailerDecoder that may fail the request at
// its trailers, as a DataDecoder's step may (an external processor's
// immediate response, a script that failed): an error (a *BodyError
// answers the request when nothing was sent downstream yet) stops the
// request from reaching its end upstream. The connection manager calls
// it in place of DecodeTrailers.
type CheckedTrailerDecoder interface {
	TrailerDecoder
	DecodeTrailersChecked(trailers http.Header) (http.Header, error)
}

// DataEncoder transforms a response body (Envoy's encodeData and
// encodeTrailers). Its results are valid until its next call.
type DataEncoder interface {
	// EncodeData is given each piece of the body, in order, and
	// returns the bytes to send in its place (possibly none).
	EncodeData(p []byte) ([]byte, error)
	// EncodeEnd runs once, after the last piece, with the response's
	// trailers (nil when it has none; the map is the encoder's to
	// change). It returns the body's last bytes and the trailers to
	// send (nil for none): gRPC-Web moves the trailers into the body.
	EncodeEnd(trailers http.Header) ([]byte, http.Header, error)
}

// LengthKeeper is a DataEncoder that only reads the body: it returns
// every piece as it was given and adds nothing at the end, so the response
// keeps the length it announced (the cache filter, which copies the body
// it stores).
type LengthKeeper interface {
	DataEncoder
	// KeepsLength reports true.
	KeepsLength() bool
}

// RequestLengthKeeper is a DataDecoder that only reads the request body:
// it returns every piece as it was given and adds nothing at the end, so
// the request keeps the length the client announced (a TrailerDecoder
// that edits the client's trailers, as header_mutation's
// request_trailers_mutations do).
type RequestLengthKeeper interface {
	DataDecoder
	// KeepsRequestLength reports true.
	KeepsRequestLength() bool
}

// HeadHolder is a DataEncoder that holds the response head back until
// it has seen the body, as an Envoy encoder filter that stops iteration in
// encodeHeaders to buffer the body: the head leaves with the first bytes
// the encoders return, or after EncodeEnd. Until then the filter may
// still edit the response headers, and its status (ResponseStatusSetter),
// from its encoder's calls; the body's length is announced when the head
// leaves after EncodeEnd.
type HeadHolder interface {
	DataEncoder
	// HoldsHead reports whether the encoder holds the head back; it is
	// asked once, when the head would be written.
	HoldsHead() bool
}

// ResponseStatusSetter is implemented by a Stream whose response status a
// filter may change while the response head has not left: during
// EncodeHeaders, or while a HeadHolder holds the head.
type ResponseStatusSetter interface {
	// SetResponseStatus replaces the response's status.
	SetResponseStatus(status int)
}

// DetailsSetter is implemented by a Stream whose %RESPONSE_CODE_DETAILS%
// a filter may set while the response head has not left, as Envoy's
// setResponseCodeDetails: the cache filter marks the upstream's 304 it
// answered with a stored response.
type DetailsSetter interface {
	// SetResponseCodeDetails replaces the response's details.
	SetResponseCodeDetails(details string)
}

// BodyError is a DataDecoder's error that answers the request with
// Status and Body, when nothing was sent downstream yet, with Details as
// %RESPONSE_CODE_DETAILS% (Envoy's filters answer bad bodies this way).
type BodyError struct {
	Status  int
	Body    string
	Details string
}

// Error implements error.
func (e *BodyError) Error() string { return e.Body }

// RequestReplacer is implemented by a Stream whose request a filter may
// turn into another one during DecodeHeaders, as Envoy's filters rewrite
// :method and replace the buffered body (addDecodedData): the gRPC-JSON
// transcoder sends a POST with a gRPC message for a GET with none.
type RequestReplacer interface {
	// SetMethod replaces the request's :method; it goes upstream, and
	// routing sees it after ClearRouteCache.
	SetMethod(method string)
	// ReplaceRequestBody puts body in place of the request body, of
	// known length. A request with a body must have been read to its end
	// first (BufferRequestBody, complete); a request without one gets
	// body.
	ReplaceRequestBody(body []byte)
}

// RequestTrailerSource is implemented by a Stream that gives the request's
// trailers to a filter that buffered the whole request body
// (BufferRequestBody, complete): they arrived with the body's end. A
// filter that changes them passes its own on with a TrailerDecoder (one
// that returns them in place of the trailers it is given).
type RequestTrailerSource interface {
	// BufferedRequestTrailers returns the client's trailers once the
	// body was buffered to its end, nil when there are none or the body
	// was not.
	BufferedRequestTrailers() http.Header
}

// Throttle is a LengthKeeper that meters a response body out at a pace
// of its own (the fault filter's response rate limit, Envoy's
// StreamRateLimiter). The connection manager does not call its
// EncodeData: it asks Take how much of what reached it may leave, sends
// that on (through the encoders after it, then to the client), and waits
// as long as Take says before asking for the rest. It holds nothing but
// the piece being metered and reads no more of the upstream meanwhile, so
// a throttled body costs no more memory than one sent to a slow client;
// the client going away, a reset or the stream's maximum duration cut the
// wait short, as they cut a write to a slow client.
type Throttle interface {
	LengthKeeper
	// Take reports how many of n bytes may leave at now (0 to n) and,
	// when fewer than n, how long to wait before asking again.
	Take(n int, now time.Time) (int, time.Duration)
}

// RequestBodyReader is implemented by a Stream whose request body a
// filter may read during DecodeHeaders while it waits for something else,
// as an Envoy decoder filter that stopped iteration in decodeHeaders still
// sees decodeData: ext_proc's send_body_without_waiting_for_header_response
// sends the body's pieces to its processor while the answer to the
// request headers is awaited. The request head is held meanwhile: the
// router starts the upstream request only once DecodeHeaders returned.
type RequestBodyReader interface {
	// ReadRequestBodyUntil reads the request body as it arrives and
	// gives fn each piece (end: the body has ended with it; p may then be
	// empty), until stop is closed, the body ends, or limit bytes or more
	// are held. A wait for the client's next bytes ends as soon as stop
	// is closed. What was read is held as BufferRequestBody holds it and
	// goes upstream (through the body's decoders) once the filter went
	// on; held is all of it so far, valid until the request ends. ok
	// false means the stream has answered (408 or 400 for a body that
	// stopped arriving or was malformed) or the client went away: the
	// filter returns Stop. Bytes a filter before it had buffered are
	// given to fn first.
	ReadRequestBodyUntil(stop <-chan struct{}, limit int, fn func(p []byte, end bool)) (held []byte, complete, ok bool)
	// ReadsRequestBodyEarly reports whether ReadRequestBodyUntil may be
	// used: the request has a body and no filter before asked to
	// transform it (the pieces read are the client's, which such a
	// filter would have changed first).
	ReadsRequestBodyEarly() bool
}

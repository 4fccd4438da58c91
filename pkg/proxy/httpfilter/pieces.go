package httpfilter

import "net/http"

// Bodies whose pieces are not tied to the pieces given. A DataDecoder or
// DataEncoder returns, for each piece it is given, what goes on in its
// place, at once. ext_proc's FULL_DUPLEX_STREAMED body mode breaks that
// tie: the external processor answers a body with pieces of its own, as
// many as it likes, whenever it likes (it may hold the whole body, or
// answer before the next piece arrives). The two interfaces below let a
// filter emit a body independently of the one it is given; the connection
// manager treats every other transformer as before.

// SourceDecoder is a DataDecoder that produces the request body the
// decoders after it (and the upstream) read, from the body the decoders
// before it leave, at its own pace. The connection manager does not call
// its DecodeData and DecodeEnd. Only the connection manager's filters may
// use one (not an upstream filter chain).
type SourceDecoder interface {
	DataDecoder
	// DecodeFrom is called once, before the body is read. next gives
	// the body before the decoder, piece by piece, then io.EOF at its
	// end (or the error that cut it); it may be called from a goroutine
	// of the decoder's own, never concurrently, and not after the
	// stream ended. trailers gives the client's request trailers once
	// next gave io.EOF (nil for none). The function returned gives the
	// body after the decoder the same way, from the request's goroutine:
	// an error other than io.EOF fails the request (a *BodyError answers
	// it when nothing was sent downstream yet). The decoder's trailers
	// go on through TrailerDecoder, as other decoders'.
	DecodeFrom(next func() ([]byte, error), trailers func() http.Header) func() ([]byte, error)
}

// EmittingEncoder is a DataEncoder that sends the response body on
// itself, at its own pace, rather than returning pieces from EncodeData.
// The connection manager calls SetEmitter once, before the first
// EncodeData; the encoder's EncodeData and EncodeEnd then return no bytes
// (EncodeEnd still returns the trailers): the encoder sends bytes with
// emit, from any goroutine, until EncodeEnd returns, which waits for its
// last piece. emit runs the bytes through the encoders after it and
// writes them to the client; its writes and the connection manager's are
// serialized. An error from emit means the response cannot go on (the
// client went away): the encoder stops emitting. An encoder that is also
// a HeadHolder sends the head it held, without body bytes, with an empty
// emit (or with its first bytes).
type EmittingEncoder interface {
	DataEncoder
	SetEmitter(emit func(p []byte) error)
}

// SourceStarter is implemented by a Stream that lets a SourceDecoder read
// the request body while its filter's DecodeHeaders still runs, as an
// Envoy decoder filter that stopped iteration in decodeHeaders still
// sees decodeData: ext_proc's FULL_DUPLEX_STREAMED sends the body's
// pieces to its processor while the answer to the request headers is
// awaited. The request head is held meanwhile (the router starts the
// upstream request once DecodeHeaders returned).
type SourceStarter interface {
	// StartRequestSource adds d to the request body's decoders, as
	// TransformRequestBody, and calls its DecodeFrom at once: d may read
	// the body from then on (from a goroutine of its own). The filters
	// after it see, buffer and transform d's output. False means it
	// cannot (no body; not in an upstream filter chain; the client could
	// not be told to send the body, and the stream has answered): d is
	// not added.
	StartRequestSource(d SourceDecoder) bool
}

// BodyLengthSetter is implemented by a Stream whose body framing a filter
// may set: ext_proc's allow_content_length_header keeps the
// content-length its processor sets for a body it changes. The length
// counts the body as it leaves (upstream for the request, to the client
// for the response); it is announced when the body is changed by the
// declaring filter only (another filter that changes its length too
// makes it unknown again). A body whose real length disagrees fails the
// stream rather than leave with a framing it breaks: the upstream request
// is cut, the response reset.
type BodyLengthSetter interface {
	// SetRequestBodyLength declares the request body's length, before
	// the request goes upstream.
	SetRequestBodyLength(n int64)
	// SetResponseBodyLength declares the response body's length, before
	// its head leaves (during EncodeHeaders, or while a HeadHolder
	// holds it).
	SetResponseBodyLength(n int64)
}

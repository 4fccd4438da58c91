package lua

import (
	"errors"
	"net/http"

	"github.com/outrigger-dev/outrigger/pkg/proxy/httpfilter"
)

// bodyWait joins a response script that called body() to the stream: the
// script's goroutine waits for the body while the stream collects it
// (the filter's DataEncoder, which holds the response head meanwhile),
// then the stream waits for the script to end before the head and the
// body (the script's, if it set one) go out.
type bodyWait struct {
	// want is closed by the script when it asks for the body.
	want chan struct{}
	// body gives the script the whole body; closed without one when the
	// stream ends first.
	body chan []byte
	// done is closed when the script's run has ended.
	done chan struct{}
	buf  []byte
	// result is the body the script set, nil when it set none.
	result []byte
	// trailers are the response's, which the script may change.
	trailers http.Header
	ended    bool

	// Streaming (bodyChunks()): streaming is set before want is closed.
	// chunks gives the script each piece of the body as it arrives
	// (closed at the end); back returns it, as the script left it, when
	// the script asks for the next; last is the piece the script held
	// when it ended (lastSet). canceled: the stream ended first.
	streaming bool
	chunks    chan []byte
	back      chan []byte
	last      []byte
	lastSet   bool
	canceled  bool
	// failed: a request script failed once the request's head had gone
	// on; the decoder fails the request.
	failed bool
}

var (
	_ httpfilter.DataEncoder           = (*bodyWait)(nil)
	_ httpfilter.HeadHolder            = (*bodyWait)(nil)
	_ httpfilter.DataDecoder           = (*bodyWait)(nil)
	_ httpfilter.CheckedTrailerDecoder = (*bodyWait)(nil)
)

// newBodyWait returns the wait of one response script run.
func newBodyWait() *bodyWait {
	// The channels of body() and bodyChunks() are made by the script
	// when it asks, before it closes want: most runs ask for neither.
	return &bodyWait{want: make(chan struct{}), done: make(chan struct{})}
}

// errResponseTooLarge ends a response whose body goes past what the
// filter buffers (Envoy resets such a stream too once its head is sent).
var errResponseTooLarge = errors.New("lua: response body over the 1 MiB the filter buffers")

// HoldsHead implements httpfilter.HeadHolder: the script may still change
// the headers once it has the body.
func (*bodyWait) HoldsHead() bool { return true }

// EncodeData implements httpfilter.DataEncoder: the body is kept for the
// script, nothing goes out yet.
func (w *bodyWait) EncodeData(p []byte) ([]byte, error) {
	if w.streaming {
		return w.chunk(p), nil
	}
	if len(w.buf)+len(p) > maxBody {
		return nil, errResponseTooLarge
	}
	w.buf = append(w.buf, p...)
	return nil, nil
}

// EncodeEnd implements httpfilter.DataEncoder: the script gets the whole
// body and runs to its end; the body it leaves goes out.
func (w *bodyWait) EncodeEnd(trailers http.Header) ([]byte, http.Header, error) {
	if w.streaming {
		w.ended, w.trailers = true, trailers
		close(w.chunks)
		<-w.done
		return nil, w.trailers, nil
	}
	w.ended = true
	if w.buf == nil {
		w.buf = []byte{}
	}
	w.trailers = trailers
	w.body <- w.buf
	<-w.done
	if w.result != nil {
		return w.result, w.trailers, nil
	}
	return w.buf, w.trailers, nil
}

// cancel stops a script still waiting when the stream ends without the
// end of its body, and waits for its run to end (it ends at once: every
// handle method fails from then on).
func (w *bodyWait) cancel() {
	if w.ended {
		return
	}
	w.ended = true
	if w.streaming {
		w.canceled = true
		close(w.chunks)
	} else {
		close(w.body)
	}
	<-w.done
}

// chunk hands one piece of the body to a streaming script and returns it
// as the script left it; once the script has ended, pieces pass as they
// are.
func (w *bodyWait) chunk(p []byte) []byte {
	select {
	case w.chunks <- p:
	case <-w.done:
		return p
	}
	select {
	case out := <-w.back:
		return out
	case <-w.done:
		if w.lastSet {
			w.lastSet = false
			return w.last
		}
		return p
	}
}

// The request side: a request script that streams the body (bodyChunks()
// or trailers()) let the request's head go on; the bodyWait is then the
// filter's decoder, and hands the script each piece of the body on its
// way upstream, then the trailers.

// DecodeData implements httpfilter.DataDecoder: the script gets the
// piece and the piece it gives back goes on. A script that failed fails
// the request (answered 500 when the response has not started), as a
// failed request script does before the head goes on.
func (w *bodyWait) DecodeData(p []byte) ([]byte, error) {
	out := w.chunk(p)
	if w.failed {
		return nil, &httpfilter.BodyError{Status: 500, Details: detailsError}
	}
	return out, nil
}

// DecodeEnd implements httpfilter.DataDecoder: the body's end is told
// with the trailers (DecodeTrailers), which come after it.
func (*bodyWait) DecodeEnd() ([]byte, error) { return nil, nil }

// DecodeTrailers implements httpfilter.TrailerDecoder (the connection
// manager calls DecodeTrailersChecked).
func (w *bodyWait) DecodeTrailers(t http.Header) http.Header {
	t, _ = w.DecodeTrailersChecked(t)
	return t
}

// DecodeTrailersChecked implements httpfilter.CheckedTrailerDecoder: the
// body has ended; the script's iteration ends, it gets the trailers (nil
// for none) and runs to its end, and the trailers it leaves go upstream.
// A script that failed fails the request.
func (w *bodyWait) DecodeTrailersChecked(t http.Header) (http.Header, error) {
	if !w.ended {
		w.ended, w.trailers = true, t
		close(w.chunks)
		<-w.done
	}
	if w.failed {
		return nil, &httpfilter.BodyError{Status: 500, Details: detailsError}
	}
	return w.trailers, nil
}

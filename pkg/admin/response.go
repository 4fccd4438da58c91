package admin

import (
	"errors"
	"fmt"
	"io"
	"net/http"
	"strconv"

	"github.com/go-logr/logr"
	"google.golang.org/protobuf/proto"
)

// Content types of admin responses, spelled as Envoy spells them: tools
// compare them byte for byte.
const (
	// ContentTypeText is the fallback for handlers that set none.
	ContentTypeText = "text/plain; charset=UTF-8"
	// ContentTypeJSON is used by every JSON endpoint (no charset, as Envoy).
	ContentTypeJSON = "application/json"
	// ContentTypeHTML is used by the home page.
	ContentTypeHTML = "text/html; charset=UTF-8"
)

// Response is the one writer every handler answers through. It holds the
// status and content type until the first byte of the body is written, then
// commits them together with the admin's fallback headers, so no handler
// deals with header ordering, and internal errors are reported (and logged)
// in one place.
type Response struct {
	rw          http.ResponseWriter
	log         logr.Logger
	path        string
	status      int
	contentType string
	committed   bool
	err         error // first write or flush error; later writes are skipped
}

func newResponse(rw http.ResponseWriter, log logr.Logger, path string) *Response {
	return &Response{rw: rw, log: log, path: path, status: http.StatusOK}
}

// Header returns the response headers, for the rare handler that sets one
// beyond status and content type. Changes after the first Write are lost.
func (w *Response) Header() http.Header { return w.rw.Header() }

// SetStatus sets the status code (200 unless set). It has no effect once
// the body has started.
func (w *Response) SetStatus(code int) {
	if !w.committed {
		w.status = code
	}
}

// SetContentType sets the content type; without one the response is
// text/plain; charset=UTF-8.
func (w *Response) SetContentType(contentType string) {
	if !w.committed {
		w.contentType = contentType
	}
}

// Write appends to the body, committing the headers first. After a write
// error (the client went away) it keeps returning that error, so streaming
// handlers stop.
func (w *Response) Write(p []byte) (int, error) {
	w.commit()
	if w.err != nil {
		return 0, w.err
	}
	n, err := w.rw.Write(p)
	if err != nil {
		w.err = fmt.Errorf("write response: %w", err)
	}
	return n, err
}

// WriteString appends s to the body.
func (w *Response) WriteString(s string) (int, error) {
	return w.Write([]byte(s))
}

// Text answers code with body, the whole response body, as plain text
// unless a content type was set. The length is declared, so that even a
// flushed answer is complete on the wire. A write error is kept by the
// Response and logged when the request ends; the handler has nothing left to
// do about a client that went away.
func (w *Response) Text(code int, body string) {
	w.SetStatus(code)
	if !w.committed {
		w.rw.Header().Set("Content-Length", strconv.Itoa(len(body)))
	}
	_, _ = w.WriteString(body)
}

// Proto answers 200 with m rendered by the shared protobuf JSON printer
// (see [MarshalProto] for alwaysPrint).
func (w *Response) Proto(m proto.Message, alwaysPrint bool) {
	b, err := MarshalProto(m, alwaysPrint)
	if err != nil {
		w.Fail(err)
		return
	}
	w.SetContentType(ContentTypeJSON)
	_, _ = w.Write(b)
}

// Fail reports an internal error: 500 with the error's text and a newline,
// logged once here. Client mistakes are not failures; handlers answer them with Text
// and a 4xx status.
func (w *Response) Fail(err error) {
	w.log.Error(err, "admin request failed", "path", w.path)
	if w.committed {
		// The status is gone; the client sees a truncated body.
		return
	}
	w.contentType = ""
	w.Text(http.StatusInternalServerError, err.Error()+"\n")
}

// Flush commits the headers and sends what was written so far, for
// responses that must reach the client before the handler's work continues
// (/quitquitquit answers before shutting down).
func (w *Response) Flush() {
	w.commit()
	if w.err != nil {
		return
	}
	if err := http.NewResponseController(w.rw).Flush(); err != nil && !errors.Is(err, http.ErrNotSupported) {
		w.err = fmt.Errorf("flush response: %w", err)
	}
}

// commit sends the status line and headers once.
func (w *Response) commit() {
	if w.committed {
		return
	}
	w.committed = true
	h := w.rw.Header()
	switch {
	case w.contentType != "":
		h.Set("Content-Type", w.contentType)
	case h.Get("Content-Type") == "":
		h.Set("Content-Type", ContentTypeText)
	}
	w.rw.WriteHeader(w.status)
}

// finish ends the response: headers go out even for an empty body, and a
// write error, which only means the client left, is logged at debug level.
func (w *Response) finish() {
	w.commit()
	if w.err != nil {
		w.log.V(1).Info("admin response not delivered", "path", w.path, "error", w.err.Error())
	}
}

// Response is an io.Writer (checked here at compile time): endpoint
// families stream into it with fmt.Fprintf and encoders.
var _ io.Writer = (*Response)(nil)

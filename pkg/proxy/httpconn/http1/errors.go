package http1

import (
	"errors"
	"strconv"
)

// Error is a protocol error in a message read from a peer. Status is the
// response a server sends for it when the peer is a client; a proxy reading
// a broken response answers its own client with a gateway error instead.
type Error struct {
	// Status is 400, 413, 431, 501 or 505.
	Status int
	// Reason says what is wrong, in lower case, for logs and response
	// code details.
	Reason string
}

// Error implements error.
func (e *Error) Error() string {
	return "http1: " + e.Reason + " (" + strconv.Itoa(e.Status) + ")"
}

// StatusOf returns the status a server answers for err: the Status of an
// *Error in its chain, else 400.
func StatusOf(err error) int {
	var pe *Error
	if errors.As(err, &pe) {
		return pe.Status
	}
	return 400
}

// The protocol errors. They are values, not state: nothing changes them,
// and callers compare them with errors.Is.
var (
	ErrHeadTooLarge        = &Error{431, "header section too large"}
	ErrTooManyHeaders      = &Error{431, "too many header fields"}
	ErrRequestLine         = &Error{400, "malformed request line"}
	ErrMethod              = &Error{400, "invalid method"}
	ErrTarget              = &Error{400, "invalid request target"}
	ErrVersion             = &Error{400, "malformed http version"}
	ErrVersionNotSupported = &Error{505, "http version not supported"}
	ErrStatusLine          = &Error{400, "malformed status line"}
	ErrStatusCode          = &Error{400, "invalid status code"}
	ErrHeaderName          = &Error{400, "invalid header name"}
	ErrHeaderValue         = &Error{400, "invalid header value"}
	ErrObsFold             = &Error{400, "obsolete line folding"}
	ErrBareCR              = &Error{400, "bare cr in header section"}
	ErrMissingHost         = &Error{400, "missing host header"}
	ErrMultipleHost        = &Error{400, "multiple host headers"}
	ErrContentLength       = &Error{400, "invalid content-length"}
	ErrLengthAndEncoding   = &Error{400, "both content-length and transfer-encoding"}
	ErrTransferEncoding    = &Error{400, "invalid transfer-encoding"}
	ErrUnsupportedEncoding = &Error{501, "unsupported transfer-encoding"}
	ErrChunkSize           = &Error{400, "invalid chunk size"}
	ErrChunkFraming        = &Error{400, "invalid chunk framing"}
	ErrChunkLineTooLong    = &Error{400, "chunk line too long"}
	ErrTrailersTooLarge    = &Error{431, "trailer section too large"}
	ErrTruncatedBody       = &Error{400, "body ended before its length"}
	ErrTruncatedHead       = &Error{400, "connection closed inside a header section"}
)

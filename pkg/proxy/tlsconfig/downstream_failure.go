package tlsconfig

import (
	"bytes"
	"context"
	"crypto/tls"
	"errors"
	"io"
	"os"
	"strings"
)

// DownstreamFailureReason is why a downstream (server side) TLS handshake
// failed, as Envoy reports it in %DOWNSTREAM_TRANSPORT_FAILURE_REASON%:
// BoringSSL's error in Envoy's "TLS_error:|code:lib:func:REASON:TLS_error_end"
// form for the failures both libraries name alike, Go's text otherwise.
// A client that went away or a timeout leaves no reason ("").
func DownstreamFailureReason(err error) string {
	var rh tls.RecordHeaderError
	switch {
	case errors.Is(err, io.EOF), errors.Is(err, os.ErrDeadlineExceeded),
		errors.Is(err, context.DeadlineExceeded), errors.Is(err, context.Canceled):
		return ""
	case errors.As(err, &rh):
		// BoringSSL tells a plaintext HTTP request apart from other
		// bytes that are not a TLS record.
		if isHTTPRequest(rh.RecordHeader[:]) {
			return "TLS_error:|268435612:SSL routines:OPENSSL_internal:HTTP_REQUEST:TLS_error_end"
		}
	case strings.Contains(err.Error(), "client offered only unsupported versions"):
		return "TLS_error:|268435696:SSL routines:OPENSSL_internal:UNSUPPORTED_PROTOCOL:TLS_error_end"
	}
	return (&HandshakeError{Err: err}).FailureReason()
}

// isHTTPRequest reports whether the first five bytes of a connection
// (a record header's worth) start an HTTP/1 request, as BoringSSL checks
// them.
func isHTTPRequest(b []byte) bool {
	for _, m := range [...]string{"GET ", "POST ", "HEAD ", "PUT "} {
		if bytes.HasPrefix(b, []byte(m)) {
			return true
		}
	}
	return false
}

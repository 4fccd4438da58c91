package accesslog

import "strconv"

// defaultRequestHeaders are the regular request headers DefaultFormat
// prints, found in one pass over the request's fields. Immutable.
var defaultRequestHeaders = NewHeaderNames("x-envoy-original-path", "x-forwarded-for", "user-agent", "x-request-id")

// Indexes into defaultRequestHeaders.
const (
	defaultOriginalPath = iota
	defaultForwardedFor
	defaultUserAgent
	defaultRequestID
)

// isDefaultFormat reports whether a text format renders as DefaultFormat
// with missing values as "-": then appendDefault renders it. The format
// string alone does not say so when a formatter extension claims one of
// its operators, hence the look at the parts.
func isDefaultFormat(format string, omitEmpty bool, parts []part) bool {
	if format != DefaultFormat || omitEmpty {
		return false
	}
	for i := range parts {
		if parts[i].op == opExtension {
			return false
		}
	}
	return true
}

// appendDefault renders DefaultFormat, byte for byte what the loop over
// its 27 parts renders (TestDefaultFormatAppender compares them), without
// the dispatch per part and with its four request headers found in one
// pass. start is its START_TIME's layout. The short literals are appended
// byte by byte, which needs no copy call.
func appendDefault(dst []byte, e *Entry, start *timeLayout) []byte {
	var h HeaderValues
	if s, ok := e.RequestHeaders.(HeaderSetGetter); ok {
		// Called here rather than in getHeaders, which would copy the
		// values once more.
		h = s.GetSet(&defaultRequestHeaders)
	} else {
		h = getHeaders(e.RequestHeaders, &defaultRequestHeaders)
	}
	dst = append(dst, '[')
	if e.StartTime.IsZero() {
		dst = append(dst, '-')
	} else {
		dst = start.append(dst, e.StartTime.UTC())
	}
	dst = append(dst, ']', ' ', '"')
	dst = appendOrDash(dst, e.Method)
	dst = append(dst, ' ')
	if v, ok := h.Has(defaultOriginalPath); ok {
		dst = append(dst, v...)
	} else {
		dst = appendOrDash(dst, e.Path)
	}
	dst = append(dst, ' ')
	dst = appendOrDash(dst, e.Protocol)
	dst = append(dst, '"', ' ')
	if e.ResponseCode >= 100 && e.ResponseCode < 600 {
		dst = append(dst, statusCodes[e.ResponseCode-100]...)
	} else {
		dst = strconv.AppendInt(dst, int64(e.ResponseCode), 10)
	}
	dst = append(dst, ' ')
	dst = e.ResponseFlags.AppendShort(dst)
	dst = append(dst, ' ')
	dst = appendUint(dst, e.BytesReceived)
	dst = append(dst, ' ')
	dst = appendUint(dst, e.BytesSent)
	dst = append(dst, ' ')
	if ms := int64(e.Duration) / 1e6; ms >= 0 {
		dst = appendUint(dst, uint64(ms))
	} else {
		dst = strconv.AppendInt(dst, ms, 10)
	}
	dst = append(dst, ' ')
	v, ok := lookup(e.ResponseHeaders, "x-envoy-upstream-service-time")
	dst = appendHeaderOrDash(dst, v, ok)
	dst = append(dst, ' ', '"')
	v, ok = h.Has(defaultForwardedFor)
	dst = appendHeaderOrDash(dst, v, ok)
	dst = append(dst, '"', ' ', '"')
	v, ok = h.Has(defaultUserAgent)
	dst = appendHeaderOrDash(dst, v, ok)
	dst = append(dst, '"', ' ', '"')
	v, ok = h.Has(defaultRequestID)
	dst = appendHeaderOrDash(dst, v, ok)
	dst = append(dst, '"', ' ', '"')
	dst = appendOrDash(dst, e.Authority)
	dst = append(dst, '"', ' ', '"')
	dst = appendOrDash(dst, e.UpstreamHost)
	return append(dst, '"', '\n')
}

// appendUint appends v in decimal; a single digit (no bytes received, a
// request of less than 10 ms) without strconv's call.
func appendUint(dst []byte, v uint64) []byte {
	if v < 10 {
		return append(dst, byte('0'+v))
	}
	return strconv.AppendUint(dst, v, 10)
}

// appendOrDash appends s, or "-" for an empty (missing) one.
func appendOrDash(dst []byte, s string) []byte {
	if s == "" {
		return append(dst, '-')
	}
	return append(dst, s...)
}

// appendHeaderOrDash appends a header's value, "-" when it is absent; a
// present empty header prints as empty.
func appendHeaderOrDash(dst []byte, v string, ok bool) []byte {
	if !ok {
		return append(dst, '-')
	}
	return append(dst, v...)
}

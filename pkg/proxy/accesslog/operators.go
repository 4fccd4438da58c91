package accesslog

import (
	"strconv"
	"time"
)

// opCode identifies a command operator.
type opCode uint8

const (
	opLiteral opCode = iota
	opStartTime
	opReq
	opResp
	opTrailer
	opProtocol
	opResponseCode
	opResponseCodeDetails
	opResponseFlags
	opBytesReceived
	opBytesSent
	opDuration
	opRequestDuration
	opResponseDuration
	opUpstreamHost
	opUpstreamCluster
	opUpstreamLocalAddress
	opUpstreamTransportFailureReason
	opDownstreamRemoteAddress
	opDownstreamRemoteAddressWithoutPort
	opDownstreamLocalAddress
	opDownstreamLocalAddressWithoutPort
	opRequestedServerName
	opTLSJA3Fingerprint
	opTLSJA4Fingerprint
	opConnectionID
	opRouteName
	opFilterChainName
	opDownstreamTransportFailureReason
	opLocalReplyBody
	opMetadata
	opExtension
	opAccessLogType
	opUpstreamRequestAttemptCount
	opFilterState
	// opTLS is every %DOWNSTREAM_*% and %UPSTREAM_*% TLS operator (see
	// tlsinfo.go).
	opTLS
)

// argKind says what arguments an operator takes.
type argKind uint8

const (
	argNone        argKind = iota // %NAME%
	argHeader                     // %NAME(X?Y)%, required
	argOptional                   // %NAME% or %NAME(arg)%
	argMetadata                   // %NAME(NS:KEY...)%, %METADATA(TYPE:NS:KEY...)%
	argFilterState                // %FILTER_STATE(KEY:F)%
)

// operator describes one supported command operator.
type operator struct {
	op   opCode
	args argKind
	// numeric values are JSON numbers in typed JSON formats.
	numeric bool
}

// operators are the supported command operators by name. Immutable.
var operators = map[string]operator{
	"START_TIME":                             {op: opStartTime, args: argOptional},
	"REQ":                                    {op: opReq, args: argHeader},
	"RESP":                                   {op: opResp, args: argHeader},
	"TRAILER":                                {op: opTrailer, args: argHeader},
	"PROTOCOL":                               {op: opProtocol},
	"RESPONSE_CODE":                          {op: opResponseCode, numeric: true},
	"RESPONSE_CODE_DETAILS":                  {op: opResponseCodeDetails},
	"RESPONSE_FLAGS":                         {op: opResponseFlags},
	"BYTES_RECEIVED":                         {op: opBytesReceived, numeric: true},
	"BYTES_SENT":                             {op: opBytesSent, numeric: true},
	"DURATION":                               {op: opDuration, numeric: true},
	"REQUEST_DURATION":                       {op: opRequestDuration, numeric: true},
	"RESPONSE_DURATION":                      {op: opResponseDuration, numeric: true},
	"UPSTREAM_HOST":                          {op: opUpstreamHost},
	"UPSTREAM_CLUSTER":                       {op: opUpstreamCluster},
	"UPSTREAM_LOCAL_ADDRESS":                 {op: opUpstreamLocalAddress},
	"UPSTREAM_TRANSPORT_FAILURE_REASON":      {op: opUpstreamTransportFailureReason},
	"DOWNSTREAM_REMOTE_ADDRESS":              {op: opDownstreamRemoteAddress},
	"DOWNSTREAM_REMOTE_ADDRESS_WITHOUT_PORT": {op: opDownstreamRemoteAddressWithoutPort},
	"DOWNSTREAM_LOCAL_ADDRESS":               {op: opDownstreamLocalAddress},
	"DOWNSTREAM_LOCAL_ADDRESS_WITHOUT_PORT":  {op: opDownstreamLocalAddressWithoutPort},
	"REQUESTED_SERVER_NAME":                  {op: opRequestedServerName},
	"TLS_JA3_FINGERPRINT":                    {op: opTLSJA3Fingerprint},
	"TLS_JA4_FINGERPRINT":                    {op: opTLSJA4Fingerprint},
	"CONNECTION_ID":                          {op: opConnectionID, numeric: true},
	"UPSTREAM_REQUEST_ATTEMPT_COUNT":         {op: opUpstreamRequestAttemptCount, numeric: true},
	"ROUTE_NAME":                             {op: opRouteName},
	"FILTER_CHAIN_NAME":                      {op: opFilterChainName},
	"DOWNSTREAM_TRANSPORT_FAILURE_REASON":    {op: opDownstreamTransportFailureReason},
	"ACCESS_LOG_TYPE":                        {op: opAccessLogType},
	"LOCAL_REPLY_BODY":                       {op: opLocalReplyBody},
	"METADATA":                               {op: opMetadata, args: argMetadata},
	"DYNAMIC_METADATA":                       {op: opMetadata, args: argMetadata},
	"CLUSTER_METADATA":                       {op: opMetadata, args: argMetadata},
	"UPSTREAM_METADATA":                      {op: opMetadata, args: argMetadata},
	"FILTER_STATE":                           {op: opFilterState, args: argFilterState},
}

// value appends the operator's value for e and reports whether there was
// one. On false the caller discards whatever was appended.
func (op opCode) value(p *part, dst []byte, e *Entry) ([]byte, bool) {
	switch op {
	case opStartTime:
		if e.StartTime.IsZero() {
			return dst, false
		}
		return p.layout.append(dst, e.StartTime.UTC()), true
	case opReq:
		return appendHeader(dst, p, e, requestHeader)
	case opResp:
		return appendHeader(dst, p, e, responseHeader)
	case opTrailer:
		return appendHeader(dst, p, e, responseTrailer)
	case opProtocol:
		return appendString(dst, e.Protocol)
	case opResponseCode:
		if e.ResponseCode >= 100 && e.ResponseCode < 600 {
			return append(dst, statusCodes[e.ResponseCode-100]...), true
		}
		return strconv.AppendInt(dst, int64(e.ResponseCode), 10), true
	case opResponseCodeDetails:
		return appendString(dst, e.ResponseCodeDetails)
	case opResponseFlags:
		return e.ResponseFlags.AppendShort(dst), true
	case opBytesReceived:
		return strconv.AppendUint(dst, e.BytesReceived, 10), true
	case opBytesSent:
		return strconv.AppendUint(dst, e.BytesSent, 10), true
	case opDuration:
		return appendMillis(dst, int64(e.Duration)), true
	case opRequestDuration:
		return appendSince(dst, e.StartTime, e.LastRequestByte)
	case opResponseDuration:
		return appendSince(dst, e.StartTime, e.FirstUpstreamByte)
	case opUpstreamHost:
		return appendString(dst, e.UpstreamHost)
	case opUpstreamCluster:
		return appendString(dst, e.UpstreamCluster)
	case opUpstreamLocalAddress:
		return appendString(dst, e.UpstreamLocalAddress)
	case opUpstreamTransportFailureReason:
		return appendString(dst, e.UpstreamTransportFailureReason)
	case opDownstreamRemoteAddress:
		return appendString(dst, e.DownstreamRemoteAddress)
	case opDownstreamRemoteAddressWithoutPort:
		return appendString(dst, withoutPort(e.DownstreamRemoteAddress))
	case opDownstreamLocalAddress:
		return appendString(dst, e.DownstreamLocalAddress)
	case opDownstreamLocalAddressWithoutPort:
		return appendString(dst, withoutPort(e.DownstreamLocalAddress))
	case opRequestedServerName:
		return appendString(dst, e.RequestedServerName)
	case opTLSJA3Fingerprint:
		return appendString(dst, e.TLSJA3Fingerprint)
	case opTLSJA4Fingerprint:
		return appendString(dst, e.TLSJA4Fingerprint)
	case opTLS:
		return appendTLS(dst, p, e)
	case opConnectionID:
		return strconv.AppendUint(dst, e.ConnectionID, 10), true
	case opUpstreamRequestAttemptCount:
		return strconv.AppendUint(dst, uint64(e.UpstreamRequestAttemptCount), 10), true
	case opRouteName:
		return appendString(dst, e.RouteName)
	case opFilterChainName:
		return appendString(dst, e.FilterChainName)
	case opDownstreamTransportFailureReason:
		return appendString(dst, e.DownstreamTransportFailureReason)
	case opLocalReplyBody:
		return appendString(dst, e.LocalReplyBody)
	case opAccessLogType:
		// The enum's name, NotSet included, as Envoy prints it.
		return append(dst, e.Type.String()...), true
	case opMetadata:
		return p.metadata.appendText(dst, e)
	case opFilterState:
		return p.filterState.appendText(dst, e)
	case opExtension:
		v, ok := p.ext.Value(e)
		return append(dst, v...), ok
	}
	return dst, false
}

// appendString appends s; an empty string is a missing value, as Envoy's
// stream-info operators treat unset fields.
func appendString(dst []byte, s string) ([]byte, bool) {
	if s == "" {
		return dst, false
	}
	return append(dst, s...), true
}

// appendHeader appends the value of the part's header, or of its
// alternative (%REQ(X?Y)%) when the first is absent, as get reads them.
// Unlike other strings, a header that is present but empty prints as
// empty, not as missing.
func appendHeader(dst []byte, p *part, e *Entry, get func(*Entry, string) (string, bool)) ([]byte, bool) {
	v, ok := get(e, p.header)
	if !ok && p.alt != "" {
		v, ok = get(e, p.alt)
	}
	if !ok {
		return dst, false
	}
	return append(dst, v...), true
}

// appendSince appends the milliseconds from start to mark, missing when
// mark is unknown.
func appendSince(dst []byte, start, mark time.Time) ([]byte, bool) {
	if mark.IsZero() || start.IsZero() {
		return dst, false
	}
	return appendMillis(dst, int64(mark.Sub(start))), true
}

// requestHeader looks a request header up, answering the pseudo-headers
// from the entry's fields.
func requestHeader(e *Entry, name string) (string, bool) {
	switch name {
	case ":method":
		return e.Method, e.Method != ""
	case ":path":
		return e.Path, e.Path != ""
	case ":authority", "host":
		return e.Authority, e.Authority != ""
	case ":scheme":
		return e.Scheme, e.Scheme != ""
	}
	return lookup(e.RequestHeaders, name)
}

// responseHeader looks a response header up; ":status" is the response
// code.
func responseHeader(e *Entry, name string) (string, bool) {
	if name == ":status" {
		if e.ResponseCode == 0 {
			return "", false
		}
		return statusText(e.ResponseCode), true
	}
	return lookup(e.ResponseHeaders, name)
}

// responseTrailer looks a response trailer up.
func responseTrailer(e *Entry, name string) (string, bool) {
	return lookup(e.ResponseTrailers, name)
}

// lookup reads name from h, which may be nil.
func lookup(h HeaderGetter, name string) (string, bool) {
	if h == nil {
		return "", false
	}
	return h.Get(name)
}

// statusText is the decimal status code; the common codes come from a
// table so that the request path does not allocate.
func statusText(code int) string {
	if code >= 100 && code < 600 {
		return statusCodes[code-100]
	}
	return strconv.Itoa(code)
}

// statusCodes are "100".."599". Immutable after initialisation.
var statusCodes = func() (t [500]string) {
	for i := range t {
		t[i] = strconv.Itoa(i + 100)
	}
	return t
}()

// withoutPort strips ":port" from "ip:port" or "[ipv6]:port".
func withoutPort(addr string) string {
	if addr == "" {
		return ""
	}
	if addr[0] == '[' {
		for i := len(addr) - 1; i > 0; i-- {
			if addr[i] == ']' {
				return addr[1:i]
			}
		}
		return addr
	}
	for i := len(addr) - 1; i >= 0; i-- {
		if addr[i] == ':' {
			return addr[:i]
		}
	}
	return addr
}

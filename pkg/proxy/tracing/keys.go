package tracing

import "unsafe"

// KnownKey names one of the tag keys Envoy's connection manager gives
// every traced request (Envoy's Tracing::Tags): Key returns its string.
// Each such string lives at its own slot of one block (knownKeyBlock), so
// that an encoder tells a known key from its address alone, without
// comparing bytes (KnownKeyIndex), and writes the key's encoding from a
// table made once. The strings are ordinary immutable strings: everything
// else (Zipkin, SetTag's compare, Span.Tag) sees only their bytes.
type KnownKey uint8

// The known keys.
const (
	KeyRequestID KnownKey = iota
	KeyHTTPURL
	KeyHTTPMethod
	KeyDownstreamCluster
	KeyUserAgent
	KeyHTTPProtocol
	KeyPeerAddress
	KeyClientTraceID
	KeyRequestSize
	KeyResponseSize
	KeyHTTPStatusCode
	KeyResponseFlags
	KeyError
	KeyUpstreamAddress
	KeyGRPCPath
	KeyGRPCAuthority
	KeyGRPCContentType
	KeyGRPCTimeout
	KeyGRPCStatusCode
	KeyGRPCMessage
	// NumKnownKeys is the number of known keys.
	NumKnownKeys
)

// KnownKeySlot is the bytes each known key has in its block: no known key
// is longer than MaxKnownKeyLen, so that an encoding of a key with a few
// bytes around it fits a slot too.
const (
	KnownKeySlot   = 32
	MaxKnownKeyLen = 24
)

// knownKeyNames are the known keys' strings, by KnownKey.
var knownKeyNames = [NumKnownKeys]string{
	KeyRequestID:         "guid:x-request-id",
	KeyHTTPURL:           "http.url",
	KeyHTTPMethod:        "http.method",
	KeyDownstreamCluster: "downstream_cluster",
	KeyUserAgent:         "user_agent",
	KeyHTTPProtocol:      "http.protocol",
	KeyPeerAddress:       "peer.address",
	KeyClientTraceID:     "guid:x-client-trace-id",
	KeyRequestSize:       "request_size",
	KeyResponseSize:      "response_size",
	KeyHTTPStatusCode:    "http.status_code",
	KeyResponseFlags:     "response_flags",
	KeyError:             "error",
	KeyUpstreamAddress:   "upstream_address",
	KeyGRPCPath:          "grpc.path",
	KeyGRPCAuthority:     "grpc.authority",
	KeyGRPCContentType:   "grpc.content_type",
	KeyGRPCTimeout:       "grpc.timeout",
	KeyGRPCStatusCode:    "grpc.status_code",
	KeyGRPCMessage:       "grpc.message",
}

// knownKeyBlock holds the known keys, key k at k*KnownKeySlot, the rest of
// each slot zero; knownKeys are the strings of its keys. Both are made
// once and never written.
var knownKeyBlock, knownKeys = func() (string, [NumKnownKeys]string) {
	var b [int(NumKnownKeys) * KnownKeySlot]byte
	for k, name := range knownKeyNames {
		if len(name) > MaxKnownKeyLen {
			panic("tracing: known key " + name + " longer than MaxKnownKeyLen")
		}
		copy(b[k*KnownKeySlot:], name)
	}
	block := string(b[:])
	var keys [NumKnownKeys]string
	for k, name := range knownKeyNames {
		keys[k] = block[k*KnownKeySlot : k*KnownKeySlot+len(name)]
	}
	return block, keys
}()

// Key returns the known key k's string, the one KnownKeyIndex recognises.
func Key(k KnownKey) string { return knownKeys[k] }

// KnownKeyName returns the known key k's bytes, as a string of its own (not
// the one KnownKeyIndex recognises): for tables built once.
func KnownKeyName(k KnownKey) string { return knownKeyNames[k] }

// KnownKeyIndex returns the known key whose string (Key) s is, by its
// address; false for any other string, of the same bytes or not.
func KnownKeyIndex(s string) (KnownKey, bool) {
	k, ok := KnownKeyAt(s)
	return k, ok && len(s) == len(knownKeyNames[k])
}

// KnownKeyAt returns the known key whose string's first byte s starts at:
// s is that key (Key) when, and only when, it also has the key's length,
// which the caller checks (an encoder, against its own table: cheaper
// than a look-up here).
func KnownKeyAt(s string) (KnownKey, bool) {
	off := uintptr(unsafe.Pointer(unsafe.StringData(s))) - uintptr(unsafe.Pointer(unsafe.StringData(knownKeyBlock)))
	if off >= uintptr(NumKnownKeys)*KnownKeySlot || off%KnownKeySlot != 0 {
		return 0, false
	}
	return KnownKey(off / KnownKeySlot), true
}

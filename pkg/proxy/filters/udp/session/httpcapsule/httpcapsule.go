// Package httpcapsule is the UDP proxy's HTTP capsule session filter
// (envoy.filters.udp.session.http_capsule): each datagram from the client
// goes upstream as an HTTP DATAGRAM capsule (RFC 9297) carrying a
// CONNECT-UDP payload (RFC 9298: context ID 0, then the datagram), and the
// capsules the host sends back, which may span or share its datagrams, are
// parsed into the datagrams they carry for the client.
package httpcapsule

import (
	"errors"
	"fmt"

	capsulev3 "github.com/envoyproxy/go-control-plane/envoy/extensions/filters/udp/udp_proxy/session/http_capsule/v3"
	"google.golang.org/protobuf/proto"

	"github.com/outrigger-dev/outrigger/pkg/proxy/udpfilter"
)

// Name is the filter's name in the proxy. spelling.
const Name = "proxy.filters.udp.session.http_capsule"

// datagramCapsule is the DATAGRAM capsule type (RFC 9297, section 3.5).
const datagramCapsule = 0x00

// maxBuffered bounds the bytes kept of an incomplete capsule, as quiche's
// capsule parser (which Envoy uses) bounds them: past it, parsing fails.
const maxBuffered = 1 << 20

// Factory compiles the filter's (empty) configuration.
type Factory struct{}

var _ udpfilter.SessionFactory = Factory{}

// CompileSession implements udpfilter.SessionFactory.
func (Factory) CompileSession(config proto.Message) (udpfilter.SessionFilterConfig, error) {
	if _, ok := config.(*capsulev3.FilterConfig); !ok {
		return nil, fmt.Errorf("expected a %s, got %T", proto.MessageName(&capsulev3.FilterConfig{}), config)
	}
	return filterConfig{}, nil
}

// filterConfig makes a filter per session.
type filterConfig struct{}

// NewSessionFilter implements udpfilter.SessionFilterConfig.
func (filterConfig) NewSessionFilter() udpfilter.SessionFilter { return &filter{} }

// filter is one session's capsule encoder and parser.
type filter struct {
	// buf holds the host's bytes not yet parsed into whole capsules.
	buf []byte
	// failed is set once the host's bytes could not be parsed: as
	// quiche's parser, the filter then passes nothing more on.
	failed bool
}

// OnData implements udpfilter.SessionFilter: the datagram becomes a
// DATAGRAM capsule whose payload is context ID 0 and the datagram.
func (f *filter) OnData(b []byte) ([]byte, bool) {
	// The capsule's value: the context ID (0, one byte) and the datagram.
	n := uint64(len(b)) + 1
	out := make([]byte, 0, 1+varintLen(n)+int(n))
	out = appendVarint(out, datagramCapsule)
	out = appendVarint(out, n)
	out = append(out, 0)
	return append(out, b...), true
}

// OnWrite implements udpfilter.SessionFilter: it parses the capsules that
// the bytes complete and returns the datagrams of those that are
// DATAGRAM capsules with context ID 0; other capsule types and context
// IDs are dropped, as in Envoy.
func (f *filter) OnWrite(b []byte) [][]byte {
	if f.failed {
		return nil
	}
	f.buf = append(f.buf, b...)
	var out [][]byte
	for {
		payload, typ, used, err := parseCapsule(f.buf)
		if err != nil {
			f.fail()
			return out
		}
		if used == 0 {
			break
		}
		if typ == datagramCapsule {
			ctxID, n, ok := readVarint(payload)
			if !ok {
				// A DATAGRAM capsule without a context ID is a parse
				// failure (Envoy resets the stream on it).
				f.fail()
				return out
			}
			if ctxID == 0 {
				out = append(out, append([]byte(nil), payload[n:]...))
			}
		}
		f.buf = f.buf[used:]
	}
	if len(f.buf) > maxBuffered {
		f.fail()
		return out
	}
	if len(f.buf) == 0 {
		f.buf = nil
	}
	return out
}

// fail puts the parser in its failed state for the rest of the session.
func (f *filter) fail() {
	f.failed = true
	f.buf = nil
}

// errCapsule is a capsule that cannot be parsed.
var errCapsule = errors.New("malformed capsule")

// parseCapsule reads one capsule at the start of b: its type, its value
// and the bytes it took; used is 0 when b does not hold a whole capsule
// yet.
func parseCapsule(b []byte) (value []byte, typ uint64, used int, err error) {
	typ, n, ok := readVarint(b)
	if !ok {
		return nil, 0, 0, nil
	}
	length, m, ok := readVarint(b[n:])
	if !ok {
		return nil, 0, 0, nil
	}
	start := n + m
	if length > uint64(maxBuffered) {
		// It could never be buffered whole.
		return nil, 0, 0, errCapsule
	}
	if uint64(len(b)-start) < length {
		return nil, 0, 0, nil
	}
	end := start + int(length)
	return b[start:end], typ, end, nil
}

// readVarint reads a QUIC variable-length integer (RFC 9000, section
// 16) at the start of b: its value and its length; ok is false when b is
// too short.
func readVarint(b []byte) (v uint64, n int, ok bool) {
	if len(b) == 0 {
		return 0, 0, false
	}
	n = 1 << (b[0] >> 6)
	if len(b) < n {
		return 0, 0, false
	}
	v = uint64(b[0] & 0x3f)
	for _, c := range b[1:n] {
		v = v<<8 | uint64(c)
	}
	return v, n, true
}

// varintLen is the length of v as a QUIC variable-length integer.
func varintLen(v uint64) int {
	switch {
	case v < 1<<6:
		return 1
	case v < 1<<14:
		return 2
	case v < 1<<30:
		return 4
	}
	return 8
}

// appendVarint appends v as a QUIC variable-length integer, in its
// shortest form.
func appendVarint(b []byte, v uint64) []byte {
	switch varintLen(v) {
	case 1:
		return append(b, byte(v))
	case 2:
		return append(b, byte(v>>8)|0x40, byte(v))
	case 4:
		return append(b, byte(v>>24)|0x80, byte(v>>16), byte(v>>8), byte(v))
	}
	return append(b, byte(v>>56)|0xc0, byte(v>>48), byte(v>>40), byte(v>>32), byte(v>>24), byte(v>>16), byte(v>>8), byte(v))
}

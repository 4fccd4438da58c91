package httpinspector

import (
	"github.com/outrigger-dev/outrigger/pkg/proxy/listenerfilter"
)

// rawBuffer is the transport protocol of a plaintext connection, the only
// one the filter inspects.
const rawBuffer = "raw_buffer"

// The ALPN names the filter records, Envoy's.
const (
	alpnHTTP10 = "http/1.0"
	alpnHTTP11 = "http/1.1"
	alpnH2C    = "h2c"
)

// filter is a compiled http_inspector, shared by the listener's
// connections.
type filter struct {
	stats filterStats
}

// OnAccept peeks until the first bytes tell whether the connection speaks
// HTTP, and which version, then records it as the connection's
// application protocol. Bytes that are not HTTP let the connection go on
// unchanged (http_not_found); a first line longer than 64 KiB closes it
// (read_error), as in Envoy.
func (f *filter) OnAccept(s *listenerfilter.Socket) error {
	if t := s.DetectedTransportProtocol(); t != "" && t != rawBuffer {
		return nil
	}
	buf := make([]byte, initialRead)
	want := 1
	for {
		n, err := s.Peek(buf, want)
		if err != nil {
			return err
		}
		switch r := inspect(buf[:n]); r {
		case needMore:
			if n >= maxInspect {
				f.stats.readError.Inc()
				return listenerfilter.ErrRejected
			}
			if n >= len(buf) {
				// Envoy doubles its read buffer, up to the limit.
				buf = append(buf, make([]byte, min(2*len(buf), maxInspect)-len(buf))...)
			}
			want = n + 1
		case notHTTP:
			f.stats.notFound.Inc()
			return nil
		default:
			f.found(s, r)
			return nil
		}
	}
}

// found counts and records the protocol detected.
func (f *filter) found(s *listenerfilter.Socket, r result) {
	switch r {
	case http10:
		f.stats.http10.Inc()
		s.SetApplicationProtocols([]string{alpnHTTP10})
	case http11:
		f.stats.http11.Inc()
		s.SetApplicationProtocols([]string{alpnHTTP11})
	case http2:
		f.stats.http2.Inc()
		s.SetApplicationProtocols([]string{alpnH2C})
	}
}

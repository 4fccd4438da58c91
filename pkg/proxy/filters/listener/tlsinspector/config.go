// Package tlsinspector is the listener filter
// envoy.filters.listener.tls_inspector: it peeks at a new connection's
// first bytes and, when they are a TLS ClientHello, records the transport
// protocol "tls", the requested server name (SNI) and the protocols the
// client offers (ALPN) for the filter chain match, without consuming
// anything: the chain's TLS handshake then reads the same ClientHello.
package tlsinspector

import (
	"errors"
	"fmt"

	tiv3 "github.com/envoyproxy/go-control-plane/envoy/extensions/filters/listener/tls_inspector/v3"
	"google.golang.org/protobuf/proto"

	"github.com/outrigger-dev/outrigger/pkg/proxy/listenerfilter"
	"github.com/outrigger-dev/outrigger/pkg/proxy/stats"
)

// Name is the filter's name in the proxy. spelling.
const Name = "proxy.filters.listener.tls_inspector"

// maxClientHello is the largest ClientHello the filter reads, Envoy's
// limit (64 KiB); a larger one closes the connection
// (client_hello_too_large).
const maxClientHello = 64 << 10

// defaultInitialRead is how much the filter peeks at first.
const defaultInitialRead = 16 << 10

// Factory compiles the filter's configuration.
type Factory struct{}

// Compile builds the filter.
func (Factory) Compile(config proto.Message, ctx listenerfilter.Context) (listenerfilter.Filter, error) {
	cfg, ok := config.(*tiv3.TlsInspector)
	if !ok {
		return nil, fmt.Errorf("tls_inspector: unexpected configuration %T", config)
	}
	if ctx.Stats == nil {
		return nil, errors.New("tls_inspector: no stat store")
	}
	limit := maxClientHello
	if v := cfg.GetMaxClientHelloSize(); v != nil {
		if v.GetValue() > maxClientHello {
			return nil, fmt.Errorf("max_client_hello_size: max_client_hello_size of %d is greater than maximum of %d", v.GetValue(), maxClientHello)
		}
		limit = int(v.GetValue())
	}
	initial := min(defaultInitialRead, limit)
	if v := cfg.GetInitialReadBufferSize(); v != nil {
		initial = min(int(v.GetValue()), limit)
	}
	return &filter{initial: initial, limit: limit, closeOnError: cfg.GetCloseConnectionOnClientHelloParsingErrors(),
		ja3: cfg.GetEnableJa3Fingerprinting().GetValue(), ja4: cfg.GetEnableJa4Fingerprinting().GetValue(),
		stats: newFilterStats(ctx.Stats.Scope("tls_inspector."))}, nil
}

// filterStats are Envoy's tls_inspector stats, at the root scope.
type filterStats struct {
	tooLarge, tlsFound, tlsNotFound *stats.Counter
	alpnFound, alpnNotFound         *stats.Counter
	sniFound, sniNotFound           *stats.Counter
	bytesProcessed                  *stats.Histogram
}

func newFilterStats(scope stats.Scope) filterStats {
	return filterStats{
		tooLarge:       scope.Counter("client_hello_too_large"),
		tlsFound:       scope.Counter("tls_found"),
		tlsNotFound:    scope.Counter("tls_not_found"),
		alpnFound:      scope.Counter("alpn_found"),
		alpnNotFound:   scope.Counter("alpn_not_found"),
		sniFound:       scope.Counter("sni_found"),
		sniNotFound:    scope.Counter("sni_not_found"),
		bytesProcessed: scope.Histogram("bytes_processed", stats.UnitBytes),
	}
}

// filter is a compiled tls_inspector, shared by the listener's
// connections.
type filter struct {
	initial int
	// limit is max_client_hello_size: a larger ClientHello closes the
	// connection (client_hello_too_large).
	limit int
	// closeOnError is close_connection_on_client_hello_parsing_errors:
	// bytes that are no ClientHello close the connection rather than go
	// on as plaintext.
	closeOnError bool
	// ja3 and ja4 are enable_ja3_fingerprinting and
	// enable_ja4_fingerprinting: the ClientHello's fingerprints for
	// %TLS_JA3_FINGERPRINT% and %TLS_JA4_FINGERPRINT%.
	ja3, ja4 bool
	stats    filterStats
}

// OnAccept peeks until the first bytes are known to be a whole
// ClientHello or not TLS at all, and records what the ClientHello says.
// Only an oversized ClientHello closes the connection.
func (f *filter) OnAccept(s *listenerfilter.Socket) error {
	buf := make([]byte, min(f.initial, 1024))
	want := 1
	for {
		n, err := s.Peek(buf, want)
		if err != nil {
			return err
		}
		h, need, perr := parseClientHello(buf[:n], f.limit)
		switch {
		case errors.Is(perr, errTooLarge):
			f.stats.tooLarge.Inc()
			f.stats.bytesProcessed.Record(uint64(n))
			return listenerfilter.ErrRejected
		case perr != nil && f.closeOnError:
			// Envoy counts nothing but the bytes then.
			f.stats.bytesProcessed.Record(uint64(n))
			return listenerfilter.ErrRejected
		case perr != nil:
			f.stats.tlsNotFound.Inc()
			f.stats.bytesProcessed.Record(uint64(n))
			return nil
		case need > 0:
			if need > len(buf) {
				buf = append(buf, make([]byte, need-len(buf))...)
			}
			want = need
			continue
		}
		f.stats.bytesProcessed.Record(uint64(h.length))
		f.stats.tlsFound.Inc()
		s.SetDetectedTransportProtocol("tls")
		if h.serverName != "" {
			f.stats.sniFound.Inc()
			s.SetRequestedServerName(h.serverName)
		} else {
			f.stats.sniNotFound.Inc()
		}
		if f.ja3 || f.ja4 {
			f.fingerprint(s, h.body)
		}
		if len(h.alpn) > 0 {
			f.stats.alpnFound.Inc()
			s.SetApplicationProtocols(h.alpn)
		} else {
			f.stats.alpnNotFound.Inc()
		}
		return nil
	}
}

// fingerprint records the fingerprints the filter computes of the
// ClientHello body.
func (f *filter) fingerprint(s *listenerfilter.Socket, body []byte) {
	fields, ok := readHelloFields(body)
	if !ok {
		return
	}
	var a3, a4 string
	if f.ja3 {
		a3 = ja3(fields)
	}
	if f.ja4 {
		a4 = ja4(fields)
	}
	s.SetTLSFingerprints(a3, a4)
}

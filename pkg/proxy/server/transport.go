package server

import (
	"errors"
	"fmt"
	"io"

	corev3 "github.com/envoyproxy/go-control-plane/envoy/config/core/v3"
	rawbufferv3 "github.com/envoyproxy/go-control-plane/envoy/extensions/transport_sockets/raw_buffer/v3"
	taptransportv3 "github.com/envoyproxy/go-control-plane/envoy/extensions/transport_sockets/tap/v3"
	tcpstatsv3 "github.com/envoyproxy/go-control-plane/envoy/extensions/transport_sockets/tcp_stats/v3"
	tlsv3 "github.com/envoyproxy/go-control-plane/envoy/extensions/transport_sockets/tls/v3"

	"github.com/outrigger-dev/outrigger/pkg/proxy/extension"
	"github.com/outrigger-dev/outrigger/pkg/proxy/listener"
	taptransport "github.com/outrigger-dev/outrigger/pkg/proxy/tap/transport"
	"github.com/outrigger-dev/outrigger/pkg/proxy/tcpstats"
	"github.com/outrigger-dev/outrigger/pkg/proxy/tlsconfig"
)

// downstreamTransport is what a filter chain's transport socket is built
// with: its listener's warming (the secrets it takes from discovery are
// added to what the listener waits for), its stat scope (the tap's
// transport.tap.* counters) and where the resources it holds go to be
// closed with the listener (a tap's admin config id).
type downstreamTransport struct {
	warm   *listenerWarming
	scope  string
	closer func(io.Closer)
}

// buildTransportSocket compiles a filter chain's transport_socket: TLS
// with a DownstreamTlsContext, raw_buffer (plaintext) or the tap
// transport socket over one of them. Errors name the field below the
// transport socket.
func (s *Server) buildTransportSocket(ts *corev3.TransportSocket, d downstreamTransport) (listener.Transport, error) {
	_, msg, err := s.ext.Resolve(extension.Ref{
		Kind: "transport socket", Category: tlsconfig.DownstreamCategory, Name: ts.GetName(), Config: ts.GetTypedConfig(),
	}, extension.LookupByName(runtimeValues{s.runtime}))
	if err != nil {
		return listener.Transport{}, err
	}
	switch m := msg.(type) {
	case *rawbufferv3.RawBuffer:
		return listener.Transport{}, nil
	case *taptransportv3.Tap:
		return s.buildTapTransport(m, d)
	case *tcpstatsv3.Config:
		ts, err := tcpstats.Compile(m, s.stats.Scope(d.scope))
		if err != nil {
			return listener.Transport{}, fmt.Errorf("typed_config: %w", err)
		}
		inner, err := s.buildTransportSocket(m.GetTransportSocket(), d)
		if err != nil {
			return listener.Transport{}, errors.Join(listener.PrefixErrors("typed_config.transport_socket.", err)...)
		}
		if inner.TCPStats != nil {
			return listener.Transport{}, errors.New("typed_config.transport_socket: a tcp_stats transport socket cannot wrap another")
		}
		inner.TCPStats = ts
		return inner, nil
	case *tlsv3.DownstreamTlsContext:
		srv, err := tlsconfig.CompileServerWithSecrets(m, func(sc *tlsv3.SdsSecretConfig) (*tlsconfig.Provider, error) {
			p, err := s.secrets.resolve(sc)
			if p != nil {
				d.warm.addSecret(p)
			}
			return p, err
		}, s.openKeyLog)
		if err != nil {
			return listener.Transport{}, errors.Join(listener.PrefixErrors("typed_config.", err)...)
		}
		return listener.Transport{TLS: srv}, nil
	}
	return listener.Transport{}, fmt.Errorf("typed_config: transport socket type %T is not supported by Outrigger", msg)
}

// openKeyLog opens the file of a TLS context's key_log, shared with the
// access logs (flushed and reopened with them, as Envoy writes key logs
// through its access log manager).
func (s *Server) openKeyLog(path string) (io.Writer, error) {
	fw, err := s.sharedLogFile(path)
	if err != nil {
		return nil, fmt.Errorf("opening TLS key log: %w", err)
	}
	return fw, nil
}

// buildTapTransport compiles a tap transport socket and the one it wraps.
func (s *Server) buildTapTransport(m *taptransportv3.Tap, d downstreamTransport) (listener.Transport, error) {
	tp, err := taptransport.Compile(m, &s.taps, s.stats.Scope(d.scope), runtimeValues{s.runtime})
	if err != nil {
		return listener.Transport{}, errors.Join(listener.PrefixErrors("typed_config.", err)...)
	}
	d.closer(tp)
	inner, err := s.buildTransportSocket(m.GetTransportSocket(), d)
	if err != nil {
		return listener.Transport{}, errors.Join(listener.PrefixErrors("typed_config.transport_socket.", err)...)
	}
	if inner.Tap != nil {
		return listener.Transport{}, errors.New("typed_config.transport_socket: a tap transport socket cannot wrap another tap")
	}
	inner.Tap = tp
	return inner, nil
}

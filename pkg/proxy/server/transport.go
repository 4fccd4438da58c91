package server

import (
	"errors"
	"fmt"

	corev3 "github.com/envoyproxy/go-control-plane/envoy/config/core/v3"
	tlsv3 "github.com/envoyproxy/go-control-plane/envoy/extensions/transport_sockets/tls/v3"

	"github.com/outrigger-dev/outrigger/pkg/proxy/extension"
	"github.com/outrigger-dev/outrigger/pkg/proxy/listener"
	"github.com/outrigger-dev/outrigger/pkg/proxy/tlsconfig"
)

// buildTransportSocket compiles a filter chain's transport_socket: the
// TLS transport socket with a DownstreamTlsContext is the only one. The
// secrets it takes from discovery are added to what the listener warms
// for (warm). Errors name the field below the transport socket.
func (s *Server) buildTransportSocket(ts *corev3.TransportSocket, warm *listenerWarming) (*tlsconfig.Server, error) {
	_, msg, err := s.ext.Resolve(extension.Ref{
		Kind: "transport socket", Category: tlsconfig.DownstreamCategory, Name: ts.GetName(), Config: ts.GetTypedConfig(),
	}, extension.LookupByName(runtimeValues{s.runtime}))
	if err != nil {
		return nil, err
	}
	dc, ok := msg.(*tlsv3.DownstreamTlsContext)
	if !ok {
		return nil, fmt.Errorf("typed_config: transport socket type %T is not supported by Outrigger", msg)
	}
	srv, err := tlsconfig.CompileServerWithSecrets(dc, func(sc *tlsv3.SdsSecretConfig) (*tlsconfig.Provider, error) {
		p, err := s.secrets.resolve(sc)
		if p != nil {
			warm.addSecret(p)
		}
		return p, err
	})
	if err != nil {
		return nil, errors.Join(listener.PrefixErrors("typed_config.", err)...)
	}
	return srv, nil
}

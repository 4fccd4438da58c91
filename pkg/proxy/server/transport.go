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
// TLS transport socket with a DownstreamTlsContext is the only one.
// Errors name the field below the transport socket.
func (s *Server) buildTransportSocket(ts *corev3.TransportSocket) (*tlsconfig.Server, error) {
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
	srv, err := tlsconfig.CompileServerWithSecrets(dc, s.secrets.resolve)
	if err != nil {
		return nil, errors.Join(listener.PrefixErrors("typed_config.", err)...)
	}
	return srv, nil
}

package listenerfilter

import (
	corev3 "github.com/envoyproxy/go-control-plane/envoy/config/core/v3"
	"google.golang.org/protobuf/types/known/structpb"

	"github.com/outrigger-dev/outrigger/pkg/proxy/accesslog"
	"github.com/outrigger-dev/outrigger/pkg/proxy/upstream"
)

// SetDynamicMetadata merges fields into namespace of the connection's
// dynamic metadata (Envoy's ListenerFilterCallbacks::setDynamicMetadata:
// each field replaces the one of its name). The connection keeps the
// result: tcp_proxy's access logs read it.
func (s *Socket) SetDynamicMetadata(namespace string, fields *structpb.Struct) {
	s.metadata = accesslog.MergeMetadata(s.metadata, namespace, fields)
}

// SetProxyProtocol records what the connection's PROXY protocol header
// said (Envoy's ProxyProtocolFilterState): the addresses and the TLVs
// kept for the upstream's header.
func (s *Socket) SetProxyProtocol(d upstream.ProxyProtocolData) { s.pp, s.hasPP = d, true }

// ProxyProtocol is what SetProxyProtocol recorded, false when no filter
// did.
func (s *Socket) ProxyProtocol() (upstream.ProxyProtocolData, bool) { return s.pp, s.hasPP }

// DynamicMetadata is the connection's dynamic metadata the filters have
// set so far, nil when none did.
func (s *Socket) DynamicMetadata() *corev3.Metadata { return s.metadata }

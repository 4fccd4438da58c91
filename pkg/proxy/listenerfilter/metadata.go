package listenerfilter

import (
	corev3 "github.com/envoyproxy/go-control-plane/envoy/config/core/v3"
	"google.golang.org/protobuf/types/known/structpb"

	"github.com/outrigger-dev/outrigger/pkg/proxy/accesslog"
)

// SetDynamicMetadata merges fields into namespace of the connection's
// dynamic metadata (Envoy's ListenerFilterCallbacks::setDynamicMetadata:
// each field replaces the one of its name). The connection keeps the
// result: tcp_proxy's access logs read it.
func (s *Socket) SetDynamicMetadata(namespace string, fields *structpb.Struct) {
	s.metadata = accesslog.MergeMetadata(s.metadata, namespace, fields)
}

// DynamicMetadata is the connection's dynamic metadata the filters have
// set so far, nil when none did.
func (s *Socket) DynamicMetadata() *corev3.Metadata { return s.metadata }

// Package originalsrc is the listener filter
// envoy.filters.listener.original_src: the upstream connections made for a
// downstream connection (tcp_proxy's, and those of the requests an HTTP
// connection manager forwards) leave from the downstream's IP address
// (port 0), bound with IP_TRANSPARENT, and carry mark as SO_MARK when it is
// not 0, so that the upstream sees the client's address. The address is
// the one the listener filters before it left (a PROXY protocol header's).
// A connection from a non-IP address is left alone, as in Envoy.
//
// The proxy needs CAP_NET_ADMIN, and the host a routing setup that brings
// the upstream's replies back to it (docs/traffic.md); without the
// capability the upstream connections fail (cluster.<name>.bind_errors).
package originalsrc

import (
	"errors"
	"fmt"

	osv3 "github.com/envoyproxy/go-control-plane/envoy/extensions/filters/listener/original_src/v3"
	"google.golang.org/protobuf/proto"

	"github.com/outrigger-dev/outrigger/pkg/proxy/listenerfilter"
	"github.com/outrigger-dev/outrigger/pkg/proxy/upstream"
)

// Name is the filter's name in the proxy. spelling.
const Name = "proxy.filters.listener.original_src"

// Factory compiles the filter's configuration.
type Factory struct{}

// Compile builds the filter. bind_port, which Envoy does not implement
// (and ignores), is refused.
func (Factory) Compile(config proto.Message, _ listenerfilter.Context) (listenerfilter.Filter, error) {
	c, ok := config.(*osv3.OriginalSrc)
	if !ok {
		return nil, fmt.Errorf("original_src: unexpected configuration %T", config)
	}
	if c.GetBindPort() {
		return nil, errors.New("bind_port: binding the downstream's port is not implemented by Envoy and not supported by Outrigger")
	}
	return filter{mark: c.GetMark()}, nil
}

// filter gives each IP connection its upstream source.
type filter struct{ mark uint32 }

// OnAccept sets the connection's upstream source; it never refuses a
// connection.
func (f filter) OnAccept(s *listenerfilter.Socket) error {
	if src, ok := upstream.SourceFromAddr(s.RemoteAddr(), f.mark); ok {
		s.SetUpstreamSource(src)
	}
	return nil
}

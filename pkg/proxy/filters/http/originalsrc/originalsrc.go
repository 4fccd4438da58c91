// Package originalsrc is the HTTP filter envoy.filters.http.original_src:
// each request's upstream connection leaves from the downstream's address
// (port 0), bound with IP_TRANSPARENT, and carries mark as SO_MARK when it
// is not 0, so that the upstream sees the client's address. The address is
// the request's downstream remote address, as the connection manager
// determined it (x-forwarded-for with use_remote_address false or
// xff_num_trusted_hops, as in Envoy). Requests from different addresses
// never share an upstream connection. A request without an IP address
// (from a unix socket) is left alone.
//
// The proxy needs CAP_NET_ADMIN, and the host a routing setup that brings
// the upstream's replies back to it (docs/traffic.md); without the
// capability the upstream connections fail (cluster.<name>.bind_errors)
// and the request is answered 503.
package originalsrc

import (
	"errors"
	"net/netip"

	osv3 "github.com/envoyproxy/go-control-plane/envoy/extensions/filters/http/original_src/v3"
	"google.golang.org/protobuf/proto"

	"github.com/outrigger-dev/outrigger/pkg/proxy/httpfilter"
	"github.com/outrigger-dev/outrigger/pkg/proxy/upstream"
)

// Name is the filter's name in the proxy. spelling.
const Name = "proxy.filters.http.original_src"

// Factory builds the filter.
type Factory struct{}

var _ httpfilter.Factory = Factory{}

// Compile implements httpfilter.Factory.
func (Factory) Compile(config proto.Message, _ httpfilter.Context) (httpfilter.Config, error) {
	c, ok := config.(*osv3.OriginalSrc)
	if !ok {
		return nil, errors.New("not an original_src OriginalSrc")
	}
	return &filter{mark: c.GetMark()}, nil
}

// filter keeps no state per request: it is its own configuration.
type filter struct{ mark uint32 }

// NewFilter implements httpfilter.Config.
func (f *filter) NewFilter() httpfilter.Filter { return f }

// DecodeHeaders gives the request its upstream source.
func (f *filter) DecodeHeaders(s httpfilter.Stream) httpfilter.Status {
	ip, err := netip.ParseAddr(s.RemoteIP())
	if err != nil {
		return httpfilter.Continue
	}
	s.SetUpstreamSource(upstream.Source{Addr: ip.Unmap(), Mark: f.mark})
	return httpfilter.Continue
}

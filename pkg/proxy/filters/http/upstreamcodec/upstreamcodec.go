// Package upstreamcodec is the registry entry of the upstream codec filter
// (envoy.filters.http.upstream_codec), the terminal filter of an upstream
// HTTP filter chain: it stands for the connection manager sending the
// request to the attempt's host, which it does itself once the upstream
// filters before it continued. Its configuration has no field.
package upstreamcodec

import (
	"errors"

	upstreamcodecv3 "github.com/envoyproxy/go-control-plane/envoy/extensions/filters/http/upstream_codec/v3"
	"google.golang.org/protobuf/proto"

	"github.com/outrigger-dev/outrigger/pkg/proxy/httpfilter"
)

// Name is the filter's name in the proxy. spelling.
const Name = "proxy.filters.http.upstream_codec"

// Factory builds the upstream codec's configuration.
type Factory struct{}

// Compile implements httpfilter.Factory.
func (Factory) Compile(config proto.Message, _ httpfilter.Context) (httpfilter.Config, error) {
	if _, ok := config.(*upstreamcodecv3.UpstreamCodec); !ok {
		return nil, errors.New("not an UpstreamCodec configuration")
	}
	return codec{}, nil
}

// codec marks the end of an upstream filter chain.
type codec struct{}

// NewFilter implements httpfilter.Config: the codec has no filter of its
// own, the connection manager sends the request.
func (codec) NewFilter() httpfilter.Filter { return nil }

// IsUpstreamCodec implements httpfilter.UpstreamCodec.
func (codec) IsUpstreamCodec() bool { return true }

// Package echo is the echo network filter (envoy.filters.network.echo): a
// terminal filter that writes every byte it reads back to the client,
// until the client closes, as Envoy's echo filter does.
package echo

import (
	"context"
	"errors"
	"io"
	"net"

	echov3 "github.com/envoyproxy/go-control-plane/envoy/extensions/filters/network/echo/v3"
	"google.golang.org/protobuf/proto"

	"github.com/outrigger-dev/outrigger/pkg/proxy/netfilter"
)

// Name is the filter's name in the proxy. spelling.
const Name = "proxy.filters.network.echo"

// Factory builds the filter; its configuration has no field.
type Factory struct{}

// Compile implements netfilter.Factory.
func (Factory) Compile(config proto.Message, _ netfilter.Context) (netfilter.Filter, error) {
	if _, ok := config.(*echov3.Echo); !ok {
		return nil, errors.New("not an Echo configuration")
	}
	return &Filter{}, nil
}

// Filter is the compiled echo filter.
type Filter struct {
	conns netfilter.ConnSet
}

var _ netfilter.Terminal = (*Filter)(nil)

// HandleConn implements netfilter.Terminal: echo until the client's end
// of the stream, then close.
func (f *Filter) HandleConn(c net.Conn) {
	if !f.conns.Add(c) {
		return
	}
	defer f.conns.Done(c)
	// io.Copy holds one 32 KiB buffer: memory stays bounded whatever the
	// client sends.
	_, _ = io.Copy(c, c)
}

// Close implements netfilter.Terminal.
func (f *Filter) Close() error { return f.conns.Close() }

// Shutdown implements netfilter.Terminal.
func (f *Filter) Shutdown(ctx context.Context) error { return f.conns.Shutdown(ctx) }

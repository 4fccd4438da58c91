// Package directresponse is the direct response network filter
// (envoy.filters.network.direct_response): a terminal filter that writes
// a fixed response to each new connection and closes it once written, as
// Envoy's filter does (without waiting for the client to send anything).
package directresponse

import (
	"context"
	"errors"
	"fmt"
	"net"
	"time"

	drv3 "github.com/envoyproxy/go-control-plane/envoy/extensions/filters/network/direct_response/v3"
	"google.golang.org/protobuf/proto"

	"github.com/outrigger-dev/outrigger/pkg/proxy/datasource"
	"github.com/outrigger-dev/outrigger/pkg/proxy/netfilter"
)

// Name is the filter's name in the proxy. spelling.
const Name = "proxy.filters.network.direct_response"

// writeTimeout bounds the write of the response to a client that does not
// read it.
const writeTimeout = 30 * time.Second

// Factory builds the filter.
type Factory struct{}

// Compile implements netfilter.Factory.
func (Factory) Compile(config proto.Message, _ netfilter.Context) (netfilter.Filter, error) {
	c, ok := config.(*drv3.Config)
	if !ok {
		return nil, errors.New("not a direct_response Config")
	}
	// Read once, at configuration time, as Envoy does.
	body, err := datasource.Read(c.GetResponse())
	if err != nil {
		return nil, fmt.Errorf("response.%w", err)
	}
	return &Filter{response: body}, nil
}

// Filter is the compiled filter.
type Filter struct {
	response []byte
	conns    netfilter.ConnSet
}

var _ netfilter.Terminal = (*Filter)(nil)

// HandleConn implements netfilter.Terminal: write the response, then
// close.
func (f *Filter) HandleConn(c net.Conn) {
	if !f.conns.Add(c) {
		return
	}
	defer f.conns.Done(c)
	if len(f.response) > 0 {
		_ = c.SetWriteDeadline(time.Now().Add(writeTimeout))
		_, _ = c.Write(f.response)
	}
	// Half-close first, so that the client reads the whole response
	// before the connection goes.
	if cw, ok := c.(interface{ CloseWrite() error }); ok {
		_ = cw.CloseWrite()
	}
}

// Close implements netfilter.Terminal.
func (f *Filter) Close() error { return f.conns.Close() }

// Shutdown implements netfilter.Terminal.
func (f *Filter) Shutdown(ctx context.Context) error { return f.conns.Shutdown(ctx) }

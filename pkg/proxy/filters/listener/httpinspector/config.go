// Package httpinspector is the listener filter
// envoy.filters.listener.http_inspector: it peeks at a plaintext
// connection's first bytes and, when they are an HTTP/2 connection preface
// or an HTTP/1.x request line, records the application protocol it found
// ("h2c", "http/1.1" or "http/1.0") for filter_chain_match's
// application_protocols, without consuming anything. Connections whose
// transport protocol an earlier filter detected (tls) are left alone.
package httpinspector

import (
	"fmt"

	hiv3 "github.com/envoyproxy/go-control-plane/envoy/extensions/filters/listener/http_inspector/v3"
	"google.golang.org/protobuf/proto"

	"github.com/outrigger-dev/outrigger/pkg/proxy/listenerfilter"
	"github.com/outrigger-dev/outrigger/pkg/proxy/stats"
)

// Name is the filter's name in the proxy. spelling.
const Name = "proxy.filters.listener.http_inspector"

// Envoy's sizes: the first peek, and the most the filter looks at before
// it gives up on a request line and closes the connection (read_error).
const (
	initialRead = 8 << 10
	maxInspect  = 64 << 10
)

// Factory compiles the filter's configuration, which has no field.
type Factory struct{}

// Compile builds the filter.
func (Factory) Compile(config proto.Message, ctx listenerfilter.Context) (listenerfilter.Filter, error) {
	if _, ok := config.(*hiv3.HttpInspector); !ok {
		return nil, fmt.Errorf("http_inspector: unexpected configuration %T", config)
	}
	if ctx.Stats == nil {
		return nil, fmt.Errorf("http_inspector: no stat store")
	}
	return &filter{stats: newFilterStats(ctx.Stats.Scope("http_inspector."))}, nil
}

// filterStats are Envoy's http_inspector stats, at the root scope.
type filterStats struct {
	readError, http10, http11, http2, notFound *stats.Counter
}

func newFilterStats(scope stats.Scope) filterStats {
	return filterStats{
		readError: scope.Counter("read_error"),
		http10:    scope.Counter("http10_found"),
		http11:    scope.Counter("http11_found"),
		http2:     scope.Counter("http2_found"),
		notFound:  scope.Counter("http_not_found"),
	}
}

// Package localratelimit is the listener filter
// envoy.filters.listener.local_ratelimit: each socket the listener
// accepts takes a token from a token bucket (one per listener
// configuration, shared by its workers), and one that finds none is closed
// at once, before the listener filters after it, its filter chain or its
// connection stats see it. Its stat is Envoy's,
// listener_local_ratelimit.<stat_prefix>.rate_limited.
package localratelimit

import (
	"errors"
	"fmt"

	lrlv3 "github.com/envoyproxy/go-control-plane/envoy/extensions/filters/listener/local_ratelimit/v3"
	"google.golang.org/protobuf/proto"

	"github.com/outrigger-dev/outrigger/pkg/proxy/listenerfilter"
	"github.com/outrigger-dev/outrigger/pkg/proxy/runtime"
	"github.com/outrigger-dev/outrigger/pkg/proxy/stats"
	"github.com/outrigger-dev/outrigger/pkg/proxy/tokenbucket"
)

// Name is the filter's name in the proxy. spelling.
const Name = "proxy.filters.listener.local_ratelimit"

// Factory compiles the filter's configuration.
type Factory struct{}

var _ listenerfilter.Factory = Factory{}

// filter is a compiled LocalRateLimit.
type filter struct {
	enabled     runtime.FeatureFlag
	runtime     runtime.BoolReader
	clock       tokenbucket.Clock
	bucket      *tokenbucket.Bucket
	rateLimited *stats.Counter
}

// Compile builds the filter with a full bucket. Errors name the field
// path below typed_config.
func (Factory) Compile(config proto.Message, ctx listenerfilter.Context) (listenerfilter.Filter, error) {
	p, ok := config.(*lrlv3.LocalRateLimit)
	if !ok {
		return nil, fmt.Errorf("expected a %s, got %T", proto.MessageName(&lrlv3.LocalRateLimit{}), config)
	}
	if ctx.Stats == nil {
		return nil, errors.New("no stat store")
	}
	spec, err := tokenbucket.CompileConnectionLimit(p.GetStatPrefix(), p.GetTokenBucket())
	if err != nil {
		return nil, err
	}
	return &filter{
		enabled:     runtime.FeatureFlagOf(p.GetRuntimeEnabled()),
		runtime:     ctx.Runtime,
		clock:       tokenbucket.NewClock(ctx.Now),
		bucket:      tokenbucket.New(spec, 0),
		rateLimited: ctx.Stats.Counter("listener_local_ratelimit." + p.GetStatPrefix() + ".rate_limited"),
	}, nil
}

// OnAccept takes a token for the socket, and closes it when there is
// none.
func (f *filter) OnAccept(*listenerfilter.Socket) error {
	if !f.enabled.Enabled(f.runtime) || f.bucket.Consume(f.clock.Seconds()) {
		return nil
	}
	f.rateLimited.Inc()
	return listenerfilter.ErrRejected
}

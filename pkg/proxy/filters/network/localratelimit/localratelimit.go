// Package localratelimit is the local rate limit network filter
// (envoy.filters.network.local_ratelimit): each new connection of its
// filter chain takes a token from a token bucket (shared by the
// listener's workers, and with share_key by every filter of the same
// share_key and token_bucket), and one that finds none is closed at once,
// before the filters after it see anything of it. Its stat is Envoy's,
// local_rate_limit.<stat_prefix>.rate_limited.
package localratelimit

import (
	"errors"
	"fmt"

	lrlv3 "github.com/envoyproxy/go-control-plane/envoy/extensions/filters/network/local_ratelimit/v3"
	"google.golang.org/protobuf/proto"

	"github.com/outrigger-dev/outrigger/pkg/proxy/accesslog"
	"github.com/outrigger-dev/outrigger/pkg/proxy/netfilter"
	"github.com/outrigger-dev/outrigger/pkg/proxy/runtime"
	"github.com/outrigger-dev/outrigger/pkg/proxy/stats"
	"github.com/outrigger-dev/outrigger/pkg/proxy/tokenbucket"
)

// Name is the filter's name in the proxy. spelling.
const Name = "proxy.filters.network.local_ratelimit"

// refusal is what the terminal filter records of a rate-limited
// connection: Envoy sets UpstreamRetryLimitExceeded (URX) on it. Never
// written.
var refusal = netfilter.Refusal{Flags: accesslog.UpstreamRetryLimitExceeded, Reason: "local_ratelimit_close_over_limit"}

// Factory compiles LocalRateLimit configurations.
type Factory struct{}

var _ netfilter.Factory = Factory{}

// Filter is a compiled LocalRateLimit.
type Filter struct {
	enabled     runtime.FeatureFlag
	runtime     runtime.BoolReader
	limit       *limiter
	rateLimited *stats.Counter
}

var _ netfilter.ReadFilter = (*Filter)(nil)

// limiter is a token bucket on its own clock.
type limiter struct {
	clock  tokenbucket.Clock
	bucket *tokenbucket.Bucket
}

// shareKey finds a share_key's bucket: Envoy shares a bucket between the
// filters whose share_key and token_bucket are the same.
type shareKey struct {
	key string
	// bucket is the token_bucket, deterministically serialised.
	bucket string
}

// Compile implements netfilter.Factory. Errors name the field path below
// typed_config.
func (Factory) Compile(msg proto.Message, ctx netfilter.Context) (netfilter.Filter, error) {
	p, ok := msg.(*lrlv3.LocalRateLimit)
	if !ok {
		return nil, fmt.Errorf("expected a %s, got %T", proto.MessageName(&lrlv3.LocalRateLimit{}), msg)
	}
	if ctx.Stats == nil {
		return nil, errors.New("no stat store")
	}
	spec, err := tokenbucket.CompileConnectionLimit(p.GetStatPrefix(), p.GetTokenBucket())
	if err != nil {
		return nil, err
	}
	newLimiter := func() *limiter {
		return &limiter{clock: tokenbucket.NewClock(ctx.Now), bucket: tokenbucket.New(spec, 0)}
	}
	f := &Filter{
		enabled:     runtime.FeatureFlagOf(p.GetRuntimeEnabled()),
		runtime:     ctx.Runtime,
		rateLimited: ctx.Stats.Counter("local_rate_limit." + p.GetStatPrefix() + ".rate_limited"),
	}
	if p.GetShareKey() == "" {
		f.limit = netfilter.LoadState(ctx.State, newLimiter)
		return f, nil
	}
	b, err := proto.MarshalOptions{Deterministic: true}.Marshal(p.GetTokenBucket())
	if err != nil {
		return nil, fmt.Errorf("token_bucket: %w", err)
	}
	f.limit = netfilter.LoadShared(ctx.Shared, shareKey{key: p.GetShareKey(), bucket: string(b)}, newLimiter)
	return f, nil
}

// OnNewConnection takes a token for the connection, and refuses it when
// there is none.
func (f *Filter) OnNewConnection(netfilter.Conn) *netfilter.Refusal {
	if !f.enabled.Enabled(f.runtime) {
		return nil
	}
	if f.limit.bucket.Consume(f.limit.clock.Seconds()) {
		return nil
	}
	f.rateLimited.Inc()
	return &refusal
}

// Package connectionlimit is the connection limit network filter
// (envoy.filters.network.connection_limit). It counts the open
// connections of its filter chain, across the listener's workers, and
// closes a connection that would take the count above max_connections
// before the filters after it (tcp_proxy, the HTTP connection manager) see
// anything of it; with a delay, it holds such a connection, reading
// nothing on, for the delay first. As in Envoy, a connection it closes
// counts until it is closed, and its stats are Envoy's, under
// connection_limit.<stat_prefix>.: limited_connections and the
// active_connections gauge.
package connectionlimit

import (
	"errors"
	"fmt"
	"net"
	"sync/atomic"
	"time"

	clv3 "github.com/envoyproxy/go-control-plane/envoy/extensions/filters/network/connection_limit/v3"
	"google.golang.org/protobuf/proto"

	"github.com/outrigger-dev/outrigger/pkg/proxy/netfilter"
	"github.com/outrigger-dev/outrigger/pkg/proxy/runtime"
	"github.com/outrigger-dev/outrigger/pkg/proxy/stats"
)

// Name is the filter's name in the proxy. spelling.
const Name = "proxy.filters.network.connection_limit"

// refusal is what the terminal filter records of a connection over the
// limit: no response flag, and Envoy's close reason. Never written.
var refusal = netfilter.Refusal{Reason: "over_connection_limit"}

// defaultBufferLimit is how much a held connection may send before the
// filter stops reading it, when its listener sets no buffer limit
// (Envoy's default per_connection_buffer_limit_bytes).
const defaultBufferLimit = 1 << 20

// Factory compiles ConnectionLimit configurations.
type Factory struct{}

var _ netfilter.Factory = Factory{}

// Filter is a compiled ConnectionLimit: one count for every connection of
// its filter chain.
type Filter struct {
	max     uint64
	delay   time.Duration
	enabled runtime.FeatureFlag
	runtime runtime.BoolReader
	// count is the connections open (those over the limit included,
	// until they are closed).
	count   *atomic.Int64
	release func()

	limited *stats.Counter
	active  *stats.Gauge
}

var _ netfilter.ReadFilter = (*Filter)(nil)

// Compile implements netfilter.Factory. Errors name the field path below
// typed_config.
func (Factory) Compile(msg proto.Message, ctx netfilter.Context) (netfilter.Filter, error) {
	p, ok := msg.(*clv3.ConnectionLimit)
	if !ok {
		return nil, fmt.Errorf("expected a %s, got %T", proto.MessageName(&clv3.ConnectionLimit{}), msg)
	}
	if ctx.Stats == nil {
		return nil, errors.New("no stat store")
	}
	var errs []error
	if p.GetStatPrefix() == "" {
		errs = append(errs, errors.New("stat_prefix: required"))
	}
	mc := p.GetMaxConnections()
	switch {
	case mc == nil:
		errs = append(errs, errors.New("max_connections: required"))
	case mc.GetValue() < 1:
		errs = append(errs, errors.New("max_connections: must be at least 1"))
	}
	var delay time.Duration
	if d := p.GetDelay(); d != nil {
		if err := d.CheckValid(); err != nil || d.AsDuration() < 0 {
			errs = append(errs, errors.New("delay: must be a valid, non-negative duration"))
		}
		delay = d.AsDuration().Truncate(time.Millisecond) // Envoy's milliseconds
	}
	if err := errors.Join(errs...); err != nil {
		return nil, err
	}
	f := &Filter{
		max:     mc.GetValue(),
		delay:   delay,
		enabled: runtime.FeatureFlagOf(p.GetRuntimeEnabled()),
		runtime: ctx.Runtime,
		count:   netfilter.LoadState(ctx.State, func() *atomic.Int64 { return new(atomic.Int64) }),
	}
	sc := ctx.Stats.Scope("connection_limit." + p.GetStatPrefix() + ".")
	f.limited = sc.Counter("limited_connections")
	f.active = sc.Gauge("active_connections")
	f.release = func() {
		f.count.Add(-1)
		f.active.Dec()
	}
	return f, nil
}

// OnNewConnection counts the connection until it closes, and refuses it
// when that takes the count above max_connections: at once, or after the
// delay.
func (f *Filter) OnNewConnection(c netfilter.Conn) *netfilter.Refusal {
	if !f.enabled.Enabled(f.runtime) {
		return nil
	}
	f.active.Inc()
	n := f.count.Add(1)
	c.OnClose(f.release)
	if uint64(n) <= f.max {
		return nil
	}
	f.limited.Inc()
	if f.delay > 0 {
		hold(c, f.delay)
	}
	return &refusal
}

// hold keeps a connection over the limit for d, or until its peer goes
// away: what the peer sends is read and dropped (up to the connection's
// buffer limit, after which it is no longer read), so that a peer that
// closes is seen, as Envoy sees it during its delay.
func hold(c net.Conn, d time.Duration) {
	deadline := time.Now().Add(d)
	limit := int64(defaultBufferLimit)
	if bl, ok := c.(interface{ BufferLimit() uint32 }); ok && bl.BufferLimit() > 0 {
		limit = int64(bl.BufferLimit())
	}
	if c.SetReadDeadline(deadline) != nil {
		return // the connection is gone already
	}
	buf := make([]byte, 4<<10)
	for read := int64(0); read < limit; {
		n, err := c.Read(buf)
		read += int64(n)
		if err != nil {
			// The delay is over, or the peer closed or reset the
			// connection.
			return
		}
	}
	time.Sleep(time.Until(deadline))
}

package cluster

import (
	"context"
	"net"
	"net/netip"
	"time"

	clusterv3 "github.com/envoyproxy/go-control-plane/envoy/config/cluster/v3"

	"github.com/outrigger-dev/outrigger/pkg/proxy/upstream"
)

// happyEyeballsDelay is how long a connection attempt to one of a host's
// addresses runs before the next address is tried too (Envoy's fixed
// 300 ms, RFC 8305's Connection Attempt Delay).
const happyEyeballsDelay = 300 * time.Millisecond

// happyEyeballs is upstream_connection_options.happy_eyeballs_config: how
// the addresses of an endpoint with additional_addresses are ordered
// before the attempts. The zero value is Envoy's default: the first
// address's family first, one address of it at a time.
type happyEyeballs struct {
	// family is the family tried first: 4 or 6, 0 for the first
	// address's.
	family int
	// count is first_address_family_count (at least 1).
	count int
}

// buildHappyEyeballs reads happy_eyeballs_config. Errors are relative to
// upstream_connection_options.
func buildHappyEyeballs(c *clusterv3.UpstreamConnectionOptions_HappyEyeballsConfig) (happyEyeballs, error) {
	he := happyEyeballs{count: 1}
	switch v := c.GetFirstAddressFamilyVersion(); v {
	case clusterv3.UpstreamConnectionOptions_DEFAULT:
	case clusterv3.UpstreamConnectionOptions_V4:
		he.family = 4
	case clusterv3.UpstreamConnectionOptions_V6:
		he.family = 6
	default:
		// Pipes and internal addresses have no additional addresses.
		return he, configErrorf("happy_eyeballs_config.first_address_family_version", "%s is not supported by Outrigger (an endpoint's additional addresses are IP addresses: DEFAULT, V4 or V6)", v)
	}
	if n := c.GetFirstAddressFamilyCount(); n != nil {
		if n.GetValue() == 0 {
			return he, configErrorf("happy_eyeballs_config.first_address_family_count", "must be at least 1")
		}
		he.count = int(min(n.GetValue(), 1<<16))
	}
	return he, nil
}

// order returns a host's addresses (address first, then additional, in
// the configured order of preference) in the order of the attempts, as
// Envoy sorts them (RFC 8305, section 4): count addresses of the first
// family, then one of the other, and so on; the rest of either family
// once the other has run out.
func (he happyEyeballs) order(address string, additional []string) []string {
	all := append([]string{address}, additional...)
	first := he.family
	if first == 0 {
		first = family(address)
	}
	var mine, other []string
	for _, a := range all {
		if family(a) == first {
			mine = append(mine, a)
		} else {
			other = append(other, a)
		}
	}
	out := make([]string, 0, len(all))
	for len(mine) > 0 && len(other) > 0 {
		n := min(he.count, len(mine))
		out = append(out, mine[:n]...)
		mine = mine[n:]
		out = append(out, other[0])
		other = other[1:]
	}
	out = append(out, mine...)
	return append(out, other...)
}

// family is 4 or 6 for an "ip:port" address (0 when it is not one).
func family(address string) int {
	ap, err := netip.ParseAddrPort(address)
	switch {
	case err != nil:
		return 0
	case ap.Addr().Unmap().Is4():
		return 4
	}
	return 6
}

// dialHost opens a TCP (or pipe) connection to h: to its address, or,
// for an endpoint with additional_addresses, to the first of its
// addresses that answers, trying them one after the other every
// happyEyeballsDelay, or at once after a failure (Envoy's
// HappyEyeballsConnectionImpl); the other attempts are abandoned.
func (c *Cluster) dialHost(ctx context.Context, h *upstream.Host) (net.Conn, error) {
	if len(h.AdditionalAddresses) == 0 {
		return c.dial(ctx, h.Address)
	}
	return raceDial(ctx, c.dial, c.settings.happyEyeballs.order(h.Address, h.AdditionalAddresses), happyEyeballsDelay)
}

// raceDial dials addrs (at least one) in turn, starting the next attempt
// after delay or when one fails, and returns the first connection made
// (the others, made later, are closed), or the first failure once every
// attempt failed.
func raceDial(ctx context.Context, dial DialFunc, addrs []string, delay time.Duration) (net.Conn, error) {
	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	type result struct {
		conn net.Conn
		err  error
	}
	results := make(chan result, len(addrs))
	next, running := 0, 0
	start := func() {
		addr := addrs[next]
		next++
		running++
		go func() {
			conn, err := dial(ctx, addr)
			results <- result{conn, err}
		}()
	}
	start()
	timer := time.NewTimer(delay)
	defer timer.Stop()
	var firstErr error
	for {
		select {
		case r := <-results:
			running--
			if r.err == nil {
				if running > 0 {
					// The attempts still running end with the cancel;
					// one that connected meanwhile is closed.
					go func(n int) {
						for range n {
							if late := <-results; late.err == nil {
								_ = late.conn.Close()
							}
						}
					}(running)
				}
				return r.conn, nil
			}
			if firstErr == nil {
				firstErr = r.err
			}
			if next < len(addrs) && ctx.Err() == nil {
				start()
				timer.Reset(delay)
			} else if running == 0 {
				return nil, firstErr
			}
		case <-timer.C:
			if next < len(addrs) {
				start()
				timer.Reset(delay)
			}
		}
	}
}

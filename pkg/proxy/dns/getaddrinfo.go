package dns

import (
	"context"
	"errors"
	"net"
	"net/netip"
	"time"
)

// getAddrInfoTTL is the TTL of every getaddrinfo answer, which carries
// none (Envoy's DEFAULT_TTL).
const getAddrInfoTTL = 60 * time.Second

// maxGetAddrInfoThreads caps num_resolver_threads, as Envoy does.
const maxGetAddrInfoThreads = 10

// GetAddrInfoOptions configure a GetAddrInfo resolver.
type GetAddrInfoOptions struct {
	// Threads is how many resolutions run at once (1 to 10).
	Threads int
	// Retries is how many times a temporary failure is retried; -1
	// retries until the resolution succeeds or the caller gives up.
	Retries int
}

// GetAddrInfo resolves names the way the system's getaddrinfo does (the
// hosts file, then the nameservers of resolv.conf with their options):
// Envoy's envoy.network.dns_resolver.getaddrinfo. It uses Go's own
// resolver, which reads the same files.
type GetAddrInfo struct {
	opts     GetAddrInfoOptions
	resolver *net.Resolver
	slots    chan struct{}
}

// NewGetAddrInfo builds a getaddrinfo resolver.
func NewGetAddrInfo(o GetAddrInfoOptions, _ Env) *GetAddrInfo {
	if o.Threads <= 0 {
		o.Threads = 1
	}
	return &GetAddrInfo{
		opts:     o,
		resolver: &net.Resolver{PreferGo: true},
		slots:    make(chan struct{}, o.Threads),
	}
}

// Resolve implements Resolver. As in Envoy, a name without addresses is a
// failure, and a temporary failure (the nameservers did not answer) is
// retried up to num_retries times.
func (g *GetAddrInfo) Resolve(ctx context.Context, name string, family Family) Result {
	select {
	case g.slots <- struct{}{}:
	case <-ctx.Done():
		return Result{Status: Failed, Details: "cancelled"}
	}
	defer func() { <-g.slots }()
	for retries := g.opts.Retries; ; retries-- {
		ips, err := g.resolver.LookupNetIP(ctx, "ip", name)
		if err == nil {
			return Result{Status: Completed, Addresses: pickFamily(ips, family)}
		}
		var de *net.DNSError
		temporary := errors.As(err, &de) && (de.IsTemporary || de.IsTimeout)
		if !temporary || retries == 0 || ctx.Err() != nil {
			return Result{Status: Failed, Details: err.Error()}
		}
	}
}

// pickFamily orders and filters getaddrinfo's answers by family, as
// Envoy's getaddrinfo resolver does.
func pickFamily(ips []netip.Addr, family Family) []Address {
	var v4, v6 []Address
	for _, ip := range ips {
		ip = ip.Unmap()
		a := Address{IP: ip, TTL: getAddrInfoTTL}
		if indexAddr(v4, ip) >= 0 || indexAddr(v6, ip) >= 0 {
			continue
		}
		if ip.Is4() {
			v4 = append(v4, a)
		} else {
			v6 = append(v6, a)
		}
	}
	switch family {
	case V4Only:
		return v4
	case V6Only:
		return v6
	case V4Preferred:
		if len(v4) > 0 {
			return v4
		}
		return v6
	case All:
		return append(v6, v4...)
	default:
		if len(v6) > 0 {
			return v6
		}
		return v4
	}
}

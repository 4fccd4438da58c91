// Package snidynamicforwardproxy is the SNI dynamic forward proxy network
// filter (envoy.filters.network.sni_dynamic_forward_proxy): for a
// connection with a server name (TLS SNI, found by the tls_inspector
// listener filter), it loads name:port_value into its DNS cache, which a
// dynamic_forward_proxy cluster shares, and holds the connection until
// the name is resolved; tcp_proxy then connects to the cluster's host of
// that name. The port goes to the connection's filter state
// (envoy.upstream.dynamic_port), where the cluster reads it. A full cache
// (max_hosts) or too many connections waiting for resolutions
// (dns_cache_circuit_breaker) closes the connection, as in Envoy; a name
// that does not resolve leaves the cluster without a host for it, and
// tcp_proxy closes the connection (no healthy upstream).
package snidynamicforwardproxy

import (
	"errors"
	"fmt"

	snidfpv3 "github.com/envoyproxy/go-control-plane/envoy/extensions/filters/network/sni_dynamic_forward_proxy/v3"
	"google.golang.org/protobuf/proto"

	"github.com/outrigger-dev/outrigger/pkg/proxy/accesslog"
	"github.com/outrigger-dev/outrigger/pkg/proxy/dnscache"
	"github.com/outrigger-dev/outrigger/pkg/proxy/fieldpath"
	"github.com/outrigger-dev/outrigger/pkg/proxy/filterstate"
	"github.com/outrigger-dev/outrigger/pkg/proxy/netfilter"
)

// Name is the filter's name in the proxy. spelling.
const Name = "proxy.filters.network.sni_dynamic_forward_proxy"

// Caches is what the filter needs of the server: the DNS caches it shares
// with the dynamic_forward_proxy clusters (the server's
// netfilter.Clusters implements it).
type Caches interface {
	DNSCaches() *dnscache.Manager
}

// Factory compiles FilterConfig configurations.
type Factory struct{}

var _ netfilter.Factory = Factory{}

// Compile implements netfilter.Factory. Errors name the field path below
// typed_config.
func (Factory) Compile(msg proto.Message, ctx netfilter.Context) (netfilter.Filter, error) {
	c, ok := msg.(*snidfpv3.FilterConfig)
	if !ok {
		return nil, fmt.Errorf("expected a %s, got %T", proto.MessageName(&snidfpv3.FilterConfig{}), msg)
	}
	var errs []error
	port := c.GetPortValue()
	if port == 0 || port > 65535 {
		errs = append(errs, errors.New("port_value: required, a port (1 to 65535)"))
	}
	if c.GetDnsCacheConfig() == nil {
		errs = append(errs, errors.New("dns_cache_config: required"))
	}
	if err := errors.Join(errs...); err != nil {
		return nil, err
	}
	caches, ok := ctx.Clusters.(Caches)
	if !ok || caches.DNSCaches() == nil {
		return nil, errors.New("dns_cache_config: the server has no DNS cache manager")
	}
	cache, err := caches.DNSCaches().ForConfig(c.GetDnsCacheConfig())
	if err != nil {
		return nil, fieldpath.Prefix("dns_cache_config.", err)
	}
	return &Filter{cache: cache, port: uint16(port), saveAddress: c.GetSaveUpstreamAddress()}, nil
}

// Filter is a compiled FilterConfig.
type Filter struct {
	cache *dnscache.Cache
	port  uint16
	// saveAddress is save_upstream_address: the resolved address goes to
	// the connection's filter state (netfilter.UpstreamAddressStateKey).
	saveAddress bool
}

var _ netfilter.ReadFilter = (*Filter)(nil)

// refused is how the filter stops a connection: Envoy closes it without a
// response flag or reason.
var refused = netfilter.Refusal{}

// OnNewConnection implements netfilter.ReadFilter, as Envoy's
// onNewConnection.
func (f *Filter) OnNewConnection(c netfilter.Conn) *netfilter.Refusal {
	// The filter state's envoy.upstream.dynamic_host comes before the
	// server name, as in Envoy (and as the cluster picks).
	host := accesslog.RequestedServerName(c)
	if v, ok := netfilter.FilterStateOf(c, netfilter.DynamicHostStateKey); ok {
		if h, ok := filterstate.StringAccessorOf(v); ok {
			host = h
		}
	}
	if host == "" {
		return nil
	}
	release, ok := f.cache.AcquirePending()
	if !ok {
		r := refused
		return &r
	}
	defer release()
	port := f.port
	if v, ok := netfilter.FilterStateOf(c, netfilter.DynamicPortStateKey); ok {
		if p, _ := v.(filterstate.UInt32); p > 0 && p <= 65535 {
			port = uint16(p)
		}
	} else if fs, ok := c.(netfilter.FilterStater); ok {
		fs.SetFilterState(netfilter.DynamicPortStateKey, filterstate.UInt32(port))
	}
	h, st := f.cache.Load(host, port)
	switch st {
	case dnscache.Overflow:
		r := refused
		return &r
	case dnscache.Loading:
		// The connection reads nothing on until the name is resolved;
		// its closing ends the wait.
		gone := make(chan struct{})
		c.OnClose(func() { close(gone) })
		select {
		case <-h.Done():
		case <-gone:
			return nil
		}
	}
	f.save(c, h)
	return nil
}

// save keeps the name's resolved address in the connection's filter
// state with save_upstream_address, as Envoy's addHostAddressToFilterState;
// a name that did not resolve leaves none.
func (f *Filter) save(c netfilter.Conn, h *dnscache.Host) {
	if !f.saveAddress {
		return
	}
	addr, ok := h.Address()
	if !ok {
		return
	}
	if fs, ok := c.(netfilter.FilterStater); ok {
		fs.SetFilterState(netfilter.UpstreamAddressStateKey, filterstate.Address(addr))
	}
}

package cluster

import (
	"fmt"
	"net/netip"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	clusterv3 "github.com/envoyproxy/go-control-plane/envoy/config/cluster/v3"

	"github.com/outrigger-dev/outrigger/pkg/proxy/filterstate"
	"github.com/outrigger-dev/outrigger/pkg/proxy/stats"
	"github.com/outrigger-dev/outrigger/pkg/proxy/upstream"
)

// Envoy's defaults for ORIGINAL_DST clusters.
const (
	// defaultCleanupInterval is cleanup_interval unset: how often hosts
	// unused since the last sweep are removed.
	defaultCleanupInterval = 5 * time.Second
	// defaultOriginalDstHeader is original_dst_lb_config.http_header_name
	// unset. It keeps Envoy's name: clients of an unchanged Envoy
	// configuration send this header.
	defaultOriginalDstHeader = "x-envoy-original-dst-host"
)

// origDstSettings are an ORIGINAL_DST cluster's: its hosts are the
// original destinations of its downstream connections, created as they
// are first picked and removed once unused.
type origDstSettings struct {
	cleanup time.Duration
	// header is the request header that names the host (use_http_header),
	// "" for none.
	header string
	// port replaces the destination's port (upstream_port_override), 0
	// for none.
	port uint16
	// metadata is metadata_key, nil for none.
	metadata *origDstMetadataKey
}

// buildOrigDst checks an ORIGINAL_DST cluster's own settings, with
// Envoy's rules: CLUSTER_PROVIDED balancing, no load assignment, and a
// header name only with use_http_header. Errors are relative to the
// cluster.
func buildOrigDst(c *clusterv3.Cluster) (*origDstSettings, []error) {
	var errs []error
	o := &origDstSettings{cleanup: defaultCleanupInterval}
	if p := c.GetLbPolicy(); p != clusterv3.Cluster_CLUSTER_PROVIDED {
		errs = append(errs, configErrorf("lb_policy", "LB policy %s is not valid for Cluster type ORIGINAL_DST. Only 'CLUSTER_PROVIDED' is allowed with cluster type 'ORIGINAL_DST'", p))
	}
	if otherPolicyOnProvider(c) {
		errs = append(errs, configErrorf("load_balancing_policy", "an ORIGINAL_DST cluster balances by its own rules: only envoy.load_balancing_policies.cluster_provided is allowed"))
	}
	if c.GetLoadAssignment() != nil {
		errs = append(errs, configErrorf("load_assignment", "ORIGINAL_DST clusters must have no load assignment configured"))
	}
	if d := c.GetCleanupInterval(); d != nil {
		if err := d.CheckValid(); err != nil || d.AsDuration() <= 0 {
			errs = append(errs, configErrorf("cleanup_interval", "must be a positive duration"))
		} else {
			o.cleanup = d.AsDuration()
		}
	}
	lc := c.GetOriginalDstLbConfig()
	switch {
	case lc.GetUseHttpHeader() && lc.GetHttpHeaderName() == "":
		o.header = defaultOriginalDstHeader
	case lc.GetUseHttpHeader():
		o.header = strings.ToLower(lc.GetHttpHeaderName())
	case lc.GetHttpHeaderName() != "":
		errs = append(errs, configErrorf("original_dst_lb_config.http_header_name", "ORIGINAL_DST cluster: invalid config http_header_name=%s and use_http_header is false. Set use_http_header to true if http_header_name is desired.", lc.GetHttpHeaderName()))
	}
	if mk, err := buildOrigDstMetadataKey(lc.GetMetadataKey()); err != nil {
		errs = append(errs, prefixed("original_dst_lb_config", err))
	} else {
		o.metadata = mk
	}
	if v := lc.GetUpstreamPortOverride(); v != nil {
		if v.GetValue() == 0 || v.GetValue() > 65535 {
			errs = append(errs, configErrorf("original_dst_lb_config.upstream_port_override.value", "%d is not a port (1 to 65535)", v.GetValue()))
		} else {
			o.port = uint16(v.GetValue())
		}
	}
	return o, errs
}

// origDstHosts are the hosts an ORIGINAL_DST cluster created, by address.
type origDstHosts struct {
	mu sync.Mutex
	// byAddr are the current hosts; a host's used flag is set each time
	// it is picked and cleared by each sweep.
	byAddr map[string]*origDstHost
	// invalid counts header values that are not an address
	// (original_dst_host_invalid).
	invalid *stats.Counter
	stop    chan struct{}
	once    sync.Once
}

type origDstHost struct {
	host *upstream.Host
	used atomic.Bool
}

func newOrigDstHosts(scope stats.Scope) *origDstHosts {
	return &origDstHosts{
		byAddr:  map[string]*origDstHost{},
		invalid: scope.Counter("original_dst_host_invalid"),
		stop:    make(chan struct{}),
	}
}

// origDstTarget is where a pick goes, in Envoy's order: the address the
// filter state holds (set_filter_state's original_dst_address), then the one the request's dynamic metadata holds at metadata_key, when set and valid,
// then the request header when use_http_header is set and the request
// has a valid one,
// else the connection's restored original destination; then the port
// override. False when there is neither.
func (c *Cluster) origDstTarget(pc *upstream.PickContext) (netip.AddrPort, bool) {
	if pc == nil {
		return netip.AddrPort{}, false
	}
	o := c.settings.origDst
	// The filter state's address comes before everything, as in Envoy.
	var dst netip.AddrPort
	if pc.FilterState != nil {
		if v, ok := pc.FilterState.FilterState(filterstate.OriginalDstAddressKey); ok {
			if a, ok := v.(filterstate.Address); ok {
				dst = netip.AddrPort(a)
			}
		}
	}
	if !dst.IsValid() && o.metadata != nil && pc.DynamicMetadata != nil {
		// Before the header, as in Envoy.
		if ap, found, valid := o.metadata.target(pc.DynamicMetadata); valid {
			dst = ap
		} else if found {
			c.origDst.invalid.Inc()
		}
	}
	if !dst.IsValid() && o.header != "" && pc.Headers != nil {
		if v, ok := pc.Headers.Get(o.header); ok {
			// The header is untrusted: only its first value counts.
			first, _, _ := strings.Cut(v, ",")
			ap, err := netip.ParseAddrPort(strings.TrimSpace(first))
			if err == nil {
				dst = ap
			} else {
				c.origDst.invalid.Inc()
			}
		}
	}
	if !dst.IsValid() {
		dst = pc.OriginalDst
	}
	if !dst.IsValid() {
		return netip.AddrPort{}, false
	}
	dst = netip.AddrPortFrom(dst.Addr().Unmap(), dst.Port())
	if o.port != 0 {
		dst = netip.AddrPortFrom(dst.Addr(), o.port)
	}
	return dst, true
}

// pickOrigDst returns the host of dst, creating it (and adding it to the
// cluster's hosts, where /clusters lists it) the first time.
func (c *Cluster) pickOrigDst(dst netip.AddrPort) *upstream.Host {
	od := c.origDst
	addr := dst.String()
	od.mu.Lock()
	defer od.mu.Unlock()
	if e := od.byAddr[addr]; e != nil {
		e.used.Store(true)
		return e.host
	}
	// Envoy names the host after its cluster and address.
	h := &upstream.Host{Address: addr, Hostname: c.settings.name + addr, Cluster: c.settings.name, Weight: MinWeight}
	e := &origDstHost{host: h}
	e.used.Store(true)
	od.byAddr[addr] = e
	c.install([][]*upstream.Host{c.origDstList()}, true)
	return h
}

// origDstList is the created hosts in address order. od.mu is held.
func (c *Cluster) origDstList() []*upstream.Host {
	od := c.origDst
	hosts := make([]*upstream.Host, 0, len(od.byAddr))
	for _, addr := range sortedKeys(od.byAddr) {
		hosts = append(hosts, od.byAddr[addr].host)
	}
	return hosts
}

// sweepOrigDst removes the hosts neither picked since the last sweep nor
// holding connections, as Envoy's cleanup does every cleanup_interval.
func (c *Cluster) sweepOrigDst() {
	od := c.origDst
	od.mu.Lock()
	defer od.mu.Unlock()
	removed := false
	for addr, e := range od.byAddr {
		if e.used.Swap(false) || e.host.Stats.CxActive.Load() > 0 {
			continue
		}
		delete(od.byAddr, addr)
		removed = true
	}
	if removed {
		c.install([][]*upstream.Host{c.origDstList()}, true)
	}
}

// startOrigDstCleanup sweeps the hosts every cleanup_interval until the
// cluster closes.
func (c *Cluster) startOrigDstCleanup() {
	od := c.origDst
	go func() {
		t := time.NewTicker(c.settings.origDst.cleanup)
		defer t.Stop()
		for {
			select {
			case <-t.C:
				c.sweepOrigDst()
			case <-od.stop:
				return
			}
		}
	}()
}

// stopOrigDstCleanup ends the sweeps.
func (od *origDstHosts) stopCleanup() {
	od.once.Do(func() { close(od.stop) })
}

// ignoredOrigDstFields lists the ORIGINAL_DST settings of a cluster of
// another type: Envoy accepts and ignores them, and so does Outrigger,
// with a warning each.
func ignoredOrigDstFields(c *clusterv3.Cluster) []string {
	var notes []string
	if c.GetCleanupInterval() != nil {
		notes = append(notes, fmt.Sprintf("cleanup_interval has no effect on a %s cluster (Envoy ignores it too)", c.GetType()))
	}
	if c.GetOriginalDstLbConfig() != nil {
		notes = append(notes, fmt.Sprintf("original_dst_lb_config has no effect on a %s cluster (Envoy ignores it too)", c.GetType()))
	}
	return notes
}

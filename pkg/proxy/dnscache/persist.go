package dnscache

import (
	"fmt"
	"net/netip"
	"slices"
	"strconv"
	"strings"
	"time"

	"golang.org/x/sys/unix"

	"github.com/outrigger-dev/outrigger/pkg/proxy/dns"
	"github.com/outrigger-dev/outrigger/pkg/proxy/extension"
	"github.com/outrigger-dev/outrigger/pkg/proxy/fieldpath"
	"github.com/outrigger-dev/outrigger/pkg/proxy/keyvalue/filebased"

	commonkvv3 "github.com/envoyproxy/go-control-plane/envoy/config/common/key_value/v3"
)

// compileKeyValue checks key_value_config: its store is an extension of
// envoy.common.key_value (the file-based store is Outrigger's only one).
func compileKeyValue(c *commonkvv3.KeyValueStoreConfig, reg *extension.Registry) (*filebased.Config, error) {
	tec := c.GetConfig()
	if tec == nil {
		return nil, fieldpath.Errorf("key_value_config.config", "required")
	}
	_, msg, err := reg.Resolve(extension.Ref{Kind: "key value store", Category: filebased.Category, Name: tec.GetName(), Config: tec.GetTypedConfig()}, true)
	if err != nil {
		return nil, fieldpath.Under("key_value_config.config", err)
	}
	cfg, err := filebased.Factory{}.Compile(msg)
	if err != nil {
		return nil, fieldpath.Under("key_value_config.config.typed_config", err)
	}
	return cfg, nil
}

// monotonicSeconds is the clock Envoy stamps its stored resolutions with
// (its monotonic time, seconds since boot), so that a file either writes
// reads the same.
func monotonicSeconds() int64 {
	var ts unix.Timespec
	if err := unix.ClockGettime(unix.CLOCK_MONOTONIC, &ts); err != nil {
		return 0
	}
	return ts.Sec
}

// storedValue is a resolution as the key-value store keeps it, Envoy's
// format: one line per address, "address:port|ttl seconds|resolved at".
func storedValue(addrs []dns.Address, port uint16) string {
	now := monotonicSeconds()
	var b strings.Builder
	for i, a := range addrs {
		if i > 0 {
			b.WriteByte('\n')
		}
		fmt.Fprintf(&b, "%s|%d|%d", netip.AddrPortFrom(a.IP.Unmap(), port), int64(a.TTL/time.Second), now)
	}
	return b.String()
}

// parseStored reads a stored resolution; false when a line does not parse
// (an address, a TTL above zero and a time), as Envoy's parseValue.
func parseStored(value string) ([]netip.AddrPort, time.Duration, bool) {
	var (
		out []netip.AddrPort
		ttl time.Duration
	)
	for line := range strings.SplitSeq(value, "\n") {
		if line == "" {
			continue
		}
		parts := strings.Split(line, "|")
		if len(parts) != 3 {
			return nil, 0, false
		}
		ap, err := netip.ParseAddrPort(parts[0])
		if err != nil {
			return nil, 0, false
		}
		secs, err := strconv.ParseUint(parts[1], 10, 32)
		if err != nil || secs == 0 {
			return nil, 0, false
		}
		if _, err := strconv.ParseUint(parts[2], 10, 64); err != nil {
			return nil, 0, false
		}
		if len(out) == 0 {
			ttl = time.Duration(secs) * time.Second
		}
		out = append(out, netip.AddrPortFrom(ap.Addr().Unmap(), ap.Port()))
	}
	return out, ttl, len(out) > 0
}

// loadStored makes the hosts the key-value store kept, as resolved, in the
// store's order, until an entry does not parse (Envoy stops there too);
// each is resolved again once its TTL (at least dns_min_refresh_rate) has
// passed after the cache starts. cache_load counts them.
func (c *Cache) loadStored() {
	c.kv.Iterate(func(key, value string) bool {
		addrs, ttl, ok := parseStored(value)
		if !ok {
			c.log.Info("dns cache: unable to parse the stored resolution", "cache", c.cfg.Name, "host", key, "value", value)
			return false
		}
		// A stored address the filter denies is dropped as a resolved one
		// is; an entry left without one is not loaded.
		addrs = slices.DeleteFunc(addrs, func(a netip.AddrPort) bool {
			if c.cfg.filter != nil && c.cfg.filter.denies(a.Addr()) {
				c.st.addressFilterOut.Inc()
				return true
			}
			return false
		})
		if len(addrs) == 0 {
			return true
		}
		c.mu.Lock()
		defer c.mu.Unlock()
		if c.hosts[key] != nil || len(c.hosts) >= c.cfg.MaxHosts {
			return true
		}
		h := c.addLocked(key, addrs[0].Port())
		h.state.Store(&hostState{addr: addrs[0]})
		h.storedRefresh = max(c.cfg.MinRefreshRate, ttl)
		close(h.done)
		c.st.hostAddressChanged.Inc()
		c.st.cacheLoad.Inc()
		return true
	})
}

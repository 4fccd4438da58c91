package httpconn

import (
	"fmt"
	"net/netip"
	"strings"

	hcmv3 "github.com/envoyproxy/go-control-plane/envoy/extensions/filters/network/http_connection_manager/v3"

	"github.com/outrigger-dev/outrigger/pkg/proxy/cidr"
)

// internalAddresses is internal_address_config: the client addresses whose
// requests are internal. As in Envoy since the RFC 1918 default was
// removed, none is internal unless configured.
type internalAddresses struct {
	prefixes cidr.Set
}

// readInternalAddresses compiles internal_address_config. Errors name the
// field below it. unix_sockets is accepted as Envoy does: Outrigger has no
// Unix socket listeners, so it never applies.
func readInternalAddresses(cfg *hcmv3.HttpConnectionManager_InternalAddressConfig) (internalAddresses, error) {
	var ia internalAddresses
	for i, r := range cfg.GetCidrRanges() {
		addr, err := netip.ParseAddr(r.GetAddressPrefix())
		if err != nil {
			return ia, fmt.Errorf("cidr_ranges[%d].address_prefix: %q is not an IP address", i, r.GetAddressPrefix())
		}
		bits := int(r.GetPrefixLen().GetValue())
		if bits > addr.BitLen() {
			return ia, fmt.Errorf("cidr_ranges[%d].prefix_len: %d is longer than the address (%d bits)", i, bits, addr.BitLen())
		}
		p, err := addr.Prefix(bits)
		if err != nil {
			return ia, fmt.Errorf("cidr_ranges[%d]: %w", i, err)
		}
		ia.prefixes = append(ia.prefixes, p)
	}
	return ia, nil
}

// contains reports whether ip is internal.
func (ia *internalAddresses) contains(ip netip.Addr) bool {
	return ia.prefixes.Contains(ip)
}

// internalHeader reports whether a request header is one only a trusted
// hop may set: Envoy removes them from every request that is not internal,
// and, from edge requests (use_remote_address, not internal), also the
// ones that name the calling service, which an outside client must not
// claim to be.
func internalHeader(name string, edge bool) bool {
	if !strings.HasPrefix(name, "x-envoy-") {
		return false
	}
	switch name {
	case "x-envoy-retriable-status-codes", "x-envoy-retriable-header-names", "x-envoy-retry-on",
		"x-envoy-retry-grpc-on", "x-envoy-max-retries", "x-envoy-upstream-alt-stat-name",
		"x-envoy-upstream-rq-timeout-ms", "x-envoy-upstream-rq-per-try-timeout-ms",
		"x-envoy-upstream-rq-timeout-alt-response", "x-envoy-expected-rq-timeout-ms",
		"x-envoy-force-trace", "x-envoy-ip-tags", "x-envoy-original-url", "x-envoy-hedge-on-per-try-timeout":
		return true
	case "x-envoy-decorator-operation", "x-envoy-downstream-service-cluster", "x-envoy-downstream-service-node":
		return edge
	}
	return false
}

// dropInternal removes the internal headers of a request that is not
// internal, in one pass, keeping the others in order.
func (h *headerList) dropInternal(edge bool) {
	out := 0
	for i := range h.fields {
		if !internalHeader(h.fields[i].name, edge) {
			h.fields[out] = h.fields[i]
			out++
		}
	}
	h.truncate(out)
}

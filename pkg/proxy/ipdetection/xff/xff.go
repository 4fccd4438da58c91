// Package xff is the original IP detection extension
// envoy.http.original_ip_detection.xff: the client's address read from
// x-forwarded-for, either a number of trusted hops from its right (the
// connection manager's own default, with its xff_num_trusted_hops) or
// past the addresses of trusted proxies' CIDR ranges.
package xff

import (
	"errors"
	"fmt"
	"net/netip"
	"strings"

	xffv3 "github.com/envoyproxy/go-control-plane/envoy/extensions/http/original_ip_detection/xff/v3"
	"google.golang.org/protobuf/proto"

	"github.com/outrigger-dev/outrigger/pkg/proxy/cidr"
	"github.com/outrigger-dev/outrigger/pkg/proxy/ipdetection"
)

// Name is the extension's name in Outrigger's spelling.
const Name = "proxy.http.original_ip_detection.xff"

// Factory compiles XffConfig.
type Factory struct{}

// Compile implements ipdetection.Factory. Errors name the field below the
// typed_config.
func (Factory) Compile(config proto.Message) (ipdetection.Detector, error) {
	c, ok := config.(*xffv3.XffConfig)
	if !ok {
		return nil, fmt.Errorf("expected %s, got %T", Name, config)
	}
	if v := c.GetSkipXffAppend(); v != nil && !v.GetValue() {
		// Appending to x-forwarded-for without use_remote_address is
		// not implemented; true is what happens when it is unset.
		return nil, errors.New("skip_xff_append: false is not supported by Outrigger (the extension never appends to x-forwarded-for)")
	}
	if tc := c.GetXffTrustedCidrs(); tc != nil {
		if c.GetXffNumTrustedHops() > 0 {
			return nil, errors.New("xff_num_trusted_hops: only one of xff_num_trusted_hops and xff_trusted_cidrs may be set")
		}
		d := &trustedCIDRs{}
		for i, r := range tc.GetCidrs() {
			p, err := cidr.Parse(r)
			if err != nil {
				return nil, fmt.Errorf("xff_trusted_cidrs.cidrs[%d].%w", i, err)
			}
			d.prefixes = append(d.prefixes, p)
		}
		return d, nil
	}
	return trustedHops(c.GetXffNumTrustedHops()), nil
}

// trustedHops takes the address that many entries from the right of
// x-forwarded-for, as Envoy's getLastAddressFromXFF.
type trustedHops uint32

// Detect implements ipdetection.Detector.
func (h trustedHops) Detect(in ipdetection.Input) ipdetection.Result {
	v, ok := in.Header("x-forwarded-for")
	if !ok {
		return ipdetection.Result{}
	}
	ip, single, err := ipdetection.LastXFF(v, uint32(h))
	if err != nil {
		return ipdetection.Result{}
	}
	return ipdetection.Result{Addr: ip, Trusted: single}
}

// trustedCIDRs reads x-forwarded-for only when the peer is a trusted
// proxy, and takes its rightmost address that is not one, or its leftmost
// when all are.
type trustedCIDRs struct {
	prefixes cidr.Set
}

// Detect implements ipdetection.Detector.
func (t *trustedCIDRs) Detect(in ipdetection.Input) ipdetection.Result {
	if !t.trusted(in.Remote) {
		return ipdetection.Result{}
	}
	v, ok := in.Header("x-forwarded-for")
	if !ok {
		return ipdetection.Result{}
	}
	single := !strings.Contains(v, ",")
	var last netip.Addr
	for rest := v; ; {
		entry := rest
		j := strings.LastIndexByte(rest, ',')
		if j >= 0 {
			entry, rest = rest[j+1:], rest[:j]
		}
		ip, err := netip.ParseAddr(strings.TrimSpace(entry))
		if err != nil {
			// An entry that is not an address ends the search
			// without a result, as in Envoy.
			return ipdetection.Result{}
		}
		last = ip
		if !t.trusted(ip) {
			return ipdetection.Result{Addr: ip, Trusted: single}
		}
		if j < 0 {
			return ipdetection.Result{Addr: last, Trusted: single}
		}
	}
}

// trusted reports whether ip is in one of the trusted ranges.
func (t *trustedCIDRs) trusted(ip netip.Addr) bool {
	return t.prefixes.Contains(ip)
}

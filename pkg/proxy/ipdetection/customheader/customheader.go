// Package customheader is the original IP detection extension
// envoy.http.original_ip_detection.custom_header: the client's address is
// the value of a request header the operator names (one a CDN or a load
// balancer in front sets), optionally refusing requests without a valid
// one.
package customheader

import (
	"errors"
	"fmt"
	"net/netip"
	"strings"

	customheaderv3 "github.com/envoyproxy/go-control-plane/envoy/extensions/http/original_ip_detection/custom_header/v3"
	"google.golang.org/protobuf/proto"

	"github.com/outrigger-dev/outrigger/pkg/proxy/ipdetection"
)

// Name is the extension's name in Outrigger's spelling.
const Name = "proxy.http.original_ip_detection.custom_header"

// Factory compiles CustomHeaderConfig.
type Factory struct{}

// Compile implements ipdetection.Factory.
func (Factory) Compile(config proto.Message) (ipdetection.Detector, error) {
	c, ok := config.(*customheaderv3.CustomHeaderConfig)
	if !ok {
		return nil, fmt.Errorf("expected %s, got %T", Name, config)
	}
	name := strings.ToLower(c.GetHeaderName())
	if name == "" || strings.HasPrefix(name, ":") {
		return nil, errors.New("header_name: a request header name is required")
	}
	d := &detector{name: name, trusted: c.GetAllowExtensionToSetAddressAsTrusted()}
	if s := c.GetRejectWithStatus(); s != nil {
		// As in Envoy, a status outside 400-511 refuses with 403.
		d.reject = int(s.GetCode())
		if d.reject < 400 || d.reject > 511 {
			d.reject = 403
		}
	}
	return d, nil
}

// detector is a compiled CustomHeaderConfig.
type detector struct {
	name    string
	trusted bool
	reject  int // 0: a request without a valid address goes on
}

// Detect implements ipdetection.Detector: the header's first value, an
// IP address without a port.
func (d *detector) Detect(in ipdetection.Input) ipdetection.Result {
	if v, ok := in.Header(d.name); ok {
		if ip, err := netip.ParseAddr(v); err == nil && ip.Zone() == "" {
			return ipdetection.Result{Addr: ip, Trusted: d.trusted}
		}
	}
	return ipdetection.Result{RejectStatus: d.reject}
}

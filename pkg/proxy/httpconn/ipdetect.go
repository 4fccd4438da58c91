package httpconn

import (
	"errors"
	"net/netip"

	hcmv3 "github.com/envoyproxy/go-control-plane/envoy/extensions/filters/network/http_connection_manager/v3"
	"google.golang.org/protobuf/proto"

	"github.com/outrigger-dev/outrigger/pkg/proxy/ipdetection"
)

// readIPDetection compiles original_ip_detection_extensions. As Envoy, it
// refuses them beside use_remote_address or xff_num_trusted_hops, which
// decide the client's address their own way.
func readIPDetection(cfg *hcmv3.HttpConnectionManager, deps Deps) ([]ipdetection.Detector, error) {
	exts := cfg.GetOriginalIpDetectionExtensions()
	if len(exts) == 0 {
		return nil, nil
	}
	switch {
	case cfg.GetUseRemoteAddress().GetValue():
		return nil, errors.New("original_ip_detection_extensions: Original IP detection extensions and use_remote_address may not be mixed")
	case cfg.GetXffNumTrustedHops() > 0:
		return nil, errors.New("original_ip_detection_extensions: Original IP detection extensions and xff_num_trusted_hops may not be mixed")
	}
	return compileTypedExtensions("original_ip_detection_extensions", "original IP detection extension", ipdetection.Category, exts, deps,
		func(f ipdetection.Factory, msg proto.Message) (ipdetection.Detector, error) { return f.Compile(msg) })
}

// detectClient asks the original IP detection extensions, in order, for
// the client's address, as Envoy's mutateRequestHeaders does without
// use_remote_address: the first that finds one, or refuses the request,
// decides. reject is the status of a refusal, else 0.
func (s *stream) detectClient() (final netip.Addr, trusted bool, reject int) {
	h := &s.reqHeaders
	remote, _ := netip.ParseAddr(s.remoteIP)
	in := ipdetection.Input{Header: h.Get, Remote: remote}
	for _, d := range s.m.cfg.ipDetection {
		r := d.Detect(in)
		if r.RejectStatus != 0 {
			return netip.Addr{}, false, r.RejectStatus
		}
		if r.Addr.IsValid() {
			return r.Addr, r.Trusted, 0
		}
	}
	return netip.Addr{}, false, 0
}

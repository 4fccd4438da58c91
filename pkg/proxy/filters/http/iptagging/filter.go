package iptagging

import (
	"math/rand/v2"
	"net/netip"
	"strings"

	iptv3 "github.com/envoyproxy/go-control-plane/envoy/extensions/filters/http/ip_tagging/v3"

	"github.com/outrigger-dev/outrigger/pkg/proxy/httpfilter"
)

// filter is the compiled filter as each request sees it.
type filter filterConfig

var _ httpfilter.Decoder = (*filter)(nil)

// DecodeHeaders implements httpfilter.Decoder.
func (f *filter) DecodeHeaders(s httpfilter.Stream) httpfilter.Status {
	h := s.RequestHeaders()
	internal, _ := h.Get("x-envoy-internal")
	isInternal := internal == "true"
	if (isInternal && f.requestType == iptv3.IPTagging_EXTERNAL) ||
		(!isInternal && f.requestType == iptv3.IPTagging_INTERNAL) ||
		!f.enabled.Enabled(f.runtime, rand.Uint64()) {
		return httpfilter.Continue
	}
	var found []string
	if ip, err := netip.ParseAddr(s.RemoteIP()); err == nil {
		ip = ip.Unmap()
		for i := range f.tags {
			t := &f.tags[i]
			for _, p := range t.ranges {
				if p.Contains(ip) {
					found = append(found, t.name)
					t.hit.Inc()
					break
				}
			}
		}
	}
	f.apply(s, found)
	if len(found) == 0 {
		f.noHit.Inc()
	}
	f.total.Inc()
	return httpfilter.Continue
}

// apply writes the tags found into the header, as Envoy's filter does:
// x-envoy-ip-tags gets them appended (the connection manager has removed
// a client's own); ip_tag_header's header is replaced (SANITIZE, which
// also removes it from an untagged request) or appended to. Routing sees
// the new header.
func (f *filter) apply(s httpfilter.Stream, found []string) {
	h := s.RequestHeaders()
	if len(found) == 0 {
		if f.custom && !f.appendHeader {
			if _, ok := h.Get(f.header); ok {
				h.Del(f.header)
				s.ClearRouteCache()
			}
		}
		return
	}
	joined := strings.Join(found, ",")
	if f.custom && !f.appendHeader {
		h.Set(f.header, joined)
	} else if old, ok := h.Get(f.header); ok && old != "" {
		h.Set(f.header, old+","+joined)
	} else {
		h.Set(f.header, joined)
	}
	s.ClearRouteCache()
}

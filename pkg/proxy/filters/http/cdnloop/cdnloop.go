// Package cdnloop is the CDN-Loop HTTP filter (envoy.filters.http.cdn_loop,
// RFC 8586): it counts how often the proxy's own cdn_id already appears in
// a request's CDN-Loop header, answers 502 when that is more than
// max_allowed_occurrences (a loop between CDNs) and 400 when the header
// does not parse, and otherwise appends its cdn_id before the request goes
// on, as Envoy's filter does. It has no stats.
package cdnloop

import (
	"errors"
	"fmt"

	cdnloopv3 "github.com/envoyproxy/go-control-plane/envoy/extensions/filters/http/cdn_loop/v3"
	"google.golang.org/protobuf/proto"

	"github.com/outrigger-dev/outrigger/pkg/proxy/httpfilter"
)

// Name is the filter's name in the proxy. spelling.
const Name = "proxy.filters.http.cdn_loop"

// header is the header the filter reads and extends.
const header = "cdn-loop"

// Factory builds the filter.
type Factory struct{}

var _ httpfilter.Factory = Factory{}

// Compile implements httpfilter.Factory: cdn_id must start with a cdn-id
// of RFC 8586 (a token or a bracketed IPv6 literal, with an optional
// port), which is all Envoy checks.
func (Factory) Compile(config proto.Message, _ httpfilter.Context) (httpfilter.Config, error) {
	c, ok := config.(*cdnloopv3.CdnLoopConfig)
	if !ok {
		return nil, errors.New("not a CdnLoopConfig configuration")
	}
	if _, _, err := parseCdnID(c.GetCdnId(), 0); err != nil {
		return nil, fmt.Errorf("cdn_id: %q is not a valid CDN identifier: %w", c.GetCdnId(), err)
	}
	return &filter{id: c.GetCdnId(), max: int(c.GetMaxAllowedOccurrences())}, nil
}

// filter is the compiled filter; it keeps no state per request, so it is
// its own filter.
type filter struct {
	id  string
	max int
}

var _ httpfilter.Decoder = (*filter)(nil)

// NewFilter implements httpfilter.Config.
func (f *filter) NewFilter() httpfilter.Filter { return f }

// DecodeHeaders implements httpfilter.Decoder: Envoy's decodeHeaders.
func (f *filter) DecodeHeaders(s httpfilter.Stream) httpfilter.Status {
	h := s.RequestHeaders()
	v, found := h.Get(header)
	if found {
		n, err := countOccurrences(v, f.id)
		switch {
		case err != nil:
			s.SendLocalReply(400, "Invalid CDN-Loop header in request.", 0, "invalid_cdn_loop_header")
			return httpfilter.Stop
		case n > f.max:
			s.SendLocalReply(502, "The server has detected a loop between CDNs.", 0, "cdn_loop_detected")
			return httpfilter.Stop
		}
		// Envoy appends to the one header, comma-separated.
		h.Set(header, v+","+f.id)
		return httpfilter.Continue
	}
	h.Add(header, f.id)
	return httpfilter.Continue
}

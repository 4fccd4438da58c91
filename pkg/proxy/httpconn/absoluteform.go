package httpconn

import (
	"strings"

	"github.com/outrigger-dev/outrigger/pkg/proxy/upstream"
)

// upstreamScheme is the request's scheme as it goes to a cluster written
// in format f, Envoy's upstream :scheme: the cluster transport's with
// scheme_header_transformation match_upstream, else the downstream's
// (after scheme_to_overwrite).
func (s *stream) upstreamScheme(f *upstream.HTTP1Format) string {
	if s.m.cfg.schemeMatchUpstream {
		if f.Secure {
			return "https"
		}
		return "http"
	}
	return s.scheme
}

// appendAbsoluteTarget appends the request target in absolute form, what
// send_fully_qualified_url writes in place of the path.
func (s *stream) appendAbsoluteTarget(b []byte, f *upstream.HTTP1Format) []byte {
	return appendAbsoluteTarget(b, s.upstreamScheme(f), s.upAuthority, s.upPath)
}

// appendAbsoluteTarget appends scheme://authority/path (RFC 9112 §3.2.2).
func appendAbsoluteTarget(b []byte, scheme, authority, path string) []byte {
	b = append(b, scheme...)
	b = append(b, "://"...)
	b = append(b, authority...)
	return append(b, path...)
}

// shadowScheme is the scheme a mirrored copy's absolute-form target
// carries, kept beyond the request's life; empty when the cluster's
// requests use the origin form.
func (s *stream) shadowScheme(f *upstream.HTTP1Format) string {
	if !f.FullyQualifiedURL {
		return ""
	}
	return strings.Clone(s.upstreamScheme(f))
}

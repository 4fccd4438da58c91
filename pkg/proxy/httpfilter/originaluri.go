package httpfilter

// maxOriginalURIPath bounds the path in OriginalURI, as Envoy's callers of
// buildOriginalUri bound it.
const maxOriginalURIPath = 256

// OriginalURI is Envoy's Http::Utility::buildOriginalUri as the
// authentication filters call it for a WWW-Authenticate realm:
// x-forwarded-proto, "://", the host and the request's original path (its
// x-envoy-original-path when a route rewrote it) cut to 256 bytes.
func OriginalURI(s Stream) string {
	req := s.Request()
	h := s.RequestHeaders()
	path := req.Path
	if p, ok := h.Get("x-envoy-original-path"); ok {
		path = p
	}
	if len(path) > maxOriginalURIPath {
		path = path[:maxOriginalURIPath]
	}
	proto, _ := h.Get("x-forwarded-proto")
	return proto + "://" + req.Host + path
}

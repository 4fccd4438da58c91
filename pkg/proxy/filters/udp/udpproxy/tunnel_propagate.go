package udpproxy

import (
	"github.com/outrigger-dev/outrigger/pkg/proxy/accesslog"
	"github.com/outrigger-dev/outrigger/pkg/proxy/tunnelhttp"
)

// filterState is the session's filter state for its access log entries:
// the tunnel response's headers and trailers, when kept; nil for none.
func (t *tunnel) filterState() map[string]accesslog.FilterStateObject {
	t.mu.Lock()
	hs := t.respHeaders
	t.mu.Unlock()
	tr := t.respTrailers.Load()
	if hs == nil && tr == nil {
		return nil
	}
	fs := map[string]accesslog.FilterStateObject{}
	if hs != nil {
		fs[responseHeadersKey] = tunnelhttp.HeaderMap{M: hs}
	}
	if tr != nil {
		fs[responseTrailersKey] = tunnelhttp.HeaderMap{M: tr}
	}
	return fs
}

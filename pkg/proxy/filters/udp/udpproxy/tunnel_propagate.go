package udpproxy

import (
	"maps"
	"net/http"
	"slices"
	"strconv"
	"strings"

	corev3 "github.com/envoyproxy/go-control-plane/envoy/config/core/v3"
	"google.golang.org/protobuf/proto"

	"github.com/outrigger-dev/outrigger/pkg/proxy/accesslog"
)

// headerMapObject is the tunnel response's headers or trailers as a
// filter state object: %FILTER_STATE(KEY:TYPED)% shows it as Envoy's
// HeaderMap; it has no plain form, as in Envoy.
type headerMapObject struct{ m *corev3.HeaderMap }

var _ accesslog.FilterStateObject = headerMapObject{}

// FilterStateString implements accesslog.FilterStateObject.
func (headerMapObject) FilterStateString() (string, bool) { return "", false }

// FilterStateProto implements accesslog.FilterStateObject.
func (h headerMapObject) FilterStateProto() proto.Message { return h.m }

// headerMapOf converts response header fields to a HeaderMap, names in
// lower case, one entry per value, :status first when status is not 0.
// Go's header maps lose the order of arrival: names are sorted.
func headerMapOf(status int, h http.Header) *corev3.HeaderMap {
	m := &corev3.HeaderMap{}
	if status != 0 {
		m.Headers = append(m.Headers, &corev3.HeaderValue{Key: ":status", Value: strconv.Itoa(status)})
	}
	for _, k := range slices.Sorted(maps.Keys(h)) {
		for _, v := range h[k] {
			m.Headers = append(m.Headers, &corev3.HeaderValue{Key: strings.ToLower(k), Value: v})
		}
	}
	return m
}

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
		fs[responseHeadersKey] = headerMapObject{hs}
	}
	if tr != nil {
		fs[responseTrailersKey] = headerMapObject{tr}
	}
	return fs
}

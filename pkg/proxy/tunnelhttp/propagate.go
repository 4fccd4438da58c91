package tunnelhttp

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

// HeaderMap is a tunnel response's headers or trailers as filter state:
// like Envoy's TunnelResponseHeadersOrTrailers, it serializes as a
// HeaderMap (%FILTER_STATE(KEY:TYPED)%) and has no plain form.
type HeaderMap struct{ M *corev3.HeaderMap }

var _ accesslog.FilterStateObject = HeaderMap{}

// FilterStateString implements accesslog.FilterStateObject: there is no
// plain form, as in Envoy.
func (HeaderMap) FilterStateString() (string, bool) { return "", false }

// FilterStateProto implements accesslog.FilterStateObject.
func (h HeaderMap) FilterStateProto() proto.Message { return h.M }

// HeaderMapOf converts a response's header fields to a HeaderMap with
// lower-case names, one entry per value. status, when not zero, comes
// first as :status, as in Envoy's response header map. Go's header maps
// do not keep the order of arrival: names are sorted.
func HeaderMapOf(status int, h http.Header) *corev3.HeaderMap {
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

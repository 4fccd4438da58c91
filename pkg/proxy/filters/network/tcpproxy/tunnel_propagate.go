package tcpproxy

import (
	"maps"
	"net/http"
	"slices"
	"strconv"
	"strings"

	corev3 "github.com/envoyproxy/go-control-plane/envoy/config/core/v3"
	"google.golang.org/protobuf/proto"
)

// The filter state keys of propagate_response_headers and
// propagate_response_trailers, Envoy's.
const (
	responseHeadersKey  = "envoy.tcp_proxy.propagate_response_headers"
	responseTrailersKey = "envoy.tcp_proxy.propagate_response_trailers"
)

// tunnelHeaderMap is the tunnel response's headers or trailers as the
// connection's filter state keeps them: like Envoy's
// TunnelResponseHeadersOrTrailers, it serializes as a HeaderMap
// (%FILTER_STATE(KEY:TYPED)%) and has no plain form.
type tunnelHeaderMap struct{ m *corev3.HeaderMap }

// FilterStateString implements accesslog.FilterStateObject: there is no
// plain form, as in Envoy.
func (tunnelHeaderMap) FilterStateString() (string, bool) { return "", false }

// FilterStateProto implements accesslog.FilterStateObject.
func (h tunnelHeaderMap) FilterStateProto() proto.Message { return h.m }

// headerMapOf converts a response's header fields to a HeaderMap with
// lower-case names, one entry per value. status, when not zero, comes
// first as :status, as in Envoy's response header map. Go's header maps
// do not keep the order of arrival: names are sorted.
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

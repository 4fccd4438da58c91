package udpproxy

import (
	"errors"
	"fmt"
	"maps"
	"net/http"
	"slices"
	"strconv"
	"strings"
	"time"

	udpproxyv3 "github.com/envoyproxy/go-control-plane/envoy/extensions/filters/udp/udp_proxy/v3"

	"github.com/outrigger-dev/outrigger/pkg/proxy/accesslog"
	"github.com/outrigger-dev/outrigger/pkg/proxy/extension"
	"github.com/outrigger-dev/outrigger/pkg/proxy/tunnelhttp"
	"github.com/outrigger-dev/outrigger/pkg/proxy/udpfilter"
)

// Envoy's defaults of the tunnel's retry and buffer options.
const (
	defaultMaxConnectAttempts   = 1
	defaultMaxBufferedDatagrams = 1024
	defaultMaxBufferedBytes     = 16384
)

// The filter state keys under which Envoy keeps the tunnel response's
// headers and trailers (propagate_response_headers and _trailers).
const (
	responseHeadersKey  = "envoy.udp_proxy.propagate_response_headers"
	responseTrailersKey = "envoy.udp_proxy.propagate_response_trailers"
)

// tunnelConfig is a compiled tunneling_config: each session is an HTTP/2
// stream to a host of the routed cluster, a CONNECT-UDP extended CONNECT
// (RFC 9298) or, with use_post, a POST, whose DATA carries what the
// session filters make of the client's datagrams (http_capsule makes
// them DATAGRAM capsules) and whose response body comes back through
// them.
type tunnelConfig struct {
	proxyHost  *accesslog.Formatter
	proxyPort  uint32 // 0: none
	targetHost *accesslog.Formatter
	targetPort uint32
	usePost    bool
	postPath   string
	headers    []tunnelhttp.Header

	maxAttempts  uint32
	backoffBase  time.Duration // 0: retry at once
	backoffMax   time.Duration
	buffer       bool
	maxDatagrams int
	maxBytes     uint64

	propagateHeaders, propagateTrailers bool
}

// compileTunnel compiles a tunneling_config; errors name the field below
// tunneling_config. reg resolves the formatters extensions.
func compileTunnel(tc *udpproxyv3.UdpProxyConfig_UdpTunnelingConfig, reg *extension.Registry) (*tunnelConfig, error) {
	var errs []error
	fail := func(format string, args ...any) { errs = append(errs, fmt.Errorf(format, args...)) }
	t := &tunnelConfig{
		targetPort:   tc.GetDefaultTargetPort(),
		usePost:      tc.GetUsePost(),
		postPath:     tc.GetPostPath(),
		maxAttempts:  defaultMaxConnectAttempts,
		maxDatagrams: defaultMaxBufferedDatagrams,
		maxBytes:     defaultMaxBufferedBytes,
	}
	var fmts accesslog.Formatters
	if len(tc.GetFormatters()) > 0 {
		var err error
		if reg == nil {
			err = errors.New("formatters: no formatter extensions in this context")
		} else {
			fmts, err = accesslog.CompileFormatters(tc.GetFormatters(), reg)
		}
		if err != nil {
			errs = append(errs, err)
		}
	}
	// Envoy's validation requires both hosts and a target port.
	if tc.GetProxyHost() == "" {
		fail("proxy_host: required")
	}
	if tc.GetTargetHost() == "" {
		fail("target_host: required")
	}
	if t.targetPort == 0 || t.targetPort > 65535 {
		fail("default_target_port: must be between 1 and 65535")
	}
	var err error
	if t.proxyHost, err = accesslog.TextWith(tc.GetProxyHost(), false, fmts); err != nil {
		fail("proxy_host: %v", err)
	}
	if t.targetHost, err = accesslog.TextWith(tc.GetTargetHost(), false, fmts); err != nil {
		fail("target_host: %v", err)
	}
	if p := tc.GetProxyPort(); p != nil {
		if p.GetValue() == 0 || p.GetValue() > 65535 {
			fail("proxy_port: must be between 1 and 65535")
		}
		t.proxyPort = p.GetValue()
	}
	switch {
	case t.postPath != "" && !t.usePost:
		fail("post_path: needs use_post")
	case t.postPath == "":
		t.postPath = "/"
	case !strings.HasPrefix(t.postPath, "/"):
		fail("post_path: must start with /")
	}
	for i, o := range tc.GetHeadersToAdd() {
		h, err := tunnelhttp.CompileHeader(o, fmts)
		if err != nil {
			errs = append(errs, fmt.Errorf("headers_to_add[%d].%w", i, err))
			continue
		}
		t.headers = append(t.headers, h)
	}
	if r := tc.GetRetryOptions(); r != nil {
		if n := r.GetMaxConnectAttempts(); n != nil {
			if n.GetValue() < 1 {
				fail("retry_options.max_connect_attempts: must be at least 1")
			}
			t.maxAttempts = n.GetValue()
		}
		if b := r.GetBackoffOptions(); b != nil {
			t.backoffBase = b.GetBaseInterval().AsDuration()
			t.backoffMax = 10 * t.backoffBase
			if b.GetMaxInterval() != nil {
				t.backoffMax = b.GetMaxInterval().AsDuration()
			}
			if t.backoffBase <= 0 {
				fail("retry_options.backoff_options.base_interval: must be greater than 0")
			}
			if t.backoffMax < t.backoffBase {
				fail("retry_options.backoff_options.max_interval: must not be less than base_interval")
			}
		}
	}
	if b := tc.GetBufferOptions(); b != nil {
		t.buffer = true
		if v := b.GetMaxBufferedDatagrams(); v != nil {
			t.maxDatagrams = int(v.GetValue())
		}
		if v := b.GetMaxBufferedBytes(); v != nil {
			t.maxBytes = v.GetValue()
		}
	}
	t.propagateHeaders = tc.GetPropagateResponseHeaders()
	t.propagateTrailers = tc.GetPropagateResponseTrailers()
	if err := errors.Join(errs...); err != nil {
		return nil, err
	}
	return t, nil
}

// authority is the tunnel request's :authority for the session e
// describes: proxy_host, with proxy_port when set.
func (t *tunnelConfig) authority(e *accesslog.Entry) string {
	host := string(t.proxyHost.AppendValue(nil, e))
	if t.proxyPort != 0 {
		host += ":" + strconv.FormatUint(uint64(t.proxyPort), 10)
	}
	return host
}

// path is the tunnel request's :path: post_path with use_post, else RFC
// 9298's default URI template with the target host (':' and '%'
// percent-encoded, as Envoy encodes them) and port.
func (t *tunnelConfig) path(e *accesslog.Entry) string {
	if t.usePost {
		return t.postPath
	}
	target := percentEncode(string(t.targetHost.AppendValue(nil, e)))
	return "/.well-known/masque/udp/" + target + "/" + strconv.FormatUint(uint64(t.targetPort), 10) + "/"
}

// percentEncode encodes ':', '%' and bytes outside printable ASCII, as
// Envoy's PercentEncoding::encode does with ':' reserved.
func percentEncode(s string) string {
	var b strings.Builder
	for i := 0; i < len(s); i++ {
		c := s[i]
		if c == ':' || c == '%' || c < ' ' || c > '~' {
			fmt.Fprintf(&b, "%%%02X", c)
			continue
		}
		b.WriteByte(c)
	}
	return b.String()
}

// header applies headers_to_add to hdr for the session e describes.
func (t *tunnelConfig) header(hdr http.Header, e *accesslog.Entry) {
	tunnelhttp.Apply(t.headers, hdr, e)
}

// prefixErrors prefixes every error joined in err.
func prefixErrors(prefix string, err error) []error {
	if multi, ok := err.(interface{ Unwrap() []error }); ok {
		var out []error
		for _, e := range multi.Unwrap() {
			out = append(out, prefixErrors(prefix, e)...)
		}
		return out
	}
	return []error{fmt.Errorf("%s%w", prefix, err)}
}

// checkTunnelClusters refuses a tunnel to a known cluster that does not
// speak HTTP/2: Outrigger sends CONNECT-UDP as an HTTP/2 extended CONNECT
// only, not as an HTTP/1.1 upgrade. A cluster unknown now fails its
// tunnels when they connect.
func checkTunnelClusters(c *config, clusters udpfilter.Clusters) error {
	if clusters == nil {
		return nil
	}
	for _, name := range slices.Sorted(maps.Keys(c.clusters)) {
		cl := clusters.Cluster(name)
		if cl == nil {
			continue
		}
		if tc, ok := cl.(udpfilter.TunnelCluster); !ok || !tc.HTTP2() {
			return fmt.Errorf("tunneling_config: cluster %q does not speak HTTP/2; Outrigger's UDP tunnels need an HTTP/2 cluster (typed_extension_protocol_options with http2_protocol_options)", name)
		}
	}
	return nil
}

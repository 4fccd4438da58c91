package httpconn

import (
	"context"
	"net/netip"
	"strconv"
	"strings"

	"github.com/outrigger-dev/outrigger/pkg/proxy/tlsconfig"
	"github.com/outrigger-dev/outrigger/pkg/proxy/upstream"
)

// withAutoSNI returns ctx carrying the upstream handshake the request
// needs on a cluster with upstream_http_protocol_options, as Envoy's
// router derives it: from the :authority going upstream (after host
// rewrites) or, when the request has it with a value, the
// override_auto_sni_header; without its port. auto_sni sets the server
// name unless the host is an IP address; auto_san_validation requires the
// name (an address too) among the server certificate's SANs.
func (s *stream) withAutoSNI(ctx context.Context, cl UpstreamCluster) context.Context {
	a := cl.AutoSNI()
	if a == nil {
		return ctx
	}
	return autoSNIContext(ctx, a, s.upAuthority, &s.reqHeaders)
}

// autoSNIContext is withAutoSNI for a request with that authority and
// those headers.
func autoSNIContext(ctx context.Context, a *upstream.AutoSNI, authority string, headers *headerList) context.Context {
	value := authority
	if a.Header != "" && a.Header != ":authority" && a.Header != "host" {
		if v, ok := headers.Get(a.Header); ok && v != "" {
			value = v
		}
	}
	host, isIP := parseAuthority(value)
	if host == "" {
		return ctx
	}
	// The request's strings view the connection's buffers; the
	// connection made with them outlives the request.
	host = strings.Clone(host)
	var ov tlsconfig.Override
	if a.SNI && !isIP {
		ov.ServerName = host
	}
	if a.SAN {
		ov.VerifySAN = host
	}
	return tlsconfig.WithOverride(ctx, ov)
}

// parseAuthority splits a host header's value as Envoy's parseAuthority
// does: a port after the last colon goes (unless the value ends with "]",
// an IPv6 literal without one, or the port is not a number up to 65535),
// and an IP address in brackets loses them. It reports whether the host
// is an IP address.
func parseAuthority(v string) (host string, isIP bool) {
	host = v
	if i := strings.LastIndexByte(v, ':'); i >= 0 && !strings.HasSuffix(v, "]") {
		if p, err := strconv.ParseUint(v[i+1:], 10, 64); err == nil && p <= 65535 {
			host = v[:i]
		}
	}
	ip := host
	if len(ip) >= 2 && ip[0] == '[' && ip[len(ip)-1] == ']' {
		ip = ip[1 : len(ip)-1]
	}
	if _, err := netip.ParseAddr(ip); err == nil {
		return ip, true
	}
	return host, false
}

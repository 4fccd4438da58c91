package httpconn

import (
	"math/rand/v2"
	"net/netip"
	"strings"
	"unsafe"

	hcmv3 "github.com/envoyproxy/go-control-plane/envoy/extensions/filters/network/http_connection_manager/v3"

	"github.com/outrigger-dev/outrigger/pkg/proxy/httpconn/http1"
	"github.com/outrigger-dev/outrigger/pkg/proxy/ipdetection"
	"github.com/outrigger-dev/outrigger/pkg/proxy/requestid"
)

// hopByHopRequest reports whether a request field stays on the downstream
// connection: the hop-by-hop fields of RFC 9110 §7.6.1, the framing the
// proxy writes itself, Host (sent as the possibly rewritten authority) and
// Expect (the proxy answers 100-continue itself, as Envoy does; with
// proxy_100_continue appendRequestHead writes it for HTTP/1 upstreams).
func hopByHopRequest(name []byte) bool {
	switch string(name) {
	case "connection", "keep-alive", "proxy-connection", "transfer-encoding", "upgrade", "te",
		"content-length", "host", "expect", "http2-settings":
		return true
	}
	return false
}

// hopByHopResponse is hopByHopRequest for response fields.
func hopByHopResponse(name []byte) bool {
	switch string(name) {
	case "connection", "keep-alive", "proxy-connection", "transfer-encoding", "upgrade", "te", "content-length":
		return true
	}
	return false
}

// nominated reports whether the Connection header named the field.
func nominated(name []byte, tokens [][]byte) bool {
	for _, t := range tokens {
		if http1.EqualFold(t, view(name)) {
			return true
		}
	}
	return false
}

// copyRequestHeaders fills s.reqHeaders with the fields of an HTTP/1
// request that go upstream.
// Their names' buckets are noted (copiedFields): the tracing's start then
// looks only at the fields appended since, when none of these has a name
// it reads.
func (s *stream) copyRequestHeaders(req *http1.Request) {
	var names nameMask
	for i := range req.Headers {
		h := &req.Headers[i]
		if hopByHopRequest(h.Name) || (len(req.ConnectionTokens) > 0 && nominated(h.Name, req.ConnectionTokens)) {
			if string(h.Name) == "te" && http1.HasToken(h.Value, "trailers") {
				s.teTrailers = true
			}
			continue
		}
		names |= nameBit(view(h.Name))
		s.reqHeaders.Add(view(h.Name), view(h.Value))
	}
	s.copied = copiedFields{names: names, adds: s.reqHeaders.adds}
}

// copyResponseHeaders fills s.respHeaders with the fields of the HTTP/1
// response u read that go downstream, noting their names' spellings when
// the cluster keeps them (preserve_case).
func (s *stream) copyResponseHeaders(u *upstreamScratch) {
	resp := &u.resp
	if u.preserveCase() {
		s.noteResponseCases(u, u.keys)
	}
	for i := range resp.Headers {
		h := &resp.Headers[i]
		if hopByHopResponse(h.Name) || (len(resp.ConnectionTokens) > 0 && nominated(h.Name, resp.ConnectionTokens)) {
			continue
		}
		s.respHeaders.Add(view(h.Name), view(h.Value))
	}
}

// prepareRequest normalises the request's path and host, then applies
// the connection manager's request header rules, as Envoy's
// mutateRequestHeaders does. It returns false when it answered the request
// itself (a path it refuses or redirects).
func (s *stream) prepareRequest() bool {
	// No request id generated yet (an address: a plain store).
	s.genID.at = 0
	if !s.checkUnderscores() {
		return false
	}
	if len(s.m.cfg.earlyMutations) > 0 {
		s.earlyMutate()
	}
	if !s.normalizeRequest() {
		return false
	}
	m := s.m
	h := &s.reqHeaders
	// Only this proxy says a request is internal.
	h.Del("x-envoy-internal")
	var (
		final netip.Addr // the client's address, when known
		// trusted: the client's address may make the request internal.
		trusted bool
	)
	xff, hasXFF := h.Get("x-forwarded-for")
	if m.cfg.useRemoteAddress {
		trusted = !hasXFF
		if m.cfg.xffTrustedHops > 0 && hasXFF {
			if ip, _, err := ipdetection.LastXFF(xff, m.cfg.xffTrustedHops-1); err == nil {
				final = ip
			}
		}
		if !final.IsValid() {
			final, _ = netip.ParseAddr(s.remoteIP)
		}
		if !m.cfg.skipXFFAppend && s.remoteIP != "" {
			if hasXFF {
				s.xffBuf = append(append(append(s.xffBuf[:0], xff...), ", "...), s.remoteIP...)
				h.Set("x-forwarded-for", view(s.xffBuf))
			} else {
				h.Add("x-forwarded-for", s.remoteIP)
			}
		}
		// A downstream's x-forwarded-proto is trusted only behind
		// trusted hops.
		if m.cfg.xffTrustedHops == 0 || !h.Has("x-forwarded-proto") {
			h.Set("x-forwarded-proto", s.connectionProto())
		}
		// append_x_forwarded_port: the port the client connected to,
		// unless a trusted hop already said.
		if m.cfg.appendXForwardedPort && (m.cfg.xffTrustedHops == 0 || !h.Has("x-forwarded-port")) {
			if p := portOf(s.local); p != "" {
				h.Set("x-forwarded-port", p)
			}
		}
	} else if len(m.cfg.ipDetection) > 0 {
		var reject int
		if final, trusted, reject = s.detectClient(); reject != 0 {
			m.stats.rqRejectedViaIPDetection.Inc()
			s.localReply(reject, "", 0, "rejecting_because_detection_failed")
			return false
		}
	} else if hasXFF {
		// The client is the address xff_num_trusted_hops from the
		// right of x-forwarded-for, for the logs and the filters.
		if ip, single, err := ipdetection.LastXFF(xff, m.cfg.xffTrustedHops); err == nil {
			final, trusted = ip, single
		}
	}
	if !h.Has("x-forwarded-proto") {
		h.Add("x-forwarded-proto", s.connectionProto())
	}
	if v := m.cfg.schemeToSet; v != "" {
		// scheme_to_overwrite: routes, filters and logs see the
		// scheme, the upstream its x-forwarded-proto.
		h.Set("x-forwarded-proto", v)
		s.scheme, s.rreq.Scheme, s.entry.Scheme = v, v, v
	}
	internal := trusted && final.IsValid() && m.cfg.internal.contains(final)
	edge := !internal && m.cfg.useRemoteAddress
	if internal {
		h.Add("x-envoy-internal", "true")
	} else {
		h.dropInternal(edge)
		for _, name := range s.routes().table.InternalOnlyHeaders {
			h.Del(name)
		}
	}
	if m.cfg.addUserAgent {
		// add_user_agent: this proxy's service cluster and node, as
		// Envoy's user agent; the cluster also stands in for a missing
		// user-agent.
		node := m.deps.Tracing.Node
		h.Set("x-envoy-downstream-service-cluster", node.GetCluster())
		if ua, _ := h.Get("user-agent"); ua == "" {
			h.Set("user-agent", node.GetCluster())
		}
		if id := node.GetId(); id != "" {
			h.Set("x-envoy-downstream-service-node", id)
		}
	}
	if m.cfg.via != "" {
		s.viaReqBuf = appendVia(h, m.cfg.via, s.viaReqBuf)
	}
	s.forwardClientCert(h)
	if final.IsValid() && final.String() != s.remoteIP {
		// As in Envoy, the address found in x-forwarded-for is the
		// downstream's for everything after this point, without a
		// port.
		s.remoteIP = final.String()
		s.entry.DownstreamRemoteAddress = netip.AddrPortFrom(final, 0).String()
	}
	if edge && final.IsValid() {
		h.Set("x-envoy-external-address", final.String())
	}
	if m.cfg.generateRequestID && (!h.Has("x-request-id") || (edge && !m.cfg.preserveExternalRequestID)) {
		s.idBuf = requestid.AppendUUIDHex8(s.idBuf[:0], &s.genID.hex8)
		s.genID.at = uintptr(unsafe.Pointer(&s.idBuf[0]))
		h.Set("x-request-id", view(s.idBuf))
	}
	if m.tracing != nil {
		// The names appended above are preparedNames, but the id's,
		// appended last (copiedFields).
		s.copied.prepare(h)
	}
	return true
}

// normalizeRequest applies the path and host normalisations before any
// filter or route sees the request, and answers the requests they refuse
// (400) or redirect (307). It returns false when it answered.
func (s *stream) normalizeRequest() bool {
	m := s.m
	path, authority := s.path, s.authority
	if path != "" && path[0] != '/' {
		// Envoy serves relative paths only: an absolute URL kept whole
		// (allow_absolute_url: false) or OPTIONS' "*".
		m.stats.rqNonRelativePath.Inc()
		s.localReply(404, "", 0, "absolute_path_rejected")
		return false
	}
	redirect := false
	if strings.HasPrefix(path, "/") {
		switch m.escapedSlashesAction() {
		case hcmv3.HttpConnectionManager_REJECT_REQUEST:
			if _, found := unescapeSlashes(path); found {
				m.stats.rqFailedPathNormalization.Inc()
				s.localReply(400, "", 0, "path_normalization_failed")
				return false
			}
		case hcmv3.HttpConnectionManager_UNESCAPE_AND_REDIRECT:
			path, redirect = unescapeSlashes(path)
		case hcmv3.HttpConnectionManager_UNESCAPE_AND_FORWARD:
			path, _ = unescapeSlashes(path)
		}
		if m.normalizePathOn() {
			var ok bool
			if path, ok = canonicalPath(path); !ok {
				m.stats.rqFailedPathNormalization.Inc()
				s.localReply(400, "", 0, "path_normalization_failed")
				return false
			}
		}
		if m.cfg.mergeSlashes {
			path = mergeSlashes(path)
		}
	}
	if redirect {
		if s.grpcRequest() {
			// gRPC clients do not follow redirects.
			m.stats.rqFailedPathNormalization.Inc()
			s.localReply(400, "", 0, "path_normalization_failed")
			return false
		}
		m.stats.rqRedirectedNormalizedPath.Inc()
		s.details = "path_normalization_failed"
		s.status = 307
		s.respHeaders.reset()
		s.respHeaders.Add("location", path)
		s.finishLocal("")
		return false
	}
	if m.cfg.stripTrailingHostDot {
		authority = stripTrailingDot(authority)
	}
	switch m.cfg.stripPort {
	case stripMatchingPort:
		if host, port, ok := splitHostPort(authority); ok && port == portOf(s.local) {
			authority = host
		}
	case stripAnyPort:
		if host, _, ok := splitHostPort(authority); ok {
			authority = host
		}
	}
	if path != s.path || authority != s.authority {
		s.setRequest(s.method, path, authority)
	}
	return true
}

// escapedSlashesAction is path_with_escaped_slashes_action, Envoy's
// runtime deciding when it is IMPLEMENTATION_SPECIFIC_DEFAULT (keep), or
// when the action is switched off by its _enabled percentage.
func (m *Manager) escapedSlashesAction() hcmv3.HttpConnectionManager_PathWithEscapedSlashesAction {
	a := m.cfg.escapedSlashes
	rt := m.deps.Runtime
	if rt == nil {
		return a
	}
	if !percentOn(rt.Uint64("http_connection_manager.path_with_escaped_slashes_action_enabled", 100)) {
		return hcmv3.HttpConnectionManager_KEEP_UNCHANGED
	}
	if a == hcmv3.HttpConnectionManager_IMPLEMENTATION_SPECIFIC_DEFAULT {
		a = hcmv3.HttpConnectionManager_PathWithEscapedSlashesAction(rt.Uint64("http_connection_manager.path_with_escaped_slashes_action", 0))
	}
	return a
}

// normalizePathOn is normalize_path, the runtime's
// http_connection_manager.normalize_path percentage when unset (0 by
// default).
func (m *Manager) normalizePathOn() bool {
	if p := m.cfg.normalizePath; p != nil {
		return *p
	}
	if rt := m.deps.Runtime; rt != nil {
		return percentOn(rt.Uint64("http_connection_manager.normalize_path", 0))
	}
	return false
}

// percentOn draws a runtime feature enabled for pct percent of requests.
func percentOn(pct uint64) bool {
	switch {
	case pct >= 100:
		return true
	case pct == 0:
		return false
	}
	return rand.Uint64N(100) < pct
}

// splitHostPort splits "host:port" (with IPv6 brackets kept in host); ok
// is false when there is no port.
func splitHostPort(authority string) (host, port string, ok bool) {
	i := strings.LastIndexByte(authority, ':')
	if i < 0 || strings.IndexByte(authority[i:], ']') >= 0 {
		return authority, "", false
	}
	if strings.Contains(authority[:i], ":") && !strings.HasPrefix(authority, "[") {
		// A bare IPv6 address has no port.
		return authority, "", false
	}
	return authority[:i], authority[i+1:], true
}

// stripTrailingDot removes the dot that ends a host name, before its port
// if it has one, as Envoy's strip_trailing_host_dot does ("example.com.:80"
// gives "example.com:80"); only one dot goes.
func stripTrailingDot(authority string) string {
	i := strings.LastIndexByte(authority, '.')
	switch {
	case i < 0:
		return authority
	case i == len(authority)-1:
		return authority[:i]
	case authority[i+1] == ':':
		// An IPv6 address never has a dot just before a colon.
		return authority[:i] + authority[i+1:]
	}
	return authority
}

// portOf is the port of an "ip:port" address.
func portOf(addr string) string {
	_, port, _ := splitHostPort(addr)
	return port
}

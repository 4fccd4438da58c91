package extauthz

import (
	"context"
	"math/rand/v2"
	"strings"
	"time"

	extauthzv3 "github.com/envoyproxy/go-control-plane/envoy/extensions/filters/http/ext_authz/v3"
	"google.golang.org/protobuf/proto"
	"google.golang.org/protobuf/types/known/structpb"

	"github.com/outrigger-dev/outrigger/pkg/proxy/accesslog"
	"github.com/outrigger-dev/outrigger/pkg/proxy/grpcservice"
	"github.com/outrigger-dev/outrigger/pkg/proxy/httpfilter"
)

// Envoy's %RESPONSE_CODE_DETAILS% of the filter's local replies.
const (
	detailsDenied = "ext_authz_denied"
	detailsError  = "ext_authz_error"
	// detailsInvalid: an answer rejected for its edits.
	detailsInvalid = "ext_authz_invalid"
)

// failureModeHeader marks a request let through although its check
// failed (failure_mode_allow_header_add).
const failureModeHeader = "x-envoy-auth-failure-mode-allowed"

// filter is one request's ext_authz filter.
type filter struct {
	c *config
	// responseHeaders edit the response of an allowed request, and
	// localHeaders the local reply of a denied one.
	responseHeaders []headerEdit
	localHeaders    []headerEdit
	// routeConfigs is scratch space for the per-route configurations.
	routeConfigs []httpfilter.RouteConfig
}

var (
	_ httpfilter.Decoder   = (*filter)(nil)
	_ httpfilter.Encoder   = (*filter)(nil)
	_ httpfilter.Destroyer = (*filter)(nil)
)

// DecodeHeaders implements httpfilter.Decoder: it checks the request with
// the authorization service, waiting for the answer (up to the timeout),
// and goes on, answers, or fails as the answer says.
func (f *filter) DecodeHeaders(s httpfilter.Stream) httpfilter.Status {
	c := f.c
	if s.Route() == nil {
		// Envoy checks only routed requests.
		return httpfilter.Continue
	}
	in, skip := f.routeSettings(s)
	if skip {
		return httpfilter.Continue
	}
	if (c.enabled != nil && !c.enabled.Enabled(c.runtime, rand.Uint64())) ||
		(c.enabledMetadata != nil && !c.enabledMetadata.Match(s.DynamicMetadata())) {
		c.stats.disabled.Inc()
		if c.denyAtDisable != nil && c.denyAtDisable.Enabled(c.flags) {
			s.SendLocalReply(c.statusOnError, "", accesslog.UnauthorizedExternalService, detailsError)
			return httpfilter.Stop
		}
		return httpfilter.Continue
	}
	if in.settings != nil && !isUpgrade(s) {
		body, _, ok := s.BufferRequestBody(in.settings.maxBytes, in.settings.allowPartial)
		if !ok {
			return httpfilter.Stop
		}
		in.body = body
	} else {
		in.settings = nil
	}
	req := c.checkRequest(s, in)
	var info *loggingInfo
	if c.emitStateStats || c.filterMetadata != nil {
		// Only a request actually checked gets it, as in Envoy.
		info = newLoggingInfo(c.filterMetadata)
		s.SetFilterState(c.name, info)
	}

	ctx, cancel := context.WithCancel(context.Background())
	if in.timeout > 0 {
		ctx, cancel = context.WithTimeout(context.Background(), in.timeout)
	}
	defer cancel()
	var rendered []string
	if hc, ok := in.client.(*httpClient); ok {
		rendered = hc.renderHeaders(httpfilter.CurrentEntry(s))
	}
	done := make(chan struct{})
	var resp *response
	start := time.Now()
	// The check's span starts here, where the request's span may be
	// read; the call's goroutine finishes it.
	sp, hsp := checkSpan(s, in, start), httpCheckSpan(s, in, start)
	ctx = grpcservice.WithCallMetadata(ctx, sp.Metadata())
	ctx = withHTTPSpan(ctx, hsp)
	go func() {
		defer close(done)
		resp = in.client.check(ctx, req, rendered)
		finishCheckSpan(sp, ctx, resp)
		finishHTTPCheckSpan(hsp, ctx, resp)
	}()
	if !s.Wait(done) {
		// The client went away or the stream timed out: the call is
		// cancelled and its goroutine ends with it.
		return httpfilter.Stop
	}
	took := time.Since(start)
	if info != nil && c.emitStateStats {
		info.latencyUS.Store(took.Microseconds())
	}
	f.recordMetadata(s, resp, took)
	return f.complete(s, resp)
}

// metadataNamespace is where the service's dynamic metadata goes, the
// namespace Envoy's filter always uses.
const metadataNamespace = "envoy.filters.http.ext_authz"

// recordMetadata keeps the dynamic metadata of an answer as the filter's,
// with enable_dynamic_metadata_ingestion, adding ext_authz_duration (the
// call's milliseconds) to an allowed request's, as Envoy does.
func (f *filter) recordMetadata(s httpfilter.Stream, resp *response, took time.Duration) {
	md := resp.dynamicMetadata
	if len(md.GetFields()) == 0 {
		return
	}
	if !f.c.ingestMetadata {
		f.c.stats.ignoredDynamicMetadata.Inc()
		return
	}
	if resp.status == statusOK {
		md = proto.Clone(md).(*structpb.Struct)
		md.Fields["ext_authz_duration"] = structpb.NewNumberValue(float64(took.Milliseconds()))
	}
	s.SetDynamicMetadata(metadataNamespace, md)
}

// complete applies a check's answer.
func (f *filter) complete(s httpfilter.Stream, resp *response) httpfilter.Status {
	c := f.c
	var cs *clusterStats
	if name := s.ClusterName(); name != "" {
		cs = c.clusterStats(name)
	}
	switch resp.status {
	case statusOK:
		if c.clearsRouteCache(resp) {
			s.ClearRouteCache()
		}
		edits, remove, ok := c.vetRequestEdits(resp)
		if ok && c.validateMutations {
			ok = validHeaders(resp.responseHeaders) && validQuery(resp.queryToSet)
		}
		if !ok {
			if c.shadowMode {
				c.stats.invalid.Inc()
				return f.shadow(s, extauthzv3.ShadowDecision_ERROR, 500, nil)
			}
			return f.reject(s, cs)
		}
		h := s.RequestHeaders()
		apply(h, edits, nil)
		for _, name := range remove {
			if name = strings.ToLower(name); removable(name) {
				h.Del(name)
			}
		}
		if p, ok := editQuery(s.Request().Path, resp.queryToSet, resp.queryToRemove); ok {
			s.SetPath(p)
		}
		f.responseHeaders = resp.responseHeaders
		c.stats.ok.Inc()
		if cs != nil {
			cs.ok.Inc()
		}
		if c.shadowMode {
			return f.shadow(s, extauthzv3.ShadowDecision_OK, 200, nil)
		}
		return httpfilter.Continue
	case statusDenied:
		c.stats.denied.Inc()
		status := replyStatus(resp.httpStatus, 403)
		if cs != nil {
			cs.denied.Inc()
			if c.chargeCluster && !c.shadowMode {
				cs.chargeDenial(status)
			}
		}
		if c.shadowMode {
			return f.shadow(s, extauthzv3.ShadowDecision_DENIED, status, resp.localHeaders)
		}
		if c.validateMutations && !validHeaders(resp.localHeaders) {
			return f.reject(s, cs)
		}
		body := resp.body
		if c.maxDeniedBody > 0 && len(body) > c.maxDeniedBody {
			body = body[:c.maxDeniedBody]
		}
		f.localHeaders = resp.localHeaders
		s.SendLocalReply(status, body, accesslog.UnauthorizedExternalService, detailsDenied)
		return httpfilter.Stop
	}
	c.stats.error.Inc()
	if cs != nil {
		cs.error.Inc()
	}
	if c.shadowMode {
		return f.shadow(s, extauthzv3.ShadowDecision_ERROR, replyStatus(resp.httpStatus, c.statusOnError), nil)
	}
	if c.failureModeAllow {
		c.stats.failureModeAllowed.Inc()
		if cs != nil {
			cs.failureModeAllowed.Inc()
		}
		if c.failureModeHeader {
			s.RequestHeaders().Add(failureModeHeader, "true")
		}
		return httpfilter.Continue
	}
	f.localHeaders = resp.localHeaders
	s.SendLocalReply(replyStatus(resp.httpStatus, c.statusOnError), resp.body, accesslog.UnauthorizedExternalService, detailsError)
	return httpfilter.Stop
}

// reject answers 500 to a request whose check answer was rejected for
// its edits (Envoy's rejectResponse), counted as invalid.
func (f *filter) reject(s httpfilter.Stream, cs *clusterStats) httpfilter.Status {
	f.c.stats.invalid.Inc()
	if cs != nil {
		cs.invalid.Inc()
	}
	s.SendLocalReply(500, "", accesslog.UnauthorizedExternalService, detailsInvalid)
	return httpfilter.Stop
}

// replyStatus is the status of a local reply: the service's when it is a
// valid final status, else def.
func replyStatus(status, def int) int {
	if status >= 200 && status <= 599 {
		return status
	}
	return def
}

// routeSettings reads the route's ExtAuthzPerRoute configurations: skip
// when the most specific disables the filter; context extensions merged
// from every level, the most specific winning; the body settings and the
// service override of the most specific.
func (f *filter) routeSettings(s httpfilter.Stream) (in checkInput, skip bool) {
	in.settings, in.client, in.timeout = f.c.body, f.c.client, f.c.timeout
	in.emitClientSpan = f.c.emitClientSpan
	f.routeConfigs = s.RouteConfigs(f.c.name, f.routeConfigs[:0])
	defer clear(f.routeConfigs)
	if len(f.routeConfigs) == 0 {
		return in, false
	}
	for _, rc := range f.routeConfigs {
		r, _ := rc.(*routeConfig)
		if r == nil || len(r.contextExtensions) == 0 {
			continue
		}
		if in.contextExtensions == nil {
			in.contextExtensions = make(map[string]string, len(r.contextExtensions))
		}
		for k, v := range r.contextExtensions {
			in.contextExtensions[k] = v
		}
	}
	most, _ := f.routeConfigs[len(f.routeConfigs)-1].(*routeConfig)
	if most == nil {
		return in, false
	}
	if most.disabled {
		return in, true
	}
	if most.client != nil {
		in.client, in.timeout = most.client, most.timeout
	}
	if most.emitClientSpan != nil {
		in.emitClientSpan = *most.emitClientSpan
	}
	switch {
	case most.disableBody:
		in.settings = nil
	case most.body != nil:
		in.settings = most.body
	}
	return in, false
}

// isUpgrade reports an upgrade request (a WebSocket, CONNECT), whose body
// Envoy never buffers. The connection manager keeps the upgrade header
// apart from the request headers for now, so only CONNECT is seen until
// the stream tells of upgrades.
func isUpgrade(s httpfilter.Stream) bool {
	_, ok := s.RequestHeaders().Get("upgrade")
	return ok || s.Request().Method == "CONNECT"
}

// EncodeHeaders implements httpfilter.Encoder: the service's headers go on
// the response of an allowed request, or on the reply to a denied one.
func (f *filter) EncodeHeaders(s httpfilter.Stream) httpfilter.Status {
	h := s.ResponseHeaders()
	var room *headerRoom
	// room counts the head's fields (after a denial's headers are
	// cleared) when enforce_response_header_limits asks.
	roomOf := func() *headerRoom {
		if f.c.enforceHeaderLimits {
			room = newHeaderRoom(h, s.Info().MaxHeadersCount)
		}
		return room
	}
	switch {
	case f.localHeaders != nil:
		applyLocal(h, f.localHeaders, roomOf)
	case f.responseHeaders != nil:
		apply(h, f.responseHeaders, roomOf())
	}
	if room != nil && room.omitted {
		f.c.stats.omittedResponseHeaders.Inc()
	}
	return httpfilter.Continue
}

// OnDestroy implements httpfilter.Destroyer: the filter goes back to its
// pool.
func (f *filter) OnDestroy() {
	c := f.c
	f.c, f.responseHeaders, f.localHeaders = nil, nil, nil
	c.pool.Put(f)
}

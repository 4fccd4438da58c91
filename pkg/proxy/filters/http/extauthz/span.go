package extauthz

import (
	"context"
	"errors"
	"net/http"
	"net/http/httptrace"
	"sync/atomic"
	"time"

	authv3 "github.com/envoyproxy/go-control-plane/envoy/service/auth/v3"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"

	"github.com/outrigger-dev/outrigger/pkg/proxy/httpfilter"
	"github.com/outrigger-dev/outrigger/pkg/proxy/tracing"
)

// The tag Envoy's gRPC authorization client sets on the check's span
// when the service answers, and its values.
const (
	tagStatus       = "ext_authz_status"
	tagStatusOK     = "ext_authz_ok"
	tagStatusDenied = "ext_authz_unauthorized"
	tagStatusError  = "ext_authz_error"
)

// checkSpan starts the span of a check of a traced request with a gRPC
// service, as Envoy's filter hands its active span to the gRPC client:
// nil for an untraced request or an HTTP service (httpCheckSpan).
func checkSpan(s httpfilter.Stream, in checkInput, start time.Time) *tracing.CallSpan {
	g, ok := in.client.(*grpcClient)
	if !ok {
		return nil
	}
	parent := httpfilter.ActiveSpan(s)
	if parent == nil {
		return nil
	}
	cluster, address := g.c.SpanTags()
	return tracing.StartCallSpan(parent, in.emitClientSpan, authv3.Authorization_Check_FullMethodName, cluster, address, start)
}

// finishCheckSpan ends a check's span once the call returned resp under
// ctx: cancelled when the request went away (its filter cancelled ctx),
// else with the call's status, and ext_authz_status when the service
// answered.
func finishCheckSpan(sp *tracing.CallSpan, ctx context.Context, resp *response) {
	if sp == nil {
		return
	}
	now := time.Now()
	if errors.Is(ctx.Err(), context.Canceled) && status.Code(resp.callErr) == codes.Canceled {
		sp.Cancel(now)
		return
	}
	if resp.callErr == nil {
		switch resp.status {
		case statusOK:
			sp.SetTag(tagStatus, tagStatusOK)
		case statusDenied:
			sp.SetTag(tagStatus, tagStatusDenied)
		default:
			sp.SetTag(tagStatus, tagStatusError)
		}
	}
	sp.Finish(resp.callErr, now)
}

// httpAnswer is what an HTTP service's check got, as the span of Envoy's
// asynchronous client records it.
type httpAnswer struct {
	// status is the answer's status: the service's, or the one of the
	// local reply Envoy's client would have made of a failure (504 on
	// the timeout, 503 when the service could not be reached); 0 when
	// the check was given up.
	status int
	// flags are the response flags of that local reply.
	flags string
	// address is the service host's, when a connection was made.
	address string
}

// failedAnswer is the answer Envoy's client makes of a check that got no
// response: its router's local reply, 504 with UT when the timeout
// expired, else 503 with UF (no connection) or UC (the connection ended
// before the answer).
func failedAnswer(err error, address string) httpAnswer {
	switch {
	case errors.Is(err, context.DeadlineExceeded):
		return httpAnswer{status: http.StatusGatewayTimeout, flags: "UT", address: address}
	case address == "":
		return httpAnswer{status: http.StatusServiceUnavailable, flags: "UF"}
	}
	return httpAnswer{status: http.StatusServiceUnavailable, flags: "UC", address: address}
}

// hostSeen records the address of the connection a check's request went
// out on (the last try's), for its span.
type hostSeen struct{ addr atomic.Pointer[string] }

// watch returns ctx with a client trace that records the connection's
// address.
func (h *hostSeen) watch(ctx context.Context) context.Context {
	return httptrace.WithClientTrace(ctx, &httptrace.ClientTrace{
		GotConn: func(i httptrace.GotConnInfo) {
			a := i.Conn.RemoteAddr().String()
			h.addr.Store(&a)
		},
	})
}

// address is the recorded address, "" when no connection was made.
func (h *hostSeen) address() string {
	if a := h.addr.Load(); a != nil {
		return *a
	}
	return ""
}

// httpSpanKey keys a check's HTTP span in its call's context.
type httpSpanKey struct{}

// withHTTPSpan gives the check's call the span whose context its request
// carries.
func withHTTPSpan(ctx context.Context, sp *tracing.HTTPCallSpan) context.Context {
	if sp == nil {
		return ctx
	}
	return context.WithValue(ctx, httpSpanKey{}, sp)
}

// httpSpanOf is the span withHTTPSpan gave ctx, nil when none.
func httpSpanOf(ctx context.Context) *tracing.HTTPCallSpan {
	sp, _ := ctx.Value(httpSpanKey{}).(*tracing.HTTPCallSpan)
	return sp
}

// httpCheckSpan starts the span of a check of a traced request with an
// HTTP service, as Envoy's HTTP client hands the request's span to its
// asynchronous client with the name "async <cluster> egress", keeping the
// parent's sampling: nil for an untraced request, a gRPC service, or a
// cluster that is not there (Envoy then sends nothing, and starts no
// span).
func httpCheckSpan(s httpfilter.Stream, in checkInput, start time.Time) *tracing.HTTPCallSpan {
	h, ok := in.client.(*httpClient)
	if !ok {
		return nil
	}
	parent := httpfilter.ActiveSpan(s)
	if parent == nil || h.svc.Cluster(h.cluster) == nil {
		return nil
	}
	return tracing.StartHTTPCallSpan(parent, in.emitClientSpan, "async "+h.cluster+" egress", h.cluster, start)
}

// finishHTTPCheckSpan ends an HTTP check's span once the call returned
// resp under ctx: cancelled when the request went away (its filter
// cancelled ctx); else tagged, when the service answered, with
// ext_authz_http_status (the status's reason phrase) and ext_authz_status
// (ok for a 200, unauthorized for any other answer), as Envoy's HTTP
// client does before its asynchronous client adds the upstream tags.
func finishHTTPCheckSpan(sp *tracing.HTTPCallSpan, ctx context.Context, resp *response) {
	if sp == nil {
		return
	}
	now := time.Now()
	a := resp.http
	r := tracing.HTTPCallResult{Status: a.status, Flags: a.flags, Address: a.address}
	if a.status == 0 || errors.Is(ctx.Err(), context.Canceled) {
		sp.Cancel(r, now)
		return
	}
	sp.SetTag(tagHTTPStatus, reasonPhrase(a.status))
	if a.status == http.StatusOK {
		sp.SetTag(tagStatus, tagStatusOK)
	} else {
		sp.SetTag(tagStatus, tagStatusDenied)
	}
	sp.Finish(r, now)
}

// tagHTTPStatus is the tag Envoy's HTTP authorization client sets to the
// answer's status, as its reason phrase.
const tagHTTPStatus = "ext_authz_http_status"

// reasonPhrase is a status's reason phrase as Envoy's
// CodeUtility::toString writes it: "Unknown" for a status it does not
// name.
func reasonPhrase(code int) string {
	if t := http.StatusText(code); t != "" {
		return t
	}
	return "Unknown"
}

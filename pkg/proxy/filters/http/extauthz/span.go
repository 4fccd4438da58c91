package extauthz

import (
	"context"
	"errors"
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
// nil for an untraced request or an HTTP service (whose calls Outrigger
// does not trace).
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

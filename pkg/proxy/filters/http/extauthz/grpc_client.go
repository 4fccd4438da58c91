package extauthz

import (
	"context"

	authv3 "github.com/envoyproxy/go-control-plane/envoy/service/auth/v3"
	"google.golang.org/grpc/codes"

	"github.com/outrigger-dev/outrigger/pkg/proxy/grpcservice"
)

// grpcClient calls envoy.service.auth.v3.Authorization/Check.
type grpcClient struct {
	ch     *grpcservice.Channel
	client authv3.AuthorizationClient
}

// newGRPCClient returns the client of an open channel.
func newGRPCClient(ch *grpcservice.Channel) *grpcClient {
	return &grpcClient{ch: ch, client: authv3.NewAuthorizationClient(ch.Conn())}
}

// check implements checker as Envoy's gRPC client reads a CheckResponse:
// an OK status allows, with ok_response's edits; an error_response is a
// failure with its status, headers and body; any other status denies,
// with denied_response's status (403 by default), headers and body. A
// call that fails is a failure.
func (g *grpcClient) check(ctx context.Context, req *authv3.CheckRequest, _ []string) *response {
	// The channel's initial metadata; the filter's context has the
	// timeout.
	ctx, cancel := g.ch.CallContext(ctx, true)
	defer cancel()
	resp, err := g.client.Check(ctx, req)
	if err != nil {
		return errorResponse(err.Error())
	}
	r := grpcAnswer(resp)
	// The deprecated OkHttpResponse.dynamic_metadata, when set, takes the
	// place of the response's own, as in Envoy.
	r.dynamicMetadata = resp.GetDynamicMetadata()
	//lint:ignore SA1019 Envoy still reads the deprecated field
	if md := resp.GetOkResponse().GetDynamicMetadata(); md != nil && r.status == statusOK {
		r.dynamicMetadata = md
	}
	return r
}

// grpcAnswer reads a CheckResponse's status and edits.
func grpcAnswer(resp *authv3.CheckResponse) *response {
	if codes.Code(resp.GetStatus().GetCode()) == codes.OK {
		r := &response{status: statusOK}
		if ok := resp.GetOkResponse(); ok != nil {
			r.requestHeaders = editsOf(ok.GetHeaders())
			r.headersToRemove = ok.GetHeadersToRemove()
			r.responseHeaders = editsOf(ok.GetResponseHeadersToAdd())
			for _, q := range ok.GetQueryParametersToSet() {
				r.queryToSet = append(r.queryToSet, [2]string{q.GetKey(), q.GetValue()})
			}
			r.queryToRemove = ok.GetQueryParametersToRemove()
		}
		return r
	}
	if e := resp.GetErrorResponse(); e != nil {
		return &response{
			status:       statusError,
			httpStatus:   int(e.GetStatus().GetCode()),
			body:         e.GetBody(),
			localHeaders: editsOf(e.GetHeaders()),
			reason:       "error_response",
		}
	}
	r := &response{status: statusDenied, httpStatus: 403}
	if d := resp.GetDeniedResponse(); d != nil {
		if code := int(d.GetStatus().GetCode()); code > 0 {
			r.httpStatus = code
		}
		r.body = d.GetBody()
		r.localHeaders = editsOf(d.GetHeaders())
	}
	return r
}

// Close implements checker.
func (g *grpcClient) Close() error { return g.ch.Close() }

package extauthz

import (
	"context"

	authv3 "github.com/envoyproxy/go-control-plane/envoy/service/auth/v3"

	"github.com/outrigger-dev/outrigger/pkg/proxy/authzservice"
)

// grpcClient calls envoy.service.auth.v3.Authorization/Check.
type grpcClient struct{ c *authzservice.Client }

// check implements checker as Envoy's gRPC client reads a CheckResponse:
// an OK status allows, with ok_response's edits; an error_response is a
// failure with its status, headers and body; any other status denies,
// with denied_response's status (403 by default), headers and body. A
// call that fails is a failure.
func (g *grpcClient) check(ctx context.Context, req *authv3.CheckRequest, _ []string) *response {
	// The filter's context has the timeout.
	resp, err := g.c.Check(ctx, req)
	if err != nil {
		r := errorResponse(err.Error())
		r.callErr = err
		return r
	}
	r := grpcAnswer(resp)
	r.dynamicMetadata = authzservice.DynamicMetadata(resp)
	return r
}

// grpcAnswer reads a CheckResponse's status and edits.
func grpcAnswer(resp *authv3.CheckResponse) *response {
	switch authzservice.Outcome(resp) {
	case authzservice.OK:
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
	case authzservice.Error:
		e := resp.GetErrorResponse()
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
func (g *grpcClient) Close() error { return g.c.Close() }

package httpconn

import (
	"errors"

	"github.com/outrigger-dev/outrigger/pkg/proxy/httpconn/http1"
	"github.com/outrigger-dev/outrigger/pkg/proxy/upstream"
)

// noteHTTP1Head counts in the cluster's stats what a final HTTP/1.1
// response head, or the failure to read one, says of its connection, as
// Envoy's HTTP/1 pool and codec count it: a close the upstream announced
// (upstream_cx_close_notify: "connection: close", an HTTP/1.0 response
// without keep-alive), or a response that broke the protocol
// (upstream_cx_protocol_error, see noteHTTP1Error).
func noteHTTP1Head(cs *upstream.ClusterStats, resp *http1.Response, err error) {
	switch {
	case err != nil:
		noteHTTP1Error(cs, err)
	case !resp.KeepAlive:
		cs.UpstreamCxCloseNotify().Inc()
	}
}

// noteHTTP1Error counts an upstream_cx_protocol_error when err, met
// reading a response, is the upstream's protocol error (a head or a body
// that does not parse), not a timeout or the connection's end.
func noteHTTP1Error(cs *upstream.ClusterStats, err error) {
	if err == nil {
		return
	}
	var pe *http1.Error
	if errors.As(err, &pe) {
		cs.UpstreamCxProtocolError().Inc()
	}
}

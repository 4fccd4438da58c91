package httpconn

import (
	"github.com/outrigger-dev/outrigger/pkg/proxy/grpcstatus"
	"github.com/outrigger-dev/outrigger/pkg/proxy/upstream"
)

// The results of an upstream attempt that outlier detection counts, as
// Envoy's router reports them; each is one nil check when the cluster has
// no outlier_detection. Every attempt reports: its connection, then its
// response head's status, or how it failed.

// outlierConnected: the attempt has its upstream connection (Envoy's
// onPoolReady reports LocalOriginConnectSuccess). s.host is set.
func (s *stream) outlierConnected() {
	if m := s.host.Outlier(); m != nil {
		m.PutResult(upstream.LocalOriginConnectSuccess, 0)
	}
}

// outlierResponse: the response head came; its status counts, a gRPC
// request's grpc-status (trailers-only) mapped to HTTP as Envoy's router
// does. s.host is set.
func (s *stream) outlierResponse() {
	if m := s.host.Outlier(); m != nil {
		s.putOutlierResponse(m)
	}
}

func (s *stream) putOutlierResponse(m upstream.OutlierMonitor) {
	code := s.status
	if s.grpcRequest() {
		if v, ok := s.respHeaders.Get("grpc-status"); ok {
			code = grpcstatus.ToHTTP(v)
		}
	}
	m.PutHTTPResponseCode(code)
	if m.DetectsDegraded() && s.respHeaders.Has("x-envoy-degraded") {
		m.PutDegraded()
	}
}

// outlierReset: the exchange broke off (reset, closed connection,
// protocol error), before or after the response head.
func (s *stream) outlierReset() {
	if m := s.outlierMonitor(); m != nil {
		m.PutResult(upstream.LocalOriginConnectFailed, 0)
	}
}

// outlierTimeout: the route timeout passed before the response head, a
// 504 for outlier detection.
func (s *stream) outlierTimeout() {
	if m := s.outlierMonitor(); m != nil {
		m.PutResult(upstream.LocalOriginTimeout, 504)
	}
}

func (s *stream) outlierMonitor() upstream.OutlierMonitor {
	if s.host == nil {
		return nil
	}
	return s.host.Outlier()
}

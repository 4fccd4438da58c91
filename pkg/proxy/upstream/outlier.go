package upstream

// OutlierResult is what the data path tells outlier detection about one
// exchange with a host besides an HTTP status: Envoy's Outlier::Result.
type OutlierResult uint8

// The results, as Envoy names them.
const (
	// LocalOriginConnectFailed: the connection could not be opened, or was
	// reset (locally detected).
	LocalOriginConnectFailed OutlierResult = iota
	// LocalOriginTimeout: connecting or the request timed out.
	LocalOriginTimeout
	// LocalOriginConnectSuccess: a request got its connection; an HTTP
	// exchange then reports its status.
	LocalOriginConnectSuccess
	// LocalOriginConnectSuccessFinal: a connection opened and nothing more
	// will be reported (the TCP proxy's).
	LocalOriginConnectSuccessFinal
	// ExtOriginRequestFailed: the upstream failed a non-HTTP transaction.
	ExtOriginRequestFailed
	// ExtOriginRequestSuccess: the upstream completed a non-HTTP
	// transaction.
	ExtOriginRequestSuccess
)

// OutlierMonitor receives one host's results for outlier detection; the
// outlier package implements it. The methods are safe for concurrent use
// and cheap: atomics, with the detector's lock taken only when a
// consecutive-failure threshold is reached.
type OutlierMonitor interface {
	// PutResult reports a result; code, when not 0, is the HTTP status it
	// stands for (a timeout answered 504).
	PutResult(r OutlierResult, code int)
	// PutHTTPResponseCode reports an upstream response's status (a gRPC
	// status already mapped to HTTP).
	PutHTTPResponseCode(code int)
	// DetectsDegraded reports whether responses with x-envoy-degraded
	// degrade the host (detect_degraded_hosts): only then is the header
	// looked for, and PutDegraded called when a response has it.
	DetectsDegraded() bool
	PutDegraded()
}

// Outlier returns the host's outlier-detection monitor, nil when its
// cluster has no outlier_detection: the data path's one nil check.
func (h *Host) Outlier() OutlierMonitor { return h.outlier }

// SetOutlier gives the host its monitor. It is called before the host is
// published to the load balancer (the field is then only read).
func (h *Host) SetOutlier(m OutlierMonitor) { h.outlier = m }

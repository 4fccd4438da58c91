package tcpproxy

import "github.com/outrigger-dev/outrigger/pkg/proxy/upstream"

// reportConnected tells h's outlier detection that the proxy's upstream
// connection opened, the last result a TCP proxy reports
// (LocalOriginConnectSuccessFinal, a success for the 5xx counters too
// unless origins are split), as Envoy's tcp_proxy does. Failures to
// connect are reported where connections are opened (the cluster's
// connect).
func reportConnected(h *upstream.Host) {
	if m := h.Outlier(); m != nil {
		m.PutResult(upstream.LocalOriginConnectSuccessFinal, 0)
	}
}

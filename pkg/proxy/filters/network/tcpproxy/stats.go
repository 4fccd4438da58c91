package tcpproxy

import "github.com/outrigger-dev/outrigger/pkg/proxy/stats"

// proxyStats are Envoy's TCP proxy stats, under tcp.<stat_prefix>.
type proxyStats struct {
	cxTotal        *stats.Counter
	cxNoRoute      *stats.Counter
	txBytesTotal   *stats.Counter
	txBuffered     *stats.Gauge
	rxBytesTotal   *stats.Counter
	rxBuffered     *stats.Gauge
	pausedReading  *stats.Counter
	resumedReading *stats.Counter
	idleTimeout    *stats.Counter
	maxDuration    *stats.Counter
	flushTotal     *stats.Counter
	flushActive    *stats.Gauge
	drainClose     *stats.Counter
	// earlyData counts the reads of downstream bytes made before the
	// upstream was connected (max_early_data_bytes).
	earlyData *stats.Counter
}

// newProxyStats creates every stat up front, as Envoy does, so that they
// show (as zeros) before the first connection.
func newProxyStats(st *stats.Store, prefix string) *proxyStats {
	sc := st.Scope("tcp." + prefix + ".")
	return &proxyStats{
		cxTotal:        sc.Counter("downstream_cx_total"),
		cxNoRoute:      sc.Counter("downstream_cx_no_route"),
		txBytesTotal:   sc.Counter("downstream_cx_tx_bytes_total"),
		txBuffered:     sc.Gauge("downstream_cx_tx_bytes_buffered"),
		rxBytesTotal:   sc.Counter("downstream_cx_rx_bytes_total"),
		rxBuffered:     sc.Gauge("downstream_cx_rx_bytes_buffered"),
		pausedReading:  sc.Counter("downstream_flow_control_paused_reading_total"),
		resumedReading: sc.Counter("downstream_flow_control_resumed_reading_total"),
		idleTimeout:    sc.Counter("idle_timeout"),
		maxDuration:    sc.Counter("max_downstream_connection_duration"),
		flushTotal:     sc.Counter("upstream_flush_total"),
		flushActive:    sc.Gauge("upstream_flush_active"),
		drainClose:     sc.Counter("downstream_cx_drain_close"),
		earlyData:      sc.Counter("early_data_received_count_total"),
	}
}

package udpproxy

import "github.com/outrigger-dev/outrigger/pkg/proxy/stats"

// proxyStats are Envoy's UDP proxy downstream stats, under
// udp.<stat_prefix>.
type proxyStats struct {
	noRoute      *stats.Counter
	rxBytes      *stats.Counter
	rxDatagrams  *stats.Counter
	rxErrors     *stats.Counter
	sessTotal    *stats.Counter
	txBytes      *stats.Counter
	txDatagrams  *stats.Counter
	txErrors     *stats.Counter
	idleTimeout  *stats.Counter
	sessActive   *stats.Gauge
	filterConfig *stats.Counter
}

// newProxyStats creates every stat up front, as Envoy does, so that they
// show (as zeros) before the first datagram.
func newProxyStats(st *stats.Store, prefix string) *proxyStats {
	sc := st.Scope("udp." + prefix + ".")
	return &proxyStats{
		noRoute:     sc.Counter("downstream_sess_no_route"),
		rxBytes:     sc.Counter("downstream_sess_rx_bytes"),
		rxDatagrams: sc.Counter("downstream_sess_rx_datagrams"),
		rxErrors:    sc.Counter("downstream_sess_rx_errors"),
		sessTotal:   sc.Counter("downstream_sess_total"),
		txBytes:     sc.Counter("downstream_sess_tx_bytes"),
		txDatagrams: sc.Counter("downstream_sess_tx_datagrams"),
		txErrors:    sc.Counter("downstream_sess_tx_errors"),
		idleTimeout: sc.Counter("idle_timeout"),
		sessActive:  sc.Gauge("downstream_sess_active"),
		// Counted by session filters, which Outrigger refuses: always 0.
		filterConfig: sc.Counter("session_filter_config_missing"),
	}
}

// clusterStats are the cluster stats the UDP proxy moves: its own under
// cluster.<name>.udp. and the standard byte counters.
type clusterStats struct {
	rxDatagrams        *stats.Counter
	rxDatagramsDropped *stats.Counter
	rxErrors           *stats.Counter
	txDatagrams        *stats.Counter
	txErrors           *stats.Counter
	rxBytesTotal       *stats.Counter
	txBytesTotal       *stats.Counter
	// The tunnels' (tunneling_config): udp.sess_tunnel_*, and the
	// cluster's upstream_cx_connect_attempts_exceeded and
	// upstream_rq_retry.
	tunnelSuccess        *stats.Counter
	tunnelFailure        *stats.Counter
	tunnelBufferOverflow *stats.Counter
	attemptsExceeded     *stats.Counter
	rqRetry              *stats.Counter
}

func newClusterStats(st *stats.Store, observabilityName string) *clusterStats {
	sc := st.Scope("cluster." + observabilityName + ".")
	return &clusterStats{
		rxDatagrams:        sc.Counter("udp.sess_rx_datagrams"),
		rxDatagramsDropped: sc.Counter("udp.sess_rx_datagrams_dropped"),
		rxErrors:           sc.Counter("udp.sess_rx_errors"),
		txDatagrams:        sc.Counter("udp.sess_tx_datagrams"),
		txErrors:           sc.Counter("udp.sess_tx_errors"),
		rxBytesTotal:       sc.Counter("upstream_cx_rx_bytes_total"),
		txBytesTotal:       sc.Counter("upstream_cx_tx_bytes_total"),
		// Envoy's udp.* stats include the tunnels' in any case.
		tunnelSuccess:        sc.Counter("udp.sess_tunnel_success"),
		tunnelFailure:        sc.Counter("udp.sess_tunnel_failure"),
		tunnelBufferOverflow: sc.Counter("udp.sess_tunnel_buffer_overflow"),
		attemptsExceeded:     sc.Counter("upstream_cx_connect_attempts_exceeded"),
		rqRetry:              sc.Counter("upstream_rq_retry"),
	}
}

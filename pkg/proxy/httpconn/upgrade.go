package httpconn

import (
	"strings"

	"github.com/outrigger-dev/outrigger/pkg/proxy/httpconn/http1"
	"github.com/outrigger-dev/outrigger/pkg/proxy/router"
	"github.com/outrigger-dev/outrigger/pkg/proxy/stats"
)

// upgradeState is what a stream knows of the upgrade it asks for: an
// HTTP/1.1 Upgrade (Connection: upgrade with an Upgrade header) or a
// CONNECT, which Envoy treats as the upgrade type "CONNECT".
type upgradeState struct {
	// typ is the upgrade type as the request names it ("websocket",
	// "CONNECT"); empty when the request asks for none.
	typ string
	// connect is set for CONNECT requests.
	connect bool
	// extended is set for an HTTP/2 extended CONNECT (RFC 8441): its
	// upstream's 101 goes to the client as a 200.
	extended bool
	// connectUDP is set for a CONNECT-UDP request (RFC 9298): the
	// upgrade type connect-udp, over HTTP/1.1 or HTTP/2.
	connectUDP bool
	// headOnly is set when an HTTP/2 upgrade's HEADERS ended the stream:
	// no payload can follow.
	headOnly bool
	// connection and value are the request's Connection and Upgrade
	// header values, forwarded verbatim with the upgrade, as Envoy does.
	connection string
	value      string
	// admitted: the upgrade passed the configuration's checks and is
	// counted in downstream_cx_upgrades_active until the stream ends.
	admitted bool
	// tunnel: the response being sent opens a tunnel (101, or 2xx to a
	// CONNECT), so its head carries no framing and no Connection: close.
	tunnel bool
}

// upgradeStats are Envoy's upgrade stats of a connection manager.
type upgradeStats struct {
	// cxUpgradesTotal and cxUpgradesActive count the streams whose
	// upgrade the configuration admitted (Envoy counts them when the
	// upgrade filter chain is created, before the upstream answers).
	cxUpgradesTotal  *stats.Counter
	cxUpgradesActive *stats.Gauge
	// rqWsOnNonWsRoute counts upgrades refused with 403.
	rqWsOnNonWsRoute *stats.Counter
}

// newUpgradeStats creates the upgrade stats in sc, the
// "http.<stat_prefix>." scope.
func newUpgradeStats(sc stats.Scope) *upgradeStats {
	return &upgradeStats{
		cxUpgradesTotal:  sc.Counter("downstream_cx_upgrades_total"),
		cxUpgradesActive: sc.Gauge("downstream_cx_upgrades_active"),
		rqWsOnNonWsRoute: sc.Counter("downstream_rq_ws_on_non_ws_route"),
	}
}

// detectUpgradeHTTP1 records the upgrade an HTTP/1 request asks for. An
// Upgrade header counts only with the upgrade token in Connection (Envoy
// drops it otherwise), and h2c upgrades, and those ignore_http_11_upgrade
// matches, are ignored as Envoy ignores them: the request is served as an
// ordinary one, without its Upgrade header and Connection (hop-by-hop
// fields, never forwarded).
func (s *stream) detectUpgradeHTTP1(req *http1.Request) {
	if string(req.Method) == "CONNECT" {
		s.upg.typ, s.upg.connect = router.UpgradeConnect, true
		return
	}
	if !nominated([]byte("upgrade"), req.ConnectionTokens) {
		return
	}
	var connection, value []byte
	for i := range req.Headers {
		h := &req.Headers[i]
		switch string(h.Name) {
		case "connection":
			connection = h.Value
		case "upgrade":
			value = h.Value
		}
	}
	if len(value) == 0 || http1.EqualFold(value, "h2c") {
		return
	}
	if ig := s.m.cfg.ignoreUpgrade; ig != nil && ig.Matches(view(value)) {
		return
	}
	s.upg.typ, s.upg.value, s.upg.connection = view(value), view(value), view(connection)
	s.upg.connectUDP = strings.EqualFold(s.upg.typ, router.UpgradeConnectUDP)
}

// admitUpgrade decides, once the route is known and before any filter
// runs, whether the upgrade the request asks for is allowed, as Envoy's
// createUpgradeFilterChain does: a route's upgrade_configs entry disables
// it or enables it whatever the connection manager says; without one the
// connection manager's enabled entry decides. A refused upgrade is
// answered 403 (details upgrade_failed) and closes the connection, which
// may carry upgrade payload. A request no route matches goes on, to be
// answered 404.
func (s *stream) admitUpgrade() bool {
	route := s.Route()
	if route == nil {
		return true
	}
	routeEnabled := false
	if route.Direct == nil && route.Redirect == nil {
		enabled, set := route.Upgrade(s.upg.typ)
		if set && !enabled {
			return s.refuseUpgrade()
		}
		routeEnabled = set
	}
	if enabled := s.m.cfg.upgrades[strings.ToLower(s.upg.typ)]; !enabled && !routeEnabled {
		return s.refuseUpgrade()
	}
	s.upg.admitted = true
	us := s.m.stats.upgrades
	us.cxUpgradesTotal.Inc()
	us.cxUpgradesActive.Inc()
	if s.conn != nil {
		// Whatever the answer, the HTTP/1 connection carried an
		// upgrade request: what follows it may be upgrade payload,
		// never another request.
		s.closeConn = true
	}
	return true
}

// refuseUpgrade answers a refused upgrade.
func (s *stream) refuseUpgrade() bool {
	s.m.stats.upgrades.rqWsOnNonWsRoute.Inc()
	// An HTTP/1 connection closes (what follows may be upgrade
	// payload); an HTTP/2 one carries on.
	s.closeConn = s.conn != nil
	s.localReply(403, "", 0, "upgrade_failed")
	return false
}

// endUpgrade accounts for the end of an admitted upgrade.
func (s *stream) endUpgrade() {
	if s.upg.admitted {
		s.m.stats.upgrades.cxUpgradesActive.Dec()
		s.upg.admitted = false
	}
}

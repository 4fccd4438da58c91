package httpconn

import (
	"net"
	"net/netip"
	"time"

	datav3 "github.com/envoyproxy/go-control-plane/envoy/data/accesslog/v3"

	"github.com/outrigger-dev/outrigger/pkg/proxy/accesslog"
	"github.com/outrigger-dev/outrigger/pkg/proxy/httpconn/http1"
	"github.com/outrigger-dev/outrigger/pkg/proxy/router"
	"github.com/outrigger-dev/outrigger/pkg/proxy/upstream"
	"github.com/outrigger-dev/outrigger/pkg/proxy/upstreamproxyprotocol"
)

// opensTunnel reports whether the upstream's response head, just read,
// accepts the upgrade the request asked for: 101 Switching Protocols for
// an Upgrade, any 2xx for a forwarded CONNECT.
func (s *stream) opensTunnel(status int) bool {
	switch {
	case s.upg.typ == "":
		return false
	case s.upg.connect:
		return status >= 200 && status < 300
	default:
		return status == 101
	}
}

// appendUpgradeHeaders adds an Upgrade request's Connection and Upgrade
// headers to its head as it goes upstream, verbatim, as Envoy forwards
// them.
func (s *stream) appendUpgradeHeaders(b []byte) []byte {
	if s.upg.typ == "" || s.upg.connect {
		return b
	}
	b = http1.AppendHeaderString(b, "connection", s.upg.connection)
	return http1.AppendHeaderString(b, "upgrade", s.upg.value)
}

// tunnelHTTP1 relays the upstream's acceptance of an upgrade (the head
// in s.up.resp, read at sent+) downstream and then the bytes of both
// ways until the tunnel ends. The route timeout stops at the head, as in
// Envoy; the tunnel runs under the stream idle timeout.
func (s *stream) tunnelHTTP1(cl UpstreamCluster, uc *upstream.Conn, sent time.Time) {
	now := time.Now()
	s.tLast = now
	s.entry.FirstUpstreamByte = s.m.stamp(now)
	resp := &s.up.resp
	s.status = resp.Status
	s.details = "via_upstream"
	s.copyResponseHeaders(s.up)
	s.outlierResponse()
	if !s.upg.connect {
		// A 101 keeps its Connection and Upgrade headers, as Envoy
		// keeps them on an upgrade's response.
		for i := range resp.Headers {
			h := &resp.Headers[i]
			if n := string(h.Name); n == "connection" || n == "upgrade" {
				s.respHeaders.Add(view(h.Name), view(h.Value))
			}
		}
	}
	if s.upg.extended {
		// The HTTP/2 form of the switch (RFC 8441 §5), as Envoy
		// translates it.
		s.status = 200
	}
	s.setServiceTime(now.Sub(sent))
	s.mutateUpgradeResponse()
	cs := cl.Stats()
	s.chargeCode(cs, resp.Status)
	s.chargeTime(cs, now.Sub(sent))
	_ = uc.SetDeadline(time.Time{})
	if !s.openTunnel() {
		return
	}
	s.runTunnel(tunnelEnd{r: uc.R, w: uc.Conn, conn: uc.Conn})
}

// connectTCP terminates a CONNECT at the proxy (the route's
// connect_config), or a POST with allow_post: it opens a TCP connection to
// host, answers 200 once it is up, as Envoy's TCP upstream does, and
// relays the payload both ways. A POST's payload is its body, and the TCP
// bytes go back as the response body: chunked to an HTTP/1.1 client, the
// body's end (and the upstream's half-close) closing each way.
func (s *stream) connectTCP(cl UpstreamCluster, host *upstream.Host, cc *router.ConnectConfig) {
	ctx, cancel := s.connectContext()
	conn, err := cl.ConnectHost(ctx, host)
	cancel()
	if err == nil && cc.ProxyProtocol {
		err = s.writeConnectProxyHeader(conn, cc.ProxyProtocolV2)
	}
	if err != nil {
		s.connectFailed(cl, err)
		return
	}
	defer conn.Close()
	s.outlierConnected()
	s.terminatedUp(cl, conn)
	s.outlierResponse()
	s.mutateUpgradeResponse()
	s.chargeCode(cl.Stats(), 200)
	if !s.upg.connect {
		s.postTunnel(tunnelEnd{r: conn, w: conn, conn: conn})
		return
	}
	if !s.openTunnel() {
		return
	}
	s.runTunnel(tunnelEnd{r: conn, w: conn, conn: conn})
}

// terminatedUp records that a CONNECT (or CONNECT-UDP) terminated at the
// proxy has its upstream socket conn: the upstream timings, its local
// address (and TLS) for the access log, the pool-ready log entry, and the
// 200 the client gets once the tunnel opens.
func (s *stream) terminatedUp(cl UpstreamCluster, conn net.Conn) {
	s.startUpstreamDuration(cl)
	s.upLocalBuf = appendAddr(s.upLocalBuf[:0], conn.LocalAddr())
	s.entry.UpstreamLocalAddress = view(s.upLocalBuf)
	s.entry.UpstreamTLS = accesslog.UpstreamTLS(conn)
	if s.m.uplog != nil {
		s.poolReadyLog()
	}
	now := time.Now()
	s.tLast = now
	s.entry.FirstUpstreamByte = s.m.stamp(now)
	s.status = 200
	s.details = "via_upstream"
}

// writeConnectProxyHeader starts the payload of a terminated CONNECT with
// the PROXY header connect_config's proxy_protocol_config asks for, as
// Envoy's TCP upstream does: the downstream connection's addresses (those
// a proxy_protocol listener filter restored), v2 when v2 is set. conn is
// closed when the write fails.
func (s *stream) writeConnectProxyHeader(conn net.Conn, v2 bool) error {
	src, _ := netip.ParseAddrPort(s.remote)
	dst, _ := netip.ParseAddrPort(s.local)
	if _, err := conn.Write(upstreamproxyprotocol.AddressHeader(src, dst, v2)); err != nil {
		_ = conn.Close()
		return err
	}
	return nil
}

// postTunnel relays a POST terminated at the proxy (allow_post): a 200
// head, then the request body upstream and the upstream's bytes as the
// response body. The HTTP/1 connection closes afterwards.
func (s *stream) postTunnel(up tunnelEnd) {
	if s.conn != nil {
		s.closeConn = true
	}
	if s.expect100 {
		s.expect100 = false
		if err := s.down.continue100(); err != nil {
			s.downstreamFailed()
			return
		}
	}
	if err := s.sendHead(-1, true); err != nil {
		s.downstreamFailed()
		return
	}
	if err := s.down.flush(); err != nil {
		s.downstreamFailed()
		return
	}
	s.relay(up)
}

// openTunnel sends the head of a response that opens a tunnel: no body
// framing, no Connection: close (HTTP/1), no END_STREAM (HTTP/2). It
// reports whether the client took it.
func (s *stream) openTunnel() bool {
	s.upg.tunnel = true
	if err := s.sendHead(-1, s.conn == nil); err != nil {
		s.downstreamFailed()
		return false
	}
	if err := s.down.flush(); err != nil {
		s.downstreamFailed()
		return false
	}
	if s.m.cfg.logOpts.onTunnel {
		s.logNow(datav3.AccessLogType_DownstreamTunnelSuccessfullyEstablished)
	}
	return true
}

// runTunnel relays bytes between the client and up until the tunnel
// ends, and accounts for them. An HTTP/1 connection closes afterwards, at
// once: it carried no HTTP since the head. An HTTP/2 stream ends, its
// connection carries on.
func (s *stream) runTunnel(up tunnelEnd) {
	var down tunnelEnd
	c := s.conn
	if c != nil {
		c.rd.forget()
		c.wd.forget()
		down = tunnelEnd{r: c.br, w: c.cc, conn: c.nc}
	} else {
		side := &h2TunnelSide{st: s.down.(*h2Stream)}
		down = tunnelEnd{r: side, w: side, conn: side}
	}
	s.runTunnelWith(down, up)
}

// relay is runTunnel for a POST tunnel, whose downstream side is the
// request and response bodies, framed.
func (s *stream) relay(up tunnelEnd) {
	if s.conn == nil {
		side := &h2TunnelSide{st: s.down.(*h2Stream)}
		s.runTunnelWith(tunnelEnd{r: side, w: side, conn: side}, up)
		return
	}
	c := s.conn
	c.rd.forget()
	c.wd.forget()
	side := &h1BodySide{s: s}
	s.runTunnelWith(tunnelEnd{r: side, w: side, conn: side}, up)
}

// runTunnelWith runs a tunnel between down and up and accounts for it.
func (s *stream) runTunnelWith(down, up tunnelEnd) {
	c := s.conn
	// The tunnel's hard limit is the request timeout (Envoy disarms it
	// only at the request's end, which a tunnel's is) or the stream's
	// maximum durations.
	hard := earliest(after(s.t0, s.m.cfg.requestTimeout), s.durationLimit())
	t := &tunnel{idle: s.idleTimeout(), hard: hard, down: down, up: up}
	if s.plogArmed {
		s.logSent()
		s.logRecv()
		t.recvd, t.sentd = &s.plog.recv, &s.plog.sent
	}
	recv, sent := t.run()
	s.bytesRecv += recv
	s.bytesSent += sent
	s.tLast = time.Now()
	switch {
	case t.hardExpired.Load():
		s.tunnelHardLimit(s.tLast)
	case t.idled.Load():
		s.m.stats.rqIdleTimeout.Inc()
		s.flags |= accesslog.StreamIdleTimeout
		s.details = "stream_idle_timeout"
	}
	if c != nil {
		s.closeConn = true
		// Nothing is left to send and the client is not waited for.
		c.aborted = true
	}
}

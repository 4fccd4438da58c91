package httpconn

import (
	"errors"
	"net"
	"net/netip"
	"net/url"
	"strings"
	"syscall"
	"time"

	"github.com/outrigger-dev/outrigger/pkg/proxy/capsule"
	"github.com/outrigger-dev/outrigger/pkg/proxy/upstream"
)

// connectUDPPrefix starts the path of RFC 9298's default URI template,
// /.well-known/masque/udp/{target_host}/{target_port}/.
const connectUDPPrefix = "/.well-known/masque/udp/"

// maxUDPPayload is the largest UDP payload a terminated CONNECT-UDP
// reads from its host.
const maxUDPPayload = 65535

// connectUDPTarget reads the target of a CONNECT-UDP request from its
// path, as Envoy's rewriteAuthorityForConnectUdp does: the default URI
// template only, its characters printable ASCII, host and port not
// empty, percent-decoded; an IPv6 host gets its brackets. ok is false for
// a path Envoy refuses, a host with an IPv6 zone (a '%' once decoded)
// among them.
func connectUDPTarget(path string) (authority string, ok bool) {
	for i := 0; i < len(path); i++ {
		if c := path[i]; c < 0x21 || c > 0x7e {
			return "", false
		}
	}
	rest, found := strings.CutPrefix(path, connectUDPPrefix)
	if !found {
		return "", false
	}
	parts := strings.Split(rest, "/")
	if len(parts) != 3 || parts[0] == "" || parts[1] == "" || parts[2] != "" {
		return "", false
	}
	host, err := url.PathUnescape(parts[0])
	if err != nil || strings.Contains(host, "%") {
		return "", false
	}
	port, err := url.PathUnescape(parts[1])
	if err != nil {
		return "", false
	}
	if a, err := netip.ParseAddr(host); err == nil && a.Is6() {
		host = "[" + host + "]"
	}
	return host + ":" + port, true
}

// rewriteConnectUDPAuthority makes a CONNECT-UDP request's target its
// :authority, before its route is matched, as Envoy's connection manager
// does for every CONNECT-UDP request: routes match the target host and
// port, and a forwarded request carries them. A path outside the URI
// template is answered 404.
func (s *stream) rewriteConnectUDPAuthority() bool {
	authority, ok := connectUDPTarget(s.path)
	if !ok {
		s.localReply(404, "", 0, "invalid_path")
		return false
	}
	s.SetAuthority(authority)
	return true
}

// connectUDP terminates a CONNECT-UDP request at the proxy (a route with
// connect_config), as Envoy's UDP upstream (envoy.upstreams.http.udp)
// does: a UDP socket connected to host, a 200 with Capsule-Protocol: ?1
// (101 Switching Protocols to an HTTP/1.1 client), then the DATAGRAM
// capsules of the request's payload go to the host as datagrams and the
// host's datagrams come back as DATAGRAM capsules, until the stream ends
// (its idle timeout, a reset, a capsule that cannot be parsed).
func (s *stream) connectUDP(cl UpstreamCluster, host *upstream.Host) {
	if s.upg.headOnly {
		// Nothing can follow the request: Envoy's UDP upstream answers
		// 400, without Capsule-Protocol, and resets.
		s.chargeCode(cl.Stats(), 400)
		s.localReply(400, "", 0, "via_upstream")
		return
	}
	conn, err := dialUDPHost(host)
	if err != nil {
		s.connectFailed(cl, err)
		return
	}
	defer conn.Close()
	s.terminatedUp(cl, conn)
	if s.conn != nil {
		// RFC 9298 section 3.3: an HTTP/1.1 client is switched to the
		// protocol it asked for.
		s.status = 101
		s.respHeaders.Add("connection", "upgrade")
		s.respHeaders.Add("upgrade", "connect-udp")
	}
	s.respHeaders.Add("capsule-protocol", "?1")
	s.mutateUpgradeResponse()
	s.chargeCode(cl.Stats(), 200)
	if !s.openTunnel() {
		return
	}
	// An HTTP/1.1 client's end of stream is its connection's end, which
	// resets the stream in Envoy; an HTTP/2 client's END_STREAM leaves
	// the host's datagrams flowing.
	side := &udpTunnelSide{conn: conn, buf: make([]byte, maxUDPPayload+1), endWithClient: s.conn != nil}
	s.runTunnel(tunnelEnd{r: side, w: side, conn: side})
}

// dialUDPHost opens a UDP socket connected to host: the kernel then only
// passes on the host's datagrams.
func dialUDPHost(host *upstream.Host) (*net.UDPConn, error) {
	ap, err := netip.ParseAddrPort(host.Address)
	if err != nil {
		return nil, err
	}
	return net.DialUDP("udp", nil, net.UDPAddrFromAddrPort(ap))
}

// udpTunnelSide is a terminated CONNECT-UDP's host as one side of a
// tunnel: bytes written are the client's capsules, parsed and sent as
// datagrams; bytes read are the host's datagrams, each as a DATAGRAM
// capsule.
type udpTunnelSide struct {
	conn *net.UDPConn
	// buf reads one datagram, one byte more than the largest payload
	// to tell a truncated one.
	buf []byte
	// capsule holds the capsule of the last datagram, rest what Read
	// did not return of it yet.
	capsule, rest []byte
	parser        capsule.Parser
	// endWithClient: the client's end of stream ends the tunnel.
	endWithClient bool
}

// Read implements io.Reader: the next datagram of the host, as a
// DATAGRAM capsule, in as many reads as p needs.
func (u *udpTunnelSide) Read(p []byte) (int, error) {
	for len(u.rest) == 0 {
		n, err := u.conn.Read(u.buf)
		switch {
		case err == nil && n > maxUDPPayload:
			// Truncated: dropped, as Envoy drops one too large.
			continue
		case err == nil:
			u.capsule = capsule.AppendDatagram(u.capsule[:0], u.buf[:n])
			u.rest = u.capsule
		case errors.Is(err, syscall.ECONNREFUSED):
			// An ICMP error for an earlier datagram (the host's port
			// is closed): Envoy goes on reading.
			continue
		default:
			return 0, err
		}
	}
	n := copy(p, u.rest)
	u.rest = u.rest[n:]
	return n, nil
}

// Write implements io.Writer: the client's bytes, parsed into capsules,
// their datagrams sent to the host. A capsule that cannot be parsed
// fails the write, which ends the tunnel (Envoy resets the stream).
func (u *udpTunnelSide) Write(p []byte) (int, error) {
	ds, err := u.parser.Parse(p)
	for _, d := range ds {
		// As Envoy, a datagram the host cannot take is lost; the
		// tunnel goes on.
		_, _ = u.conn.Write(d)
	}
	if err != nil {
		return 0, err
	}
	return len(p), nil
}

// CloseWrite is the client's end of stream: a capsule left incomplete is
// a parse failure, which ends the tunnel, as does the end of an HTTP/1.1
// client; otherwise the host's datagrams still come back, as UDP has no
// end to send it.
func (u *udpTunnelSide) CloseWrite() error {
	if u.endWithClient || u.parser.Buffered() > 0 {
		return u.conn.Close()
	}
	return nil
}

// SetReadDeadline implements tunnelConn.
func (u *udpTunnelSide) SetReadDeadline(t time.Time) error { return u.conn.SetReadDeadline(t) }

// SetWriteDeadline implements tunnelConn.
func (u *udpTunnelSide) SetWriteDeadline(t time.Time) error { return u.conn.SetWriteDeadline(t) }

// Close implements tunnelConn.
func (u *udpTunnelSide) Close() error { return u.conn.Close() }

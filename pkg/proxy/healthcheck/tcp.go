package healthcheck

import (
	"context"
	"net"
	"time"

	"github.com/outrigger-dev/outrigger/pkg/proxy/upstream"
	"github.com/outrigger-dev/outrigger/pkg/proxy/upstreamproxyprotocol"
)

// tcpReadLimit bounds what a TCP check reads while it looks for the
// receive payloads.
const tcpReadLimit = 64 << 10

// tcpProber runs TCP checks: connect, write send, read until the receive
// payloads all came in order. Without receive, connecting is the check.
type tcpProber struct {
	c    *Checker
	addr string
	host *upstream.Host
	conn *checkConn
	buf  []byte
}

func (p *tcpProber) probe(ctx context.Context, deadline time.Time) result {
	cfg := p.c.cfg.tcp
	if p.conn == nil || len(cfg.receive) == 0 {
		// A connect-only check proves the host accepts connections: it
		// connects every time.
		p.close()
		conn, err := p.c.dialCheck(ctx, deadline, p.host, p.addr, p.c.cfg.ALPN)
		if err != nil {
			return result{outcome: outcomeNetwork}
		}
		p.conn = conn
	}
	_ = p.conn.SetDeadline(deadline)
	r := p.exchange(p.conn)
	if r.outcome != outcomeSuccess || !p.c.cfg.ReuseConnection || len(cfg.receive) == 0 {
		p.close()
	}
	return r
}

// exchange writes the PROXY header and send, and reads until the receive payloads match.
func (p *tcpProber) exchange(conn net.Conn) result {
	cfg := p.c.cfg.tcp
	send := cfg.send
	if cfg.pp {
		// As Envoy's checker does, every check writes the header ahead of
		// send, a reused connection's included.
		send = append(upstreamproxyprotocol.OwnHeader(conn, cfg.ppV2), cfg.send...)
	}
	if len(send) > 0 {
		if _, err := conn.Write(send); err != nil {
			return result{outcome: outcomeNetwork}
		}
	}
	if len(cfg.receive) == 0 {
		return result{outcome: outcomeSuccess}
	}
	p.buf = p.buf[:0]
	chunk := make([]byte, 4096)
	for len(p.buf) < tcpReadLimit {
		n, err := conn.Read(chunk)
		p.buf = append(p.buf, chunk[:n]...)
		if matchSegments(cfg.receive, p.buf) {
			return result{outcome: outcomeSuccess}
		}
		if err != nil {
			return result{outcome: outcomeNetwork}
		}
	}
	// The answer never matched within the bound.
	return result{outcome: outcomeFailed}
}

func (p *tcpProber) close() {
	p.conn.close()
	p.conn = nil
}

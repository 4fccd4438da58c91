package dns

import (
	"context"
	"encoding/binary"
	"errors"
	"io"
	"net"
	"os"
	"strings"
	"sync"
	"syscall"
	"time"

	mdns "github.com/miekg/dns"
)

// maxMessage is the largest DNS message over UDP or TCP (a 16-bit length).
const maxMessage = 65535

// errBadResponse: the server answered our query (same ID) with a message
// that does not parse, or with another question.
var errBadResponse = errors.New("malformed DNS response")

// errTimeout is an attempt that got no answer within the query timeout.
var errTimeout = timeoutError{}

type timeoutError struct{}

func (timeoutError) Error() string   { return "DNS query timed out" }
func (timeoutError) Timeout() bool   { return true }
func (timeoutError) Temporary() bool { return true }

// exchange sends one query to server and returns its answer, within the
// query timeout: over UDP (then TCP when the answer is truncated), or
// over TCP only. Over UDP, datagrams that are not an answer to this query
// (another ID, another question, too short to have a header) are ignored,
// as c-ares ignores them, so a stray or spoofed packet cannot end the
// attempt.
func (c *Cares) exchange(ctx context.Context, server string, q *mdns.Msg) (*mdns.Msg, error) {
	packed, err := q.Pack()
	if err != nil {
		return nil, err
	}
	if !c.tcp {
		resp, err := c.exchangeUDP(ctx, server, q, packed)
		if err != nil || !resp.Truncated {
			return resp, err
		}
	}
	return c.exchangeTCP(ctx, server, q, packed)
}

// withDeadline applies the query timeout to conn and ends the attempt at
// once when ctx ends.
func (c *Cares) withDeadline(ctx context.Context, conn net.Conn) (stop func() bool) {
	_ = conn.SetDeadline(time.Now().Add(c.timeout))
	return context.AfterFunc(ctx, func() { _ = conn.SetDeadline(time.Unix(1, 0)) })
}

func (c *Cares) exchangeUDP(ctx context.Context, server string, q *mdns.Msg, packed []byte) (*mdns.Msg, error) {
	d := net.Dialer{Timeout: c.timeout}
	conn, err := d.DialContext(ctx, "udp", server)
	if err != nil {
		return nil, err
	}
	defer conn.Close()
	defer c.withDeadline(ctx, conn)()
	if _, err := conn.Write(packed); err != nil {
		return nil, classify(err)
	}
	bp := udpBuffers.Get().(*[]byte)
	defer udpBuffers.Put(bp)
	buf := *bp
	for {
		n, err := conn.Read(buf)
		if err != nil {
			return nil, classify(err)
		}
		resp, err := parseAnswer(buf[:n], q)
		if err == errIgnore {
			continue
		}
		return resp, err
	}
}

func (c *Cares) exchangeTCP(ctx context.Context, server string, q *mdns.Msg, packed []byte) (*mdns.Msg, error) {
	d := net.Dialer{Timeout: c.timeout}
	conn, err := d.DialContext(ctx, "tcp", server)
	if err != nil {
		return nil, classify(err)
	}
	defer conn.Close()
	defer c.withDeadline(ctx, conn)()
	frame := make([]byte, 2+len(packed))
	binary.BigEndian.PutUint16(frame, uint16(len(packed)))
	copy(frame[2:], packed)
	if _, err := conn.Write(frame); err != nil {
		return nil, classify(err)
	}
	var hdr [2]byte
	if _, err := io.ReadFull(conn, hdr[:]); err != nil {
		return nil, classifyTCP(err)
	}
	body := make([]byte, binary.BigEndian.Uint16(hdr[:]))
	if _, err := io.ReadFull(conn, body); err != nil {
		return nil, classifyTCP(err)
	}
	resp, err := parseAnswer(body, q)
	if err == errIgnore {
		// On a connection of our own, anything but the answer is garbage.
		return nil, errBadResponse
	}
	return resp, err
}

// udpBuffers recycle the read buffers of UDP attempts: a cluster with many
// names would otherwise allocate 64 KiB per query.
var udpBuffers = sync.Pool{New: func() any {
	b := make([]byte, maxMessage)
	return &b
}}

// errIgnore marks a datagram that is not an answer to the query.
var errIgnore = errors.New("not an answer to this query")

// parseAnswer decodes a response to q. A message too short for a header,
// or with another ID, is errIgnore; one with the right ID that does not
// decode, or that answers another question, is errBadResponse.
func parseAnswer(b []byte, q *mdns.Msg) (*mdns.Msg, error) {
	if len(b) < 12 || binary.BigEndian.Uint16(b) != q.Id {
		return nil, errIgnore
	}
	resp := new(mdns.Msg)
	if err := resp.Unpack(b); err != nil {
		return nil, errBadResponse
	}
	if !resp.Response {
		return nil, errIgnore
	}
	if len(resp.Question) != 1 || !sameQuestion(resp.Question[0], q.Question[0]) {
		return nil, errBadResponse
	}
	return resp, nil
}

func sameQuestion(a, b mdns.Question) bool {
	return a.Qtype == b.Qtype && a.Qclass == b.Qclass && strings.EqualFold(a.Name, b.Name)
}

// classify maps a socket error to the attempt's outcome: timeouts and
// refusals keep their meaning, the rest is returned as it is.
func classify(err error) error {
	var ne net.Error
	if errors.As(err, &ne) && ne.Timeout() || errors.Is(err, os.ErrDeadlineExceeded) {
		return errTimeout
	}
	return err
}

// classifyTCP also reads a connection closed before the whole answer as a
// malformed response.
func classifyTCP(err error) error {
	if errors.Is(err, io.EOF) || errors.Is(err, io.ErrUnexpectedEOF) {
		return errBadResponse
	}
	return classify(err)
}

func isTimeout(err error) bool { return errors.Is(err, errTimeout) }

func isRefused(err error) bool { return errors.Is(err, syscall.ECONNREFUSED) }

package e2e

import (
	"bytes"
	"crypto/sha1"
	"encoding/base64"
	"encoding/binary"
	"io"
	"net"
	"strings"
	"sync"
	"time"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"
	"golang.org/x/net/http2"
	"golang.org/x/net/http2/hpack"
)

// h2TunnelServer is a test-owned h2c server on a raw framer that answers
// RFC 8441 extended CONNECT and CONNECT streams: Go's HTTP/2 server takes
// extended CONNECT only with GODEBUG=http2xconnect=1 set before the test
// process starts. Each stream's path chooses what it does:
//   - an extended CONNECT with :protocol websocket is answered 200 (with
//     the sec-websocket-accept an HTTP/1.1 server would compute, as a
//     WebSocket server behind another proxy hop does) and echoes every
//     WebSocket message with "echo: " in front;
//   - a CONNECT (no :protocol) dials its :authority, on 127.0.0.1 only, and
//     relays the stream's DATA to it and back;
//   - path /reset-before resets the stream at once (RST_STREAM
//     PROTOCOL_ERROR), /reset-after answers 200 and resets it at its first
//     DATA, /slow is never answered, /refuse answers 403 with a body, a WebSocket on /linger
//     stays open, silent, after the client ended its side, and one on
//     /half ends the server's side after its first answer, noting the
//     messages that still come.
//
// With advertise false it does not announce SETTINGS_ENABLE_CONNECT_PROTOCOL.
type h2TunnelServer struct {
	advertise bool
	// requests receives each stream's ":method :protocol :authority
	// :path" and its upgrade and connection headers, as received.
	requests chan string
	// late receives the messages of a /half stream after the server
	// ended its side.
	late chan string
}

// startH2TunnelServer starts a server and returns its port and itself.
func startH2TunnelServer(advertise bool) (int, *h2TunnelServer) {
	GinkgoHelper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	Expect(err).NotTo(HaveOccurred())
	DeferCleanup(func() { _ = ln.Close() })
	srv := &h2TunnelServer{advertise: advertise, requests: make(chan string, 16), late: make(chan string, 16)}
	go func() {
		for {
			c, err := ln.Accept()
			if err != nil {
				return
			}
			go srv.serve(c)
		}
	}()
	return ln.Addr().(*net.TCPAddr).Port, srv
}

// h2ServerConn is one connection of the server.
type h2ServerConn struct {
	srv *h2TunnelServer
	nc  net.Conn
	fr  *http2.Framer
	// wmu guards writes: frames and the HPACK encoder.
	wmu  sync.Mutex
	enc  *hpack.Encoder
	blk  bytes.Buffer
	mu   sync.Mutex
	strs map[uint32]*h2ServerStream
}

// h2ServerStream is one stream's state.
type h2ServerStream struct {
	kind string // "ws", "connect", "reset-after"
	in   []byte // WebSocket bytes not yet parsed
	// msg and op are the fragments of a message so far and its opcode.
	msg []byte
	op  byte
	// linger: the stream stays open after the client ended its side.
	linger bool
	// half: the server ends its side after its first answer; ended
	// says it did.
	half, ended bool
	target      net.Conn
}

func (srv *h2TunnelServer) serve(nc net.Conn) {
	defer nc.Close()
	_ = nc.SetDeadline(time.Now().Add(30 * time.Second))
	preface := make([]byte, len(http2.ClientPreface))
	if _, err := io.ReadFull(nc, preface); err != nil || string(preface) != http2.ClientPreface {
		return
	}
	c := &h2ServerConn{srv: srv, nc: nc, fr: http2.NewFramer(nc, nc), strs: map[uint32]*h2ServerStream{}}
	c.enc = hpack.NewEncoder(&c.blk)
	dec := hpack.NewDecoder(4096, nil)
	settings := []http2.Setting{{ID: http2.SettingMaxConcurrentStreams, Val: 100}}
	if srv.advertise {
		settings = append(settings, http2.Setting{ID: http2.SettingEnableConnectProtocol, Val: 1})
	}
	c.wmu.Lock()
	_ = c.fr.WriteSettings(settings...)
	c.wmu.Unlock()
	for {
		f, err := c.fr.ReadFrame()
		if err != nil {
			c.closeTargets()
			return
		}
		switch f := f.(type) {
		case *http2.SettingsFrame:
			if !f.IsAck() {
				c.write(func() error { return c.fr.WriteSettingsAck() })
			}
		case *http2.PingFrame:
			if !f.IsAck() {
				c.write(func() error { return c.fr.WritePing(true, f.Data) })
			}
		case *http2.HeadersFrame:
			fields, err := dec.DecodeFull(f.HeaderBlockFragment())
			if err != nil {
				return
			}
			c.onHeaders(f.StreamID, fields)
		case *http2.DataFrame:
			if n := uint32(len(f.Data())); n > 0 {
				c.write(func() error {
					_ = c.fr.WriteWindowUpdate(0, n)
					return c.fr.WriteWindowUpdate(f.StreamID, n)
				})
			}
			c.onData(f.StreamID, bytes.Clone(f.Data()), f.StreamEnded())
		case *http2.RSTStreamFrame:
			c.endStream(f.StreamID)
		case *http2.GoAwayFrame:
			c.closeTargets()
			return
		}
	}
}

// write runs fn under the write lock.
func (c *h2ServerConn) write(fn func() error) {
	c.wmu.Lock()
	defer c.wmu.Unlock()
	_ = fn()
}

// writeData sends b on id in DATA frames of the default maximum size.
func (c *h2ServerConn) writeData(id uint32, b []byte) {
	c.write(func() error {
		for len(b) > 0 {
			n := min(len(b), 16384)
			if err := c.fr.WriteData(id, false, b[:n]); err != nil {
				return err
			}
			b = b[n:]
		}
		return nil
	})
}

// respond sends a response head on id.
func (c *h2ServerConn) respond(id uint32, endStream bool, fields ...string) {
	c.write(func() error {
		c.blk.Reset()
		for i := 0; i+1 < len(fields); i += 2 {
			_ = c.enc.WriteField(hpack.HeaderField{Name: fields[i], Value: fields[i+1]})
		}
		return c.fr.WriteHeaders(http2.HeadersFrameParam{StreamID: id, BlockFragment: c.blk.Bytes(), EndHeaders: true, EndStream: endStream})
	})
}

func (c *h2ServerConn) onHeaders(id uint32, fields []hpack.HeaderField) {
	h := map[string]string{}
	for _, f := range fields {
		h[f.Name] = f.Value
	}
	c.srv.requests <- strings.Join([]string{h[":method"], h[":protocol"], h[":authority"], h[":path"], h["upgrade"], h["connection"]}, " ")
	st := &h2ServerStream{}
	switch {
	case h[":path"] == "/reset-before":
		c.write(func() error { return c.fr.WriteRSTStream(id, http2.ErrCodeProtocol) })
		return
	case h[":path"] == "/slow":
		// Never answered.
		return
	case h[":path"] == "/refuse":
		c.respond(id, false, ":status", "403", "content-type", "text/plain")
		c.write(func() error { return c.fr.WriteData(id, true, []byte("not here")) })
		return
	case h[":method"] == "CONNECT" && h[":protocol"] == "":
		if !strings.HasPrefix(h[":authority"], "127.0.0.1:") {
			c.respond(id, true, ":status", "403")
			return
		}
		target, err := net.DialTimeout("tcp", h[":authority"], 5*time.Second)
		if err != nil {
			c.respond(id, true, ":status", "502")
			return
		}
		st.kind, st.target = "connect", target
		c.respond(id, false, ":status", "200")
		go c.pump(id, target)
	case h[":method"] == "CONNECT" && h[":protocol"] == "websocket":
		st.kind = "ws"
		switch h[":path"] {
		case "/reset-after":
			st.kind = "reset-after"
		case "/linger":
			st.linger = true
		case "/half":
			st.half = true
		}
		sum := sha1.Sum([]byte(h["sec-websocket-key"] + "258EAFA5-E914-47DA-95CA-C5AB0DC85B11"))
		c.respond(id, false, ":status", "200", "sec-websocket-accept", base64.StdEncoding.EncodeToString(sum[:]), "x-upstream", "h2")
	default:
		c.respond(id, true, ":status", "400")
		return
	}
	c.mu.Lock()
	c.strs[id] = st
	c.mu.Unlock()
}

// pump relays what target sends as DATA on id, ending the stream at its
// EOF.
func (c *h2ServerConn) pump(id uint32, target net.Conn) {
	buf := make([]byte, 8192)
	for {
		n, err := target.Read(buf)
		if n > 0 {
			c.write(func() error { return c.fr.WriteData(id, false, buf[:n]) })
		}
		if err != nil {
			c.write(func() error { return c.fr.WriteData(id, true, nil) })
			return
		}
	}
}

func (c *h2ServerConn) onData(id uint32, data []byte, end bool) {
	c.mu.Lock()
	st := c.strs[id]
	c.mu.Unlock()
	if st == nil {
		return
	}
	switch st.kind {
	case "connect":
		if len(data) > 0 {
			_, _ = st.target.Write(data)
		}
		if end {
			_ = st.target.(*net.TCPConn).CloseWrite()
		}
	case "reset-after":
		c.write(func() error { return c.fr.WriteRSTStream(id, http2.ErrCodeCancel) })
		c.endStream(id)
	case "ws":
		st.in = append(st.in, data...)
		for {
			fin, op, payload, rest, ok := parseMaskedFrame(st.in)
			if !ok {
				break
			}
			st.in = rest
			if op != 0 {
				st.op = op
			}
			st.msg = append(st.msg, payload...)
			if !fin {
				continue
			}
			if st.ended {
				// Its side ended: what comes is only noted.
				c.srv.late <- string(st.msg)
				st.msg = nil
				continue
			}
			reply := append([]byte("echo: "), st.msg...)
			if st.op == 0x8 {
				reply = st.msg
			}
			op, st.msg = st.op, nil
			c.writeData(id, appendServerFrame(nil, op, reply))
			if st.half {
				st.ended = true
				c.write(func() error { return c.fr.WriteData(id, true, nil) })
			}
		}
		if end && !st.linger && !st.ended {
			c.write(func() error { return c.fr.WriteData(id, true, nil) })
			c.endStream(id)
		}
	}
}

func (c *h2ServerConn) endStream(id uint32) {
	c.mu.Lock()
	st := c.strs[id]
	delete(c.strs, id)
	c.mu.Unlock()
	if st != nil && st.target != nil {
		_ = st.target.Close()
	}
}

func (c *h2ServerConn) closeTargets() {
	c.mu.Lock()
	defer c.mu.Unlock()
	for id, st := range c.strs {
		if st.target != nil {
			_ = st.target.Close()
		}
		delete(c.strs, id)
	}
}

// parseMaskedFrame parses one client WebSocket frame (RFC 6455 §5.2,
// masked, payload length under 64 KiB) from b: its FIN bit, opcode (0 for
// a continuation) and payload.
func parseMaskedFrame(b []byte) (fin bool, op byte, payload, rest []byte, ok bool) {
	if len(b) < 2 {
		return false, 0, nil, b, false
	}
	n, off := int(b[1]&0x7f), 2
	if n == 126 {
		if len(b) < 4 {
			return false, 0, nil, b, false
		}
		n, off = int(binary.BigEndian.Uint16(b[2:])), 4
	}
	if len(b) < off+4+n {
		return false, 0, nil, b, false
	}
	mask := b[off : off+4]
	payload = make([]byte, n)
	for i := range payload {
		payload[i] = b[off+4+i] ^ mask[i%4]
	}
	return b[0]&0x80 != 0, b[0] & 0x0f, payload, b[off+4+n:], true
}

// appendServerFrame appends an unmasked final WebSocket frame.
func appendServerFrame(b []byte, op byte, payload []byte) []byte {
	b = append(b, 0x80|op)
	if len(payload) < 126 {
		b = append(b, byte(len(payload)))
	} else {
		b = append(b, 126, byte(len(payload)>>8), byte(len(payload)))
	}
	return append(b, payload...)
}

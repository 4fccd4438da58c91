package e2e

import (
	"bytes"
	"io"
	"net"
	"strconv"
	"strings"
	"sync"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"
	"golang.org/x/net/http2"
	"golang.org/x/net/http2/hpack"
)

// connectUDPServer is a test-owned h2c CONNECT-UDP proxy (RFC 9298) on a
// raw framer: it announces SETTINGS_ENABLE_CONNECT_PROTOCOL, answers each
// extended CONNECT with :protocol connect-udp to
// /.well-known/masque/udp/127.0.0.1/<port>/ with status, and relays the
// stream's DATAGRAM capsules (RFC 9297, context ID 0) to that UDP port
// on loopback and what it answers back as capsules.
type connectUDPServer struct {
	// status answers every request ("200" opens the tunnel).
	status string
	// hold, when not nil, delays every answer until it is closed.
	hold chan struct{}
	// requests receives ":method :protocol :authority :path
	// capsule-protocol x-client" of each request.
	requests chan string
	// resets receives each stream the client reset.
	resets chan uint32
	// postTarget is the UDP port a POST to /udp relays to.
	postTarget int
}

// startConnectUDPServer starts srv and returns its port.
func startConnectUDPServer(srv *connectUDPServer) int {
	GinkgoHelper()
	srv.requests = make(chan string, 16)
	srv.resets = make(chan uint32, 16)
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	Expect(err).NotTo(HaveOccurred())
	DeferCleanup(func() { _ = ln.Close() })
	go func() {
		for {
			c, err := ln.Accept()
			if err != nil {
				return
			}
			go srv.serve(c)
		}
	}()
	return ln.Addr().(*net.TCPAddr).Port
}

// cudpConn is one connection of the server.
type cudpConn struct {
	srv *connectUDPServer
	fr  *http2.Framer
	wmu sync.Mutex // frames and the HPACK encoder
	enc *hpack.Encoder
	blk bytes.Buffer
	mu  sync.Mutex
	// targets are the open tunnels' UDP sockets, by stream; in their
	// capsule bytes not yet parsed.
	targets map[uint32]*net.UDPConn
	in      map[uint32][]byte
}

func (srv *connectUDPServer) serve(nc net.Conn) {
	defer nc.Close()
	preface := make([]byte, len(http2.ClientPreface))
	if _, err := io.ReadFull(nc, preface); err != nil || string(preface) != http2.ClientPreface {
		return
	}
	c := &cudpConn{srv: srv, fr: http2.NewFramer(nc, nc), targets: map[uint32]*net.UDPConn{}, in: map[uint32][]byte{}}
	c.enc = hpack.NewEncoder(&c.blk)
	defer c.closeAll()
	dec := hpack.NewDecoder(4096, nil)
	c.write(func() error {
		return c.fr.WriteSettings(http2.Setting{ID: http2.SettingEnableConnectProtocol, Val: 1})
	})
	for {
		f, err := c.fr.ReadFrame()
		if err != nil {
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
			go c.onHeaders(f.StreamID, fields)
		case *http2.DataFrame:
			if n := uint32(len(f.Data())); n > 0 {
				c.write(func() error {
					_ = c.fr.WriteWindowUpdate(0, n)
					return c.fr.WriteWindowUpdate(f.StreamID, n)
				})
			}
			c.onData(f.StreamID, bytes.Clone(f.Data()))
		case *http2.RSTStreamFrame:
			srv.resets <- f.StreamID
			c.mu.Lock()
			if t := c.targets[f.StreamID]; t != nil {
				_ = t.Close()
			}
			delete(c.targets, f.StreamID)
			c.mu.Unlock()
		}
	}
}

func (c *cudpConn) write(fn func() error) {
	c.wmu.Lock()
	defer c.wmu.Unlock()
	_ = fn()
}

func (c *cudpConn) respond(id uint32, status string, end bool) {
	c.write(func() error {
		c.blk.Reset()
		_ = c.enc.WriteField(hpack.HeaderField{Name: ":status", Value: status})
		_ = c.enc.WriteField(hpack.HeaderField{Name: "capsule-protocol", Value: "?1"})
		_ = c.enc.WriteField(hpack.HeaderField{Name: "x-proxy", Value: "cudp"})
		return c.fr.WriteHeaders(http2.HeadersFrameParam{StreamID: id, BlockFragment: c.blk.Bytes(), EndHeaders: true, EndStream: end})
	})
}

func (c *cudpConn) onHeaders(id uint32, fields []hpack.HeaderField) {
	h := map[string]string{}
	for _, f := range fields {
		h[f.Name] = f.Value
	}
	c.srv.requests <- strings.Join([]string{h[":method"], h[":protocol"], h[":authority"], h[":path"], h["capsule-protocol"], h["x-client"]}, " ")
	if c.srv.hold != nil {
		<-c.srv.hold
	}
	port, ok := strings.CutPrefix(h[":path"], "/.well-known/masque/udp/127.0.0.1/")
	ok = ok && h[":method"] == "CONNECT" && h[":protocol"] == "connect-udp"
	if h[":method"] == "POST" && h[":path"] == "/udp" && c.srv.postTarget != 0 {
		port, ok = strconv.Itoa(c.srv.postTarget), true
	}
	if c.srv.status != "200" || !ok {
		c.respond(id, c.srv.status, true)
		return
	}
	target, err := net.Dial("udp", "127.0.0.1:"+strings.TrimSuffix(port, "/"))
	if err != nil {
		c.respond(id, "502", true)
		return
	}
	c.mu.Lock()
	c.targets[id] = target.(*net.UDPConn)
	c.mu.Unlock()
	c.respond(id, "200", false)
	go func() {
		buf := make([]byte, 65536)
		for {
			n, err := target.Read(buf)
			if err != nil {
				return
			}
			// A DATAGRAM capsule: type 0, length, context ID 0, payload.
			capsule := appendQUICVarint([]byte{0x00}, uint64(n+1))
			capsule = append(append(capsule, 0x00), buf[:n]...)
			c.write(func() error { return c.fr.WriteData(id, false, capsule) })
		}
	}()
}

// onData parses the stream's capsules and sends each DATAGRAM capsule's
// payload to its target.
func (c *cudpConn) onData(id uint32, data []byte) {
	c.mu.Lock()
	defer c.mu.Unlock()
	target := c.targets[id]
	if target == nil {
		return
	}
	b := append(c.in[id], data...)
	for {
		typ, n1, ok1 := readQUICVarint(b)
		length, n2, ok2 := readQUICVarint(b[min(n1, len(b)):])
		if !ok1 || !ok2 || len(b) < n1+n2+int(length) {
			break
		}
		payload := b[n1+n2 : n1+n2+int(length)]
		b = b[n1+n2+int(length):]
		if ctxID, n, ok := readQUICVarint(payload); typ == 0 && ok && ctxID == 0 {
			_, _ = target.Write(payload[n:])
		}
	}
	c.in[id] = bytes.Clone(b)
}

func (c *cudpConn) closeAll() {
	c.mu.Lock()
	defer c.mu.Unlock()
	for id, t := range c.targets {
		_ = t.Close()
		delete(c.targets, id)
	}
}

// readQUICVarint reads a QUIC variable-length integer (RFC 9000 §16).
func readQUICVarint(b []byte) (uint64, int, bool) {
	if len(b) == 0 {
		return 0, 0, false
	}
	n := 1 << (b[0] >> 6)
	if len(b) < n {
		return 0, 0, false
	}
	v := uint64(b[0] & 0x3f)
	for _, x := range b[1:n] {
		v = v<<8 | uint64(x)
	}
	return v, n, true
}

// appendQUICVarint appends v (below 2^30) as a QUIC variable-length
// integer.
func appendQUICVarint(b []byte, v uint64) []byte {
	switch {
	case v < 1<<6:
		return append(b, byte(v))
	case v < 1<<14:
		return append(b, 0x40|byte(v>>8), byte(v))
	default:
		return append(b, 0x80|byte(v>>24), byte(v>>16), byte(v>>8), byte(v))
	}
}

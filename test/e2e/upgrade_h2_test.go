package e2e

import (
	"bytes"
	"encoding/base64"
	"fmt"
	"net"
	"time"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"
	"golang.org/x/net/http2"
	"golang.org/x/net/http2/hpack"
)

// h2WSClient is a WebSocket client over one HTTP/2 extended CONNECT
// stream (RFC 8441), written on a raw framer: Go's HTTP/2 client has no
// extended CONNECT.
type h2WSClient struct {
	nc  net.Conn
	fr  *http2.Framer
	dec *hpack.Decoder
	// status is the response's :status once its head came.
	status string
	// in holds the stream's DATA bytes not yet taken as WebSocket frames.
	in []byte
	// ended: the server ended the stream.
	ended bool
	// settings are the server's SETTINGS.
	settings map[http2.SettingID]uint32
}

// dialH2WebSocket opens an h2c connection to port and a WebSocket on path
// over stream 1, and reads until the response head.
func dialH2WebSocket(port int, path string) *h2WSClient {
	GinkgoHelper()
	nc, err := net.DialTimeout("tcp", fmt.Sprintf("127.0.0.1:%d", port), 5*time.Second)
	Expect(err).NotTo(HaveOccurred())
	DeferCleanup(nc.Close)
	_ = nc.SetDeadline(time.Now().Add(10 * time.Second))
	c := &h2WSClient{nc: nc, fr: http2.NewFramer(nc, nc), dec: hpack.NewDecoder(4096, nil), settings: map[http2.SettingID]uint32{}}
	_, err = nc.Write([]byte(http2.ClientPreface))
	Expect(err).NotTo(HaveOccurred())
	Expect(c.fr.WriteSettings()).To(Succeed())
	var blk bytes.Buffer
	enc := hpack.NewEncoder(&blk)
	key := base64.StdEncoding.EncodeToString([]byte("0123456789abcdef"))
	for _, f := range [][2]string{
		{":method", "CONNECT"}, {":protocol", "websocket"}, {":scheme", "http"},
		{":authority", fmt.Sprintf("127.0.0.1:%d", port)}, {":path", path},
		{"sec-websocket-version", "13"}, {"sec-websocket-key", key},
	} {
		_ = enc.WriteField(hpack.HeaderField{Name: f[0], Value: f[1]})
	}
	Expect(c.fr.WriteHeaders(http2.HeadersFrameParam{StreamID: 1, BlockFragment: blk.Bytes(), EndHeaders: true})).To(Succeed())
	for i := 0; c.status == "" && !c.ended; i++ {
		Expect(i).To(BeNumerically("<", 100), "no response head")
		c.readFrame()
	}
	return c
}

// readFrame reads and handles one frame.
func (c *h2WSClient) readFrame() {
	GinkgoHelper()
	f, err := c.fr.ReadFrame()
	Expect(err).NotTo(HaveOccurred())
	switch f := f.(type) {
	case *http2.SettingsFrame:
		if !f.IsAck() {
			_ = f.ForeachSetting(func(s http2.Setting) error { c.settings[s.ID] = s.Val; return nil })
			Expect(c.fr.WriteSettingsAck()).To(Succeed())
		}
	case *http2.HeadersFrame:
		fields, err := c.dec.DecodeFull(f.HeaderBlockFragment())
		Expect(err).NotTo(HaveOccurred())
		for _, hf := range fields {
			if hf.Name == ":status" {
				c.status = hf.Value
			}
		}
		c.ended = c.ended || f.StreamEnded()
	case *http2.DataFrame:
		c.in = append(c.in, f.Data()...)
		if n := uint32(len(f.Data())); n > 0 {
			Expect(c.fr.WriteWindowUpdate(0, n)).To(Succeed())
			Expect(c.fr.WriteWindowUpdate(1, n)).To(Succeed())
		}
		c.ended = c.ended || f.StreamEnded()
	case *http2.RSTStreamFrame:
		Fail("stream reset: " + f.ErrCode.String())
	case *http2.GoAwayFrame:
		Fail("GOAWAY: " + f.ErrCode.String())
	}
}

// send sends one masked WebSocket frame (RFC 6455 §5.2) of the given
// opcode, payload under 126 bytes.
func (c *h2WSClient) send(opcode byte, payload []byte) {
	GinkgoHelper()
	mask := [4]byte{1, 2, 3, 4}
	frame := []byte{0x80 | opcode, 0x80 | byte(len(payload)), mask[0], mask[1], mask[2], mask[3]}
	for i, b := range payload {
		frame = append(frame, b^mask[i%4])
	}
	Expect(c.fr.WriteData(1, false, frame)).To(Succeed())
}

// receive reads one unmasked WebSocket frame of under 126 bytes from the
// server and returns its opcode and payload.
func (c *h2WSClient) receive() (byte, string) {
	GinkgoHelper()
	for i := 0; len(c.in) < 2 || len(c.in) < 2+int(c.in[1]&0x7f); i++ {
		Expect(i).To(BeNumerically("<", 100), "no WebSocket frame")
		Expect(c.ended).To(BeFalse(), "the stream ended")
		c.readFrame()
	}
	n := int(c.in[1] & 0x7f)
	op, payload := c.in[0]&0x0f, string(c.in[2:2+n])
	c.in = c.in[2+n:]
	return op, payload
}

var _ = Describe("Upgrades: WebSocket over HTTP/2 extended CONNECT", func() {
	It("carries a WebSocket from an HTTP/2 client to an HTTP/1.1 WebSocket server", func() {
		wsUp, echoUp, proxyUp := startWebSocketEcho(), startTCPEcho(false), startTCPEcho(true)
		wsPort, plainPort, fwdPort := freePort(), freePort(), freePort()
		s := Start(newDir(), upgradeBootstrap(wsPort, plainPort, fwdPort, wsUp, echoUp, proxyUp), "--file-flush-interval-msec", "50")
		c := dialH2WebSocket(wsPort, "/h2chat")
		Expect(c.settings).To(HaveKeyWithValue(http2.SettingEnableConnectProtocol, uint32(1)))
		Expect(c.status).To(Equal("200"))
		for _, msg := range []string{"hello", "over h2"} {
			c.send(0x1, []byte(msg))
			op, got := c.receive()
			Expect(op).To(Equal(byte(0x1)))
			Expect(got).To(Equal("echo: " + msg))
		}
		// A close handshake, then the client ends its stream and the
		// server its own.
		c.send(0x8, []byte{0x03, 0xe8})
		op, _ := c.receive()
		Expect(op).To(Equal(byte(0x8)))
		Expect(c.fr.WriteData(1, true, nil)).To(Succeed())
		for i := 0; !c.ended; i++ {
			Expect(i).To(BeNumerically("<", 100), "the stream did not end")
			c.readFrame()
		}
		Eventually(s.Stdout, 5*time.Second).Should(MatchRegexp(`UPGRADE wsl GET /h2chat 200 \d+ \d+ via_upstream ws\n`))
		Expect(s.Get("/stats?filter=upgrades_total").Body).To(ContainSubstring("http.wsl.downstream_cx_upgrades_total: 1"))
	})
})

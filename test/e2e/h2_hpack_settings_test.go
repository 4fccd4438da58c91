package e2e

import (
	"bufio"
	"bytes"
	"fmt"
	"io"
	"net"
	"net/http"
	"os/exec"
	"strings"
	"sync"
	"time"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"
	"golang.org/x/net/http2"
	"golang.org/x/net/http2/hpack"
)

// readServerSettings reads an attacker's connection until the server's
// first SETTINGS frame and returns its settings in the order sent, then
// until the HEADERS of stream 1 and returns their block.
func readServerSettings(a *attacker) (settings []string, block []byte) {
	GinkgoHelper()
	fr := http2.NewFramer(nil, bufio.NewReader(a.nc))
	_ = a.nc.SetReadDeadline(time.Now().Add(10 * time.Second))
	for i := 0; i < 100; i++ {
		f, err := fr.ReadFrame()
		Expect(err).NotTo(HaveOccurred())
		switch f := f.(type) {
		case *http2.SettingsFrame:
			if !f.IsAck() && settings == nil {
				_ = f.ForeachSetting(func(s http2.Setting) error {
					settings = append(settings, fmt.Sprintf("%s=%d", s.ID, s.Val))
					return nil
				})
			}
		case *http2.HeadersFrame:
			if f.StreamID == 1 {
				return settings, bytes.Clone(f.HeaderBlockFragment())
			}
		}
	}
	Fail("no response HEADERS on stream 1")
	return nil, nil
}

// settingsRecorder is an h2c upstream that answers "ok" and records the
// settings of the client's first SETTINGS frame.
type settingsRecorder struct {
	addr     string
	mu       sync.Mutex
	settings []string
}

func (u *settingsRecorder) seen() string {
	u.mu.Lock()
	defer u.mu.Unlock()
	return strings.Join(u.settings, " ")
}

func startSettingsRecorder() *settingsRecorder {
	GinkgoHelper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	Expect(err).NotTo(HaveOccurred())
	DeferCleanup(func() { _ = ln.Close() })
	u := &settingsRecorder{addr: ln.Addr().String()}
	go func() {
		for {
			nc, err := ln.Accept()
			if err != nil {
				return
			}
			go func() {
				defer nc.Close()
				_ = nc.SetDeadline(time.Now().Add(30 * time.Second))
				preface := make([]byte, len(http2.ClientPreface))
				if _, err := io.ReadFull(nc, preface); err != nil {
					return
				}
				fr := http2.NewFramer(nc, bufio.NewReader(nc))
				if fr.WriteSettings() != nil {
					return
				}
				var blk bytes.Buffer
				enc := hpack.NewEncoder(&blk)
				for i := 0; i < 1000; i++ {
					f, err := fr.ReadFrame()
					if err != nil {
						return
					}
					switch f := f.(type) {
					case *http2.SettingsFrame:
						if f.IsAck() {
							continue
						}
						u.mu.Lock()
						if u.settings == nil {
							_ = f.ForeachSetting(func(s http2.Setting) error {
								u.settings = append(u.settings, fmt.Sprintf("%s=%d", s.ID, s.Val))
								return nil
							})
						}
						u.mu.Unlock()
						_ = fr.WriteSettingsAck()
					case *http2.HeadersFrame:
						blk.Reset()
						_ = enc.WriteField(hpack.HeaderField{Name: ":status", Value: "200"})
						_ = fr.WriteHeaders(http2.HeadersFrameParam{StreamID: f.StreamID, BlockFragment: blk.Bytes(), EndHeaders: true})
						_ = fr.WriteData(f.StreamID, true, []byte("ok"))
					}
				}
			}()
		}
	}()
	return u
}

var _ = Describe("HTTP/2 HPACK and SETTINGS options", func() {
	It("announces hpack_table_size and custom_settings_parameters in Envoy's order, sends response strings without Huffman coding, and serves curl over a table of 0", func() {
		up := startCountingUpstream()
		port := freePort()
		s := Start(newDir(), floodBootstrap(port, up.addr,
			"hpack_table_size: 0, enable_huffman_encoding: false, custom_settings_parameters: [{identifier: 9, value: 1}, {identifier: 0x7777, value: 42}]"))
		a := dialAttacker(fmt.Sprintf("127.0.0.1:%d", port))
		a.write(a.frames(func(fr *http2.Framer) {
			_ = fr.WriteSettingsAck()
			_ = fr.WriteHeaders(http2.HeadersFrameParam{StreamID: 1, BlockFragment: a.request("/"), EndStream: true, EndHeaders: true})
		}))
		settings, block := readServerSettings(a)
		Expect(settings).To(HaveExactElements(
			"NO_RFC7540_PRIORITIES=1", "UNKNOWN_SETTING_30583=42",
			"HEADER_TABLE_SIZE=0", "MAX_CONCURRENT_STREAMS=1024", "INITIAL_WINDOW_SIZE=262144", "MAX_HEADER_LIST_SIZE=61440"))
		Expect(string(block)).To(ContainSubstring("outrigger"), "the server name sent as it is")

		// Go's client sizes its encoder's table to the 0 announced:
		// three requests with a repeated field on one connection, none
		// refused; and curl (nghttp2) is served too.
		h2 := httpClients()["HTTP/2"]
		for i := range 3 {
			r := httpDo(h2, "GET", listenerURL(port, fmt.Sprintf("/%d", i)), nil, http.Header{"X-Repeat": {"a value an encoder would index"}})
			Expect(r.Status).To(Equal(200))
			Expect(r.Body).To(Equal("ok"))
		}
		Expect(statValue(s, "http.ingress.downstream_cx_http2_total")).To(Equal("2"), "the raw client's connection and the Go client's one")
		out, err := exec.Command("curl", "-sS", "--max-time", "10", "--http2-prior-knowledge",
			"-H", "x-repeat: a value an encoder would index", listenerURL(port, "/curl")).CombinedOutput()
		Expect(err).NotTo(HaveOccurred(), string(out))
		Expect(string(out)).To(Equal("ok"))
	})

	It("ends a connection whose request field is coded longer than max_header_field_size_kb with COMPRESSION_ERROR", func() {
		up := startCountingUpstream()
		port := freePort()
		Start(newDir(), proxySpec{
			Port:     port,
			Listener: "{name: ingress}",
			HCM:      "{stat_prefix: ingress, codec_type: AUTO, max_request_headers_kb: 96, http2_protocol_options: {max_header_field_size_kb: 64}}",
			Clusters: []proxyCluster{{Name: "up", Port: portNum(up.addr)}},
		}.YAML())
		// Go's client Huffman-codes the 90000 a's to 56250 bytes (curl's
		// nghttp2 sends no block over 64 KiB).
		r := httpDo(httpClients()["HTTP/2"], "GET", listenerURL(port, "/"), nil, http.Header{"X-Big": {strings.Repeat("a", 90000)}})
		Expect(r.Status).To(Equal(200))

		a := dialAttacker(fmt.Sprintf("127.0.0.1:%d", port))
		a.blk.Reset()
		for _, f := range []hpack.HeaderField{
			{Name: ":method", Value: "GET"}, {Name: ":scheme", Value: "http"},
			{Name: ":authority", Value: "h.example"}, {Name: ":path", Value: "/"},
			{Name: "x-big", Value: strings.Repeat("~", 70000)},
		} {
			_ = a.enc.WriteField(f)
		}
		block := a.blk.Bytes()
		a.write(a.frames(func(fr *http2.Framer) {
			_ = fr.WriteHeaders(http2.HeadersFrameParam{StreamID: 1, BlockFragment: block[:16384], EndStream: true})
			for rest := block[16384:]; len(rest) > 0; {
				n := min(len(rest), 16384)
				_ = fr.WriteContinuation(1, n == len(rest), rest[:n])
				rest = rest[n:]
			}
		}))
		Expect(a.goAway()).To(Equal(http2.ErrCodeCompression))
	})

	It("answers RST_STREAM frames past stream_reset_burst with GOAWAY INTERNAL_ERROR, counted in http2.goaway_sent, and serves other connections", func() {
		up := startCountingUpstream()
		port := freePort()
		s := Start(newDir(), floodBootstrap(port, up.addr, "stream_reset_burst: 10, stream_reset_rate: 1"))
		a := dialAttacker(fmt.Sprintf("127.0.0.1:%d", port))
		block := a.request("/")
		a.write(a.frames(func(fr *http2.Framer) {
			for id := uint32(1); id < 2*20; id += 2 {
				_ = fr.WriteHeaders(http2.HeadersFrameParam{StreamID: id, BlockFragment: block, EndStream: true, EndHeaders: true})
				_ = fr.WriteRSTStream(id, http2.ErrCodeCancel)
			}
		}))
		Expect(a.goAway()).To(Equal(http2.ErrCodeInternal))
		waitStat(s, "http2.goaway_sent", "1")
		Expect(statValue(s, "http.ingress.downstream_rq_too_many_premature_resets")).To(Equal("0"), "the bucket, not the premature-reset limit")
		r := httpDo(httpClients()["HTTP/2"], "GET", listenerURL(port, "/"), nil, nil)
		Expect(r.Status).To(Equal(200))
	})

	It("announces a cluster's hpack_table_size to its h2c upstream", func() {
		up := startSettingsRecorder()
		port := freePort()
		Start(newDir(), proxySpec{
			Port: port,
			Clusters: []proxyCluster{{Name: "up", Port: portNum(up.addr),
				Extra: httpProtocolOptions(`{explicit_http_config: {http2_protocol_options: {hpack_table_size: 512}}}`)}},
		}.YAML())
		r := httpDo(httpClients()["HTTP/1.1"], "GET", listenerURL(port, "/"), nil, nil)
		Expect(r.Status).To(Equal(200))
		Expect(r.Body).To(Equal("ok"))
		Expect(up.seen()).To(ContainSubstring("HEADER_TABLE_SIZE=512"))
	})

	It("refuses what Envoy refuses in custom_settings_parameters, and the client-only options on a cluster, with their paths", func() {
		r, _ := validate("bootstrap.yaml", floodBootstrap(freePort(), "127.0.0.1:1", "custom_settings_parameters: [{identifier: 2, value: 1}]"))
		Expect(r.ExitCode).To(Equal(1))
		Expect(r.Stderr).To(ContainSubstring("http2_protocol_options.custom_settings_parameters: server push is not supported by Envoy"))
		r, _ = validate("bootstrap.yaml", floodBootstrap(freePort(), "127.0.0.1:1", "max_concurrent_streams: 10, custom_settings_parameters: [{identifier: 3, value: 5}]"))
		Expect(r.ExitCode).To(Equal(1))
		Expect(r.Stderr).To(ContainSubstring("the {max_concurrent_streams} HTTP/2 SETTINGS parameter(s) can not be configured through both named and custom parameters"))
		r, _ = validate("bootstrap.yaml", keepaliveClusterBootstrap(freePort(), "127.0.0.1:1", "{interval: 1s, timeout: 1s}, enable_huffman_encoding: false"))
		Expect(r.ExitCode).To(Equal(1))
		Expect(r.Stderr).To(ContainSubstring(`explicit_http_config.http2_protocol_options.enable_huffman_encoding: not supported by Outrigger on a cluster`))
	})
})

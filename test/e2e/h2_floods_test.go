package e2e

import (
	"bufio"
	"bytes"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"strconv"
	"strings"
	"sync/atomic"
	"time"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"
	"golang.org/x/net/http2"
	"golang.org/x/net/http2/hpack"
)

// floodBootstrap is an AUTO-codec listener (HTTP/1 and h2c, the sidecar's
// usual ingress) routing everything to the upstream at upAddr, with the
// admin layer in the runtime; h2Options are extra http2_protocol_options
// fields (YAML flow mapping content, may be empty).
func floodBootstrap(port int, upAddr, h2Options string) string {
	GinkgoHelper()
	return proxySpec{
		Port:     port,
		Listener: "{name: ingress}",
		HCM:      "{stat_prefix: ingress, codec_type: AUTO, http2_protocol_options: {" + h2Options + "}}",
		Top:      "{layered_runtime: {layers: [{name: admin, admin_layer: {}}]}}",
		Clusters: []proxyCluster{{Name: "up", Port: portNum(upAddr)}},
	}.YAML()
}

// countingUpstream is an HTTP/1.1 upstream that counts what reaches it.
type countingUpstream struct {
	addr        string
	requests    atomic.Int64
	connections atomic.Int64
}

// startCountingUpstream starts a countingUpstream; /big answers 4 MiB.
func startCountingUpstream() *countingUpstream {
	GinkgoHelper()
	u := &countingUpstream{}
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	Expect(err).NotTo(HaveOccurred())
	srv := &http.Server{
		Handler: http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			u.requests.Add(1)
			if r.URL.Path == "/big" {
				_, _ = w.Write(make([]byte, 4<<20))
				return
			}
			_, _ = io.WriteString(w, "ok")
		}),
		ConnState: func(_ net.Conn, s http.ConnState) {
			if s == http.StateNew {
				u.connections.Add(1)
			}
		},
		ReadHeaderTimeout: 5 * time.Second,
	}
	go func() { _ = srv.Serve(ln) }()
	DeferCleanup(srv.Close)
	u.addr = ln.Addr().String()
	return u
}

// attacker is a raw h2c client that writes frames and reads nothing until
// asked to.
type attacker struct {
	nc  net.Conn
	enc *hpack.Encoder
	blk bytes.Buffer
}

// dialAttacker connects to addr and sends the HTTP/2 preface and an empty
// SETTINGS frame.
func dialAttacker(addr string) *attacker {
	GinkgoHelper()
	nc, err := net.DialTimeout("tcp", addr, 5*time.Second)
	Expect(err).NotTo(HaveOccurred())
	DeferCleanup(nc.Close)
	a := &attacker{nc: nc}
	a.enc = hpack.NewEncoder(&a.blk)
	a.write(append([]byte(http2.ClientPreface), a.frames(func(fr *http2.Framer) { _ = fr.WriteSettings() })...))
	return a
}

// request is the HPACK block of a GET of path.
func (a *attacker) request(path string) []byte {
	a.blk.Reset()
	for _, f := range []hpack.HeaderField{
		{Name: ":method", Value: "GET"}, {Name: ":scheme", Value: "http"},
		{Name: ":authority", Value: "flood.example"}, {Name: ":path", Value: path},
	} {
		_ = a.enc.WriteField(f)
	}
	return bytes.Clone(a.blk.Bytes())
}

// frames serialises what write writes.
func (a *attacker) frames(write func(fr *http2.Framer)) []byte {
	var b bytes.Buffer
	fr := http2.NewFramer(&b, nil)
	fr.AllowIllegalWrites = true
	write(fr)
	return b.Bytes()
}

// write sends p, bounded in time.
func (a *attacker) write(p []byte) {
	GinkgoHelper()
	_ = a.nc.SetWriteDeadline(time.Now().Add(5 * time.Second))
	_, err := a.nc.Write(p)
	Expect(err).NotTo(HaveOccurred())
}

// flood writes chunk again and again in a goroutine, at most n times or
// until a write fails or stop is called; the returned wait waits for it.
func (a *attacker) flood(chunk []byte, n int) (stop, wait func()) {
	quit := make(chan struct{})
	done := make(chan struct{})
	go func() {
		defer GinkgoRecover()
		defer close(done)
		for range n {
			select {
			case <-quit:
				return
			default:
			}
			_ = a.nc.SetWriteDeadline(time.Now().Add(5 * time.Second))
			if _, err := a.nc.Write(chunk); err != nil {
				return
			}
		}
	}()
	stopped := false
	stop = func() {
		if !stopped {
			stopped = true
			close(quit)
		}
	}
	return stop, func() { stop(); <-done }
}

// goAway reads what the server sent until a GOAWAY, bounded in frames and
// time, and returns its code; it fails the spec when the connection ends
// without one.
func (a *attacker) goAway() http2.ErrCode {
	GinkgoHelper()
	fr := http2.NewFramer(nil, bufio.NewReaderSize(a.nc, 64<<10))
	deadline := time.Now().Add(10 * time.Second)
	for i := 0; i < 5_000_000; i++ {
		_ = a.nc.SetReadDeadline(deadline)
		f, err := fr.ReadFrame()
		Expect(err).NotTo(HaveOccurred(), "the connection ended without GOAWAY after %d frames", i)
		if g, ok := f.(*http2.GoAwayFrame); ok {
			return g.ErrCode
		}
	}
	Fail("no GOAWAY in 5 million frames")
	return 0
}

// ended waits until the server closed the connection.
func (a *attacker) ended() {
	GinkgoHelper()
	_ = a.nc.(*net.TCPConn).CloseWrite()
	_ = a.nc.SetReadDeadline(time.Now().Add(5 * time.Second))
	_, err := io.Copy(io.Discard, a.nc)
	if ne, ok := err.(net.Error); ok {
		Expect(ne.Timeout()).To(BeFalse(), "the server kept the connection open")
	}
}

// rssKiB reads the resident memory of a process from /proc.
func rssKiB(pid int) int {
	GinkgoHelper()
	b, err := os.ReadFile(fmt.Sprintf("/proc/%d/status", pid))
	Expect(err).NotTo(HaveOccurred())
	for line := range strings.SplitSeq(string(b), "\n") {
		if v, ok := strings.CutPrefix(line, "VmRSS:"); ok {
			n, err := strconv.Atoi(strings.TrimSpace(strings.TrimSuffix(strings.TrimSpace(v), "kB")))
			Expect(err).NotTo(HaveOccurred())
			return n
		}
	}
	Fail("no VmRSS in /proc status")
	return 0
}

// The HTTP/2 attacks of CVE-2019-9512 to 9518, CVE-2023-44487 and
// CVE-2024-27316, played against the built binary: each ends the
// connection with GOAWAY ENHANCE_YOUR_CALM and its stat, the upstream sees
// no work it should not, and the process's memory stays bounded. The
// sidecar's own limits are Envoy's defaults unless a spec says otherwise.
var _ = Describe("HTTP/2 flood defences", func() {
	var (
		s    *Sidecar
		up   *countingUpstream
		addr string
	)
	start := func(h2Options string) {
		up = startCountingUpstream()
		port := freePort()
		addr = fmt.Sprintf("127.0.0.1:%d", port)
		s = Start(newDir(), floodBootstrap(port, up.addr, h2Options))
		s.WaitLive()
	}
	// stillServes checks that other clients are served after the attack.
	stillServes := func() {
		GinkgoHelper()
		resp, err := http.Get("http://" + addr + "/after")
		Expect(err).NotTo(HaveOccurred())
		body, _ := io.ReadAll(resp.Body)
		resp.Body.Close()
		Expect(string(body)).To(Equal("ok"))
	}

	DescribeTable("a control-frame flood from a client that does not read",
		func(frame func(fr *http2.Framer)) {
			start("")
			a := dialAttacker(addr)
			chunk := a.frames(func(fr *http2.Framer) {
				for range 1000 {
					frame(fr)
				}
			})
			before := rssKiB(s.session.Command.Process.Pid)
			// Up to 2 million frames (34 MB of acknowledgements owed):
			// the limit of 1000 queued control frames stops it long
			// before.
			stop, wait := a.flood(chunk, 2000)
			DeferCleanup(wait)
			waitStat(s, "http2.outbound_control_flood", "1")
			stop()
			Expect(a.goAway()).To(Equal(http2.ErrCodeEnhanceYourCalm))
			a.ended()
			Expect(rssKiB(s.session.Command.Process.Pid)-before).To(BeNumerically("<", 32<<10),
				"the flood grew the resident memory by more than 32 MiB")
			Expect(statValue(s, "http.ingress.downstream_cx_protocol_error")).To(Equal("0"))
			stillServes()
		},
		Entry("PING", func(fr *http2.Framer) { _ = fr.WritePing(false, [8]byte{'f', 'l', 'o', 'o', 'd'}) }),
		Entry("SETTINGS", func(fr *http2.Framer) { _ = fr.WriteSettings() }),
	)

	It("cuts off a client that lets responses pile up past max_outbound_frames", func() {
		start("max_outbound_frames: 100")
		a := dialAttacker(addr)
		a.write(a.frames(func(fr *http2.Framer) {
			_ = fr.WriteSettings(http2.Setting{ID: http2.SettingInitialWindowSize, Val: 1<<31 - 1})
			_ = fr.WriteWindowUpdate(0, 1<<31-1-65535)
			for id := uint32(1); id < 80; id += 2 {
				_ = fr.WriteHeaders(http2.HeadersFrameParam{StreamID: id, BlockFragment: a.request("/big"), EndStream: true, EndHeaders: true})
			}
		}))
		waitStat(s, "http2.outbound_flood", "1")
		Expect(a.goAway()).To(Equal(http2.ErrCodeEnhanceYourCalm))
		a.ended()
		waitStat(s, "http2.pending_send_bytes", "0")
		stillServes()
	})

	// rapidReset sends up to pairs HEADERS + RST_STREAM pairs in one
	// burst, waits for the GOAWAY that ends the connection at the
	// premature-reset limit, and returns how many resets the sidecar
	// counted.
	rapidReset := func(pairs uint32) int {
		GinkgoHelper()
		a := dialAttacker(addr)
		block := a.request("/")
		chunk := a.frames(func(fr *http2.Framer) {
			for id := uint32(1); id < 2*pairs; id += 2 {
				_ = fr.WriteHeaders(http2.HeadersFrameParam{StreamID: id, BlockFragment: block, EndStream: true, EndHeaders: true})
				_ = fr.WriteRSTStream(id, http2.ErrCodeCancel)
			}
		})
		stop, wait := a.flood(chunk, 1)
		DeferCleanup(wait)
		Expect(a.goAway()).To(Equal(http2.ErrCodeEnhanceYourCalm))
		stop()
		a.ended()
		waitStat(s, "http.ingress.downstream_rq_too_many_premature_resets", "1")
		resets, err := strconv.Atoi(statValue(s, "http.ingress.downstream_rq_rx_reset"))
		Expect(err).NotTo(HaveOccurred())
		return resets
	}

	It("resists rapid reset: reset streams reach no upstream and the connection closes at the limit", func() {
		start("")
		// Half of overload.premature_reset_total_stream_count (500)
		// streams were reset early when the connection closed.
		Expect(rapidReset(20_000)).To(BeNumerically("~", 250, 64))
		Expect(up.requests.Load()).To(BeZero(), "reset requests reached the upstream")
		Expect(up.connections.Load()).To(BeZero(), "reset requests opened upstream connections")
		stillServes()
		Expect(up.requests.Load()).To(Equal(int64(1)))
	})

	It("takes the premature-reset limit from the runtime", func() {
		start("")
		Expect(s.Post("/runtime_modify?overload.premature_reset_total_stream_count=20").Status).To(Equal(200))
		Expect(rapidReset(1000)).To(BeNumerically("~", 10, 10))
	})

	DescribeTable("inbound floods end the connection with their stat",
		func(stat string, flood func(a *attacker, fr *http2.Framer)) {
			start("")
			a := dialAttacker(addr)
			before := rssKiB(s.session.Command.Process.Pid)
			chunk := a.frames(func(fr *http2.Framer) { flood(a, fr) })
			stop, wait := a.flood(chunk, 1)
			DeferCleanup(wait)
			Expect(a.goAway()).To(Equal(http2.ErrCodeEnhanceYourCalm))
			stop()
			a.ended()
			waitStat(s, stat, "1")
			Expect(rssKiB(s.session.Command.Process.Pid) - before).To(BeNumerically("<", 32<<10))
			Expect(up.requests.Load()).To(BeZero())
			stillServes()
		},
		Entry("empty CONTINUATION frames", "http2.inbound_empty_frames_flood", func(a *attacker, fr *http2.Framer) {
			_ = fr.WriteHeaders(http2.HeadersFrameParam{StreamID: 1, BlockFragment: a.request("/")[:2]})
			for range 200_000 {
				_ = fr.WriteContinuation(1, false, nil)
			}
		}),
		Entry("an endless header block (64 MiB of CONTINUATION frames)", "http2.header_overflow", func(a *attacker, fr *http2.Framer) {
			_ = fr.WriteHeaders(http2.HeadersFrameParam{StreamID: 1, BlockFragment: a.request("/")})
			fill := bytes.Repeat([]byte{0x80 | 16}, 16384)
			for range 4096 {
				_ = fr.WriteContinuation(1, false, fill)
			}
		}),
		Entry("empty DATA frames", "http2.inbound_empty_frames_flood", func(a *attacker, fr *http2.Framer) {
			_ = fr.WriteHeaders(http2.HeadersFrameParam{StreamID: 1, BlockFragment: a.request("/"), EndHeaders: true})
			for range 100_000 {
				_ = fr.WriteData(1, false, nil)
			}
		}),
		Entry("PRIORITY frames", "http2.inbound_priority_frames_flood", func(a *attacker, fr *http2.Framer) {
			for i := range 100_000 {
				_ = fr.WritePriority(uint32(2*i+1), http2.PriorityParam{Weight: 16})
			}
		}),
		Entry("WINDOW_UPDATE frames", "http2.inbound_window_update_frames_flood", func(a *attacker, fr *http2.Framer) {
			for range 100_000 {
				_ = fr.WriteWindowUpdate(0, 1)
			}
		}),
	)

	It("answers a malformed request with GOAWAY PROTOCOL_ERROR, as Envoy does by default", func() {
		start("")
		a := dialAttacker(addr)
		a.write(a.frames(func(fr *http2.Framer) {
			_ = fr.WriteHeaders(http2.HeadersFrameParam{StreamID: 1, BlockFragment: append(a.request("/"), 0x40, 1, 'X', 1, 'y'), EndStream: true, EndHeaders: true})
		}))
		Expect(a.goAway()).To(Equal(http2.ErrCodeProtocol))
		waitStat(s, "http2.rx_messaging_error", "1")
	})
})

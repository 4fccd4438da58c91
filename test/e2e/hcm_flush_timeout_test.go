package e2e

import (
	"bufio"
	"fmt"
	"net"
	"time"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"
	"golang.org/x/net/http2"
	"golang.org/x/net/http2/hpack"
)

// slowReader is an h2c client that grants a window of one byte and never
// opens it further: a client that does not read.
type slowReader struct {
	a  *attacker
	fr *http2.Framer
}

// dialSlowReader connects to addr with an initial stream window of 1.
func dialSlowReader(addr string) *slowReader {
	GinkgoHelper()
	nc, err := net.DialTimeout("tcp", addr, 5*time.Second)
	Expect(err).NotTo(HaveOccurred())
	DeferCleanup(nc.Close)
	a := &attacker{nc: nc}
	a.enc = hpack.NewEncoder(&a.blk)
	a.write(append([]byte(http2.ClientPreface), a.frames(func(fr *http2.Framer) {
		_ = fr.WriteSettings(http2.Setting{ID: http2.SettingInitialWindowSize, Val: 1})
	})...))
	return &slowReader{a: a, fr: http2.NewFramer(nil, bufio.NewReader(nc))}
}

// get sends a GET of path on stream 1 and reads until the stream ends: it
// returns the body bytes that came and the RST_STREAM code, or fails when
// the stream ends without a reset or nothing ends it within 10 seconds.
func (r *slowReader) get(path string) (int, http2.ErrCode) {
	GinkgoHelper()
	blk := r.a.request(path)
	r.a.write(r.a.frames(func(fr *http2.Framer) {
		_ = fr.WriteHeaders(http2.HeadersFrameParam{StreamID: 1, BlockFragment: blk, EndStream: true, EndHeaders: true})
	}))
	got := 0
	deadline := time.Now().Add(10 * time.Second)
	for range 1000 {
		_ = r.a.nc.SetReadDeadline(deadline)
		f, err := r.fr.ReadFrame()
		Expect(err).NotTo(HaveOccurred(), "no reset of the stream")
		switch f := f.(type) {
		case *http2.DataFrame:
			got += len(f.Data())
			Expect(f.StreamEnded()).To(BeFalse(), "the whole response came through a closed window")
		case *http2.RSTStreamFrame:
			return got, f.ErrCode
		case *http2.SettingsFrame:
			if !f.IsAck() {
				r.a.write(r.a.frames(func(fr *http2.Framer) { _ = fr.WriteSettingsAck() }))
			}
		}
	}
	Fail("no reset in 1000 frames")
	return 0, 0
}

var _ = Describe("HTTP connection manager stream_flush_timeout", func() {
	// The upstream answers "ok": two bytes, one more than the client's
	// window, so the response has all been produced when its write waits.
	start := func(hcm, routes string) *Sidecar {
		up := startCountingUpstream()
		port := freePort()
		s := Start(newDir(), proxySpec{
			Port:     port,
			HCM:      "{stat_prefix: ingress, codec_type: AUTO, " + hcm + "}",
			Routes:   routes,
			Clusters: []proxyCluster{{Name: "up", Port: portNum(up.addr)}},
		}.YAML())
		r := dialSlowReader(fmt.Sprintf("127.0.0.1:%d", port))
		got, _ := r.get("/")
		Expect(got).To(Equal(1), "the byte the window allowed")
		return s
	}

	It("resets an HTTP/2 stream whose client leaves its window closed after the whole response was produced, counting http2.tx_flush_timeout", func() {
		s := start("stream_flush_timeout: 0.5s, stream_idle_timeout: 300s", "")
		Eventually(func() string { return statValue(s, "http2.tx_flush_timeout") }, 5*time.Second).Should(Equal("1"))
		Expect(statValue(s, "http.ingress.downstream_rq_idle_timeout")).To(Equal("0"), "not the stream idle timeout")
	})

	It("takes a route's flush_timeout over stream_flush_timeout", func() {
		s := start("stream_flush_timeout: 300s, stream_idle_timeout: 300s", "[{match: {prefix: /}, route: {cluster: up, flush_timeout: 0.5s}}]")
		Eventually(func() string { return statValue(s, "http2.tx_flush_timeout") }, 5*time.Second).Should(Equal("1"))
	})

	It("falls back on stream_idle_timeout when no flush timeout is set", func() {
		s := start("stream_idle_timeout: 0.5s", "")
		Eventually(func() string { return statValue(s, "http2.tx_flush_timeout") }, 5*time.Second).Should(Equal("1"))
	})
})

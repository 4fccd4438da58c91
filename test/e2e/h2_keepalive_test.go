package e2e

import (
	"bufio"
	"fmt"
	"io"
	"net"
	"strings"
	"sync/atomic"
	"time"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"
	"golang.org/x/net/http2"
	"golang.org/x/net/http2/hpack"
)

// pingReader reads an HTTP/2 connection's frames in the background,
// answering the server's PINGs while answer is set, and records what it
// saw.
type pingReader struct {
	answer atomic.Bool
	pings  atomic.Int64
	closed chan struct{}
}

func readPings(a *attacker) *pingReader {
	r := &pingReader{closed: make(chan struct{})}
	r.answer.Store(true)
	go func() {
		defer close(r.closed)
		fr := http2.NewFramer(nil, bufio.NewReader(a.nc))
		for i := 0; i < 100_000; i++ {
			_ = a.nc.SetReadDeadline(time.Now().Add(20 * time.Second))
			f, err := fr.ReadFrame()
			if err != nil {
				return
			}
			p, ok := f.(*http2.PingFrame)
			if !ok || p.IsAck() {
				continue
			}
			r.pings.Add(1)
			if r.answer.Load() {
				_ = a.nc.SetWriteDeadline(time.Now().Add(5 * time.Second))
				if _, err := a.nc.Write(a.frames(func(w *http2.Framer) { _ = w.WritePing(true, p.Data) })); err != nil {
					return
				}
			}
		}
	}()
	return r
}

// silentH2Upstream is an h2c server that answers each request with "ok"
// and never answers a PING, like a peer that went away behind a
// middlebox; it counts the PINGs it got and the connections that ended.
type silentH2Upstream struct {
	addr  string
	pings atomic.Int64
	ended atomic.Int64
}

func startSilentH2Upstream() *silentH2Upstream {
	GinkgoHelper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	Expect(err).NotTo(HaveOccurred())
	DeferCleanup(func() { _ = ln.Close() })
	u := &silentH2Upstream{addr: ln.Addr().String()}
	go func() {
		for {
			nc, err := ln.Accept()
			if err != nil {
				return
			}
			go func() {
				defer u.ended.Add(1)
				defer nc.Close()
				preface := make([]byte, len(http2.ClientPreface))
				_ = nc.SetDeadline(time.Now().Add(30 * time.Second))
				if _, err := io.ReadFull(nc, preface); err != nil {
					return
				}
				fr := http2.NewFramer(nc, bufio.NewReader(nc))
				if fr.WriteSettings() != nil {
					return
				}
				var blk strings.Builder
				enc := hpack.NewEncoder(&stringWriter{&blk})
				for i := 0; i < 10_000; i++ {
					f, err := fr.ReadFrame()
					if err != nil {
						return
					}
					switch f := f.(type) {
					case *http2.SettingsFrame:
						if !f.IsAck() {
							_ = fr.WriteSettingsAck()
						}
					case *http2.PingFrame:
						if !f.IsAck() {
							u.pings.Add(1) // and no answer
						}
					case *http2.HeadersFrame:
						blk.Reset()
						_ = enc.WriteField(hpack.HeaderField{Name: ":status", Value: "200"})
						_ = fr.WriteHeaders(http2.HeadersFrameParam{StreamID: f.StreamID, BlockFragment: []byte(blk.String()), EndHeaders: true})
						_ = fr.WriteData(f.StreamID, true, []byte("ok"))
					}
				}
			}()
		}
	}()
	return u
}

// keepaliveClusterBootstrap routes a listener on port to an h2c cluster at
// upAddr (on 127.0.0.1) whose http2_protocol_options.connection_keepalive is
// keepalive (a YAML flow mapping).
func keepaliveClusterBootstrap(port int, upAddr, keepalive string) string {
	GinkgoHelper()
	return proxySpec{
		Port: port,
		Clusters: []proxyCluster{{Name: "grpc", Port: portNum(upAddr),
			Extra: httpProtocolOptions(`{explicit_http_config: {http2_protocol_options: {connection_keepalive: ` + keepalive + `}}}`)}},
	}.YAML()
}

// stringWriter adapts a strings.Builder to io.Writer for the encoder.
type stringWriter struct{ b *strings.Builder }

func (w *stringWriter) Write(p []byte) (int, error) { return w.b.Write(p) }

var _ = Describe("HTTP/2 connection_keepalive", func() {
	It("pings a client every interval while it answers, and cuts it off when it stops, counting http2.keepalive_timeout", func() {
		up := startCountingUpstream()
		port := freePort()
		s := Start(newDir(), floodBootstrap(port, up.addr, "connection_keepalive: {interval: 0.2s, timeout: 0.5s}"))
		a := dialAttacker(fmt.Sprintf("127.0.0.1:%d", port))
		r := readPings(a)
		Eventually(r.pings.Load, 10*time.Second).Should(BeNumerically(">=", 3), "PINGs at the interval")
		Consistently(r.closed, time.Second).ShouldNot(BeClosed(), "an answering client is kept")
		Expect(statValue(s, "http2.keepalive_timeout")).To(Equal("0"))

		r.answer.Store(false)
		Eventually(r.closed, 10*time.Second).Should(BeClosed(), "the connection was cut")
		Expect(statValue(s, "http2.keepalive_timeout")).To(Equal("1"))
	})

	It("pings an h2c upstream that has gone quiet, and closes the connection when no answer comes, counting cluster.<name>.http2.keepalive_timeout", func() {
		up := startSilentH2Upstream()
		port := freePort()
		s := Start(newDir(), keepaliveClusterBootstrap(port, up.addr, "{interval: 0.3s, timeout: 0.5s}"))
		r := httpDo(httpClients()["HTTP/1.1"], "GET", listenerURL(port, "/"), nil, nil)
		Expect(r.Status).To(Equal(200))
		Expect(r.Body).To(Equal("ok"))
		Eventually(up.pings.Load, 10*time.Second).Should(BeNumerically(">=", 1), "a PING after the interval without frames")
		Eventually(up.ended.Load, 10*time.Second).Should(BeNumerically(">=", 1), "the unanswered connection was closed")
		Eventually(func() string { return statValue(s, "cluster.grpc.http2.keepalive_timeout") }, 5*time.Second).Should(Equal("1"))
		Expect(statValue(s, "cluster.grpc.upstream_cx_destroy")).To(Equal("1"))
	})

	It("refuses a jitter on a cluster's keepalive, and connection_idle_interval anywhere, with their paths", func() {
		r, _ := validate("bootstrap.yaml", floodBootstrap(freePort(), "127.0.0.1:1", "connection_keepalive: {interval: 1s, timeout: 1s, connection_idle_interval: 5s}"))
		Expect(r.ExitCode).To(Equal(1))
		Expect(r.Stderr).To(ContainSubstring("typed_config.http2_protocol_options.connection_keepalive.connection_idle_interval: not supported by Outrigger"))
		r, _ = validate("bootstrap.yaml", keepaliveClusterBootstrap(freePort(), "127.0.0.1:1", "{interval: 1s, timeout: 1s, interval_jitter: {value: 10}}"))
		Expect(r.ExitCode).To(Equal(1))
		Expect(r.Stderr).To(ContainSubstring(`static_resources.clusters[0].typed_extension_protocol_options["envoy.extensions.upstreams.http.v3.HttpProtocolOptions"].explicit_http_config.http2_protocol_options.connection_keepalive.interval_jitter: not supported by Outrigger on a cluster (upstream keepalive PINGs have no jitter)`))
	})
})

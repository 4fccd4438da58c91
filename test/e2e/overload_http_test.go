package e2e

import (
	"bufio"
	"bytes"
	"fmt"
	"io"
	"net"
	"strings"
	"time"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"
	"golang.org/x/net/http2"
	"golang.org/x/net/http2/hpack"
)

// The overload manager's HTTP actions, driven by real heap pressure (a
// fixed_heap monitor allowing far less than the sidecar uses): the
// connection manager sheds requests, closes connections after their
// response, and shortens its idle timeouts.

// overloadChainStats is the stat scope of overloadConfig's connection
// manager (directChain names it after its body).
const overloadChainStats = "http.chain_hello."

var _ = Describe("Overload manager HTTP actions", func() {
	It("sheds requests with 503 while stop_accepting_requests is active, on HTTP/1 and HTTP/2", func() {
		s := Start(newDir(), overloadConfig(heapOverload("envoy.overload_actions.stop_accepting_requests"), ""))
		waitStat(s, "overload.envoy.overload_actions.stop_accepting_requests.active", "1")
		addr := listenerAddr(s, "web")
		for name, client := range httpClients() {
			resp, err := client.Get("http://" + addr + "/")
			Expect(err).NotTo(HaveOccurred(), name)
			body, _ := io.ReadAll(resp.Body)
			resp.Body.Close()
			Expect(resp.StatusCode).To(Equal(503), name)
			Expect(string(body)).To(Equal("envoy overloaded"), name)
			Expect(resp.Header.Values("x-envoy-local-overloaded")).To(BeEmpty(), name)
		}
		Expect(statValue(s, overloadChainStats+"downstream_rq_overload_close")).To(Equal("2"))
		Expect(statValue(s, overloadChainStats+"downstream_rq_5xx")).To(Equal("2"))
		Expect(s.Get("/ready").Status).To(Equal(200), "the admin is never shed")
	})

	It("marks the shed requests' 503 with x-envoy-local-overloaded under append_local_overload", func() {
		cfg := overloadConfig(heapOverload("envoy.overload_actions.stop_accepting_requests"), "")
		Expect(cfg).To(ContainSubstring(`stat_prefix: "chain_hello", `))
		s := Start(newDir(), strings.Replace(cfg, `stat_prefix: "chain_hello", `, `stat_prefix: "chain_hello", append_local_overload: true, `, 1))
		waitStat(s, "overload.envoy.overload_actions.stop_accepting_requests.active", "1")
		addr := listenerAddr(s, "web")
		for name, client := range httpClients() {
			resp, err := client.Get("http://" + addr + "/")
			Expect(err).NotTo(HaveOccurred(), name)
			_, _ = io.ReadAll(resp.Body)
			resp.Body.Close()
			Expect(resp.StatusCode).To(Equal(503), name)
			Expect(resp.Header.Values("x-envoy-local-overloaded")).To(Equal([]string{"true"}), name)
		}
	})

	It("leaves a bypass_overload_manager listener alone: no shed requests, no refused connections", func() {
		for _, action := range []string{"envoy.overload_actions.stop_accepting_requests", "envoy.overload_actions.stop_accepting_connections"} {
			s := Start(newDir(), overloadConfig(heapOverload(action), "bypass_overload_manager: true"))
			waitStat(s, "overload."+action+".active", "1")
			addr := listenerAddr(s, "web")
			for name, client := range httpClients() {
				resp, err := client.Get("http://" + addr + "/")
				Expect(err).NotTo(HaveOccurred(), "%s %s", action, name)
				body, _ := io.ReadAll(resp.Body)
				resp.Body.Close()
				Expect(resp.StatusCode).To(Equal(200), "%s %s", action, name)
				Expect(string(body)).To(Equal("hello"), "%s %s", action, name)
			}
			Expect(statValue(s, overloadChainStats+"downstream_rq_overload_close")).To(Equal("0"))
		}
	})

	It("closes connections after their response while disable_http_keepalive is active", func() {
		s := Start(newDir(), overloadConfig(heapOverload("envoy.overload_actions.disable_http_keepalive"), ""))
		waitStat(s, "overload.envoy.overload_actions.disable_http_keepalive.active", "1")
		addr := listenerAddr(s, "web")

		By("HTTP/1.1: the response says connection: close, and the connection ends")
		c, err := net.DialTimeout("tcp", addr, 5*time.Second)
		Expect(err).NotTo(HaveOccurred())
		DeferCleanup(c.Close)
		_ = c.SetDeadline(time.Now().Add(5 * time.Second))
		_, err = io.WriteString(c, "GET / HTTP/1.1\r\nHost: web\r\n\r\n")
		Expect(err).NotTo(HaveOccurred())
		all, err := io.ReadAll(bufio.NewReader(c))
		Expect(err).NotTo(HaveOccurred(), "the sidecar closes the connection after the response")
		Expect(string(all)).To(HavePrefix("HTTP/1.1 200 OK\r\n"))
		Expect(strings.ToLower(string(all))).To(ContainSubstring("\r\nconnection: close\r\n"))

		By("HTTP/2: the response comes with a GOAWAY")
		h := dialH2Frames(addr)
		h.get(1)
		Expect(h.untilGoAway()).To(Equal(http2.ErrCodeNo))

		Expect(statValue(s, overloadChainStats+"downstream_cx_overload_disable_keepalive")).To(Equal("2"))
		Expect(statValue(s, overloadChainStats+"downstream_cx_drain_close")).To(Equal("2"))
	})

	It("shortens the idle timeout while reduce_timeouts is active", func() {
		action := `{name: envoy.overload_actions.reduce_timeouts, triggers: [{name: envoy.resource_monitors.fixed_heap, threshold: {value: 0.5}}], ` +
			`typed_config: {"@type": type.googleapis.com/envoy.config.overload.v3.ScaleTimersOverloadActionConfig, ` +
			`timer_scale_factors: [{timer: HTTP_DOWNSTREAM_CONNECTION_IDLE, min_timeout: 0.3s}]}}`
		om := fmt.Sprintf(`{refresh_interval: 0.05s, resource_monitors: [{name: envoy.resource_monitors.fixed_heap, `+
			`typed_config: {"@type": %s, max_heap_size_bytes: 1048576}}], actions: [%s]}`, fixedHeapURL, action)
		s := Start(newDir(), overloadConfig(om, ""))
		waitStat(s, "overload.envoy.overload_actions.reduce_timeouts.active", "1")
		addr := listenerAddr(s, "web")
		// The configured idle timeout is Envoy's default, an hour; the
		// action brings it down to 0.3 s.
		h := served(addr)
		start := time.Now()
		_ = h.c.SetReadDeadline(time.Now().Add(5 * time.Second))
		_, err := h.r.ReadByte()
		Expect(err).To(MatchError(io.EOF), "the idle connection is closed")
		Expect(time.Since(start)).To(BeNumerically("<", 3*time.Second))
		Expect(statValue(s, overloadChainStats+"downstream_cx_idle_timeout")).To(Equal("1"))
	})
})

// h2Frames is a minimal HTTP/2 client that reads frames itself.
type h2Frames struct {
	nc net.Conn
	fr *http2.Framer
}

// dialH2Frames opens an h2c connection: the preface and empty SETTINGS.
func dialH2Frames(addr string) *h2Frames {
	GinkgoHelper()
	nc, err := net.DialTimeout("tcp", addr, 5*time.Second)
	Expect(err).NotTo(HaveOccurred())
	DeferCleanup(nc.Close)
	_ = nc.SetDeadline(time.Now().Add(10 * time.Second))
	_, err = io.WriteString(nc, http2.ClientPreface)
	Expect(err).NotTo(HaveOccurred())
	h := &h2Frames{nc: nc, fr: http2.NewFramer(nc, nc)}
	Expect(h.fr.WriteSettings()).To(Succeed())
	return h
}

// get sends GET / on stream id.
func (h *h2Frames) get(id uint32) {
	GinkgoHelper()
	var b bytes.Buffer
	enc := hpack.NewEncoder(&b)
	for _, f := range []hpack.HeaderField{
		{Name: ":method", Value: "GET"}, {Name: ":scheme", Value: "http"},
		{Name: ":authority", Value: "web"}, {Name: ":path", Value: "/"},
	} {
		_ = enc.WriteField(f)
	}
	Expect(h.fr.WriteHeaders(http2.HeadersFrameParam{StreamID: id, BlockFragment: b.Bytes(), EndStream: true, EndHeaders: true})).To(Succeed())
}

// untilGoAway reads frames, acknowledging SETTINGS, until a GOAWAY.
func (h *h2Frames) untilGoAway() http2.ErrCode {
	GinkgoHelper()
	for range 1000 {
		f, err := h.fr.ReadFrame()
		Expect(err).NotTo(HaveOccurred(), "no GOAWAY before the connection ended")
		switch f := f.(type) {
		case *http2.SettingsFrame:
			if !f.IsAck() {
				Expect(h.fr.WriteSettingsAck()).To(Succeed())
			}
		case *http2.GoAwayFrame:
			return f.ErrCode
		}
	}
	Fail("no GOAWAY in 1000 frames")
	return 0
}

package e2e

import (
	"net/http"
	"path/filepath"
	"time"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"
)

// cancelSeenUpstream holds each request until its connection from the
// proxy closes (or 30 s pass) and reports which path saw that.
type cancelSeenUpstream struct {
	arrived, cancelled chan string
}

func (u *cancelSeenUpstream) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	u.arrived <- r.URL.Path
	select {
	case <-r.Context().Done():
		u.cancelled <- r.URL.Path
	case <-time.After(30 * time.Second):
		_, _ = w.Write([]byte("late"))
	}
}

var _ = Describe("An HTTP/1.1 client that closes its connection while its request waits on the upstream", func() {
	for _, h2 := range []bool{false, true} {
		name := "an HTTP/1.1 upstream"
		if h2 {
			name = "an HTTP/2 upstream"
		}
		It("resets the upstream request well before the route timeout, with "+name, func() {
			up := &cancelSeenUpstream{arrived: make(chan string, 4), cancelled: make(chan string, 4)}
			addr := httpTestUpstream(up, h2)
			extra := ""
			if h2 {
				extra = `{typed_extension_protocol_options: {envoy.extensions.upstreams.http.v3.HttpProtocolOptions: {"@type": type.googleapis.com/envoy.extensions.upstreams.http.v3.HttpProtocolOptions, explicit_http_config: {http2_protocol_options: {}}}}}`
			}
			port, dir := freePort(), newDir()
			s := Start(dir, proxySpec{
				Port:     port,
				HCM:      `{stat_prefix: gone, access_log: [` + fileLog(filepath.Join(dir, "access.log"), "%REQ(:PATH)% %RESPONSE_CODE% %RESPONSE_FLAGS%\n") + `]}`,
				Routes:   `[{match: {prefix: /}, route: {cluster: slow, timeout: 60s}}]`,
				Clusters: []proxyCluster{{Name: "slow", Port: portNum(addr), Extra: extra}},
			}.YAML(), "--file-flush-interval-msec", "20")
			s.WaitLive()

			c := dialTCP(port)
			_, err := c.Write([]byte("GET /held HTTP/1.1\r\nHost: x\r\n\r\n"))
			Expect(err).NotTo(HaveOccurred())
			Eventually(up.arrived, 10*time.Second).Should(Receive(Equal("/held")))
			Expect(c.Close()).To(Succeed())

			// Envoy resets the upstream request as the client's close
			// comes; here the sweep sees it within two of its periods,
			// far from the route's 60 s.
			Eventually(up.cancelled, 10*time.Second).Should(Receive(Equal("/held")))
			Eventually(func() string { return readFile(filepath.Join(dir, "access.log")) }, 5*time.Second).Should(Equal("/held 0 DC\n"))
			Expect(httpStat(s, "http.gone.downstream_rq_rx_reset")).To(Equal("1"))
			Expect(httpStat(s, "http.gone.downstream_cx_destroy_active_rq")).To(Equal("1"))
			Eventually(func() []string {
				return []string{httpStat(s, "http.gone.downstream_cx_destroy_remote"), httpStat(s, "http.gone.downstream_cx_destroy_remote_active_rq")}
			}, 5*time.Second).Should(Equal([]string{"1", "1"}))
			Expect(httpStat(s, "http.gone.downstream_cx_destroy_local_active_rq")).To(Equal("0"))
			Expect(httpStat(s, "cluster.slow.upstream_rq_timeout")).To(Equal("0"))

			Expect(httpStat(s, "http.gone.downstream_rq_completed")).To(Equal("1"))
		})
	}
})

package e2e

import (
	"fmt"
	"io"
	"net"
	"net/http"
	"strings"
	"time"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"
)

// slowHCUpstream is an hcUpstream whose /slow requests wait for release
// (or for their connection to go) before answering, and say on arrived
// that they are in.
type slowHCUpstream struct {
	*hcUpstream
	arrived, release chan struct{}
}

func newSlowHCUpstream() *slowHCUpstream {
	GinkgoHelper()
	u := &slowHCUpstream{hcUpstream: &hcUpstream{name: "slow"}, arrived: make(chan struct{}, 1), release: make(chan struct{})}
	u.mode.Store("ok")
	u.addr = httpTestUpstream(u, false)
	return u
}

func (u *slowHCUpstream) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	if r.URL.Path != "/slow" {
		u.hcUpstream.ServeHTTP(w, r)
		return
	}
	u.arrived <- struct{}{}
	select {
	case <-u.release:
	case <-r.Context().Done():
	}
	_, _ = io.WriteString(w, "done")
}

var _ = Describe("close_connections_on_host_health_failure", func() {
	const fast = `timeout: 1s, interval: 0.1s, no_traffic_interval: 0.1s, unhealthy_threshold: 1, healthy_threshold: 1`

	for _, closeConns := range []bool{true, false} {
		It(fmt.Sprintf("with %v, an HTTP request in flight to a host failing its checks is answered, then its connection closes", closeConns), func() {
			u := newSlowHCUpstream()
			port, dir := freePort(), newDir()
			s := Start(dir, proxySpec{Port: port, Clusters: []proxyCluster{{Name: "web", Port: portNum(u.addr),
				Extra: fmt.Sprintf(`{close_connections_on_host_health_failure: %v, health_checks: [{%s, http_health_check: {path: /healthz}}]}`, closeConns, fast)}}}.YAML())
			s.WaitLive()
			Expect(clusterHostFlags(s, "web", u.addr)).To(Equal("healthy"))

			type answer struct {
				status int
				body   string
			}
			got := make(chan answer, 1)
			go func() {
				defer GinkgoRecover()
				resp, err := http.Get(fmt.Sprintf("http://127.0.0.1:%d/slow", port))
				Expect(err).NotTo(HaveOccurred())
				b, _ := io.ReadAll(resp.Body)
				_ = resp.Body.Close()
				got <- answer{resp.StatusCode, string(b)}
			}()
			Eventually(u.arrived, 10*time.Second).Should(Receive())
			Expect(statValue(s, "cluster.web.upstream_cx_active")).To(Equal("1"))

			u.set("503")
			Eventually(func() string { return clusterHostFlags(s, "web", u.addr) }, 10*time.Second, 50*time.Millisecond).Should(Equal("/failed_active_hc"))
			// The HTTP pool drains, as Envoy's: the request keeps its
			// connection, which closes once the response is through.
			Expect(statValue(s, "cluster.web.upstream_cx_active")).To(Equal("1"))
			close(u.release)
			var a answer
			Eventually(got, 10*time.Second).Should(Receive(&a))
			Expect(a).To(Equal(answer{200, "done"}))
			Eventually(func() string { return statValue(s, "cluster.web.upstream_cx_active") }, 10*time.Second).Should(Equal("0"))
			Expect(statValue(s, "cluster.web.upstream_cx_destroy_local_with_active_rq")).To(Equal("0"))
		})

		It(fmt.Sprintf("with %v, a TCP proxy connection to a host failing its checks is %s", closeConns,
			map[bool]string{true: "closed at once", false: "kept"}[closeConns]), func() {
			ln, err := net.Listen("tcp", "127.0.0.1:0")
			Expect(err).NotTo(HaveOccurred())
			// The spec closes the listener itself; this is for a spec
			// that fails before.
			DeferCleanup(func() { _ = ln.Close() })
			go func() {
				for {
					c, err := ln.Accept()
					if err != nil {
						return
					}
					// Ends when the proxy closes its side.
					go func() { _, _ = io.Copy(c, c); _ = c.Close() }()
				}
			}()
			upPort := portNum(ln.Addr().String())
			port, dir := freePort(), newDir()
			cl := strings.TrimSuffix(tcpCluster("up", upPort), "}") +
				fmt.Sprintf(`, close_connections_on_host_health_failure: %v, health_checks: [{%s, tcp_health_check: {}}]}`, closeConns, fast)
			s := Start(dir, tcpBootstrap(port, "cluster: up", cl))
			s.WaitLive()
			upAddr := ln.Addr().String()
			Expect(clusterHostFlags(s, "up", upAddr)).To(Equal("healthy"))

			conn, err := net.Dial("tcp", fmt.Sprintf("127.0.0.1:%d", port))
			Expect(err).NotTo(HaveOccurred())
			defer conn.Close()
			echo := func() error {
				if _, err := conn.Write([]byte("ping")); err != nil {
					return err
				}
				_ = conn.SetReadDeadline(time.Now().Add(5 * time.Second))
				_, err := io.ReadFull(conn, make([]byte, 4))
				return err
			}
			Expect(echo()).To(Succeed())

			// The host stops accepting: its checks fail, the open
			// connection is still there.
			Expect(ln.Close()).To(Succeed())
			Eventually(func() string { return clusterHostFlags(s, "up", upAddr) }, 10*time.Second, 50*time.Millisecond).Should(Equal("/failed_active_hc"))
			if closeConns {
				_ = conn.SetReadDeadline(time.Now().Add(10 * time.Second))
				_, err := conn.Read(make([]byte, 1))
				Expect(err).To(MatchError(io.EOF))
				Eventually(func() string { return statValue(s, "cluster.up.upstream_cx_active") }, 10*time.Second).Should(Equal("0"))
				return
			}
			Expect(echo()).To(Succeed())
			Expect(statValue(s, "cluster.up.upstream_cx_active")).To(Equal("1"))
		})
	}
})

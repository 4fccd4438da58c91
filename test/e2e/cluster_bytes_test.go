package e2e

import (
	"bufio"
	"bytes"
	"fmt"
	"io"
	"net"
	"net/http"
	"strconv"
	"strings"
	"sync/atomic"
	"time"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"
)

// countingConn counts the bytes read from and written to a connection.
type countingConn struct {
	net.Conn
	rx, tx *atomic.Int64
}

func (c countingConn) Read(p []byte) (int, error) {
	n, err := c.Conn.Read(p)
	c.rx.Add(int64(n))
	return n, err
}

func (c countingConn) Write(p []byte) (int, error) {
	n, err := c.Conn.Write(p)
	c.tx.Add(int64(n))
	return n, err
}

// startByteCountingHTTP1 serves HTTP/1.1 on raw sockets, counting every
// byte it reads and writes: GET /big answers a body of bigBody bytes, any
// other request "ok" after reading its body. It returns its port and the
// counts (bytes it read, bytes it wrote).
func startByteCountingHTTP1(bigBody int) (port int, rx, tx *atomic.Int64) {
	rx, tx = new(atomic.Int64), new(atomic.Int64)
	big := bytes.Repeat([]byte("b"), bigBody)
	port = startTCPServer(func(raw *net.TCPConn) {
		c := countingConn{Conn: raw, rx: rx, tx: tx}
		br := bufio.NewReader(c)
		for {
			req, err := http.ReadRequest(br)
			if err != nil {
				return
			}
			_, _ = io.Copy(io.Discard, req.Body)
			body := []byte("ok")
			if req.URL.Path == "/big" {
				body = big
			}
			if _, err := fmt.Fprintf(c, "HTTP/1.1 200 OK\r\nContent-Length: %d\r\n\r\n%s", len(body), body); err != nil {
				return
			}
		}
	})
	return port, rx, tx
}

var _ = Describe("Cluster connection bytes and closes", func() {
	It("counts the bytes of an HTTP cluster's connections, spliced bodies included", func() {
		up, rx, tx := startByteCountingHTTP1(1 << 20)
		port := freePort()
		s := Start(newDir(), proxySpec{Port: port, Clusters: []proxyCluster{{Name: "web", Port: up}}}.YAML())
		client := &http.Client{Timeout: 20 * time.Second}
		do := func(method, path, body string, want int) {
			GinkgoHelper()
			req, err := http.NewRequest(method, "http://127.0.0.1:"+strconv.Itoa(port)+path, strings.NewReader(body))
			Expect(err).NotTo(HaveOccurred())
			resp, err := client.Do(req)
			Expect(err).NotTo(HaveOccurred())
			got, err := io.ReadAll(resp.Body)
			_ = resp.Body.Close()
			Expect(err).NotTo(HaveOccurred())
			Expect(resp.StatusCode).To(Equal(200))
			Expect(got).To(HaveLen(want))
		}
		do("GET", "/small", "", 2)
		do("POST", "/post", strings.Repeat("p", 100_000), 2)
		do("GET", "/big", "", 1<<20) // its body is spliced
		do("GET", "/small", "", 2)

		// The upstream has read every request and written every answer
		// by the time the client has the answer; what it counted is what
		// the cluster's connections carried.
		Expect(statValue(s, "cluster.web.upstream_cx_rx_bytes_total")).To(Equal(strconv.FormatInt(tx.Load(), 10)))
		Expect(statValue(s, "cluster.web.upstream_cx_tx_bytes_total")).To(Equal(strconv.FormatInt(rx.Load(), 10)))
		Expect(tx.Load()).To(BeNumerically(">", 1<<20))
		Expect(rx.Load()).To(BeNumerically(">", 100_000))
		Expect(statValue(s, "cluster.web.upstream_cx_rx_bytes_buffered")).To(Equal("0"))
		Expect(statValue(s, "cluster.web.upstream_cx_tx_bytes_buffered")).To(Equal("0"))
	})

	It("counts the bytes of a tcp_proxy cluster's connections, small and bulk", func() {
		up := startTCPServer(echo)
		port := freePort()
		s := Start(newDir(), tcpBootstrap(port, "cluster: echo", tcpCluster("echo", up)))
		total := 0
		for _, size := range []int{100, 1 << 20} { // the event loop's path, then the bulk hand-off
			c := dialTCP(port)
			msg := bytes.Repeat([]byte("e"), size)
			go func() {
				defer GinkgoRecover()
				_, err := c.Write(msg)
				Expect(err).NotTo(HaveOccurred())
				Expect(c.CloseWrite()).To(Succeed())
			}()
			got, err := io.ReadAll(c)
			Expect(err).NotTo(HaveOccurred())
			Expect(got).To(HaveLen(size))
			total += size
		}
		n := strconv.Itoa(total)
		Eventually(func() string { return statValue(s, "cluster.echo.upstream_cx_active") }).Should(Equal("0"))
		Expect(statValue(s, "cluster.echo.upstream_cx_tx_bytes_total")).To(Equal(n))
		Expect(statValue(s, "cluster.echo.upstream_cx_rx_bytes_total")).To(Equal(n))
		Expect(statValue(s, "cluster.echo.upstream_cx_tx_bytes_buffered")).To(Equal("0"))
		Expect(statValue(s, "cluster.echo.upstream_cx_rx_bytes_buffered")).To(Equal("0"))
		// The echo server ended both connections (after the clients'
		// FIN): closed by the host.
		Expect(statValue(s, "cluster.echo.upstream_cx_destroy_remote")).To(Equal("2"))
		Expect(statValue(s, "cluster.echo.upstream_cx_destroy_local")).To(Equal("0"))
	})
})

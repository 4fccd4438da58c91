package e2e

import (
	"bufio"
	"errors"
	"io"
	"syscall"
	"time"

	"net"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"
)

// tickBytes writes a byte every 10ms until the connection fails, reading
// nothing.
func tickBytes(c *net.TCPConn) {
	for {
		if _, err := c.Write([]byte("t")); err != nil {
			return
		}
		time.Sleep(10 * time.Millisecond)
	}
}

var _ = Describe("TCP proxy per-side idle timeouts", func() {
	It("closes a connection whose client says nothing for downstream_idle_timeout, however much the upstream sends", func() {
		up := startTCPServer(tickBytes)
		port := freePort()
		s := Start(newDir(), tcpBootstrap(port, "cluster: up, downstream_idle_timeout: 0.3s", tcpCluster("up", up)))
		c := dialTCP(port)
		// Without the timer, the ticks go on until the 20s deadline.
		got, err := io.ReadAll(c)
		Expect(err).NotTo(HaveOccurred())
		Expect(got).NotTo(BeEmpty())
		Expect(statValue(s, "tcp.front.idle_timeout")).To(Equal("1"))
	})

	It("closes a connection whose upstream says nothing for upstream_idle_timeout, however much the client sends", func() {
		up := startTCPServer(func(c *net.TCPConn) { _, _ = io.Copy(io.Discard, c) })
		port := freePort()
		s := Start(newDir(), tcpBootstrap(port, "cluster: up, upstream_idle_timeout: 0.3s", tcpCluster("up", up)))
		c := dialTCP(port)
		closed := make(chan error, 1)
		go func() {
			_, err := io.ReadAll(c)
			closed <- err
		}()
		tick := time.NewTicker(10 * time.Millisecond)
		defer tick.Stop()
	writing:
		for {
			select {
			case err := <-closed:
				// With the client's bytes unread, the proxy's close is
				// a reset; only the deadline would be a failure.
				if err != nil {
					Expect(errors.Is(err, syscall.ECONNRESET)).To(BeTrue(), "read: %v", err)
				}
				break writing
			case <-tick.C:
				_, _ = c.Write([]byte("d")) // fails once the proxy closed
			}
		}
		Expect(statValue(s, "tcp.front.idle_timeout")).To(Equal("1"))
	})

	It("keeps a connection whose client keeps sending past downstream_idle_timeout while the upstream is silent", func() {
		// Silent until it reads "!", then answers "ok".
		up := startTCPServer(func(c *net.TCPConn) {
			if _, err := bufio.NewReader(c).ReadString('!'); err == nil {
				_, _ = c.Write([]byte("ok"))
				_ = c.CloseWrite()
			}
		})
		port := freePort()
		s := Start(newDir(), tcpBootstrap(port, "cluster: up, downstream_idle_timeout: 0.5s, upstream_idle_timeout: 0s", tcpCluster("up", up)))
		c := dialTCP(port)
		for end := time.Now().Add(1500 * time.Millisecond); time.Now().Before(end); {
			_, err := c.Write([]byte("."))
			Expect(err).NotTo(HaveOccurred())
			time.Sleep(10 * time.Millisecond)
		}
		_, err := c.Write([]byte("!"))
		Expect(err).NotTo(HaveOccurred())
		got, err := io.ReadAll(c)
		Expect(err).NotTo(HaveOccurred())
		Expect(string(got)).To(Equal("ok"))
		Expect(statValue(s, "tcp.front.idle_timeout")).To(Equal("0"))
	})
})

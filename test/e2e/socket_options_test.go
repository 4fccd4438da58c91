package e2e

import (
	"fmt"
	"net"
	"os/exec"
	"strings"
	"syscall"
	"time"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"
)

// socketOptionsBootstrap is a listener with the given socket_options (a
// YAML flow list) answering "hi" itself.
func socketOptionsBootstrap(port int, opts string) string {
	return proxySpec{
		Port:     port,
		Listener: "{freebind: true, socket_options: " + opts + "}",
		Routes:   "[{match: {prefix: /}, direct_response: {status: 200, body: {inline_string: hi}}}]",
	}.YAML()
}

var _ = Describe("Listener socket_options and freebind", func() {
	It("sets the options on the listening sockets, as ss shows them", func() {
		port := freePort()
		// SO_RCVBUF (SOL_SOCKET 1, 8) before bind: the kernel doubles it.
		s := Start(newDir(), socketOptionsBootstrap(port, "[{description: rcvbuf, level: 1, name: 8, int_value: 65536, state: STATE_PREBIND}]"))
		Expect(httpDo(httpClients()["HTTP/1.1"], "GET", listenerURL(port, "/"), nil, nil).Body).To(Equal("hi"))
		out, err := exec.Command("ss", "-tlnm", fmt.Sprintf("sport = :%d", port)).CombinedOutput()
		Expect(err).NotTo(HaveOccurred(), "%s", out)
		Expect(string(out)).To(ContainSubstring("rb131072"), "every worker's socket has the buffer:\n%s", out)
		Expect(strings.Count(string(out), "rb131072")).To(Equal(strings.Count(string(out), "LISTEN")))
		Expect(s.Running()).To(BeTrue())
	})

	It("fails to start with the setsockopt error when the kernel refuses an option", func() {
		s := Launch(newDir(), "bootstrap.yaml", socketOptionsBootstrap(freePort(), "[{level: 1, name: 99999, int_value: 1}]"))
		Expect(s.Wait(10 * time.Second)).To(Equal(1))
		Expect(s.Stderr()).To(ContainSubstring("setsockopt(level 1, name 99999): protocol not available"))
	})

	It("refuses a value that is not an int with its path", func() {
		r, _ := validate("bootstrap.yaml", socketOptionsBootstrap(freePort(), "[{level: 1, name: 8, int_value: 99999999999}]"))
		Expect(r.ExitCode).To(Equal(1))
		Expect(r.Stderr).To(ContainSubstring("static_resources.listeners[0].socket_options[0].int_value: 99999999999 does not fit in a C int"))
	})

	It("sets tcp_backlog_size and tcp_keepalive, which the accepted connections inherit", func() {
		port := freePort()
		s := Start(newDir(), proxySpec{
			Port:     port,
			Listener: "{tcp_backlog_size: 5, tcp_keepalive: {keepalive_time: 9, keepalive_interval: 3, keepalive_probes: 2}}",
			Routes:   "[{match: {prefix: /}, direct_response: {status: 200, body: {inline_string: hi}}}]",
		}.YAML())
		// ss shows a listening socket's backlog as its Send-Q.
		out, err := exec.Command("ss", "-Htln", fmt.Sprintf("sport = :%d", port)).CombinedOutput()
		Expect(err).NotTo(HaveOccurred(), "%s", out)
		lines := strings.Split(strings.TrimSpace(string(out)), "\n")
		Expect(lines).NotTo(BeEmpty())
		for _, l := range lines {
			Expect(strings.Fields(l)).To(HaveLen(5), "%s", out)
			Expect(strings.Fields(l)[2]).To(Equal("5"), "every worker's socket has the backlog:\n%s", out)
		}
		// A connection held open: the proxy's side of it runs the
		// keep-alive timer, started at the 9 s idle time.
		c, err := net.Dial("tcp", fmt.Sprintf("127.0.0.1:%d", port))
		Expect(err).NotTo(HaveOccurred())
		defer c.Close()
		Expect(getOn(c)).To(ContainSubstring("hi"))
		out, err = exec.Command("ss", "-Htno", "state", "established", fmt.Sprintf("sport = :%d", port)).CombinedOutput()
		Expect(err).NotTo(HaveOccurred(), "%s", out)
		// ss prints 8.996 s as "8.996ms" and 9 s as "9sec"; the system's
		// default (2 hours) would read "119min".
		Expect(string(out)).To(MatchRegexp(`timer:\(keepalive,([0-8]\.[0-9]{3}ms|9sec),0\)`), "the accepted socket keeps alive within 9 s:\n%s", out)
		Expect(s.Running()).To(BeTrue())
	})

	It("refuses a backlog that does not fit in a C int with its path", func() {
		r, _ := validate("bootstrap.yaml", proxySpec{
			Port:     freePort(),
			Listener: "{tcp_backlog_size: 4294967295}",
			Routes:   "[{match: {prefix: /}, direct_response: {status: 200}}]",
		}.YAML())
		Expect(r.ExitCode).To(Equal(1))
		Expect(r.Stderr).To(ContainSubstring("static_resources.listeners[0].tcp_backlog_size: 4294967295 does not fit in a C int"))
	})

	It("listens with MPTCP sockets only with enable_mptcp, serving plain TCP clients either way", func() {
		mptcpListening := func(port int) bool {
			GinkgoHelper()
			// ss -M lists TCP and MPTCP sockets; an MPTCP one's Netid
			// is mptcp.
			out, err := exec.Command("ss", "-HMltn", fmt.Sprintf("sport = :%d", port)).CombinedOutput()
			Expect(err).NotTo(HaveOccurred(), "%s", out)
			for _, l := range strings.Split(string(out), "\n") {
				if strings.HasPrefix(l, "mptcp") {
					return true
				}
			}
			return false
		}
		spec := func(port int, listener string) string {
			return proxySpec{Port: port, Listener: listener, Routes: "[{match: {prefix: /}, direct_response: {status: 200, body: {inline_string: hi}}}]"}.YAML()
		}
		plain := freePort()
		Start(newDir(), spec(plain, "{}"))
		Expect(mptcpListening(plain)).To(BeFalse(), "Envoy's listeners are plain TCP unless enable_mptcp (Go's own default is MPTCP)")

		port := freePort()
		if !kernelHasMPTCP() {
			r, _ := validate("bootstrap.yaml", spec(port, "{enable_mptcp: true}"))
			Expect(r.ExitCode).To(Equal(1))
			Expect(r.Stderr).To(ContainSubstring("enable_mptcp is set but MPTCP is not supported by the operating system"))
			return
		}
		Start(newDir(), spec(port, "{enable_mptcp: true}"))
		Expect(mptcpListening(port)).To(BeTrue())
		Expect(httpDo(httpClients()["HTTP/1.1"], "GET", listenerURL(port, "/"), nil, nil).Body).To(Equal("hi"), "a plain TCP client falls back")
		d := net.Dialer{}
		d.SetMultipathTCP(true)
		c, err := d.Dial("tcp", fmt.Sprintf("127.0.0.1:%d", port))
		Expect(err).NotTo(HaveOccurred())
		defer c.Close()
		Expect(getOn(c)).To(ContainSubstring("hi"))
		used, err := c.(*net.TCPConn).MultipathTCP()
		Expect(err).NotTo(HaveOccurred())
		Expect(used).To(BeTrue(), "an MPTCP client's connection is MPTCP end to end")
	})
})

// kernelHasMPTCP reports whether this kernel opens MPTCP sockets.
func kernelHasMPTCP() bool {
	fd, err := syscall.Socket(syscall.AF_INET, syscall.SOCK_STREAM, 262) // IPPROTO_MPTCP
	if err != nil {
		return false
	}
	_ = syscall.Close(fd)
	return true
}

// getOn sends a GET / on c and returns what its first read brings.
func getOn(c net.Conn) string {
	GinkgoHelper()
	_, err := c.Write([]byte("GET / HTTP/1.1\r\nHost: x\r\n\r\n"))
	Expect(err).NotTo(HaveOccurred())
	buf := make([]byte, 4096)
	n, err := c.Read(buf)
	Expect(err).NotTo(HaveOccurred())
	return string(buf[:n])
}

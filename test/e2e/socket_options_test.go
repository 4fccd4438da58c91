package e2e

import (
	"fmt"
	"os/exec"
	"strings"
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
})

package e2e

import (
	"bufio"
	"fmt"
	"io"
	"net"
	"net/http"
	"strings"
	"time"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"
)

var _ = Describe("HTTP/2 upstream answering before the request body", Ordered, func() {
	var port int

	BeforeAll(func() {
		h1 := portNum(httpTestUpstream(http.HandlerFunc(continueHandler), false))
		h2 := portNum(httpTestUpstream(http.HandlerFunc(continueHandler), true))
		port = freePort()
		Start(newDir(), continueBootstrap(port, h1, h2, freePort()))
	})

	It("relays the answer with connection: close, and takes nothing more of the connection for the upstream", func() {
		c, err := net.DialTimeout("tcp", fmt.Sprintf("127.0.0.1:%d", port), 5*time.Second)
		Expect(err).NotTo(HaveOccurred())
		defer c.Close()
		Expect(c.SetDeadline(time.Now().Add(10 * time.Second))).To(Succeed())
		r := bufio.NewReader(c)
		// Part of the body, then a stall: the upstream answers 417
		// without reading it.
		_, err = io.WriteString(c, "POST /h2/refuse HTTP/1.1\r\nHost: x\r\nContent-Length: 10\r\n\r\nab")
		Expect(err).NotTo(HaveOccurred())
		resp, err := http.ReadResponse(r, &http.Request{Method: "POST"})
		Expect(err).NotTo(HaveOccurred())
		body, err := io.ReadAll(resp.Body)
		Expect(err).NotTo(HaveOccurred())
		Expect(resp.StatusCode).To(Equal(417))
		Expect(string(body)).To(Equal("refused"))
		Expect(resp.Close).To(BeTrue(), "connection: close on an answer before the whole request")
		// The rest of the body and a second request: the connection
		// ends instead of carrying them.
		_, _ = io.WriteString(c, "cdefghijPOST /h2/up HTTP/1.1\r\nHost: x\r\nContent-Length: 5\r\n\r\nhello")
		rest, _ := io.ReadAll(r)
		Expect(string(rest)).To(BeEmpty(), "no answer to a request sent after the close")

		// A new connection is served as usual, its body whole.
		resp2, err := http.Post(listenerURL(port, "/h2/up"), "text/plain", strings.NewReader("world"))
		Expect(err).NotTo(HaveOccurred())
		b2, _ := io.ReadAll(resp2.Body)
		resp2.Body.Close()
		Expect(string(b2)).To(Equal(`expect="" proto=HTTP/2.0 got=5`))
	})
})

package e2e

import (
	"bufio"
	"fmt"
	"net"
	"net/http"
	"regexp"
	"strconv"
	"time"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"
)

var _ = Describe("Access-log durations", func() {
	It("logs %REQUEST_DURATION% as the time to the request's last byte, for bodies and for heads alone", func() {
		up := headerEchoUpstream()
		port := freePort()
		s := Start(newDir(), proxySpec{
			Port: port,
			HCM: `{access_log: [{name: envoy.access_loggers.stdout, typed_config: {"@type": type.googleapis.com/envoy.extensions.access_loggers.stream.v3.StdoutAccessLog,
				log_format: {text_format_source: {inline_string: "RD %REQ(:PATH)% %REQUEST_DURATION% %DURATION%\n"}}}}]}`,
			Clusters: []proxyCluster{{Name: "up", Port: up}},
		}.YAML(), "--file-flush-interval-msec", "50")

		Expect(httpDo(httpClients()["HTTP/1.1"], "GET", listenerURL(port, "/head"), nil, nil).Status).To(Equal(200))
		// A body that arrives 300 ms after the head.
		c, err := net.DialTimeout("tcp", fmt.Sprintf("127.0.0.1:%d", port), 5*time.Second)
		Expect(err).NotTo(HaveOccurred())
		defer c.Close()
		_ = c.SetDeadline(time.Now().Add(10 * time.Second))
		_, err = fmt.Fprint(c, "POST /body HTTP/1.1\r\nHost: x\r\nContent-Length: 4\r\n\r\n")
		Expect(err).NotTo(HaveOccurred())
		time.Sleep(300 * time.Millisecond)
		_, err = fmt.Fprint(c, "data")
		Expect(err).NotTo(HaveOccurred())
		resp, err := http.ReadResponse(bufio.NewReader(c), nil)
		Expect(err).NotTo(HaveOccurred())
		resp.Body.Close()
		Expect(resp.StatusCode).To(Equal(200))

		line := regexp.MustCompile(`RD (/\S+) (\S+) (\S+)\n`)
		durations := map[string]int{}
		Eventually(func() int {
			for _, m := range line.FindAllStringSubmatch(s.Stdout(), -1) {
				rd, err := strconv.Atoi(m[2])
				Expect(err).NotTo(HaveOccurred(), "REQUEST_DURATION of %s is %q", m[1], m[2])
				durations[m[1]] = rd
			}
			return len(durations)
		}, 10*time.Second).Should(Equal(2))
		// The proxy stamps the request's start when it reads the head,
		// which a loaded machine can delay by tens of milliseconds after
		// the client wrote it: the bound tells the body's 300 ms from a
		// head alone without depending on that delay.
		Expect(durations["/body"]).To(BeNumerically(">=", 200), "the body came 300 ms after the head")
		Expect(durations["/head"]).To(BeNumerically("<", 200), "a request without a body ends with its head")
	})
})

package e2e

import (
	"fmt"
	"io"
	"net"
	"net/http"
	"strconv"
	"strings"
	"time"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"
)

var _ = Describe("Listeners", func() {
	client := &http.Client{Timeout: 5 * time.Second, Transport: &http.Transport{DisableKeepAlives: true}}

	It("shows port-0 listeners with the ports the kernel chose, in text and JSON", func() {
		extra := freePort()
		s := Start(newDir(), listenersBootstrap(
			plainListener("ingress", "INBOUND", "in"),
			listenerDef{Name: "egress", Direction: "OUTBOUND", Chains: []string{directChain("out", "")},
				Fields: fmt.Sprintf("additional_addresses: [{address: {socket_address: {address: 127.0.0.1, port_value: %d}}}]", extra)},
		))

		text := s.Get("/listeners")
		Expect(text.Status).To(Equal(200))
		Expect(text.Header.Get("Content-Type")).To(Equal("text/plain; charset=UTF-8"))
		Expect(text.Body).NotTo(ContainSubstring(":0\n"), "port 0 is resolved")
		expectGolden("listeners-text.txt", maskPorts(text.Body))

		json := s.Get("/listeners?format=json")
		Expect(json.Header.Get("Content-Type")).To(Equal("application/json"))
		expectGolden("listeners-json.json", maskPorts(json.Body))

		// The ports shown are the ones serving.
		lines := strings.Split(strings.TrimSuffix(text.Body, "\n"), "\n")
		Expect(lines).To(HaveLen(3))
		want := map[string]string{"ingress": "in", "egress": "out"}
		for _, line := range lines {
			name, addr, ok := strings.Cut(line, "::")
			Expect(ok).To(BeTrue(), line)
			r := httpDo(client, http.MethodGet, "http://"+addr+"/", nil, nil)
			Expect(r.Body).To(Equal(want[name]), "%s answers on %s", name, addr)
		}
		Expect(lines[2]).To(Equal(fmt.Sprintf("egress::127.0.0.1:%d", extra)))
		Expect(listenerAddr(s, "ingress")).To(Equal(strings.TrimPrefix(lines[0], "ingress::")))
	})

	It("lists no listeners when there are none", func() {
		s := Start(newDir(), Bootstrap{}.YAML())
		Expect(s.Get("/listeners").Body).To(BeEmpty())
		Expect(s.Get("/listeners?format=json").Body).To(Equal("{}\n"))
	})

	It("spreads connections over the --concurrency workers and counts them per worker", func() {
		s := Start(newDir(), listenersBootstrap(plainListener("busy", "", "ok")), "--concurrency", "3")
		addr := listenerAddr(s, "busy")
		const requests = 30
		for range requests {
			Expect(httpDo(client, http.MethodGet, "http://"+addr+"/", nil, nil).Body).To(Equal("ok"))
		}
		Eventually(func() string { return statValue(s, "listener.127.0.0.1_0.downstream_cx_active") }).Should(Equal("0"))
		Expect(statValue(s, "listener.127.0.0.1_0.downstream_cx_total")).To(Equal(strconv.Itoa(requests)))
		Expect(statValue(s, "listener.127.0.0.1_0.downstream_cx_destroy")).To(Equal(strconv.Itoa(requests)))
		sum := 0
		for w := range 3 {
			v, err := strconv.Atoi(statValue(s, fmt.Sprintf("listener.127.0.0.1_0.worker_%d.downstream_cx_total", w)))
			Expect(err).NotTo(HaveOccurred(), "worker %d has stats", w)
			sum += v
		}
		Expect(sum).To(Equal(requests))
		Expect(statValue(s, "listener_manager.listener_create_success")).To(Equal("3"))
		Expect(statValue(s, "listener_manager.workers_started")).To(Equal("1"))
		Expect(statValue(s, "listener_manager.total_listeners_active")).To(Equal("1"))
	})

	It("selects filter chains by destination port and falls back to the default chain", func() {
		special := freePort()
		s := Start(newDir(), listenersBootstrap(listenerDef{
			Name:   "chains",
			Fields: fmt.Sprintf("stat_prefix: chains, additional_addresses: [{address: {socket_address: {address: 127.0.0.1, port_value: %d}}}]", special),
			Chains: []string{
				directChain("special port", fmt.Sprintf("{destination_port: %d}", special)),
				directChain("documentation clients", "{source_prefix_ranges: [{address_prefix: 192.0.2.0, prefix_len: 24}]}"),
			},
			Default: directChain("default", ""),
		}))
		main := listenerAddr(s, "chains")
		Expect(httpDo(client, http.MethodGet, listenerURL(special, "/"), nil, nil).Body).To(Equal("special port"))
		Expect(httpDo(client, http.MethodGet, "http://"+main+"/", nil, nil).Body).To(Equal("default"))
		Expect(statValue(s, "listener.chains.no_filter_chain_match")).To(Equal("0"))
	})

	It("closes and counts connections that no filter chain matches", func() {
		s := Start(newDir(), listenersBootstrap(listenerDef{
			Name:   "picky",
			Chains: []string{directChain("lan", "{source_prefix_ranges: [{address_prefix: 10.0.0.0, prefix_len: 8}]}")},
		}))
		c, err := net.DialTimeout("tcp", listenerAddr(s, "picky"), 5*time.Second)
		Expect(err).NotTo(HaveOccurred())
		defer c.Close()
		Expect(c.SetDeadline(time.Now().Add(5 * time.Second))).To(Succeed())
		_, _ = c.Write([]byte("GET / HTTP/1.1\r\nHost: x\r\n\r\n"))
		b, _ := io.ReadAll(c)
		Expect(b).To(BeEmpty(), "the connection is closed without an answer")
		Eventually(func() string { return statValue(s, "listener.127.0.0.1_0.no_filter_chain_match") }).Should(Equal("1"))
		Expect(statValue(s, "listener.127.0.0.1_0.downstream_cx_total")).To(Equal("0"))
	})

	It("binds IPv6 listeners", func() {
		if !ipv6Loopback() {
			Skip("no IPv6 loopback on this machine")
		}
		s := Start(newDir(), strings.Replace(listenersBootstrap(plainListener("six", "", "v6")),
			"{name: \"six\", address: {socket_address: {address: 127.0.0.1", "{name: \"six\", address: {socket_address: {address: \"::1\"", 1))
		text := s.Get("/listeners").Body
		Expect(text).To(MatchRegexp(`^six::\[::1\]:[1-9][0-9]*\n$`))
		addr := strings.TrimSuffix(strings.TrimPrefix(text, "six::"), "\n")
		Expect(httpDo(client, http.MethodGet, "http://"+addr+"/", nil, nil).Body).To(Equal("v6"))
		Eventually(func() string { return statValue(s, "listener.[__1]_0.downstream_cx_total") }).Should(Equal("1"))
	})

	It("refuses listener configurations it cannot serve, naming the field", func() {
		r := Run("--mode", "validate", "--config-yaml", listenersBootstrap(listenerDef{
			Name: "bad",
			Chains: []string{
				directChain("a", "{destination_port: 80}"),
				directChain("b", "{destination_port: 80}"),
			},
		}))
		Expect(r.ExitCode).To(Equal(1))
		Expect(r.Stderr).To(ContainSubstring("static_resources.listeners[0].filter_chains[1].filter_chain_match: " +
			"multiple filter chains with the same matching rules are defined (filter_chains[0] matches the same connections)"))
	})
})

// ipv6Loopback reports whether the machine can bind ::1.
func ipv6Loopback() bool {
	ln, err := net.Listen("tcp6", "[::1]:0")
	if err != nil {
		return false
	}
	_ = ln.Close()
	return true
}

package e2e

import (
	"fmt"
	"net"
	"path/filepath"
	"sync/atomic"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"
)

// acceptCounter is a listener that counts the connections it accepts.
type acceptCounter struct {
	net.Listener
	n atomic.Int64
}

func (a *acceptCounter) Accept() (net.Conn, error) {
	c, err := a.Listener.Accept()
	if err == nil {
		a.n.Add(1)
	}
	return c, err
}

var _ = Describe("Dynamic forward proxy DNS cache resolved_address_filter", func() {
	It("drops the resolved addresses it matches: a name left with none fails, and the denied upstream is never dialled", func() {
		dns := startDNSServer()
		lns, up := listenSamePort("127.0.0.1", "127.0.0.2")
		denied := &acceptCounter{Listener: lns[1]}
		serveHost(lns[0], "A", nil)
		serveHost(denied, "B", nil)
		dns.set("alpha.test", "127.0.0.1")
		dns.set("inside.test", "127.0.0.2")
		// The denied address first: the cache takes the next one.
		dns.set("mixed.test", "127.0.0.2", "127.0.0.1")

		dir := newDir()
		logPath := filepath.Join(dir, "access.log")
		port := freePort()
		cache := dfpCache("guarded", dns.port, ", resolved_address_filter: {ranges: [{address_prefix: 127.0.0.2, prefix_len: 32}]}")
		s := Start(dir, bootstrapOf(
			[]string{dfpListener("front", port, cache, "dfp", "x", logPath)},
			[]string{dfpCluster("dfp", cache, "")}), "--file-flush-interval-msec", "50")

		By("a name resolving outside the ranges is proxied")
		code, body := dfpRequest(port, fmt.Sprintf("alpha.test:%d", up), "/")
		Expect(code).To(Equal(200), body)
		Expect(body).To(HavePrefix("A "))

		By("a name whose every address is denied is a DNS resolution failure")
		inside := fmt.Sprintf("inside.test:%d", up)
		code, body = dfpRequest(port, inside, "/")
		Expect(code).To(Equal(503))
		Expect(body).To(Equal("DNS resolution failure"))
		Eventually(func() string { return readFile(logPath) }).Should(MatchRegexp(`(?m)^` + inside + ` 503 DF dns_resolution_failure\{.*\}$`))

		By("a name with a denied and an allowed address goes to the allowed one")
		mixed := fmt.Sprintf("mixed.test:%d", up)
		code, body = dfpRequest(port, mixed, "/")
		Expect(code).To(Equal(200), body)
		Expect(body).To(Equal("A host=" + mixed + " sni=-"))

		By("an IP literal Host in the ranges is filtered too")
		code, _ = dfpRequest(port, fmt.Sprintf("127.0.0.2:%d", up), "/")
		Expect(code).To(Equal(503))

		By("nothing reached the denied upstream; dns_address_filter_out counts the dropped addresses")
		Expect(denied.n.Load()).To(BeZero())
		Expect(hostLine(s.Get("/clusters").Body, "dfp", fmt.Sprintf("127.0.0.2:%d", up), "hostname")).To(Equal("<missing>"))
		st := statValues(s, `^dns_cache\.guarded\.`)
		Expect(st).To(HaveKeyWithValue("dns_cache.guarded.dns_address_filter_out", "3"))
		Expect(st).To(HaveKeyWithValue("dns_cache.guarded.host_address_changed", "2"))
	})

	It("with invert_match keeps only the addresses inside the ranges", func() {
		dns := startDNSServer()
		lns, up := listenSamePort("127.0.0.1", "127.0.0.3")
		outside := &acceptCounter{Listener: lns[1]}
		serveHost(lns[0], "A", nil)
		serveHost(outside, "C", nil)
		dns.set("alpha.test", "127.0.0.1")
		dns.set("gamma.test", "127.0.0.3")

		dir := newDir()
		port := freePort()
		cache := dfpCache("allow", dns.port, ", resolved_address_filter: {invert_match: true, ranges: [{address_prefix: 127.0.0.1, prefix_len: 32}]}")
		s := Start(dir, bootstrapOf(
			[]string{dfpListener("front", port, cache, "dfp", "x", filepath.Join(dir, "access.log"))},
			[]string{dfpCluster("dfp", cache, "")}))

		code, body := dfpRequest(port, fmt.Sprintf("alpha.test:%d", up), "/")
		Expect(code).To(Equal(200), body)
		code, _ = dfpRequest(port, fmt.Sprintf("gamma.test:%d", up), "/")
		Expect(code).To(Equal(503))
		Expect(outside.n.Load()).To(BeZero())
		Expect(statValue(s, "dns_cache.allow.dns_address_filter_out")).To(Equal("1"))
	})

	It("refuses a malformed range with its path", func() {
		cache := dfpCache("bad", 53, ", resolved_address_filter: {ranges: [{address_prefix: 10.0.0.0, prefix_len: 33}]}")
		r, _ := validate("b.yaml", bootstrapOf(nil, []string{dfpCluster("dfp", cache, "")}))
		Expect(r.ExitCode).To(Equal(1))
		Expect(r.Stderr).To(ContainSubstring("static_resources.clusters[0].cluster_type.typed_config.dns_cache_config.resolved_address_filter.ranges[0].prefix_len: 33 is longer than an IPv4 address"))
	})
})

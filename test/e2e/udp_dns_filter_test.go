package e2e

import (
	"fmt"
	"net"
	"sort"
	"strconv"
	"strings"
	"time"

	mdns "github.com/miekg/dns"
	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"
)

// dnsFilterBootstrap is a UDP listener "dns" on an OS-chosen loopback port
// whose DNS filter (stat_prefix "front") has the given fields (YAML flow
// mapping content), with the given clusters (YAML flow items).
func dnsFilterBootstrap(filterFields string, clusters ...string) string {
	return fmt.Sprintf(`
admin: {address: {socket_address: {address: 127.0.0.1, port_value: 0}}}
static_resources:
  clusters: [%s]
  listeners:
  - name: dns
    address: {socket_address: {address: 127.0.0.1, port_value: 0, protocol: UDP}}
    listener_filters:
    - name: envoy.filters.udp.dns_filter
      typed_config: {"@type": type.googleapis.com/envoy.extensions.filters.udp.dns_filter.v3.DnsFilterConfig, stat_prefix: front, %s}
`, strings.Join(clusters, ", "), filterFields)
}

// dnsFilterTable is an inline_dns_table: www.example.com's two addresses,
// api.example.com redirected to the cluster backend, and the service
// _http._tcp.example.com on www.example.com.
const dnsFilterTable = `server_config: {inline_dns_table: {virtual_domains: [
  {name: www.example.com, endpoint: {address_list: {address: [10.0.0.1, 10.0.0.2]}}, answer_ttl: 60s},
  {name: api.example.com, endpoint: {cluster_name: backend}},
  {name: example.com, endpoint: {service_list: {services: [{service_name: http, protocol: {name: tcp}, ttl: 30s, targets: [{host_name: www.example.com, priority: 1, weight: 5, port: 8080}]}]}}}]}}`

// dnsAsk sends one question to the DNS listener on port with a real DNS
// client and returns the answer.
func dnsAsk(port int, name string, qtype uint16) *mdns.Msg {
	GinkgoHelper()
	q := new(mdns.Msg)
	q.SetQuestion(mdns.Fqdn(name), qtype)
	c := &mdns.Client{Net: "udp", Timeout: 5 * time.Second}
	m, _, err := c.Exchange(q, net.JoinHostPort("127.0.0.1", strconv.Itoa(port)))
	Expect(err).NotTo(HaveOccurred())
	Expect(m.Id).To(Equal(q.Id))
	return m
}

// rrStrings renders records as "name ttl type value", sorted.
func rrStrings(list []mdns.RR) []string {
	out := []string{}
	for _, rr := range list {
		h := rr.Header()
		out = append(out, fmt.Sprintf("%s %d %s %s", h.Name, h.Ttl, mdns.TypeToString[h.Rrtype], strings.TrimPrefix(rr.String(), h.String())))
	}
	sort.Strings(out)
	return out
}

var _ = Describe("UDP DNS filter", func() {
	It("answers from its table and a cluster's hosts, forwards other names to the resolvers, answers malformed queries and counts with Envoy's stats", func() {
		up := startDNSServer()
		up.set("up.test", "192.0.2.10", "192.0.2.11")
		backendA, backendB := freePort(), freePort()
		s := Start(newDir(), dnsFilterBootstrap(dnsFilterTable+
			", client_config: {resolver_timeout: 2s, max_pending_lookups: 16, typed_dns_resolver_config: "+caresResolver(up.port, "")+"}",
			tcpCluster("backend", backendA, backendB)))
		port := listenerPort(s, "dns")

		m := dnsAsk(port, "www.example.com", mdns.TypeA)
		Expect(m.Rcode).To(Equal(mdns.RcodeSuccess))
		Expect(m.RecursionAvailable).To(BeTrue(), "client_config makes the filter recursive")
		Expect(m.Authoritative).To(BeFalse())
		Expect(rrStrings(m.Answer)).To(Equal([]string{"www.example.com. 60 A 10.0.0.1", "www.example.com. 60 A 10.0.0.2"}))

		// The cluster's hosts, with the default TTL.
		m = dnsAsk(port, "api.example.com", mdns.TypeA)
		Expect(rrStrings(m.Answer)).To(Equal([]string{"api.example.com. 300 A 127.0.0.1", "api.example.com. 300 A 127.0.0.1"}))

		// The service: its SRV record and the target's first address.
		m = dnsAsk(port, "_http._tcp.example.com", mdns.TypeSRV)
		Expect(rrStrings(m.Answer)).To(Equal([]string{"_http._tcp.example.com. 30 SRV 1 5 8080 www.example.com."}))
		Expect(m.Extra).To(HaveLen(1))
		Expect(rrStrings(m.Extra)[0]).To(MatchRegexp(`^www\.example\.com\. 60 A 10\.0\.0\.[12]$`))

		// A name the table does not know goes to the resolver.
		m = dnsAsk(port, "up.test", mdns.TypeA)
		Expect(rrStrings(m.Answer)).To(Equal([]string{"up.test. 300 A 192.0.2.10", "up.test. 300 A 192.0.2.11"}))
		Expect(up.queries.Load()).To(BeNumerically(">=", 1))
		m = dnsAsk(port, "missing.test", mdns.TypeA)
		Expect(m.Rcode).To(Equal(mdns.RcodeNameError))

		// A name the table answers is not forwarded; one of a known suffix
		// that the table does not answer is, as in Envoy.
		asked := up.queries.Load()
		Expect(dnsAsk(port, "www.example.com", mdns.TypeA).Answer).To(HaveLen(2))
		Expect(up.queries.Load()).To(Equal(asked))
		m = dnsAsk(port, "nothere.example.com", mdns.TypeA)
		Expect(m.Rcode).To(Equal(mdns.RcodeNameError))
		Expect(up.queries.Load()).To(Equal(asked + 1))

		// Malformed: a datagram too short for a header gets FORMERR.
		c := udpClient("127.0.0.1")
		got := exchange(c, port, "\x12\x34\x01")
		Expect(got).NotTo(BeEmpty())
		bad := new(mdns.Msg)
		Expect(bad.Unpack([]byte(got))).To(Succeed())
		Expect(bad.Id).To(Equal(uint16(0x1234)))
		Expect(bad.Rcode).To(Equal(mdns.RcodeFormatError))
		// A response sent to it: FORMERR too, and the filter still answers.
		r := new(mdns.Msg)
		r.SetQuestion("www.example.com.", mdns.TypeA)
		r.Response = true
		b, err := r.Pack()
		Expect(err).NotTo(HaveOccurred())
		Expect(bad.Unpack([]byte(exchange(c, port, string(b))))).To(Succeed())
		Expect(bad.Rcode).To(Equal(mdns.RcodeFormatError))
		Expect(dnsAsk(port, "www.example.com", mdns.TypeA).Answer).To(HaveLen(2))

		for name, want := range map[string]string{
			"downstream_rx_queries":             "10",
			"downstream_tx_responses":           "10",
			"downstream_rx_invalid_queries":     "2",
			"query_buffer_underflow":            "1",
			"queries_with_ans_or_authority_rrs": "1",
			"a_record_queries":                  "7",
			"srv_record_queries":                "1",
			"known_domain_queries":              "6",
			// Three answers of two, and the SRV target's two addresses.
			"local_a_record_answers":      "8",
			"local_srv_record_answers":    "1",
			"cluster_a_record_answers":    "2",
			"externally_resolved_queries": "3",
			"external_a_record_queries":   "3",
			"external_a_record_answers":   "2",
			"unanswered_queries":          "2",
		} {
			Expect(statValue(s, "dns_filter.front."+name)).To(Equal(want), name)
		}
		Expect(s.Get("/stats?filter=dns_filter.front.downstream_rx_bytes").Body).To(ContainSubstring("dns_filter.front.downstream_rx_bytes"))
	})

	It("answers without client_config from the table only, read from an external_dns_table file", func() {
		dir := newDir()
		writeFile(dir+"/table.yaml", "virtual_domains:\n- name: \"*.svc.test\"\n  endpoint: {address_list: {address: [\"2001:db8::5\", 192.0.2.5]}}\n")
		s := Start(newDir(), dnsFilterBootstrap("server_config: {external_dns_table: {filename: "+dir+"/table.yaml}}"))
		port := listenerPort(s, "dns")
		m := dnsAsk(port, "a.b.svc.test", mdns.TypeAAAA)
		Expect(m.RecursionAvailable).To(BeFalse())
		Expect(rrStrings(m.Answer)).To(Equal([]string{"a.b.svc.test. 300 AAAA 2001:db8::5"}))
		m = dnsAsk(port, "elsewhere.test", mdns.TypeA)
		Expect(m.Rcode).To(Equal(mdns.RcodeNameError))
		m = dnsAsk(port, "a.svc.test", mdns.TypeMX)
		Expect(m.Rcode).To(Equal(mdns.RcodeNotImplemented))
	})

	It("refuses in --mode validate what it does not implement, with the field path", func() {
		r, _ := validate("dns.yaml", dnsFilterBootstrap(dnsFilterTable+", client_config: {max_pending_lookups: 4}"))
		Expect(r.ExitCode).To(Equal(0), r.Stdout+r.Stderr)

		r, _ = validate("dns.yaml", dnsFilterBootstrap(`access_log: [{name: envoy.access_loggers.stdout, typed_config: {"@type": type.googleapis.com/envoy.extensions.access_loggers.stream.v3.StdoutAccessLog}}], `+
			`client_config: {max_pending_lookups: 4, upstream_resolvers: [{socket_address: {address: 127.0.0.1, port_value: 53}}]}, `+
			`server_config: {inline_dns_table: {virtual_domains: [{name: a.test, endpoint: {address_list: {address: [not-an-ip]}}}]}}`))
		Expect(r.ExitCode).To(Equal(1))
		Expect(r.Stderr).To(ContainSubstring("listener_filters[0].typed_config.access_log"))
		Expect(r.Stderr).To(ContainSubstring("listener_filters[0].typed_config.client_config.upstream_resolvers"))
		Expect(r.Stderr).To(ContainSubstring("virtual_domains[0].endpoint.address_list.address[0]: malformed IP address: not-an-ip"))
	})
})

package dnsfilter

import (
	"context"
	"math/rand/v2"
	"net/netip"
	"os"
	"sort"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	dnsfilterv3 "github.com/envoyproxy/go-control-plane/envoy/extensions/filters/udp/dns_filter/v3"
	"github.com/go-logr/logr"
	mdns "github.com/miekg/dns"
	"sigs.k8s.io/yaml"

	"google.golang.org/protobuf/encoding/protojson"

	"github.com/outrigger-dev/outrigger/pkg/proxy/dns"
	"github.com/outrigger-dev/outrigger/pkg/proxy/stats"
	"github.com/outrigger-dev/outrigger/pkg/proxy/udpfilter"
	"github.com/outrigger-dev/outrigger/pkg/proxy/upstream"
)

// fakeSocket records what the filter sends.
type fakeSocket struct {
	mu  sync.Mutex
	out [][]byte
	got chan struct{}
}

func newSocket() *fakeSocket { return &fakeSocket{got: make(chan struct{}, 64)} }

func (s *fakeSocket) WriteTo(b []byte, _ netip.AddrPort) error {
	s.mu.Lock()
	s.out = append(s.out, append([]byte(nil), b...))
	s.mu.Unlock()
	s.got <- struct{}{}
	return nil
}

// fakeCluster is a cluster of fixed hosts.
type fakeCluster struct {
	name  string
	hosts []*upstream.Host
}

func (c *fakeCluster) Name() string                                  { return c.name }
func (c *fakeCluster) ObservabilityName() string                     { return c.name }
func (c *fakeCluster) PickHost(*upstream.PickContext) *upstream.Host { return nil }
func (c *fakeCluster) AcquireSession() bool                          { return false }
func (c *fakeCluster) ReleaseSession()                               {}
func (c *fakeCluster) HostsVersion() any                             { return nil }
func (c *fakeCluster) HasHost(string) bool                           { return false }
func (c *fakeCluster) Hosts() []*upstream.Host                       { return c.hosts }

type fakeClusters map[string]*fakeCluster

func (f fakeClusters) Cluster(name string) udpfilter.Cluster {
	if c, ok := f[name]; ok {
		return c
	}
	return nil
}

// fakeResolver answers from a map, or blocks until its context ends.
type fakeResolver struct {
	block bool
	calls atomic.Int64
	addrs map[string][]string
}

func (r *fakeResolver) Name() string             { return "fake" }
func (r *fakeResolver) New(dns.Env) dns.Resolver { return r }
func (r *fakeResolver) Resolve(ctx context.Context, name string, family dns.Family) dns.Result {
	r.calls.Add(1)
	if r.block {
		<-ctx.Done()
		return dns.Result{Status: dns.Failed}
	}
	var res dns.Result
	for _, s := range r.addrs[name] {
		ip := netip.MustParseAddr(s)
		if (family == dns.V4Only) == ip.Is4() {
			res.Addresses = append(res.Addresses, dns.Address{IP: ip})
		}
	}
	return res
}

// newTestFilter compiles a DnsFilterConfig written in YAML.
func newTestFilter(t *testing.T, y string, clusters fakeClusters) (*Filter, *stats.Store) {
	t.Helper()
	j, err := yaml.YAMLToJSON([]byte(y))
	if err != nil {
		t.Fatal(err)
	}
	cfg := &dnsfilterv3.DnsFilterConfig{}
	if err := protojson.Unmarshal(j, cfg); err != nil {
		t.Fatal(err)
	}
	st := stats.NewStore()
	ctx := udpfilter.Context{Stats: st, Log: logr.Discard(), Clusters: clusters}
	c, _, err := compile(cfg, ctx, rand.New(rand.NewPCG(1, 2)))
	if err != nil {
		t.Fatal(err)
	}
	f := newFilter(c, ctx)
	t.Cleanup(func() { _ = f.Shutdown(context.Background()) })
	return f, st
}

// ask sends one message to f and returns its answer, nil for none within
// wait.
func ask(t *testing.T, f *Filter, b []byte, wait time.Duration) *mdns.Msg {
	t.Helper()
	s := newSocket()
	f.OnDatagram(udpfilter.Datagram{Socket: s, Peer: netip.MustParseAddrPort("127.0.0.1:5353"), Data: b})
	select {
	case <-s.got:
	case <-time.After(wait):
		return nil
	}
	m := new(mdns.Msg)
	if err := m.Unpack(s.out[0]); err != nil {
		t.Fatalf("response does not parse: %v", err)
	}
	return m
}

func query(t *testing.T, f *Filter, name string, qtype uint16) *mdns.Msg {
	t.Helper()
	q := new(mdns.Msg)
	q.SetQuestion(mdns.Fqdn(name), qtype)
	b, err := q.Pack()
	if err != nil {
		t.Fatal(err)
	}
	m := ask(t, f, b, 5*time.Second)
	if m == nil {
		t.Fatalf("no answer to %s", name)
	}
	if m.Id != q.Id || !m.Response {
		t.Fatalf("answer id %d response %v, want id %d", m.Id, m.Response, q.Id)
	}
	return m
}

// rrs renders records as "name ttl type value" strings, sorted.
func rrs(list []mdns.RR) []string {
	var out []string
	for _, rr := range list {
		h := rr.Header()
		v := strings.TrimPrefix(rr.String(), h.String())
		out = append(out, strings.Join([]string{h.Name, itoa(h.Ttl), mdns.TypeToString[h.Rrtype], v}, " "))
	}
	sort.Strings(out)
	return out
}

func itoa(v uint32) string { return strconv.FormatUint(uint64(v), 10) }

func counter(st *stats.Store, name string) uint64 {
	return st.Counter("dns_filter.dns." + name).Value()
}

const testTable = `
stat_prefix: dns
server_config:
  inline_dns_table:
    virtual_domains:
    - name: www.example.com
      endpoint: {address_list: {address: [10.0.0.1, 10.0.0.2, "2001:db8::1"]}}
      answer_ttl: 60s
    - name: "*.example.com"
      endpoint: {address_list: {address: [10.0.0.9]}}
      answer_ttl: 90s
    - name: "*.deep.example.com"
      endpoint: {address_list: {address: [10.0.0.10]}}
    - name: api.example.com
      endpoint: {cluster_name: backend}
    - name: example.com
      endpoint:
        service_list:
          services:
          - service_name: http
            protocol: {number: 6}
            ttl: 45s
            targets:
            - {host_name: www.example.com, priority: 1, weight: 10, port: 8080}
            - {host_name: v6.example.com, priority: 2, weight: 20, port: 8081}
          - service_name: grpc
            protocol: {name: tcp}
            ttl: 30s
            targets:
            - {cluster_name: backend, weight: 5}
    - name: v6.example.com
      endpoint: {address_list: {address: ["2001:db8::6"]}}
`

func backend() fakeClusters {
	return fakeClusters{"backend": {name: "backend", hosts: []*upstream.Host{
		{Address: "10.1.0.1:80"}, {Address: "10.1.0.2:81"}, {Address: "[2001:db8::2]:82"},
	}}}
}

func TestAnswersFromTheTable(t *testing.T) {
	f, st := newTestFilter(t, testTable, backend())

	m := query(t, f, "www.example.com", mdns.TypeA)
	if m.Rcode != mdns.RcodeSuccess || m.Authoritative || m.RecursionAvailable || !m.RecursionDesired {
		t.Fatalf("flags: %+v", m.MsgHdr)
	}
	want := []string{"www.example.com. 60 A 10.0.0.1", "www.example.com. 60 A 10.0.0.2"}
	if got := rrs(m.Answer); strings.Join(got, "|") != strings.Join(want, "|") {
		t.Fatalf("answers %q, want %q", got, want)
	}
	m = query(t, f, "www.example.com", mdns.TypeAAAA)
	if got := rrs(m.Answer); len(got) != 1 || got[0] != "www.example.com. 60 AAAA 2001:db8::1" {
		t.Fatalf("AAAA answers %q", got)
	}
	// Wildcards: the longest covering one, with the default TTL (the
	// wildcard's answer_ttl is filed under its own name only).
	m = query(t, f, "x.y.example.com", mdns.TypeA)
	if got := rrs(m.Answer); len(got) != 1 || got[0] != "x.y.example.com. 300 A 10.0.0.9" {
		t.Fatalf("wildcard answers %q", got)
	}
	m = query(t, f, "a.deep.example.com", mdns.TypeA)
	if got := rrs(m.Answer); len(got) != 1 || got[0] != "a.deep.example.com. 300 A 10.0.0.10" {
		t.Fatalf("deeper wildcard answers %q", got)
	}
	// An address list without the family asked for: NXDOMAIN, as Envoy.
	m = query(t, f, "v6.example.com", mdns.TypeA)
	if m.Rcode != mdns.RcodeNameError || len(m.Answer) != 0 {
		t.Fatalf("v6-only name for A: rcode %d answers %d", m.Rcode, len(m.Answer))
	}
	// An unknown name without client_config: NXDOMAIN.
	m = query(t, f, "other.test", mdns.TypeA)
	if m.Rcode != mdns.RcodeNameError {
		t.Fatalf("unknown name: rcode %d", m.Rcode)
	}
	// Another type: NOTIMP.
	m = query(t, f, "www.example.com", mdns.TypeMX)
	if m.Rcode != mdns.RcodeNotImplemented {
		t.Fatalf("MX: rcode %d", m.Rcode)
	}
	for name, want := range map[string]uint64{
		"downstream_rx_queries": 7, "downstream_tx_responses": 7, "a_record_queries": 5,
		"aaaa_record_queries": 1, "unsupported_queries": 1, "local_a_record_answers": 4,
		"local_aaaa_record_answers": 1, "known_domain_queries": 6, "unanswered_queries": 3,
		"downstream_rx_invalid_queries": 0,
	} {
		if got := counter(st, name); got != want {
			t.Errorf("%s = %d, want %d", name, got, want)
		}
	}
	for _, h := range []string{"downstream_rx_bytes", "downstream_tx_bytes", "downstream_rx_query_latency"} {
		if !st.Histogram("dns_filter.dns." + h).Used() {
			t.Errorf("histogram %s never recorded", h)
		}
	}
}

func TestServicesAndClusters(t *testing.T) {
	f, st := newTestFilter(t, testTable, backend())

	m := query(t, f, "_http._tcp.example.com", mdns.TypeSRV)
	want := []string{
		"_http._tcp.example.com. 45 SRV 1 10 8080 www.example.com.",
		"_http._tcp.example.com. 45 SRV 2 20 8081 v6.example.com.",
	}
	if got := rrs(m.Answer); strings.Join(got, "|") != strings.Join(want, "|") {
		t.Fatalf("SRV answers %q, want %q", got, want)
	}
	// One additional record per answer: the first address of its target.
	if len(m.Extra) != 2 {
		t.Fatalf("additional records %q", rrs(m.Extra))
	}
	for _, rr := range rrs(m.Extra) {
		if !strings.HasPrefix(rr, "www.example.com. 60 ") && rr != "v6.example.com. 300 AAAA 2001:db8::6" {
			t.Fatalf("additional record %q", rr)
		}
	}

	// A name redirected to a cluster: its hosts of the family asked for.
	m = query(t, f, "api.example.com", mdns.TypeA)
	want = []string{"api.example.com. 300 A 10.1.0.1", "api.example.com. 300 A 10.1.0.2"}
	if got := rrs(m.Answer); strings.Join(got, "|") != strings.Join(want, "|") {
		t.Fatalf("cluster answers %q, want %q", got, want)
	}
	// A cluster's own name answers too (Envoy looks the query name up as
	// a cluster).
	m = query(t, f, "backend", mdns.TypeAAAA)
	if got := rrs(m.Answer); len(got) != 1 || got[0] != "backend. 300 AAAA 2001:db8::2" {
		t.Fatalf("cluster-name answers %q", got)
	}
	// A service whose first target is a cluster: an SRV record per host,
	// with the host's port.
	m = query(t, f, "_grpc._tcp.example.com", mdns.TypeSRV)
	want = []string{
		"_grpc._tcp.example.com. 30 SRV 0 5 80 backend.",
		"_grpc._tcp.example.com. 30 SRV 0 5 81 backend.",
		"_grpc._tcp.example.com. 30 SRV 0 5 82 backend.",
	}
	if got := rrs(m.Answer); strings.Join(got, "|") != strings.Join(want, "|") {
		t.Fatalf("cluster SRV answers %q, want %q", got, want)
	}
	if counter(st, "cluster_a_record_answers") != 4 || counter(st, "cluster_aaaa_record_answers") != 2 || counter(st, "local_srv_record_answers") != 2 {
		t.Errorf("cluster A %d AAAA %d local SRV %d", counter(st, "cluster_a_record_answers"), counter(st, "cluster_aaaa_record_answers"), counter(st, "local_srv_record_answers"))
	}
}

func TestAnswerLimits(t *testing.T) {
	var addrs []string
	for i := range 20 {
		addrs = append(addrs, netip.AddrFrom4([4]byte{10, 2, 0, byte(i)}).String())
	}
	long := strings.Repeat("a", 60) + "." + strings.Repeat("b", 60) + "." + strings.Repeat("c", 60) + ".long.test"
	f, _ := newTestFilter(t, `
stat_prefix: dns
server_config:
  inline_dns_table:
    virtual_domains:
    - {name: many.test, endpoint: {address_list: {address: [`+strings.Join(addrs, ", ")+`]}}}
    - {name: `+long+`, endpoint: {address_list: {address: [10.3.0.1, 10.3.0.2, 10.3.0.3]}}}
`, nil)
	m := query(t, f, "many.test", mdns.TypeA)
	if len(m.Answer) != maxAnswers || m.Truncated {
		t.Fatalf("%d answers (truncated %v), want %d without TC", len(m.Answer), m.Truncated, maxAnswers)
	}
	// Each answer of the long name takes 208 bytes: the question (198, plus
	// 2 for the header in Envoy's count) and one answer stay within 512,
	// two do not.
	m = query(t, f, long, mdns.TypeA)
	if len(m.Answer) != 1 || m.Truncated {
		t.Fatalf("%d answers (truncated %v), want 1", len(m.Answer), m.Truncated)
	}
}

func TestMalformedQueries(t *testing.T) {
	f, st := newTestFilter(t, testTable, nil)
	q := new(mdns.Msg)
	q.SetQuestion("www.example.com.", mdns.TypeA)
	good, _ := q.Pack()

	// Too short for a header: FORMERR, with the ID there is.
	m := ask(t, f, good[:5], time.Second)
	if m == nil || m.Rcode != mdns.RcodeFormatError || m.Id != q.Id || len(m.Question) != 0 {
		t.Fatalf("short query answered %v", m)
	}
	// A response: FORMERR.
	r := q.Copy()
	r.Response = true
	b, _ := r.Pack()
	if m = ask(t, f, b, time.Second); m == nil || m.Rcode != mdns.RcodeFormatError {
		t.Fatalf("response answered %v", m)
	}
	// ID 0: FORMERR.
	r = q.Copy()
	r.Id = 0
	b, _ = r.Pack()
	if m = ask(t, f, b, time.Second); m == nil || m.Rcode != mdns.RcodeFormatError {
		t.Fatalf("ID 0 answered %v", m)
	}
	// Class CH: FORMERR.
	r = q.Copy()
	r.Question[0].Qclass = mdns.ClassCHAOS
	b, _ = r.Pack()
	if m = ask(t, f, b, time.Second); m == nil || m.Rcode != mdns.RcodeFormatError {
		t.Fatalf("class CH answered %v", m)
	}
	// A name whose pointer loops.
	loop := append(append([]byte(nil), good[:12]...), 0xc0, 12, 0, 1, 0, 1)
	if m = ask(t, f, loop, time.Second); m == nil || m.Rcode != mdns.RcodeFormatError {
		t.Fatalf("pointer loop answered %v", m)
	}
	// EDNS: answered, the OPT record counted and ignored.
	r = q.Copy()
	r.SetEdns0(1232, false)
	b, _ = r.Pack()
	if m = ask(t, f, b, time.Second); m == nil || m.Rcode != mdns.RcodeSuccess || len(m.Answer) != 2 || m.IsEdns0() != nil {
		t.Fatalf("EDNS query answered %v", m)
	}
	for name, want := range map[string]uint64{
		"downstream_rx_queries": 6, "downstream_rx_invalid_queries": 5, "query_buffer_underflow": 1,
		"queries_with_ans_or_authority_rrs": 1, "query_parsing_failure": 2, "queries_with_additional_rrs": 1,
	} {
		if got := counter(st, name); got != want {
			t.Errorf("%s = %d, want %d", name, got, want)
		}
	}
}

func TestForwarding(t *testing.T) {
	f, st := newTestFilter(t, testTable+`
client_config: {max_pending_lookups: 1}
`, nil)
	r := &fakeResolver{addrs: map[string][]string{"up.test": {"192.0.2.1", "192.0.2.2", "2001:db8::99"}}}
	f.resolver = r

	m := query(t, f, "up.test", mdns.TypeA)
	want := []string{"up.test. 300 A 192.0.2.1", "up.test. 300 A 192.0.2.2"}
	if got := rrs(m.Answer); strings.Join(got, "|") != strings.Join(want, "|") || !m.RecursionAvailable {
		t.Fatalf("forwarded answers %q (RA %v), want %q", got, m.RecursionAvailable, want)
	}
	// A name of a known suffix is never forwarded.
	if m = query(t, f, "nothere.example.com", mdns.TypeAAAA); m.Rcode != mdns.RcodeNameError || r.calls.Load() != 1 {
		t.Fatalf("known suffix: rcode %d, resolver calls %d", m.Rcode, r.calls.Load())
	}
	// SRV is not resolved upstream: NXDOMAIN at once.
	if m = query(t, f, "_x._tcp.up.test", mdns.TypeSRV); m.Rcode != mdns.RcodeNameError || r.calls.Load() != 1 {
		t.Fatalf("SRV upstream: rcode %d, resolver calls %d", m.Rcode, r.calls.Load())
	}
	for name, want := range map[string]uint64{
		"externally_resolved_queries": 2, "external_a_record_queries": 1, "external_a_record_answers": 2,
		"external_unsupported_queries": 1, "unanswered_queries": 2,
	} {
		if got := counter(st, name); got != want {
			t.Errorf("%s = %d, want %d", name, got, want)
		}
	}
}

func TestForwardingTimeoutsAndPendingBound(t *testing.T) {
	f, st := newTestFilter(t, `
stat_prefix: dns
server_config: {inline_dns_table: {external_retry_count: 2}}
client_config: {max_pending_lookups: 1}
`, nil)
	r := &fakeResolver{block: true}
	f.resolver = r
	f.cfg.resolverTimeout = 20 * time.Millisecond

	// A lookup that times out is tried external_retry_count more times,
	// then answered without addresses.
	m := query(t, f, "slow.test", mdns.TypeA)
	if m.Rcode != mdns.RcodeNameError || r.calls.Load() != 3 {
		t.Fatalf("rcode %d after %d lookups, want NXDOMAIN after 3", m.Rcode, r.calls.Load())
	}

	// Beyond max_pending_lookups (+1, as Envoy compares), answered at once.
	f.cfg.resolverTimeout = time.Hour
	q := new(mdns.Msg)
	q.SetQuestion("slow.test.", mdns.TypeA)
	b, _ := q.Pack()
	s := newSocket()
	for range 2 {
		f.OnDatagram(udpfilter.Datagram{Socket: s, Peer: netip.MustParseAddrPort("127.0.0.1:5353"), Data: b})
	}
	deadline := time.Now().Add(5 * time.Second)
	for r.calls.Load() < 5 && time.Now().Before(deadline) {
		time.Sleep(time.Millisecond)
	}
	if m = ask(t, f, b, 5*time.Second); m == nil || m.Rcode != mdns.RcodeNameError {
		t.Fatalf("query beyond the bound answered %v", m)
	}
	if r.calls.Load() != 5 {
		t.Fatalf("resolver calls %d, want 5", r.calls.Load())
	}
	// Closing ends the pending lookups, unanswered.
	if err := f.Shutdown(context.Background()); err != nil {
		t.Fatal(err)
	}
	if len(s.out) != 0 {
		t.Fatalf("pending lookups answered after close: %d", len(s.out))
	}
	if got := counter(st, "externally_resolved_queries"); got != 2 {
		t.Errorf("externally_resolved_queries = %d, want 2", got)
	}
}

func TestConfigErrors(t *testing.T) {
	for name, tc := range map[string]struct{ yaml, want string }{
		"bad address": {`{stat_prefix: d, server_config: {inline_dns_table: {virtual_domains: [{name: a.test, endpoint: {address_list: {address: [10.0.0.300]}}}]}}}`,
			"server_config.inline_dns_table.virtual_domains[0].endpoint.address_list.address[0]: malformed IP address: 10.0.0.300"},
		"access log": {`{stat_prefix: d, access_log: [{name: x}]}`, "access_log: not supported"},
		"upstream resolvers": {`{stat_prefix: d, client_config: {max_pending_lookups: 1, upstream_resolvers: [{socket_address: {address: 127.0.0.1, port_value: 53}}]}}`,
			"client_config.upstream_resolvers: not implemented by Envoy"},
		"inline table file": {`{stat_prefix: d, server_config: {external_dns_table: {inline_string: "{}"}}}`,
			"server_config.external_dns_table.specifier: Envoy reads the table from a filename only"},
	} {
		t.Run(name, func(t *testing.T) {
			j, err := yaml.YAMLToJSON([]byte(tc.yaml))
			if err != nil {
				t.Fatal(err)
			}
			cfg := &dnsfilterv3.DnsFilterConfig{}
			if err := protojson.Unmarshal(j, cfg); err != nil {
				t.Fatal(err)
			}
			_, _, err = compile(cfg, udpfilter.Context{Stats: stats.NewStore(), Log: logr.Discard()}, rand.New(rand.NewPCG(1, 2)))
			if err == nil || !strings.Contains(err.Error(), tc.want) {
				t.Fatalf("error %v, want %q", err, tc.want)
			}
		})
	}
}

func TestExternalTable(t *testing.T) {
	dir := t.TempDir()
	path := dir + "/table.yaml"
	if err := writeFile(path, "virtual_domains:\n- name: file.test\n  endpoint: {address_list: {address: [192.0.2.7]}}\n  unknown_field: 1\n"); err != nil {
		t.Fatal(err)
	}
	f, _ := newTestFilter(t, `{stat_prefix: dns, server_config: {external_dns_table: {filename: `+path+`}}}`, nil)
	if got := rrs(query(t, f, "file.test", mdns.TypeA).Answer); len(got) != 1 || got[0] != "file.test. 300 A 192.0.2.7" {
		t.Fatalf("answers %q", got)
	}
	// A missing file leaves the filter without a table, as Envoy.
	f, _ = newTestFilter(t, `{stat_prefix: dns, server_config: {external_dns_table: {filename: `+dir+`/none.json}}}`, nil)
	if m := query(t, f, "file.test", mdns.TypeA); m.Rcode != mdns.RcodeNameError {
		t.Fatalf("rcode %d", m.Rcode)
	}
}

func TestCaseInsensitive(t *testing.T) {
	f, _ := newTestFilter(t, `{stat_prefix: dns, case_insensitive: true, server_config: {inline_dns_table: {virtual_domains: [{name: Mixed.Test, endpoint: {address_list: {address: [192.0.2.8]}}}]}}}`, nil)
	if got := rrs(query(t, f, "mIXED.test", mdns.TypeA).Answer); len(got) != 1 || got[0] != "mIXED.test. 300 A 192.0.2.8" {
		t.Fatalf("answers %q", got)
	}
	g, _ := newTestFilter(t, `{stat_prefix: dns, server_config: {inline_dns_table: {virtual_domains: [{name: Mixed.Test, endpoint: {address_list: {address: [192.0.2.8]}}}]}}}`, nil)
	if m := query(t, g, "mixed.test", mdns.TypeA); m.Rcode != mdns.RcodeNameError {
		t.Fatalf("case-sensitive match: rcode %d", m.Rcode)
	}
}

func FuzzQuery(f *testing.F) {
	q := new(mdns.Msg)
	q.SetQuestion("www.example.com.", mdns.TypeSRV)
	b, _ := q.Pack()
	f.Add(b)
	f.Add([]byte{0, 1, 0, 0, 0, 1, 0, 0, 0, 0, 0, 0, 0xc0, 12})
	tb, _ := compileTable(nil, false, rand.New(rand.NewPCG(1, 2)))
	filter := &Filter{cfg: &config{table: tb}, stats: newFilterStats(stats.NewStore(), "f"), log: logr.Discard(), now: time.Now}
	f.Fuzz(func(t *testing.T, data []byte) {
		s := newSocket()
		filter.OnDatagram(udpfilter.Datagram{Socket: s, Data: data})
		if len(s.out) != 1 {
			t.Fatalf("%d responses", len(s.out))
		}
		if err := new(mdns.Msg).Unpack(s.out[0]); err != nil && len(data) >= headerLen {
			// Every response is a well-formed message.
			t.Fatalf("response does not parse: %v", err)
		}
	})
}

func writeFile(path, s string) error { return os.WriteFile(path, []byte(s), 0o600) }

func TestResolverChoice(t *testing.T) {
	compileYAML := func(y string) *config {
		t.Helper()
		j, err := yaml.YAMLToJSON([]byte(y))
		if err != nil {
			t.Fatal(err)
		}
		cfg := &dnsfilterv3.DnsFilterConfig{}
		if err := protojson.Unmarshal(j, cfg); err != nil {
			t.Fatal(err)
		}
		c, _, err := compile(cfg, udpfilter.Context{Stats: stats.NewStore(), Log: logr.Discard()}, rand.New(rand.NewPCG(1, 2)))
		if err != nil {
			t.Fatal(err)
		}
		return c
	}
	type caresOptions interface{ Options() dns.CaresOptions }
	if c := compileYAML(`{stat_prefix: d}`); c.forward || c.resolver != nil {
		t.Fatalf("without client_config: forward %v resolver %v", c.forward, c.resolver)
	}
	c := compileYAML(`{stat_prefix: d, client_config: {max_pending_lookups: 3, dns_resolution_config: {resolvers: [{socket_address: {address: 127.0.0.1, port_value: 5300}}], dns_resolver_options: {use_tcp_for_dns_lookups: true}}}}`)
	o, ok := c.resolver.(caresOptions)
	if !ok || !c.forward || c.maxPending != 3 || c.resolverTimeout != defaultResolverTimeout {
		t.Fatalf("dns_resolution_config: %+v", c)
	}
	if got := o.Options(); len(got.Resolvers) != 1 || got.Resolvers[0] != "127.0.0.1:5300" || !got.UseTCP {
		t.Fatalf("options %+v", got)
	}
	c = compileYAML(`{stat_prefix: d, client_config: {max_pending_lookups: 1, resolver_timeout: 3s}}`)
	if o, ok := c.resolver.(caresOptions); !ok || len(o.Options().Resolvers) != 0 || c.resolverTimeout != 3*time.Second {
		t.Fatalf("default resolver: %+v", c)
	}
}

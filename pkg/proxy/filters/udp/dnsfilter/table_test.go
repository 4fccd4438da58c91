package dnsfilter

import (
	"encoding/binary"
	"math/rand/v2"
	"net/netip"
	"strings"
	"testing"

	dnstablev3 "github.com/envoyproxy/go-control-plane/envoy/data/dns/v3"
	"google.golang.org/protobuf/encoding/protojson"
	"sigs.k8s.io/yaml"
)

func TestNames(t *testing.T) {
	for in, want := range map[string]string{
		"www.example.com": "example.com", "example.com": "example.com", "com": "com",
		".example.com": "example.com", "a.b.c.d": "c.d",
	} {
		if got := domainSuffix(in); got != want {
			t.Errorf("domainSuffix(%q) = %q, want %q", in, got, want)
		}
	}
	for in, want := range map[string]string{"*.example.com": ".example.com", "*example.com": "*example.com", "a.*.com": "a.*.com"} {
		if got := virtualName(in); got != want {
			t.Errorf("virtualName(%q) = %q, want %q", in, got, want)
		}
	}
	if got := serviceName("_http", "tcp", "example.com"); got != "_http._tcp.example.com" {
		t.Errorf("serviceName = %q", got)
	}
}

func mustTable(t *testing.T, y string) *table {
	t.Helper()
	j, err := yaml.YAMLToJSON([]byte(y))
	if err != nil {
		t.Fatal(err)
	}
	tbl := &dnstablev3.DnsTable{}
	if err := protojson.Unmarshal(j, tbl); err != nil {
		t.Fatal(err)
	}
	tb, errs := compileTable(tbl, false, rand.New(rand.NewPCG(3, 4)))
	if len(errs) > 0 {
		t.Fatal(errs)
	}
	return tb
}

func TestTableAsEnvoyFilesIt(t *testing.T) {
	tb := mustTable(t, `
virtual_domains:
- {name: a.example.com, endpoint: {address_list: {address: [10.0.0.1, 10.0.0.2]}}}
- {name: a.example.com, endpoint: {address_list: {address: [10.0.0.3]}}}
- {name: b.example.com, endpoint: {cluster_name: first}}
- {name: b.example.com, endpoint: {cluster_name: second}}
- name: other.test
  endpoint: {service_list: {services: [{service_name: s, protocol: {number: 17}, targets: [{host_name: a.example.com}]}]}}
- name: example.com
  endpoint: {service_list: {services: [
    {service_name: s, protocol: {number: 99}, targets: [{host_name: a.example.com}]},
    {service_name: s, protocol: {number: 17}, targets: [{host_name: a.example.com, port: 1}, {host_name: a.example.com, port: 2}]}]}}
`)
	// A name listed twice gets both lists, the first list rotated.
	addrs, _ := tb.addresses("a.example.com")
	if len(addrs) != 3 || addrs[2] != netip.MustParseAddr("10.0.0.3") {
		t.Fatalf("addresses %v", addrs)
	}
	// The first cluster of a name stays.
	if c := tb.clusterOf("b.example.com"); c != "first" {
		t.Fatalf("cluster %q", c)
	}
	// A service whose domain's suffix nothing filed before is dropped, as
	// is one of an unnamed protocol number; a target named twice keeps
	// its first entry.
	if tb.serviceOf("_s._udp.other.test") != nil {
		t.Fatal("service without a filed suffix kept")
	}
	svc := tb.serviceOf("_s._udp.example.com")
	if svc == nil || len(svc.targets) != 1 || svc.targets[0].port != 1 {
		t.Fatalf("service %+v", svc)
	}
	if len(tb.notes) != 2 {
		t.Fatalf("notes %q", tb.notes)
	}
	if !tb.known("x.y.example.com") || tb.known("example.org") {
		t.Fatal("known suffixes")
	}
}

// TestSRVAdditionalKeptWhenAnswerOverflows checks Envoy's accounting: an
// SRV answer's additional record is written before the answer's size is
// checked, and stays when the answer does not fit.
func TestSRVAdditionalKeptWhenAnswerOverflows(t *testing.T) {
	long := strings.Repeat("t", 60) + "." + strings.Repeat("u", 60) + "." + strings.Repeat("v", 60) + ".test"
	q := &queryContext{id: 7, parsed: true, questions: []question{{name: "_s._tcp." + long, qtype: typeSRV, qclass: classIN}}}
	svc := &service{name: q.questions[0].name, ttl: 5}
	for i := range 2 {
		tg := target{name: "t.test", port: uint16(i + 1)}
		q.addService(q.questions[0], svc, tg)
	}
	q.addAdditional("t.test", typeA, 9, netip.MustParseAddr("192.0.2.1"))
	// 2 + the question (201) + the additional record (22) + the first
	// answer (221) fit in 512; the second additional record does too,
	// its answer no longer.
	b := buildResponse(q, false, func(int) int { return 0 })
	an, ar := binary.BigEndian.Uint16(b[6:]), binary.BigEndian.Uint16(b[10:])
	if an != 1 || ar != 2 {
		t.Fatalf("%d answers and %d additional records, want 1 and 2", an, ar)
	}
	if rcode := binary.BigEndian.Uint16(b[2:]) & 0xf; rcode != rcodeNoError {
		t.Fatalf("rcode %d", rcode)
	}
}

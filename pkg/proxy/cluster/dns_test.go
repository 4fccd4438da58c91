package cluster

import (
	"context"
	"fmt"
	"net/netip"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	"github.com/outrigger-dev/outrigger/pkg/proxy/dns"
	"github.com/outrigger-dev/outrigger/pkg/proxy/stats"
	"github.com/outrigger-dev/outrigger/pkg/proxy/upstream"
)

// scriptedResolver answers names from a table the test changes; a name
// without an entry fails. Every resolution is also sent on calls, when
// set.
type scriptedResolver struct {
	mu      sync.Mutex
	answers map[string]dns.Result
	calls   chan string
}

func (r *scriptedResolver) set(name string, res dns.Result) {
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.answers == nil {
		r.answers = map[string]dns.Result{}
	}
	r.answers[name] = res
}

func (r *scriptedResolver) Resolve(_ context.Context, name string, _ dns.Family) dns.Result {
	r.mu.Lock()
	res, ok := r.answers[name]
	r.mu.Unlock()
	if r.calls != nil {
		select {
		case r.calls <- name:
		default:
		}
	}
	if !ok {
		return dns.Result{Status: dns.Failed, Details: "no answer"}
	}
	return res
}

// scriptedSpec hands out the one scripted resolver.
type scriptedSpec struct{ r *scriptedResolver }

func (scriptedSpec) Name() string               { return "scripted" }
func (s scriptedSpec) New(dns.Env) dns.Resolver { return s.r }
func ips(list ...string) dns.Result {
	res := dns.Result{Status: dns.Completed}
	for _, s := range list {
		res.Addresses = append(res.Addresses, dns.Address{IP: netip.MustParseAddr(s), TTL: time.Minute})
	}
	return res
}

// hostAddrs lists a cluster's host addresses and hostnames.
func hostAddrs(c *Cluster) []string {
	var out []string
	for _, h := range c.Hosts() {
		out = append(out, h.Address+" "+h.Hostname)
	}
	return out
}

func TestDNSClusterConfig(t *testing.T) {
	tests := map[string]struct {
		yaml string
		want []string
	}{
		"STRICT_DNS takes names and literals": {yaml: `
- name: s
  type: STRICT_DNS
  load_assignment:
    cluster_name: s
    endpoints:
    - lb_endpoints:
      - endpoint: {address: {socket_address: {address: backend.example.com, port_value: 80}}}
      - endpoint: {address: {socket_address: {address: 10.0.0.1, port_value: 80}}}
      - endpoint: {address: {socket_address: {address: "back end", port_value: 80}}}
      - endpoint: {address: {socket_address: {address: backend.example.com}}}`,
			want: []string{
				`static_resources.clusters[0].load_assignment.endpoints[0].lb_endpoints[2].endpoint.address.socket_address.address: "back end" is neither a host name nor an IP address`,
				"static_resources.clusters[0].load_assignment.endpoints[0].lb_endpoints[3].endpoint.address.socket_address.port_value: 0 is not a port (1 to 65535)",
			}},
		"LOGICAL_DNS has one endpoint": {yaml: `
- name: l
  type: LOGICAL_DNS
  load_assignment:
    cluster_name: l
    endpoints:
    - lb_endpoints:
      - endpoint: {address: {socket_address: {address: a.example.com, port_value: 80}}}
      - endpoint: {address: {socket_address: {address: b.example.com, port_value: 80}}}`,
			want: []string{"static_resources.clusters[0].load_assignment: LOGICAL_DNS clusters must have a single locality_lb_endpoint and a single lb_endpoint"}},
		"DNS settings": {yaml: `
- name: d
  type: STRICT_DNS
  dns_failure_refresh_rate: {base_interval: 2s, max_interval: 1s}
  dns_resolvers: [{socket_address: {address: dns.example.com, port_value: 53}}]`,
			want: []string{
				"static_resources.clusters[0].dns_failure_refresh_rate.max_interval: must be greater than or equal to the base_interval",
				`static_resources.clusters[0].dns_resolvers[0].socket_address.address: DNS resolver "dns.example.com" is not an IP address`,
			}},
		"STATIC ignores the DNS settings, as Envoy": {yaml: `
- name: st
  dns_lookup_family: V4_ONLY
  dns_refresh_rate: 1s
  respect_dns_ttl: true
  dns_resolvers: [{socket_address: {address: 127.0.0.1, port_value: 53}}]
  load_assignment:
    cluster_name: st
    endpoints:
    - lb_endpoints:
      - endpoint: {address: {socket_address: {address: 10.0.0.1, port_value: 80}}}`},
	}
	for name, tc := range tests {
		t.Run(name, func(t *testing.T) {
			m, err := NewManager(parseClusters(t, tc.yaml), Options{Stats: stats.NewStore()})
			if diff := cmp.Diff(tc.want, errorLines(err)); diff != "" {
				t.Fatalf("errors (-want +got):\n%s", diff)
			}
			if err != nil {
				configErrors(t, err)
				return
			}
			m.Close()
		})
	}
}

const strictYAML = `
- name: web
  type: STRICT_DNS
  connect_timeout: 1s
  dns_refresh_rate: 0.02s
  load_assignment:
    cluster_name: web
    endpoints:
    - locality: {zone: z1}
      lb_endpoints:
      - endpoint: {address: {socket_address: {address: web.test, port_value: %d}}}
    - priority: 1
      lb_endpoints:
      - endpoint: {address: {socket_address: {address: backup.test, port_value: %d}}, hostname: backup-host}
`

// dnsManager builds clusters whose DNS clusters resolve with r.
func dnsManager(t *testing.T, yaml string, r *scriptedResolver) (*Manager, func(string) int64) {
	t.Helper()
	m, store, _ := newTestManager(t, yaml, func(o *Options) {
		o.Resolver = scriptedSpec{r}
		o.Now = time.Now
	})
	return m, func(name string) int64 {
		if strings.HasSuffix(name, "membership_total") || strings.HasSuffix(name, "_active") {
			return store.Gauge(name).Value()
		}
		return int64(store.Counter(name).Value())
	}
}

// waitHosts waits until the cluster's hosts are want.
func waitHosts(t *testing.T, c *Cluster, want []string) {
	t.Helper()
	deadline := time.Now().Add(10 * time.Second)
	for !cmp.Equal(hostAddrs(c), want) {
		if time.Now().After(deadline) {
			t.Fatalf("hosts %v, want %v", hostAddrs(c), want)
		}
		time.Sleep(5 * time.Millisecond)
	}
}

func TestStrictDNSClusterFollowsAnswers(t *testing.T) {
	r := &scriptedResolver{}
	m, stat := dnsManager(t, fmt.Sprintf(strictYAML, 8080, 9090), r)
	c := m.Cluster("web")

	// Before the first answer: no host, requests find none.
	if h := c.PickHost(nil); h != nil {
		t.Fatalf("picked %v before any resolution", h.Address)
	}
	if n := stat("cluster.web.upstream_cx_none_healthy"); n != 1 {
		t.Errorf("upstream_cx_none_healthy %d, want 1", n)
	}
	select {
	case <-m.Warmed():
		t.Fatal("warmed before any resolution")
	default:
	}

	r.set("web.test", ips("10.0.0.1", "10.0.0.2"))
	r.set("backup.test", ips("fd00::9"))
	m.Start()
	select {
	case <-m.Warmed():
	case <-time.After(10 * time.Second):
		t.Fatal("not warmed")
	}
	waitHosts(t, c, []string{"10.0.0.1:8080 web.test", "10.0.0.2:8080 web.test", "[fd00::9]:9090 backup-host"})
	hs := c.Hosts()
	if hs[0].Locality.Zone != "z1" || hs[2].Priority != 1 || hs[0].Cluster != "web" {
		t.Errorf("host placement lost: %+v %+v", hs[0].Locality, hs[2].Priority)
	}
	// The gauges follow the host set's publication: wait for them too.
	for deadline := time.Now().Add(5 * time.Second); stat("cluster.web.membership_total") != 3 && time.Now().Before(deadline); {
		time.Sleep(5 * time.Millisecond)
	}
	if got := stat("cluster.web.membership_total"); got != 3 {
		t.Errorf("membership_total %d", got)
	}
	// Priority 0 is healthy: requests go there, round robin.
	seen := map[string]int{}
	for range 4 {
		seen[c.PickHost(nil).Address]++
	}
	if !cmp.Equal(seen, map[string]int{"10.0.0.1:8080": 2, "10.0.0.2:8080": 2}) {
		t.Errorf("picks %v", seen)
	}

	// The answer changes: hosts follow; a failure keeps the last ones.
	r.set("web.test", ips("10.0.0.2", "10.0.0.3"))
	waitHosts(t, c, []string{"10.0.0.2:8080 web.test", "10.0.0.3:8080 web.test", "[fd00::9]:9090 backup-host"})
	if c.Hosts()[0] != hs[1] {
		t.Error("10.0.0.2 is a new host object: its stats and pool were lost")
	}
	r.set("web.test", dns.Result{Status: dns.Failed})
	failures := stat("cluster.web.update_failure")
	deadline := time.Now().Add(10 * time.Second)
	for stat("cluster.web.update_failure") < failures+3 && time.Now().Before(deadline) {
		time.Sleep(5 * time.Millisecond)
	}
	if got := hostAddrs(c); len(got) != 3 || got[0] != "10.0.0.2:8080 web.test" {
		t.Errorf("after failures: %v, want the last good hosts", got)
	}
	for _, name := range []string{"update_attempt", "update_success", "update_failure", "update_no_rebuild", "membership_change"} {
		if stat("cluster.web."+name) == 0 {
			t.Errorf("cluster.web.%s did not move", name)
		}
	}
}

func TestLogicalDNSCluster(t *testing.T) {
	srvA := newUpstreamServer(t, nil)
	r := &scriptedResolver{}
	yaml := `
- name: logical
  type: LOGICAL_DNS
  dns_refresh_rate: 0.02s
  dns_lookup_family: V4_ONLY
  load_assignment:
    cluster_name: logical
    endpoints:
    - priority: 3
      lb_endpoints:
      - endpoint: {address: {socket_address: {address: svc.test, port_value: %d}}}
`
	m, stat := dnsManager(t, fmt.Sprintf(yaml, srvA.port()), r)
	c := m.Cluster("logical")
	r.set("svc.test", ips("127.0.0.1", "127.0.0.3"))
	m.Start()
	want := fmt.Sprintf("127.0.0.1:%d svc.test", srvA.port())
	waitHosts(t, c, []string{want})
	if c.Hosts()[0].Priority != 0 {
		t.Errorf("priority %d, want 0 (Envoy moves a LOGICAL_DNS endpoint there)", c.Hosts()[0].Priority)
	}
	h := c.PickHost(nil)
	conn, err := c.AcquireHTTP1(context.Background(), h)
	if err != nil {
		t.Fatal(err)
	}
	roundTrip(t, conn)

	// An empty answer is a failure: the host stays.
	r.set("svc.test", ips())
	failures := stat("cluster.logical.update_failure")
	for deadline := time.Now().Add(10 * time.Second); stat("cluster.logical.update_failure") == failures && time.Now().Before(deadline); {
		time.Sleep(5 * time.Millisecond)
	}
	if got := hostAddrs(c); !cmp.Equal(got, []string{want}) {
		t.Fatalf("after an empty answer: %v", got)
	}

	// A new first address: a new host; the connection in use keeps its
	// address and is closed when released.
	r.set("svc.test", ips("127.0.0.3"))
	waitHosts(t, c, []string{fmt.Sprintf("127.0.0.3:%d svc.test", srvA.port())})
	roundTrip(t, conn)
	c.ReleaseHTTP1(conn, true)
	select {
	case <-srvA.closed:
	case <-time.After(5 * time.Second):
		t.Fatal("the connection of the replaced host was not closed")
	}
	if n := stat("cluster.logical.upstream_cx_active"); n != 0 {
		t.Errorf("upstream_cx_active %d, want 0", n)
	}
}

func TestRemovedHostPoolIsRetired(t *testing.T) {
	srv := newUpstreamServer(t, nil)
	r := &scriptedResolver{}
	yaml := fmt.Sprintf(`
- name: up
  type: STRICT_DNS
  dns_refresh_rate: 0.02s
  load_assignment:
    cluster_name: up
    endpoints:
    - lb_endpoints:
      - endpoint: {address: {socket_address: {address: up.test, port_value: %d}}}
`, srv.port())
	m, stat := dnsManager(t, yaml, r)
	c := m.Cluster("up")
	r.set("up.test", ips("127.0.0.1"))
	m.Start()
	waitHosts(t, c, []string{fmt.Sprintf("127.0.0.1:%d up.test", srv.port())})
	h := c.PickHost(nil)

	// Two connections: one goes back idle, one stays lent.
	idle, err := c.AcquireHTTP1(context.Background(), h)
	if err != nil {
		t.Fatal(err)
	}
	lent, err := c.AcquireHTTP1(context.Background(), h)
	if err != nil {
		t.Fatal(err)
	}
	roundTrip(t, idle)
	roundTrip(t, lent)
	c.ReleaseHTTP1(idle, true)

	// The host goes away: its idle connection closes at once.
	r.set("up.test", ips())
	waitHosts(t, c, nil)
	select {
	case <-srv.closed:
	case <-time.After(5 * time.Second):
		t.Fatal("the idle connection of a removed host stayed open")
	}
	// The lent one finishes its request, then closes.
	roundTrip(t, lent)
	c.ReleaseHTTP1(lent, true)
	select {
	case <-srv.closed:
	case <-time.After(5 * time.Second):
		t.Fatal("the lent connection of a removed host was kept")
	}
	// A pick made just before the removal still reaches the host.
	extra, err := c.AcquireHTTP1(context.Background(), h)
	if err != nil {
		t.Fatalf("acquire for a host removed after the pick: %v", err)
	}
	roundTrip(t, extra)
	c.ReleaseHTTP1(extra, true)
	if n := stat("cluster.up.upstream_cx_active"); n != 0 {
		t.Errorf("upstream_cx_active %d, want 0", n)
	}
	if n := stat("cluster.up.membership_total"); n != 0 {
		t.Errorf("membership_total %d, want 0", n)
	}
	// Another cluster's host is still refused.
	if _, err := c.AcquireHTTP1(context.Background(), &upstream.Host{Address: "127.0.0.1:1", Cluster: "other"}); err == nil {
		t.Error("a host of another cluster was accepted")
	}
}

func TestWaitForWarmOnInitFalse(t *testing.T) {
	r := &scriptedResolver{}
	yaml := `
- name: lazy
  type: STRICT_DNS
  wait_for_warm_on_init: false
  load_assignment:
    cluster_name: lazy
    endpoints:
    - lb_endpoints:
      - endpoint: {address: {socket_address: {address: never.test, port_value: 80}}}
`
	m, _ := dnsManager(t, yaml, r)
	select {
	case <-m.Warmed():
	case <-time.After(5 * time.Second):
		t.Fatal("a cluster with wait_for_warm_on_init false held the initialisation")
	}
}

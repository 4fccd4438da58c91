package udpproxy

import (
	"net"
	"net/netip"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/go-logr/logr"

	"github.com/outrigger-dev/outrigger/pkg/proxy/stats"
	"github.com/outrigger-dev/outrigger/pkg/proxy/udpfilter"
	"github.com/outrigger-dev/outrigger/pkg/proxy/upstream"
)

// fakeCluster picks its first usable host; its version changes when its
// hosts are replaced.
type fakeCluster struct {
	mu sync.Mutex
	// rr picks the hosts in turn instead.
	rr       bool
	next     int
	hosts    []*upstream.Host
	version  *int
	sessions int
	limit    int
}

func (f *fakeCluster) Name() string              { return "c" }
func (f *fakeCluster) ObservabilityName() string { return "c" }
func (f *fakeCluster) PickHost(*upstream.PickContext) *upstream.Host {
	f.mu.Lock()
	defer f.mu.Unlock()
	if f.rr {
		f.next++
		return f.hosts[f.next%len(f.hosts)]
	}
	for _, h := range f.hosts {
		if h.Healthy() {
			return h
		}
	}
	return nil
}
func (f *fakeCluster) AcquireSession() bool {
	f.mu.Lock()
	defer f.mu.Unlock()
	if f.sessions >= f.limit {
		return false
	}
	f.sessions++
	return true
}
func (f *fakeCluster) ReleaseSession() { f.mu.Lock(); f.sessions--; f.mu.Unlock() }
func (f *fakeCluster) HostsVersion() any {
	f.mu.Lock()
	defer f.mu.Unlock()
	return f.version
}
func (f *fakeCluster) HasHost(addr string) bool {
	f.mu.Lock()
	defer f.mu.Unlock()
	for _, h := range f.hosts {
		if h.Address == addr {
			return true
		}
	}
	return false
}
func (f *fakeCluster) setHosts(hs ...*upstream.Host) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.hosts, f.version = hs, new(int)
}

type fakeClusters struct{ c *fakeCluster }

func (f fakeClusters) Cluster(name string) udpfilter.Cluster {
	if name == "c" {
		return f.c
	}
	return nil
}

// replies collects what the proxy sends back to clients.
type replies chan string

func (r replies) WriteTo(b []byte, peer netip.AddrPort) error {
	r <- peer.String() + " " + string(b)
	return nil
}

// echoHost is a UDP server answering tag:datagram, as a host.
func echoHost(t *testing.T, tag string) *upstream.Host {
	t.Helper()
	c, err := net.ListenUDP("udp", &net.UDPAddr{IP: net.IPv4(127, 0, 0, 1)})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = c.Close() })
	go func() {
		buf := make([]byte, 2048)
		for {
			n, from, err := c.ReadFromUDPAddrPort(buf)
			if err != nil {
				return
			}
			_, _ = c.WriteToUDPAddrPort(append([]byte(tag+":"), buf[:n]...), from)
		}
	}()
	return &upstream.Host{Address: c.LocalAddr().String(), Weight: 1}
}

// newTestProxy is a proxy of cluster c with the given config fields
// (JSON object members), if any.
func newTestProxy(t *testing.T, c *fakeCluster, fields ...string) (*Proxy, *stats.Store) {
	t.Helper()
	cfg, err := compile(parse(t, `{"stat_prefix": "p", "cluster": "c"`+strings.Join(append([]string{""}, fields...), ", ")+`}`))
	if err != nil {
		t.Fatal(err)
	}
	st := stats.NewStore()
	p := newProxy(cfg, nil, nil, udpfilter.Context{Stats: st, Log: logr.Discard(), Clusters: fakeClusters{c}})
	t.Cleanup(func() { _ = p.Close() })
	return p, st
}

// send hands the proxy one datagram from peer and returns the reply.
func send(t *testing.T, p *Proxy, r replies, peer, msg string) string {
	t.Helper()
	p.OnDatagram(udpfilter.Datagram{Socket: r, Local: netip.MustParseAddrPort("127.0.0.1:5000"), Peer: netip.MustParseAddrPort(peer), Data: []byte(msg)})
	select {
	case got := <-r:
		return got
	case <-time.After(5 * time.Second):
		return ""
	}
}

func TestSessionMovesWhenItsHostLeavesOrFails(t *testing.T) {
	a, b := echoHost(t, "A"), echoHost(t, "B")
	c := &fakeCluster{limit: 10}
	c.setHosts(a, b)
	p, st := newTestProxy(t, c)
	r := make(replies, 4)
	const peer = "127.0.0.1:40000"
	if got := send(t, p, r, peer, "1"); got != peer+" A:1" {
		t.Fatalf("first reply %q", got)
	}
	// B only: the session's host left the cluster.
	c.setHosts(b)
	if got := send(t, p, r, peer, "2"); got != peer+" B:2" {
		t.Fatalf("reply after A left %q", got)
	}
	// A back first, but B's session stays: sessions are sticky.
	c.setHosts(a, b)
	if got := send(t, p, r, peer, "3"); got != peer+" B:3" {
		t.Fatalf("reply of a sticky session %q", got)
	}
	// B fails its health checks: the session moves to A.
	b.SetHealthFlag(upstream.FailedActiveHC)
	if got := send(t, p, r, peer, "4"); got != peer+" A:4" {
		t.Fatalf("reply after B failed %q", got)
	}
	sc := st.Scope("udp.p.")
	if n := sc.Counter("downstream_sess_total").Value(); n != 3 {
		t.Errorf("downstream_sess_total = %d, want 3", n)
	}
	if n := sc.Gauge("downstream_sess_active").Value(); n != 1 {
		t.Errorf("downstream_sess_active = %d, want 1", n)
	}
	if c.sessions != 1 {
		t.Errorf("breaker units held: %d, want 1", c.sessions)
	}
}

func TestBreakerAndNoRoute(t *testing.T) {
	a := echoHost(t, "A")
	c := &fakeCluster{limit: 1}
	c.setHosts(a)
	p, st := newTestProxy(t, c)
	r := make(replies, 4)
	if got := send(t, p, r, "127.0.0.1:40000", "x"); !strings.HasSuffix(got, " A:x") {
		t.Fatalf("reply %q", got)
	}
	p.OnDatagram(udpfilter.Datagram{Socket: r, Local: netip.MustParseAddrPort("127.0.0.1:5000"), Peer: netip.MustParseAddrPort("127.0.0.1:40001"), Data: []byte("y")})
	sc := st.Scope("udp.p.")
	if n := sc.Counter("downstream_sess_total").Value(); n != 1 {
		t.Errorf("downstream_sess_total = %d, want 1 (the second client is over max_connections)", n)
	}
	p.cfg.cluster = "missing"
	p.OnDatagram(udpfilter.Datagram{Socket: r, Local: netip.MustParseAddrPort("127.0.0.1:5000"), Peer: netip.MustParseAddrPort("127.0.0.1:40002"), Data: []byte("z")})
	if n := sc.Counter("downstream_sess_no_route").Value(); n != 1 {
		t.Errorf("downstream_sess_no_route = %d, want 1", n)
	}
	_ = p.Close()
	if c.sessions != 0 || sc.Gauge("downstream_sess_active").Value() != 0 {
		t.Errorf("after Close: %d breaker units, %d active sessions", c.sessions, sc.Gauge("downstream_sess_active").Value())
	}
	p.cfg.cluster = "c"
	p.OnDatagram(udpfilter.Datagram{Socket: r, Local: netip.MustParseAddrPort("127.0.0.1:5000"), Peer: netip.MustParseAddrPort("127.0.0.1:40003"), Data: []byte("w")})
	if p.ActiveSessions() != 0 || c.sessions != 0 {
		t.Error("a closed proxy started a session")
	}
}

func TestPerPacketBalancing(t *testing.T) {
	a, b := echoHost(t, "A"), echoHost(t, "B")
	c := &fakeCluster{limit: 10, rr: true}
	c.setHosts(a, b)
	p, st := newTestProxy(t, c, `"use_per_packet_load_balancing": true`)
	r := make(replies, 4)
	const peer = "127.0.0.1:40000"
	var tags []string
	for _, msg := range []string{"1", "2", "3"} {
		got := send(t, p, r, peer, msg)
		tag, ok := strings.CutPrefix(got, peer+" ")
		if !ok || !strings.HasSuffix(tag, ":"+msg) {
			t.Fatalf("reply %q to %s", got, msg)
		}
		tags = append(tags, tag[:1])
	}
	if tags[0] == tags[1] || tags[0] != tags[2] {
		t.Errorf("hosts %v: want the two hosts in turn", tags)
	}
	// One session per host for the one client.
	if n := st.Scope("udp.p.").Counter("downstream_sess_total").Value(); n != 2 {
		t.Errorf("downstream_sess_total = %d, want 2", n)
	}
}

func TestUpstreamDatagramOverTheLimitIsDropped(t *testing.T) {
	a := echoHost(t, "A")
	c := &fakeCluster{limit: 10}
	c.setHosts(a)
	p, st := newTestProxy(t, c, `"upstream_socket_config": {"max_rx_datagram_size": 6}`)
	r := make(replies, 4)
	if got := send(t, p, r, "127.0.0.1:40000", "1234"); got != "127.0.0.1:40000 A:1234" { // 6 bytes back
		t.Fatalf("reply %q", got)
	}
	// 7 bytes back: dropped, no reply.
	p.OnDatagram(udpfilter.Datagram{Socket: r, Local: netip.MustParseAddrPort("127.0.0.1:5000"), Peer: netip.MustParseAddrPort("127.0.0.1:40000"), Data: []byte("12345")})
	dropped := st.Scope("cluster.c.").Counter("udp.sess_rx_datagrams_dropped")
	deadline := time.Now().Add(5 * time.Second)
	for dropped.Value() == 0 && time.Now().Before(deadline) {
		time.Sleep(10 * time.Millisecond)
	}
	if dropped.Value() != 1 || len(r) != 0 {
		t.Errorf("sess_rx_datagrams_dropped = %d, %d replies; want 1 and none", dropped.Value(), len(r))
	}
}

package cluster

import (
	"fmt"
	"io"
	"net"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/outrigger-dev/outrigger/pkg/proxy/upstream"
)

// TestEDSRemovedHostStillServesItsRequest: a request that picked a host
// just before an EDS update removed it still gets a connection to that
// host (one of its own, closed when released), rather than failing for a
// host the cluster no longer lists.
func TestEDSRemovedHostStillServesItsRequest(t *testing.T) {
	accepted := make(chan string, 1)
	port := uint32(loopbackServer(t, func(c net.Conn) {
		accepted <- c.RemoteAddr().String()
	}))

	m, _, _ := newTestManager(t, `
- name: backend
  type: EDS`)
	c := m.Cluster("backend")
	p, err := c.EDSHosts(claOf(port))
	if err != nil {
		t.Fatal(err)
	}
	c.SetEDSHosts(p)
	h := c.PickHost(nil)
	if h == nil {
		t.Fatal("no host picked")
	}
	// The update removes the picked host before the request asks for a
	// connection to it.
	p, err = c.EDSHosts(claOf(port + 1))
	if err != nil {
		t.Fatal(err)
	}
	c.SetEDSHosts(p)
	if c.set.Load().pool(h) != nil {
		t.Fatal("the removed host still has a pool in the new set")
	}
	conn, err := c.AcquireHTTP1(t.Context(), h)
	if err != nil {
		t.Fatalf("acquiring a connection to the host picked before its removal: %v", err)
	}
	if got, want := <-accepted, conn.LocalAddr().String(); got != want {
		t.Errorf("the upstream accepted %s, the acquired connection is %s", got, want)
	}
	c.ReleaseHTTP1(conn, true)
}

// TestEDSRemovedHostStillServesItsHTTP2Request: the same on an HTTP/2
// cluster, whose transport dials by address: a request that picked a
// host before an update removed it reaches that host, and once it ends
// the connection dialled for it is closed, as nothing picks the host
// any more.
func TestEDSRemovedHostStillServesItsHTTP2Request(t *testing.T) {
	picked, pickedConns := newH2CServer(t)
	other, otherConns := newH2CServer(t)
	m, _, _ := newTestManager(t, `
- name: backend
  type: EDS
  typed_extension_protocol_options:
    envoy.extensions.upstreams.http.v3.HttpProtocolOptions:
      "@type": type.googleapis.com/envoy.extensions.upstreams.http.v3.HttpProtocolOptions
      explicit_http_config: {http2_protocol_options: {}}`)
	c := m.Cluster("backend")
	apply := func(port int) {
		t.Helper()
		p, err := c.EDSHosts(claOf(uint32(port)))
		if err != nil {
			t.Fatal(err)
		}
		c.SetEDSHosts(p)
	}
	apply(picked)
	h := c.PickHost(nil)
	if h == nil {
		t.Fatal("no host picked")
	}
	// The update removes the picked host between the pick and the dial.
	apply(other)
	if c.set.Load().byAddr[h.Address] != nil {
		t.Fatal("the removed host is still in the new set")
	}
	req, err := http.NewRequestWithContext(t.Context(), http.MethodGet, "http://ignored/removed", nil)
	if err != nil {
		t.Fatal(err)
	}
	resp, err := c.RoundTripHTTP2(req, h)
	if err != nil {
		t.Fatalf("a request to the host picked before its removal: %v", err)
	}
	body, err := io.ReadAll(resp.Body)
	if err != nil {
		t.Fatal(err)
	}
	if want := "HTTP/2.0 GET /removed"; !strings.HasPrefix(string(body), want) {
		t.Errorf("response %q, want it to start with %q", body, want)
	}
	if got := pickedConns.Load(); got != 1 {
		t.Errorf("the picked host saw %d connections, want 1", got)
	}
	if got := otherConns.Load(); got != 0 {
		t.Errorf("the host that replaced it saw %d connections, want 0", got)
	}
	if got := h.Stats.CxActive.Load(); got != 1 {
		t.Errorf("the picked host has %d active connections during its request, want 1", got)
	}
	_ = resp.Body.Close()
	// The connection went idle as the request ended, and was closed.
	deadline := time.Now().Add(5 * time.Second)
	for h.Stats.CxActive.Load() != 0 && time.Now().Before(deadline) {
		time.Sleep(10 * time.Millisecond)
	}
	if got := h.Stats.CxActive.Load(); got != 0 {
		t.Errorf("the removed host keeps %d connections after its last request ended, want 0", got)
	}

	// A host of another cluster is still refused.
	third, thirdConns := newH2CServer(t)
	stranger := upstream.Host{Address: fmt.Sprintf("127.0.0.1:%d", third), Cluster: "another"}
	req, _ = http.NewRequestWithContext(t.Context(), http.MethodGet, "http://ignored/", nil)
	if resp, err := c.RoundTripHTTP2(req, &stranger); err == nil {
		_ = resp.Body.Close()
		t.Error("a host of another cluster was dialled")
	}
	if got := thirdConns.Load(); got != 0 {
		t.Errorf("a host of another cluster saw %d connections, want 0", got)
	}
}

// TestAggregateRemovedHostStillServesItsRequest: the same through an
// aggregate cluster, whose request is carried by the host's own cluster
// even once that cluster no longer has the host.
func TestAggregateRemovedHostStillServesItsRequest(t *testing.T) {
	accepted := make(chan string, 1)
	port := uint32(loopbackServer(t, func(c net.Conn) {
		accepted <- c.RemoteAddr().String()
	}))
	m, _, _ := newTestManager(t, `
- name: member
  type: EDS
- name: agg
  lb_policy: CLUSTER_PROVIDED
  cluster_type:
    name: envoy.clusters.aggregate
    typed_config:
      "@type": type.googleapis.com/envoy.extensions.clusters.aggregate.v3.ClusterConfig
      clusters: [member]`)
	member, agg := m.Cluster("member"), m.Cluster("agg")
	apply := func(port uint32) {
		t.Helper()
		p, err := member.EDSHosts(claOf(port))
		if err != nil {
			t.Fatal(err)
		}
		member.SetEDSHosts(p)
	}
	apply(port)
	h := agg.PickHost(nil)
	if h == nil {
		t.Fatal("no host picked")
	}
	apply(port + 1)
	conn, err := agg.AcquireHTTP1(t.Context(), h)
	if err != nil {
		t.Fatalf("acquiring a connection to the host picked before its removal: %v", err)
	}
	if got, want := <-accepted, conn.LocalAddr().String(); got != want {
		t.Errorf("the upstream accepted %s, the acquired connection is %s", got, want)
	}
	agg.ReleaseHTTP1(conn, true)
}

package cluster

import (
	"net"
	"testing"
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

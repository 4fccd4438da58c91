package cluster

import (
	"context"
	"errors"
	"net"
	"sync"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
)

func TestHappyEyeballsOrder(t *testing.T) {
	const (
		a4, b4, c4 = "10.0.0.1:80", "10.0.0.2:80", "10.0.0.3:80"
		a6, b6     = "[2001:db8::1]:80", "[2001:db8::2]:80"
	)
	for name, tc := range map[string]struct {
		he         happyEyeballs
		first      string
		additional []string
		want       []string
	}{
		"the first address's family, one at a time": {happyEyeballs{count: 1}, a6, []string{b6, a4, b4}, []string{a6, a4, b6, b4}},
		"two of the first family":                   {happyEyeballs{count: 2}, a4, []string{b4, c4, a6, b6}, []string{a4, b4, a6, c4, b6}},
		"V6 first":                                  {happyEyeballs{family: 6, count: 1}, a4, []string{b4, a6}, []string{a6, a4, b4}},
		"one family":                                {happyEyeballs{count: 1}, a4, []string{b4}, []string{a4, b4}},
	} {
		t.Run(name, func(t *testing.T) {
			if diff := cmp.Diff(tc.want, tc.he.order(tc.first, tc.additional)); diff != "" {
				t.Errorf("order (-want +got):\n%s", diff)
			}
		})
	}
}

// TestRaceDial checks the attempts: the next address is tried after the
// delay while the first hangs, or at once when one fails; the first
// connection made wins and a later one is closed; every failure yields
// the first error.
func TestRaceDial(t *testing.T) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = ln.Close() })
	good := ln.Addr().String()
	var mu sync.Mutex
	var tried []string
	dial := func(ctx context.Context, addr string) (net.Conn, error) {
		mu.Lock()
		tried = append(tried, addr)
		mu.Unlock()
		switch addr {
		case "hang":
			<-ctx.Done()
			return nil, ctx.Err()
		case "refused":
			return nil, errors.New("refused")
		}
		var d net.Dialer
		return d.DialContext(ctx, "tcp", addr)
	}
	got := func() []string { mu.Lock(); defer mu.Unlock(); return append([]string(nil), tried...) }
	reset := func() { mu.Lock(); tried = nil; mu.Unlock() }

	// A hanging first address: the second starts after the delay.
	conn, err := raceDial(t.Context(), dial, []string{"hang", good}, 20*time.Millisecond)
	if err != nil {
		t.Fatal(err)
	}
	if conn.RemoteAddr().String() != good {
		t.Errorf("connected to %s, want %s", conn.RemoteAddr(), good)
	}
	_ = conn.Close()

	// A refusal starts the next attempt at once, even with a long delay.
	reset()
	conn, err = raceDial(t.Context(), dial, []string{"refused", good}, time.Hour)
	if err != nil {
		t.Fatal(err)
	}
	_ = conn.Close()
	if diff := cmp.Diff([]string{"refused", good}, got()); diff != "" {
		t.Errorf("attempts (-want +got):\n%s", diff)
	}

	// The first address that answers wins: the others are not tried.
	reset()
	conn, err = raceDial(t.Context(), dial, []string{good, "refused"}, time.Hour)
	if err != nil {
		t.Fatal(err)
	}
	_ = conn.Close()
	if diff := cmp.Diff([]string{good}, got()); diff != "" {
		t.Errorf("attempts (-want +got):\n%s", diff)
	}

	// All fail: the first failure.
	if _, err := raceDial(t.Context(), dial, []string{"refused", "refused"}, time.Hour); err == nil || err.Error() != "refused" {
		t.Errorf("all refused: %v", err)
	}
	// The caller's deadline ends hanging attempts.
	ctx, cancel := context.WithTimeout(t.Context(), 50*time.Millisecond)
	defer cancel()
	if _, err := raceDial(ctx, dial, []string{"hang", "hang"}, 10*time.Millisecond); !errors.Is(err, context.DeadlineExceeded) {
		t.Errorf("all hanging: %v, want the deadline", err)
	}
}

// TestAdditionalAddressesConfig checks the endpoints' additional
// addresses and happy_eyeballs_config: the host carries them, a DNS
// cluster's are refused, and so are a name or a PIPE family.
func TestAdditionalAddressesConfig(t *testing.T) {
	m, _, _ := newTestManager(t, `
- name: web
  upstream_connection_options: {happy_eyeballs_config: {first_address_family_version: V6, first_address_family_count: 2}}
  load_assignment: {cluster_name: web, endpoints: [{lb_endpoints: [
    {endpoint: {address: {socket_address: {address: 127.0.0.1, port_value: 1}},
      additional_addresses: [{address: {socket_address: {address: "::1", port_value: 2}}}, {address: {socket_address: {address: 127.0.0.2, port_value: 3}}}]}}]}]}`)
	c := m.Cluster("web")
	h := c.Hosts()[0]
	if diff := cmp.Diff([]string{"[::1]:2", "127.0.0.2:3"}, h.AdditionalAddresses); diff != "" {
		t.Errorf("additional addresses (-want +got):\n%s", diff)
	}
	if diff := cmp.Diff([]string{"[::1]:2", "127.0.0.1:1", "127.0.0.2:3"}, c.settings.happyEyeballs.order(h.Address, h.AdditionalAddresses)); diff != "" {
		t.Errorf("order (-want +got):\n%s", diff)
	}

	_, err := NewManager(parseClusters(t, `
- name: dns
  type: STRICT_DNS
  load_assignment: {cluster_name: dns, endpoints: [{lb_endpoints: [
    {endpoint: {address: {socket_address: {address: localhost, port_value: 1}}, additional_addresses: [{address: {socket_address: {address: 127.0.0.1, port_value: 2}}}]}}]}]}
- name: static
  upstream_connection_options: {happy_eyeballs_config: {first_address_family_version: PIPE}}
  load_assignment: {cluster_name: static, endpoints: [{lb_endpoints: [
    {endpoint: {address: {socket_address: {address: 127.0.0.1, port_value: 1}}, additional_addresses: [{address: {socket_address: {address: example.com, port_value: 2}}}]}}]}]}`), Options{})
	want := []string{
		"static_resources.clusters[0].load_assignment.endpoints[0].lb_endpoints[0].endpoint.additional_addresses: only an IP endpoint of a STATIC or EDS cluster has additional addresses (as in Envoy)",
		"static_resources.clusters[1].upstream_connection_options.happy_eyeballs_config.first_address_family_version: PIPE is not supported by Outrigger (an endpoint's additional addresses are IP addresses: DEFAULT, V4 or V6)",
		`static_resources.clusters[1].load_assignment.endpoints[0].lb_endpoints[0].endpoint.additional_addresses[0].address.socket_address.address: "example.com" is not an IP address (a STATIC cluster's endpoints are IPv4 or IPv6 literals)`,
	}
	if err == nil {
		t.Fatal("no error")
	}
	if diff := cmp.Diff(want, errorLines(err)); diff != "" {
		t.Errorf("errors (-want +got):\n%s", diff)
	}
}

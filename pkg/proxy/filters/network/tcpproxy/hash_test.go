package tcpproxy

import (
	"net"
	"testing"

	"github.com/cespare/xxhash/v2"
	tcpproxyv3 "github.com/envoyproxy/go-control-plane/envoy/extensions/filters/network/tcp_proxy/v3"
	typev3 "github.com/envoyproxy/go-control-plane/envoy/type/v3"

	"github.com/outrigger-dev/outrigger/pkg/proxy/filterstate"
	"github.com/outrigger-dev/outrigger/pkg/proxy/netfilter"
)

// TestHashPolicy checks tcp_proxy's hash_policy: the source IP's hash
// (without the port, as Envoy's), and the hash of a hashable filter state
// object (set_filter_state's envoy.hashable_string), none from a plain
// one or none at all.
func TestHashPolicy(t *testing.T) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	go func() {
		if c, err := ln.Accept(); err == nil {
			defer c.Close()
		}
	}()
	c, err := net.Dial("tcp", ln.Addr().String())
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	// The proxy's view of the downstream: the dialer's end seen from the
	// listener is its remote address, 127.0.0.1.
	down := &stateful{swapped: swapped{c}}
	down.SetFilterState("hashable", filterstate.HashableString("tenant-a"))
	down.SetFilterState("plain", filterstate.String("tenant-a"))
	for name, tc := range map[string]struct {
		policy *typev3.HashPolicy
		want   uint64
		ok     bool
	}{
		"source ip": {
			policy: &typev3.HashPolicy{PolicySpecifier: &typev3.HashPolicy_SourceIp_{SourceIp: &typev3.HashPolicy_SourceIp{}}},
			want:   xxhash.Sum64String("127.0.0.1"), ok: true,
		},
		"filter state": {
			policy: &typev3.HashPolicy{PolicySpecifier: &typev3.HashPolicy_FilterState_{FilterState: &typev3.HashPolicy_FilterState{Key: "hashable"}}},
			want:   xxhash.Sum64String("tenant-a"), ok: true,
		},
		"filter state not hashable": {
			policy: &typev3.HashPolicy{PolicySpecifier: &typev3.HashPolicy_FilterState_{FilterState: &typev3.HashPolicy_FilterState{Key: "plain"}}},
		},
		"filter state missing": {
			policy: &typev3.HashPolicy{PolicySpecifier: &typev3.HashPolicy_FilterState_{FilterState: &typev3.HashPolicy_FilterState{Key: "k"}}},
		},
	} {
		t.Run(name, func(t *testing.T) {
			cfg, err := compile(&tcpproxyv3.TcpProxy{StatPrefix: "t", ClusterSpecifier: &tcpproxyv3.TcpProxy_Cluster{Cluster: "c"}, HashPolicy: []*typev3.HashPolicy{tc.policy}})
			if err != nil {
				t.Fatal(err)
			}
			got, ok := cfg.hash.of(down)
			if ok != tc.ok || got != tc.want {
				t.Errorf("hash = %d, %v; want %d, %v", got, ok, tc.want, tc.ok)
			}
		})
	}
	var none *hashPolicy
	if _, ok := none.of(down); ok {
		t.Errorf("no hash_policy gave a hash")
	}
}

// stateful is a downstream connection with a filter state.
type stateful struct {
	swapped
	netfilter.ConnState
}

// swapped presents a client connection as the proxy sees the downstream:
// its local address is the remote one.
type swapped struct{ net.Conn }

func (s swapped) RemoteAddr() net.Addr { return s.Conn.LocalAddr() }

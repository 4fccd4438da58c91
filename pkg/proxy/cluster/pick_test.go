package cluster

import (
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/outrigger-dev/outrigger/pkg/proxy/upstream"
)

func TestPickHost(t *testing.T) {
	tests := map[string]struct {
		yaml      string
		n         int
		want      string // the picked ports, in order
		wantPanic uint64
		wantNone  uint64
	}{
		"weighted round robin": {
			// The first draw (0) seeds the schedule: it starts at its
			// beginning.
			yaml: `
- name: up
  load_assignment:
    cluster_name: up
    endpoints:
    - lb_endpoints:
      - endpoint: {address: {socket_address: {address: 127.0.0.1, port_value: 1}}}
        load_balancing_weight: 1
      - endpoint: {address: {socket_address: {address: 127.0.0.1, port_value: 2}}}
        load_balancing_weight: 2
      - endpoint: {address: {socket_address: {address: 127.0.0.1, port_value: 3}}}
        load_balancing_weight: 3`,
			n:    6,
			want: "3 2 3 1 2 3",
		},
		"unhealthy and draining hosts are skipped": {
			yaml: `
- name: up
  common_lb_config: {healthy_panic_threshold: {value: 0}}
  load_assignment:
    cluster_name: up
    endpoints:
    - lb_endpoints:
      - endpoint: {address: {socket_address: {address: 127.0.0.1, port_value: 1}}}
        health_status: UNHEALTHY
      - endpoint: {address: {socket_address: {address: 127.0.0.1, port_value: 2}}}
      - endpoint: {address: {socket_address: {address: 127.0.0.1, port_value: 3}}}
        health_status: DRAINING
      - endpoint: {address: {socket_address: {address: 127.0.0.1, port_value: 4}}}`,
			n:    4,
			want: "2 4 2 4",
		},
		"panic mode uses every host and is counted": {
			yaml: `
- name: up
  load_assignment:
    cluster_name: up
    endpoints:
    - lb_endpoints:
      - endpoint: {address: {socket_address: {address: 127.0.0.1, port_value: 1}}}
        health_status: UNHEALTHY
      - endpoint: {address: {socket_address: {address: 127.0.0.1, port_value: 2}}}
        health_status: UNHEALTHY`,
			n:         4,
			want:      "1 2 1 2",
			wantPanic: 4,
		},
		"no healthy host without panic": {
			yaml: `
- name: up
  common_lb_config: {healthy_panic_threshold: {value: 0}}
  load_assignment:
    cluster_name: up
    endpoints:
    - lb_endpoints:
      - endpoint: {address: {socket_address: {address: 127.0.0.1, port_value: 1}}}
        health_status: TIMEOUT`,
			n:        2,
			want:     "none none",
			wantNone: 2,
		},
		"no endpoints": {
			yaml:      `[{name: up}]`,
			n:         1,
			want:      "none",
			wantPanic: 1,
			wantNone:  1,
		},
		"failover to priority 1": {
			yaml: `
- name: up
  common_lb_config: {healthy_panic_threshold: {value: 0}}
  load_assignment:
    cluster_name: up
    endpoints:
    - lb_endpoints:
      - endpoint: {address: {socket_address: {address: 127.0.0.1, port_value: 1}}}
        health_status: UNHEALTHY
    - priority: 1
      lb_endpoints:
      - endpoint: {address: {socket_address: {address: 127.0.0.1, port_value: 2}}}`,
			n:    3,
			want: "2 2 2",
		},
	}
	for name, tc := range tests {
		t.Run(name, func(t *testing.T) {
			m, store, _ := newTestManager(t, tc.yaml)
			c := m.Cluster("up")
			var got []string
			for range tc.n {
				h := c.PickHost(nil)
				if h == nil {
					got = append(got, "none")
					continue
				}
				got = append(got, h.Address[strings.LastIndexByte(h.Address, ':')+1:])
			}
			if diff := cmp.Diff(strings.Fields(tc.want), got); diff != "" {
				t.Errorf("picks (-want +got):\n%s", diff)
			}
			if v := store.Counter("cluster.up.lb_healthy_panic").Value(); v != tc.wantPanic {
				t.Errorf("lb_healthy_panic = %d, want %d", v, tc.wantPanic)
			}
			if v := store.Counter("cluster.up.upstream_cx_none_healthy").Value(); v != tc.wantNone {
				t.Errorf("upstream_cx_none_healthy = %d, want %d", v, tc.wantNone)
			}
		})
	}
}

func TestPickHostRetryPredicates(t *testing.T) {
	m, _, _ := newTestManager(t, `
- name: up
  load_assignment:
    cluster_name: up
    endpoints:
    - lb_endpoints:
      - endpoint: {address: {socket_address: {address: 127.0.0.1, port_value: 1}}}
        load_balancing_weight: 3
      - endpoint: {address: {socket_address: {address: 127.0.0.1, port_value: 2}}}
        load_balancing_weight: 1`)
	c := m.Cluster("up")
	var first *upstream.Host
	for range 8 {
		if h := c.PickHost(nil); strings.HasSuffix(h.Address, ":1") {
			first = h
			break
		}
	}
	if first == nil {
		t.Fatal("the weight-3 host is never picked")
	}
	// Reselected while refused: the host already tried is never picked.
	pc := &upstream.PickContext{PreviousHosts: []*upstream.Host{first}, HostReselections: 5}
	for i := range 20 {
		if h := c.PickHost(pc); h == first {
			t.Fatalf("pick %d is the host already tried", i)
		}
	}
	// Without reselections (Envoy's default of 0), the predicate does
	// not apply: three picks in four are that host.
	pc.HostReselections = 0
	seen := false
	for range 8 {
		seen = seen || c.PickHost(pc) == first
	}
	if !seen {
		t.Error("the host already tried is never picked without reselections")
	}
}

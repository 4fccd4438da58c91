package cluster

import (
	"net/netip"
	"slices"
	"testing"

	corev3 "github.com/envoyproxy/go-control-plane/envoy/config/core/v3"
	"github.com/google/go-cmp/cmp"
	"google.golang.org/protobuf/types/known/structpb"

	"github.com/outrigger-dev/outrigger/pkg/proxy/stats"
	"github.com/outrigger-dev/outrigger/pkg/proxy/upstream"
)

func TestOrigDstErrors(t *testing.T) {
	tests := map[string]struct {
		yaml string
		want []string
	}{
		"default lb policy": {
			yaml: `
- name: pass
  type: ORIGINAL_DST`,
			want: []string{"static_resources.clusters[0].lb_policy: LB policy ROUND_ROBIN is not valid for Cluster type ORIGINAL_DST. Only 'CLUSTER_PROVIDED' is allowed with cluster type 'ORIGINAL_DST'"},
		},
		"load assignment": {
			yaml: `
- name: pass
  type: ORIGINAL_DST
  lb_policy: CLUSTER_PROVIDED
  load_assignment: {cluster_name: pass}`,
			want: []string{"static_resources.clusters[0].load_assignment: ORIGINAL_DST clusters must have no load assignment configured"},
		},
		"header name without use_http_header": {
			yaml: `
- name: pass
  type: ORIGINAL_DST
  lb_policy: CLUSTER_PROVIDED
  original_dst_lb_config: {http_header_name: x-dst}`,
			want: []string{"static_resources.clusters[0].original_dst_lb_config.http_header_name: ORIGINAL_DST cluster: invalid config http_header_name=x-dst and use_http_header is false. Set use_http_header to true if http_header_name is desired."},
		},
		"port override 0": {
			yaml: `
- name: pass
  type: ORIGINAL_DST
  lb_policy: CLUSTER_PROVIDED
  original_dst_lb_config: {upstream_port_override: 0}`,
			want: []string{"static_resources.clusters[0].original_dst_lb_config.upstream_port_override.value: 0 is not a port (1 to 65535)"},
		},
		"cluster provided on a static cluster": {
			yaml: `
- name: web
  lb_policy: CLUSTER_PROVIDED`,
			want: []string{"static_resources.clusters[0].lb_policy: CLUSTER_PROVIDED is only valid for a cluster type that provides its load balancer (ORIGINAL_DST); STATIC does not"},
		},
	}
	for name, tc := range tests {
		t.Run(name, func(t *testing.T) {
			_, err := NewManager(parseClusters(t, tc.yaml), Options{Stats: stats.NewStore()})
			if diff := cmp.Diff(tc.want, errorLines(err)); diff != "" {
				t.Errorf("errors (-want +got):\n%s", diff)
			}
		})
	}
}

// headers is a request's headers for a pick.
type headers map[string]string

func (h headers) Get(name string) (string, bool) { v, ok := h[name]; return v, ok }

func TestOrigDstPick(t *testing.T) {
	m, store, _ := newTestManager(t, `
- name: pass
  type: ORIGINAL_DST
  lb_policy: CLUSTER_PROVIDED
  original_dst_lb_config: {use_http_header: true}
- name: moved
  type: ORIGINAL_DST
  lb_policy: CLUSTER_PROVIDED
  original_dst_lb_config: {upstream_port_override: 8080}`)
	c := m.Cluster("pass")
	dst := netip.MustParseAddrPort("10.1.2.3:80")

	if h := c.PickHost(nil); h != nil {
		t.Errorf("pick without a downstream = %v, want none", h.Address)
	}
	if h := c.PickHost(&upstream.PickContext{}); h != nil {
		t.Errorf("pick without an original destination = %v, want none", h.Address)
	}
	if got := store.Counter("cluster.pass.upstream_cx_none_healthy").Value(); got != 2 {
		t.Errorf("upstream_cx_none_healthy = %d, want 2", got)
	}

	h1 := c.PickHost(&upstream.PickContext{OriginalDst: dst})
	if h1 == nil || h1.Address != "10.1.2.3:80" || h1.Hostname != "pass10.1.2.3:80" {
		t.Fatalf("pick = %+v, want host 10.1.2.3:80", h1)
	}
	if h := c.PickHost(&upstream.PickContext{OriginalDst: dst}); h != h1 {
		t.Errorf("second pick of the same destination made a new host")
	}
	hdr := &upstream.PickContext{OriginalDst: dst, Headers: headers{"x-envoy-original-dst-host": "[2001:db8::1]:443"}}
	if h := c.PickHost(hdr); h == nil || h.Address != "[2001:db8::1]:443" {
		t.Errorf("pick with the header = %v, want [2001:db8::1]:443", h)
	}
	bad := &upstream.PickContext{OriginalDst: dst, Headers: headers{"x-envoy-original-dst-host": "not-an-address"}}
	if h := c.PickHost(bad); h != h1 {
		t.Errorf("pick with an invalid header = %v, want the connection's destination", h)
	}
	if got := store.Counter("cluster.pass.original_dst_host_invalid").Value(); got != 1 {
		t.Errorf("original_dst_host_invalid = %d, want 1", got)
	}
	addrs := func(c *Cluster) []string {
		var out []string
		for _, h := range c.Hosts() {
			out = append(out, h.Address)
		}
		return out
	}
	if got, want := addrs(c), []string{"10.1.2.3:80", "[2001:db8::1]:443"}; !slices.Equal(got, want) {
		t.Errorf("hosts = %v, want %v", got, want)
	}
	if got := store.Gauge("cluster.pass.membership_total").Value(); got != 2 {
		t.Errorf("membership_total = %d, want 2", got)
	}

	// A sweep clears the used marks; the next removes the hosts not
	// picked since, unless they hold connections.
	c.sweepOrigDst()
	h1.Stats.CxActive.Add(1)
	c.sweepOrigDst()
	if got, want := addrs(c), []string{"10.1.2.3:80"}; !slices.Equal(got, want) {
		t.Errorf("hosts after two sweeps = %v, want %v (the one with a connection)", got, want)
	}
	h1.Stats.CxActive.Add(-1)
	c.sweepOrigDst()
	if got := addrs(c); len(got) != 0 {
		t.Errorf("hosts after the last sweep = %v, want none", got)
	}

	// The header is only read with use_http_header; the port override
	// applies to the destination.
	moved := m.Cluster("moved")
	if h := moved.PickHost(hdr); h == nil || h.Address != "10.1.2.3:8080" {
		t.Errorf("pick with a port override = %v, want 10.1.2.3:8080", h)
	}
}

// TestOrigDstMetadataKey checks original_dst_lb_config.metadata_key, as
// Envoy reads it: the request's dynamic metadata at the key names the
// host before the header does; a list gives its first element; a string
// that is not an address counts original_dst_host_invalid and the header
// decides.
func TestOrigDstMetadataKey(t *testing.T) {
	m, store, _ := newTestManager(t, `
- name: od
  type: ORIGINAL_DST
  lb_policy: CLUSTER_PROVIDED
  original_dst_lb_config: {use_http_header: true, metadata_key: {key: routing, path: [{key: dst}]}}`)
	c := m.Cluster("od")
	md := func(v *structpb.Value) *corev3.Metadata {
		return &corev3.Metadata{FilterMetadata: map[string]*structpb.Struct{"routing": {Fields: map[string]*structpb.Value{"dst": v}}}}
	}
	hdr := headers{"x-envoy-original-dst-host": "127.0.0.9:90"}
	for name, tc := range map[string]struct {
		md          *corev3.Metadata
		want        string
		wantInvalid uint64
	}{
		"a string":          {md(structpb.NewStringValue("127.0.0.5:80")), "127.0.0.5:80", 0},
		"a list":            {md(structpb.NewListValue(&structpb.ListValue{Values: []*structpb.Value{structpb.NewStringValue("[::1]:81"), structpb.NewStringValue("127.0.0.6:82")}})), "[::1]:81", 0},
		"not an address":    {md(structpb.NewStringValue("nowhere")), "127.0.0.9:90", 1},
		"not a string":      {md(structpb.NewNumberValue(3)), "127.0.0.9:90", 0},
		"no metadata":       {nil, "127.0.0.9:90", 0},
		"another namespace": {&corev3.Metadata{FilterMetadata: map[string]*structpb.Struct{"other": {}}}, "127.0.0.9:90", 0},
	} {
		t.Run(name, func(t *testing.T) {
			invalid := store.Counter("cluster.od.original_dst_host_invalid")
			before := invalid.Value()
			h := c.PickHost(&upstream.PickContext{DynamicMetadata: tc.md, Headers: hdr})
			if h == nil || h.Address != tc.want {
				t.Fatalf("picked %v, want %s", h, tc.want)
			}
			if got := invalid.Value() - before; got != tc.wantInvalid {
				t.Errorf("original_dst_host_invalid grew by %d, want %d", got, tc.wantInvalid)
			}
		})
	}
}

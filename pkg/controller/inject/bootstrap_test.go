package inject

import (
	"path/filepath"
	"testing"
	"time"

	bootstrapv3 "github.com/envoyproxy/go-control-plane/envoy/config/bootstrap/v3"
	clusterv3 "github.com/envoyproxy/go-control-plane/envoy/config/cluster/v3"
	// The typed configs the bootstrap names, registered for protojson.
	_ "github.com/envoyproxy/go-control-plane/envoy/extensions/filters/http/router/v3"
	_ "github.com/envoyproxy/go-control-plane/envoy/extensions/filters/listener/original_dst/v3"
	_ "github.com/envoyproxy/go-control-plane/envoy/extensions/filters/network/http_connection_manager/v3"
	tcpproxyv3 "github.com/envoyproxy/go-control-plane/envoy/extensions/filters/network/tcp_proxy/v3"
	"google.golang.org/protobuf/encoding/protojson"
	"google.golang.org/protobuf/proto"
	"sigs.k8s.io/yaml"

	"github.com/outrigger-dev/outrigger/internal/golden"
)

// TestDefaultBootstrap checks that the bootstrap is a valid Envoy v3
// bootstrap with the ports given, and keeps its text in a golden file. That
// the proxy runs it as intended is the e2e suite's probe_listener_test.go.
func TestDefaultBootstrap(t *testing.T) {
	cases := map[string]struct {
		admin, probe int32
	}{
		"default ports": {admin: 9901, probe: 9902},
		"custom ports":  {admin: 15000, probe: 15021},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			text := DefaultBootstrap(tc.admin, tc.probe)
			b := parseBootstrap(t, text)
			if got := b.GetAdmin().GetAddress().GetSocketAddress(); got.GetAddress() != "127.0.0.1" || got.GetPortValue() != uint32(tc.admin) {
				t.Errorf("admin address %v: want 127.0.0.1:%d", got, tc.admin)
			}
			ls := b.GetStaticResources().GetListeners()
			if len(ls) != 1 {
				t.Fatalf("%d listeners, want 1", len(ls))
			}
			if got := ls[0].GetAddress().GetSocketAddress(); got.GetAddress() != "0.0.0.0" || got.GetPortValue() != uint32(tc.probe) {
				t.Errorf("probe address %v: want 0.0.0.0:%d", got, tc.probe)
			}
			cs := b.GetStaticResources().GetClusters()
			if len(cs) != 1 || cs[0].GetName() != "admin" {
				t.Fatalf("clusters %v: want the one admin cluster", cs)
			}
			ep := cs[0].GetLoadAssignment().GetEndpoints()[0].GetLbEndpoints()[0].GetEndpoint().GetAddress().GetSocketAddress()
			if ep.GetAddress() != "127.0.0.1" || ep.GetPortValue() != uint32(tc.admin) {
				t.Errorf("admin cluster endpoint %v: want 127.0.0.1:%d", ep, tc.admin)
			}
			golden.Check(t, filepath.Join("testdata", "bootstrap-"+slug(name)+".yaml"), []byte(text))
		})
	}
}

// parseBootstrap parses and validates a v3 bootstrap.
func parseBootstrap(t *testing.T, text string) *bootstrapv3.Bootstrap {
	t.Helper()
	js, err := yaml.YAMLToJSON([]byte(text))
	if err != nil {
		t.Fatalf("not YAML: %v", err)
	}
	var b bootstrapv3.Bootstrap
	if err := protojson.Unmarshal(js, &b); err != nil {
		t.Fatalf("not a v3 bootstrap: %v", err)
	}
	if err := b.ValidateAll(); err != nil {
		t.Fatalf("invalid bootstrap: %v", err)
	}
	return &b
}

// TestCaptureBootstrap checks the capture bootstrap's shape: the default
// bootstrap's admin, probe listener and admin cluster, plus the capture
// listeners and their ORIGINAL_DST clusters. That the proxy loads it is
// the e2e suite's inject_bootstrap_test.go.
func TestCaptureBootstrap(t *testing.T) {
	text := CaptureBootstrap(9901, 9902, false)
	b := parseBootstrap(t, text)
	def := parseBootstrap(t, DefaultBootstrap(9901, 9902))
	if !proto.Equal(b.GetAdmin(), def.GetAdmin()) {
		t.Errorf("admin %v differs from the default bootstrap's", b.GetAdmin())
	}
	ls := b.GetStaticResources().GetListeners()
	if len(ls) != 3 || !proto.Equal(ls[0], def.GetStaticResources().GetListeners()[0]) {
		t.Fatalf("%d listeners: want the default probe listener, then the two capture listeners", len(ls))
	}
	for i, want := range []struct {
		name, cluster string
		port          uint32
		useOrigDst    bool
		filter        string
	}{
		{"virtualOutbound", "PassthroughCluster", 15001, true, ""},
		{"virtualInbound", "InboundPassthroughCluster", 15006, false, "envoy.filters.listener.original_dst"},
	} {
		l := ls[i+1]
		if l.GetName() != want.name || l.GetAddress().GetSocketAddress().GetAddress() != "0.0.0.0" || l.GetAddress().GetSocketAddress().GetPortValue() != want.port {
			t.Errorf("listener %d: %s on %v, want %s on 0.0.0.0:%d", i+1, l.GetName(), l.GetAddress(), want.name, want.port)
		}
		if n := len(l.GetAdditionalAddresses()); n != 0 {
			t.Errorf("%s: %d additional addresses without ipv6", want.name, n)
		}
		if l.GetUseOriginalDst().GetValue() != want.useOrigDst {
			t.Errorf("%s: use_original_dst %v, want %v", want.name, l.GetUseOriginalDst(), want.useOrigDst)
		}
		var filters []string
		for _, f := range l.GetListenerFilters() {
			filters = append(filters, f.GetName())
		}
		if want.filter != "" && (len(filters) != 1 || filters[0] != want.filter) || want.filter == "" && len(filters) != 0 {
			t.Errorf("%s: listener filters %v, want %q", want.name, filters, want.filter)
		}
		fcs := l.GetFilterChains()
		if len(fcs) != 1 || len(fcs[0].GetFilters()) != 1 {
			t.Fatalf("%s: want one filter chain with one filter", want.name)
		}
		var tp tcpproxyv3.TcpProxy
		if err := fcs[0].GetFilters()[0].GetTypedConfig().UnmarshalTo(&tp); err != nil {
			t.Fatalf("%s: not a tcp_proxy: %v", want.name, err)
		}
		if tp.GetStatPrefix() != want.cluster || tp.GetCluster() != want.cluster {
			t.Errorf("%s: tcp_proxy stat_prefix %q cluster %q, want %q for both", want.name, tp.GetStatPrefix(), tp.GetCluster(), want.cluster)
		}
	}
	cs := b.GetStaticResources().GetClusters()
	if len(cs) != 3 || cs[0].GetName() != "admin" {
		t.Fatalf("%d clusters: want admin, then the two passthrough clusters", len(cs))
	}
	for i, name := range []string{"PassthroughCluster", "InboundPassthroughCluster"} {
		c := cs[i+1]
		if c.GetName() != name || c.GetType() != clusterv3.Cluster_ORIGINAL_DST || c.GetLbPolicy() != clusterv3.Cluster_CLUSTER_PROVIDED ||
			c.GetConnectTimeout().AsDuration() != 10*time.Second {
			t.Errorf("cluster %d: %s %v %v %v; want %s ORIGINAL_DST CLUSTER_PROVIDED 10s", i+1, c.GetName(), c.GetType(), c.GetLbPolicy(), c.GetConnectTimeout(), name)
		}
	}
	golden.Check(t, filepath.Join("testdata", "bootstrap-capture.yaml"), []byte(text))

	// Dual-stack: the same, with both capture listeners also on [::].
	dual := parseBootstrap(t, CaptureBootstrap(9901, 9902, true))
	for i, l := range dual.GetStaticResources().GetListeners()[1:] {
		extra := l.GetAdditionalAddresses()
		port := ls[i+1].GetAddress().GetSocketAddress().GetPortValue()
		if len(extra) != 1 || extra[0].GetAddress().GetSocketAddress().GetAddress() != "::" ||
			extra[0].GetAddress().GetSocketAddress().GetPortValue() != port {
			t.Errorf("%s with ipv6: additional addresses %v, want [::]:%d", l.GetName(), extra, port)
		}
		l.AdditionalAddresses = nil
		if !proto.Equal(l, ls[i+1]) {
			t.Errorf("%s with ipv6 differs beyond its additional address", l.GetName())
		}
	}
}

package cluster

import (
	"strings"
	"testing"
	"time"

	"github.com/outrigger-dev/outrigger/pkg/proxy/upstream"
)

// subYAML is a dynamic_forward_proxy cluster with sub-clusters of the
// given sub_clusters_config fields, extra cluster fields after.
func subYAML(sub, cluster string) string {
	return strings.Replace(dfpYAML("", ""), "dns_cache_config: {name: c}", "sub_clusters_config: {"+sub+"}", 1) + "\n  connect_timeout: 1s" + cluster
}

// subManager builds clusters resolving with r, the dynamic forward proxy
// cluster type registered, and returns a stat reader.
func subManager(t *testing.T, yaml string, r *scriptedResolver) (*Manager, func(string) int64) {
	t.Helper()
	m, store, _ := newTestManager(t, yaml, func(o *Options) {
		o.Resolver = scriptedSpec{r}
		o.Now = time.Now
		o.Extensions = dfpRegistry(t)
	})
	return m, func(name string) int64 {
		if strings.HasPrefix(name, "cluster_manager.") && strings.HasSuffix(name, "_clusters") {
			return store.Gauge(name).Value()
		}
		return int64(store.Counter(name).Value())
	}
}

func TestSubClusterTarget(t *testing.T) {
	for raw, want := range map[string]string{
		"a.test":          "DFPCluster:a.test:80",
		"a.test:8080":     "DFPCluster:a.test:8080",
		"[::1]:9000":      "DFPCluster:::1:9000",
		"[::1]":           "DFPCluster:::1:80",
		"127.0.0.1:81":    "DFPCluster:127.0.0.1:81",
		"a.test:notaport": "DFPCluster:a.test:notaport:80",
	} {
		if got := SubClusterName(subClusterTarget(raw, 80)); got != want {
			t.Errorf("%q: %q, want %q", raw, got, want)
		}
	}
}

func TestSubClusters(t *testing.T) {
	r := &scriptedResolver{}
	r.set("a.test", ips("127.0.0.1"))
	r.set("b.test", ips("127.0.0.2"))
	m, value := subManager(t, subYAML("lb_policy: RANDOM, max_sub_clusters: 2, sub_cluster_ttl: 0.2s", ""), r)
	m.Start()
	parent := m.Cluster("dfp")
	if !parent.UsesSubClusters() || !parent.Delegates() {
		t.Fatal("the cluster does not use sub-clusters")
	}
	if port, ok := parent.DynamicForwardProxy(); !ok || port != 80 {
		t.Fatalf("DynamicForwardProxy() = %d, %v", port, ok)
	}
	if h := parent.PickHost(&upstream.PickContext{Authority: "a.test:8080"}); h != nil {
		t.Fatalf("a host before its sub-cluster exists: %v", h)
	}

	load := func(host string) upstream.SubClusterStatus {
		t.Helper()
		ready, st := parent.LoadSubCluster(host, 80)
		if st == upstream.SubClusterWarming {
			select {
			case <-ready:
			case <-time.After(10 * time.Second):
				t.Fatalf("%s: the sub-cluster never served", host)
			}
		}
		return st
	}
	if st := load("a.test:8080"); st != upstream.SubClusterWarming && st != upstream.SubClusterReady {
		t.Fatalf("first load: %v", st)
	}
	sub := m.Cluster("DFPCluster:a.test:8080")
	if sub == nil || !sub.AddedViaAPI() {
		t.Fatalf("the sub-cluster is not active: %v", sub)
	}
	cfg := sub.DiscoveredConfig()
	if cfg.GetType().String() != "STRICT_DNS" || cfg.GetLbPolicy().String() != "RANDOM" || cfg.GetClusterType() != nil {
		t.Errorf("sub-cluster configuration: %v", cfg)
	}
	if got := hostAddrs(sub); len(got) != 1 || got[0] != "127.0.0.1:8080 a.test" {
		t.Errorf("sub-cluster hosts %v", got)
	}
	h := parent.PickHost(&upstream.PickContext{Authority: "a.test:8080"})
	if h == nil || h.Address != "127.0.0.1:8080" {
		t.Fatalf("pick through the parent: %v", h)
	}
	if a := parent.ForHost(h); a == nil || a.PoolStats() != sub.Stats() || a.Stats() != parent.Stats() {
		t.Errorf("the attempt is not carried by the sub-cluster: %+v", a)
	}
	if st := load("a.test:8080"); st != upstream.SubClusterReady {
		t.Errorf("second load: %v", st)
	}

	if st := load("b.test"); st == upstream.SubClusterOverflow {
		t.Fatal("the second sub-cluster overflowed")
	}
	if _, st := parent.LoadSubCluster("c.test", 80); st != upstream.SubClusterOverflow {
		t.Errorf("a third sub-cluster past max_sub_clusters 2: %v", st)
	}
	if got := value("cluster_manager.cluster_added"); got != 3 {
		t.Errorf("cluster_added %d, want 3 (the parent and two sub-clusters)", got)
	}

	// Unused for the TTL, the sub-clusters go (the timer runs every TTL).
	deadline := time.Now().Add(10 * time.Second)
	for m.Cluster("DFPCluster:a.test:8080") != nil || m.Cluster("DFPCluster:b.test:80") != nil {
		if time.Now().After(deadline) {
			t.Fatal("the idle sub-clusters were not removed")
		}
		time.Sleep(10 * time.Millisecond)
	}
	if got := value("cluster_manager.cluster_removed"); got != 2 {
		t.Errorf("cluster_removed %d, want 2", got)
	}
	if h := parent.PickHost(&upstream.PickContext{Authority: "a.test:8080"}); h != nil {
		t.Errorf("a host of a removed sub-cluster: %v", h)
	}
	// Room again: a new sub-cluster is made.
	if st := load("c.test"); st == upstream.SubClusterOverflow {
		t.Error("no room after the TTL")
	}
}

func TestSubClustersSurviveDiscovery(t *testing.T) {
	r := &scriptedResolver{}
	r.set("a.test", ips("127.0.0.1"))
	m, _ := subManager(t, subYAML("", ""), r)
	m.Start()
	parent := m.Cluster("dfp")
	ready, st := parent.LoadSubCluster("a.test", 80)
	if st == upstream.SubClusterWarming {
		<-ready
	}
	if err := m.ApplyDiscovered(nil, "1", time.Now()); err != nil {
		t.Fatal(err)
	}
	if m.Cluster("DFPCluster:a.test:80") == nil {
		t.Error("cluster discovery removed a sub-cluster")
	}
}

func TestPreresolvedSubClusters(t *testing.T) {
	r := &scriptedResolver{}
	r.set("a.test", ips("127.0.0.1"))
	r.set("b.test", ips("127.0.0.2"))
	r.set("c.test", ips("127.0.0.3"))
	// Three to make, room for two: the third is left out, as Envoy's
	// createSubClusterConfig refuses it.
	m, value := subManager(t, subYAML("max_sub_clusters: 2, preresolve_clusters: [{address: a.test, port_value: 8080}, {address: b.test, port_value: 80}, {address: c.test, port_value: 80}]", ""), r)
	if m.Cluster("DFPCluster:a.test:8080") != nil {
		t.Fatal("a sub-cluster before the manager started")
	}
	m.Start()
	deadline := time.Now().Add(10 * time.Second)
	for m.Cluster("DFPCluster:a.test:8080") == nil || m.Cluster("DFPCluster:b.test:80") == nil {
		if time.Now().After(deadline) {
			t.Fatal("the preresolved sub-clusters were not made")
		}
		time.Sleep(10 * time.Millisecond)
	}
	if got := hostAddrs(m.Cluster("DFPCluster:a.test:8080")); len(got) != 1 || got[0] != "127.0.0.1:8080 a.test" {
		t.Errorf("sub-cluster hosts %v", got)
	}
	parent := m.Cluster("dfp")
	// No request made them: the first pick finds them.
	if h := parent.PickHost(&upstream.PickContext{Authority: "a.test:8080"}); h == nil || h.Address != "127.0.0.1:8080" {
		t.Fatalf("pick of a preresolved sub-cluster: %v", h)
	}
	if _, st := parent.LoadSubCluster("b.test", 80); st != upstream.SubClusterReady {
		t.Errorf("load of a preresolved sub-cluster: %v", st)
	}
	if m.Cluster("DFPCluster:c.test:80") != nil {
		t.Error("a preresolved sub-cluster past max_sub_clusters")
	}
	if got := value("cluster_manager.cluster_added"); got != 3 {
		t.Errorf("cluster_added %d, want 3 (the parent and two sub-clusters)", got)
	}
}

func TestSubClustersOfTheDNSClusterExtension(t *testing.T) {
	r := &scriptedResolver{}
	r.set("a.test", ips("127.0.0.1", "127.0.0.2"))
	m, _ := subManager(t, subYAML("dns_cluster_config: {all_addresses_in_single_endpoint: true, dns_refresh_rate: 30s}", ""), r)
	m.Start()
	ready, st := m.Cluster("dfp").LoadSubCluster("a.test:8080", 80)
	if st == upstream.SubClusterWarming {
		select {
		case <-ready:
		case <-time.After(10 * time.Second):
			t.Fatal("the sub-cluster never served")
		}
	}
	sub := m.Cluster("DFPCluster:a.test:8080")
	if sub == nil {
		t.Fatal("no sub-cluster")
	}
	cfg := sub.DiscoveredConfig()
	if cfg.GetClusterType().GetName() != "envoy.cluster.dns" || cfg.GetClusterType().GetTypedConfig() == nil {
		t.Fatalf("sub-cluster type %v", cfg.GetClusterType())
	}
	// all_addresses_in_single_endpoint: the extension's LOGICAL_DNS, one
	// host of the first address.
	if got := hostAddrs(sub); len(got) != 1 || got[0] != "127.0.0.1:8080 a.test" {
		t.Errorf("sub-cluster hosts %v, want the one logical host", got)
	}
}

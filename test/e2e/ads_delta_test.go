package e2e

import (
	"encoding/json"
	"net/http"
	"slices"
	"strconv"
	"strings"
	"time"

	adminv3 "github.com/envoyproxy/go-control-plane/envoy/admin/v3"
	clusterv3 "github.com/envoyproxy/go-control-plane/envoy/config/cluster/v3"
	listenerv3 "github.com/envoyproxy/go-control-plane/envoy/config/listener/v3"
	routev3 "github.com/envoyproxy/go-control-plane/envoy/config/route/v3"
	discoveryv3 "github.com/envoyproxy/go-control-plane/envoy/service/discovery/v3"
	cachev3 "github.com/envoyproxy/go-control-plane/pkg/cache/v3"
	resourcev3 "github.com/envoyproxy/go-control-plane/pkg/resource/v3"
	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"
	"google.golang.org/protobuf/encoding/protojson"
)

// deltaBootstrap is cdsBootstrap over the incremental protocol.
func deltaBootstrap(xdsPort int) string {
	GinkgoHelper()
	return toDelta(cdsBootstrap(xdsPort))
}

// toDelta switches a bootstrap's ADS stream to the incremental protocol
// (ads_config.api_type: DELTA_GRPC).
func toDelta(bootstrap string) string {
	GinkgoHelper()
	var b map[string]any
	Expect(json.Unmarshal([]byte(bootstrap), &b)).To(Succeed())
	b["dynamic_resources"].(map[string]any)["ads_config"].(map[string]any)["api_type"] = "DELTA_GRPC"
	out, err := json.Marshal(b)
	Expect(err).NotTo(HaveOccurred())
	return string(out)
}

// deltaOf is the incremental requests of typeURL the server
// received.
func (m *managementServer) deltaOf(typeURL string) []*discoveryv3.DeltaDiscoveryRequest {
	m.mu.Lock()
	defer m.mu.Unlock()
	var out []*discoveryv3.DeltaDiscoveryRequest
	for _, r := range m.deltaRequests {
		if r.GetTypeUrl() == typeURL {
			out = append(out, r)
		}
	}
	return out
}

// resourceVersion is the version go-control-plane's cache gives the
// resource name of typeURL in snap (a hash of the resource).
func resourceVersion(snap *cachev3.Snapshot, typeURL, name string) string {
	GinkgoHelper()
	Expect(snap.ConstructVersionMap()).To(Succeed())
	v := snap.GetVersionMap(typeURL)[name]
	Expect(v).NotTo(BeEmpty())
	return v
}

// discoveredEDSCluster is a discovered cluster of type EDS named name
// whose endpoints come over ADS under service.
func discoveredEDSCluster(name, service string) *clusterv3.Cluster {
	GinkgoHelper()
	js, err := json.Marshal(edsCluster(name, service, ""))
	Expect(err).NotTo(HaveOccurred())
	out := &clusterv3.Cluster{}
	Expect(protojson.Unmarshal(js, out)).To(Succeed())
	return out
}

// clustersConfigDump is /config_dump's clusters part.
func clustersConfigDump(s *Sidecar) *adminv3.ClustersConfigDump {
	GinkgoHelper()
	for _, c := range configDump(s, "/config_dump").GetConfigs() {
		if c.GetTypeUrl() == adminTypes+"ClustersConfigDump" {
			dump := &adminv3.ClustersConfigDump{}
			Expect(c.UnmarshalTo(dump)).To(Succeed())
			return dump
		}
	}
	Fail("no ClustersConfigDump in /config_dump")
	return nil
}

var _ = Describe("Delta ADS: the incremental protocol against go-control-plane's server", func() {
	It("serves a listener, routes, clusters and endpoints that arrived over delta xDS; updates, removes, NACKs with the field path and keeps the last good configuration", func() {
		a, b := startNamed("A"), startNamed("B")
		m := startManagementServer()
		ingress := listenerProto(listenerDef{Name: "ingress", Chains: []string{rdsChain("delta_rds", "routes")}})
		other := listenerProto(listenerDef{Name: "other", Chains: []string{directChain("other", "")}})
		ls := []*listenerv3.Listener{ingress, other}
		cs := []*clusterv3.Cluster{discoveredEDSCluster("svc-a", "svc-a-eps"), clusterProto("svc-b", b, "")}
		v1 := routesSnapshot("v1", ls, cs, []*routev3.RouteConfiguration{routeConfigProto("routes", allTo("svc-a"))},
			loadAssignment("svc-a-eps", edsEndpoint{port: a}))
		m.set(v1)
		s := Start(newDir(), deltaBootstrap(m.port))
		waitLive(s)
		addr := listenerAddr(s, "ingress")
		Expect(getBody(addr)).To(Equal("A"))
		Expect(getBody(listenerAddr(s, "other"))).To(Equal("other"))
		Expect(statValue(s, "control_plane.connected_state")).To(Equal("1"))
		Expect(statValue(s, "control_plane.identifier")).To(Equal(`"` + adsControlPlaneID + `"`))
		Expect(statValue(s, "cluster_manager.cds.version_text")).To(Equal(`"v1"`), "the response's system_version_info")
		Expect(statValue(s, "listener_manager.lds.version_text")).To(Equal(`"v1"`))
		Expect(statValue(s, "listener_manager.lds.update_success")).To(Equal("1"))
		Expect(statValue(s, "cluster_manager.cds.update_success")).To(Equal("1"))
		Expect(statValue(s, "cluster.svc-a.update_success")).To(Equal("1"))
		Expect(statValue(s, "http.delta_rds.rds.routes.update_success")).To(Equal("1"))
		// No state-of-the-world request: everything went over the delta stream.
		Expect(m.received()).To(BeEmpty())

		// The requests: the node in the stream's first only, the wildcard
		// types with no names, the named ones with theirs; each response
		// ACKed by its nonce.
		first := m.deltaOf(resourcev3.ClusterType)[0]
		Expect(first.GetNode().GetId()).To(Equal(adsNodeID))
		Expect(first.GetResourceNamesSubscribe()).To(BeEmpty(), "a wildcard subscription")
		Expect(first.GetInitialResourceVersions()).To(BeEmpty())
		Expect(m.deltaOf(resourcev3.ListenerType)[0].GetResourceNamesSubscribe()).To(BeEmpty())
		Expect(m.deltaOf(resourcev3.EndpointType)[0].GetResourceNamesSubscribe()).To(Equal([]string{"svc-a-eps"}))
		Expect(m.deltaOf(resourcev3.RouteType)[0].GetResourceNamesSubscribe()).To(Equal([]string{"routes"}))
		for _, typeURL := range []string{resourcev3.ClusterType, resourcev3.ListenerType, resourcev3.EndpointType, resourcev3.RouteType} {
			Eventually(func() []*discoveryv3.DeltaDiscoveryRequest { return m.deltaOf(typeURL) }).Should(ContainElement(Satisfy(func(r *discoveryv3.DeltaDiscoveryRequest) bool {
				return r.GetResponseNonce() != "" && r.GetErrorDetail() == nil && r.GetNode() == nil
			})), "the ACK of "+typeURL)
		}

		// /config_dump shows each resource's own version, and the
		// subscription's (system) version at the top.
		dl := dynamicListeners(s)
		Expect(dl["ingress"].GetActiveState().GetVersionInfo()).To(Equal(resourceVersion(v1, resourcev3.ListenerType, "ingress")))
		Expect(listenersDump(s).GetVersionInfo()).To(Equal("v1"))
		cd := clustersConfigDump(s)
		Expect(cd.GetVersionInfo()).To(Equal("v1"))
		versions := map[string]string{}
		for _, c := range cd.GetDynamicActiveClusters() {
			cl := &clusterv3.Cluster{}
			Expect(c.GetCluster().UnmarshalTo(cl)).To(Succeed())
			versions[cl.GetName()] = c.GetVersionInfo()
		}
		Expect(versions).To(Equal(map[string]string{
			"svc-a": resourceVersion(v1, resourcev3.ClusterType, "svc-a"),
			"svc-b": resourceVersion(v1, resourcev3.ClusterType, "svc-b"),
		}))
		Expect(statValue(s, "http.delta_rds.rds.routes.version_text")).To(Equal(strconv.Quote(resourceVersion(v1, resourcev3.RouteType, "routes"))))

		// An update of the routes alone: only that resource travels.
		rcB := []*routev3.RouteConfiguration{routeConfigProto("routes", allTo("svc-b"))}
		m.set(routesSnapshot("v2", ls, cs, rcB, loadAssignment("svc-a-eps", edsEndpoint{port: a})))
		Eventually(func() string { return getBody(addr) }).Should(Equal("B"))
		Expect(statValue(s, "cluster_manager.cluster_modified")).To(Equal("0"), "unchanged clusters are not sent again")
		Expect(statValue(s, "cluster_manager.cds.update_success")).To(Equal("1"))

		// Removals: the listener "other" and the cluster svc-a go
		// (removed_resources); the rest stays.
		v3 := routesSnapshot("v3", []*listenerv3.Listener{ingress}, []*clusterv3.Cluster{clusterProto("svc-b", b, "")}, rcB)
		m.set(v3)
		waitStat(s, "cluster_manager.cluster_removed", "1")
		waitStat(s, "listener_manager.listener_removed", "1")
		Expect(listenerNames(s)).To(ConsistOf("ingress"))
		Expect(s.Get("/clusters").Body).NotTo(ContainSubstring("svc-a::"))
		Expect(s.Get("/clusters").Body).To(ContainSubstring("svc-b::"))
		Expect(statValue(s, "cluster_manager.cds.version_text")).To(Equal(`"v3"`))
		Expect(getBody(addr)).To(Equal("B"))

		// A NACK: a bad cluster is refused with its path in the response,
		// the clusters in service stay.
		m.set(routesSnapshot("v4", []*listenerv3.Listener{ingress}, []*clusterv3.Cluster{clusterProto("svc-b", b, `{connect_timeout: 0s}`)}, rcB))
		Eventually(func() []*discoveryv3.DeltaDiscoveryRequest { return m.deltaOf(resourcev3.ClusterType) }).Should(ContainElement(Satisfy(func(r *discoveryv3.DeltaDiscoveryRequest) bool {
			return r.GetErrorDetail() != nil
		})), "a NACK")
		var nack *discoveryv3.DeltaDiscoveryRequest
		for _, r := range m.deltaOf(resourcev3.ClusterType) {
			if r.GetErrorDetail() != nil {
				nack = r
			}
		}
		Expect(nack.GetResponseNonce()).NotTo(BeEmpty())
		Expect(nack.GetErrorDetail().GetCode()).To(BeEquivalentTo(13))
		Expect(nack.GetErrorDetail().GetMessage()).To(HavePrefix("resources[0].resource.connect_timeout: "))
		Expect(statValue(s, "cluster_manager.cds.update_rejected")).To(Equal("1"))
		Expect(statValue(s, "cluster_manager.cds.version_text")).To(Equal(`"v3"`))
		Expect(clustersConfigDump(s).GetDynamicActiveClusters()[0].GetVersionInfo()).To(Equal(resourceVersion(v3, resourcev3.ClusterType, "svc-b")))
		client := &http.Client{Timeout: 5 * time.Second, Transport: &http.Transport{DisableKeepAlives: true}}
		for range 10 {
			Expect(httpDo(client, http.MethodGet, "http://"+addr+"/", nil, nil).Body).To(Equal("B"), "the last good configuration serves")
		}
		Expect(strings.Count(s.Stderr(), "ads: update rejected")).To(Equal(1))

		// A good version after the NACK applies.
		m.set(routesSnapshot("v5", []*listenerv3.Listener{ingress}, []*clusterv3.Cluster{clusterProto("svc-b", a, "")}, rcB))
		waitStat(s, "cluster_manager.cds.version_text", `"v5"`)
		Eventually(func() string { return getBody(addr) }).Should(Equal("A"))
	})

	It("keeps serving while the management server restarts, then reconnects with initial_resource_versions and catches up", func() {
		a, b := startNamed("A"), startNamed("B")
		m := startManagementServer()
		ls := []*listenerv3.Listener{listenerProto(listenerDef{Name: "ingress", Chains: []string{routeToCluster("delta_restart", "svc")}})}
		v1 := xdsSnapshot("v1", ls, []*clusterv3.Cluster{clusterProto("svc", a, "")})
		m.set(v1)
		s := Start(newDir(), deltaBootstrap(m.port))
		waitLive(s)
		addr := listenerAddr(s, "ingress")
		Expect(getBody(addr)).To(Equal("A"))

		m.stop()
		Eventually(func() string { return statValue(s, "control_plane.connected_state") }).Should(Equal("0"))
		Eventually(func() string { return statValue(s, "cluster_manager.cds.update_failure") }).ShouldNot(Equal("0"))
		Expect(getBody(addr)).To(Equal("A"), "the last good configuration serves")
		before := len(m.deltaOf(resourcev3.ClusterType))

		// The restarted server has the listener unchanged and the cluster
		// changed: told what the proxy holds, it sends the cluster only.
		m.restart(xdsSnapshot("v2", ls, []*clusterv3.Cluster{clusterProto("svc", b, "")}))
		Eventually(func() string { return statValue(s, "cluster_manager.cds.version_text") }, 40*time.Second).Should(Equal(`"v2"`))
		Eventually(func() string { return getBody(addr) }).Should(Equal("B"))
		Expect(statValue(s, "control_plane.connected_state")).To(Equal("1"))
		again := m.deltaOf(resourcev3.ClusterType)[before]
		Expect(again.GetNode().GetId()).To(Equal(adsNodeID))
		Expect(again.GetResponseNonce()).To(BeEmpty())
		Expect(again.GetInitialResourceVersions()).To(Equal(map[string]string{"svc": resourceVersion(v1, resourcev3.ClusterType, "svc")}))
		lds := m.deltaOf(resourcev3.ListenerType)
		Expect(slices.ContainsFunc(lds, func(r *discoveryv3.DeltaDiscoveryRequest) bool {
			return r.GetInitialResourceVersions()["ingress"] == resourceVersion(v1, resourcev3.ListenerType, "ingress")
		})).To(BeTrue(), "the listener request after the restart names the listener held")
		Expect(statValue(s, "listener_manager.listener_modified")).To(Equal("0"), "the unchanged listener was not replaced")
	})
})
